//! A forwarding wrapper around the Launcher's event manager that reports the configuration
//! the LLMP manager inside it was given, stores the seeds that received testcases carry, and
//! keeps chain states that brought nothing new to this client.
//! LibAFL 0.16.1's `RestartingEventManager` does not forward `EventFirer::configuration`, so it
//! claims `AlwaysUnique`: observers are then never shipped with new testcases and every
//! imported variant is compiled again on every core.

use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::SeedStore;
use core::time::Duration;
use libafl::events::{
    AwaitRestartSafe, Event, EventConfig, EventFirer, EventManagerId, EventReceiver, EventRestarter, EventWithStats,
    HasEventManagerId, ProgressReporter, RestartingEventManager, SendExiting,
};
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use libafl_bolts::shmem::ShMemProvider;
use serde::{Deserialize, Serialize};

/// Accepted chain states a client kept to itself (state metadata, for its report).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct UnsharedStates(pub u64);
impl_serdeany!(UnsharedStates);

pub struct ConfiguredManager<EM, SP: ShMemProvider> {
    inner: RestartingEventManager<EM, SP>,
    /// Where seeds that arrive with testcases are stored.
    store: SeedStore,
    /// Some configuration observes coverage or counters: then a chain state may be in the
    /// corpus for its maps too (a new entry, or a higher count), and it goes to the peers.
    maps_observed: bool,
}

impl<EM, SP: ShMemProvider> ConfiguredManager<EM, SP> {
    pub fn new(inner: RestartingEventManager<EM, SP>, store: SeedStore, maps_observed: bool) -> Self {
        ConfiguredManager {
            inner,
            store,
            maps_observed,
        }
    }
}

impl<EM, S, SP> EventFirer<Variant, S> for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: EventFirer<Variant, S>,
    EM: EventFirer<Variant, S>,
    S: HasMetadata,
    SP: ShMemProvider,
{
    /// Keeps a chain's accepted state to this client when no map is observed: it is in the
    /// corpus for its chain alone, and a peer would judge it, find nothing for its maps and drop
    /// it, after this client compressed it and the peer decompressed it (a long chain's state is
    /// tens of kilobytes, and with tcc the compression alone was a sixth of the client's CPU).
    /// Seeds and findings always go out.
    fn fire(&mut self, state: &mut S, event: EventWithStats<Variant>) -> Result<(), Error> {
        if let Event::NewTestcase { input, .. } = event.event() {
            let chain_state = !input.edits().is_empty() && input.carried_seed.is_none();
            if chain_state && !self.maps_observed {
                state.metadata_or_insert_with(UnsharedStates::default).0 += 1;
                return Ok(());
            }
        }
        self.inner.fire(state, event)
    }

    fn configuration(&self) -> EventConfig {
        self.inner.inner.configuration()
    }

    fn should_send(&self) -> bool {
        self.inner.should_send()
    }
}

impl<EM, S, SP> EventReceiver<Variant, S> for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: EventReceiver<Variant, S>,
    SP: ShMemProvider,
{
    fn try_receive(&mut self, state: &mut S) -> Result<Option<(EventWithStats<Variant>, bool)>, Error> {
        while let Some((mut event, with_observers)) = self.inner.try_receive(state)? {
            if crate::sharing::receive(&self.store, &mut event) {
                return Ok(Some((event, with_observers)));
            }
        }
        Ok(None)
    }

    fn on_interesting(&mut self, state: &mut S, event: EventWithStats<Variant>) -> Result<(), Error> {
        self.inner.on_interesting(state, event)
    }
}

impl<EM, S, SP> ProgressReporter<S> for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: ProgressReporter<S>,
    SP: ShMemProvider,
{
    fn maybe_report_progress(&mut self, state: &mut S, monitor_timeout: Duration) -> Result<(), Error> {
        self.inner.maybe_report_progress(state, monitor_timeout)
    }

    fn report_progress(&mut self, state: &mut S) -> Result<(), Error> {
        self.inner.report_progress(state)
    }
}

impl<EM, S, SP> EventRestarter<S> for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: EventRestarter<S>,
    SP: ShMemProvider,
{
    fn on_restart(&mut self, state: &mut S) -> Result<(), Error> {
        self.inner.on_restart(state)
    }
}

impl<EM, SP> SendExiting for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: SendExiting,
    SP: ShMemProvider,
{
    fn send_exiting(&mut self) -> Result<(), Error> {
        self.inner.send_exiting()
    }

    fn on_shutdown(&mut self) -> Result<(), Error> {
        self.inner.on_shutdown()
    }
}

impl<EM, SP> AwaitRestartSafe for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: AwaitRestartSafe,
    SP: ShMemProvider,
{
    fn await_restart_safe(&mut self) {
        self.inner.await_restart_safe()
    }
}

impl<EM, SP> HasEventManagerId for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: HasEventManagerId,
    SP: ShMemProvider,
{
    fn mgr_id(&self) -> EventManagerId {
        self.inner.mgr_id()
    }
}
