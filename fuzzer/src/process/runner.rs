//! Running compilers and test binaries: own process group, resource limits, a wall-clock
//! timeout that kills the whole group, and captured output. A campaign that is stopping
//! kills the group too and reports the run as [`Interrupted`].

use crate::ops::shutdown::{Interrupted, WatchedGroup};
use anyhow::{Context, Result};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
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
    /// The output streams read; the other goes to `/dev/null`.
    pub read: Streams,
}

/// Which of a child's output streams are read. A pipe read is a pipe made, polled, read and
/// closed at each start of a child: the test binaries' stderr and the compilers' stdout are
/// never looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Streams {
    Both,
    Stdout,
    Stderr,
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
            read: Streams::Both,
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
            read: Streams::Both,
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

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit status {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
            Exit::Timeout => f.write_str("timed out"),
        }
    }
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

/// How often a running child's wait checks whether the campaign was asked to stop.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// How long a child runs before its output wakes this process (see [`run`]).
const PIPES_UNWATCHED: Duration = Duration::from_millis(20);

/// After its output woke this process, how long a child runs before its output may wake it
/// again. clang writes its diagnostics to an unbuffered stderr a few bytes at a time (87,000
/// writes for the warnings of one csmith program): reading after each write was three quarters
/// of a seed's own CPU. A pipe holds 64 KB, so the child is never held below 32 MB/s.
const PIPE_READ_INTERVAL: Duration = Duration::from_millis(2);

/// Once the child is gone, how long its output pipes may stay open (held by a process that
/// left its group) before what they hold is taken as all.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// Runs `command` to completion or timeout. The child leads a new process group so that a
/// compiler driver and its sub-processes are killed together. Fails with [`Interrupted`]
/// when the campaign is asked to stop while the child runs.
///
/// The child is started by [`spawn`](super::spawn), limits and all; one `poll` on a pidfd and
/// both pipes waits for it, with no threads.
pub fn run(command: Command, limits: &Limits) -> Result<Output> {
    let program = command.get_program().to_string_lossy().into_owned();
    let start = Instant::now();
    let child = super::spawn::spawn(
        &command,
        limits.read != Streams::Stderr,
        limits.read != Streams::Stdout,
        &limit_settings(limits),
    )
    .with_context(|| format!("cannot start {program}"))?;
    let pgid = Pid::from_raw(child.pid);
    let _watched = WatchedGroup::new(pgid);
    let exited = child.exited;
    let mut stdout = Capture::new(child.stdout, limits.max_output);
    let mut stderr = Capture::new(child.stderr, limits.max_output);
    let mut ended = Ended::Exited;
    // Early on only the exit wakes this process: a test binary prints its checksum just before
    // it exits, and waking for those bytes, then sleeping again until the exit, cost two more
    // switches to and from the child per run. A child that fills a pipe meanwhile waits at
    // most that long for it to be read.
    let mut pipes_watched_from = PIPES_UNWATCHED;
    loop {
        let elapsed = start.elapsed();
        if elapsed >= limits.timeout {
            ended = Ended::TimedOut;
            break;
        }
        if crate::ops::shutdown::requested() {
            ended = Ended::Interrupted;
            break;
        }
        let wait = (limits.timeout - elapsed).min(STOP_CHECK);
        let watch_pipes = elapsed >= pipes_watched_from;
        let wait = if watch_pipes {
            wait
        } else {
            wait.min(pipes_watched_from - elapsed)
        };
        if wait_for_any(Some(&exited), [&mut stdout, &mut stderr], watch_pipes, wait)? {
            break;
        }
        if watch_pipes {
            pipes_watched_from = start.elapsed() + PIPE_READ_INTERVAL;
        }
    }
    // Grandchildren may still hold the pipes open; the group is ours to kill.
    let _ = killpg(pgid, Signal::SIGKILL);
    let status = super::spawn::wait(child.pid).with_context(|| format!("cannot wait for {program}"))?;
    let elapsed = start.elapsed();
    // Read at once: with the group gone a pipe is at its end, and only one that something else
    // still holds open is waited for.
    for capture in [&mut stdout, &mut stderr] {
        if !capture.closed {
            capture.read_available().context("cannot read a child's output")?;
        }
    }
    let drained_by = Instant::now() + DRAIN_LIMIT;
    while !(stdout.closed && stderr.closed) {
        let left = drained_by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        wait_for_any(None, [&mut stdout, &mut stderr], true, left)?;
    }
    let exit = match ended {
        Ended::Interrupted => return Err(Interrupted.into()),
        Ended::TimedOut => Exit::Timeout,
        Ended::Exited => match (status.code(), status.signal()) {
            (Some(code), _) => Exit::Code(code),
            (None, signal) => Exit::Signal(signal.unwrap_or(0)),
        },
    };
    Ok(Output {
        exit,
        stdout: stdout.kept,
        stderr: stderr.kept,
        elapsed,
    })
}

enum Ended {
    Exited,
    TimedOut,
    Interrupted,
}

