//! Coverage of the compiler under test as a LibAFL map: AFL++ edges written by an instrumented
//! compiler into shared memory, or gcov lines of a `--coverage` build hashed into a map of the
//! same type, so that one `MaxMapFeedback` judges either.

use anyhow::{bail, Context, Result};
use libafl::observers::{HitcountsMapObserver, MapObserver, StdMapObserver};
use libafl_bolts::shmem::{ShMem, ShMemProvider, StdShMem, StdShMemProvider};
use std::process::Command;

/// The compiler-coverage observer: raw counts in, AFL hit-count buckets out (`post_exec`).
pub type CoverageObserver = HitcountsMapObserver<StdMapObserver<'static, u8, false>>;

/// Entries of the map that gcov lines are hashed into (a compiler has up to ~10^6 lines).
pub const GCOV_MAP_SIZE: usize = 1 << 18;

/// A shared-memory segment that AFL++-instrumented processes write their edge counts into.
/// It must outlive the observer that points into it.
pub struct AflMap {
    shmem: StdShMem,
}

impl AflMap {
    /// A zeroed segment of `size` entries and the observer (named `edges`) reading it.
    pub fn new(size: usize) -> Result<(Self, CoverageObserver)> {
        let mut provider = StdShMemProvider::new().context("no shared-memory provider")?;
        let mut shmem = provider
            .new_shmem(size)
            .with_context(|| format!("cannot allocate a {size}-byte shared-memory map"))?;
        shmem.fill(0);
        // SAFETY: the segment lives in `AflMap`, which the executor keeps as long as the observer.
        let base = unsafe { StdMapObserver::from_mut_ptr("edges", shmem.as_mut_ptr(), size) };
        Ok((AflMap { shmem }, HitcountsMapObserver::new(base)))
    }

    /// The environment that makes an instrumented process (and its children, such as `cc1`
    /// under the `gcc` driver) write into this map.
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            ("__AFL_SHM_ID".into(), self.shmem.id().to_string()),
            ("AFL_MAP_SIZE".into(), self.shmem.len().to_string()),
        ]
    }

    pub fn len(&self) -> usize {
        self.shmem.len()
    }

    pub fn is_empty(&self) -> bool {
        self.shmem.is_empty()
    }
}

/// A map of `size` entries in private memory, for gcov lines (or no coverage at all).
pub fn private_map(name: &'static str, size: usize) -> CoverageObserver {
    HitcountsMapObserver::new(StdMapObserver::owned(name, vec![0u8; size]))
}

/// The map size an AFL++-instrumented program reports with `AFL_DUMP_MAP_SIZE=1` (the program
/// prints it and exits); `None` when the program is not instrumented.
pub fn afl_map_size(program: &str) -> Option<usize> {
    let out = Command::new(program).env("AFL_DUMP_MAP_SIZE", "1").output().ok()?;
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// The map size to allocate for an instrumented compiler: what its driver reports, at least
/// `at_least` (a driver's sub-processes, such as `cc1`, may have a larger map than the driver).
pub fn map_size_for(program: &str, at_least: Option<usize>) -> Result<usize> {
    match (afl_map_size(program), at_least) {
        (Some(reported), wanted) => Ok(reported.max(wanted.unwrap_or(0))),
        (None, Some(wanted)) => Ok(wanted),
        (None, None) => {
            bail!("{program} reports no AFL map size (AFL_DUMP_MAP_SIZE=1): not built with AFL++ instrumentation? Set map_size if its sub-processes are the instrumented ones")
        }
    }
}

/// Number of non-zero entries of a map observer.
pub fn covered<O: MapObserver<Entry = u8>>(observer: &O) -> usize {
    observer.count_bytes() as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use libafl::observers::Observer;

    #[test]
    fn shared_map_is_exported_and_bucketed() {
        let (map, mut observer) = AflMap::new(4096).unwrap();
        let env = map.env();
        assert_eq!(env[0].0, "__AFL_SHM_ID");
        assert_eq!(env[1], ("AFL_MAP_SIZE".to_string(), "4096".to_string()));
        // Another process attaches by id, as the AFL++ runtime does.
        let id: i32 = env[0].1.parse().unwrap();
        let mut other = StdShMemProvider::new()
            .unwrap()
            .shmem_from_id_and_size(libafl_bolts::shmem::ShMemId::from_int(id), 4096)
            .unwrap();
        Observer::<(), ()>::pre_exec(&mut observer, &mut (), &()).unwrap();
        other[7] = 5;
        other[9] = 1;
        Observer::<(), ()>::post_exec(&mut observer, &mut (), &(), &libafl::executors::ExitKind::Ok).unwrap();
        assert_eq!((observer.get(7), observer.get(9)), (8, 1));
        assert_eq!(covered(&observer), 2);
    }
}
