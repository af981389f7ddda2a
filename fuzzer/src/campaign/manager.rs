//! A forwarding wrapper around the Launcher's event manager that reports the configuration
//! the LLMP manager inside it was given, and stores the seeds that received testcases carry.
//! LibAFL 0.16.1's `RestartingEventManager` does not forward `EventFirer::configuration`, so it
//! claims `AlwaysUnique`: observers are then never shipped with new testcases and every
//! imported variant is compiled again on every core.

use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::SeedStore;
use core::time::Duration;
use libafl::events::{
    AwaitRestartSafe, EventConfig, EventFirer, EventManagerId, EventReceiver, EventRestarter, EventWithStats,
    HasEventManagerId, ProgressReporter, RestartingEventManager, SendExiting,
};
use libafl::Error;
use libafl_bolts::shmem::ShMemProvider;

pub struct ConfiguredManager<EM, SP: ShMemProvider> {
    inner: RestartingEventManager<EM, SP>,
    /// Where seeds that arrive with testcases are stored.
    store: SeedStore,
}

impl<EM, SP: ShMemProvider> ConfiguredManager<EM, SP> {
    pub fn new(inner: RestartingEventManager<EM, SP>, store: SeedStore) -> Self {
        ConfiguredManager { inner, store }
    }
}

impl<EM, I, S, SP> EventFirer<I, S> for ConfiguredManager<EM, SP>
where
    RestartingEventManager<EM, SP>: EventFirer<I, S>,
    EM: EventFirer<I, S>,
    SP: ShMemProvider,
{
    fn fire(&mut self, state: &mut S, event: EventWithStats<I>) -> Result<(), Error> {
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
