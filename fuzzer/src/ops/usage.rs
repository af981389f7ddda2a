//! CPU time and memory of processes, from `getrusage` and `/proc`: what reports, the heap's
//! trims and the benchmarks measure.

/// User plus system CPU seconds of this process (`RUSAGE_SELF`) or of its waited-for
/// descendants (`RUSAGE_CHILDREN`).
pub fn cpu_seconds(who: nix::sys::resource::UsageWho) -> nix::Result<f64> {
    let usage = nix::sys::resource::getrusage(who)?;
    let (user, system) = (usage.user_time(), usage.system_time());
    Ok(user.tv_sec() as f64 + system.tv_sec() as f64 + (user.tv_usec() + system.tv_usec()) as f64 / 1e6)
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
