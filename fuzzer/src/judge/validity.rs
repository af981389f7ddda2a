//! [`ValidVariant`]: the part of the corpus feedback that stops an invalid variant (see
//! [`crate::exec::gate`]) before any other: it is never a chain state nor a corpus entry.
//! Invalid variants are counted by the mutator family that proposed them and logged with their
//! edits, so that the defect or the unseen evaluation order behind them can be found.

use crate::ops::user_stats;
use ccfuzz_mutators::input::Variant;
use ccfuzz_observers::{ConfigOutcome, ExecutionObserver};
use libafl::events::EventFirer;
use libafl::monitors::stats::{AggregatorOps, UserStatsValue};
use libafl::state::HasExecutions;
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use libafl_bolts::tuples::{Handle, MatchNameRef};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Invalid variants of this client, by proposing family (`seed` for an unedited seed or a
/// variant that did not come from this client's chains).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InvalidVariants {
    pub total: u64,
    pub by_family: BTreeMap<String, u64>,
}
impl_serdeany!(InvalidVariants);

/// Variants that some configuration rejected with an ordinary compile error (counted among the
/// executions that were no finding).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct RejectedVariants(pub u64);
impl_serdeany!(RejectedVariants);

/// Stops invalid variants. Not a feedback of its own: the corpus feedback (the MCMC module's
/// `CorpusFeedback`) runs it before the parts it stops, and names the proposing family.
pub struct ValidVariant {
    execution: Handle<ExecutionObserver>,
}

impl ValidVariant {
    pub fn new(execution: Handle<ExecutionObserver>) -> Self {
        ValidVariant { execution }
    }

    pub fn init_state<S: HasMetadata>(&self, state: &mut S) {
        state.metadata_or_insert_with(InvalidVariants::default);
        state.metadata_or_insert_with(RejectedVariants::default);
    }

    /// Whether the execution of `input` was valid; an invalid one is logged and counted under
    /// the family `proposer` names (`seed` for a variant no chain of this client proposed). A
    /// variant some configuration rejected is counted too.
    pub fn is_valid<EM, OT, S>(
        &mut self,
        state: &mut S,
        manager: &mut EM,
        input: &Variant,
        observers: &OT,
        proposer: impl FnOnce(&S) -> String,
    ) -> Result<bool, Error>
    where
        OT: MatchNameRef,
        S: HasMetadata + HasExecutions,
        EM: EventFirer<Variant, S>,
    {
        let observer = super::execution_observer(observers, &self.execution)?;
        if observer
            .outcomes
            .iter()
            .any(|o| matches!(o.outcome, ConfigOutcome::Rejected { .. }))
        {
            let rejected = {
                let rejected = state.metadata_or_insert_with(RejectedVariants::default);
                rejected.0 += 1;
                rejected.0
            };
            user_stats::send(
                state,
                manager,
                "rejected",
                UserStatsValue::Number(rejected),
                AggregatorOps::Sum,
            )?;
        }
        let Some(reason) = &observer.invalid else {
            return Ok(true);
        };
        let family = proposer(state);
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
