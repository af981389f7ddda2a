//! Observers on real compilers: AFL++ edges of the instrumented tcc through our shared map
//! (also through a driver that forks), gcov lines of the coverage-built tcc, optimization
//! counters of gcc-12, clang-14 and clang 22 on csmith programs, and short campaigns guided
//! by them. The instrumented compilers come from `make instrumented-tcc` (a dependency of `make test`).

mod common;

use ccfuzz::config::CompilerConfig;
use ccfuzz::exec::compile::compile;
use ccfuzz::exec::instrument::Additions;
use ccfuzz_mutators::input::Variant;
use ccfuzz_observers::counters::{CounterSource, Counters};
use ccfuzz_observers::coverage::{covered, map_size_for, AflMap, CoverageObserver};
use ccfuzz_observers::gcov::{gcov_env, take_gcov};
use common::*;
use libafl::executors::ExitKind;
use libafl::inputs::Input;
use libafl::observers::{MapObserver, Observer};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(120);

/// The tcc of a build directory, run with `-B` so that it finds its own headers and runtime.
fn tcc_config(dir: &Path) -> CompilerConfig {
    CompilerConfig::new(format!(
        "{} -B{} -I/usr/include/csmith",
        dir.join("tcc").display(),
        dir.display()
    ))
}

/// csmith program number `seed`, written into `dir`.
fn csmith_program(dir: &Path, seed: u64) -> PathBuf {
    // csmith writes `platform.info` into its working directory.
    let output = std::process::Command::new("csmith")
        .args(["--no-packed-struct", "-s", &seed.to_string()])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let path = dir.join(format!("csmith-{seed}.c"));
    std::fs::write(&path, output.stdout).unwrap();
    path
}

/// Compiles `source` in its directory; asserts that it compiled.
fn compile_ok(config: &CompilerConfig, source: &Path, additions: &Additions) {
    let binary = source.with_extension("bin");
    let (failure, _) = compile(config, source, &binary, additions, TIMEOUT).unwrap();
    assert!(failure.is_none(), "{} failed: {failure:?}", config.name());
    std::fs::remove_file(binary).unwrap();
}

