//! `ccfuzz bench`: the fuzzer's own costs, printed as figures. The compilers dominate a
//! campaign, so what matters is that making a variant stays far below a compilation and that
//! the fuzzer's share of the CPU is small; executions per second on 1 and 2 cores show scaling.
//! Observing inside the compilers costs compile time too: instrumented against plain builds of
//! the same tcc, and statistics or remarks against plain gcc and clang.

use crate::campaign::client_report::MemoryReport;
use crate::config::{CompilerConfig, Config};
use crate::ops::usage::cpu_seconds;
use crate::process::compile::compile;
use crate::process::compile::Additions;
use crate::seeds::SeedMaker;
use anyhow::{bail, Result};
use ccfuzz_mutators::athena::{AthenaChain, AthenaParams};
use ccfuzz_mutators::edit::apply_edits;
use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::hermes::{hermes_variant, usable_points};
use ccfuzz_mutators::orion::orion_prune;
use ccfuzz_mutators::pool::Pool;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedStore;
use ccfuzz_orange::{GenOptions, Policies};
use libafl_bolts::rands::StdRand;
use nix::sys::resource::UsageWho;
use std::path::PathBuf;
use std::time::{Duration, Instant};

mod campaigns;
mod observer_overheads;

use campaigns::campaigns;
use observer_overheads::observer_overheads;

/// The measurements `ccfuzz bench` can make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchPart {
    /// Compile-time overheads of observing inside the compilers.
    Observers,
    /// Time to make one variant of each mutator family, without compiling it.
    Variants,
    /// Orange generation speed next to gcc's compile speed on the same programs.
    Orange,
    /// Campaigns: the fuzzer's own CPU share with the configuration, with tcc and pcc and with
    /// tcc alone; executions per second on one and two cores; memory and disk growth.
    Campaigns,
}

pub struct BenchOptions {
    /// What to measure.
    pub parts: Vec<BenchPart>,
    pub config: Config,
    pub config_path: Option<PathBuf>,
    pub seconds: u64,
    pub seeds: u64,
    pub out: PathBuf,
    /// Where `make instrumented-tcc` put its builds.
    pub build: PathBuf,
    /// The `ccfuzz` whose campaigns are measured, when not this one.
    pub fuzzer: Option<PathBuf>,
    /// Passed to every campaign's `--random-seed`: the campaigns then draw the same csmith
    /// seeds, run after run.
    pub random_seed: Option<u64>,
}

fn median(values: &mut [Duration]) -> Duration {
    values.sort();
    values[values.len() / 2]
}

fn children_cpu() -> Result<f64> {
    Ok(cpu_seconds(UsageWho::RUSAGE_CHILDREN)?)
}

