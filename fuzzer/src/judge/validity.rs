//! [`ValidVariant`]: the corpus feedback that stops an invalid variant (see
//! [`crate::exec::validity`]) before any other: it is never a chain state nor a corpus entry.
//! Invalid variants are counted by the mutator family that proposed them and logged with their
//! edits, so that the defect or the unseen evaluation order behind them can be found.

use crate::mcmc::PendingProposal;
use crate::ops::user_stats;
use ccfuzz_mutators::input::Variant;
use ccfuzz_observers::ExecutionObserver;
use libafl::events::EventFirer;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::monitors::stats::{AggregatorOps, UserStatsValue};
use libafl::state::HasExecutions;
use libafl::{Error, HasMetadata};
use libafl_bolts::tuples::{Handle, MatchNameRef};
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Invalid variants of this client, by proposing family (`seed` for an unedited seed or a
/// variant that did not come from this client's chains).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InvalidVariants {
    pub total: u64,
    pub by_family: BTreeMap<String, u64>,
}
impl_serdeany!(InvalidVariants);

pub struct ValidVariant {
    execution: Handle<ExecutionObserver>,
}

impl ValidVariant {
    pub fn new(execution: Handle<ExecutionObserver>) -> Self {
        ValidVariant { execution }
    }
}

impl Named for ValidVariant {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("valid_variant");
        &NAME
    }
}

impl<S: HasMetadata> StateInitializer<S> for ValidVariant {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        state.metadata_or_insert_with(InvalidVariants::default);
        Ok(())
    }
}

impl<EM, OT, S> Feedback<EM, Variant, OT, S> for ValidVariant
where
    OT: MatchNameRef,
    S: HasMetadata + HasExecutions,
    EM: EventFirer<Variant, S>,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        manager: &mut EM,
        input: &Variant,
        observers: &OT,
        _exit: &ExitKind,
    ) -> Result<bool, Error> {
        let observer = super::execution_observer(observers, &self.execution)?;
        let Some(reason) = &observer.invalid else {
            return Ok(true);
        };
        let family = state
            .metadata::<PendingProposal>()
            .ok()
            .filter(|pending| pending.name == input.name())
            .map_or_else(
                || "seed".to_string(),
                |pending| format!("{:?}", pending.family).to_lowercase(),
            );
        log::warn!(
            "invalid {family} variant of seed {} ({reason}); edits: {:?}",
            input.seed,
            input.edits()
        );
        let total = {
            let invalid = state.metadata_or_insert_with(InvalidVariants::default);
            invalid.total += 1;
            *invalid.by_family.entry(family).or_default() += 1;
            invalid.total
        };
        user_stats::send(
            state,
            manager,
            "invalid",
            UserStatsValue::Number(total),
            AggregatorOps::Sum,
        )?;
        Ok(false)
    }
}
