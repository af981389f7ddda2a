//! The raw finding as the campaign saves it (`finding.json` in a finding directory): the
//! interface between the fuzzer's objective and triage.

use anyhow::{Context, Result};
use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::seed::SeedId;
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingKind {
    Mismatch,
    Crash,
    Hang,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::Mismatch => "mismatch",
            FindingKind::Crash => "crash",
            FindingKind::Hang => "hang",
        }
    }
}

/// What `finding.json` holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// The configuration as written in the campaign configuration.
    pub configuration: String,
    pub compiler: String,
    /// The compiler's exact version when the finding was saved (see [`crate::version`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compiler_version: Option<String>,
    pub flags: Vec<String>,
    pub expected: String,
    pub actual: String,
    /// The compiler's crash message, for crashes.
    pub message: Option<String>,
    pub seed: SeedId,
    pub seed_origin: String,
    pub edits: Vec<Edit>,
    /// Identifies the symptom: findings with equal signatures are saved once.
    pub signature: String,
}

/// A finding directory as read back: its name, path and `finding.json`.
#[derive(Clone, Debug)]
pub struct SavedFinding {
    pub name: String,
    pub dir: PathBuf,
    pub finding: Finding,
}

impl SavedFinding {
    pub fn load(dir: &Path) -> Result<Self> {
        let path = dir.join("finding.json");
        let bytes = fs::read(&path).with_context(|| format!("cannot read {}", path.display()))?;
        let finding = serde_json::from_slice(&bytes).with_context(|| format!("bad {}", path.display()))?;
        Ok(SavedFinding {
            name: dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default(),
            dir: dir.to_path_buf(),
            finding,
        })
    }

    pub fn variant_text(&self) -> Result<String> {
        let path = self.dir.join("variant.c");
        fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    }
}

/// Every finding directory under `findings` (a campaign's `OUT/findings`), sorted by name;
/// staging directories of findings still being written are skipped.
pub fn saved_findings(findings: &Path) -> Result<Vec<SavedFinding>> {
    let mut found = Vec::new();
    let entries = match fs::read_dir(findings) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", findings.display())),
    };
    for entry in entries {
        let dir = entry?.path();
        let hidden = dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with('.'));
        if !hidden && dir.join("finding.json").is_file() {
            found.push(SavedFinding::load(&dir)?);
        }
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(found)
}
