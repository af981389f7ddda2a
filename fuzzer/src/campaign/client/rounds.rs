//! A client's rounds: one proposal each, a new seed whenever one is due, the statistics and
//! reports kept current, until the client stops; then what it holds goes to disk.

use super::{add_seed, now_secs, ClientEvents, ClientExecutor};
use crate::campaign::client_report::{write_client_report, ClientFigures, CpuSpent};
use crate::campaign::options::{CampaignOptions, CampaignState};
use crate::campaign::progress::{report_chains, report_observed};
use crate::exec::executor::ExecutorTotals;
use crate::mcmc::{ChainsFile, FamilyChoice, FamilyYields, McmcChains};
use crate::ops::heap::return_freed_memory;
use crate::ops::shutdown;
use crate::seeds::generator::SeedGenerator;
use crate::seeds::SeedTiming;
use crate::sharing;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedStore;
use ccfuzz_observers::novelty::Novelty;
use libafl::corpus::Corpus;
use libafl::fuzzer::{Evaluator, Fuzzer, HasScheduler};
use libafl::generators::Generator;
use libafl::state::{HasCorpus, HasExecutions, HasSolutions};
use libafl::{Error, HasMetadata};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Idle rounds in a row (no chain could move) after which a client with generated seeds
/// makes a new seed; proposals that change nothing cost microseconds, so this is quick.
const STALLED_ROUNDS: u32 = 100;
/// Idle rounds in a row after which a client without a seed generator says it waits for
/// seeds, and sleeps between rounds.
const WAITING_ROUNDS: u32 = 1000;

/// A client's loop and what it carries between rounds.
pub(super) struct Run<'a, EM, Z> {
    pub(super) state: CampaignState,
    pub(super) fuzzer: Z,
    pub(super) executor: ClientExecutor,
    pub(super) mgr: EM,
    pub(super) store: SeedStore,
    pub(super) programs: Arc<Programs>,
    pub(super) seeds: SeedGenerator,
    pub(super) seed_cpu: CpuSpent,
    pub(super) variants_per_seed: Option<u64>,
    pub(super) chains_file: ChainsFile,
    pub(super) reports: ReportWriter<'a>,
    pub(super) options: &'a CampaignOptions,
    pub(super) deadline: Option<u64>,
}

