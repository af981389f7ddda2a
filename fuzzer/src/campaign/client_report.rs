//! What a client did, written to `clients/client-N.json` every minute and when it stops:
//! executions, CPU, memory, corpus, MCMC figures, what the corpus covers inside the compilers
//! and every optimization counter.

use crate::campaign::manager::UnsharedStates;
use crate::campaign::options::CampaignState;
use crate::exec::executor::ExecutorTotals;
use crate::exec::repeats::RepeatedTexts;
use crate::judge::validity::InvalidVariants;
use crate::mcmc::{FamilyYields, McmcChains};
use crate::ops::usage::cpu_seconds;
use crate::seeds::SeedTiming;
use ccfuzz_observers::counters::Counters;
use libafl::corpus::Corpus;
use libafl::state::{HasCorpus, HasExecutions, HasImported};
use libafl::HasMetadata;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// What a client did, written to `clients/client-N.json` every minute and when it stops.
#[derive(Debug, Serialize, Deserialize)]
pub struct ClientReport {
    pub executions: u64,
    /// Corpus entries the client held, and how many of them came from other cores.
    pub corpus: usize,
    pub imported: usize,
    /// CPU seconds of the client process itself (mutation, materialization, judging, LLMP).
    pub own_cpu: f64,
    /// CPU seconds of its children: compilers, test binaries, csmith.
    pub children_cpu: f64,
    pub mcmc: McmcReport,
    /// Optimization counters summed over the client's executions since it (re)started.
    pub counters: Counters,
    /// Compiler coverage entries (`edges_covered`, `lines_covered`) and distinct counters the
    /// client's corpus holds.
    pub covered: BTreeMap<String, u64>,
    /// Variants the validity gate stopped, by proposing family.
    pub invalid: InvalidVariants,
    /// Proposals, their seconds, findings and novelty, by family.
    #[serde(default)]
    pub families: FamilyYields,
    /// Seconds since the client (re)started, and how many of them went into making seeds.
    pub wall_seconds: f64,
    pub seed_making: SeedMakingReport,
    /// Binaries not run because another configuration of the same variant linked the same bytes.
    pub reused_runs: u64,
    /// Variants the validity gate's reference compiled.
    pub reference_runs: u64,
    /// Proposals not run because their text had already run.
    pub repeated_texts: u64,
    /// Accepted chain states not sent to the other clients (no map is observed).
    pub unshared_states: u64,
    /// The client's resident memory when the report was written.
    pub rss_bytes: u64,
    /// Where that memory is: what tells a leak from a heap that holds freed pages.
    pub memory: MemoryReport,
    /// Parsed seeds the client holds in memory, and their estimated bytes.
    pub seed_cache: (usize, usize),
}

/// A process's resident memory in bytes, from its `statm` in /proc (`self`, or a pid); 0 where
/// /proc does not say.
pub fn resident_bytes(process: &str) -> u64 {
    crate::ops::usage::statm_bytes(process, 1).unwrap_or(0)
}

/// A process's resident memory by kind, and its malloc heap: bytes in use by live allocations
/// and bytes free inside the heap that glibc has not handed back.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct MemoryReport {
    pub anonymous_bytes: u64,
    pub shared_memory_bytes: u64,
    pub file_bytes: u64,
    pub heap_in_use_bytes: u64,
    pub heap_free_bytes: u64,
    /// Resident bytes the process's trims of the heap have handed back since it started.
    pub returned_by_trims_bytes: u64,
}

impl MemoryReport {
    pub fn of_this_process() -> Self {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let kilobytes = |field: &str| {
            status
                .lines()
                .find_map(|line| {
                    line.strip_prefix(field)?
                        .trim()
                        .strip_suffix("kB")?
                        .trim()
                        .parse::<u64>()
                        .ok()
                })
                .unwrap_or(0)
                * 1024
        };
        // SAFETY: mallinfo2 only reads glibc's allocator statistics.
        let heap = unsafe { libc::mallinfo2() };
        MemoryReport {
            anonymous_bytes: kilobytes("RssAnon:"),
            shared_memory_bytes: kilobytes("RssShmem:"),
            file_bytes: kilobytes("RssFile:"),
            heap_in_use_bytes: (heap.uordblks + heap.hblkhd) as u64,
            heap_free_bytes: heap.fordblks as u64,
            returned_by_trims_bytes: crate::ops::heap::returned_so_far(),
        }
    }
}

