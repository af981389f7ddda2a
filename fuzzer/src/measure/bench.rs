//! `ccfuzz bench`: the fuzzer's own costs, printed as figures. The compilers dominate a
//! campaign, so what matters is that making a variant stays far below a compilation and that
//! the fuzzer's share of the CPU is small; executions per second on 1 and 2 cores show scaling.
//! Observing inside the compilers costs compile time too: instrumented against plain builds of
//! the same tcc, and statistics or remarks against plain gcc and clang.

use crate::campaign::ClientReport;
use crate::config::{CompilerConfig, Config};
use crate::exec::compile::compile;
use crate::exec::instrument::Additions;
use crate::exec::runner::cpu_seconds;
use crate::seeds::SeedMaker;
use anyhow::{bail, Context, Result};
use ccfuzz_mutators::athena::{AthenaChain, AthenaParams};
use ccfuzz_mutators::edit::apply_edits;
use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::hermes::{hermes_variant, usable_points};
use ccfuzz_mutators::orion::orion_prune;
use ccfuzz_mutators::pool::Pool;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedStore;
use ccfuzz_observers::counters::CounterSource;
use ccfuzz_observers::coverage::{covered, map_size_for, AflMap};
use ccfuzz_observers::gcov::{gcov_env, take_gcov};
use ccfuzz_orange::{GenOptions, Policies};
use libafl_bolts::rands::StdRand;
use nix::sys::resource::UsageWho;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The measurements `ccfuzz bench` can make.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum BenchPart {
    /// Compile-time overheads of observing inside the compilers.
    Observers,
    /// Time to make one variant of each mutator family, without compiling it.
    Variants,
    /// Orange generation speed next to gcc's compile speed on the same programs.
    Orange,
    /// Executions per second of campaigns on one and two cores, and the CPU split.
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
    let programs = Programs::new(store, ids.len());
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
    let mut pool = Pool::default();
    for id in &ids {
        pool.add_seed(id, &programs.get(id)?.program);
    }
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

/// One way of compiling in the overhead table, and what it reads after each compilation.
struct OverheadCase<'a> {
    label: String,
    config: CompilerConfig,
    additions: &'a dyn Fn(&Path) -> Additions,
    /// Reads the compilation's report from its directory; returns the figure to print with it.
    read: &'a dyn Fn(&Path) -> Result<String>,
}

/// CPU seconds of the compiler and wall (or CPU) seconds of reading its report, for one
/// compilation of `program`, and the figure the report gave.
fn observed_once(observed: &OverheadCase, program: &Path) -> Result<(Duration, Duration, String)> {
    let dir = tempfile::Builder::new()
        .prefix("observe-")
        .tempdir_in(program.parent().unwrap_or(Path::new(".")))?;
    let source = dir.path().join("program.c");
    std::fs::copy(program, &source)?;
    let before = children_cpu()?;
    let (failure, _) = compile(
        &observed.config,
        &source,
        &dir.path().join("program"),
        &(observed.additions)(dir.path()),
        Duration::from_secs(120),
    )?;
    let compile = Duration::from_secs_f64(children_cpu()? - before);
    if let Some(failure) = failure {
        bail!("{} failed on {}: {failure:?}", observed.label, program.display());
    }
    let start = Instant::now();
    let before = children_cpu()?;
    let figure = (observed.read)(dir.path())?;
    let read = start.elapsed().max(Duration::from_secs_f64(children_cpu()? - before));
    Ok((compile, read, figure))
}

/// For each row: the median compile and read seconds over `rounds` compilations of each
/// program, summed over the programs, and the median figure. The rows take turns on each
/// program so that a change in the machine's load hits them all alike.
fn observed_costs(rows: &[&OverheadCase], programs: &[PathBuf], rounds: usize) -> Result<Vec<(f64, f64, String)>> {
    let mut totals = vec![(0.0, 0.0, Vec::new()); rows.len()];
    for program in programs {
        let mut times = vec![(Vec::new(), Vec::new()); rows.len()];
        for _ in 0..rounds {
            for (row, observed) in rows.iter().enumerate() {
                let (compile, read, figure) = observed_once(observed, program)?;
                times[row].0.push(compile);
                times[row].1.push(read);
                totals[row].2.push(figure);
            }
        }
        for (total, (compile, read)) in totals.iter_mut().zip(&mut times) {
            total.0 += median(compile).as_secs_f64();
            total.1 += median(read).as_secs_f64();
        }
    }
    Ok(totals
        .into_iter()
        .map(|(compile, read, mut figures)| {
            figures.sort();
            let figure = figures.get(figures.len() / 2).cloned().unwrap_or_default();
            (compile, read, figure)
        })
        .collect())
}

