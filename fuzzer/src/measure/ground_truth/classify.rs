//! Which bug a finding is, decided before any reduction: the commit that corrected its
//! program. A finding of a bug already named (a known correcting commit, or one this study
//! found earlier) is recognized by two runs of its program, at that commit and at the commit
//! before it, and skips the bisection; the others are bisected. A finding whose program still
//! fails at `--to` is a bug of its own class, named by the fingerprint of its unreduced symptom.

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
    /// Corrected at `commits[index]`; `candidates` > 1 when unbuildable commits before it
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

/// The reference's outcome of a program and the program's path in the scratch directory.
struct Program {
    source: PathBuf,
    reference: ConfigOutcome,
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
            return Ok(Probe::Unbuildable);
        };
        let outcome = self.run(&CompilerConfig::new(build.command_line()), &program.source)?;
        Ok(if outcome == program.reference {
            Probe::Passes
        } else {
            Probe::Fails
        })
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
        let program = Program { source, reference };
        if self.probe(&program, 0)? != Probe::Fails {
            return Ok(None);
        }
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
                Probe::Unbuildable => {}
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
