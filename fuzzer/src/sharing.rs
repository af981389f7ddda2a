//! What travels between clients and nodes besides LibAFL's own sharing of corpus entries. A new
//! seed and a new finding are announced as `NewTestcase` events whose variant carries the seed's
//! package, so that a node whose store lacks the seed (another machine, joined through
//! `--remote-broker`) stores it before it judges the testcase. Brokers forward `NewTestcase`
//! events to their clients and to the brokers they are linked to; `Objective` events only
//! reach the monitor. A finding travels with the observations it was judged by, so receivers
//! with the same configuration judge and save it without compiling anything: the findings
//! corpus queues the findings made here, and the client announces them after each execution.

use crate::judge::findings::FindingsCorpus;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::SeedStore;
use libafl::corpus::Corpus;
use libafl::events::{Event, EventFirer, EventWithStats};
use libafl::executors::ExitKind;
use libafl::state::{HasCorpus, HasExecutions, HasSolutions};
use libafl::Error;

/// Sends `variant`, its seed and `observations` (the postcard of the observers of its
/// execution) to every other client.
pub fn announce<EM, S>(
    state: &mut S,
    mgr: &mut EM,
    store: &SeedStore,
    variant: &Variant,
    observations: Vec<u8>,
    exit_kind: ExitKind,
) -> Result<(), Error>
where
    EM: EventFirer<Variant, S>,
    S: HasCorpus<Variant> + HasExecutions,
{
    let package = store
        .package(&variant.seed)
        .map_err(|e| Error::illegal_state(format!("cannot announce seed {}: {e:#}", variant.seed)))?;
    let mut input = variant.clone();
    input.carried_seed = Some(Box::new(package));
    let event = Event::NewTestcase {
        input,
        observers_buf: Some(observations),
        exit_kind,
        corpus_size: state.corpus().count(),
        client_config: mgr.configuration(),
        forward_id: None,
    };
    let executions = *state.executions();
    mgr.fire(state, EventWithStats::with_current_time(event, executions))
}

/// Announces the findings this client made since it last did.
pub fn announce_findings<EM, S>(state: &mut S, mgr: &mut EM, store: &SeedStore) -> Result<(), Error>
where
    EM: EventFirer<Variant, S>,
    S: HasCorpus<Variant> + HasExecutions + HasSolutions<Variant, Solutions = FindingsCorpus>,
{
    for finding in state.solutions_mut().take_announcements() {
        announce(state, mgr, store, &finding.variant, finding.observations, finding.exit)?;
    }
    Ok(())
}

/// Stores the seed a received testcase carries and drops it from the variant. Returns false for
/// a testcase whose seed this node does not have (one announced before it joined): it cannot be
/// judged here.
pub fn receive(store: &SeedStore, event: &mut EventWithStats<Variant>) -> bool {
    let Event::NewTestcase { input, .. } = event.event_mut() else {
        return true;
    };
    if let Some(package) = input.carried_seed.take() {
        if let Err(e) = store.unpack(&package) {
            log::warn!("a received seed was not stored: {e:#}");
        }
    }
    let known = store.contains(&input.seed);
    if !known {
        log::debug!(
            "dropped a received variant of seed {}, which this node lacks",
            input.seed
        );
    }
    known
}