/// Each resource a child is limited in, with its limit.
fn limit_settings(limits: &Limits) -> [(libc::__rlimit_resource_t, u64); 5] {
    [
        (libc::RLIMIT_AS, limits.memory),
        (libc::RLIMIT_FSIZE, limits.file_size),
        (libc::RLIMIT_CPU, limits.cpu_seconds),
        (libc::RLIMIT_NPROC, limits.processes),
        (libc::RLIMIT_CORE, 0),
    ]
}

/// One output pipe of the child, read without blocking into at most `cap` kept bytes (the
/// rest is read and dropped, so that the child never blocks on a full pipe); none for a stream
/// not read.
struct Capture {
    pipe: Option<File>,
    kept: Vec<u8>,
    cap: usize,
    closed: bool,
}

impl Capture {
    /// `pipe` does not block (see [`spawn`](super::spawn)).
    fn new(pipe: Option<OwnedFd>, cap: usize) -> Self {
        Capture {
            closed: pipe.is_none(),
            pipe: pipe.map(File::from),
            kept: Vec::new(),
            cap,
        }
    }

    /// Reads what the pipe holds now.
    fn read_available(&mut self) -> std::io::Result<()> {
        let Some(pipe) = &mut self.pipe else {
            return Ok(());
        };
        let mut chunk = [0u8; 16384];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => {
                    self.closed = true;
                    return Ok(());
                }
                Ok(n) => {
                    let room = self.cap.saturating_sub(self.kept.len());
                    self.kept.extend_from_slice(&chunk[..n.min(room)]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Waits up to `wait` for the process behind `exited` to exit or, with `watch_pipes`, a pipe
/// to have data; reads what the pipes hold when watched, and says whether the process has
/// exited.
fn wait_for_any(exited: Option<&OwnedFd>, pipes: [&mut Capture; 2], watch_pipes: bool, wait: Duration) -> Result<bool> {
    let watched = |fd: RawFd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // The pidfd first, then the open pipes when watched.
    let mut fds = [watched(-1); 3];
    let mut count = 0;
    let pipe_fds = pipes
        .iter()
        .filter(|p| watch_pipes && !p.closed)
        .filter_map(|p| p.pipe.as_ref().map(AsRawFd::as_raw_fd));
    for fd in exited.map(AsRawFd::as_raw_fd).into_iter().chain(pipe_fds) {
        fds[count] = watched(fd);
        count += 1;
    }
    let timeout = wait.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: the first `count` entries of `fds` are valid pollfd.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), count as libc::nfds_t, timeout) };
    if ready < 0 {
        let error = std::io::Error::last_os_error();
        if error.kind() != std::io::ErrorKind::Interrupted {
            return Err(error).context("cannot wait for a child process");
        }
    }
    if watch_pipes {
        for pipe in pipes {
            if !pipe.closed {
                pipe.read_available().context("cannot read a child's output")?;
            }
        }
    }
    Ok(exited.is_some() && fds[0].revents != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Output {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        run(c, &Limits::program(Duration::from_millis(timeout_ms))).unwrap()
    }

    fn sh_limited(script: &str, limits: &Limits) -> Output {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        run(c, limits).unwrap()
    }

    #[test]
    fn captures_output_and_status() {
        let out = sh("echo hi; echo err >&2; exit 3", 5000);
        assert_eq!(out.exit, Exit::Code(3));
        assert_eq!(out.stdout, b"hi\n");
        assert_eq!(out.stderr, b"err\n");
    }

    #[test]
    fn a_stream_not_read_is_discarded() {
        for (read, stdout, stderr) in [
            (Streams::Stdout, &b"out\n"[..], &b""[..]),
            (Streams::Stderr, b"", b"err\n"),
        ] {
            let mut c = Command::new("sh");
            c.arg("-c").arg("echo out; echo err >&2");
            let limits = Limits {
                read,
                ..Limits::program(Duration::from_secs(5))
            };
            let out = run(c, &limits).unwrap();
            assert_eq!(
                (out.stdout.as_slice(), out.stderr.as_slice()),
                (stdout, stderr),
                "{read:?}"
            );
        }
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
    fn output_larger_than_a_pipe_is_read_and_capped() {
        // 1 MB through 64 kB pipes: the child would block forever if nobody read while it ran.
        let mut c = Command::new("sh");
        c.arg("-c").arg("head -c 1000000 /dev/zero; echo done >&2");
        let limits = Limits {
            max_output: 300_000,
            ..Limits::program(Duration::from_secs(10))
        };
        let out = run(c, &limits).unwrap();
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(out.stdout.len(), 300_000);
        assert_eq!(out.stderr, b"done\n");
    }

    #[test]
    fn output_written_a_few_bytes_at_a_time_is_all_kept() {
        // As clang writes its diagnostics: 7 bytes a write, 300 KB in all, more than a pipe
        // holds, so the child finishes only if its pipes are read while it runs, at most once
        // per interval.
        let out = sh("head -c 300000 /dev/zero | dd obs=7 status=none >&2; echo end", 10_000);
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(out.stdout, b"end\n");
        assert_eq!(out.stderr.len(), 300_000);
        assert!(out.stderr.iter().all(|&b| b == 0));
    }

    #[test]
    fn a_missing_program_is_an_error() {
        let error = run(
            Command::new("/nonexistent/compiler"),
            &Limits::program(Duration::from_secs(5)),
        )
        .unwrap_err();
        assert!(
            format!("{error:#}").contains("cannot start /nonexistent/compiler"),
            "{error:#}"
        );
    }

    #[test]
    fn the_limits_apply_to_the_child_and_not_to_this_process() {
        let own = |resource| {
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            // SAFETY: getrlimit writes into `limit`, which lives through the call.
            assert_eq!(unsafe { libc::getrlimit(resource, &mut limit) }, 0);
            (limit.rlim_cur, limit.rlim_max)
        };
        let resources = [libc::RLIMIT_AS, libc::RLIMIT_FSIZE, libc::RLIMIT_CPU, libc::RLIMIT_CORE];
        let before = resources.map(own);
        // Less than this test process maps: the child sets it while it still shares that
        // address space.
        let limits = Limits {
            memory: 24 << 20,
            cpu_seconds: 7,
            ..Limits::program(Duration::from_secs(5))
        };
        let out = sh_limited("ulimit -v; ulimit -t; ulimit -c; ulimit -Hv", &limits);
        assert_eq!(out.stdout, b"24576\n7\n0\n24576\n");
        assert_eq!(resources.map(own), before);
    }

    #[test]
    fn file_size_limit_applies() {
        let limits = Limits {
            file_size: 4 << 20,
            ..Limits::program(Duration::from_secs(5))
        };
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        c.arg("-c")
            .arg("head -c 8000000 /dev/zero > big")
            .current_dir(dir.path());
        let out = run(c, &limits).unwrap();
        assert!(!out.success());
        let written = std::fs::metadata(dir.path().join("big")).unwrap().len();
        assert!(written <= 4 << 20, "{written}");
    }

    #[test]
    fn another_thread_writes_past_a_childs_file_size_limit_while_children_start() {
        let dir = tempfile::tempdir().unwrap();
        let log = std::fs::File::create(dir.path().join("log")).unwrap();
        let starting = std::sync::atomic::AtomicBool::new(true);
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| {
                // Rewritten in place at 2 MB: a write past the file-size limit kills the process.
                while starting.load(std::sync::atomic::Ordering::Relaxed) {
                    std::os::unix::fs::FileExt::write_all_at(&log, &[0u8; 4096], 2 << 20).unwrap();
                }
            });
            let limits = Limits {
                file_size: 1 << 20,
                ..Limits::program(Duration::from_secs(5))
            };
            for _ in 0..50 {
                assert!(run(Command::new("true"), &limits).unwrap().success());
            }
            starting.store(false, std::sync::atomic::Ordering::Relaxed);
            writer.join().unwrap();
        });
    }

