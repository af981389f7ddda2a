//! The format version of the directories ccfuzz writes and reads back (a campaign's output, with
//! its triage inside it, and an experiment's): written into a directory when it is created, and
//! checked before one is resumed or read. A directory of another version, or of none, is refused
//! with one line that says what to do: ccfuzz reads only the format it writes.

use anyhow::{bail, Context, Result};
use std::path::Path;

/// The version of the layout and file formats this ccfuzz writes. Raised whenever a file that is
/// read back changes in a way the reader of the previous version would misread.
pub const FORMAT_VERSION: u32 = 1;

/// The file in each directory that names its kind and version.
pub const VERSION_FILE: &str = "ccfuzz-format";

fn version_line(kind: &str) -> String {
    format!("ccfuzz {kind} format {FORMAT_VERSION}\n")
}

/// Creates `dir` with this version as a directory of `kind` ("campaign", "experiment"), or takes
/// it as it is when it already holds this version of that kind: a directory to resume. An empty
/// directory is taken as new.
pub fn claim(dir: &Path, kind: &str) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let empty = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .next()
        .is_none();
    if empty {
        let file = dir.join(VERSION_FILE);
        return std::fs::write(&file, version_line(kind)).with_context(|| format!("cannot write {}", file.display()));
    }
    check(dir, kind)
}

/// Fails unless `dir` is a directory of `kind` written in this version.
pub fn check(dir: &Path, kind: &str) -> Result<()> {
    let file = dir.join(VERSION_FILE);
    let found = match std::fs::read_to_string(&file) {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir.is_dir() => bail!(
            "{} has no {VERSION_FILE} file: it is not a ccfuzz {kind} directory, or an older ccfuzz \
             wrote it; give a new or empty directory",
            dir.display()
        ),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", file.display())),
    };
    if found != version_line(kind) {
        bail!(
            "{} holds `{}`, and this ccfuzz reads only `{}`: give a new or empty directory, or use the \
             ccfuzz that wrote it",
            dir.display(),
            found.trim(),
            version_line(kind).trim()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_or_empty_directory_is_claimed_and_then_resumed() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        claim(&out, "campaign").unwrap();
        assert_eq!(
            std::fs::read_to_string(out.join(VERSION_FILE)).unwrap(),
            "ccfuzz campaign format 1\n"
        );
        std::fs::write(out.join("stats.json"), "{}").unwrap();
        claim(&out, "campaign").unwrap();
        check(&out, "campaign").unwrap();
        let empty = tempfile::tempdir().unwrap();
        claim(empty.path(), "experiment").unwrap();
        check(empty.path(), "experiment").unwrap();
    }

    #[test]
    fn a_directory_of_no_version_another_version_or_another_kind_is_refused_in_one_line() {
        let out = tempfile::tempdir().unwrap();
        std::fs::create_dir(out.path().join("corpus")).unwrap();
        let unversioned = claim(out.path(), "campaign").unwrap_err().to_string();
        assert!(unversioned.contains("has no ccfuzz-format file"), "{unversioned}");
        std::fs::write(out.path().join(VERSION_FILE), "ccfuzz campaign format 0\n").unwrap();
        let older = check(out.path(), "campaign").unwrap_err().to_string();
        assert!(older.contains("holds `ccfuzz campaign format 0`"), "{older}");
        std::fs::write(out.path().join(VERSION_FILE), version_line("experiment")).unwrap();
        let other_kind = claim(out.path(), "campaign").unwrap_err().to_string();
        assert!(
            other_kind.contains("reads only `ccfuzz campaign format 1`"),
            "{other_kind}"
        );
        for message in [unversioned, older, other_kind] {
            assert!(!message.contains('\n'), "{message}");
        }
    }
}
