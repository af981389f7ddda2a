//! Stopping a campaign cleanly on SIGINT or SIGTERM.
//!
//! LibAFL 0.16.1 alone ends a fuzzing client with `_exit(100)` from its signal handler (no
//! report, no saved chains, the compiler still running and its scratch directory left behind),
//! its restarters ignore SIGINT, and the LLMP broker stops brokering at once. Here the first
//! signal only raises a stop flag that every process forked from the launcher shares (an
//! anonymous shared page mapped before the launcher forks), so a signal sent to the launcher
//! alone stops the clients too. A client that sees the flag kills the compiler or binary it
//! waits for ([`crate::process::runner::run`] returns [`Interrupted`]), abandons that execution, then
//! stops as it does at its deadline. A second signal to a process kills the child it waits for
//! and exits at once with LibAFL's Ctrl-C status, which its restarter takes as "shutting down".
//! When every client has stopped, the launcher removes `tmp/` and prints a summary
//! ([`crate::campaign::summary`]).

use anyhow::{Context, Result};
use libafl_bolts::os::CTRL_C_EXIT;
use nix::sys::mman::{mmap_anonymous, MapFlags, ProtFlags};
use nix::sys::signal::{killpg, sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::Pid;
use std::num::NonZeroUsize;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU32, Ordering};

/// The stop flag shared by the launcher and all its forks; null until [`share_stop_flag`].
static SHARED_STOP: AtomicPtr<AtomicBool> = AtomicPtr::new(std::ptr::null_mut());
/// The stop flag of this process alone, for processes that never mapped the shared one.
static LOCAL_STOP: AtomicBool = AtomicBool::new(false);
/// Stop signals this process received.
static SIGNALS_RECEIVED: AtomicU32 = AtomicU32::new(0);
/// Process group of the child this process is waiting for, 0 when none.
static CHILD_GROUP: AtomicI32 = AtomicI32::new(0);

/// A compiler or binary run that was abandoned because the campaign is stopping.
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted: the campaign is stopping")
    }
}

impl std::error::Error for Interrupted {}

/// Whether the campaign was asked to stop.
pub fn requested() -> bool {
    let shared = SHARED_STOP.load(Ordering::SeqCst);
    // SAFETY: once set, the pointer names a page mapped for the rest of the process's life.
    LOCAL_STOP.load(Ordering::SeqCst) || (!shared.is_null() && unsafe { (*shared).load(Ordering::SeqCst) })
}

/// Whether this process raised the stop flag because the campaign's time was up.
static DEADLINE_PASSED: AtomicBool = AtomicBool::new(false);

/// Asks every process of the campaign to stop because its time is up.
pub fn request_at_deadline() {
    DEADLINE_PASSED.store(true, Ordering::SeqCst);
    request();
}

/// Whether the campaign was asked to stop before its time was up (a signal, the broker
/// exiting), as this process saw it.
pub fn stopped_early() -> bool {
    requested() && !DEADLINE_PASSED.load(Ordering::SeqCst)
}

/// Asks every process of the campaign to stop.
pub fn request() {
    LOCAL_STOP.store(true, Ordering::SeqCst);
    let shared = SHARED_STOP.load(Ordering::SeqCst);
    if !shared.is_null() {
        // SAFETY: as in `requested`.
        unsafe { (*shared).store(true, Ordering::SeqCst) };
    }
}

/// Turns LibAFL's `ShuttingDown` (an execution abandoned on a stop request, or the broker
/// exiting) into a stop request, which the client loop then acts on as on its deadline.
pub fn as_stop_request<T>(result: Result<T, libafl::Error>) -> Result<Option<T>, libafl::Error> {
    match result {
        Err(libafl::Error::ShuttingDown) => {
            request();
            Ok(None)
        }
        other => other.map(Some),
    }
}

/// Maps the stop flag that the processes the launcher forks will share. Call it once, in the
/// launcher process, before it forks.
pub fn share_stop_flag() -> Result<()> {
    if !SHARED_STOP.load(Ordering::SeqCst).is_null() {
        return Ok(());
    }
    let length = NonZeroUsize::new(std::mem::size_of::<AtomicBool>()).expect("an AtomicBool has a size");
    // SAFETY: a fresh anonymous mapping, zeroed by the kernel, which is a valid `false`.
    let page = unsafe {
        mmap_anonymous(
            None,
            length,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
        )
    }
    .context("cannot map the shared stop flag")?;
    SHARED_STOP.store(page.as_ptr().cast(), Ordering::SeqCst);
    Ok(())
}

extern "C" fn on_stop_signal(_signal: c_int) {
    // Only async-signal-safe calls here: atomics, killpg, _exit.
    if SIGNALS_RECEIVED.fetch_add(1, Ordering::SeqCst) == 0 {
        request();
        return;
    }
    let group = CHILD_GROUP.load(Ordering::SeqCst);
    if group > 0 {
        let _ = killpg(Pid::from_raw(group), Signal::SIGKILL);
    }
    // SAFETY: `_exit` is async-signal-safe and skips the exit handlers that `exit` would run.
    unsafe { libc::_exit(CTRL_C_EXIT) }
}

/// Makes SIGINT and SIGTERM raise the stop flag (a second one exits at once). In a fuzzing
/// client this replaces the handler LibAFL's restarting manager installed.
pub fn handle_stop_signals() -> Result<()> {
    // SA_RESTART: a signal must not cut short a read of a compiler's output or a wait for a
    // child (LibAFL's launcher does not retry an interrupted waitpid).
    let action = SigAction::new(
        SigHandler::Handler(on_stop_signal),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the handler only touches atomics and calls async-signal-safe functions.
        unsafe { sigaction(signal, &action) }.with_context(|| format!("cannot handle {signal}"))?;
    }
    Ok(())
}

/// Marks a child's process group as the one to kill on a second signal, until dropped.
pub struct WatchedGroup;

impl WatchedGroup {
    pub fn new(group: Pid) -> Self {
        CHILD_GROUP.store(group.as_raw(), Ordering::SeqCst);
        WatchedGroup
    }
}

impl Drop for WatchedGroup {
    fn drop(&mut self) {
        CHILD_GROUP.store(0, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_seen_by_a_forked_process() {
        // The flags are process-wide: the check runs in a child, so that the other tests of
        // this process never see a stop request.
        let exit_code = |status| match status {
            nix::sys::wait::WaitStatus::Exited(_, code) => code,
            other => panic!("unexpected {other:?}"),
        };
        // SAFETY: the children only map a page, fork, touch atomics and exit.
        match unsafe { nix::unistd::fork() }.unwrap() {
            nix::unistd::ForkResult::Child => {
                let seen_before = requested();
                share_stop_flag().unwrap();
                let code = match unsafe { nix::unistd::fork() }.unwrap() {
                    nix::unistd::ForkResult::Child => {
                        request();
                        unsafe { libc::_exit(0) }
                    }
                    nix::unistd::ForkResult::Parent { child } => {
                        nix::sys::wait::waitpid(child, None).unwrap();
                        i32::from(seen_before || !requested())
                    }
                };
                unsafe { libc::_exit(code) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                assert_eq!(exit_code(nix::sys::wait::waitpid(child, None).unwrap()), 0);
            }
        }
    }
}
