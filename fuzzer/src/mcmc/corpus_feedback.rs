//! [`CorpusFeedback`]: what makes an execution corpus-worthy, its parts run in the one order
//! their results depend on. Invalid variants stop first; novelty is measured against the maps'
//! history before the map feedbacks add this execution to it; the acceptance reads that
//! novelty (the energy's guidance terms) and the pending proposal the mutator left.

use crate::judge::new_seed::NewSeedFeedback;
use crate::judge::validity::ValidVariant;
use crate::mcmc::{AcceptanceFeedback, PendingProposal};
use ccfuzz_mutators::input::Variant;
use ccfuzz_observers::novelty::NoveltyFeedback;
use libafl::corpus::Testcase;
use libafl::events::EventFirer;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::state::{HasExecutions, HasRand};
use libafl::{Error, HasMetadata, HasNamedMetadata};
use libafl_bolts::tuples::MatchNameRef;
use libafl_bolts::Named;
use std::borrow::Cow;

/// The corpus feedback: an invalid variant is nothing; otherwise an accepted MCMC proposal, new
/// compiler coverage (`coverage_map`), new optimization counters (`counter_map`) or a new seed
/// keeps a variant. The parts are fields, run in the order of the fields, so no caller can
/// reorder them.
pub struct CorpusFeedback<C, K> {
    validity: ValidVariant,
    novelty: NoveltyFeedback,
    acceptance: AcceptanceFeedback,
    coverage_map: C,
    counter_map: K,
    new_seed: NewSeedFeedback,
}

impl<C, K> CorpusFeedback<C, K> {
    pub fn new(
        validity: ValidVariant,
        novelty: NoveltyFeedback,
        acceptance: AcceptanceFeedback,
        coverage_map: C,
        counter_map: K,
    ) -> Self {
        CorpusFeedback {
            validity,
            novelty,
            acceptance,
            coverage_map,
            counter_map,
            new_seed: NewSeedFeedback,
        }
    }
}

impl<C, K> Named for CorpusFeedback<C, K> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("corpus");
        &NAME
    }
}

impl<C, K, S> StateInitializer<S> for CorpusFeedback<C, K>
where
    C: StateInitializer<S>,
    K: StateInitializer<S>,
    S: HasMetadata,
{
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        self.validity.init_state(state);
        StateInitializer::<S>::init_state(&mut self.novelty, state)?;
        self.acceptance.init_state(state)?;
        self.coverage_map.init_state(state)?;
        self.counter_map.init_state(state)?;
        self.new_seed.init_state(state)
    }
}

impl<C, K, EM, OT, S> Feedback<EM, Variant, OT, S> for CorpusFeedback<C, K>
where
    C: Feedback<EM, Variant, OT, S>,
    K: Feedback<EM, Variant, OT, S>,
    OT: MatchNameRef,
    S: HasMetadata + HasNamedMetadata + HasExecutions + HasRand,
    EM: EventFirer<Variant, S>,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        manager: &mut EM,
        input: &Variant,
        observers: &OT,
        exit: &ExitKind,
    ) -> Result<bool, Error> {
        let proposer = |state: &S| {
            state
                .metadata::<PendingProposal>()
                .ok()
                .filter(|pending| pending.name == input.name())
                .map_or_else(
                    || "seed".to_string(),
                    |pending| format!("{:?}", pending.family).to_lowercase(),
                )
        };
        if !self.validity.is_valid(state, manager, input, observers, proposer)? {
            // The proposal was judged: the next execution is not it.
            state.remove_metadata::<PendingProposal>();
            return Ok(false);
        }
        // Every part runs, whatever the ones before it said: each records this execution.
        let novel = self.novelty.is_interesting(state, manager, input, observers, exit)?;
        let accepted = self.acceptance.is_interesting(state, manager, input, observers, exit)?;
        let new_coverage = self
            .coverage_map
            .is_interesting(state, manager, input, observers, exit)?;
        let new_counters = self
            .counter_map
            .is_interesting(state, manager, input, observers, exit)?;
        let new_seed = self.new_seed.is_interesting(state, manager, input, observers, exit)?;
        Ok(novel || accepted || new_coverage || new_counters || new_seed)
    }

    fn append_metadata(
        &mut self,
        state: &mut S,
        manager: &mut EM,
        observers: &OT,
        testcase: &mut Testcase<Variant>,
    ) -> Result<(), Error> {
        self.novelty.append_metadata(state, manager, observers, testcase)?;
        self.coverage_map.append_metadata(state, manager, observers, testcase)?;
        self.counter_map.append_metadata(state, manager, observers, testcase)
    }
}
