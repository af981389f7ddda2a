//! The known-bugs list: bugs a study (or a hunt) should recognize cheaply and count apart
//! instead of bisecting and reducing them again. One bug a line, given by its correcting
//! commit (any revision git resolves) or by a reduced test (a `.c` file, relative to the list),
//! whose correcting commit is bisected once; `#` starts a comment.

use super::bisect::Bisection;
use super::classify::Classifier;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// One line of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KnownBug {
    Commit(String),
    ReducedTest(PathBuf),
}

/// Reads the list at `path`.
pub fn read_known_bugs(path: &Path) -> Result<Vec<KnownBug>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(parse_known_bugs(&text, path.parent().unwrap_or(Path::new("."))))
}

/// The entries of a list's text; reduced tests are resolved against `dir`.
pub fn parse_known_bugs(text: &str, dir: &Path) -> Vec<KnownBug> {
    text.lines()
        .filter_map(|line| line.split('#').next()?.split_whitespace().next())
        .map(|word| {
            if word.ends_with(".c") {
                KnownBug::ReducedTest(dir.join(word))
            } else {
                KnownBug::Commit(word.to_string())
            }
        })
        .collect()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_name_commits_or_reduced_tests() {
        let text = "# known\n65c7f19d  Fix stored type of arguments\n\nbugs/dead-or/test.c # reduced\n  c771cb52\n";
        assert_eq!(
            parse_known_bugs(text, Path::new("/lists")),
            [
                KnownBug::Commit("65c7f19d".into()),
                KnownBug::ReducedTest(PathBuf::from("/lists/bugs/dead-or/test.c")),
                KnownBug::Commit("c771cb52".into()),
            ]
        );
    }
}
