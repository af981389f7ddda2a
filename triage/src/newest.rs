//! Is it still a bug? A reduced finding is compiled again, with the same flags, by the newest
//! installed compilers of its family (clang 22 and clang-19 for a clang bug; a current TinyCC
//! build for a tcc bug, when one is named), and the symptom is checked without the guard (the
//! guard already passed on this program).

use crate::check::{run_script, Check, RunOptions};
use anyhow::Result;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Whether the symptom shows with one newer compiler.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct StillShows {
    /// The configuration with the compiler replaced.
    pub configuration: String,
    pub shows: bool,
}

/// A compiler's family: its file name without directories and version (`/x/clang-22` and
/// `clang-19` are `clang`, `gcc-12`, `gcc-12.5` and `gcc-trunk` are `gcc`).
pub fn family(program: &str) -> &str {
    let name = program.rsplit('/').next().unwrap_or(program);
    let name = name.strip_suffix("-trunk").unwrap_or(name);
    name.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.' || c == '-')
}

/// Runs `check`'s symptom on `test` with each compiler of `newest` that is of the finding's
/// family in place of its own.
pub fn still_shows(check: &Check, test: &Path, newest: &[String], scratch: &Path) -> Result<Vec<StillShows>> {
    let mut words = check.configuration.split_whitespace();
    let compiler = words.next().unwrap_or("");
    let flags: Vec<&str> = words.collect();
    let mut results = Vec::new();
    for program in newest.iter().filter(|p| family(p) == family(compiler)) {
        let configuration = std::iter::once(program.as_str())
            .chain(flags.iter().copied())
            .collect::<Vec<_>>()
            .join(" ");
        let newer = Check {
            configuration: configuration.clone(),
            ..check.clone()
        };
        let dir = scratch.join(format!("newest-{}", results.len()));
        std::fs::create_dir_all(&dir)?;
        let script = newer.write(&dir)?;
        let copy = dir.join("test.c");
        std::fs::copy(test, &copy)?;
        let symptom_only = RunOptions {
            without_guard: true,
            ..RunOptions::default()
        };
        let shows = run_script(&script, &copy, &symptom_only)?;
        results.push(StillShows { configuration, shows });
    }
    Ok(results)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_ignore_folders_and_versions() {
        assert_eq!(family("/opt/ccfuzz/build/bin/clang-22"), "clang");
        assert_eq!(family("clang-19"), "clang");
        assert_eq!(family("clang"), "clang");
        assert_eq!(family("gcc-12"), "gcc");
        assert_eq!(family("/x/build/bin/gcc-trunk"), "gcc");
        assert_eq!(family("/x/build/bin/gcc-12.5"), "gcc");
        assert_eq!(family("/opt/tinycc/tcc"), "tcc");
        assert_eq!(family("pcc"), "pcc");
    }
}
