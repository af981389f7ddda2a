//! The correcting commit of a failing program: the first commit after `--from` at which it
//! passes, found by bisection over the first-parent history. A commit that tells nothing (it
//! does not build, or another bug hides the program's own) is skipped as `git bisect skip`
//! does: the search tests its nearest testable neighbour, and when only skipped commits
//! separate the last failing commit from the first passing one, the first passing one is
//! named and the others are kept as its candidates.

use anyhow::Result;
use std::collections::BTreeSet;

/// What a program does under the compiler of one commit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Probe {
    /// The program prints what the reference prints.
    Passes,
    /// It does not (wrong output, a crash, a rejection).
    Fails,
    /// The commit tells nothing: it does not build, or the program fails there in another way.
    Untestable,
}

/// The result of one bisection over commits `0..n`, where commit 0 is known to fail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bisection {
    /// The first passing commit, and the newest commit known to fail before it: every commit
    /// strictly between them was untestable, so each of them may be the correcting one too.
    Corrected { first_passing: usize, last_failing: usize },
    /// The program fails at the newest commit that builds.
    Uncorrected,
}

impl Bisection {
    /// The commits that may have corrected it (more than one when commits were skipped).
    pub fn candidates(&self) -> usize {
        match self {
            Bisection::Corrected {
                first_passing,
                last_failing,
            } => first_passing - last_failing,
            Bisection::Uncorrected => 0,
        }
    }
}

/// Bisects commits `0..n` (commit 0 fails) with `probe`, assuming a program stays corrected
/// once it passes.
pub fn bisect(n: usize, mut probe: impl FnMut(usize) -> Result<Probe>) -> Result<Bisection> {
    // The newest testable commit is the upper end; when it fails, nothing corrected it.
    let mut high = None;
    for index in (1..n).rev() {
        match probe(index)? {
            Probe::Passes => {
                high = Some(index);
                break;
            }
            Probe::Fails => return Ok(Bisection::Uncorrected),
            Probe::Untestable => {}
        }
    }
    let Some(mut high) = high else {
        return Ok(Bisection::Uncorrected);
    };
    let mut low = 0;
    let mut skipped = BTreeSet::new();
    loop {
        let middle = (low + high) / 2;
        // The untested commit between the ends nearest the middle, the older one on a tie.
        let next = (0..high - low)
            .flat_map(|distance| [middle.checked_sub(distance), Some(middle + distance)])
            .flatten()
            .find(|&i| i > low && i < high && !skipped.contains(&i));
        let Some(next) = next else {
            return Ok(Bisection::Corrected {
                first_passing: high,
                last_failing: low,
            });
        };
        match probe(next)? {
            Probe::Passes => high = next,
            Probe::Fails => low = next,
            Probe::Untestable => {
                skipped.insert(next);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bisects a history of `n` commits corrected at `fix`, with `unbuildable` commits, and
    /// counts the probes.
    fn run(n: usize, fix: Option<usize>, unbuildable: &[usize]) -> (Bisection, usize) {
        let mut probes = 0;
        let result = bisect(n, |i| {
            probes += 1;
            Ok(if unbuildable.contains(&i) {
                Probe::Untestable
            } else if fix.is_some_and(|f| i >= f) {
                Probe::Passes
            } else {
                Probe::Fails
            })
        })
        .unwrap();
        (result, probes)
    }

    #[test]
    fn every_correcting_commit_is_found_in_logarithmic_probes() {
        for n in [2, 3, 10, 1166] {
            for fix in 1..n {
                let (result, probes) = run(n, Some(fix), &[]);
                assert_eq!(
                    result,
                    Bisection::Corrected {
                        first_passing: fix,
                        last_failing: fix - 1
                    },
                    "n={n} fix={fix}"
                );
                assert!(
                    probes <= 2 + (n as f64).log2().ceil() as usize,
                    "n={n} fix={fix}: {probes}"
                );
            }
        }
    }

    #[test]
    fn a_program_failing_at_the_newest_buildable_commit_is_uncorrected() {
        assert_eq!(run(10, None, &[]).0, Bisection::Uncorrected);
        // The newest commit does not build and the one before it fails.
        assert_eq!(run(10, Some(9), &[9]).0, Bisection::Uncorrected);
        assert_eq!(run(1, None, &[]).0, Bisection::Uncorrected);
    }

    #[test]
    fn unbuildable_commits_are_skipped_and_widen_the_candidates() {
        // The fix at 6 with 3..=5 unbuildable: the search meets them and steps around.
        let (result, _) = run(20, Some(6), &[3, 4, 5, 10]);
        assert_eq!(
            result,
            Bisection::Corrected {
                first_passing: 6,
                last_failing: 2
            }
        );
        assert_eq!(result.candidates(), 4);
        // The fix lands on an unbuildable commit: the next buildable one is named.
        let (result, _) = run(20, Some(7), &[7]);
        assert_eq!(
            result,
            Bisection::Corrected {
                first_passing: 8,
                last_failing: 6
            }
        );
    }
}
