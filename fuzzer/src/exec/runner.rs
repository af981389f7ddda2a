//! Running compilers and test binaries: own process group, resource limits, a wall-clock
//! timeout that kills the whole group, and captured output. A campaign that is stopping
//! kills the group too and reports the run as [`Interrupted`].

use crate::ops::shutdown::{Interrupted, WatchedGroup};
use anyhow::{Context, Result};
use nix::sys::resource::{setrlimit, Resource};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::io::Read;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// Limits applied to a child process (and inherited by its children).
#[derive(Clone, Debug)]
pub struct Limits {
    pub timeout: Duration,
    /// Address space in bytes.
    pub memory: u64,
    /// Largest file the process may write, in bytes.
    pub file_size: u64,
    /// CPU seconds (a backstop under the wall-clock timeout).
    pub cpu_seconds: u64,
    /// Processes for the user (not enforced for root, but set anyway).
    pub processes: u64,
    /// Output beyond this many bytes is discarded.
    pub max_output: usize,
}

impl Limits {
    /// Limits for a compiler run.
    pub fn compiler(timeout: Duration) -> Self {
        Limits {
            timeout,
            memory: 8 << 30,
            file_size: 1 << 30,
            cpu_seconds: timeout.as_secs() * 2 + 5,
            processes: 4096,
            max_output: 1 << 20,
        }
    }

    /// Limits for a test binary.
    pub fn program(timeout: Duration) -> Self {
        Limits {
            timeout,
            memory: 2 << 30,
            file_size: 64 << 20,
            cpu_seconds: timeout.as_secs() + 2,
            processes: 256,
            max_output: 16 << 20,
        }
    }
}

/// How a child process ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
    Timeout,
}

#[derive(Clone, Debug)]
pub struct Output {
    pub exit: Exit,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub elapsed: Duration,
}

impl Output {
    pub fn success(&self) -> bool {
        self.exit == Exit::Code(0)
    }

    pub fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }
}

fn read_capped(mut pipe: impl Read + Send + 'static, cap: usize) -> thread::JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut kept = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    let room = cap.saturating_sub(kept.len());
                    kept.extend_from_slice(&chunk[..n.min(room)]);
                }
            }
        }
        kept
    })
}

/// User plus system CPU seconds of this process (`RUSAGE_SELF`) or of its waited-for
/// descendants (`RUSAGE_CHILDREN`).
pub fn cpu_seconds(who: nix::sys::resource::UsageWho) -> nix::Result<f64> {
    let usage = nix::sys::resource::getrusage(who)?;
    let (user, system) = (usage.user_time(), usage.system_time());
    Ok(user.tv_sec() as f64 + system.tv_sec() as f64 + (user.tv_usec() + system.tv_usec()) as f64 / 1e6)
}

/// Runs `command` to completion or timeout. The child leads a new process group so that a
/// compiler driver and its sub-processes are killed together. Fails with [`Interrupted`]
/// when the campaign is asked to stop while the child runs.
pub fn run(mut command: Command, limits: &Limits) -> Result<Output> {
    let program = format!("{:?}", command.get_program());
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let rl = limits.clone();
    // SAFETY: the closure only calls async-signal-safe setrlimit between fork and exec.
    unsafe {
        command.pre_exec(move || {
            let set = |resource, value: u64| setrlimit(resource, value, value).map_err(std::io::Error::from);
            set(Resource::RLIMIT_AS, rl.memory)?;
            set(Resource::RLIMIT_FSIZE, rl.file_size)?;
            set(Resource::RLIMIT_CPU, rl.cpu_seconds)?;
            set(Resource::RLIMIT_NPROC, rl.processes)?;
            set(Resource::RLIMIT_CORE, 0)?;
            Ok(())
        });
    }
    let start = Instant::now();
    let mut child = command.spawn().with_context(|| format!("cannot start {program}"))?;
    let pgid = Pid::from_raw(child.id() as i32);
    let _watched = WatchedGroup::new(pgid);
    let stdout = read_capped(child.stdout.take().expect("piped stdout"), limits.max_output);
    let stderr = read_capped(child.stderr.take().expect("piped stderr"), limits.max_output);
    let mut timed_out = false;
    let mut interrupted = false;
    let mut pause = Duration::from_micros(200);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if crate::ops::shutdown::requested() {
            interrupted = true;
            let _ = killpg(pgid, Signal::SIGKILL);
            break child.wait()?;
        }
        if start.elapsed() >= limits.timeout {
            timed_out = true;
            let _ = killpg(pgid, Signal::SIGKILL);
            break child.wait()?;
        }
        thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(10));
    };
    // Grandchildren may still hold the pipes open; the group is ours to kill.
    let _ = killpg(pgid, Signal::SIGKILL);
    let elapsed = start.elapsed();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if interrupted {
        return Err(Interrupted.into());
    }
    let exit = if timed_out {
        Exit::Timeout
    } else if let Some(code) = status.code() {
        Exit::Code(code)
    } else {
        Exit::Signal(status.signal().unwrap_or(0))
    };
    Ok(Output {
        exit,
        stdout,
        stderr,
        elapsed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Output {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        run(c, &Limits::program(Duration::from_millis(timeout_ms))).unwrap()
    }

    #[test]
    fn captures_output_and_status() {
        let out = sh("echo hi; echo err >&2; exit 3", 5000);
        assert_eq!(out.exit, Exit::Code(3));
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn timeout_kills_the_whole_group() {
        // The grandchild keeps stdout open; without a group kill the read would block for 30 s.
        let out = sh("sleep 30 & sleep 30", 200);
        assert_eq!(out.exit, Exit::Timeout);
        assert!(out.elapsed < Duration::from_secs(10));
    }

    #[test]
    fn signals_are_reported() {
        assert_eq!(sh("kill -SEGV $$", 5000).exit, Exit::Signal(11));
    }

    #[test]
    fn file_size_limit_applies() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("head -c 100000 /dev/zero > big")
            .current_dir(dir.path());
        let limits = Limits {
            file_size: 1000,
            ..Limits::program(Duration::from_secs(5))
        };
        let out = run(c, &limits).unwrap();
        assert!(!out.success());
        assert!(std::fs::metadata(dir.path().join("big")).unwrap().len() <= 1000);
    }
}