/// Median wall times of making one Orion variant, one Hermes variant and one Athena chain step,
/// over csmith seeds.
fn variant_time(options: &BenchOptions) -> Result<()> {
    let store = SeedStore::open(options.out.join("seeds"))?;
    let mut maker = SeedMaker::new(options.config.clone(), store.clone(), options.out.join("tmp"))?;
    let mut ids = Vec::new();
    let mut profile_times = Vec::new();
    let mut random_seed = 1;
    while (ids.len() as u64) < options.seeds && random_seed < options.seeds * 20 {
        let (source, origin) = maker.csmith(random_seed)?;
        let start = Instant::now();
        if let Ok(id) = maker.make(&source, &origin)? {
            profile_times.push(start.elapsed());
            ids.push(id);
        }
        random_seed += 1;
    }
    if ids.is_empty() {
        bail!("no csmith seed was accepted");
    }
    let programs = Programs::new(store, usize::MAX);
    let mut rand = StdRand::with_seed(7);
    let (mut parse_times, mut variant_times, mut hermes_times) = (Vec::new(), Vec::new(), Vec::new());
    for id in &ids {
        let start = Instant::now();
        let loaded = programs.get(id)?;
        parse_times.push(start.elapsed());
        for _ in 0..200 {
            let start = Instant::now();
            let edits: Vec<Edit> = orion_prune(&loaded.program, &mut rand)
                .into_iter()
                .map(|stmt| Edit::Delete { stmt })
                .collect();
            let text = apply_edits(&loaded.program, &edits);
            variant_times.push(start.elapsed());
            std::hint::black_box(text);
            if usable_points(&loaded).is_empty() {
                continue;
            }
            let start = Instant::now();
            let edits = hermes_variant(&loaded, &mut rand);
            let text = apply_edits(&loaded.program, &edits);
            hermes_times.push(start.elapsed());
            std::hint::black_box(text);
        }
    }
    // Athena: one chain step (proposal, control-flow graph, distance, acceptance) and the
    // materialization of the state, with a pool of every measured seed.
    // What the seed cache's estimate misses, measured on a cache of its own.
    let heap_before_seeds = MemoryReport::of_this_process().heap_in_use_bytes;
    let cache = Programs::new(programs.store().clone(), usize::MAX);
    for id in &ids {
        cache.get(id)?;
    }
    let (held, estimated) = cache.held();
    println!(
        "heap held by {held} parsed seeds: {:.1} MB, estimated by the seed cache as {:.1} MB",
        MemoryReport::of_this_process()
            .heap_in_use_bytes
            .saturating_sub(heap_before_seeds) as f64
            / 1e6,
        estimated as f64 / 1e6
    );
    drop(cache);
    let heap_before_graphs = MemoryReport::of_this_process().heap_in_use_bytes;
    let graphs = ids
        .iter()
        .map(|id| Ok(ccfuzz_mutators::flow_graph::SeedGraph::of(&programs.get(id)?.program)))
        .collect::<Result<Vec<_>>>()?;
    println!(
        "heap held by the control-flow graphs of {} seeds (the program distance's reference): {:.1} MB",
        graphs.len(),
        MemoryReport::of_this_process()
            .heap_in_use_bytes
            .saturating_sub(heap_before_graphs) as f64
            / 1e6
    );
    drop(graphs);
    let heap_before_pool = MemoryReport::of_this_process().heap_in_use_bytes;
    let mut pool = Pool::default();
    for id in &ids {
        pool.add_seed(id, &programs.get(id)?.program);
    }
    let pool_bytes = MemoryReport::of_this_process()
        .heap_in_use_bytes
        .saturating_sub(heap_before_pool);
    let mut athena_times = Vec::new();
    for id in &ids {
        let loaded = programs.get(id)?;
        let mut chain = AthenaChain::new(&loaded.program, AthenaParams::default());
        for _ in 0..200 {
            let start = Instant::now();
            chain.step(&loaded.program, id, &pool, &mut rand);
            let text = apply_edits(&loaded.program, &chain.edits);
            athena_times.push(start.elapsed());
            std::hint::black_box(text);
        }
    }
    println!("seeds measured: {}", ids.len());
    println!(
        "median time to parse and model a seed (once per seed and core): {:.1} ms",
        median(&mut parse_times).as_secs_f64() * 1e3
    );
    println!(
        "median time to profile a seed (normalize, parse, coverage run, UB check, valuation run): {:.0} ms",
        median(&mut profile_times).as_secs_f64() * 1e3
    );
    println!(
        "median time to make one Orion variant, excluding compilation: {:.1} µs",
        median(&mut variant_times).as_secs_f64() * 1e6
    );
    println!(
        "median time of one Athena chain step (proposal, program distance, acceptance, materialization; pool of {} statements): {:.2} ms",
        pool.entries.len(),
        median(&mut athena_times).as_secs_f64() * 1e3
    );
    println!(
        "heap held by the Athena pool: {:.1} MB for {} statements ({} bytes each)",
        pool_bytes as f64 / 1e6,
        pool.entries.len(),
        pool_bytes / pool.entries.len().max(1) as u64
    );
    if hermes_times.is_empty() {
        println!("no seed had a usable valuation point: no Hermes variant measured");
    } else {
        println!(
            "median time to make one Hermes variant (a snippet at every usable point), excluding compilation: {:.2} ms",
            median(&mut hermes_times).as_secs_f64() * 1e3
        );
    }
    Ok(())
}

/// Orange generation speed, next to the time gcc takes to compile the same programs.
fn orange_speed(options: &BenchOptions) -> Result<()> {
    let mut rand = StdRand::with_seed(5);
    let generation = GenOptions {
        min_operators: 1,
        max_operators: 10_000,
        policies: Policies::ALL,
        float: false,
    };
    let start = Instant::now();
    let programs: Vec<_> = (0..300)
        .map(|_| ccfuzz_orange::generate(generation, &mut rand))
        .collect();
    let generating = start.elapsed().as_secs_f64();
    let operators: usize = programs.iter().map(|p| p.size()).sum();
    let dir = options.out.join("orange");
    std::fs::create_dir_all(&dir)?;
    let config = CompilerConfig::new("gcc -O2");
    let compiled = &programs[..20];
    let start = Instant::now();
    for program in compiled {
        let source = dir.join("orange.c");
        std::fs::write(&source, program.to_c())?;
        compile(
            &config,
            &source,
            &dir.join("orange"),
            &Additions::default(),
            Duration::from_secs(300),
        )?;
    }
    let compiling = start.elapsed().as_secs_f64();
    let compiled_operators: usize = compiled.iter().map(|p| p.size()).sum();
    println!(
        "Orange generation: {:.0} programs/s, {:.0} operators/s ({} programs, {operators} operators); gcc -O2 compiles the first 20 at {:.0} operators/s ({:.0} ms/program)",
        programs.len() as f64 / generating,
        operators as f64 / generating,
        programs.len(),
        compiled_operators as f64 / compiling,
        1e3 * compiling / compiled.len() as f64
    );
    Ok(())
}

pub fn run_bench(options: BenchOptions) -> Result<()> {
    std::fs::create_dir_all(&options.out)?;
    let config_file = match &options.config_path {
        Some(path) => path.clone(),
        None => {
            let path = options.out.join("configuration.toml");
            std::fs::write(&path, options.config.to_toml())?;
            path
        }
    };
    println!("configurations under test: {}", options.config.configurations.len());
    if options.parts.contains(&BenchPart::Observers) {
        observer_overheads(&options)?;
    }
    if options.parts.contains(&BenchPart::Variants) {
        variant_time(&options)?;
    }
    if options.parts.contains(&BenchPart::Orange) {
        orange_speed(&options)?;
    }
    if options.parts.contains(&BenchPart::Campaigns) {
        campaigns(&options, &config_file)?;
    }
    Ok(())
}
