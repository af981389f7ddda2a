//! Known bugs: bugs a campaign (or a study) has no use finding again, recognized cheaply,
//! counted apart and never reduced. The list has one bug a line, given by a reduced test (a
//! `.c` file, relative to the list) or by its correcting commit in the tested compiler's
//! history (any revision git resolves, for triage with a history); `#` starts a comment.
//! Without a history, a finding is a known bug's when that bug's reduced test shows the
//! finding's symptom under the finding's configuration with the same cheap fingerprint (the
//! crash signature, the bisected pass or flag, the output difference).

use crate::check::{run_script, Check, RunOptions};
use crate::fingerprint::fingerprint;
use anyhow::{Context, Result};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One line of the list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KnownBug {
    Commit(String),
    ReducedTest(PathBuf),
}

/// Reads the list at `path`.
pub fn read_known_bugs(path: &Path) -> Result<Vec<KnownBug>> {
    let text =
        fs::read_to_string(path).with_context(|| format!("cannot read the known-bugs list {}", path.display()))?;
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

/// The reduced tests of a known-bugs list, with their cheap fingerprints under each bucket's
/// check met so far (computed once per bucket, when its first finding needs them).
#[derive(Debug, Default)]
pub struct KnownTests {
    tests: Vec<PathBuf>,
    /// By configuration and symptom (a crash's markers included, which the check's script
    /// looks for): each test's fingerprint, `None` when the test does not show the symptom.
    fingerprints: HashMap<(String, String), Vec<Option<String>>>,
}

impl KnownTests {
    /// The reduced tests of `list`; its correcting commits need a history and are left out
    /// (with a warning).
    pub fn from_list(list: &[KnownBug]) -> Result<Self> {
        let mut tests = Vec::new();
        for bug in list {
            match bug {
                KnownBug::ReducedTest(path) if path.is_file() => tests.push(path.clone()),
                KnownBug::ReducedTest(path) => anyhow::bail!("known bug {}: no such file", path.display()),
                KnownBug::Commit(rev) => {
                    log::warn!("known bug {rev}: a correcting commit needs --history; left out")
                }
            }
        }
        Ok(KnownTests {
            tests,
            fingerprints: HashMap::new(),
        })
    }

    pub fn is_empty(&self) -> bool {
        self.tests.is_empty()
    }

    /// The known bug (its reduced test) whose fingerprint under `check` is `cheap`; tests are
    /// run in `scratch`.
    pub fn matching(&mut self, check: &Check, cheap: &str, scratch: &Path) -> Option<PathBuf> {
        let bucket = (check.configuration.clone(), format!("{:?}", check.symptom));
        let tests = &self.tests;
        let fingerprints = self
            .fingerprints
            .entry(bucket)
            .or_insert_with(|| tests.iter().map(|test| fingerprint_of(check, test, scratch)).collect());
        tests
            .iter()
            .zip(fingerprints.iter())
            .find(|(_, fingerprint)| fingerprint.as_deref() == Some(cheap))
            .map(|(test, _)| test.clone())
    }
}

/// The cheap fingerprint of a known bug's reduced test under a bucket's check, if the test
/// shows the check's symptom. A test that cannot be checked (its script fails) matches
/// nothing, with a warning: it must not hold up the findings of its bucket.
fn fingerprint_of(check: &Check, test: &Path, scratch: &Path) -> Option<String> {
    let dir = scratch.join("known");
    let result = checked_fingerprint(check, test, &dir);
    let _ = fs::remove_dir_all(&dir);
    let result = result.unwrap_or_else(|e| {
        log::warn!(
            "known bug {}: cannot be checked, matches nothing: {e:#}",
            test.display()
        );
        None
    });
    log::info!(
        "known bug {} under {}: {}",
        test.display(),
        check.configuration,
        result.as_deref().unwrap_or("does not show this symptom")
    );
    result
}

fn checked_fingerprint(check: &Check, test: &Path, dir: &Path) -> Result<Option<String>> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir.join("start")).with_context(|| format!("cannot create {}", dir.display()))?;
    let script = check.write(dir)?;
    let file = dir.join("start").join("test.c");
    fs::copy(test, &file).with_context(|| format!("cannot copy {}", test.display()))?;
    let symptom_only = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    if !run_script(&script, &file, &symptom_only)? {
        return Ok(None);
    }
    let cheap = dir.join("cheap");
    fs::create_dir_all(&cheap)?;
    Ok(Some(fingerprint(check, &script, &file, &cheap)?))
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

    #[test]
    fn a_missing_test_is_an_error_and_commits_are_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let test = dir.path().join("t.c");
        fs::write(&test, "int main(void) { return 0; }\n").unwrap();
        let known =
            KnownTests::from_list(&[KnownBug::Commit("abc".into()), KnownBug::ReducedTest(test.clone())]).unwrap();
        assert_eq!(known.tests, [test]);
        assert!(KnownTests::from_list(&[KnownBug::ReducedTest(dir.path().join("gone.c"))]).is_err());
        assert!(KnownTests::from_list(&[KnownBug::Commit("abc".into())])
            .unwrap()
            .is_empty());
    }
}
