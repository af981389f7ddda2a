//! gcov coverage of a compiler built with `--coverage` (`--enable-coverage` for GCC).
//!
//! The compiler runs with `GCOV_PREFIX` pointing into the execution's private directory, so its
//! `.gcda` counters land there (under their absolute build path) and concurrent compilations
//! never merge into one file. After the compilation the `.gcno` notes of the build tree are
//! linked beside them and `gcov -b -j -t` reports lines and branches as JSON.

use crate::counters::slot;
use anyhow::{bail, Context, Result};
use libafl::observers::MapObserver;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment that sends a coverage-built compiler's counters under `prefix`.
pub fn gcov_env(prefix: &Path) -> Vec<(String, String)> {
    vec![("GCOV_PREFIX".into(), prefix.display().to_string())]
}

/// Line and branch counts of one compilation, keyed `directory/file:line` (and `…#branch`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcovCoverage {
    pub lines: BTreeMap<String, u64>,
    pub branches: BTreeMap<String, u64>,
}

impl GcovCoverage {
    pub fn lines_covered(&self) -> usize {
        self.lines.values().filter(|&&c| c > 0).count()
    }

    pub fn branches_covered(&self) -> usize {
        self.branches.values().filter(|&&c| c > 0).count()
    }

    /// Writes executed lines into a (cleared) hit-count map, counts saturated at 255.
    pub fn fill_map<O: MapObserver<Entry = u8>>(&self, map: &mut O) {
        let len = map.len();
        for (line, &count) in self.lines.iter().filter(|(_, &c)| c > 0) {
            let index = slot(line, len);
            let sum = u64::from(map.get(index)) + count;
            map.set(index, sum.min(255) as u8);
        }
    }

    fn merge(&mut self, report: GcovReport) {
        let dir = report.current_working_directory;
        for file in report.files {
            let path = if file.file.starts_with('/') {
                file.file
            } else {
                format!("{dir}/{}", file.file)
            };
            for line in file.lines {
                let key = format!("{path}:{}", line.line_number);
                *self.lines.entry(key.clone()).or_default() += line.count;
                for (index, branch) in line.branches.iter().enumerate() {
                    *self.branches.entry(format!("{key}#{index}")).or_default() += branch.count;
                }
            }
        }
    }
}

/// One JSON document of `gcov -j -t` (the fields used here).
#[derive(Deserialize)]
pub struct GcovReport {
    #[serde(default)]
    pub current_working_directory: String,
    pub files: Vec<GcovFile>,
}

#[derive(Deserialize)]
pub struct GcovFile {
    pub file: String,
    pub lines: Vec<GcovLine>,
}

#[derive(Deserialize)]
pub struct GcovLine {
    pub line_number: u32,
    pub count: u64,
    #[serde(default)]
    pub branches: Vec<GcovBranch>,
}

#[derive(Deserialize)]
pub struct GcovBranch {
    pub count: u64,
}

fn gcda_files(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))? {
        let path = entry?.path();
        if path.is_dir() {
            gcda_files(&path, found)?;
        } else if path.extension().is_some_and(|e| e == "gcda") {
            found.push(path);
        }
    }
    Ok(())
}

/// Reads the counters a compilation left under `prefix` with `gcov` (the gcov of the gcc that
/// built the compiler), then removes them. No `.gcda` at all is an error: the compiler is not a
/// coverage build, or `GCOV_PREFIX` did not reach it.
pub fn take_gcov(prefix: &Path, gcov: &str) -> Result<GcovCoverage> {
    let mut files = Vec::new();
    if prefix.is_dir() {
        gcda_files(prefix, &mut files)?;
    }
    if files.is_empty() {
        bail!(
            "no .gcda file under {}: is the compiler built with --coverage?",
            prefix.display()
        );
    }
    let mut by_dir: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    for gcda in &files {
        let relative = gcda.strip_prefix(prefix).expect("found under the prefix");
        let notes = Path::new("/").join(relative).with_extension("gcno");
        let link = gcda.with_extension("gcno");
        if !link.exists() {
            std::os::unix::fs::symlink(&notes, &link)
                .with_context(|| format!("cannot link {} to {}", link.display(), notes.display()))?;
        }
        let dir = gcda.parent().expect("a file has a directory").to_path_buf();
        let name = gcda
            .file_name()
            .expect("a file has a name")
            .to_string_lossy()
            .into_owned();
        by_dir.entry(dir).or_default().push(name);
    }
    let mut coverage = GcovCoverage::default();
    for (dir, names) in by_dir {
        let out = Command::new(gcov)
            .args(["-b", "-j", "-t"])
            .args(&names)
            .current_dir(&dir)
            .output()
            .with_context(|| format!("cannot run {gcov}"))?;
        if !out.status.success() {
            bail!(
                "{gcov} failed in {}: {}",
                dir.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        // One JSON document per line, one per .gcda.
        for line in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let report: GcovReport = serde_json::from_slice(line).context("gcov printed malformed JSON")?;
            coverage.merge(report);
        }
    }
    std::fs::remove_dir_all(prefix).with_context(|| format!("cannot remove {}", prefix.display()))?;
    Ok(coverage)
}
