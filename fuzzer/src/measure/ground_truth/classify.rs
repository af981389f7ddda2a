//! Which bug a finding is, decided before any reduction: the commit that corrected its
//! program, the first at which the program passes. A commit where it fails in another way
//! than at `--from` (a compiler crash, a hang, a rejection, wrong code) shows another bug,
//! which hides the program's own: the bisection skips it, as a commit that does not build. A
//! program whose crash is corrected may be miscompiled by a bug that later commits bring and
//! correct, or rejected by a regression for a while before its own bug is corrected.
//!
//! A finding of a bug already named (a known correcting commit, or one this study found
//! earlier) is recognized by two runs of its program, at that commit and at the commit before
//! it, and skips the bisection; the others are bisected. A finding whose program still fails
//! at `--to` is a bug of its own class, named by the fingerprint of its unreduced symptom.

use super::bisect::{bisect, Bisection, Probe};
use super::history::History;
use crate::config::{CompilerConfig, Config};
use crate::exec::compile::{compile_and_run, BinaryRuns};
use crate::exec::instrument::Additions;
use anyhow::{Context, Result};
use ccfuzz_observers::ConfigOutcome;
use ccfuzz_triage::check::Misbehaviour;
use ccfuzz_triage::finding::{FindingKind, SavedFinding};
use ccfuzz_triage::fingerprint::stable_prefix;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// `program` compiled by `compiler` into `program.bin` (removed after) and run once, with the
/// configuration's compile timeout and `run_timeout`.
pub fn compile_and_run_once(
    compiler: &CompilerConfig,
    program: &Path,
    config: &Config,
    run_timeout: std::time::Duration,
) -> Result<ConfigOutcome> {
    let binary = program.with_extension("bin");
    let _ = std::fs::remove_file(&binary);
    let (outcome, _) = compile_and_run(
        compiler,
        program,
        &binary,
        &Additions::default(),
        config.compile_timeout(),
        run_timeout,
        &mut BinaryRuns::for_binaries(1),
    )?;
    let _ = std::fs::remove_file(&binary);
    Ok(outcome)
}

/// What a finding turned out to be.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum BugClass {
    /// Corrected at `commits[index]`; `candidates` > 1 when untestable commits before it
    /// may have corrected it instead.
    Corrected { index: usize, candidates: usize },
    /// Still failing at `--to`: the symptom's fingerprint.
    Uncorrected { fingerprint: String },
    /// Its program passes at `--from` when run again, or the reference does not run it: no bug.
    NotReproduced,
}

/// Probes findings' programs along a history, memoizing nothing but the builds (a program's
/// runs are cheap next to a build).
pub struct Classifier<'a> {
    pub history: &'a History,
    config: &'a Config,
    scratch: PathBuf,
    /// Correcting commits (positions) to try before bisecting, most useful first.
    pub named: Vec<usize>,
    /// Program runs made, for the report.
    pub probes: usize,
}

/// How a program fails under one compiler, as far as telling bugs apart along a history goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Symptom {
    /// It prints what the reference prints.
    Passes,
    /// It compiles and its binary misbehaves: other output, exit status, a signal or a hang.
    WrongCode,
    /// The compiler rejects it with an ordinary error.
    Rejected,
    /// The compiler crashes.
    CompilerCrash,
    /// The compiler does not finish.
    CompilerHang,
}

impl Symptom {
    pub fn of(outcome: &ConfigOutcome, reference: &ConfigOutcome) -> Symptom {
        match outcome {
            _ if outcome == reference => Symptom::Passes,
            ConfigOutcome::Ran { .. } => Symptom::WrongCode,
            ConfigOutcome::Rejected { .. } => Symptom::Rejected,
            ConfigOutcome::Crashed { .. } => Symptom::CompilerCrash,
            ConfigOutcome::Hung => Symptom::CompilerHang,
        }
    }

    /// The bisection's view of a commit where the program shows `self`, for a program whose
    /// own bug shows as `own`: another failure tells nothing of its own bug.
    pub fn probe_for(self, own: Symptom) -> Probe {
        match self {
            Symptom::Passes => Probe::Passes,
            _ if self == own => Probe::Fails,
            _ => Probe::Untestable,
        }
    }
}