/// The client's seed making: candidate programs profiled and vetted, and where the time went.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SeedMakingReport {
    pub candidates: u32,
    /// Candidates that became seeds: a campaign forgets the seeds of retired chains, so its
    /// seed store holds fewer.
    #[serde(default)]
    pub accepted: u32,
    pub seconds: f64,
    pub sanitizer_seconds: f64,
    pub guard_warning_seconds: f64,
    #[serde(default)]
    pub front_end_seconds: f64,
    /// CPU seconds of the client and of its children in seed making and the seeds' first
    /// executions: what tells the harness's cost per seed from its cost per execution.
    pub own_cpu: f64,
    pub children_cpu: f64,
}

impl SeedMakingReport {
    fn of(timing: &SeedTiming, cpu: CpuSpent) -> Self {
        SeedMakingReport {
            candidates: timing.seeds,
            accepted: timing.accepted,
            seconds: timing.total.as_secs_f64(),
            sanitizer_seconds: timing.sanitizers.as_secs_f64(),
            guard_warning_seconds: timing.guard_warnings.as_secs_f64(),
            front_end_seconds: timing.front_ends.as_secs_f64(),
            own_cpu: cpu.own,
            children_cpu: cpu.children,
        }
    }
}

/// CPU seconds of the client process and of its waited-for children in one part of its work.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuSpent {
    pub own: f64,
    pub children: f64,
}

impl CpuSpent {
    /// Runs `work` and adds what it took to this account. A client does one thing at a time
    /// (its helper threads and children are waited for), so the process's counters are `work`'s.
    pub fn measure<T>(&mut self, work: impl FnOnce() -> T) -> T {
        use nix::sys::resource::UsageWho::{RUSAGE_CHILDREN, RUSAGE_SELF};
        let now = |who| cpu_seconds(who).unwrap_or(0.0);
        let (own, children) = (now(RUSAGE_SELF), now(RUSAGE_CHILDREN));
        let result = work();
        self.own += now(RUSAGE_SELF) - own;
        self.children += now(RUSAGE_CHILDREN) - children;
        result
    }
}

/// The chains of a client: acceptance, and how far from their seeds they went.
#[derive(Debug, Serialize, Deserialize)]
pub struct McmcReport {
    /// Chains started, those forgotten with their seeds included.
    pub chains: u64,
    pub proposals: u64,
    pub accepted: u64,
    pub acceptance_rate: f64,
    pub mean_chain_length: f64,
    /// Times a chain started again from its seed at its longest.
    pub restarts: u64,
    /// (chain length from, mean program distance of the chain's state, decisions), by buckets
    /// of chain length.
    pub distance_by_length: Vec<(u64, f64, u64)>,
    /// Corpus entries taken out of memory: states the chains left, retired chains' states,
    /// other clients' variants.
    pub forgotten_entries: u64,
    /// Files of chain states deleted from `corpus/` (left, added nothing else, and no file
    /// kept reads through them).
    pub deleted_files: u64,
    /// Retired chains forgotten once their seeds left the store.
    pub forgotten_chains: u64,
}

impl McmcReport {
    fn of(chains: &McmcChains) -> Self {
        McmcReport {
            chains: chains.started(),
            proposals: chains.proposals,
            accepted: chains.accepted,
            acceptance_rate: chains.acceptance_rate(),
            mean_chain_length: chains.mean_length(),
            restarts: chains.restarts(),
            distance_by_length: chains.by_length.means(),
            forgotten_entries: chains.forgotten,
            deleted_files: chains.deleted_files,
            forgotten_chains: chains.forgotten_chains,
        }
    }
}