    #[test]
    fn the_child_gets_its_directory_environment_group_and_signal_mask() {
        let dir = tempfile::tempdir().unwrap();
        let mut c = Command::new("sh");
        // Every signal is blocked around the clone, and a mask survives an exec: the child
        // must have this thread's back, or the shell would outlive its own SIGTERM.
        c.arg("-c")
            .arg("pwd; echo \"$CCFUZZ_SPAWN_TEST\"; cut -d' ' -f5 /proc/$$/stat; echo $$; kill -TERM $$; echo survived")
            .current_dir(dir.path())
            .env("CCFUZZ_SPAWN_TEST", "set");
        let out = run(c, &Limits::program(Duration::from_secs(5))).unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        assert_eq!(lines[0], dir.path().canonicalize().unwrap().to_str().unwrap());
        assert_eq!(lines[1], "set");
        assert_eq!(lines[2], lines[3], "the child leads its own process group");
        assert_eq!(lines.len(), 4, "{text}");
        assert_eq!(out.exit, Exit::Signal(libc::SIGTERM));
    }

    #[test]
    fn a_program_is_found_on_the_path_once_and_again_when_it_goes() {
        let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let install = |dir: &std::path::Path, text: &str| {
            use std::os::unix::fs::PermissionsExt;
            let program = dir.join("ccfuzz-spawn-test");
            std::fs::write(&program, text).unwrap();
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
            program
        };
        let path = format!(
            "{}:{}:{}",
            first.path().display(),
            second.path().display(),
            std::env::var("PATH").unwrap()
        );
        let run_it = || {
            let mut c = Command::new("ccfuzz-spawn-test");
            c.env("PATH", &path);
            run(c, &Limits::program(Duration::from_secs(5)))
        };
        let remembered = install(first.path(), "#!/bin/sh\necho one\n");
        assert_eq!(run_it().unwrap().stdout, b"one\n");
        // The path remembered goes away: that start fails, and the next looks again.
        std::fs::remove_file(&remembered).unwrap();
        install(second.path(), "#!/bin/sh\necho two\n");
        let error = run_it().unwrap_err();
        assert!(
            format!("{error:#}").contains("cannot start ccfuzz-spawn-test"),
            "{error:#}"
        );
        assert_eq!(run_it().unwrap().stdout, b"two\n");
    }
}
