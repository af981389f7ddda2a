//! One fuzzing client: its observers, feedbacks, objective, MCMC scheduler and executor, its
//! seeds (stored, generated or received), and its loop until the deadline or a stop request.

use crate::campaign::options::{
    CampaignOptions, CampaignState, MixedSource, SeedSource, CORPUS_CACHE, SEED_CACHE_BYTES,
};
use crate::campaign::progress::{report_chains, report_observed};
use crate::campaign::report::{write_client_report, ClientFigures, CpuSpent};
use crate::campaign::resume::reload_corpus;
use crate::exec::executor::{ExecutionObservers, ExecutorTotals};
use crate::exec::repeats::{RepeatedTextFilter, REMEMBERED_TEXTS};
use crate::judge::new_seed::{NewSeedFeedback, SeedsInCorpus};
use crate::judge::objective::FindingsObjective;
use crate::judge::validity::ValidVariant;
use crate::mcmc::{
    restore_chains, AcceptanceFeedback, ChainMutator, ChainsFile, DecisionLog, McmcChains, McmcScheduler,
};
use crate::ops::heap::return_freed_memory;
use crate::ops::shutdown;
use crate::seeds::generator::{ProgramSource, SeedGenerator};
use crate::seeds::{SeedMaker, SeedTiming};
use anyhow::Result;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::saved;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_observers::novelty::NoveltyFeedback;
use libafl::corpus::ondisk::OnDiskMetadataFormat;
use libafl::corpus::{CachedOnDiskCorpus, Corpus, OnDiskCorpus, Testcase};
use libafl::events::{ClientDescription, EventRestarter, ProgressReporter, SendExiting};
use libafl::executors::ExitKind;
use libafl::feedbacks::MaxMapFeedback;
use libafl::fuzzer::{Evaluator, Fuzzer, StdFuzzerBuilder};
use libafl::generators::Generator;
use libafl::schedulers::Scheduler;
use libafl::stages::StdMutationalStage;
use libafl::state::{HasCorpus, HasExecutions, StdState};
use libafl::{feedback_and_fast, feedback_or};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::{tuple_list, Handled};
use libafl_bolts::{current_nanos, nonzero, Named};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Idle rounds in a row (no chain could move) after which a client with generated seeds
/// makes a new seed; proposals that change nothing cost microseconds, so this is quick.
const STALLED_ROUNDS: u32 = 100;
/// Idle rounds in a row after which a client without a seed generator says it waits for
/// seeds, and sleeps between rounds.
const WAITING_ROUNDS: u32 = 1000;

pub fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// Executes a seed and puts it in the corpus even when its own execution was a finding
/// (the objective then keeps LibAFL from adding it), announcing it to the other cores and nodes.
/// A stop requested during the execution leaves the seed to the resumed campaign.
fn add_seed<Z, E, EM>(
    fuzzer: &mut Z,
    state: &mut CampaignState,
    executor: &mut E,
    mgr: &mut EM,
    store: &SeedStore,
    id: SeedId,
) -> Result<(), Error>
where
    Z: Evaluator<E, EM, Variant, CampaignState> + libafl::fuzzer::HasScheduler<Variant, CampaignState>,
    EM: libafl::events::EventFirer<Variant, CampaignState>,
    E: libafl::executors::HasObservers,
    E::Observers: Serialize,
{
    let variant = Variant::of_seed(id.clone());
    let Some((_, added)) = shutdown::as_stop_request(fuzzer.evaluate_input(state, executor, mgr, &variant))? else {
        return Ok(());
    };
    if added.is_none() {
        if !state.metadata_or_insert_with(SeedsInCorpus::default).0.insert(id) {
            return Ok(());
        }
        let corpus_id = state.corpus_mut().add(Testcase::new(variant.clone()))?;
        fuzzer.scheduler_mut().on_add(state, corpus_id)?;
    }
    // LibAFL's own announcement of a new entry does not carry the seed.
    crate::sharing::announce(state, mgr, store, &variant, &*executor.observers(), ExitKind::Ok)
}

