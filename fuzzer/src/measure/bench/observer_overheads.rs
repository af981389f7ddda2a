//! `ccfuzz bench`'s table of what observing inside the compilers costs in compile time:
//! AFL++-instrumented and gcov builds of tcc against a plain build of the same tcc, and GCC
//! statistics and LLVM statistics (or remarks) against plain gcc and clang, on csmith programs.

use super::{children_cpu, median, BenchOptions};
use crate::config::CompilerConfig;
use crate::process::compile::compile;
use crate::process::compile::Additions;
use crate::seeds::SeedMaker;
use anyhow::{bail, Context, Result};
use ccfuzz_mutators::seed::SeedStore;
use ccfuzz_observers::counters::CounterSource;
use ccfuzz_observers::coverage::{covered, map_size_for, AflMap};
use ccfuzz_observers::gcov::{gcov_env, take_gcov};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
pub(super) fn observer_overheads(options: &BenchOptions) -> Result<()> {
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
