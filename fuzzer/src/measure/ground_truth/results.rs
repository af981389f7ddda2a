//! The ground-truth benchmark's figures: per setup, distinct bugs per CPU-hour with 95%
//! intervals (Student's t over repetitions, and the exact Poisson interval of all runs
//! pooled), time to the first bug and programs per hour; across setups, the bugs only one
//! setup found, one CSV row per distinct bug and a chart of distinct bugs over CPU time.

use super::classify::BugClass;
use super::history::History;
use crate::measure::bug_rate::NamedSetup;
use crate::measure::plot::{draw_panels, Panel, Series};
use crate::measure::stats::{ci95, mean_sd};
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

/// One finding of a run, when it was saved and what it is.
#[derive(Clone, Debug)]
pub struct Found {
    /// CPU seconds of the campaign (wall time times cores) when it was saved.
    pub cpu_seconds: f64,
    pub class: BugClass,
    /// Its program is a mutated variant, not a seed as it was made.
    pub in_variant: bool,
}

/// What one run yielded.
#[derive(Clone, Debug, Default)]
pub struct RunYield {
    pub executions: u64,
    /// Seeds the run made (unknown in the reports of builds that did not count them), and the
    /// share of its wall time that went into making them.
    pub seeds: Option<u64>,
    pub seed_share: f64,
    pub found: Vec<Found>,
}

/// A distinct bug: its correcting commit's position, or its fingerprint when uncorrected.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Bug {
    Corrected(usize),
    Uncorrected(String),
}

impl Found {
    fn bug(&self) -> Option<Bug> {
        match &self.class {
            BugClass::Corrected { index, .. } => Some(Bug::Corrected(*index)),
            BugClass::Uncorrected { fingerprint } => Some(Bug::Uncorrected(fingerprint.clone())),
            BugClass::NotReproduced => None,
        }
    }
}

impl RunYield {
    /// Each distinct bug of the run with the CPU second it was first found.
    fn first_times(&self) -> BTreeMap<Bug, f64> {
        let mut first: BTreeMap<Bug, f64> = BTreeMap::new();
        for found in &self.found {
            let Some(bug) = found.bug() else { continue };
            let time = first.entry(bug).or_insert(f64::INFINITY);
            *time = time.min(found.cpu_seconds);
        }
        first
    }
}

/// The exact 95% interval of a Poisson mean given `k` events (Garwood), by bisection on the
/// Poisson distribution function.
pub fn poisson_ci95(k: u64) -> (f64, f64) {
    // P(X <= k) for mean `mu`.
    let cdf = |k: u64, mu: f64| -> f64 {
        let mut term = (-mu).exp();
        let mut sum = term;
        for i in 1..=k {
            term *= mu / i as f64;
            sum += term;
        }
        sum
    };
    // The mean at which `rising(mu)`, increasing in `mu`, crosses `level`.
    let solve = |rising: &dyn Fn(f64) -> f64, level: f64| {
        let (mut low, mut high) = (0.0, 10.0 * (k as f64 + 10.0));
        for _ in 0..200 {
            let middle = (low + high) / 2.0;
            if rising(middle) < level {
                low = middle;
            } else {
                high = middle;
            }
        }
        (low + high) / 2.0
    };
    // Lower: P(X >= k) = 2.5%; upper: P(X <= k) = 2.5%.
    let lower = if k == 0 {
        0.0
    } else {
        solve(&|mu| 1.0 - cdf(k - 1, mu), 0.025)
    };
    let upper = solve(&|mu| 1.0 - cdf(k, mu), 0.975);
    (lower, upper)
}

/// The finished benchmark, ready to be written out.
pub struct Study<'a> {
    pub setups: &'a [NamedSetup],
    /// Per setup, its runs in repetition order.
    pub runs: &'a [Vec<RunYield>],
    pub history: &'a History,
    /// Positions of the known bugs' correcting commits.
    pub known: &'a [usize],
    pub cpu_seconds_per_run: f64,
    pub describe: String,
}