/// Edges (bucketed, as the fuzzer sees them) of one compilation into `map`.
fn edges_of(config: &CompilerConfig, source: &Path, map: &AflMap, observer: &mut CoverageObserver) -> BTreeSet<usize> {
    Observer::<(), ()>::pre_exec(observer, &mut (), &()).unwrap();
    let additions = Additions {
        args: Vec::new(),
        env: map.env(),
    };
    compile_ok(config, source, &additions);
    Observer::<(), ()>::post_exec(observer, &mut (), &(), &ExitKind::Ok).unwrap();
    (0..observer.len()).filter(|&i| observer.get(i) != 0).collect()
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn afl_tcc_reports_its_edges_through_the_shared_map() {
    let dir = tempfile::tempdir().unwrap();
    let build = built_tcc("tcc-afl");
    let tcc = tcc_config(&build);
    let size = map_size_for(build.join("tcc").to_str().unwrap(), None).unwrap();
    assert!((11_000..13_000).contains(&size), "map size {size}");
    let (map, mut observer) = AflMap::new(size).unwrap();

    let mut union = BTreeSet::new();
    let mut singles = Vec::new();
    for seed in 1..=10 {
        let source = csmith_program(dir.path(), seed);
        let edges = edges_of(&tcc, &source, &map, &mut observer);
        assert_eq!(edges.len(), covered(&observer));
        singles.push(edges.len());
        union.extend(edges);
    }
    println!(
        "map size {size}; edges per csmith program {singles:?}; all 10 together {}",
        union.len()
    );
    assert!(singles.iter().all(|&n| (1_500..5_000).contains(&n)), "{singles:?}");
    // Programs share most of tcc's code, and each adds some of its own.
    let largest = *singles.iter().max().unwrap();
    assert!(
        union.len() > largest && union.len() < largest * 3 / 2,
        "{}",
        union.len()
    );

    // The same compilation covers the same edges again: the map is cleared in between.
    let source = dir.path().join("csmith-1.c");
    let again = edges_of(&tcc, &source, &map, &mut observer);
    assert_eq!(again.len(), singles[0]);

    // Through a driver that runs the compiler as its child, as gcc runs cc1.
    let driver = dir.path().join("driver.sh");
    std::fs::write(
        &driver,
        format!(
            "#!/bin/sh\n{} -B{} \"$@\"\nexit $?\n",
            build.join("tcc").display(),
            build.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&driver, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let driven = CompilerConfig::new(format!("{} -I/usr/include/csmith", driver.display()));
    assert_eq!(edges_of(&driven, &source, &map, &mut observer), again);

    // Without the map's environment nothing is written.
    Observer::<(), ()>::pre_exec(&mut observer, &mut (), &()).unwrap();
    compile_ok(&tcc, &source, &Additions::default());
    assert_eq!(covered(&observer), 0);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn gcov_tcc_reports_lines_and_branches_in_the_executions_directory() {
    let dir = tempfile::tempdir().unwrap();
    let build = built_tcc("tcc-gcov");
    let tcc = tcc_config(&build);
    let source = csmith_program(dir.path(), 3);
    let prefix = dir.path().join("gcov");
    let additions = Additions {
        args: Vec::new(),
        env: gcov_env(&prefix),
    };
    compile_ok(&tcc, &source, &additions);
    let leaked: Vec<_> = std::fs::read_dir(&build)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "gcda"))
        .collect();
    assert!(leaked.is_empty(), "counters written into the build tree: {leaked:?}");
    let coverage = take_gcov(&prefix, "gcov").unwrap();
    assert!(!prefix.exists(), "the counters are removed once read");
    let (lines, branches) = (coverage.lines_covered(), coverage.branches_covered());
    println!(
        "gcov tcc: {lines} of {} lines, {branches} of {} branches",
        coverage.lines.len(),
        coverage.branches.len()
    );
    assert!(lines > 2_000 && lines < coverage.lines.len(), "{lines}");
    assert!(branches > 1_000 && branches < coverage.branches.len(), "{branches}");
    let parser = coverage
        .lines
        .iter()
        .filter(|(line, &count)| line.contains("/tccpp.c:") && count > 0)
        .count();
    assert!(parser > 100, "the preprocessor ran: {parser} lines of tccpp.c");

    // Compiling again gives the same lines, not the sum of two runs' files.
    compile_ok(&tcc, &source, &additions);
    assert_eq!(take_gcov(&prefix, "gcov").unwrap(), coverage);
    assert!(take_gcov(&prefix, "gcov").is_err(), "no compilation, no counters");
}

/// Counters of `compiler` on `source`, the dump read from the source's directory.
fn counters_of(compiler: &str, source: CounterSource, program: &Path) -> Counters {
    let config = CompilerConfig::new(format!("{compiler} -O2 -I/usr/include/csmith"));
    let dump = program.with_extension("counters");
    let additions = Additions {
        args: source.flags(&dump),
        env: Vec::new(),
    };
    compile_ok(&config, program, &additions);
    let counters = source.take(&dump).unwrap();
    assert!(!dump.exists(), "the dump is removed once read");
    counters
}

fn assert_stable_counters(compiler: &str, source: CounterSource, at_least: usize) {
    let dir = tempfile::tempdir().unwrap();
    let mut all = BTreeSet::new();
    for seed in [1, 2] {
        let program = csmith_program(dir.path(), seed);
        let first = counters_of(compiler, source, &program);
        let second = counters_of(compiler, source, &program);
        println!("{compiler} ({source:?}) on csmith {seed}: {} counters", first.len());
        assert!(first.len() >= at_least, "{first:?}");
        assert_eq!(first, second, "{compiler} counts differently on the same program");
        assert!(first.values().all(|&v| v > 0));
        all.extend(first.into_keys());
    }
    println!("{compiler}: {} distinct counters over 2 programs", all.len());
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn gcc_statistics_are_counters_stable_across_compilations() {
    assert_stable_counters("gcc-12", CounterSource::GccStatistics, 50);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn clang_remarks_are_counters_stable_across_compilations() {
    // Debian's LLVM has no statistics: the remarks are what is counted.
    let source = CounterSource::for_llvm("clang-14");
    assert_eq!(source, CounterSource::LlvmRemarks);
    assert_stable_counters("clang-14", source, 8);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn clang_22_remarks_are_counters_stable_across_compilations() {
    // Debian unstable's LLVM has no statistics either ("Statistics are disabled").
    let clang_22 = clang_22().display().to_string();
    let source = CounterSource::for_llvm(&clang_22);
    assert_eq!(source, CounterSource::LlvmRemarks);
    assert_stable_counters(&clang_22, source, 8);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn gcc_trunk_statistics_and_clang_23_remarks_are_counters_stable_across_compilations() {
    // The unstable root's wrappers bind the dump's directory, wherever the campaign puts it.
    let bin = clang_22().with_file_name("");
    let gcc_trunk = bin.join("gcc-trunk").display().to_string();
    assert_stable_counters(&gcc_trunk, CounterSource::GccStatistics, 50);
    let clang_23 = bin.join("clang-23").display().to_string();
    let source = CounterSource::for_llvm(&clang_23);
    assert_eq!(source, CounterSource::LlvmRemarks);
    assert_stable_counters(&clang_23, source, 8);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_campaign_counts_clang_22_remarks() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = dir.path().join("configuration.toml");
    std::fs::write(
        &config,
        format!(
            "reference = \"gcc -O0\"\nub_check = [\"clang-19 -O0\"]\n\
             configurations = [{{ command = \"{clang} -O2\", counters = \"llvm\" }}]\n\
             compile_timeout = 60.0\nseed_timeout = 5.0\nrun_timeout = 10.0\n\
             csmith_include = \"/usr/include/csmith\"\ncsmith_args = [\"--no-packed-struct\"]\n",
            clang = clang_22().display()
        ),
    )
    .unwrap();
    let log = campaign(&out, &config, &["--variants-per-seed", "4", "--iterations", "8"]);
    assert!(log.contains("-O2: optimization counters from LlvmRemarks"), "{log}");
    let distinct = reported_coverage(&out, "distinct_counters");
    println!("clang 22 campaign: {distinct} distinct counters");
    assert!(distinct > 10, "{log}");
}

/// What the client reports of a finished campaign say its corpus covers, by statistic.
fn reported_coverage(out: &Path, statistic: &str) -> u64 {
    std::fs::read_dir(out.join("clients"))
        .unwrap()
        .map(|entry| {
            let report: serde_json::Value =
                serde_json::from_slice(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap();
            report["covered"][statistic].as_u64().unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_campaign_on_afl_tcc_and_gcc_statistics_keeps_variants_for_new_edges_and_counters() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let tcc = built_tcc("tcc-afl");
    let config = write_edges_and_counters_config(dir.path(), &tcc);
    let log = campaign(&out, &config, &["--variants-per-seed", "6", "--iterations", "14"]);
    assert!(log.contains("AFL map of 11904 entries"), "{log}");
    assert!(reported_coverage(&out, "edges_covered") > 1_500, "{log}");
    assert!(reported_coverage(&out, "distinct_counters") > 50, "{log}");

    // Corpus entries carry what they added: variants (not only seeds) entered the corpus for
    // edges or counters that no earlier entry had.
    let (mut firsts, mut variants_with_news, mut measured) = (0, 0, 0);
    for entry in std::fs::read_dir(out.join("corpus")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_prefix('.').and_then(|n| n.strip_suffix(".metadata")) else {
            continue;
        };
        let variant = Variant::from_file(out.join("corpus").join(stem)).unwrap();
        let json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let values: Vec<&serde_json::Value> = json["metadata"]["map"]
            .as_object()
            .unwrap()
            .values()
            .map(|pair| &pair[1])
            .collect();
        // A seed whose own execution was a finding enters without feedback, and without novelty.
        let Some(novelty) = values.iter().find(|v| v.get("new_coverage").is_some()) else {
            continue;
        };
        measured += 1;
        let figure = |key: &str| novelty[key].as_u64().unwrap();
        // The counters it set first are named (two names may share a slot of the map).
        let new_names = values
            .iter()
            .find(|v| {
                v.as_object()
                    .is_some_and(|o| o.keys().any(|k| k.starts_with("gcc-12 -O1 | ")))
            })
            .map_or(0, |names| names.as_object().unwrap().len() as u64);
        assert!(new_names >= figure("new_counters"), "{json}");
        assert!(new_names <= figure("counters"), "{json}");
        assert_eq!(new_names == 0, figure("new_counters") == 0, "{json}");
        assert!(figure("coverage") > 1_000, "{novelty}");
        if figure("new_coverage") == figure("coverage") {
            firsts += 1;
            assert!(variant.edits().is_empty(), "the first entry is a seed");
        } else if !variant.edits().is_empty() && figure("new_coverage") + figure("new_counters") > 0 {
            variants_with_news += 1;
        }
    }
    assert_eq!(firsts, 1, "exactly one entry had every edge new");
    assert!(
        measured >= 4 && variants_with_news >= 1,
        "{measured} entries, {variants_with_news} variants with news:\n{log}"
    );
}
