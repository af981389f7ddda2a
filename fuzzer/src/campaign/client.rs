//! One fuzzing client: its observers, feedbacks, objective, MCMC scheduler and executor, its
//! seeds (stored, generated or received), and its loop until the deadline or a stop request.

mod rounds;

use rounds::{ReportWriter, Run};

use crate::campaign::client_report::CpuSpent;
use crate::campaign::options::{
    CampaignOptions, CampaignState, MixedSource, SeedSource, CORPUS_CACHE, SEED_CACHE_BYTES,
};
use crate::campaign::resume::reload_corpus;
use crate::exec::executor::{CompileRunExecutor, ExecutionObservers, ObserverTuple};
use crate::exec::repeats::{RepeatedTextFilter, REMEMBERED_TEXTS};
use crate::judge::findings::FindingsCorpus;
use crate::judge::new_seed::SeedsInCorpus;
use crate::judge::objective::FindingsObjective;
use crate::judge::validity::ValidVariant;
use crate::mcmc::{
    restore_chains, AcceptanceFeedback, ChainMutator, ChainsFile, CorpusFeedback, DecisionLog, Family, McmcChains,
    McmcScheduler,
};
use crate::ops::shutdown;
use crate::seeds::generator::{ProgramSource, SeedGenerator};
use crate::seeds::SeedMaker;
use crate::sharing;
use anyhow::Result;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::saved::corpus::VariantCorpus;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_observers::novelty::NoveltyFeedback;
use libafl::corpus::{Corpus, Testcase};
use libafl::events::{ClientDescription, EventRestarter, ProgressReporter, SendExiting};
use libafl::executors::ExitKind;
use libafl::feedbacks::MaxMapFeedback;
use libafl::fuzzer::{Evaluator, StdFuzzerBuilder};
use libafl::generators::Generator;
use libafl::schedulers::Scheduler;
use libafl::stages::StdMutationalStage;
use libafl::state::{HasCorpus, StdState};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::{tuple_list, Handled};
use libafl_bolts::{current_nanos, nonzero, Named};
use serde::Serialize;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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
    sharing::announce_findings(state, mgr, store)?;
    // LibAFL's own announcement of a new entry does not carry the seed.
    let observations = postcard::to_allocvec(&*executor.observers())?;
    sharing::announce(state, mgr, store, &variant, observations, ExitKind::Ok)
}

/// A client's executor.
type ClientExecutor = CompileRunExecutor<ObserverTuple>;

/// What a client needs from its event manager.
pub trait ClientEvents:
    libafl::events::EventFirer<Variant, CampaignState>
    + libafl::events::EventReceiver<Variant, CampaignState>
    + ProgressReporter<CampaignState>
    + SendExiting
    + EventRestarter<CampaignState>
{
}

impl<EM> ClientEvents for EM where
    EM: libafl::events::EventFirer<Variant, CampaignState>
        + libafl::events::EventReceiver<Variant, CampaignState>
        + ProgressReporter<CampaignState>
        + SendExiting
        + EventRestarter<CampaignState>
{
}