impl Study<'_> {
    /// Per distinct bug, per setup, the earliest CPU second any run of the setup found it.
    fn bugs(&self) -> BTreeMap<Bug, BTreeMap<usize, f64>> {
        let mut bugs: BTreeMap<Bug, BTreeMap<usize, f64>> = BTreeMap::new();
        for (setup, runs) in self.runs.iter().enumerate() {
            for run in runs {
                for (bug, time) in run.first_times() {
                    let earliest = bugs.entry(bug).or_default().entry(setup).or_insert(f64::INFINITY);
                    *earliest = earliest.min(time);
                }
            }
        }
        bugs
    }

    /// The setups that found `bug` in a mutated variant (not only in a seed as made).
    fn found_in_variants(&self, bug: &Bug) -> Vec<&str> {
        self.setups
            .iter()
            .zip(self.runs)
            .filter(|(_, runs)| {
                runs.iter()
                    .flat_map(|r| &r.found)
                    .any(|f| f.in_variant && f.bug().as_ref() == Some(bug))
            })
            .map(|(named, _)| named.name.as_str())
            .collect()
    }

    fn name(&self, bug: &Bug) -> (String, String) {
        match bug {
            Bug::Corrected(index) => {
                let commit = &self.history.commits[*index];
                (commit.hash[..10].to_string(), commit.subject.clone())
            }
            Bug::Uncorrected(fingerprint) => ("uncorrected".into(), fingerprint.clone()),
        }
    }

    fn is_known(&self, bug: &Bug) -> bool {
        matches!(bug, Bug::Corrected(index) if self.known.contains(index))
    }

    /// How many commits may have corrected a bug (more than one when builds were skipped).
    fn candidates(&self, bug: &Bug) -> usize {
        self.runs
            .iter()
            .flatten()
            .flat_map(|r| &r.found)
            .filter_map(|f| match (&f.class, bug) {
                (BugClass::Corrected { index, candidates }, Bug::Corrected(wanted)) if index == wanted => {
                    Some(*candidates)
                }
                _ => None,
            })
            .min()
            .unwrap_or(1)
    }

    /// One row per distinct bug.
    pub fn bugs_csv(&self) -> String {
        let quote = |text: &str| format!("\"{}\"", text.replace('"', "\"\""));
        let mut csv = String::from("correcting_commit,subject,known,candidate_commits,setups");
        for named in self.setups {
            write!(csv, ",first_cpu_seconds_{}", named.name).expect("string write");
        }
        csv.push('\n');
        for (bug, by_setup) in self.bugs() {
            let (commit, subject) = self.name(&bug);
            let setups: Vec<&str> = by_setup.keys().map(|&s| self.setups[s].name.as_str()).collect();
            write!(
                csv,
                "{commit},{},{},{},{}",
                quote(&subject),
                if self.is_known(&bug) { "yes" } else { "no" },
                self.candidates(&bug),
                setups.join(";")
            )
            .expect("string write");
            for setup in 0..self.setups.len() {
                let time = by_setup.get(&setup).map_or(String::new(), |t| format!("{t:.0}"));
                write!(csv, ",{time}").expect("string write");
            }
            csv.push('\n');
        }
        csv
    }

    /// Mean distinct bugs found by each CPU second, per setup, as a step line.
    pub fn plot(&self, stem: &Path) -> Result<()> {
        let series = self
            .setups
            .iter()
            .zip(self.runs)
            .map(|(named, runs)| {
                let mut times: Vec<f64> = runs.iter().flat_map(|r| r.first_times().into_values()).collect();
                times.sort_by(f64::total_cmp);
                let step = 1.0 / runs.len().max(1) as f64;
                let mut points = vec![(0.0, 0.0)];
                for (count, time) in times.iter().enumerate() {
                    let minutes = time / 60.0;
                    points.push((minutes, count as f64 * step));
                    points.push((minutes, (count + 1) as f64 * step));
                }
                points.push((self.cpu_seconds_per_run / 60.0, times.len() as f64 * step));
                Series {
                    label: named.name.clone(),
                    points,
                }
            })
            .collect();
        let panel = Panel {
            title: "distinct bugs (mean over repetitions)".into(),
            x_label: "CPU minutes".into(),
            series,
        };
        draw_panels(stem, "distinct bugs by correcting commit", &[panel])?;
        Ok(())
    }

    pub fn markdown(&self) -> String {
        let hours = self.cpu_seconds_per_run / 3600.0;
        let bugs = self.bugs();
        let mut md = String::from("# Ground truth: distinct bugs by correcting commit\n\n");
        writeln!(md, "{}\n", self.describe).expect("string write");
        md.push_str(
            "| setup | runs | distinct bugs / CPU-h (Student 95%) | pooled (Poisson 95%) | distinct bugs, all runs | of them known | time to first bug (CPU-min) | programs / CPU-h | seeds / CPU-h (time making them) | findings (in variants) | not reproduced |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        );
        for (named, runs) in self.setups.iter().zip(self.runs) {
            if runs.is_empty() {
                writeln!(md, "| {} | 0 | no run finished |||||||||", named.name).expect("string write");
                continue;
            }
            let per_run: Vec<BTreeMap<Bug, f64>> = runs.iter().map(RunYield::first_times).collect();
            let rates: Vec<f64> = per_run.iter().map(|b| b.len() as f64 / hours).collect();
            let total: u64 = per_run.iter().map(|b| b.len() as u64).sum();
            let (low, high) = poisson_ci95(total);
            let pooled_hours = hours * runs.len().max(1) as f64;
            let union: BTreeSet<&Bug> = per_run.iter().flat_map(|b| b.keys()).collect();
            let known = union.iter().filter(|b| self.is_known(b)).count();
            let firsts: Vec<f64> = per_run
                .iter()
                .filter_map(|b| b.values().copied().reduce(f64::min))
                .map(|s| s / 60.0)
                .collect();
            let first = if firsts.is_empty() {
                "none".to_string()
            } else {
                format!("{:.1} ({} of {} runs)", mean_sd(&firsts).0, firsts.len(), runs.len())
            };
            let interval = ci95(&rates);
            let student = if interval.is_finite() {
                format!("{:.2} ± {:.2}", mean_sd(&rates).0, interval)
            } else {
                format!("{:.2}", mean_sd(&rates).0)
            };
            let programs: Vec<f64> = runs.iter().map(|r| r.executions as f64 / hours).collect();
            let seeds: Vec<f64> = runs.iter().filter_map(|r| r.seeds).map(|s| s as f64 / hours).collect();
            let seeds = if seeds.is_empty() {
                "?".to_string()
            } else {
                format!("{:.0}", mean_sd(&seeds).0)
            };
            let seed_shares: Vec<f64> = runs.iter().map(|r| r.seed_share).collect();
            let findings: usize = runs.iter().map(|r| r.found.len()).sum();
            let in_variants = runs.iter().flat_map(|r| &r.found).filter(|f| f.in_variant).count();
            let not_reproduced = runs
                .iter()
                .flat_map(|r| &r.found)
                .filter(|f| f.class == BugClass::NotReproduced)
                .count();
            writeln!(
                md,
                "| {} ({}) | {} | {student} | {:.2} [{:.2}, {:.2}] | {} | {known} | {first} | {:.0} | {seeds} ({:.0}%) | {findings} ({in_variants}) | {not_reproduced} |",
                named.name,
                if named.setup.label.is_empty() {
                    "the default options".to_string()
                } else {
                    format!("`{}`", named.setup.label)
                },
                runs.len(),
                total as f64 / pooled_hours,
                low / pooled_hours,
                high / pooled_hours,
                union.len(),
                mean_sd(&programs).0,
                100.0 * mean_sd(&seed_shares).0,
            )
            .expect("string write");
        }
        md.push_str("\nA finding's bug is the first later commit at which its program prints what `gcc -O0` prints; a commit where it fails in another way than at `--from` (a compiler crash, a compiler hang, a rejection, wrong code) shows another bug and is skipped, as one that does not build; findings never corrected are told apart by the fingerprint of their symptom. A finding that passes at `--from` when run again is not reproduced. Student's interval is over repetitions (none with one); the pooled interval is the exact Poisson interval of all runs' distinct bugs over their CPU time. Seeds are those made and accepted, with the share of the wall time seed making took (`?`: not counted, because the seeds came from a directory, vetted before the run's clock started, or a build that did not count them ran the campaign).\n\n## Distinct bugs\n\n");
        if bugs.is_empty() {
            md.push_str("None in any run.\n");
        } else {
            md.push_str(
                "| correcting commit | subject | found by (first CPU-min) | in a variant by | only one setup |\n|---|---|---|---|---|\n",
            );
        }
        for (bug, by_setup) in &bugs {
            let (commit, subject) = self.name(bug);
            let found_by: Vec<String> = by_setup
                .iter()
                .map(|(&s, t)| format!("{} ({:.1})", self.setups[s].name, t / 60.0))
                .collect();
            let known = if self.is_known(bug) { " (known)" } else { "" };
            writeln!(
                md,
                "| {commit}{known} | {} | {} | {} | {} |",
                subject.replace('|', "/"),
                found_by.join(", "),
                self.found_in_variants(bug).join(", "),
                if by_setup.len() == 1 { "yes" } else { "" }
            )
            .expect("string write");
        }
        md.push_str("\n![distinct bugs over CPU time](bugs-over-time.svg)\n");
        md
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_intervals_match_tables() {
        // Garwood's exact 95% limits: k=0 [0, 3.689], k=1 [0.0253, 5.572], k=5 [1.623, 11.668].
        for (k, low, high) in [(0, 0.0, 3.689), (1, 0.0253, 5.572), (5, 1.623, 11.668)] {
            let (l, h) = poisson_ci95(k);
            assert!((l - low).abs() < 1e-3 && (h - high).abs() < 1e-3, "k={k}: [{l}, {h}]");
        }
    }

    #[test]
    fn a_run_counts_each_bug_once_at_its_first_finding() {
        let found = |cpu_seconds: f64, class: BugClass| Found {
            cpu_seconds,
            class,
            in_variant: false,
        };
        let run = RunYield {
            executions: 10,
            seeds: Some(1),
            seed_share: 0.5,
            found: vec![
                found(
                    50.0,
                    BugClass::Corrected {
                        index: 3,
                        candidates: 1,
                    },
                ),
                found(
                    20.0,
                    BugClass::Corrected {
                        index: 3,
                        candidates: 1,
                    },
                ),
                found(
                    30.0,
                    BugClass::Uncorrected {
                        fingerprint: "crash: x".into(),
                    },
                ),
                found(10.0, BugClass::NotReproduced),
            ],
        };
        let firsts = run.first_times();
        assert_eq!(firsts.len(), 2);
        assert_eq!(firsts[&Bug::Corrected(3)], 20.0);
        assert_eq!(firsts[&Bug::Uncorrected("crash: x".into())], 30.0);
    }
}
