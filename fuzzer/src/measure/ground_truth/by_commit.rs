//! A campaign's findings bucketed by correcting commit, for `ccfuzz triage --history`: what a
//! user with the tested compiler's git history does before reducing anything. Each bucket is
//! one bug; its smallest variant is the one worth reducing.

/// The buckets' summary, and the smallest finding of each bucket worth reducing: a bug neither
/// known nor unreproduced.
pub struct Buckets {
    pub summary: String,
    pub to_reduce: Vec<String>,
}

use super::classify::{BugClass, Classifier};
use super::history::History;
use super::known_commits::known_positions;
use crate::config::Config;
use anyhow::{Context, Result};
use ccfuzz_triage::finding::saved_findings;
use ccfuzz_triage::known::read_known_bugs;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// Buckets the findings of the campaign in `out`, whose tested compiler is the history's
/// first commit, and writes `OUT/triage/by-correcting-commit.csv`; returns the summary.
pub fn bucket_by_correcting_commit(
    out: &Path,
    config: &Config,
    history: &History,
    known: Option<&Path>,
) -> Result<Buckets> {
    let triage = out.join("triage");
    let mut classifier = Classifier::new(history, config, &triage.join("history"), Vec::new())?;
    let known = match known {
        Some(path) => known_positions(&read_known_bugs(path)?, &mut classifier)?,
        None => Vec::new(),
    };
    classifier.named = known.clone();
    // Per bucket, its findings as (variant size, name).
    let mut buckets: BTreeMap<BugClass, Vec<(u64, String)>> = BTreeMap::new();
    let mut csv = String::from("finding,correcting_commit,subject,known\n");
    for finding in saved_findings(&out.join("findings"))? {
        let class = classifier.classify(&finding)?;
        let (commit, subject) = describe(&class, history);
        let is_known = matches!(class, BugClass::Corrected { index, .. } if known.contains(&index));
        writeln!(
            csv,
            "{},{commit},\"{}\",{}",
            finding.name,
            subject.replace('"', "\"\""),
            if is_known { "yes" } else { "no" }
        )?;
        let size = std::fs::metadata(finding.dir.join("variant.c")).map_or(u64::MAX, |m| m.len());
        buckets.entry(class).or_default().push((size, finding.name));
    }
    std::fs::create_dir_all(&triage)?;
    let path = triage.join("by-correcting-commit.csv");
    std::fs::write(&path, csv).with_context(|| format!("cannot write {}", path.display()))?;
    let findings: usize = buckets.values().map(Vec::len).sum();
    let mut summary = format!(
        "{findings} findings bucketed by correcting commit into {} ({} program runs; {}):\n",
        buckets.len(),
        classifier.probes,
        path.display()
    );
    let mut to_reduce = Vec::new();
    for (class, mut members) in buckets {
        members.sort();
        let (commit, subject) = describe(&class, history);
        let known = matches!(class, BugClass::Corrected { index, .. } if known.contains(&index));
        if !known && class != BugClass::NotReproduced {
            to_reduce.push(members[0].1.clone());
        }
        writeln!(
            summary,
            "  {commit}{} {subject}: {} findings, smallest {}",
            if known { " (known)" } else { "" },
            members.len(),
            members[0].1
        )?;
    }
    Ok(Buckets { summary, to_reduce })
}

/// A bucket's commit (or what stands for it) and subject.
fn describe(class: &BugClass, history: &History) -> (String, String) {
    match class {
        BugClass::Corrected { index, candidates } => {
            let commit = &history.commits[*index];
            let subject = if *candidates > 1 {
                format!(
                    "{} (or one of the {} untestable commits before it)",
                    commit.subject,
                    candidates - 1
                )
            } else {
                commit.subject.clone()
            };
            (commit.hash.clone(), subject)
        }
        BugClass::Uncorrected { fingerprint } => ("uncorrected".into(), fingerprint.clone()),
        BugClass::NotReproduced => ("not-reproduced".into(), String::new()),
    }
}
