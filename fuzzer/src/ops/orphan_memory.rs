//! Shared memory a killed campaign left behind. LLMP's pages, the restarters' state and the
//! AFL coverage map are System V segments (up to 256 MiB each) that their processes remove
//! when they end; after a `kill -9` they stay until reboot. A campaign started again on the same
//! output directory removes the segments created since the previous run on it started whose
//! creator is dead and that nobody has attached.

use anyhow::{Context, Result};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// When the last run on an output directory started, in seconds since the epoch.
const STARTED_FILE: &str = ".started";

/// One line of `/proc/sysvipc/shm`.
#[derive(Debug, PartialEq)]
struct Segment {
    key: i64,
    id: i32,
    creator: i32,
    attached: u64,
    owner: u32,
    created: u64,
}

fn parse(table: &str) -> Vec<Segment> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            Some(Segment {
                key: f.first()?.parse().ok()?,
                id: f.get(1)?.parse().ok()?,
                creator: f.get(4)?.parse().ok()?,
                attached: f.get(6)?.parse().ok()?,
                owner: f.get(9)?.parse().ok()?,
                created: f.get(13)?.parse().ok()?,
            })
        })
        .collect()
}

/// Whether a segment is an orphan of a run that started at `since`: private (LibAFL's and
/// ours have no key), created by this user since then, its creator gone and nobody attached.
fn is_orphan(segment: &Segment, since: u64, user: u32, alive: impl Fn(i32) -> bool) -> bool {
    segment.key == 0
        && segment.attached == 0
        && segment.owner == user
        && segment.created >= since
        && !alive(segment.creator)
}

/// Whether process `pid` runs: a zombie (killed, not yet reaped by whoever inherited it) has
/// released its memory and counts as dead.
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

/// Removes the orphans of the previous run on `out` and records that a new one starts now.
/// Returns how many segments were removed.
pub fn clean_up_and_mark_start(out: &Path) -> Result<usize> {
    let marker = out.join(STARTED_FILE);
    let mut removed = 0;
    if let Some(since) = std::fs::read_to_string(&marker)
        .ok()
        .and_then(|s| s.trim().parse().ok())
    {
        let table = std::fs::read_to_string("/proc/sysvipc/shm").unwrap_or_default();
        // SAFETY: geteuid has no preconditions.
        let user = unsafe { libc::geteuid() };
        for segment in parse(&table).iter().filter(|s| is_orphan(s, since, user, alive)) {
            // SAFETY: IPC_RMID on a segment id takes no buffer.
            if unsafe { libc::shmctl(segment.id, libc::IPC_RMID, std::ptr::null_mut()) } == 0 {
                removed += 1;
            }
        }
    }
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    std::fs::write(&marker, now.to_string()).with_context(|| format!("cannot write {}", marker.display()))?;
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime                   rss                  swap\n         0      32768   600               1048576 29479  7484      0     0     0     0     0 1795492984 1795492984 1795492763                 65536                     0\n 1234           59   600               1048576 29474  7677      0     0     0     0     0 1795492987 1795492987 1795492763                131072                     0\n";

    #[test]
    fn only_unattached_private_segments_of_dead_creators_since_the_start_are_orphans() {
        let segments = parse(TABLE);
        assert_eq!(segments.len(), 2);
        assert_eq!(
            segments[0],
            Segment {
                key: 0,
                id: 32768,
                creator: 29479,
                attached: 0,
                owner: 0,
                created: 1795492763,
            }
        );
        let dead = |_| false;
        assert!(is_orphan(&segments[0], 1795492700, 0, dead));
        assert!(!is_orphan(&segments[0], 1795492800, 0, dead), "older than the run");
        assert!(!is_orphan(&segments[0], 1795492700, 1000, dead), "another user's");
        assert!(!is_orphan(&segments[0], 1795492700, 0, |_| true), "its creator lives");
        assert!(!is_orphan(&segments[1], 0, 0, dead), "it has a key");
    }
}
