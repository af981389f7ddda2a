//! Which corpus files this process wrote, so that the chain states nobody needs leave the disk.
//!
//! A chain accepts most of its proposals, so a client against a fast compiler saves tens of
//! states a second, each a file (a few hundred bytes, a 4-KB block and an inode): left alone,
//! over a gigabyte and a quarter of a million files an hour per core. A state the chain has left
//! is needed by nothing but the states saved as differences from it and, until the next save of
//! the chains file, a resume: a state the campaign lets go ([`left`]) is deleted once nothing
//! holds it ([`pin`]) and no kept file reads through it.
//!
//! Only files written by this process in this run are ever deleted: another client may stand on
//! a file of the same name it did not write (variants are named by their content), and files of
//! an earlier run may be what a resumed chain stands on. For the same reason a difference only
//! ever names a parent written here ([`written_here`]); any other state is saved whole.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file this process wrote and has not deleted.
#[derive(Debug)]
struct Written {
    /// The file it was saved as a difference from.
    parent: Option<PathBuf>,
    /// Files saved as differences from this one, still on disk.
    children: u32,
    /// Corpus entries holding it (it was just written, or a chain came back to it), and the
    /// saved chains naming it ([`pin`]).
    holders: u32,
    /// Once let go, it may be deleted; a kept file's ancestors are kept with it.
    removable: bool,
    kept: bool,
}

static WRITTEN: Mutex<Option<HashMap<PathBuf, Written>>> = Mutex::new(None);

fn with_written<T>(f: impl FnOnce(&mut HashMap<PathBuf, Written>) -> T) -> T {
    let mut written = WRITTEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(written.get_or_insert_with(HashMap::new))
}

/// Notes that `path` was just written, as a difference from `parent` (written here) or whole; a
/// corpus entry holds it.
pub fn wrote(path: &Path, parent: Option<&Path>) {
    with_written(|written| {
        // Written again (its file was deleted by someone else): the files that read through it
        // still do, and it no longer reads through its old parent.
        let mut children = 0;
        if let Some(previous) = written.remove(path) {
            children = previous.children;
            if let Some(old_parent) = previous.parent.and_then(|p| written.get_mut(&p)) {
                old_parent.children -= 1;
            }
        }
        let parent = parent.filter(|p| written.contains_key(*p)).map(Path::to_path_buf);
        if let Some(p) = &parent {
            written.get_mut(p).expect("checked above").children += 1;
        }
        written.insert(
            path.to_path_buf(),
            Written {
                parent,
                children,
                holders: 1,
                removable: false,
                kept: false,
            },
        );
    });
}

/// Whether this process wrote `path` and it is still there: a difference may name it.
pub fn written_here(path: &Path) -> bool {
    with_written(|written| written.contains_key(path))
}

/// Something holds `path` again: a corpus entry (a chain came back to a state whose file is
/// still there), or the chains file, which names the states a resumed campaign goes on from.
pub fn pin(path: &Path) {
    with_written(|written| {
        if let Some(file) = written.get_mut(path) {
            file.holders += 1;
        }
    });
}

/// The chains file no longer names `path`; it goes if nothing else holds it and it was let go
/// as removable ([`left`]). Returns how many files were deleted.
pub fn unpin(path: &Path) -> std::io::Result<usize> {
    with_written(|written| {
        let Some(file) = written.get_mut(path) else {
            return Ok(0);
        };
        file.holders = file.holders.saturating_sub(1);
        settle(written, path.to_path_buf())
    })
}

/// A corpus entry holding `path` is gone. A `removable` file (a chain state that added nothing
/// else to the corpus) is deleted once nothing holds it and no file written here reads through
/// it; any other file stays, and so do the files it reads through. Returns how many files were
/// deleted.
pub fn left(path: &Path, removable: bool) -> std::io::Result<usize> {
    with_written(|written| {
        let Some(file) = written.get_mut(path) else {
            return Ok(0);
        };
        file.holders = file.holders.saturating_sub(1);
        file.removable = removable && !file.kept;
        settle(written, path.to_path_buf())
    })
}

/// Deletes or forgets `path` and then its ancestors, as far as nothing holds them.
fn settle(written: &mut HashMap<PathBuf, Written>, mut path: PathBuf) -> std::io::Result<usize> {
    let mut deleted = 0;
    loop {
        let Some(file) = written.get(&path) else {
            return Ok(deleted);
        };
        if file.holders > 0 || file.children > 0 {
            return Ok(deleted);
        }
        let file = written.remove(&path).expect("looked up above");
        if file.removable {
            remove_if_there(&path)?;
            remove_if_there(&metadata_path(&path))?;
            deleted += 1;
        }
        let Some(parent) = file.parent else {
            return Ok(deleted);
        };
        let Some(parent_file) = written.get_mut(&parent) else {
            return Ok(deleted);
        };
        parent_file.children -= 1;
        if !file.removable {
            // The file stays on disk, and reads through its parent.
            parent_file.kept = true;
            parent_file.removable = false;
        }
        path = parent;
    }
}

