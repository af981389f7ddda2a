//! The bug-rate study: two or more setups (plain Csmith differential testing, the default
//! campaign, Orange seeds, …) each run R times for the same wall time on the same cores and
//! configurations; every campaign is followed by `ccfuzz triage`. Reported per setup: raw
//! findings and distinct bugs (triage fingerprints) per CPU-hour with 95% confidence
//! intervals, the distinct bugs of all its runs together, executions and seeds.
//!
//! Within a repetition the setups run one after the other, so a change in a shared machine's
//! load meets every setup of that repetition.

use crate::measure::experiment::{run_once, Run, RunPlan, Setup};
use crate::measure::stats::{ci95, mean_sd};
use anyhow::{bail, Context, Result};
use ccfuzz_triage::report::Bug;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

/// A setup with its short name: `plain-csmith: variants-per-seed=0`.
#[derive(Clone, Debug)]
pub struct NamedSetup {
    pub name: String,
    pub setup: Setup,
}

impl NamedSetup {
    pub fn parse(spec: &str) -> Result<Self> {
        let Some((name, options)) = spec.split_once(':') else {
            bail!("setup `{spec}` has no name: write `NAME: key=value …`");
        };
        let name = name.trim();
        if name.is_empty() || name.contains(['/', ' ']) {
            bail!("setup name `{name}` must be one word without `/`");
        }
        Ok(NamedSetup {
            name: name.to_string(),
            setup: Setup::parse(options)?,
        })
    }
}

/// What one triaged campaign yielded.
#[derive(Clone, Debug, Default)]
struct Yield {
    raw_findings: usize,
    /// Fingerprints of its reproducible (not flaky) bugs, with their configurations.
    bugs: BTreeSet<String>,
    executions: u64,
    seeds: usize,
}

/// Triages a finished campaign (every core the study has; `reducer` as `ccfuzz triage
/// --reducer` takes it) and reads what it found.
fn triage_and_count(plan: &RunPlan, run: &Run, reducer: Option<&str>) -> Result<Yield> {
    let log = std::fs::File::create(super::experiment::beside(&run.dir, "triage.log"))?;
    let mut triage = Command::new(&plan.binary);
    triage.arg("triage").arg(&run.dir);
    if let Some(reducer) = reducer {
        triage.args(["--reducer", reducer]);
    }
    let status = triage
        .arg("--config")
        .arg(&plan.config)
        .args(["--jobs", &plan.cores.len().max(1).to_string()])
        .stdout(log.try_clone()?)
        .stderr(log)
        .status()
        .with_context(|| format!("cannot triage {}", run.dir.display()))?;
    if !status.success() {
        bail!("triage of {} failed ({status})", run.dir.display());
    }
    let bugs_json = run.dir.join("triage/bugs/bugs.json");
    let bugs: Vec<Bug> = serde_json::from_slice(
        &std::fs::read(&bugs_json).with_context(|| format!("cannot read {}", bugs_json.display()))?,
    )?;
    Ok(Yield {
        raw_findings: count_entries(&run.dir.join("findings"), |_| true),
        bugs: bugs
            .iter()
            .filter(|b| !b.flaky)
            .map(|b| format!("{} | {}", b.configuration, b.fingerprint))
            .collect(),
        executions: run.reports.iter().map(|r| r.executions).sum(),
        seeds: count_entries(&run.dir.join("seeds"), |name| name != "headers"),
    })
}

fn count_entries(dir: &Path, wanted: impl Fn(&str) -> bool) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                !name.starts_with('.') && wanted(&name)
            })
            .count()
    })
}

/// Runs the study and returns its report (also `report.md` and `bug-rate.csv` in `plan.out`).
pub fn bug_rate_study(plan: &RunPlan, setups: &[NamedSetup], reducer: Option<&str>) -> Result<String> {
    if setups.len() < 2 {
        bail!("a bug-rate study compares two or more setups");
    }
    crate::ops::format_version::claim(&plan.out, "experiment")?;
    let mut yields: Vec<Vec<Yield>> = vec![Vec::new(); setups.len()];
    let mut csv = String::from("setup,repetition,raw_findings,distinct_bugs,executions,seeds\n");
    for repetition in 1..=plan.repetitions {
        for (index, named) in setups.iter().enumerate() {
            let dir = plan.out.join(format!("{}-{repetition}", named.name));
            log::info!("run {}: {}", dir.display(), named.setup.label);
            let run = run_once(plan, &named.setup, &plan.cores, &dir)?;
            let found = triage_and_count(plan, &run, reducer)?;
            writeln!(
                csv,
                "{},{repetition},{},{},{},{}",
                named.name,
                found.raw_findings,
                found.bugs.len(),
                found.executions,
                found.seeds
            )?;
            std::fs::write(plan.out.join("bug-rate.csv"), &csv)?;
            yields[index].push(found);
        }
    }
    let cpu_hours = plan.seconds as f64 * plan.cores.len().max(1) as f64 / 3600.0;
    let mut md = String::from("# Bug rate per setup\n\n");
    writeln!(
        md,
        "{} repetitions of {} s on cores {:?} ({cpu_hours:.2} CPU-hours per run), configuration {}; every run triaged.\n",
        plan.repetitions,
        plan.seconds,
        plan.cores,
        plan.config.display()
    )?;
    writeln!(
        md,
        "| setup | raw findings / CPU-h | distinct bugs / CPU-h | distinct bugs, all runs | executions / run | seeds / run |\n|---|---:|---:|---:|---:|---:|"
    )?;
    let per_hour = |values: Vec<f64>| {
        let rates: Vec<f64> = values.iter().map(|v| v / cpu_hours).collect();
        format!("{:.2} ± {:.2}", mean_sd(&rates).0, ci95(&rates))
    };
    for (named, runs) in setups.iter().zip(&yields) {
        let all_bugs: BTreeSet<&String> = runs.iter().flat_map(|y| &y.bugs).collect();
        writeln!(
            md,
            "| {} (`{}`) | {} | {} | {} | {:.0} | {:.0} |",
            named.name,
            named.setup.label,
            per_hour(runs.iter().map(|y| y.raw_findings as f64).collect()),
            per_hour(runs.iter().map(|y| y.bugs.len() as f64).collect()),
            all_bugs.len(),
            mean_sd(&runs.iter().map(|y| y.executions as f64).collect::<Vec<_>>()).0,
            mean_sd(&runs.iter().map(|y| y.seeds as f64).collect::<Vec<_>>()).0,
        )?;
    }
    md.push_str("\nIntervals: 95% (Student's t over repetitions). Distinct bugs:\n\n");
    let mut listed = 0;
    for (named, runs) in setups.iter().zip(&yields) {
        for bug in runs.iter().flat_map(|y| &y.bugs).collect::<BTreeSet<_>>() {
            writeln!(md, "- {}: {bug}", named.name)?;
            listed += 1;
        }
    }
    if listed == 0 {
        md.push_str("none in any run.\n");
    }
    std::fs::write(plan.out.join("report.md"), &md)?;
    Ok(md)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups_are_named() {
        let named = NamedSetup::parse("plain-csmith: variants-per-seed=0").unwrap();
        assert_eq!(named.name, "plain-csmith");
        assert_eq!(named.setup.args, ["--variants-per-seed", "0"]);
        let default = NamedSetup::parse("default:").unwrap();
        assert!(default.setup.args.is_empty());
        assert!(NamedSetup::parse("variants-per-seed=0").is_err());
        assert!(NamedSetup::parse("a b: x=1").is_err());
    }
}
