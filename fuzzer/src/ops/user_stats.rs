//! User statistics: the figures of the campaign's own (rejected and invalid variants, MCMC
//! acceptance, what the corpus covers) sent to the monitor, which prints them and keeps them
//! over time in `stats.json`.

use ccfuzz_mutators::input::Variant;
use libafl::events::{Event, EventFirer, EventWithStats};
use libafl::monitors::stats::{AggregatorOps, UserStats, UserStatsValue};
use libafl::state::HasExecutions;
use libafl::Error;
use std::borrow::Cow;
use std::marker::PhantomData;

/// Sends one user statistic; `aggregate` says how the monitor combines the clients' values.
pub fn send<EM, S>(
    state: &mut S,
    manager: &mut EM,
    name: impl Into<Cow<'static, str>>,
    value: UserStatsValue,
    aggregate: AggregatorOps,
) -> Result<(), Error>
where
    EM: EventFirer<Variant, S>,
    S: HasExecutions,
{
    let event = Event::UpdateUserStats {
        name: name.into(),
        value: UserStats::new(value, aggregate),
        phantom: PhantomData,
    };
    let executions = *state.executions();
    manager.fire(state, EventWithStats::with_current_time(event, executions))
}
