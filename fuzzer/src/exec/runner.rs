//! Running compilers and test binaries: own process group, resource limits, a wall-clock
//! timeout that kills the whole group, and captured output. A campaign that is stopping
//! kills the group too and reports the run as [`Interrupted`].

use crate::ops::shutdown::{Interrupted, WatchedGroup};
use anyhow::{Context, Result};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
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

/// User plus system CPU seconds of this process (`RUSAGE_SELF`) or of its waited-for
/// descendants (`RUSAGE_CHILDREN`).
pub fn cpu_seconds(who: nix::sys::resource::UsageWho) -> nix::Result<f64> {
    let usage = nix::sys::resource::getrusage(who)?;
    let (user, system) = (usage.user_time(), usage.system_time());
    Ok(user.tv_sec() as f64 + system.tv_sec() as f64 + (user.tv_usec() + system.tv_usec()) as f64 / 1e6)
}

/// How often a running child's wait checks whether the campaign was asked to stop.
const STOP_CHECK: Duration = Duration::from_millis(100);

/// How long a child runs before its output wakes this process (see [`run_limited`]).
const PIPES_UNWATCHED: Duration = Duration::from_millis(20);

/// After its output woke this process, how long a child runs before its output may wake it
/// again. clang writes its diagnostics to an unbuffered stderr a few bytes at a time (87,000
/// writes for the warnings of one csmith program): reading after each write was three quarters
/// of a seed's own CPU. A pipe holds 64 KB, so the child is never held below 32 MB/s.
const PIPE_READ_INTERVAL: Duration = Duration::from_millis(2);

/// Once the child is gone, how long its output pipes may stay open (held by a process that
/// left its group) before what they hold is taken as all.
const DRAIN_LIMIT: Duration = Duration::from_secs(1);

/// Spawns are one at a time: the limits a child inherits are the spawning process's own for
/// that instant.
static SPAWNING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How a child gets its limits before its first instruction (a shell reads them at once, and
/// a compiler driver's sub-processes inherit what it had when it forked them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limiting {
    /// `posix_spawn` (a `vfork`, whose cost does not grow with this process's memory as a
    /// `fork`'s does) with the soft limits this process lowers on itself for the instant: see
    /// [`spawn_inheriting`]. Only while no other thread runs, since the lowered limits hold for
    /// every thread: one writing a log past the child's file-size limit would be killed.
    Inheriting,
    /// A `fork` that sets every limit on itself before the `exec`: for a process with other
    /// threads (a launcher profiling seeds, background triage, the test harness).
    Forking,
}

impl Limiting {
    fn for_this_process() -> Self {
        if own_threads() == Some(1) {
            Limiting::Inheriting
        } else {
            Limiting::Forking
        }
    }
}

/// How many threads this process has: its `/proc/PID/task` directory has a link for each, and
/// two more. (Reading `num_threads` from `stat` had the kernel format the whole file at every
/// start of a child.)
fn own_threads() -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    with_own_proc_file("task", |task| task.metadata().ok()?.nlink().checked_sub(2))
}

/// Reads this process's `/proc/PID/NAME` (a few hundred bytes at most).
fn read_own_proc_file<T>(name: &'static str, parse: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    use std::os::unix::fs::FileExt;
    with_own_proc_file(name, |file| {
        let mut bytes = [0u8; 4096];
        let read = file.read_at(&mut bytes, 0).ok()?;
        parse(std::str::from_utf8(&bytes[..read]).ok()?)
    })
}