/// A program in the scratch directory, the reference's outcome of it and its symptom at
/// `--from`.
struct Program {
    source: PathBuf,
    reference: ConfigOutcome,
    own: Symptom,
}

impl<'a> Classifier<'a> {
    pub fn new(history: &'a History, config: &'a Config, scratch: &Path, named: Vec<usize>) -> Result<Self> {
        std::fs::create_dir_all(scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
        Ok(Classifier {
            history,
            config,
            // Compilers run inside it: a relative path would be resolved twice.
            scratch: scratch.canonicalize()?,
            named,
            probes: 0,
        })
    }

    fn run(&mut self, compiler: &CompilerConfig, program: &Path) -> Result<ConfigOutcome> {
        self.probes += 1;
        compile_and_run_once(compiler, program, self.config, self.config.run_timeout())
    }

    fn probe(&mut self, program: &Program, index: usize) -> Result<Probe> {
        let Some(build) = self.history.build(index)? else {
            return Ok(Probe::Untestable);
        };
        let outcome = self.run(&CompilerConfig::new(build.command_line()), &program.source)?;
        Ok(Symptom::of(&outcome, &program.reference).probe_for(program.own))
    }

    /// The bug a finding belongs to.
    pub fn classify(&mut self, finding: &SavedFinding) -> Result<BugClass> {
        Ok(match self.correcting_commit(&finding.variant_text()?)? {
            None => BugClass::NotReproduced,
            Some(Bisection::Corrected {
                first_passing,
                last_failing,
            }) => BugClass::Corrected {
                index: first_passing,
                candidates: first_passing - last_failing,
            },
            Some(Bisection::Uncorrected) => BugClass::Uncorrected {
                fingerprint: symptom_fingerprint(finding),
            },
        })
    }

    /// Where a program was corrected; `None` when it passes at `--from` or the reference
    /// does not run it. A commit found by bisection joins the named ones.
    pub fn correcting_commit(&mut self, text: &str) -> Result<Option<Bisection>> {
        let source = self.scratch.join("program.c");
        std::fs::write(&source, text)?;
        let reference_compiler = self.config.reference.clone();
        let reference = self.run(&reference_compiler, &source)?;
        if !matches!(reference, ConfigOutcome::Ran { .. }) {
            return Ok(None);
        }
        let Some(from) = self.history.build(0)? else {
            anyhow::bail!("the compiler at --from does not build");
        };
        let outcome = self.run(&CompilerConfig::new(from.command_line()), &source)?;
        let own = Symptom::of(&outcome, &reference);
        if own == Symptom::Passes {
            return Ok(None);
        }
        let program = Program { source, reference, own };
        let mut memo: HashMap<usize, Probe> = HashMap::from([(0, Probe::Fails)]);
        for position in self.named.clone() {
            if let Some(last_failing) = self.corrected_at(&program, position, &mut memo)? {
                return Ok(Some(Bisection::Corrected {
                    first_passing: position,
                    last_failing,
                }));
            }
        }
        let bisection = bisect(self.history.commits.len(), |index| {
            if let Some(known) = memo.get(&index) {
                return Ok(*known);
            }
            let probe = self.probe(&program, index)?;
            memo.insert(index, probe);
            Ok(probe)
        })?;
        if let Bisection::Corrected { first_passing, .. } = bisection {
            self.named.push(first_passing);
        }
        Ok(Some(bisection))
    }

    /// Whether the program passes at `position` and fails at the newest buildable commit
    /// before it, which is returned.
    fn corrected_at(
        &mut self,
        program: &Program,
        position: usize,
        memo: &mut HashMap<usize, Probe>,
    ) -> Result<Option<usize>> {
        let mut probe = |classifier: &mut Self, index: usize| -> Result<Probe> {
            if let Some(known) = memo.get(&index) {
                return Ok(*known);
            }
            let probe = classifier.probe(program, index)?;
            memo.insert(index, probe);
            Ok(probe)
        };
        if position == 0 || probe(self, position)? != Probe::Passes {
            return Ok(None);
        }
        for before in (0..position).rev() {
            match probe(self, before)? {
                Probe::Fails => return Ok(Some(before)),
                Probe::Passes => return Ok(None),
                Probe::Untestable => {}
            }
        }
        Ok(None)
    }
}

/// A message with every path cut to its file name: a compiler that names the program it gave up
/// on (pcc) names the run's own scratch directory, which must not tell two crashes apart.
fn without_directories(message: &str) -> String {
    message
        .split(' ')
        .map(|word| word.rsplit_once('/').map_or(word, |(_, file)| file))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fingerprint of an unreduced finding, as triage's cheap one: its kind and configuration
/// and the symptom without what varies between programs.
pub fn symptom_fingerprint(finding: &SavedFinding) -> String {
    let f = &finding.finding;
    let symptom = match f.kind {
        FindingKind::Mismatch => Misbehaviour::from_description(&f.expected, &f.actual).describe(),
        FindingKind::Crash => {
            stable_prefix(&without_directories(f.message.as_deref().unwrap_or("compiler crashed"))).to_string()
        }
        FindingKind::Hang => "compiler hang".to_string(),
    };
    format!("{}: {symptom}", f.kind.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_bug_on_the_way_neither_moves_the_fix_nor_hides_it() {
        // Commit 0 crashes the compiler; commit `fix` corrects the crash; commits `from..to`
        // fail in another way (another bug: wrong code after the fix, or a rejection before
        // it). Wherever the other bug lies, the bisection names `fix`, or the first commit after
        // the other bug's when they cover it, with them as candidates.
        let n = 30;
        for fix in 1..n - 1 {
            for from in 1..n - 1 {
                for to in from + 1..n {
                    let symptom = |i: usize| match i {
                        _ if (from..to).contains(&i) && i < fix => Symptom::Rejected,
                        _ if (from..to).contains(&i) => Symptom::WrongCode,
                        _ if i < fix => Symptom::CompilerCrash,
                        _ => Symptom::Passes,
                    };
                    let found = bisect(n, |i| Ok(symptom(i).probe_for(symptom(0)))).unwrap();
                    let testable = |i: &usize| !(from..to).contains(i);
                    let expected = match (fix..n).find(testable) {
                        None => Bisection::Uncorrected,
                        Some(first_passing) => Bisection::Corrected {
                            first_passing,
                            last_failing: (0..fix).rev().find(testable).unwrap(),
                        },
                    };
                    assert_eq!(found, expected, "fix {fix}, other bug {from}..{to}");
                }
            }
        }
    }

    #[test]
    fn symptoms_tell_the_compilers_failures_from_the_binarys() {
        let ran = |stdout: &[u8]| ConfigOutcome::Ran {
            run: ccfuzz_observers::RunResult::exited(0, stdout.to_vec()),
        };
        let reference = ran(b"1\n");
        assert_eq!(Symptom::of(&ran(b"1\n"), &reference), Symptom::Passes);
        assert_eq!(Symptom::of(&ran(b"2\n"), &reference), Symptom::WrongCode);
        let crash = ConfigOutcome::Crashed {
            message: "internal compiler error".into(),
        };
        assert_eq!(Symptom::of(&crash, &reference), Symptom::CompilerCrash);
        assert_eq!(Symptom::of(&ConfigOutcome::Hung, &reference), Symptom::CompilerHang);
        let rejected = ConfigOutcome::Rejected {
            message: "error".into(),
        };
        assert_eq!(Symptom::of(&rejected, &reference), Symptom::Rejected);
        assert_eq!(Symptom::CompilerCrash.probe_for(Symptom::CompilerCrash), Probe::Fails);
        assert_eq!(Symptom::Passes.probe_for(Symptom::CompilerCrash), Probe::Passes);
        assert_eq!(Symptom::WrongCode.probe_for(Symptom::CompilerCrash), Probe::Untestable);
    }

    #[test]
    fn a_crash_in_two_runs_scratch_directories_is_one_symptom() {
        let crash = |dir: &str| {
            stable_prefix(&without_directories(&format!(
                "internal compiler error: /dev/shm/ccfuzz-{dir}/client-1/exec/variant.c, line 518"
            )))
            .to_string()
        };
        assert_eq!(crash("ad465c4a48d7dbcc"), crash("fb0f40cce183b9f3"));
        assert_eq!(crash("ad465c4a48d7dbcc"), "internal compiler error: variant.c, line");
    }
}
