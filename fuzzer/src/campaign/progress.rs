//! The campaign's own figures sent to the monitor as user statistics: MCMC acceptance, chain
//! length and distance, and what the corpus covers inside the compilers.

use crate::campaign::CampaignState;
use crate::mcmc::McmcChains;
use crate::ops::user_stats;
use ccfuzz_mutators::input::Variant;
use libafl::events::EventFirer;
use libafl::monitors::stats::{AggregatorOps, UserStatsValue};
use libafl::{Error, HasMetadata};

/// Acceptance rate, mean chain length and mean program distance, for the monitor.
pub fn report_chains<EM: EventFirer<Variant, CampaignState>>(
    state: &mut CampaignState,
    mgr: &mut EM,
) -> Result<(), Error> {
    let Some(chains) = state.metadata::<McmcChains>().ok() else {
        return Ok(());
    };
    let stats = [
        (
            "acceptance",
            UserStatsValue::Percent(chains.acceptance_rate()),
            AggregatorOps::Avg,
        ),
        (
            "chain length",
            UserStatsValue::Float(chains.mean_length()),
            AggregatorOps::Avg,
        ),
        (
            "distance",
            UserStatsValue::Float(chains.mean_distance()),
            AggregatorOps::Avg,
        ),
    ];
    for (name, value, aggregate) in stats {
        user_stats::send(state, mgr, name, value, aggregate)?;
    }
    Ok(())
}

/// Sends the coverage entries and distinct optimization counters the client's corpus holds as
/// user statistics: the monitor prints them and `stats.json` keeps them over time.
pub fn report_observed<EM>(state: &mut CampaignState, mgr: &mut EM, maps: &[(String, String)]) -> Result<(), Error>
where
    EM: EventFirer<Variant, CampaignState>,
{
    for (map, stat) in maps {
        let value = ccfuzz_observers::novelty::covered_entries(state, map) as u64;
        user_stats::send(
            state,
            mgr,
            stat.clone(),
            UserStatsValue::Number(value),
            AggregatorOps::Max,
        )?;
    }
    Ok(())
}
