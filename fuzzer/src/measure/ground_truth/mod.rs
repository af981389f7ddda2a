//! The ground-truth benchmark: setups run against a compiler (TinyCC or pcc) built at an old
//! revision of its history, and every finding counted as the bug its correcting commit names
//! (Chen et al., ICSE 2016). Each
//! setup runs R times for the same CPU time on the same cores against the compiler built at
//! `--from` (reference `gcc -O0`); after each run its findings are bucketed by correcting
//! commit, found by bisection along the first-parent history up to `--to`, before anything is
//! reduced. Findings of a known bug (see [`known_commits`]) are recognized by two program runs and
//! counted apart. Finished runs are kept and reused when the benchmark is started again (see
//! [`FinishedRun`]). `report.md`, `bugs.csv`, `findings.csv` and `bugs-over-time.{png,svg}` go
//! to `--out`.

pub mod bisect;
pub mod by_commit;
pub mod classify;
pub mod density;
pub mod history;
pub mod known_commits;
pub mod results;

use crate::config::{CompilerConfig, Config, Coverage, ReferenceGate};
use crate::measure::bug_rate::NamedSetup;
use crate::measure::experiment::{beside, read_run, run_once, Run, RunPlan, Setup};
use anyhow::{bail, Context, Result};
use ccfuzz_triage::finding::saved_findings;
use classify::{BugClass, Classifier};
use history::History;
use results::{Found, RunYield};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Everything the benchmark needs.
pub struct GroundTruthPlan {
    /// The `ccfuzz` binary the campaigns run.
    pub binary: PathBuf,
    /// The tested compiler's git directory (a work tree or a bare repository): TinyCC or pcc.
    pub history: PathBuf,
    /// Options the compiler is tested with (pcc's `-O`).
    pub options: String,
    pub from: String,
    pub to: String,
    /// Reference, `ub_check`, timeouts and csmith options; its configurations are replaced
    /// by the compiler at `--from`.
    pub base_config: Config,
    pub seeds: Option<PathBuf>,
    pub seconds: u64,
    pub repetitions: usize,
    pub cores: Vec<usize>,
    /// The setups of a repetition run at the same time, one core each (a paired design: on a
    /// shared machine they meet the same load), in groups of as many as there are cores,
    /// instead of one after the other on all cores.
    pub paired: bool,
    pub out: PathBuf,
    /// Where each commit's build is cached, under its hash.
    pub build_cache: PathBuf,
    /// A known-bugs list.
    pub known: Option<PathBuf>,
}

/// What a finished run was, written beside its directory (`DIR.finished`) once its campaign
/// has ended: a benchmark started again with the same `--from`, configuration, `--seconds`
/// and `--cores` reuses the runs it finds and runs only the rest, so repetitions and setups can be added
/// later and a killed benchmark loses only the run it was in.
#[derive(Serialize, Deserialize)]
struct FinishedRun {
    setup: String,
    /// The commit at `--from`.
    from: String,
    /// The campaigns' configuration (TOML).
    configuration: String,
    seconds: u64,
    cores: Vec<usize>,
    /// Unix seconds when the campaign started: findings are timed from it.
    started: u64,
}

impl FinishedRun {
    fn read(dir: &Path) -> Option<FinishedRun> {
        let text = std::fs::read(beside(dir, "finished")).ok()?;
        serde_json::from_slice(&text).ok()
    }

    fn write(&self, dir: &Path) -> Result<()> {
        let path = beside(dir, "finished");
        std::fs::write(&path, serde_json::to_vec_pretty(self)?)
            .with_context(|| format!("cannot write {}", path.display()))
    }

    fn same_run(&self, other: &FinishedRun) -> bool {
        (&self.setup, &self.from, &self.configuration, self.seconds, &self.cores)
            == (
                &other.setup,
                &other.from,
                &other.configuration,
                other.seconds,
                &other.cores,
            )
    }
}

