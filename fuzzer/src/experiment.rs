//! Experiments that compare two campaign setups, as YARPGen's optimization-counter study
//! (Tables 5 and 6): A and B each run R times for T seconds on one core with the same
//! configuration; every optimization counter is summed over each run's executions; each
//! counter is then A better, B better or comparable by Welch's two-sided t-test at 95%.
//!
//! A setup is a list of `ccfuzz fuzz` options written `key=value` (`mutators=hermes
//! coverage-weight=0`): any generator or mutator a campaign takes plugs in unchanged.

use crate::campaign::ClientReport;
use crate::plot::draw_bars;
use crate::stats::{ci95, mean_sd, welch_p};
use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One side of an A/B experiment.
#[derive(Clone, Debug)]
pub struct Setup {
    /// The spec as written, for reports.
    pub label: String,
    /// The `ccfuzz fuzz` options it stands for.
    pub args: Vec<String>,
}

impl Setup {
    /// Parses `key=value key2=value2` into `--key value --key2 value2`.
    pub fn parse(spec: &str) -> Result<Self> {
        let mut args = Vec::new();
        for word in spec.split_whitespace() {
            let Some((key, value)) = word.split_once('=') else {
                bail!("`{word}` in setup `{spec}` is not key=value (a `ccfuzz fuzz` option without its dashes)");
            };
            args.push(format!("--{key}"));
            args.push(value.to_string());
        }
        Ok(Setup {
            label: spec.trim().to_string(),
            args,
        })
    }
}

/// What every run of the experiment shares.
#[derive(Clone, Debug)]
pub struct RunPlan {
    /// The `ccfuzz` binary to run campaigns with.
    pub binary: PathBuf,
    pub config: PathBuf,
    pub seeds: PathBuf,
    pub seconds: u64,
    pub repetitions: usize,
    /// The CPU core each campaign runs on.
    pub core: usize,
    pub out: PathBuf,
}

/// Runs one campaign of `setup` into `dir` and returns its clients' reports.
pub fn run_once(plan: &RunPlan, setup: &Setup, dir: &Path) -> Result<Vec<ClientReport>> {
    let _ = std::fs::remove_dir_all(dir);
    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let log = std::fs::File::create(dir.with_extension("log"))?;
    let status = Command::new(&plan.binary)
        .arg("fuzz")
        .arg("--out")
        .arg(dir)
        .arg("--config")
        .arg(&plan.config)
        .arg("--seeds")
        .arg(&plan.seeds)
        .args(["--cores", &plan.core.to_string(), "--broker-port", &port.to_string()])
        .args(["--seconds", &plan.seconds.to_string()])
        .args(&setup.args)
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .with_context(|| format!("cannot run {}", plan.binary.display()))?;
    if !status.success() {
        bail!(
            "campaign {} failed ({status}): see {}",
            dir.display(),
            dir.with_extension("log").display()
        );
    }
    let mut reports = Vec::new();
    for entry in std::fs::read_dir(dir.join("clients")).with_context(|| format!("{} wrote no report", dir.display()))? {
        let path = entry?.path();
        reports.push(
            serde_json::from_slice(&std::fs::read(&path)?).with_context(|| format!("bad report {}", path.display()))?,
        );
    }
    Ok(reports)
}

/// The verdict on one counter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    ABetter,
    BBetter,
    Comparable,
}

impl Verdict {
    fn name(self) -> &'static str {
        match self {
            Verdict::ABetter => "A better",
            Verdict::BBetter => "B better",
            Verdict::Comparable => "comparable",
        }
    }
}

/// One counter's runs under A and B, and the verdict.
#[derive(Clone, Debug)]
pub struct CounterRow {
    pub name: String,
    pub a: Vec<f64>,
    pub b: Vec<f64>,
    pub p: f64,
    pub verdict: Verdict,
}

impl CounterRow {
    /// Mean under A over mean under B (infinite when B never reached it).
    pub fn ratio(&self) -> f64 {
        mean_sd(&self.a).0 / mean_sd(&self.b).0
    }
}

/// Classifies every counter reached by some run of A or B.
pub fn classify(a_runs: &[BTreeMap<String, u64>], b_runs: &[BTreeMap<String, u64>]) -> Vec<CounterRow> {
    let names: BTreeSet<&String> = a_runs.iter().chain(b_runs).flat_map(|r| r.keys()).collect();
    let values = |runs: &[BTreeMap<String, u64>], name: &str| -> Vec<f64> {
        runs.iter().map(|r| r.get(name).copied().unwrap_or(0) as f64).collect()
    };
    names
        .into_iter()
        .map(|name| {
            let (a, b) = (values(a_runs, name), values(b_runs, name));
            let p = welch_p(&a, &b);
            let verdict = if p >= 0.05 {
                Verdict::Comparable
            } else if mean_sd(&a).0 > mean_sd(&b).0 {
                Verdict::ABetter
            } else {
                Verdict::BBetter
            };
            CounterRow {
                name: name.clone(),
                a,
                b,
                p,
                verdict,
            }
        })
        .collect()
}

