//! The campaign's LLMP broker, in a process of its own forked before the clients start. It
//! relays events between the clients, shows them on the monitor and, with `--remote-broker`,
//! links to another node's broker so that testcases, seeds and findings cross machines.
//! LibAFL 0.16.1's `Launcher` accepts a remote broker address but never passes it to the broker
//! it spawns, so the campaign starts its broker itself and the `Launcher` only its clients.

use anyhow::{anyhow, bail, Context, Result};
use ccfuzz_mutators::input::Variant;
use libafl::events::StdLlmpEventHook;
use libafl::monitors::Monitor;
use libafl_bolts::llmp::{Broker as _, LlmpBroker};
use libafl_bolts::shmem::{ShMemProvider, StdShMemProvider};
use libafl_bolts::tuples::tuple_list;
use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
use nix::unistd::{fork, ForkResult, Pid};
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

const READY: &str = "ready";

/// A running broker process.
pub struct Broker {
    pid: Pid,
}

impl Broker {
    /// Forks the broker. It listens on `port` (all interfaces, so that other nodes can link to
    /// it), links to `remote` when given, and exits once `clients` clients have come and gone,
    /// unless other brokers are still linked to it.
    pub fn spawn<MT: Monitor>(
        monitor: MT,
        port: u16,
        remote: Option<SocketAddr>,
        clients: NonZeroUsize,
    ) -> Result<Self> {
        // The child says "ready" once it listens, or why it could not start, on this socket.
        let (mut parent_end, mut child_end) = UnixStream::pair().context("cannot make a socket pair")?;
        // Safety: the campaign has started no thread yet, and the child only brokers and exits.
        match unsafe { fork() }.context("cannot fork the broker")? {
            ForkResult::Child => {
                drop(parent_end);
                let status = match broker_loop(monitor, port, remote, clients, &mut child_end) {
                    Ok(()) => 0,
                    Err(e) => {
                        let _ = writeln!(child_end, "{e:#}");
                        1
                    }
                };
                std::process::exit(status)
            }
            ForkResult::Parent { child } => {
                drop(child_end);
                let mut answer = String::new();
                BufReader::new(&mut parent_end).read_line(&mut answer)?;
                if answer.trim_end() == READY {
                    return Ok(Broker { pid: child });
                }
                let _ = waitpid(child, None);
                match answer.trim_end() {
                    "" => bail!("the broker died while starting"),
                    reason => bail!("the broker did not start: {reason}"),
                }
            }
        }
    }

    /// Ends the broker once the clients are gone: it is given `grace` to relay their last
    /// events and exit by itself, then asked to stop (a link to another broker keeps it alive),
    /// then killed.
    pub fn finish(self, grace: Duration) {
        for signal in [None, Some(Signal::SIGINT), Some(Signal::SIGKILL)] {
            if let Some(signal) = signal {
                let _ = kill(self.pid, signal);
            }
            let start = Instant::now();
            while start.elapsed() < grace {
                match waitpid(self.pid, Some(WaitPidFlag::WNOHANG)) {
                    Ok(WaitStatus::StillAlive) => std::thread::sleep(Duration::from_millis(50)),
                    _ => return,
                }
            }
        }
    }
}

fn broker_loop<MT: Monitor>(
    monitor: MT,
    port: u16,
    remote: Option<SocketAddr>,
    clients: NonZeroUsize,
    starting: &mut UnixStream,
) -> Result<()> {
    let hook = StdLlmpEventHook::<Variant, MT>::new(monitor)?;
    let mut broker = LlmpBroker::new(StdShMemProvider::new()?, tuple_list!(hook))?;
    // LibAFL's errors already say their OS error, which their sources would repeat: each is
    // quoted by its `Display` alone.
    // The link comes first: LibAFL 0.16.1 numbers it as a client, and a listener started before
    // it gives the first local client the same number, whose messages the link then never
    // forwards (it takes them for its own).
    if let Some(remote) = remote {
        log::info!("linking to the broker at {remote}");
        broker
            .inner_mut()
            .connect_b2b(remote)
            .map_err(|e| anyhow!("cannot link to the broker at {remote}: {e}"))?;
    }
    broker
        .inner_mut()
        .launch_tcp_listener_on(port)
        .map_err(|e| anyhow!("cannot listen on port {port}: {e}"))?;
    writeln!(starting, "{READY}")?;
    broker.set_exit_after(clients);
    // Clients never wait for the broker (their messages queue in their own pages), and what
    // it relays (seeds, findings, the monitor's statistics) is not urgent: polling every 5 ms,
    // as LibAFL's launcher does, cost the broker 0.35% of a core while idle, and every 25 ms
    // still 0.2% of a core beside one client against tcc (a twentieth of the harness's share).
    broker.loop_with_timeouts(Duration::from_secs(30), Some(Duration::from_millis(100)));
    Ok(())
}

/// The port a campaign's broker listens on when `--broker-port` is not given.
pub const DEFAULT_PORT: u16 = 1337;

/// The port the broker will listen on, checked before the campaign spends time on its seeds:
/// `given` must be free; without it, [`DEFAULT_PORT`], or a free port when another campaign on
/// this machine holds the default.
pub fn choose_port(given: Option<u16>) -> Result<u16> {
    match given {
        Some(port) => match listen_check(port) {
            Ok(()) => Ok(port),
            Err(e) => bail!("cannot listen on port {port} given by --broker-port: {e}"),
        },
        None => match listen_check(DEFAULT_PORT) {
            Ok(()) => Ok(DEFAULT_PORT),
            Err(_) => {
                let port = free_port().context("no free TCP port for the broker: choose one with --broker-port")?;
                log::info!(
                    "port {DEFAULT_PORT} is taken (another campaign?): the broker listens on port {port} (--broker-port sets it)"
                );
                Ok(port)
            }
        },
    }
}

/// Whether the broker could listen on `port` now: it binds all interfaces, as this does.
fn listen_check(port: u16) -> std::io::Result<()> {
    std::net::TcpListener::bind((std::net::Ipv4Addr::UNSPECIFIED, port)).map(drop)
}

/// A TCP port of this machine that nothing listens on now (for brokers of experiments,
/// benchmarks and tests, which run beside a campaign on the default port). Drawn below the
/// range Linux gives the local ends of outgoing connections (32768 and up): a port the kernel
/// hands out as free may be the local end of a client's connection to another campaign's
/// broker by the time the new broker binds it, which failed a paired benchmark's run.
pub fn free_port() -> std::io::Result<u16> {
    const LOWEST: u32 = 10_000;
    const COUNT: u32 = 32_768 - LOWEST;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let start = (nanos ^ std::process::id().wrapping_mul(2_654_435_761)) % COUNT;
    // 7919 is prime and does not divide COUNT: the steps visit every port of the range once.
    (0..COUNT)
        .map(|step| (LOWEST + (start + step * 7919) % COUNT) as u16)
        .find(|&port| listen_check(port).is_ok())
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::AddrInUse,
                "every TCP port from 10000 to 32767 is taken",
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_free_port_is_below_the_kernels_range_for_outgoing_connections_and_can_be_bound() {
        for _ in 0..20 {
            let port = free_port().unwrap();
            assert!((10_000..32_768).contains(&port), "{port}");
            listen_check(port).unwrap();
        }
    }
}
