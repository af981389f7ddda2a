//! Starting a child process the way `posix_spawn` does (a clone that shares this process's
//! memory and suspends the calling thread until the child's `exec`), but with the child itself
//! setting its resource limits, process group and streams before the `exec`.
//!
//! Against tcc a client starts two children per execution, hundreds a second. Through Rust's
//! `Command` and glibc's `posix_spawn` each start cost the client about 35 system calls: the
//! limits lowered on the client and restored around the spawn (a `posix_spawn` child runs no
//! code of ours), then set on the child by `prlimit`, `/dev/null` opened, a stack mapped and
//! unmapped, the descriptor table size read for every stream, a pidfd opened. Here the client
//! makes the pipes, one `clone` that also returns the pidfd, and closes the child's ends; the
//! rest is the child's.
//!
//! Safe in a process with other threads: the child touches only its own stack and the plan
//! made for it, and calls only functions that are async-signal-safe.

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

/// A resource limit set, soft and hard, in the child before its `exec`.
pub type Limit = (libc::__rlimit_resource_t, u64);

/// A started child: the leader of a new process group.
pub struct Started {
    pub pid: libc::pid_t,
    /// Readable once the child has exited.
    pub exited: OwnedFd,
    /// The read ends of the streams asked for, non-blocking.
    pub stdout: Option<OwnedFd>,
    pub stderr: Option<OwnedFd>,
}

/// Starts `command`'s program with its arguments, environment changes and directory, in a
/// process group of its own, with `limits`, `/dev/null` as its input and its output and error
/// streams piped when asked for (to `/dev/null` otherwise).
pub fn spawn(command: &Command, pipe_stdout: bool, pipe_stderr: bool, limits: &[Limit; 5]) -> io::Result<Started> {
    let program = command.get_program();
    let path = c_string(resolve(program, command)?.as_os_str())?;
    let args: Vec<CString> = std::iter::once(Ok(c_string(program)?))
        .chain(command.get_args().map(c_string))
        .collect::<io::Result<_>>()?;
    let argv = null_terminated(&args);
    let environment = changed_environment(command)?;
    let envp = environment.as_ref().map(|vars| null_terminated(vars));
    let cwd = command
        .get_current_dir()
        .map(|dir| c_string(dir.as_os_str()))
        .transpose()?;
    let null = null_device()?;
    let stdout = pipe_stdout.then(pipe).transpose()?;
    let stderr = pipe_stderr.then(pipe).transpose()?;
    let write_end = |piped: &Option<(OwnedFd, OwnedFd)>| piped.as_ref().map_or(null, |(_, write)| write.as_raw_fd());
    let mut plan = Plan {
        path: path.as_ptr(),
        argv: argv.as_ptr(),
        envp: envp.as_ref().map_or(std::ptr::null(), |envp| envp.as_ptr()),
        cwd: cwd.as_ref().map_or(std::ptr::null(), |cwd| cwd.as_ptr()),
        streams: [null, write_end(&stdout), write_end(&stderr)],
        limits: *limits,
        // SAFETY: an all-zero sigset_t is a valid (empty) set; it is filled below.
        signal_mask: unsafe { std::mem::zeroed() },
        error: AtomicI32::new(0),
    };
    let mut pidfd: libc::c_int = -1;
    let pid = STACK.with_borrow_mut(|stack| {
        // The stack grows down from its end, which the ABI wants 16-byte aligned.
        let top = stack.as_mut_ptr_range().end;
        let top = top.wrapping_sub(top as usize % 16);
        // SAFETY: every signal is blocked around the clone, so that no handler of this process
        // runs on the child's stack before the child has set them back to their defaults; the
        // old mask is the child's to restore, and this thread's once the child has gone its way.
        unsafe {
            let mut all: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut plan.signal_mask);
            // SAFETY: `child` runs on `stack` (this thread's, unused by anything else while the
            // thread is suspended by CLONE_VFORK) and reads `plan`, which outlives the clone:
            // the call returns only once the child has called `exec` or exited.
            let pid = libc::clone(
                child,
                top.cast(),
                libc::CLONE_VM | libc::CLONE_VFORK | libc::CLONE_PIDFD | libc::SIGCHLD,
                (&plan as *const Plan).cast_mut().cast(),
                &mut pidfd as *mut libc::c_int,
            );
            let error = io::Error::last_os_error();
            libc::pthread_sigmask(libc::SIG_SETMASK, &plan.signal_mask, std::ptr::null_mut());
            if pid < 0 {
                Err(error)
            } else {
                Ok(pid)
            }
        }
    })?;
    // SAFETY: CLONE_PIDFD stored a new descriptor, owned by nothing else.
    let exited = unsafe { OwnedFd::from_raw_fd(pidfd) };
    let error = plan.error.load(Ordering::Relaxed);
    if error != 0 {
        // The child ended at the failed step: reaped here, as nobody will wait for it.
        let _ = wait(pid);
        if error == libc::ENOENT {
            forget_resolved(program, command);
        }
        return Err(io::Error::from_raw_os_error(error));
    }
    let read_end = |piped: Option<(OwnedFd, OwnedFd)>| piped.map(|(read, _)| read);
    Ok(Started {
        pid,
        exited,
        stdout: read_end(stdout),
        stderr: read_end(stderr),
    })
}