/// Geometric mean of the A/B ratios of the counters both setups reached.
pub fn geometric_mean_ratio(rows: &[CounterRow]) -> f64 {
    let logs: Vec<f64> = rows
        .iter()
        .map(CounterRow::ratio)
        .filter(|r| r.is_finite() && *r > 0.0)
        .map(f64::ln)
        .collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

/// The counters experiment: runs, classification, `counters.csv`, `report.md` and
/// `verdicts.{png,svg}` under `plan.out`.
pub fn counters_experiment(plan: &RunPlan, a: &Setup, b: &Setup) -> Result<String> {
    std::fs::create_dir_all(&plan.out)?;
    let (mut a_runs, mut b_runs) = (Vec::new(), Vec::new());
    let mut executions = (Vec::new(), Vec::new());
    for repetition in 1..=plan.repetitions {
        // Alternating A and B spreads any drift of the shared machine over both.
        for (side, setup, runs, execs) in [
            ("a", a, &mut a_runs, &mut executions.0),
            ("b", b, &mut b_runs, &mut executions.1),
        ] {
            let dir = plan.out.join(format!("{side}-{repetition}"));
            log::info!("run {side}-{repetition}: {}", setup.label);
            let reports = run_once(plan, setup, &dir)?;
            let mut totals = BTreeMap::new();
            for report in &reports {
                for (name, value) in &report.counters {
                    *totals.entry(name.clone()).or_insert(0) += value;
                }
            }
            execs.push(reports.iter().map(|r| r.executions as f64).sum::<f64>());
            runs.push(totals);
        }
    }
    let rows = classify(&a_runs, &b_runs);
    if rows.is_empty() {
        bail!("no run observed any optimization counter: give a configuration `counters = \"gcc\"` or `\"llvm\"`");
    }
    let mut csv = String::from("counter,mean_a,sd_a,mean_b,sd_b,ratio_a_b,p,verdict\n");
    for row in &rows {
        let ((ma, sa), (mb, sb)) = (mean_sd(&row.a), mean_sd(&row.b));
        writeln!(
            csv,
            "\"{}\",{ma:.1},{sa:.1},{mb:.1},{sb:.1},{:.4},{:.4},{}",
            row.name.replace('"', "\"\""),
            row.ratio(),
            row.p,
            row.verdict.name()
        )?;
    }
    std::fs::write(plan.out.join("counters.csv"), csv)?;

    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let mut md = String::new();
    writeln!(md, "# Optimization counters: A vs B\n")?;
    writeln!(md, "- A: `{}`\n- B: `{}`", a.label, b.label)?;
    writeln!(
        md,
        "- {} repetitions of {} s each on one core; configuration {}; seeds {}",
        plan.repetitions,
        plan.seconds,
        plan.config.display(),
        plan.seeds.display()
    )?;
    let ((ea, _), (eb, _)) = (mean_sd(&executions.0), mean_sd(&executions.1));
    writeln!(md, "- executions per run: A {ea:.0}, B {eb:.0}")?;
    writeln!(
        md,
        "- counters: {} in all; A better {}, B better {}, comparable {} (Welch two-sided, 95%)",
        rows.len(),
        count(Verdict::ABetter),
        count(Verdict::BBetter),
        count(Verdict::Comparable)
    )?;
    writeln!(
        md,
        "- geometric mean of A/B ratios (counters both reached): {:.3}\n",
        geometric_mean_ratio(&rows)
    )?;
    writeln!(md, "## Top counters by difference\n")?;
    writeln!(
        md,
        "| counter | mean A | mean B | A/B | p | verdict |\n|---|---:|---:|---:|---:|---|"
    )?;
    let mut ranked: Vec<&CounterRow> = rows.iter().collect();
    ranked.sort_by(|x, y| {
        x.p.total_cmp(&y.p)
            .then(y.ratio().ln().abs().total_cmp(&x.ratio().ln().abs()))
    });
    for row in ranked.iter().take(20) {
        writeln!(
            md,
            "| {} | {:.1} | {:.1} | {:.3} | {:.4} | {} |",
            row.name.replace('|', "/"),
            mean_sd(&row.a).0,
            mean_sd(&row.b).0,
            row.ratio(),
            row.p,
            row.verdict.name()
        )?;
    }
    std::fs::write(plan.out.join("report.md"), &md)?;
    draw_bars(
        &plan.out.join("verdicts"),
        "optimization counters: A vs B",
        "counters",
        &["A better".into(), "B better".into(), "comparable".into()],
        &[(
            format!("A = {}, B = {}", a.label, b.label),
            [Verdict::ABetter, Verdict::BBetter, Verdict::Comparable]
                .map(|v| count(v) as f64)
                .to_vec(),
        )],
    )?;
    Ok(md)
}

/// What a guidance run reached: compiler coverage (AFL edges or gcov lines its corpus holds),
/// distinct optimization counters over all its executions, findings, executions.
fn guidance_measures(dir: &Path, reports: &[ClientReport]) -> [f64; 4] {
    let coverage = reports
        .iter()
        .flat_map(|r| r.covered.iter())
        .filter(|(stat, _)| stat.ends_with("_covered"))
        .map(|(_, value)| *value as f64)
        .fold(0.0, f64::max);
    let counters: BTreeSet<&String> = reports.iter().flat_map(|r| r.counters.keys()).collect();
    let findings = std::fs::read_dir(dir.join("findings")).map_or(0, |d| d.count());
    let executions = reports.iter().map(|r| r.executions as f64).sum();
    [coverage, counters.len() as f64, findings as f64, executions]
}

/// The guidance experiment: the same campaign with the MCMC energy's coverage and counter
/// terms on (A) and off (B: plain Athena distance), R runs each; means with 95% confidence
/// intervals and Welch's p of compiler coverage, distinct counters, findings and executions.
pub fn guidance_experiment(plan: &RunPlan, on: &Setup, off: &Setup) -> Result<String> {
    std::fs::create_dir_all(&plan.out)?;
    let mut measures: [Vec<[f64; 4]>; 2] = [Vec::new(), Vec::new()];
    for repetition in 1..=plan.repetitions {
        for (side, setup) in [(0, on), (1, off)] {
            let dir = plan.out.join(format!("{}-{repetition}", ["on", "off"][side]));
            log::info!("run {}: {}", dir.display(), setup.label);
            let reports = run_once(plan, setup, &dir)?;
            measures[side].push(guidance_measures(&dir, &reports));
        }
    }
    let names = ["compiler coverage", "distinct counters", "findings", "executions"];
    let mut md = String::from("# Guidance: MCMC energy with coverage/counter terms (on) vs plain Athena (off)\n\n");
    writeln!(md, "- on: `{}`\n- off: `{}`", on.label, off.label)?;
    writeln!(
        md,
        "- {} repetitions of {} s each on one core; configuration {}; seeds {}\n",
        plan.repetitions,
        plan.seconds,
        plan.config.display(),
        plan.seeds.display()
    )?;
    writeln!(
        md,
        "| measure | on (mean ± 95% CI) | off (mean ± 95% CI) | p (Welch) |\n|---|---:|---:|---:|"
    )?;
    let mut csv = String::from("run,coverage,distinct_counters,findings,executions\n");
    for (side, label) in [(0, "on"), (1, "off")] {
        for (i, m) in measures[side].iter().enumerate() {
            writeln!(csv, "{label}-{},{},{},{},{}", i + 1, m[0], m[1], m[2], m[3])?;
        }
    }
    for (index, name) in names.iter().enumerate() {
        let column = |side: usize| measures[side].iter().map(|m| m[index]).collect::<Vec<f64>>();
        let (a, b) = (column(0), column(1));
        writeln!(
            md,
            "| {name} | {:.1} ± {:.1} | {:.1} ± {:.1} | {:.3} |",
            mean_sd(&a).0,
            ci95(&a),
            mean_sd(&b).0,
            ci95(&b),
            welch_p(&a, &b)
        )?;
    }
    std::fs::write(plan.out.join("guidance.csv"), csv)?;
    std::fs::write(plan.out.join("report.md"), &md)?;
    let means = |side: usize| {
        (0..3)
            .map(|i| mean_sd(&measures[side].iter().map(|m| m[i]).collect::<Vec<_>>()).0)
            .collect()
    };
    draw_bars(
        &plan.out.join("guidance"),
        "guidance on vs off (means)",
        "value",
        &names[..3].iter().map(|n| n.to_string()).collect::<Vec<_>>(),
        &[("on".into(), means(0)), ("off".into(), means(1))],
    )?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups_are_fuzz_options() {
        let setup = Setup::parse("mutators=hermes coverage-weight=0").unwrap();
        assert_eq!(setup.args, ["--mutators", "hermes", "--coverage-weight", "0"]);
        assert!(Setup::parse("hermes").is_err());
    }

    #[test]
    fn counters_are_classified_by_direction() {
        let run = |pairs: &[(&str, u64)]| pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        let a = vec![
            run(&[("x", 100), ("y", 5)]),
            run(&[("x", 110), ("y", 7)]),
            run(&[("x", 105), ("y", 4)]),
        ];
        let b = vec![
            run(&[("x", 10), ("y", 6), ("z", 3)]),
            run(&[("x", 12), ("y", 5), ("z", 4)]),
            run(&[("x", 11), ("y", 6), ("z", 5)]),
        ];
        let rows = classify(&a, &b);
        let verdict = |n: &str| rows.iter().find(|r| r.name == n).unwrap().verdict;
        assert_eq!(verdict("x"), Verdict::ABetter);
        assert_eq!(verdict("y"), Verdict::Comparable);
        assert_eq!(verdict("z"), Verdict::BBetter);
        // x: 105/11 and y: 16/17; z is left out (A never reached it).
        let expected = ((105.0f64 / 11.0).ln() / 2.0 + (16.0f64 / 17.0).ln() / 2.0).exp();
        assert!((geometric_mean_ratio(&rows) - expected).abs() < 1e-9);
    }
}