/// What the client loop knows about itself, besides its state.
pub struct ClientFigures<'a> {
    pub totals: &'a ExecutorTotals,
    pub covered: BTreeMap<String, u64>,
    pub seed_timing: &'a SeedTiming,
    pub seed_cpu: CpuSpent,
    pub wall: std::time::Duration,
    /// Parsed seeds held in memory, and their estimated bytes.
    pub seed_cache: (usize, usize),
}

pub fn write_client_report(
    out: &Path,
    id: usize,
    state: &CampaignState,
    figures: ClientFigures,
) -> std::io::Result<()> {
    use nix::sys::resource::UsageWho;
    let report = ClientReport {
        executions: *state.executions(),
        corpus: state.corpus().count(),
        imported: *state.imported(),
        own_cpu: cpu_seconds(UsageWho::RUSAGE_SELF)?,
        children_cpu: cpu_seconds(UsageWho::RUSAGE_CHILDREN)?,
        mcmc: McmcReport::of(state.metadata::<McmcChains>().unwrap_or(&McmcChains::default())),
        counters: figures.totals.counters.clone(),
        covered: figures.covered,
        invalid: state.metadata::<InvalidVariants>().cloned().unwrap_or_default(),
        families: state.metadata::<FamilyYields>().cloned().unwrap_or_default(),
        wall_seconds: figures.wall.as_secs_f64(),
        seed_making: SeedMakingReport::of(figures.seed_timing, figures.seed_cpu),
        reused_runs: figures.totals.reused_runs,
        reference_runs: figures.totals.reference_runs,
        repeated_texts: state.metadata::<RepeatedTexts>().map_or(0, |r| r.0),
        unshared_states: state.metadata::<UnsharedStates>().map_or(0, |u| u.0),
        rss_bytes: resident_bytes("self"),
        memory: MemoryReport::of_this_process(),
        seed_cache: figures.seed_cache,
    };
    let dir = out.join("clients");
    std::fs::create_dir_all(&dir)?;
    // Written aside and renamed: the report is read while the campaign runs, and everything in
    // `clients/` is taken for a report.
    let partial = out.join(format!(".client-{id}.json.partial"));
    std::fs::write(&partial, serde_json::to_vec_pretty(&report)?)?;
    std::fs::rename(&partial, dir.join(format!("client-{id}.json")))
}

#[cfg(test)]
mod tests {
    use super::CpuSpent;
    use std::process::Command;
    use std::time::Duration;

    fn thread_cpu() -> Duration {
        let usage = nix::sys::resource::getrusage(nix::sys::resource::UsageWho::RUSAGE_THREAD).unwrap();
        let (user, system) = (usage.user_time(), usage.system_time());
        Duration::from_micros((user.tv_sec() + system.tv_sec()) as u64 * 1_000_000)
            + Duration::from_micros((user.tv_usec() + system.tv_usec()) as u64)
    }

    fn burn(cpu: Duration) -> Duration {
        let start = thread_cpu();
        let mut x = 0u64;
        while thread_cpu() - start < cpu {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        thread_cpu() - start
    }

    // Other tests run beside this one in the same process: only lower bounds are certain, and
    // a part that did nothing takes a moment, much less than the process's total.
    #[test]
    fn a_measured_part_counts_the_cpu_it_and_its_children_use_from_its_start() {
        burn(Duration::from_millis(60));
        let mut idle = CpuSpent::default();
        idle.measure(|| ());
        assert!(idle.own < 0.03 && idle.children < 0.03, "{idle:?}");
        let mut spent = CpuSpent::default();
        let burned = spent.measure(|| burn(Duration::from_millis(60)));
        assert!(spent.own >= 0.9 * burned.as_secs_f64(), "{spent:?} for {burned:?}");
        spent.measure(|| {
            let status = Command::new("sh")
                .args(["-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"])
                .status()
                .unwrap();
            assert!(status.success());
        });
        assert!(spent.children > 0.05, "{spent:?}");
    }
}