/// Waits for the child `pid` to end and returns its wait status.
pub fn wait(pid: libc::pid_t) -> io::Result<std::process::ExitStatus> {
    use std::os::unix::process::ExitStatusExt;
    let mut status = 0;
    loop {
        // SAFETY: waitpid writes the status into `status`, which lives through the call.
        if unsafe { libc::waitpid(pid, &mut status, 0) } >= 0 {
            return Ok(std::process::ExitStatus::from_raw(status));
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// What the child reads: pointers into the parent's memory, valid until the clone returns.
struct Plan {
    path: *const libc::c_char,
    argv: *const *const libc::c_char,
    /// Null for this process's environment as it is.
    envp: *const *const libc::c_char,
    /// Null to stay in this process's directory.
    cwd: *const libc::c_char,
    /// Descriptors to become the child's 0, 1 and 2.
    streams: [RawFd; 3],
    limits: [Limit; 5],
    /// The mask the spawning thread had: the child's from its `exec` on.
    signal_mask: libc::sigset_t,
    /// The `errno` of the step that failed in the child; 0 when it reached its `exec`.
    error: AtomicI32,
}

/// Signals are numbered 1 to 64 on Linux.
const SIGNALS: libc::c_int = 64;

/// The child, between the clone and the `exec`.
extern "C" fn child(plan: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `plan` points to the parent's `Plan`, alive and unchanged while the parent waits.
    let plan = unsafe { &*(plan as *const Plan) };
    let fail = || -> ! {
        plan.error.store(
            io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO),
            Ordering::Relaxed,
        );
        // SAFETY: _exit ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(127) }
    };
    // SAFETY: only async-signal-safe calls, on the child's own stack and the plan's values.
    unsafe {
        // A handler of the parent's would run on this shared memory: each one goes back to its
        // default (an ignored signal stays ignored, as across any exec).
        let mut action: libc::sigaction = std::mem::zeroed();
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        for signal in 1..=SIGNALS {
            if libc::sigaction(signal, std::ptr::null(), &mut action) == 0
                && action.sa_sigaction != libc::SIG_DFL
                && action.sa_sigaction != libc::SIG_IGN
            {
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
        if libc::setpgid(0, 0) != 0 {
            fail();
        }
        for (resource, value) in plan.limits {
            let limit = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource, &limit) != 0 {
                fail();
            }
        }
        for (target, &source) in plan.streams.iter().enumerate() {
            let target = target as RawFd;
            // dup2 onto itself would keep the close-on-exec flag.
            let duplicated = if source == target {
                libc::fcntl(source, libc::F_SETFD, 0)
            } else {
                libc::dup2(source, target)
            };
            if duplicated < 0 {
                fail();
            }
        }
        if !plan.cwd.is_null() && libc::chdir(plan.cwd) != 0 {
            fail();
        }
        libc::pthread_sigmask(libc::SIG_SETMASK, &plan.signal_mask, std::ptr::null_mut());
        let envp = if plan.envp.is_null() {
            libc::environ as *const *const libc::c_char
        } else {
            plan.envp
        };
        libc::execve(plan.path, plan.argv, envp);
        fail()
    }
}

/// A program's name and the `PATH` it is looked for on.
type Lookup = (std::ffi::OsString, std::ffi::OsString);

thread_local! {
    /// The stack a child of this thread runs on until its `exec`.
    static STACK: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; 64 << 10]);
    /// Programs found on a `PATH`: searching it at each start tried an `exec` in every
    /// directory before the right one.
    static RESOLVED: std::cell::RefCell<std::collections::HashMap<Lookup, PathBuf>> = Default::default();
}

/// The file `program` names: itself when it holds a `/`, else the first executable file of
/// that name in the directories of `PATH` (the command's own, if it sets one).
fn resolve(program: &OsStr, command: &Command) -> io::Result<PathBuf> {
    if program.as_bytes().contains(&b'/') {
        return Ok(PathBuf::from(program));
    }
    let lookup = (program.to_owned(), search_path(command));
    if let Some(found) = RESOLVED.with_borrow(|resolved| resolved.get(&lookup).cloned()) {
        return Ok(found);
    }
    let found = search(program, &lookup.1)?;
    RESOLVED.with_borrow_mut(|resolved| resolved.insert(lookup, found.clone()));
    Ok(found)
}

fn search_path(command: &Command) -> std::ffi::OsString {
    match command.get_envs().find(|(key, _)| *key == "PATH") {
        Some((_, value)) => value.unwrap_or_default().to_owned(),
        None => std::env::var_os("PATH").unwrap_or_default(),
    }
}

/// A program that went away is looked for again at its next start.
fn forget_resolved(program: &OsStr, command: &Command) {
    let lookup = (program.to_owned(), search_path(command));
    RESOLVED.with_borrow_mut(|resolved| resolved.remove(&lookup));
}

fn search(program: &OsStr, path: &OsStr) -> io::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    std::env::split_paths(path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
        .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
}

/// The child's whole environment when `command` changes this process's; `None` otherwise.
fn changed_environment(command: &Command) -> io::Result<Option<Vec<CString>>> {
    if command.get_envs().len() == 0 {
        return Ok(None);
    }
    let mut vars: std::collections::BTreeMap<std::ffi::OsString, std::ffi::OsString> = std::env::vars_os().collect();
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => vars.insert(key.to_owned(), value.to_owned()),
            None => vars.remove(key),
        };
    }
    vars.into_iter()
        .map(|(key, value)| {
            let mut pair = key;
            pair.push("=");
            pair.push(value);
            c_string(&pair)
        })
        .collect::<io::Result<_>>()
        .map(Some)
}