pub fn client<EM>(
    state: Option<CampaignState>,
    mut mgr: EM,
    desc: &ClientDescription,
    client_count: usize,
    options: &CampaignOptions,
    deadline: Option<u64>,
    seeds_at_start: u64,
) -> Result<(), Error>
where
    EM: libafl::events::EventFirer<Variant, CampaignState>
        + libafl::events::EventReceiver<Variant, CampaignState>
        + ProgressReporter<CampaignState>
        + SendExiting
        + EventRestarter<CampaignState>,
{
    let started = std::time::Instant::now();
    let anyhow_to_libafl = |e: anyhow::Error| Error::illegal_state(format!("{e:#}"));
    // Instead of the restarting manager's handler, which exits on the spot.
    shutdown::handle_stop_signals().map_err(anyhow_to_libafl)?;
    let store = options.store().map_err(anyhow_to_libafl)?;
    // Seeds that keep coming take turns in a bounded rotation; a fixed set all take turns.
    let rotation = match options.seeds {
        SeedSource::Directory(_) => None,
        _ => Some(options.mcmc.active_chains),
    };
    // One more than the rotation: a new seed enters the cache before its chain retires the oldest.
    let programs =
        Arc::new(Programs::new(store.clone(), SEED_CACHE_BYTES).keeping_at_least(rotation.map_or(0, |n| n + 1)));
    let workdir = options.scratch().join(format!("client-{}", desc.id()));
    // A client restarted after a crash finds the scratch of the execution it crashed in.
    let _ = std::fs::remove_dir_all(&workdir);
    std::fs::create_dir_all(&workdir)?;

    let observers = ExecutionObservers::new(&options.config).map_err(anyhow_to_libafl)?;
    let (coverage, counters) = (&observers.coverage, &observers.counters);
    // Map name and statistic name of what the corpus covers inside the compilers.
    let mut observed_maps = Vec::new();
    if options.config.observes_coverage() {
        observed_maps.push((coverage.name().to_string(), format!("{}_covered", coverage.name())));
    }
    if options.config.observes_counters() {
        observed_maps.push((counters.name().to_string(), "distinct_counters".to_string()));
    }
    let acceptance = AcceptanceFeedback::new(
        programs.clone(),
        options.mcmc.athena,
        options.mcmc.guidance,
        Some(DecisionLog::open(
            &options.out.join("mcmc").join(format!("client-{}.csv", desc.id())),
            options.mcmc.decision_log_bytes,
        )?),
    )?;
    // An invalid variant is nothing. Otherwise new seeds, new compiler coverage, new
    // optimization counters and accepted MCMC proposals keep a variant. Novelty is measured
    // first (the acceptance reads it), the map feedbacks then record the execution.
    let mut feedback = feedback_and_fast!(
        ValidVariant::new(observers.execution.handle()),
        feedback_or!(
            NoveltyFeedback::new(coverage, counters, &observers.counter_names),
            acceptance,
            MaxMapFeedback::new(coverage),
            MaxMapFeedback::new(counters),
            NewSeedFeedback
        )
    );
    let mut objective = FindingsObjective::new(
        observers.execution.handle(),
        programs.clone(),
        options.config.clone(),
        options.out.join("findings"),
    );
    let fresh = state.is_none();
    // An entry's metadata file tells what it added to the observed maps: without maps it holds
    // zeros, and creating it was a tenth of the client's CPU against tcc.
    let metadata_format = options
        .config
        .observes_maps()
        .then_some(OnDiskMetadataFormat::JsonPretty);
    // Most chain states are let go within a move: they reach the disk only when needed there.
    saved::defer_writes_in(&options.out.join("corpus"), metadata_format.is_some());
    let random_seed = options.random_seed.unwrap_or_else(current_nanos) ^ desc.id() as u64;
    let mut state = match state {
        Some(state) => state,
        None => StdState::new(
            StdRand::with_seed(random_seed),
            // LibAFL's lock files count the clients holding an entry, for its removal; entries
            // are never removed from disk, and each would cost another file.
            CachedOnDiskCorpus::with_meta_format_and_prefix(
                options.out.join("corpus"),
                CORPUS_CACHE,
                metadata_format,
                None,
                false,
            )?,
            OnDiskCorpus::new(options.out.join("solutions"))?,
            &mut feedback,
            &mut objective,
        )?,
    };
    if fresh {
        let loaded = reload_corpus(&mut state, &options.out.join("corpus"))?;
        if loaded > 0 {
            log::info!("client {}: resumed with {loaded} corpus entries", desc.id());
        }
    }

    let scheduler = McmcScheduler::new(options.mcmc.proposals_per_turn, rotation, programs.clone())
        .pruning_seeds_of(options.out.clone(), client_count);
    let mut chains_file = ChainsFile::new(
        options
            .out
            .join("mcmc")
            .join(format!("chains-client-{}.json", desc.id())),
        options.out.join("corpus"),
    );
    if fresh {
        // Chains start from the seeds of a resumed corpus, and continue where they were saved;
        // those that had retired stay retired.
        let mut every_chain = McmcScheduler::new(options.mcmc.proposals_per_turn, None, programs.clone());
        // Seeds' entries first: a chain holds its seed's variants only once it has started.
        let (mut seeds_first, mut variants) = (Vec::new(), Vec::new());
        for id in state.corpus().ids().collect::<Vec<_>>() {
            if state.corpus().cloned_input_for_id(id)?.edits().is_empty() {
                seeds_first.push(id);
            } else {
                variants.push(id);
            }
        }
        for id in seeds_first.into_iter().chain(variants) {
            every_chain.on_add(&mut state, id)?;
        }
        let restored = restore_chains(&mut state, chains_file.path(), rotation)?;
        if restored > 0 {
            log::info!("client {}: {restored} chains continue where they stopped", desc.id());
        }
        // The retired chains' entries, and other clients' entries of seeds without a chain here.
        let ids: Vec<_> = state.corpus().ids().collect();
        state.metadata_or_insert_with(McmcChains::default).release_unheld(ids);
    }
    let mut fuzzer = StdFuzzerBuilder::new()
        .input_filter(RepeatedTextFilter::new(programs.clone(), REMEMBERED_TEXTS))
        .scheduler(scheduler)
        .feedback(feedback)
        .objective(objective)
        .build();
    let mut executor = observers.into_executor(programs.clone(), options.config.clone(), workdir.clone());
    // Every compile of a variant sets `TMPDIR` to the executor's directory; set here once, the
    // environment its children get is this process's own. The client has no other thread yet.
    // Created now: other children (seed making's) may need a temporary directory first.
    let private_dir = executor.private_dir();
    std::fs::create_dir_all(&private_dir)?;
    std::env::set_var("TMPDIR", private_dir);

    // This client's share of stored seeds that the corpus lacks (directory seeds, or seeds
    // profiled before a kill).
    let mut seed_cpu = CpuSpent::default();
    if fresh {
        let in_corpus = state.metadata_or_insert_with(SeedsInCorpus::default).0.clone();
        let ids = store.ids().map_err(anyhow_to_libafl)?;
        for (index, id) in ids.into_iter().enumerate() {
            if index % client_count == desc.id() % client_count && !in_corpus.contains(&id) {
                seed_cpu.measure(|| add_seed(&mut fuzzer, &mut state, &mut executor, &mut mgr, &store, id))?;
            }
        }
    }

    // csmith's seeds come from random numbers of their own, so that which seeds a client draws
    // does not depend on the mutations made between them; a resumed campaign goes on from
    // other numbers than those of its first start.
    let csmith = || ProgramSource::Csmith(StdRand::with_seed(random_seed.rotate_left(32) ^ seeds_at_start));
    let (variants_per_seed, program_source) = match &options.seeds {
        SeedSource::Csmith { variants_per_seed } => (Some(*variants_per_seed), csmith()),
        SeedSource::Orange {
            variants_per_seed,
            options,
        } => (Some(*variants_per_seed), ProgramSource::orange(*options)),
        SeedSource::Directory(_) => (None, csmith()),
        SeedSource::Mixed {
            variants_per_seed,
            sources,
        } => {
            let sources = sources
                .iter()
                .map(|(source, weight)| {
                    let source = match source {
                        MixedSource::Csmith => csmith(),
                        MixedSource::Orange(options) => ProgramSource::orange(*options),
                        MixedSource::Directory(dir) => {
                            ProgramSource::directory(dir, desc.id(), client_count).map_err(anyhow_to_libafl)?
                        }
                    };
                    Ok((source, *weight))
                })
                .collect::<Result<_, Error>>()?;
            (Some(*variants_per_seed), ProgramSource::Mixed(sources))
        }
    };
    let maker = SeedMaker::new(options.config.clone(), store.clone(), workdir.join("seeds"))
        .map_err(anyhow_to_libafl)?
        .with_parsed_seeds(programs.clone());
    let mut seeds = SeedGenerator {
        maker,
        programs: program_source,
        attempts: 50,
    };
    if state.corpus().count() == 0 {
        if variants_per_seed.is_some() {
            seed_cpu.measure(|| -> Result<(), Error> {
                if let Some(seed) = shutdown::as_stop_request(seeds.generate(&mut state))? {
                    add_seed(&mut fuzzer, &mut state, &mut executor, &mut mgr, &store, seed.seed)?;
                }
                Ok(())
            })?;
        } else {
            // Another client may hold all the seeds; wait for them to arrive.
            while state.corpus().count() == 0 {
                if deadline.is_some_and(|d| now_secs() >= d) || shutdown::requested() {
                    mgr.send_exiting()?;
                    return Ok(());
                }
                shutdown::as_stop_request(libafl::fuzzer::EventProcessor::process_events(
                    &mut fuzzer,
                    &mut state,
                    &mut executor,
                    &mut mgr,
                ))?;
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    seeds.attempts = 10;
    let mut last_seed_at = *state.executions();

    // One proposal per round: the chain's next state is judged when it has run.
    let proposals = StdMutationalStage::with_max_iterations(
        ChainMutator::new(
            programs.clone(),
            options.mcmc.families.clone(),
            options.mcmc.longest_chain,
        ),
        nonzero!(1),
    );
    let mut stages = tuple_list!(proposals);
    let mut last_stats = std::time::Instant::now();
    let mut last_report = std::time::Instant::now();
    let reports = ReportWriter {
        out: &options.out,
        id: desc.id(),
        observed_maps: &observed_maps,
        started,
    };
    // Rounds in a row in which no mutator could change its input (every seed fully live).
    let mut idle_rounds = 0u32;
    let mut parses_trimmed = programs.parses();
    loop {
        let out_of_time = deadline.is_some_and(|d| now_secs() >= d);
        let out_of_iterations = options.iterations.is_some_and(|n| *state.executions() >= n);
        if out_of_time || out_of_iterations || shutdown::requested() {
            mgr.report_progress(&mut state)?;
            log::info!(
                "client {}: seed making took {:.0} s of {:.0} s: {}",
                desc.id(),
                seeds.maker.timing.total.as_secs_f64(),
                started.elapsed().as_secs_f64(),
                seeds.maker.timing.describe()
            );
            reports.write(&state, &executor.totals, &seeds.maker.timing, seed_cpu, &programs);
            if let Err(e) = saved::write_out_all() {
                log::warn!("client {}: cannot write the corpus out: {e}", desc.id());
            }
            save_chains(&mut state, &mut chains_file);
            if let Ok(chains) = state.metadata::<McmcChains>() {
                let by_length: Vec<String> = chains
                    .by_length
                    .means()
                    .iter()
                    .map(|(length, mean, _)| format!("{length}+: {mean:.4}"))
                    .collect();
                log::info!(
                    "client {}: {} chains ({} turning), {} proposals, acceptance {:.1}%; mean distance by chain length: {}",
                    desc.id(),
                    chains.started(),
                    chains.rotating(),
                    chains.proposals,
                    100.0 * chains.acceptance_rate(),
                    by_length.join(", ")
                );
            }
            mgr.send_exiting()?;
            return Ok(());
        }
        let executions = *state.executions();
        // A generated seed gives way to the next when it has had its variants, or at once when
        // no chain can move (a tiny program leaves Hermes and Athena nothing to change).
        // With fast compilers a seed's making costs as much as many variants: it waits, past
        // its variants, until making seeds is back within its share of the client's time.
        let seed_share = seeds.maker.timing.total.as_secs_f64() / started.elapsed().as_secs_f64().max(1e-3);
        let due = |n: u64| n == 0 || (executions >= last_seed_at + n && seed_share <= options.max_seed_share);
        if variants_per_seed.is_some_and(|n| due(n) || idle_rounds >= STALLED_ROUNDS) {
            last_seed_at = executions;
            seed_cpu.measure(|| -> Result<(), Error> {
                match seeds.generate(&mut state) {
                    Ok(seed) => add_seed(&mut fuzzer, &mut state, &mut executor, &mut mgr, &store, seed.seed)?,
                    Err(_) if shutdown::requested() => {}
                    // A mix of directories only: the chains go on from the seeds taken.
                    Err(Error::Empty(..)) => {}
                    Err(e) => log::error!("client {}: {e}", desc.id()),
                }
                Ok(())
            })?;
            return_freed_memory();
        }
        // No variants per seed is plain differential testing: a new seed each round, no mutation.
        if variants_per_seed != Some(0) {
            shutdown::as_stop_request(fuzzer.fuzz_one(&mut stages, &mut executor, &mut state, &mut mgr))?;
        }
        // A variant of a seed not in the cache (another core's, a retired chain's) parsed it:
        // its pages go back before anything else (a report's memory sample among them).
        if programs.parses() != parses_trimmed {
            parses_trimmed = programs.parses();
            return_freed_memory();
        }
        if *state.executions() == executions {
            idle_rounds += 1;
            if idle_rounds == WAITING_ROUNDS {
                log::warn!(
                    "client {}: no seed has code that never ran; waiting for new seeds",
                    desc.id()
                );
            }
            if idle_rounds >= WAITING_ROUNDS {
                std::thread::sleep(Duration::from_millis(100));
            }
        } else {
            idle_rounds = 0;
        }
        mgr.maybe_report_progress(&mut state, Duration::from_secs(3))?;
        if last_stats.elapsed() >= Duration::from_secs(5) {
            last_stats = std::time::Instant::now();
            return_freed_memory();
            report_chains(&mut state, &mut mgr)?;
            save_chains(&mut state, &mut chains_file);
            report_observed(&mut state, &mut mgr, &observed_maps)?;
        }
        // The report is kept current so that a long campaign's memory and progress can be
        // followed from outside.
        if last_report.elapsed() >= Duration::from_secs(60) {
            last_report = std::time::Instant::now();
            reports.write(&state, &executor.totals, &seeds.maker.timing, seed_cpu, &programs);
        }
    }
}

/// Writes the client's report from what its loop holds besides its state.
struct ReportWriter<'a> {
    out: &'a std::path::Path,
    id: usize,
    observed_maps: &'a [(String, String)],
    started: std::time::Instant,
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
    let Ok(chains) = state.metadata_mut::<McmcChains>() else {
        return;
    };
    match file.save(chains) {
        Ok(deleted) => chains.deleted_files += deleted as u64,
        Err(e) => log::warn!("cannot save the chains to {}: {e}", file.path().display()),
    }
}
