//! The known-bugs list (`ccfuzz_triage::known`) on a history: each bug's correcting commit,
//! given or bisected once from its reduced test, so that a finding of it costs two program
//! runs instead of a bisection.

use super::bisect::Bisection;
use super::classify::Classifier;
use anyhow::{Context, Result};
use ccfuzz_triage::known::KnownBug;

/// The positions in the classifier's history of the known bugs' correcting commits. Entries
/// outside the history (a commit after `--to`, a test not corrected up to it) are reported
/// and left out.
pub fn known_positions(known: &[KnownBug], classifier: &mut Classifier) -> Result<Vec<usize>> {
    let mut positions = Vec::new();
    for bug in known {
        let position = match bug {
            KnownBug::Commit(rev) => classifier.history.position(rev),
            KnownBug::ReducedTest(path) => {
                let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
                match classifier.correcting_commit(&text)? {
                    Some(Bisection::Corrected { first_passing, .. }) => Some(first_passing),
                    _ => None,
                }
            }
        };
        match position {
            Some(position) if !positions.contains(&position) => positions.push(position),
            Some(_) => {}
            None => log::warn!("known bug {bug:?} has no correcting commit in the history: left out"),
        }
    }
    Ok(positions)
}
