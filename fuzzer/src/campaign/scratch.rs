//! Where a campaign's scratch directories go (variants, binaries, compiler temporaries, seeds
//! being made): `/dev/shm` when it is a tmpfs with room for every client, else `OUT/tmp`. At
//! 80 executions per second against tcc, a file system on disk journals the creation and removal
//! of every binary and rewrites the variant's pages: on a tmpfs the client's own CPU per
//! execution is about 5% lower, and no disk wears.
//!
//! Scratch outside `OUT` is held by a lock for as long as the campaign runs: a campaign killed
//! and never started again on its directory leaves its scratch in memory, and the next campaign
//! that starts removes it.

use anyhow::{Context, Result};
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The tmpfs that Linux systems mount for shared memory.
const SHARED_MEMORY: &str = "/dev/shm";

/// Room on the tmpfs per client: a client's scratch held at most 18 entries and 2.6 MB with
/// csmith seeds against tcc (a seed being profiled beside an execution); the rest is margin for
/// larger seeds and slower compilers' temporaries.
const ROOM_PER_CLIENT: u64 = 64 << 20;

/// What scratch directories of campaigns are named, under a root outside their `OUT`.
pub const PREFIX: &str = "ccfuzz-";

/// The file in a scratch directory that its campaign holds locked while it runs.
const OWNER_LOCK: &str = ".owner-lock";

/// A lock younger than this may not be taken yet by the campaign that created it.
const LOCK_SETTLING: Duration = Duration::from_secs(60);

/// `/dev/shm` when it is a tmpfs with room for `clients` clients' scratch.
pub fn shared_memory_root(clients: usize) -> Option<PathBuf> {
    shared_memory_root_at(Path::new(SHARED_MEMORY), clients)
}

fn shared_memory_root_at(root: &Path, clients: usize) -> Option<PathBuf> {
    let stat = nix::sys::statfs::statfs(root).ok()?;
    if stat.filesystem_type() != nix::sys::statfs::TMPFS_MAGIC {
        return None;
    }
    let free = stat.blocks_available() as u64 * stat.block_size() as u64;
    (free >= ROOM_PER_CLIENT.saturating_mul(clients.max(1) as u64)).then(|| root.to_path_buf())
}

/// A campaign's scratch directory, created empty and locked until this is dropped (by every
/// process that inherited it: the clients are forks).
#[derive(Debug)]
pub struct HeldScratch {
    _lock: File,
}

/// Empties and creates `dir` (what a killed run left there is garbage) and locks it; fails,
/// touching nothing, while a running campaign holds it.
pub fn hold_fresh(dir: &Path) -> Result<HeldScratch> {
    if File::open(dir.join(OWNER_LOCK)).is_ok_and(|held| !try_lock(&held)) {
        anyhow::bail!("{} is the scratch of a campaign that is running", dir.display());
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(OWNER_LOCK);
    let lock = File::create(&path).with_context(|| format!("cannot create {}", path.display()))?;
    if !try_lock(&lock) {
        anyhow::bail!("{} is the scratch of a campaign that is running", dir.display());
    }
    Ok(HeldScratch { _lock: lock })
}

/// Removes the scratch directories under `root` whose campaigns no longer run (their lock is
/// free), but `own`. Returns how many went.
pub fn remove_abandoned(root: &Path, own: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(root) else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let dir = entry.path();
        if dir == own || !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        // A directory without a lock is not a campaign's scratch, or not one this can judge.
        let Ok(lock) = File::open(dir.join(OWNER_LOCK)) else {
            continue;
        };
        let settled = lock
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|modified| modified.elapsed().is_ok_and(|age| age >= LOCK_SETTLING));
        if settled && try_lock(&lock) && std::fs::remove_dir_all(&dir).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// Takes `file`'s exclusive lock if no process holds it.
fn try_lock(file: &File) -> bool {
    // SAFETY: flock on a descriptor this process owns.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::time::SystemTime;

    fn age(dir: &Path) {
        let lock = File::options().write(true).open(dir.join(OWNER_LOCK)).unwrap();
        lock.set_modified(SystemTime::now() - LOCK_SETTLING * 2).unwrap();
    }

    /// Removes abandoned scratch until `expected` directories went, or ten seconds passed: a
    /// lock is free once every process holding it has exited (a killed command, or a fork of
    /// another test's thread between its `fork` and its `exec`).
    fn remove_abandoned_until(root: &Path, own: &Path, expected: usize) -> usize {
        let started = std::time::Instant::now();
        let mut removed = remove_abandoned(root, own);
        while removed < expected && started.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
            removed += remove_abandoned(root, own);
        }
        removed
    }

    #[test]
    fn scratch_a_dead_campaign_left_goes_and_a_running_ones_stays() {
        let root = tempfile::tempdir().unwrap();
        let own = root.path().join(format!("{PREFIX}own"));
        let running = root.path().join(format!("{PREFIX}running"));
        let dead = root.path().join(format!("{PREFIX}dead"));
        let young = root.path().join(format!("{PREFIX}young"));
        let unlocked = root.path().join(format!("{PREFIX}unlocked"));
        let other = root.path().join("other");
        let _own = hold_fresh(&own).unwrap();
        std::fs::create_dir_all(own.join("client-1")).unwrap();
        // A second campaign on the same directory touches nothing.
        assert!(hold_fresh(&own).is_err());
        assert!(own.join("client-1").is_dir());
        // Another campaign, as a process of its own: the lock is the process's.
        std::fs::create_dir_all(&running).unwrap();
        let mut holder = std::process::Command::new("flock")
            .arg(running.join(OWNER_LOCK))
            .args(["sleep", "30"])
            .process_group(0)
            .spawn()
            .unwrap();
        drop(hold_fresh(&dead).unwrap());
        drop(hold_fresh(&young).unwrap());
        for dir in [&unlocked, &other] {
            std::fs::create_dir_all(dir.join("client-1")).unwrap();
        }
        std::fs::write(dead.join("prog0"), "a binary").unwrap();
        // Wait until the holder has its lock.
        let started = std::time::Instant::now();
        while !File::open(running.join(OWNER_LOCK)).is_ok_and(|f| !try_lock(&f)) {
            assert!(started.elapsed() < Duration::from_secs(10), "flock never took its lock");
            std::thread::sleep(Duration::from_millis(10));
        }
        for dir in [&own, &running, &dead] {
            age(dir);
        }
        assert_eq!(remove_abandoned_until(root.path(), &own, 1), 1);
        assert!(!dead.exists());
        for dir in [&own, &running, &young, &unlocked, &other] {
            assert!(dir.exists(), "{} went", dir.display());
        }
        // Killed, with the command that inherited its lock.
        nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(holder.id() as i32),
            nix::sys::signal::SIGKILL,
        )
        .unwrap();
        holder.wait().unwrap();
        assert_eq!(remove_abandoned_until(root.path(), &own, 1), 1);
        assert!(!running.exists() && own.exists());
    }

    #[test]
    fn only_a_tmpfs_with_room_for_every_client_takes_the_scratch() {
        let shm = Path::new(SHARED_MEMORY);
        if let Some(root) = shared_memory_root(1) {
            assert_eq!(root, shm);
            assert_eq!(shared_memory_root(usize::MAX >> 32), None);
        }
        // The test's temporary directory is on the disk in CI.
        let disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        assert_eq!(shared_memory_root_at(disk.path(), 1), None);
    }
}
