//! A compiler's exact version as reports record it: the first line of its `--version` (`-v`
//! for tcc), asked once per program and process. Debian's compilers name their package
//! revision there (`gcc (Debian 20261020-1) 17.0.0 20261020 (experimental)`), which is what a
//! bug report upstream needs, and what tells two builds of the unstable root apart.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// The first version line of `program`, or "unknown version" when it prints none.
pub fn exact_version(program: &str) -> String {
    static KNOWN: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let known = KNOWN.get_or_init(Default::default);
    if let Some(version) = known.lock().expect("version cache").get(program) {
        return version.clone();
    }
    let version = ask_version(program).unwrap_or_else(|| "unknown version".into());
    known
        .lock()
        .expect("version cache")
        .insert(program.to_string(), version.clone());
    version
}

fn ask_version(program: &str) -> Option<String> {
    ["--version", "-v"].into_iter().find_map(|flag| {
        let output = Command::new(program).arg(flag).output().ok()?;
        if !output.status.success() {
            return None;
        }
        let text = String::from_utf8_lossy(&output.stdout);
        text.lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .map(str::to_string)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_first_lines_of_the_compilers_own_words() {
        assert!(
            exact_version("gcc-12").starts_with("gcc-12 (Debian 12."),
            "{}",
            exact_version("gcc-12")
        );
        assert!(
            exact_version("tcc").starts_with("tcc version 0.9.27"),
            "{}",
            exact_version("tcc")
        );
        assert_eq!(exact_version("no-such-compiler-ccfuzz"), "unknown version");
    }
}