fn c_string(text: &OsStr) -> io::Result<CString> {
    CString::new(text.as_bytes()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a command"))
}

fn null_terminated(strings: &[CString]) -> Vec<*const libc::c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

/// A pipe, both ends closed on `exec`; the read end does not block.
fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut ends = [0; 2];
    // SAFETY: pipe2 writes two new descriptors into `ends`.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by nothing else.
    let (read, write) = unsafe { (OwnedFd::from_raw_fd(ends[0]), OwnedFd::from_raw_fd(ends[1])) };
    // A new pipe's read end has no other status flag.
    // SAFETY: F_SETFL on a descriptor this function owns.
    if unsafe { libc::fcntl(read.as_raw_fd(), libc::F_SETFL, libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((read, write))
}

/// `/dev/null`, opened once for the life of the process (closed on `exec`).
fn null_device() -> io::Result<RawFd> {
    static NULL: std::sync::OnceLock<Result<std::fs::File, i32>> = std::sync::OnceLock::new();
    NULL.get_or_init(|| {
        std::fs::File::options()
            .read(true)
            .write(true)
            .open(Path::new("/dev/null"))
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    })
    .as_ref()
    .map(|null| null.as_raw_fd())
    .map_err(|&error| io::Error::from_raw_os_error(error))
}