/// Prints compile-time overheads of observing inside the compilers on csmith programs.
fn observer_overheads(options: &BenchOptions) -> Result<()> {
    let dir = options.out.join("observers");
    std::fs::create_dir_all(&dir)?;
    let maker = SeedMaker::new(
        options.config.clone(),
        SeedStore::open(dir.join("store"))?,
        dir.join("tmp"),
    )?;
    let mut programs = Vec::new();
    for random_seed in 1..=options.seeds.max(1) {
        let (source, _) = maker.csmith(random_seed)?;
        let path = dir.join(format!("csmith-{random_seed}.c"));
        std::fs::write(&path, source)?;
        programs.push(path);
    }
    let include = format!("-I{}", options.config.csmith_include);
    let none = |_: &Path| Additions::default();
    let nothing = |_: &Path| Ok(String::new());
    let tcc = |kind: &str| -> Result<CompilerConfig> {
        let build = options.build.join(kind).canonicalize().with_context(|| {
            format!(
                "{} is missing: run `make instrumented-tcc`",
                options.build.join(kind).display()
            )
        })?;
        Ok(CompilerConfig::new(format!(
            "{} -B{} {include}",
            build.join("tcc").display(),
            build.display()
        )))
    };
    let mut rows: Vec<(OverheadCase, Option<usize>)> = Vec::new();

    let afl_tcc = tcc("tcc-afl");
    let size = match &afl_tcc {
        Ok(config) => map_size_for(&config.argv()[0], None)?,
        Err(_) => 1,
    };
    let (map, edges) = AflMap::new(size)?;
    let edges = std::cell::RefCell::new(edges);
    let afl_env = |_: &Path| {
        use libafl::observers::Observer;
        let _ = Observer::<(), ()>::pre_exec(&mut *edges.borrow_mut(), &mut (), &());
        Additions {
            args: Vec::new(),
            env: map.env(),
        }
    };
    let read_edges = |_: &Path| Ok(format!("{} edges", covered(&*edges.borrow())));
    let gcov_env_of = |dir: &Path| Additions {
        args: Vec::new(),
        env: gcov_env(&dir.join("gcov")),
    };
    let read_gcov = |dir: &Path| {
        let coverage = take_gcov(&dir.join("gcov"), "gcov")?;
        Ok(format!(
            "{} lines, {} branches",
            coverage.lines_covered(),
            coverage.branches_covered()
        ))
    };
    match [tcc("tcc-plain"), afl_tcc, tcc("tcc-gcov")] {
        [Ok(plain), Ok(afl), Ok(gcov)] => {
            let base = rows.len();
            rows.push((
                OverheadCase {
                    label: "tcc built by clang-14 (plain)".into(),
                    config: plain,
                    additions: &none,
                    read: &nothing,
                },
                None,
            ));
            rows.push((
                OverheadCase {
                    label: format!("tcc built by afl-clang-fast, {size}-entry map"),
                    config: afl,
                    additions: &afl_env,
                    read: &read_edges,
                },
                Some(base),
            ));
            rows.push((
                OverheadCase {
                    label: "tcc built with --coverage -O0, + gcov".into(),
                    config: gcov,
                    additions: &gcov_env_of,
                    read: &read_gcov,
                },
                Some(base),
            ));
        }
        builds => {
            for missing in builds.into_iter().filter_map(Result::err) {
                println!("observer overheads: {missing:#}");
            }
        }
    }
    let gcc_stats = |dir: &Path| Additions {
        args: CounterSource::GccStatistics.flags(&dir.join("counters")),
        env: Vec::new(),
    };
    let read_gcc = |dir: &Path| {
        Ok(format!(
            "{} counters",
            CounterSource::GccStatistics.take(&dir.join("counters"))?.len()
        ))
    };
    let llvm = CounterSource::for_llvm("clang-14");
    let llvm_flags = move |dir: &Path| Additions {
        args: llvm.flags(&dir.join("counters")),
        env: Vec::new(),
    };
    let read_llvm = move |dir: &Path| Ok(format!("{} counters", llvm.take(&dir.join("counters"))?.len()));
    for (compiler, with, read, what) in [
        (
            "gcc-12",
            &gcc_stats as &dyn Fn(&Path) -> Additions,
            &read_gcc as &dyn Fn(&Path) -> Result<String>,
            "-fdump-statistics-stats".to_string(),
        ),
        (
            "clang-14",
            &llvm_flags,
            &read_llvm,
            match llvm {
                CounterSource::LlvmStatistics => "-mllvm -stats -stats-json".to_string(),
                _ => "-fsave-optimization-record".to_string(),
            },
        ),
    ] {
        if !CompilerConfig::new(compiler).is_installed() {
            continue;
        }
        let config = CompilerConfig::new(format!("{compiler} -O2 {include}"));
        let base = rows.len();
        rows.push((
            OverheadCase {
                label: format!("{compiler} -O2"),
                config: config.clone(),
                additions: &none,
                read: &nothing,
            },
            None,
        ));
        rows.push((
            OverheadCase {
                label: format!("{compiler} -O2 with {what}"),
                config,
                additions: with,
                read,
            },
            Some(base),
        ));
    }

    println!(
        "observer overheads over {} csmith programs (compiler CPU time, median of 5 compilations per program, summed):",
        programs.len()
    );
    let costs = observed_costs(&rows.iter().map(|(o, _)| o).collect::<Vec<_>>(), &programs, 5)?;
    for ((observed, base), (compile, read, figure)) in rows.iter().zip(&costs) {
        let (compile, read) = (*compile, *read);
        let overhead = base
            .map(|b| format!("{:+.1}%", 100.0 * (compile / costs[b].0.max(1e-9) - 1.0)))
            .unwrap_or_default();
        let reading = if read > 0.0005 {
            format!(", reading {:.1} ms/program", 1e3 * read / programs.len() as f64)
        } else {
            String::new()
        };
        println!(
            "  {:<52} {:>8.1} ms/program {:>8}{reading}{}",
            observed.label,
            1e3 * compile / programs.len() as f64,
            overhead,
            if figure.is_empty() {
                String::new()
            } else {
                format!(" ({figure} per program, median)")
            }
        );
    }
    Ok(())
}