/// A setup's run into `dir`: the one finished there before if it is `wanted`, else a new one,
/// recorded as finished once its campaign has ended; with the time it started.
fn obtain_run(run_plan: &RunPlan, setup: &Setup, dir: &Path, wanted: FinishedRun) -> Result<(Run, SystemTime)> {
    if let Some(done) = FinishedRun::read(dir).filter(|done| done.same_run(&wanted)) {
        log::info!("run {} finished before: its results are reused", dir.display());
        return Ok((read_run(dir)?, UNIX_EPOCH + Duration::from_secs(done.started)));
    }
    log::info!("run {} on cores {:?}: {}", dir.display(), wanted.cores, setup.label);
    let _ = std::fs::remove_file(beside(dir, "finished"));
    let started = SystemTime::now();
    let run = run_once(run_plan, setup, &wanted.cores, dir)?;
    let started_unix = started.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    FinishedRun {
        started: started_unix,
        ..wanted
    }
    .write(dir)?;
    Ok((run, UNIX_EPOCH + Duration::from_secs(started_unix)))
}

/// The campaigns' configuration: the compiler at `--from` against `gcc -O0`, csmith without
/// packed structs (TinyCC 0.9.27 rejects `#pragma pack(push)`). The reference compiles a
/// variant only when the compiler disagrees with its seed: tcc and pcc compile in milliseconds
/// and `gcc -O0` in hundreds of them, so a gate that compiled every variant would cost the EMI setups most of their
/// executions (16 times fewer against tcc, docs/performance.md).
fn campaign_config(base: &Config, tested: &str) -> Config {
    let mut config = base.clone();
    config.reference = CompilerConfig::new("gcc -O0");
    config.reference_gate = ReferenceGate::OnDisagreement;
    config.configurations = vec![CompilerConfig::new(tested)];
    config.background_triage = false;
    if !config.csmith_args.iter().any(|a| a == "--no-packed-struct") {
        config.csmith_args.push("--no-packed-struct".into());
    }
    config
}

/// What a setup asks of the benchmark itself, beside its `ccfuzz fuzz` options.
#[derive(Default)]
struct BenchmarkKeys {
    /// `coverage=afl`: the setup tests the build of `--from` instrumented by `afl-clang-fast`
    /// and observes its edges, which guide the chains' energy.
    afl: bool,
    /// `test-suite=from`: the setup's seeds are the compiler's own execution tests as they were
    /// at `--from` (later tests hold the answers to later bugs).
    test_suite: bool,
}

/// The setup without the benchmark's keys, and those keys.
fn benchmark_keys(setup: &Setup) -> Result<(Setup, BenchmarkKeys)> {
    let mut args = Vec::new();
    let mut keys = BenchmarkKeys::default();
    for pair in setup.args.chunks(2) {
        match pair {
            [key, value] if key == "--coverage" && value == "afl" => keys.afl = true,
            [key, value] if key == "--test-suite" && value == "from" => keys.test_suite = true,
            [key, value] if key == "--coverage" || key == "--test-suite" => bail!(
                "setup `{}`: {}={value} is not known (coverage=afl and test-suite=from are)",
                setup.label,
                &key[2..]
            ),
            _ => args.extend(pair.iter().cloned()),
        }
    }
    Ok((
        Setup {
            label: setup.label.clone(),
            args,
        },
        keys,
    ))
}