impl<EM: ClientEvents, Z> Run<'_, EM, Z>
where
    Z: Evaluator<ClientExecutor, EM, Variant, CampaignState> + HasScheduler<Variant, CampaignState>,
{
    /// Rounds of `stages` (one proposal each: the chain's next state is judged when it has
    /// run), and a new seed whenever one is due, until the deadline, the iterations or a stop
    /// request.
    pub(super) fn fuzz_until_done<ST>(&mut self, stages: &mut ST) -> Result<(), Error>
    where
        Z: Fuzzer<ClientExecutor, EM, Variant, CampaignState, ST>,
    {
        let (mut last_stats, mut last_report) = (Instant::now(), Instant::now());
        let mut last_seed_at = *self.state.executions();
        // Rounds in a row in which no mutator could change its input (every seed fully live).
        let mut idle_rounds = 0u32;
        let mut parses_trimmed = self.programs.parses();
        loop {
            let out_of_time = self.deadline.is_some_and(|d| now_secs() >= d);
            let out_of_iterations = self.options.iterations.is_some_and(|n| *self.state.executions() >= n);
            if out_of_time || out_of_iterations || shutdown::requested() {
                return Ok(());
            }
            let executions = *self.state.executions();
            if self.seed_is_due(executions, last_seed_at, idle_rounds) {
                last_seed_at = executions;
                self.add_new_seed()?;
                return_freed_memory();
            }
            // No variants per seed is plain differential testing: a new seed each round, no
            // mutation.
            if self.variants_per_seed != Some(0) {
                shutdown::as_stop_request(self.fuzzer.fuzz_one(
                    stages,
                    &mut self.executor,
                    &mut self.state,
                    &mut self.mgr,
                ))?;
                sharing::announce_findings(&mut self.state, &mut self.mgr, &self.store)?;
            }
            // A variant of a seed not in the cache (another core's, a retired chain's) parsed
            // it: its pages go back before anything else (a report's memory sample among them).
            if self.programs.parses() != parses_trimmed {
                parses_trimmed = self.programs.parses();
                return_freed_memory();
            }
            idle_rounds = if *self.state.executions() == executions {
                self.idle(idle_rounds + 1)
            } else {
                0
            };
            self.mgr
                .maybe_report_progress(&mut self.state, Duration::from_secs(3))?;
            if last_stats.elapsed() >= Duration::from_secs(5) {
                last_stats = Instant::now();
                return_freed_memory();
                report_chains(&mut self.state, &mut self.mgr)?;
                save_chains(&mut self.state, &mut self.chains_file);
                report_observed(&mut self.state, &mut self.mgr, self.reports.observed_maps)?;
            }
            // The report is kept current so that a long campaign's memory and progress can be
            // followed from outside.
            if last_report.elapsed() >= Duration::from_secs(60) {
                last_report = Instant::now();
                self.write_report();
            }
        }
    }

    /// Whether a generated seed gives way to the next: when it has had its variants, or at once
    /// when no chain can move (a tiny program leaves Hermes and Athena nothing to change). With
    /// fast compilers a seed's making costs as much as many variants: it waits, past its
    /// variants, until making seeds is back within its share of the client's time. That share
    /// is `--max-seed-share`, or with `--family-choice yield` what the seeds' yield earns
    /// against the variants' ([`FamilyYields::seed_share`]).
    fn seed_is_due(&self, executions: u64, last_seed_at: u64, idle_rounds: u32) -> bool {
        let timing = &self.seeds.maker.timing;
        let seed_share = timing.total.as_secs_f64() / self.reports.started.elapsed().as_secs_f64().max(1e-3);
        let allowed = match self.options.mcmc.family_choice {
            FamilyChoice::Uniform => self.options.max_seed_share,
            FamilyChoice::Yield => self
                .state
                .metadata::<FamilyYields>()
                .map_or(FamilyYields::default().seed_share(), FamilyYields::seed_share),
        };
        let due = |n: u64| n == 0 || (executions >= last_seed_at + n && seed_share <= allowed);
        self.variants_per_seed
            .is_some_and(|n| due(n) || idle_rounds >= STALLED_ROUNDS)
    }

    /// Makes a new seed and adds it; its time, findings and novelty go to the seeds' yield.
    fn add_new_seed(&mut self) -> Result<(), Error> {
        let started = Instant::now();
        let findings_before = self.state.solutions().count();
        let first = !self.state.metadata::<FamilyYields>().is_ok_and(FamilyYields::has_seeds);
        let added = self.make_and_add_seed()?;
        let seconds = started.elapsed().as_secs_f64();
        if !added {
            self.state
                .metadata_or_insert_with(FamilyYields::default)
                .record_seed_seconds(seconds);
            return Ok(());
        }
        let findings = self.state.solutions().count().saturating_sub(findings_before) as u64;
        // Everything is new to the first seed's empty maps: its novelty predicts nothing.
        let novelty = match self.state.metadata::<Novelty>() {
            Ok(n) if !first => (n.new_coverage + n.new_counters) as u64,
            _ => 0,
        };
        self.state
            .metadata_or_insert_with(FamilyYields::default)
            .record_seed(seconds, findings, novelty);
        Ok(())
    }

    /// Whether a seed was made and added.
    fn make_and_add_seed(&mut self) -> Result<bool, Error> {
        let Run {
            state,
            fuzzer,
            executor,
            mgr,
            store,
            seeds,
            seed_cpu,
            reports,
            ..
        } = self;
        seed_cpu.measure(|| -> Result<bool, Error> {
            match seeds.generate(state) {
                Ok(seed) => {
                    add_seed(fuzzer, state, executor, mgr, store, seed.seed)?;
                    return Ok(true);
                }
                Err(_) if shutdown::requested() => {}
                // A mix of directories only: the chains go on from the seeds taken.
                Err(Error::Empty(..)) => {}
                Err(e) => log::error!("client {}: {e}", reports.id),
            }
            Ok(false)
        })
    }

    /// After `idle_rounds` rounds in a row that executed nothing, says once that the client
    /// waits for seeds, and then sleeps between rounds.
    fn idle(&self, idle_rounds: u32) -> u32 {
        if idle_rounds == WAITING_ROUNDS {
            log::warn!(
                "client {}: no seed has code that never ran; waiting for new seeds",
                self.reports.id
            );
        }
        if idle_rounds >= WAITING_ROUNDS {
            std::thread::sleep(Duration::from_millis(100));
        }
        idle_rounds
    }

    fn write_report(&self) {
        self.reports.write(
            &self.state,
            &self.executor.totals,
            &self.seeds.maker.timing,
            self.seed_cpu,
            &self.programs,
        );
    }

    /// The client stops: its report, the corpus states still in memory and the chains go to
    /// disk, its figures to the log, and the restarter is told not to start it again.
    pub(super) fn finish(mut self) -> Result<(), Error> {
        let id = self.reports.id;
        self.mgr.report_progress(&mut self.state)?;
        let timing = &self.seeds.maker.timing;
        log::info!(
            "client {id}: seed making took {:.0} s of {:.0} s: {}",
            timing.total.as_secs_f64(),
            self.reports.started.elapsed().as_secs_f64(),
            timing.describe()
        );
        self.write_report();
        if let Err(e) = self.state.corpus_mut().write_out_all() {
            log::warn!("client {id}: cannot write the corpus out: {e}");
        }
        save_chains(&mut self.state, &mut self.chains_file);
        if let Ok(chains) = self.state.metadata::<McmcChains>() {
            let by_length: Vec<String> = chains
                .by_length
                .means()
                .iter()
                .map(|(length, mean, _)| format!("{length}+: {mean:.4}"))
                .collect();
            log::info!(
                "client {id}: {} chains ({} turning), {} proposals, acceptance {:.1}%; mean distance by chain length: {}",
                chains.started(),
                chains.rotating(),
                chains.proposals,
                100.0 * chains.acceptance_rate(),
                by_length.join(", ")
            );
        }
        self.mgr.send_exiting()
    }
}