/// Runs a campaign of `seconds` on `cores` and prints its executions per second and CPU split.
fn campaign(options: &BenchOptions, config_file: &Path, cores: &str) -> Result<f64> {
    let out = options.out.join(format!("campaign-cores-{cores}"));
    let _ = std::fs::remove_dir_all(&out);
    let before = children_cpu()?;
    let status = Command::new(std::env::current_exe()?)
        .args(["fuzz", "--cores", cores, "--seconds", &options.seconds.to_string()])
        .arg("--out")
        .arg(&out)
        .arg("--config")
        .arg(config_file)
        .args(["--broker-port", &crate::campaign::broker::free_port()?.to_string()])
        .stdout(std::process::Stdio::null())
        .status()
        .context("cannot start the campaign")?;
    if !status.success() {
        bail!("the {cores} campaign failed: {status}");
    }
    let total = children_cpu()? - before;
    let (mut executions, mut own, mut children) = (0, 0.0, 0.0);
    for entry in std::fs::read_dir(out.join("clients")).context("the campaign wrote no client report")? {
        let report: ClientReport = serde_json::from_slice(&std::fs::read(entry?.path())?)?;
        executions += report.executions;
        own += report.own_cpu;
        children += report.children_cpu;
    }
    // The broker and the restarter processes are the rest of the tree.
    let other = (total - own - children).max(0.0);
    let rate = executions as f64 / options.seconds as f64;
    println!(
        "cores {cores}: {executions} executions in {} s = {rate:.2} executions/s; CPU: fuzzer clients {own:.2} s, broker and restarters {other:.2} s, compilers/binaries/csmith {children:.2} s; fuzzer's own share {:.2}%",
        options.seconds,
        100.0 * (own + other) / (own + other + children).max(1e-9)
    );
    Ok(rate)
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
        let one = campaign(&options, &config_file, "0")?;
        let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        if cpus >= 2 {
            let two = campaign(&options, &config_file, "0-1")?;
            println!("scaling from 1 to 2 cores: {:.2}x", two / one.max(1e-9));
        }
    }
    Ok(())
}