/// This process's `/proc/PID/NAME`, through a descriptor kept open: a client looks at two such
/// files at each start of a child, and opening and closing them (a path walk each) cost more
/// than reading. Descriptors are per thread and reopened in a forked child, whose pid differs.
fn with_own_proc_file<T>(name: &'static str, f: impl FnOnce(&File) -> Option<T>) -> Option<T> {
    thread_local! {
        static OPEN: std::cell::RefCell<Vec<(&'static str, u32, File)>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let pid = std::process::id();
    OPEN.with_borrow_mut(|open| {
        open.retain(|(_, owner, _)| *owner == pid);
        let at = match open.iter().position(|(n, ..)| *n == name) {
            Some(at) => at,
            None => {
                open.push((name, pid, File::open(format!("/proc/{pid}/{name}")).ok()?));
                open.len() - 1
            }
        };
        f(&open[at].2)
    })
}

/// A process's `/proc/PROCESS/stat` (`self`, or a pid): its command name (cut by the kernel
/// to 15 bytes) and the fields after it, from the state on.
pub fn proc_stat(process: &str) -> Option<(String, String)> {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).ok()?;
    let (name, fields) = split_stat(&stat)?;
    Some((name.to_string(), fields.to_string()))
}

/// The command name and the fields after it of a `stat` file. The name may hold spaces and
/// parentheses: it ends at the last `)`.
fn split_stat(stat: &str) -> Option<(&str, &str)> {
    let (head, fields) = stat.rsplit_once(')')?;
    let (_, name) = head.split_once('(')?;
    Some((name, fields))
}

/// Starts `command` with every limit of `limits` set, soft and hard, the way `limiting` says.
fn spawn_limited(command: &mut Command, limits: &Limits, limiting: Limiting) -> Result<std::process::Child> {
    let program = command.get_program().to_string_lossy().into_owned();
    match limiting {
        Limiting::Inheriting => {
            let mut child = spawn_inheriting(command, limits).with_context(|| format!("cannot start {program}"))?;
            if let Err(e) = set_limits(child.id(), limits) {
                let _ = killpg(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
                let _ = child.wait();
                return Err(e).with_context(|| format!("cannot limit {program}"));
            }
            Ok(child)
        }
        Limiting::Forking => {
            let settings = limit_settings(limits);
            // SAFETY: between fork and exec the closure calls only setrlimit, which is
            // async-signal-safe, on values copied in beforehand; it allocates nothing.
            unsafe {
                command.pre_exec(move || {
                    for (resource, value) in settings {
                        let limit = libc::rlimit {
                            rlim_cur: value,
                            rlim_max: value,
                        };
                        if libc::setrlimit(resource, &limit) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    Ok(())
                })
            };
            command.spawn().with_context(|| format!("cannot start {program}"))
        }
    }
}

/// Spawns `command` with the soft limits on memory, file size and core files inherited: the
/// process lowers its own for the instant of the spawn and restores them. The hard limits,
/// the CPU time (counted from the child's start whenever it is set) and the process count
/// (checked at a fork, which comes later) are set on the child afterwards.
///
/// The limits hold for this whole process for that instant: only a process without other
/// threads may do this. Its address space may meet the memory limit: that limit is inherited
/// only while this process maps at most half of it, less [`MAPPING_GROWTH`] (what it maps is
/// read once a second: see [`recently_mapped_bytes`]), so that the spawn's own mapping does not
/// meet it; a process that maps more gives its child the memory limit only when the others are
/// set, a few microseconds into a run whose dynamic loading alone takes hundreds.
fn spawn_inheriting(command: &mut Command, limits: &Limits) -> std::io::Result<std::process::Child> {
    let _one_at_a_time = SPAWNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let memory_inherited = recently_mapped_bytes().is_some_and(|mapped| mapped + MAPPING_GROWTH <= limits.memory / 2);
    let inherited = [
        (libc::RLIMIT_AS, memory_inherited.then_some(limits.memory)),
        (libc::RLIMIT_FSIZE, Some(limits.file_size)),
        (libc::RLIMIT_CORE, Some(0)),
    ];
    let inherited = inherited
        .into_iter()
        .filter_map(|(resource, value)| Some((resource, value?)));
    let mut saved = Vec::with_capacity(3);
    let mut lowered = Ok(());
    for (resource, value) in inherited {
        let mut own = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the limit into `own`, which lives through the call.
        if unsafe { libc::getrlimit(resource, &mut own) } != 0 {
            lowered = Err(std::io::Error::last_os_error());
            break;
        }
        let soft = libc::rlimit {
            rlim_cur: value.min(own.rlim_max),
            rlim_max: own.rlim_max,
        };
        // SAFETY: setrlimit reads `soft`; only the soft limit goes down, so it can come back.
        if unsafe { libc::setrlimit(resource, &soft) } != 0 {
            lowered = Err(std::io::Error::last_os_error());
            break;
        }
        saved.push((resource, own));
    }
    let spawned = lowered.and_then(|()| command.spawn());
    for (resource, own) in saved {
        // SAFETY: setrlimit reads `own`, the limit this process had.
        unsafe { libc::setrlimit(resource, &own) };
    }
    spawned
}

/// Field `field` of a process's `statm` in /proc (`self`, or a pid), in bytes: 0 is the mapped
/// address space, 1 the resident memory.
pub fn statm_bytes(process: &str, field: usize) -> Option<u64> {
    statm_field(&std::fs::read_to_string(format!("/proc/{process}/statm")).ok()?, field)
}

fn statm_field(statm: &str, field: usize) -> Option<u64> {
    let pages: u64 = statm.split_whitespace().nth(field)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * page.max(0) as u64)
}

/// How much more this process may map between two reads of [`recently_mapped_bytes`].
const MAPPING_GROWTH: u64 = 256 << 20;

/// [`mapped_bytes`] as read at most a second ago: the kernel adds up `statm` at every read,
/// and reading it at each start of a child was a fiftieth of a client's CPU against tcc.
fn recently_mapped_bytes() -> Option<u64> {
    thread_local! {
        static LAST: std::cell::Cell<Option<(Instant, u32, u64)>> = const { std::cell::Cell::new(None) };
    }
    let pid = std::process::id();
    match LAST.get() {
        Some((read, owner, mapped)) if owner == pid && read.elapsed() < Duration::from_secs(1) => Some(mapped),
        _ => {
            let mapped = mapped_bytes()?;
            LAST.set(Some((Instant::now(), pid, mapped)));
            Some(mapped)
        }
    }
}

/// This process's mapped address space in bytes (`VmSize`).
fn mapped_bytes() -> Option<u64> {
    read_own_proc_file("statm", |statm| statm_field(statm, 0))
}

/// Runs `command` to completion or timeout. The child leads a new process group so that a
/// compiler driver and its sub-processes are killed together. Fails with [`Interrupted`]
/// when the campaign is asked to stop while the child runs.
///
/// A single-threaded process (a client) starts its children by `posix_spawn`, others by a
/// `fork` (see [`Limiting`]); one `poll` on a pidfd and both pipes waits for a child, with no
/// threads.
pub fn run(command: Command, limits: &Limits) -> Result<Output> {
    run_limited(command, limits, Limiting::for_this_process())
}

fn run_limited(mut command: Command, limits: &Limits, limiting: Limiting) -> Result<Output> {
    let program = command.get_program().to_string_lossy().into_owned();
    let piped = |read: bool| if read { Ok(Stdio::piped()) } else { null_device() };
    command
        .stdin(null_device()?)
        .stdout(piped(limits.read != Streams::Stderr)?)
        .stderr(piped(limits.read != Streams::Stdout)?)
        .process_group(0);
    let start = Instant::now();
    let mut child = spawn_limited(&mut command, limits, limiting)?;
    let pgid = Pid::from_raw(child.id() as i32);
    let _watched = WatchedGroup::new(pgid);
    let exited = PidFd::open(child.id()).with_context(|| format!("cannot watch {program}"))?;
    let mut stdout = Capture::new(child.stdout.take().map(OwnedFd::from), limits.max_output)?;
    let mut stderr = Capture::new(child.stderr.take().map(OwnedFd::from), limits.max_output)?;
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
    let status = child.wait()?;
    let elapsed = start.elapsed();
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

/// `/dev/null` for a child's stream: a copy of a descriptor this process opened once. Opening
/// it for each stream (`Stdio::null`) walked its path twice per child.
fn null_device() -> Result<Stdio> {
    static NULL: std::sync::OnceLock<std::io::Result<File>> = std::sync::OnceLock::new();
    let null = NULL
        .get_or_init(|| File::options().read(true).write(true).open("/dev/null"))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("cannot open /dev/null: {e}"))?;
    Ok(Stdio::from(
        null.try_clone().context("cannot copy the descriptor of /dev/null")?,
    ))
}

enum Ended {
    Exited,
    TimedOut,
    Interrupted,
}

/// Sets `limits`, soft and hard, on the running child `pid`; its later sub-processes inherit
/// them. Starting each child through util-linux's `prlimit` instead cost an `execve` and about
/// 0.9 ms of CPU per child, a tenth of a tcc execution's.
fn set_limits(pid: u32, limits: &Limits) -> std::io::Result<()> {
    for (resource, value) in limit_settings(limits) {
        let limit = libc::rlimit {
            rlim_cur: value,
            rlim_max: value,
        };
        // SAFETY: prlimit reads `limit` and writes nothing (the old limit is not asked for).
        if unsafe { libc::prlimit(pid as libc::pid_t, resource, &limit, std::ptr::null_mut()) } != 0 {
            let error = std::io::Error::last_os_error();
            // A child that already exited needs no limits; its status tells the rest.
            if error.raw_os_error() == Some(libc::ESRCH) {
                return Ok(());
            }
            return Err(error);
        }
    }
    Ok(())
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

/// A process's pidfd: readable once the process has exited.
struct PidFd(OwnedFd);

impl PidFd {
    fn open(pid: u32) -> std::io::Result<Self> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: the descriptor was just created and is owned by nothing else.
        Ok(PidFd(unsafe { OwnedFd::from_raw_fd(fd as RawFd) }))
    }
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
    fn new(pipe: Option<OwnedFd>, cap: usize) -> Result<Self> {
        if let Some(pipe) = &pipe {
            let flags = fcntl(pipe.as_raw_fd(), FcntlArg::F_GETFL)?;
            fcntl(
                pipe.as_raw_fd(),
                FcntlArg::F_SETFL(OFlag::from_bits_retain(flags) | OFlag::O_NONBLOCK),
            )?;
        }
        Ok(Capture {
            closed: pipe.is_none(),
            pipe: pipe.map(File::from),
            kept: Vec::new(),
            cap,
        })
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
fn wait_for_any(exited: Option<&PidFd>, pipes: [&mut Capture; 2], watch_pipes: bool, wait: Duration) -> Result<bool> {
    let mut fds: Vec<libc::pollfd> = exited
        .map(|pidfd| libc::pollfd {
            fd: pidfd.0.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .into_iter()
        .collect();
    if watch_pipes {
        fds.extend(
            pipes
                .iter()
                .filter(|p| !p.closed)
                .filter_map(|p| p.pipe.as_ref())
                .map(|pipe| libc::pollfd {
                    fd: pipe.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                }),
        );
    }
    let timeout = wait.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    // SAFETY: `fds` is a valid array of pollfd of the length given.
    let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
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
        // As clang writes its diagnostics: pieces of a line, well past the first 20 ms, while
        // the pipes are read at most once per interval.
        let out = sh(
            "i=0; while [ $i -lt 3000 ]; do printf 'ab' >&2; printf c; i=$((i+1)); done; sleep 0.05; echo end >&2",
            10_000,
        );
        assert_eq!(out.exit, Exit::Code(0));
        assert_eq!(out.stdout, b"c".repeat(3000));
        assert_eq!(out.stderr, [b"ab".repeat(3000), b"end\n".to_vec()].concat());
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
    fn the_memory_limit_applies() {
        // Inherited while this process maps at most half of it, less the growth allowed for.
        let limits = Limits {
            memory: 6 << 30,
            ..Limits::program(Duration::from_secs(5))
        };
        assert!(mapped_bytes().unwrap() + MAPPING_GROWTH <= 3 << 30);
        for limiting in [Limiting::Inheriting, Limiting::Forking] {
            let mut c = Command::new("sh");
            c.arg("-c").arg("ulimit -v");
            assert_eq!(
                run_limited(c, &limits, limiting).unwrap().stdout,
                b"6291456\n",
                "{limiting:?}"
            );
        }
    }

    #[test]
    fn the_limits_of_this_process_are_what_they_were_after_a_run() {
        // Other tests spawn on other threads: read outside their windows of lowered limits.
        let own = |resource| {
            let _no_spawn_now = SPAWNING.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let mut limit = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            assert_eq!(unsafe { libc::getrlimit(resource, &mut limit) }, 0);
            (limit.rlim_cur, limit.rlim_max)
        };
        let resources = [libc::RLIMIT_AS, libc::RLIMIT_FSIZE, libc::RLIMIT_CORE];
        let before = resources.map(own);
        let limits = Limits {
            memory: 6 << 30,
            ..Limits::program(Duration::from_secs(5))
        };
        let mut c = Command::new("sh");
        c.arg("-c").arg("ulimit -v; ulimit -c");
        let out = run_limited(c, &limits, Limiting::Inheriting).unwrap();
        assert_eq!(out.stdout, b"6291456\n0\n");
        assert_eq!(resources.map(own), before);
    }

    #[test]
    fn a_memory_limit_below_twice_what_this_process_maps_is_set_just_after_the_spawn() {
        let limits = Limits {
            memory: mapped_bytes().unwrap() + MAPPING_GROWTH,
            ..Limits::program(Duration::from_secs(5))
        };
        let mut c = Command::new("sh");
        c.arg("-c").arg("sleep 0.2; ulimit -v");
        let expected = format!("{}\n", limits.memory / 1024);
        let out = run_limited(c, &limits, Limiting::Inheriting).unwrap();
        assert_eq!(out.stdout, expected.as_bytes());
    }

    #[test]
    fn file_size_limit_applies() {
        // Inheriting lowers this process's limit for the instant of the spawn: above the 2 MB
        // the next test writes at.
        let limits = Limits {
            file_size: 4 << 20,
            ..Limits::program(Duration::from_secs(5))
        };
        for limiting in [Limiting::Inheriting, Limiting::Forking] {
            let dir = tempfile::tempdir().unwrap();
            let mut c = Command::new("sh");
            c.arg("-c")
                .arg("head -c 8000000 /dev/zero > big")
                .current_dir(dir.path());
            let out = run_limited(c, &limits, limiting).unwrap();
            assert!(!out.success(), "{limiting:?}");
            let written = std::fs::metadata(dir.path().join("big")).unwrap().len();
            assert!(written <= 4 << 20, "{limiting:?}: {written}");
        }
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
            assert!(own_threads().unwrap() >= 2);
            assert_eq!(Limiting::for_this_process(), Limiting::Forking);
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
    fn a_forked_child_reads_its_own_thread_count_not_its_parents() {
        // A second thread of its own, whatever the harness runs: the parent has at least two.
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || parked.recv());
        // The first read keeps the descriptor open.
        assert!(own_threads().unwrap() >= 2);
        assert!(mapped_bytes().unwrap() > 0);
        // SAFETY: the child only reads /proc and exits; glibc's fork leaves malloc usable.
        let forked = unsafe { nix::unistd::fork() }.unwrap();
        if matches!(forked, nix::unistd::ForkResult::Parent { .. }) {
            stop.send(()).unwrap();
            other.join().unwrap().unwrap();
        }
        match forked {
            nix::unistd::ForkResult::Child => {
                let alone = own_threads() == Some(1) && mapped_bytes().is_some_and(|m| m > 0);
                // SAFETY: _exit ends the child without running the harness's destructors.
                unsafe { libc::_exit(if alone { 0 } else { 1 }) }
            }
            nix::unistd::ForkResult::Parent { child } => {
                let status = nix::sys::wait::waitpid(child, None).unwrap();
                assert_eq!(status, nix::sys::wait::WaitStatus::Exited(child, 0));
            }
        }
    }
}