/// Runs one fuzzing client until its deadline, its iterations or a stop request: it sets up
/// its pieces, puts back a resumed corpus and its chains, adds its share of stored seeds and a
/// first seed, and then fuzzes.
pub fn client<EM: ClientEvents>(
    state: Option<CampaignState>,
    mgr: EM,
    desc: &ClientDescription,
    client_count: usize,
    options: &CampaignOptions,
    deadline: Option<u64>,
    seeds_at_start: u64,
) -> Result<(), Error> {
    let started = Instant::now();
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
    let observed_maps = observed_maps(&observers, options);
    let (coverage, counters) = (&observers.coverage, &observers.counters);
    let acceptance = AcceptanceFeedback::new(
        programs.clone(),
        options.mcmc.athena,
        options.mcmc.guidance,
        Some(DecisionLog::open(
            &options.out.join("mcmc").join(format!("client-{}.csv", desc.id())),
            options.mcmc.decision_log_bytes,
        )?),
    )?;
    let mut feedback = CorpusFeedback::new(
        ValidVariant::new(observers.execution.handle()),
        NoveltyFeedback::new(coverage, counters, &observers.counter_names),
        acceptance,
        MaxMapFeedback::new(coverage),
        MaxMapFeedback::new(counters),
    );
    let mut objective = FindingsObjective::new(observers.execution.handle(), programs.clone());
    let random_seed = options.random_seed.unwrap_or_else(current_nanos) ^ desc.id() as u64;
    let fresh = state.is_none();
    let mut state = match state {
        Some(state) => state,
        None => new_state(options, desc, random_seed, &mut feedback, &mut objective)?,
    };
    let chains_file = ChainsFile::new(
        options
            .out
            .join("mcmc")
            .join(format!("chains-client-{}.json", desc.id())),
    );
    if fresh {
        start_chains(&mut state, options, desc, &programs, rotation, &chains_file)?;
    }
    let scheduler =
        McmcScheduler::new(options.mcmc.proposals_per_turn, rotation, programs.clone()).pruning_seeds(client_count);
    let fuzzer = StdFuzzerBuilder::new()
        .input_filter(RepeatedTextFilter::new(programs.clone(), REMEMBERED_TEXTS))
        .scheduler(scheduler)
        .feedback(feedback)
        .objective(objective)
        .build();
    let executor = observers.into_executor(programs.clone(), options.config.clone(), workdir.clone());
    // Every compile of a variant sets `TMPDIR` to the executor's directory; set here once, the
    // environment its children get is this process's own. The client has no other thread yet.
    // Created now: other children (seed making's) may need a temporary directory first.
    let private_dir = executor.private_dir();
    std::fs::create_dir_all(&private_dir)?;
    std::env::set_var("TMPDIR", private_dir);

    let (variants_per_seed, program_source) = program_source(options, desc, client_count, random_seed, seeds_at_start)?;
    let maker = SeedMaker::new(options.config.clone(), store.clone(), workdir.join("seeds"))
        .map_err(anyhow_to_libafl)?
        .with_parsed_seeds(programs.clone());
    let maker = if variants_per_seed == Some(0) || !options.mcmc.families.contains(&Family::Hermes) {
        maker.without_valuations()
    } else {
        maker
    };
    let seeds = SeedGenerator {
        maker,
        programs: program_source,
        attempts: 50,
    };
    let programs_for_mutator = programs.clone();
    let mut run = Run {
        state,
        fuzzer,
        executor,
        mgr,
        store,
        programs,
        seeds,
        seed_cpu: CpuSpent::default(),
        variants_per_seed,
        chains_file,
        reports: ReportWriter {
            out: &options.out,
            id: desc.id(),
            observed_maps: &observed_maps,
            started,
        },
        options,
        deadline,
    };
    // One proposal per round.
    let proposals = StdMutationalStage::with_max_iterations(
        ChainMutator::new(
            programs_for_mutator,
            options.mcmc.families.clone(),
            options.mcmc.family_choice,
            options.mcmc.longest_chain,
        ),
        nonzero!(1),
    );
    if fresh {
        run.add_stored_seeds(desc.id(), client_count)?;
    }
    if !run.add_first_seed()? {
        return run.mgr.send_exiting();
    }
    run.seeds.attempts = 10;
    run.fuzz_until_done(&mut tuple_list!(proposals))?;
    run.finish()
}

fn anyhow_to_libafl(e: anyhow::Error) -> Error {
    Error::illegal_state(format!("{e:#}"))
}

/// Map name and statistic name of what the corpus covers inside the compilers.
fn observed_maps(observers: &ExecutionObservers, options: &CampaignOptions) -> Vec<(String, String)> {
    let mut observed = Vec::new();
    if options.config.observes_coverage() {
        let name = observers.coverage.name().to_string();
        observed.push((name.clone(), format!("{name}_covered")));
    }
    if options.config.observes_counters() {
        observed.push((observers.counters.name().to_string(), "distinct_counters".to_string()));
    }
    observed
}

/// A fresh state on the campaign's corpus, with what a killed campaign left in it.
fn new_state<F, O>(
    options: &CampaignOptions,
    desc: &ClientDescription,
    random_seed: u64,
    feedback: &mut F,
    objective: &mut O,
) -> Result<CampaignState, Error>
where
    F: libafl::feedbacks::StateInitializer<CampaignState>,
    O: libafl::feedbacks::StateInitializer<CampaignState>,
{
    // An entry's metadata file tells what it added to the observed maps: without maps it holds
    // zeros, and creating it was a tenth of the client's CPU against tcc.
    let metadata_beside = options.config.observes_maps();
    let mut state = StdState::new(
        StdRand::with_seed(random_seed),
        // Most chain states are let go within a move: they reach the disk only when needed there.
        VariantCorpus::new(options.out.join("corpus"), CORPUS_CACHE, metadata_beside, true)?,
        FindingsCorpus::new(options.out.join("findings"), options.config.clone()),
        feedback,
        objective,
    )?;
    let loaded = reload_corpus(&mut state, &options.out.join("corpus"))?;
    if loaded > 0 {
        log::info!("client {}: resumed with {loaded} corpus entries", desc.id());
    }
    Ok(state)
}

