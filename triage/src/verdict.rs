//! What triage concluded about a finding: its verdict and the figures of its minimization,
//! as `result.json` in its work directory (shared by the pipeline that writes it and the
//! reports that read it).

use crate::check::Check;
use crate::finding::FindingKind;
use crate::newest::StillShows;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What triage concluded about one finding.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Reproduced on every run, minimized and fingerprinted.
    Reduced,
    /// The symptom showed on `shown` of `runs` runs: not reduced.
    Flaky { shown: u32, runs: u32 },
    /// The symptom shows, but the UB guard rejects the program: not a compiler bug.
    RejectedByGuard,
    /// The symptom does not show any more.
    NotReproduced,
    /// Shows the symptom with the cheap fingerprint of the reduced finding `of`, in its bucket,
    /// or its Orange program minimized to `of`'s: not reduced again.
    Duplicate { of: String },
    /// Shows the symptom with the cheap fingerprint of a known bug's reduced test `bug` (see
    /// [`crate::known`]): counted apart, not reduced.
    Known { bug: PathBuf },
}

/// The result of triaging one finding (`result.json` in its work directory).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Triaged {
    pub finding: String,
    pub kind: FindingKind,
    pub configuration: String,
    pub verdict: Verdict,
    pub check: Check,
    /// Edits of the finding, and of the minimized edit list.
    pub edits_before: usize,
    pub edits_after: usize,
    /// Non-blank lines of the variant, and of the reduced program.
    pub lines_before: usize,
    pub lines_after: usize,
    pub fingerprint: Option<String>,
    /// The fingerprint of the unreduced variant, what bucket members are compared by.
    pub cheap_fingerprint: Option<String>,
    /// Why the UB guard rejected the program, for `RejectedByGuard`.
    pub reason: Option<String>,
    /// The program that shows the symptom: reduced for `Reduced` findings, as found otherwise.
    pub test: PathBuf,
    pub seconds: f64,
    /// Orange's own minimization, for a finding that is an unedited Orange program.
    pub orange: Option<OrangeMinimization>,
    /// The reduced test under the newest installed compilers of its family.
    pub newest: Vec<StillShows>,
    /// The reduced test under every installed version of its family, oldest first (gcc and
    /// clang bugs; see [`crate::matrix`]).
    #[serde(default)]
    pub matrix: Vec<StillShows>,
}

impl Triaged {
    /// The reduced finding this one is, or is a duplicate of.
    pub fn reduced_finding(&self) -> &str {
        match &self.verdict {
            Verdict::Duplicate { of } => of,
            _ => &self.finding,
        }
    }
}

/// What Orange's minimizer made of a finding's program, before text reduction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OrangeMinimization {
    /// Non-blank lines, operators and assignments of something other than a constant, of the
    /// program rendered again from its structure and of the minimized one.
    pub lines_before: usize,
    pub lines_after: usize,
    pub operators_before: usize,
    pub operators_after: usize,
    pub expressions_before: usize,
    pub expressions_after: usize,
    /// Runs of the interestingness script.
    pub tests: usize,
    pub seconds: f64,
    /// The minimized program's text (empty in results written before it was kept).
    #[serde(default)]
    pub program: String,
}