/// Runs the benchmark and returns its report.
pub fn ground_truth_study(plan: &GroundTruthPlan, setups: &[NamedSetup]) -> Result<String> {
    if setups.is_empty() {
        bail!("give at least one --setup");
    }
    if plan.cores.is_empty() {
        bail!("give at least one core (--cores)");
    }
    std::fs::create_dir_all(&plan.out).with_context(|| format!("cannot create {}", plan.out.display()))?;
    let history = History::open(
        &plan.history,
        &plan.from,
        &plan.to,
        &plan.build_cache,
        plan.cores.len(),
        &plan.options,
    )?;
    log::info!("{} commits from {} to {}", history.commits.len(), plan.from, plan.to);
    let Some(tested) = history.build(0)? else {
        bail!("{} does not build at --from {}", history.kind.name(), plan.from);
    };
    let config = campaign_config(&plan.base_config, &tested.command_line());
    let config_path = plan.out.join("configuration.toml");
    std::fs::write(&config_path, config.to_toml())?;
    // Each setup's options and configuration (the instrumented build's for `coverage=afl`).
    let mut prepared: Vec<(Setup, Config, PathBuf)> = Vec::new();
    for named in setups {
        let (mut setup, keys) = benchmark_keys(&named.setup)?;
        let given_seeds = setup.args.iter().any(|a| a == "--seeds");
        if [plan.seeds.is_some(), given_seeds, keys.test_suite]
            .iter()
            .filter(|&&b| b)
            .count()
            > 1
        {
            bail!(
                "setup {}: give its seeds one way only (--seeds, seeds=DIR or test-suite=from)",
                named.name
            );
        }
        if keys.test_suite {
            let suite = plan.out.join("test-suite");
            let tests = history.extract_tests(0, &suite)?;
            log::info!(
                "{tests} tests of {} at --from in {}",
                history.kind.name(),
                suite.display()
            );
            setup.args.extend(["--seeds".to_string(), suite.display().to_string()]);
        }
        if !keys.afl {
            prepared.push((setup, config.clone(), config_path.clone()));
            continue;
        }
        let Some(instrumented) = history.build_with(0, history::Instrumentation::Afl)? else {
            bail!(
                "{} at --from {} does not build with afl-clang-fast (setup {})",
                history.kind.name(),
                plan.from,
                named.name
            );
        };
        let mut afl_config = config.clone();
        let mut tested = CompilerConfig::new(instrumented.command_line());
        tested.observe.coverage = Some(Coverage::Afl);
        afl_config.configurations = vec![tested];
        let path = plan.out.join("configuration-afl.toml");
        std::fs::write(&path, afl_config.to_toml())?;
        prepared.push((setup, afl_config, path));
    }
    let mut classifier = Classifier::new(&history, &config, &plan.out.join("bisect"), Vec::new())?;
    let known = match &plan.known {
        Some(path) => {
            let listed = ccfuzz_triage::known::read_known_bugs(path)?;
            known_commits::known_positions(&listed, &mut classifier)?
        }
        None => Vec::new(),
    };
    classifier.named = known.clone();
    let run_plan = RunPlan {
        binary: plan.binary.clone(),
        config: config_path,
        seeds: plan.seeds.clone(),
        seconds: plan.seconds,
        repetitions: plan.repetitions,
        cores: plan.cores.clone(),
        out: plan.out.clone(),
    };
    // The cores of each setup's runs: all of them, or one each when the setups run paired, in
    // groups of as many setups as there are cores (setup i on the (i mod cores)-th core).
    let cores_of = |index: usize| -> Vec<usize> {
        if plan.paired {
            vec![plan.cores[index % plan.cores.len()]]
        } else {
            plan.cores.clone()
        }
    };
    let cores = cores_of(0).len().max(1) as f64;
    let mut runs: Vec<Vec<RunYield>> = vec![Vec::new(); setups.len()];
    let mut findings_csv = String::from("setup,repetition,finding,program,cpu_seconds,class,commit\n");
    let mut failed: Vec<String> = Vec::new();
    for repetition in 1..=plan.repetitions {
        let obtain = |index: usize| {
            let named = &setups[index];
            let (setup, setup_config, setup_config_path) = &prepared[index];
            let wanted = FinishedRun {
                setup: named.setup.label.clone(),
                from: history.commits[0].hash.clone(),
                configuration: setup_config.to_toml(),
                seconds: plan.seconds,
                cores: cores_of(index),
                started: 0,
            };
            let run_plan = RunPlan {
                config: setup_config_path.clone(),
                ..run_plan.clone()
            };
            obtain_run(
                &run_plan,
                setup,
                &plan.out.join(format!("{}-{repetition}", named.name)),
                wanted,
            )
        };
        let obtained: Vec<Result<(Run, SystemTime)>> = if plan.paired {
            let indices: Vec<usize> = (0..setups.len()).collect();
            let mut obtained = Vec::new();
            for group in indices.chunks(plan.cores.len()) {
                std::thread::scope(|scope| {
                    let handles: Vec<_> = group.iter().map(|&index| scope.spawn(move || obtain(index))).collect();
                    obtained.extend(handles.into_iter().map(|h| h.join().expect("a run's thread panicked")));
                });
            }
            obtained
        } else {
            (0..setups.len()).map(obtain).collect()
        };
        for ((index, named), obtained) in setups.iter().enumerate().zip(obtained) {
            // One failed campaign must not cost the others' hours: it is left out of the
            // report, and the command, run again, redoes only what did not finish.
            let (run, started) = match obtained {
                Ok(obtained) => obtained,
                Err(error) => {
                    log::error!("run {}-{repetition} failed: {error:#}", named.name);
                    failed.push(format!("{}-{repetition}", named.name));
                    continue;
                }
            };
            let dir = &run.dir;
            let mut found = Vec::new();
            for finding in saved_findings(&dir.join("findings"))? {
                let wall = std::fs::metadata(&finding.dir)
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(started).ok())
                    .map_or(0.0, |d| d.as_secs_f64());
                let class = classifier.classify(&finding)?;
                let (label, commit) = match &class {
                    BugClass::Corrected { index, .. } => ("corrected", history.commits[*index].hash.clone()),
                    BugClass::Uncorrected { fingerprint } => ("uncorrected", fingerprint.replace(',', ";")),
                    BugClass::NotReproduced => ("not-reproduced", String::new()),
                };
                let in_variant = !finding.finding.edits.is_empty();
                writeln!(
                    findings_csv,
                    "{},{repetition},{},{},{:.0},{label},{commit}",
                    named.name,
                    finding.name,
                    if in_variant { "variant" } else { "seed" },
                    wall * cores
                )?;
                found.push(Found {
                    cpu_seconds: wall * cores,
                    class,
                    in_variant,
                });
            }
            std::fs::write(plan.out.join("findings.csv"), &findings_csv)?;
            let wall: f64 = run.reports.iter().map(|r| r.wall_seconds).sum();
            runs[index].push(RunYield {
                executions: run.reports.iter().map(|r| r.executions).sum(),
                seeds: run
                    .reports
                    .iter()
                    .map(|r| (r.seed_making.accepted > 0).then_some(u64::from(r.seed_making.accepted)))
                    .sum(),
                seed_share: run.reports.iter().map(|r| r.seed_making.seconds).sum::<f64>() / wall.max(1e-9),
                found,
            });
        }
    }
    let study = results::Study {
        setups,
        runs: &runs,
        history: &history,
        known: &known,
        cpu_seconds_per_run: plan.seconds as f64 * cores,
        describe: format!(
            "{} {} ({}{}) against `gcc -O0`; correcting commits searched up to {} ({} first-parent commits); {} repetitions of {} s {}; {} program runs for bisection.",
            history.kind.name(),
            &history.commits[0].hash[..10],
            plan.from,
            if plan.options.trim().is_empty() {
                String::new()
            } else {
                format!(", options `{}`", plan.options.trim())
            },
            plan.to,
            history.commits.len() - 1,
            plan.repetitions,
            plan.seconds,
            if plan.paired {
                format!(
                    "with the setups paired, one core each of {:?}{}",
                    plan.cores,
                    if setups.len() > plan.cores.len() {
                        format!(", in groups of {}", plan.cores.len())
                    } else {
                        String::new()
                    }
                )
            } else {
                format!("on cores {:?}", plan.cores)
            },
            classifier.probes
        ),
    };
    std::fs::write(plan.out.join("bugs.csv"), study.bugs_csv())?;
    study.plot(&plan.out.join("bugs-over-time"))?;
    let md = study.markdown();
    std::fs::write(plan.out.join("report.md"), &md)?;
    if !failed.is_empty() {
        bail!(
            "{} of the runs failed ({}); {} counts the others, and the same command run again redoes only the failed ones",
            failed.len(),
            failed.join(", "),
            plan.out.join("report.md").display()
        );
    }
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_benchmark_keys_are_taken_out_of_a_setup() {
        let setup = Setup::parse("mutators=athena coverage=afl test-suite=from variants-per-seed=3").unwrap();
        let (rest, keys) = benchmark_keys(&setup).unwrap();
        assert!(keys.afl && keys.test_suite);
        assert_eq!(rest.args, ["--mutators", "athena", "--variants-per-seed", "3"]);
        assert_eq!(rest.label, setup.label);
        let (rest, keys) = benchmark_keys(&Setup::parse("mutators=hermes").unwrap()).unwrap();
        assert!(!keys.afl && !keys.test_suite && rest.args.len() == 2);
        for unknown in ["coverage=gcov", "test-suite=head"] {
            let error = benchmark_keys(&Setup::parse(unknown).unwrap())
                .err()
                .unwrap()
                .to_string();
            assert!(error.contains("is not known"), "{error}");
        }
    }
}
