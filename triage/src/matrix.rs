//! The version matrix of a gcc or clang bug, as GCC's bugzilla asks for it: the reduced test
//! runs, with the bug's flags, under every installed version of the compiler's family (oldest
//! first, trunk last); the versions it shows under are "known to fail", the others "known to
//! work", and a bug that the newest version shows and an older one does not is a regression
//! since the first failing version after the last working one.

use crate::check::Check;
use crate::newest::{family, still_shows, StillShows};
use anyhow::Result;
use std::path::Path;

/// Runs `check`'s symptom on `test` under each program of `versions` (oldest first) of the
/// finding's family; none for families other than gcc and clang.
pub fn version_matrix(check: &Check, test: &Path, versions: &[String], scratch: &Path) -> Result<Vec<StillShows>> {
    let compiler = check.configuration.split_whitespace().next().unwrap_or("");
    if !matches!(family(compiler), "gcc" | "clang") {
        return Ok(Vec::new());
    }
    still_shows(check, test, versions, &scratch.join("matrix"))
}

/// The release a compiler's version line names: its first word of dot-separated numbers
/// (`gcc-12 (Debian 12.2.0-14) 12.2.0` -> `12.2.0`, `Debian clang version 23.1.4 (2)` ->
/// `23.1.4`), with ` (trunk)` for trunk builds.
pub fn release(version_line: &str) -> String {
    let number = version_line
        .split_whitespace()
        .find(|word| {
            word.contains('.')
                && word
                    .split('.')
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        })
        .unwrap_or(version_line);
    if version_line.contains("(experimental)") || version_line.contains("[trunk") {
        format!("{number} (trunk)")
    } else {
        number.to_string()
    }
}

/// The report's section: one line per version, then known to work, known to fail and the
/// regression verdict. `releases` gives each entry's release (see [`release`]).
pub fn describe(matrix: &[StillShows], releases: &[String]) -> String {
    if matrix.is_empty() {
        return "Not run: only gcc and clang bugs get a version matrix, and only reduced ones.".into();
    }
    let mut lines: Vec<String> = matrix
        .iter()
        .zip(releases)
        .map(|(entry, release)| {
            let verdict = if entry.shows { "fails" } else { "works" };
            format!("- {release}: {verdict} (`{}`)", entry.configuration)
        })
        .collect();
    let listed = |shows: bool| -> String {
        let chosen: Vec<&str> = matrix
            .iter()
            .zip(releases)
            .filter(|(entry, _)| entry.shows == shows)
            .map(|(_, release)| release.as_str())
            .collect();
        if chosen.is_empty() {
            "none".into()
        } else {
            chosen.join(", ")
        }
    };
    lines.push(String::new());
    lines.push(format!("Known to work: {}", listed(false)));
    lines.push(format!("Known to fail: {}", listed(true)));
    lines.push(regression(matrix, releases));
    lines.join("\n")
}

fn regression(matrix: &[StillShows], releases: &[String]) -> String {
    let newest_fails = matrix.last().is_some_and(|entry| entry.shows);
    let last_working = matrix.iter().rposition(|entry| !entry.shows);
    match (newest_fails, last_working) {
        (true, Some(working)) => format!(
            "Regression: yes, since {} (works in {}).",
            releases[working + 1],
            releases[working]
        ),
        (true, None) => "Regression: no, every installed version fails.".into(),
        (false, _) => match matrix.iter().rposition(|entry| entry.shows) {
            Some(failing) => format!(
                "Fixed: the newest version works; the last failing one is {}.",
                releases[failing]
            ),
            None => "No installed version shows it without the guard's flags.".into(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::wrong_output_check;

    fn entries(shows: &[bool]) -> Vec<StillShows> {
        shows
            .iter()
            .enumerate()
            .map(|(i, &shows)| StillShows {
                configuration: format!("gcc-{} -O2", 12 + i),
                shows,
            })
            .collect()
    }

    fn releases(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{}.1.0", 12 + i)).collect()
    }

    #[test]
    fn releases_are_the_version_numbers_of_the_lines() {
        assert_eq!(release("gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0"), "12.2.0");
        assert_eq!(
            release("gcc (Debian 20261020-1) 17.0.0 20261020 (experimental) [trunk r17-5409-g5a4f77eb6af]"),
            "17.0.0 (trunk)"
        );
        assert_eq!(release("Debian clang version 23.1.4 (2)"), "23.1.4");
        assert_eq!(release("unknown version"), "unknown version");
    }

    #[test]
    fn a_regression_dates_from_the_first_failure_after_the_last_success() {
        let text = describe(&entries(&[false, false, true, true]), &releases(4));
        assert!(text.contains("Known to work: 12.1.0, 13.1.0\n"), "{text}");
        assert!(text.contains("Known to fail: 14.1.0, 15.1.0\n"), "{text}");
        assert!(
            text.ends_with("Regression: yes, since 14.1.0 (works in 13.1.0)."),
            "{text}"
        );
        let text = describe(&entries(&[true, false, true]), &releases(3));
        assert!(
            text.ends_with("Regression: yes, since 14.1.0 (works in 13.1.0)."),
            "{text}"
        );
        let text = describe(&entries(&[true, true]), &releases(2));
        assert!(
            text.ends_with("Regression: no, every installed version fails."),
            "{text}"
        );
        let text = describe(&entries(&[true, false]), &releases(2));
        assert!(text.ends_with("the last failing one is 12.1.0."), "{text}");
    }

    /// A real program whose output changes with the compiler's version: against gcc-12's
    /// reference it "fails" from gcc 14 on (the unstable root's wrappers, `make deps`).
    #[test]
    fn the_matrix_runs_the_test_under_every_version_of_the_family() {
        let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/bin");
        let mut versions = vec!["gcc-12".to_string()];
        for name in ["gcc-12.5", "gcc-13", "gcc-14", "gcc-16", "gcc-trunk"] {
            let program = bin.join(name);
            assert!(program.is_file(), "{} is missing: run `make deps`", program.display());
            versions.push(program.canonicalize().unwrap().display().to_string());
        }
        let dir = tempfile::tempdir().unwrap();
        let test = dir.path().join("test.c");
        let text = "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", __GNUC__ >= 14); return 0; }\n";
        std::fs::write(&test, text).unwrap();
        let matrix = version_matrix(&wrong_output_check("gcc-12 -O2"), &test, &versions, dir.path()).unwrap();
        let shows: Vec<bool> = matrix.iter().map(|entry| entry.shows).collect();
        assert_eq!(shows, [false, false, false, true, true, true], "{matrix:?}");
        assert!(matrix[5].configuration.ends_with("gcc-trunk -O2"), "{matrix:?}");
        let releases: Vec<String> = versions
            .iter()
            .map(|program| release(&ccfuzz_mutators::compiler_version::exact_version(program)))
            .collect();
        let text = describe(&matrix, &releases);
        assert!(text.contains("Regression: yes, since 14."), "{text}");
        assert!(text.contains("Known to work: 12.2.0, 12.5.0, 13."), "{text}");
        let unmatched = version_matrix(&wrong_output_check("tcc"), &test, &versions, dir.path()).unwrap();
        assert!(unmatched.is_empty());
    }
}