/// Starts the chains of a resumed corpus's seeds and puts them where the chains file says they
/// stood; those that had retired stay retired.
fn start_chains(
    state: &mut CampaignState,
    options: &CampaignOptions,
    desc: &ClientDescription,
    programs: &Arc<Programs>,
    rotation: Option<usize>,
    chains_file: &ChainsFile,
) -> Result<(), Error> {
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
        every_chain.on_add(state, id)?;
    }
    let restored = restore_chains(state, chains_file.path(), rotation)?;
    if restored > 0 {
        log::info!("client {}: {restored} chains continue where they stopped", desc.id());
    }
    // The retired chains' entries, and other clients' entries of seeds without a chain here.
    let ids: Vec<_> = state.corpus().ids().collect();
    state.metadata_or_insert_with(McmcChains::default).release_unheld(ids);
    Ok(())
}

/// How many variants each seed gets (none: the seeds are a fixed set), and where new seeds come
/// from. csmith's seeds come from random numbers of their own, so that which seeds a client
/// draws does not depend on the mutations made between them; a resumed campaign goes on from
/// other numbers than those of its first start.
fn program_source(
    options: &CampaignOptions,
    desc: &ClientDescription,
    client_count: usize,
    random_seed: u64,
    seeds_at_start: u64,
) -> Result<(Option<u64>, ProgramSource), Error> {
    let csmith = || ProgramSource::Csmith(StdRand::with_seed(random_seed.rotate_left(32) ^ seeds_at_start));
    Ok(match &options.seeds {
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
    })
}

impl<EM: ClientEvents, Z> Run<'_, EM, Z>
where
    Z: Evaluator<ClientExecutor, EM, Variant, CampaignState> + libafl::fuzzer::HasScheduler<Variant, CampaignState>,
{
    /// Adds client `id`'s share of the stored seeds that the corpus lacks (directory seeds, or
    /// seeds profiled before a kill).
    fn add_stored_seeds(&mut self, id: usize, client_count: usize) -> Result<(), Error> {
        let in_corpus = self.state.metadata_or_insert_with(SeedsInCorpus::default).0.clone();
        let ids = self.store.ids().map_err(anyhow_to_libafl)?;
        let Run {
            state,
            fuzzer,
            executor,
            mgr,
            store,
            seed_cpu,
            ..
        } = self;
        seed_cpu.measure(|| {
            for (index, seed) in ids.into_iter().enumerate() {
                if index % client_count == id % client_count && !in_corpus.contains(&seed) {
                    add_seed(fuzzer, state, executor, mgr, store, seed)?;
                }
            }
            Ok(())
        })
    }

    /// Gives an empty corpus its first seed: a new one, or, without a seed generator, another
    /// client's once it arrives. False when the client is to stop first.
    fn add_first_seed(&mut self) -> Result<bool, Error>
    where
        Z: libafl::fuzzer::EventProcessor<ClientExecutor, EM, Variant, CampaignState>,
    {
        if self.state.corpus().count() > 0 {
            return Ok(true);
        }
        if self.variants_per_seed.is_some() {
            let Run {
                state,
                fuzzer,
                executor,
                mgr,
                store,
                seeds,
                seed_cpu,
                ..
            } = self;
            seed_cpu.measure(|| -> Result<(), Error> {
                if let Some(seed) = shutdown::as_stop_request(seeds.generate(state))? {
                    add_seed(fuzzer, state, executor, mgr, store, seed.seed)?;
                }
                Ok(())
            })?;
            return Ok(true);
        }
        // Another client may hold all the seeds: they arrive as events.
        while self.state.corpus().count() == 0 {
            if self.deadline.is_some_and(|d| now_secs() >= d) || shutdown::requested() {
                return Ok(false);
            }
            shutdown::as_stop_request(
                self.fuzzer
                    .process_events(&mut self.state, &mut self.executor, &mut self.mgr),
            )?;
            std::thread::sleep(Duration::from_millis(200));
        }
        Ok(true)
    }
}