/// LibAFL's metadata file beside a corpus entry.
fn metadata_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.metadata"))
}

fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files `names` written in `dir`, each a difference from the one before it.
    fn chain(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
        let mut parent: Option<PathBuf> = None;
        names
            .iter()
            .map(|name| {
                let path = dir.join(name);
                std::fs::write(&path, name).unwrap();
                wrote(&path, parent.as_deref());
                parent = Some(path.clone());
                path
            })
            .collect()
    }

    #[test]
    fn a_left_state_goes_with_the_ancestors_only_it_needed() {
        let dir = tempfile::tempdir().unwrap();
        let files = chain(dir.path(), &["a", "b", "c"]);
        std::fs::write(metadata_path(&files[1]), "{}").unwrap();
        // The chain moved from a to b to c: a and b are let go, and stay while c reads through.
        assert_eq!(left(&files[0], true).unwrap(), 0);
        assert_eq!(left(&files[1], true).unwrap(), 0);
        assert!(files.iter().all(|f| f.exists()));
        // Then it left c too: all three go, with b's metadata file.
        assert_eq!(left(&files[2], true).unwrap(), 3);
        assert!(files.iter().all(|f| !f.exists()));
        assert!(!metadata_path(&files[1]).exists());
        assert!(!written_here(&files[0]));
    }

    #[test]
    fn a_kept_file_keeps_what_it_reads_through() {
        let dir = tempfile::tempdir().unwrap();
        let files = chain(dir.path(), &["a", "b", "c", "d"]);
        // b added coverage: it stays, and so does a; c and d go once left.
        left(&files[0], true).unwrap();
        left(&files[1], false).unwrap();
        left(&files[2], true).unwrap();
        assert_eq!(left(&files[3], true).unwrap(), 2);
        assert!(files[0].exists() && files[1].exists());
        assert!(!files[2].exists() && !files[3].exists());
        // Nothing of the chain is noted any more: a and b are on disk for good.
        assert!(!written_here(&files[0]) && !written_here(&files[1]));
        // A file let go before its kept child is kept all the same.
        let files = chain(dir.path(), &["e", "f"]);
        left(&files[1], false).unwrap();
        assert_eq!(left(&files[0], true).unwrap(), 0);
        assert!(files[0].exists());
    }

    #[test]
    fn a_state_a_chain_came_back_to_stays_while_it_stands_there() {
        let dir = tempfile::tempdir().unwrap();
        let files = chain(dir.path(), &["g", "h"]);
        left(&files[0], true).unwrap();
        // The chain moves from h back to g, whose file is still there.
        pin(&files[0]);
        assert_eq!(left(&files[1], true).unwrap(), 1);
        assert!(files[0].exists() && !files[1].exists());
        assert_eq!(left(&files[0], true).unwrap(), 1);
        assert!(!files[0].exists());
    }

    #[test]
    fn a_state_the_chains_file_names_stays_until_the_next_save() {
        let dir = tempfile::tempdir().unwrap();
        let files = chain(dir.path(), &["i", "j"]);
        // Saved as the chain's state, then left before the next save.
        pin(&files[0]);
        assert_eq!(left(&files[0], true).unwrap(), 0);
        pin(&files[1]);
        assert_eq!(unpin(&files[0]).unwrap(), 0, "j reads through i");
        assert_eq!(left(&files[1], true).unwrap(), 0, "the chains file names j");
        assert_eq!(unpin(&files[1]).unwrap(), 2);
        assert!(files.iter().all(|f| !f.exists()));
    }

    #[test]
    fn files_not_written_here_are_never_deleted_nor_named_as_parents() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("other-client");
        std::fs::write(&foreign, "x").unwrap();
        assert!(!written_here(&foreign));
        assert_eq!(left(&foreign, true).unwrap(), 0);
        assert!(foreign.exists());
        // A file written from a parent not written here reads through nothing noted.
        let child = dir.path().join("child");
        std::fs::write(&child, "y").unwrap();
        wrote(&child, Some(&foreign));
        assert_eq!(left(&child, true).unwrap(), 1);
        assert!(foreign.exists() && !child.exists());
    }
}