/// Writes the client's report from what its loop holds besides its state.
pub(super) struct ReportWriter<'a> {
    pub(super) out: &'a std::path::Path,
    pub(super) id: usize,
    pub(super) observed_maps: &'a [(String, String)],
    pub(super) started: Instant,
}

impl ReportWriter<'_> {
    fn write(
        &self,
        state: &CampaignState,
        totals: &ExecutorTotals,
        seed_timing: &SeedTiming,
        seed_cpu: CpuSpent,
        programs: &Programs,
    ) {
        let covered = self
            .observed_maps
            .iter()
            .map(|(map, stat)| {
                (
                    stat.clone(),
                    ccfuzz_observers::novelty::covered_entries(state, map) as u64,
                )
            })
            .collect();
        let figures = ClientFigures {
            totals,
            covered,
            seed_timing,
            seed_cpu,
            wall: self.started.elapsed(),
            seed_cache: programs.held(),
        };
        if let Err(e) = write_client_report(self.out, self.id, state, figures) {
            log::warn!("cannot write the report of client {}: {e}", self.id);
        }
    }
}

/// Saves where the chains stand, counting the corpus files the save let go.
fn save_chains(state: &mut CampaignState, file: &mut ChainsFile) {
    if let Err(e) = file.save(state) {
        log::warn!("cannot save the chains to {}: {e}", file.path().display());
    }
}
