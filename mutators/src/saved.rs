//! Which corpus files this process wrote, so that the chain states nobody needs leave the disk,
//! and, in the campaign's corpus, never reach it.
//!
//! A chain accepts most of its proposals, so a client against a fast compiler saves tens of
//! states a second, each a file (a few hundred bytes, a 4-KB block and an inode): left alone,
//! over a gigabyte and a quarter of a million files an hour per core. A state the chain has left
//! is needed by nothing but the states saved as differences from it and, until the next save of
//! the chains file, a resume: a state the campaign lets go ([`left`]) is deleted once nothing
//! holds it ([`hold`], [`pin_on_disk`]) and no kept file reads through it.
//!
//! In a directory whose writes are deferred ([`defer_writes_in`]: the campaign's corpus) a saved
//! state stays in memory until something outside this process may read it: the chains file
//! names it ([`pin_on_disk`]), it is kept ([`left`]), or the client ends ([`write_out_all`]).
//! Most states are let go within a move of being saved, and then never cost a file.
//!
//! Only files written by this process in this run are ever deleted: another client may stand on
//! a file of the same name it did not write (variants are named by their content), and files of
//! an earlier run may be what a resumed chain stands on. For the same reason a difference only
//! ever names a parent written here; any other state is saved whole.

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// A file's content, to be written when it is needed on disk.
pub trait Unwritten: Any + Send {
    /// The file this content may be written as a difference from, if that file is on disk.
    fn difference_base(&self, path: &Path) -> Option<PathBuf>;

    /// Writes the content at `path`, as the difference from `base` when given (a file written
    /// here and on disk), else whole.
    fn write_to(&self, path: &Path, base: Option<&Path>) -> std::io::Result<()>;
}

/// A file this process saved and has not let go.
struct Written {
    /// The file it was written as a difference from.
    parent: Option<PathBuf>,
    /// Files written as differences from this one, still on disk.
    children: u32,
    /// Corpus entries holding it (it was just written, or a chain came back to a state), and the
    /// saved chains naming it ([`pin_on_disk`]).
    holders: u32,
    /// Once let go, it may be deleted; a kept file's ancestors are kept with it.
    removable: bool,
    kept: bool,
    /// Its content while it is not on disk yet (a deferred write).
    unwritten: Option<Box<dyn Unwritten>>,
}

static WRITTEN: Mutex<Option<HashMap<PathBuf, Written>>> = Mutex::new(None);

/// The directories whose writes wait until the file is needed, each with whether LibAFL writes
/// an entry's metadata file beside its files.
static DEFERRED: Mutex<Option<HashMap<PathBuf, bool>>> = Mutex::new(None);

fn with_written<T>(f: impl FnOnce(&mut HashMap<PathBuf, Written>) -> T) -> T {
    let mut written = WRITTEN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    f(written.get_or_insert_with(HashMap::new))
}

/// From now on, files saved in `dir` are written only when needed on disk. Only this process
/// may read them meanwhile, through [`unwritten`]. Without `metadata_beside` (a corpus that
/// writes no metadata files) a deleted file's metadata file is not looked for: an `unlink` that
/// fails for every state a chain leaves.
pub fn defer_writes_in(dir: &Path, metadata_beside: bool) {
    let mut deferred = DEFERRED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    deferred
        .get_or_insert_with(HashMap::new)
        .insert(dir.to_path_buf(), metadata_beside);
}

/// Whether `path`'s directory defers writes, and then whether its files have metadata beside.
fn deferral(path: &Path) -> Option<bool> {
    let deferred = DEFERRED.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let dir = path.parent()?;
    deferred.as_ref()?.get(dir).copied()
}

fn is_deferred(path: &Path) -> bool {
    deferral(path).is_some()
}

/// Saves `content` as `path`: at once, or when it is needed on disk if its directory's writes
/// are deferred. A corpus entry holds it.
pub fn save(path: &Path, content: Box<dyn Unwritten>) -> std::io::Result<()> {
    let deferred = is_deferred(path);
    with_written(|written| {
        // Saved again (its file was deleted by someone else): the files that read through it
        // still do, and it no longer reads through its old parent.
        let mut children = 0;
        if let Some(previous) = written.remove(path) {
            children = previous.children;
            if let Some(old_parent) = previous.parent.and_then(|p| written.get_mut(&p)) {
                old_parent.children -= 1;
            }
        }
        written.insert(
            path.to_path_buf(),
            Written {
                parent: None,
                children,
                holders: 1,
                removable: false,
                kept: false,
                unwritten: Some(content),
            },
        );
        // Files on disk read through it: it cannot wait.
        if deferred && children == 0 {
            Ok(())
        } else {
            write_out(written, path, false)
        }
    })
}

/// Writes `path` out if it waits in memory: as a difference from its base when this process
/// wrote the base and it is on disk, else whole. A write that waited leaves a file of its name
/// that someone else wrote meanwhile (in the corpus, the same content) as it is, and that file is
/// not this process's to delete; a write that did not wait replaces what is there.
fn write_out(written: &mut HashMap<PathBuf, Written>, path: &Path, waited: bool) -> std::io::Result<()> {
    let Some(content) = written.get_mut(path).and_then(|file| file.unwritten.take()) else {
        return Ok(());
    };
    if waited && path.is_file() {
        written.remove(path);
        return Ok(());
    }
    let base = content
        .difference_base(path)
        .filter(|base| written.get(base).is_some_and(|file| file.unwritten.is_none()) && base.is_file());
    content.write_to(path, base.as_deref())?;
    if let Some(base) = base {
        written.get_mut(&base).expect("checked above").children += 1;
        written.get_mut(path).expect("noted by the caller").parent = Some(base);
    }
    Ok(())
}

/// The content of `path` if it waits in memory, as saved.
pub fn unwritten<T: Unwritten + Clone>(path: &Path) -> Option<T> {
    with_written(|written| {
        let content: &dyn Any = written.get(path)?.unwritten.as_deref()?;
        content.downcast_ref::<T>().cloned()
    })
}

/// Whether a file of this name is saved (in memory or on disk). One saved by this process is
/// held by one more corpus entry (a chain came back to a state it still has).
///
/// In a directory whose writes are deferred and that has no metadata files, only this
/// process's saves are looked for: a file someone else wrote there is found when this process's
/// would be written, and is left as it is ([`write_out`]). Looking on disk for each new state
/// was a `stat` of a name the directory does not have, a search of its blocks: 3% of a client's
/// CPU against tcc. Beside metadata files the file is looked for, as a save of this process
/// would delete the metadata file that LibAFL rewrote for it, and that is someone else's.
pub fn hold(path: &Path) -> bool {
    let look_on_disk = deferral(path) != Some(false);
    with_written(|written| match written.get_mut(path) {
        Some(file) if file.unwritten.is_some() || path.is_file() => {
            file.holders += 1;
            true
        }
        Some(_) => false,
        None => look_on_disk && path.is_file(),
    })
}

/// The chains file is about to name `path`, which a resumed campaign goes on from: it is written
/// out, and stays until a later save no longer names it ([`unpin`]).
pub fn pin_on_disk(path: &Path) -> std::io::Result<()> {
    with_written(|written| {
        let Some(file) = written.get_mut(path) else {
            return Ok(());
        };
        file.holders += 1;
        write_out(written, path, true)
    })
}

/// Writes out every file still waiting in memory: the client ends, and a later run or a study
/// may read what its corpus held.
pub fn write_out_all() -> std::io::Result<()> {
    with_written(|written| {
        let waiting: Vec<PathBuf> = written
            .iter()
            .filter(|(_, file)| file.unwritten.is_some())
            .map(|(path, _)| path.clone())
            .collect();
        for path in waiting {
            // Its waiting bases first, so that it can be written as a difference.
            let mut line = vec![path];
            while let Some(base) = waiting_base(written, line.last().expect("never empty")) {
                if line.contains(&base) {
                    break;
                }
                line.push(base);
            }
            for path in line.iter().rev() {
                write_out(written, path, true)?;
            }
        }
        Ok(())
    })
}

/// The base of `path` when both wait in memory.
fn waiting_base(written: &HashMap<PathBuf, Written>, path: &Path) -> Option<PathBuf> {
    let base = written.get(path)?.unwritten.as_ref()?.difference_base(path)?;
    written.get(&base)?.unwritten.is_some().then_some(base)
}

/// The chains file no longer names `path`; it goes if nothing else holds it and it was let go
/// as removable ([`left`]). Returns how many states went.
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
/// else to the corpus) goes once nothing holds it and no file written here reads through it,
/// from the disk or before ever reaching it; any other file is written out and stays, and so do
/// the files it reads through. Returns how many states went.
pub fn left(path: &Path, removable: bool) -> std::io::Result<usize> {
    with_written(|written| {
        let Some(file) = written.get_mut(path) else {
            return Ok(0);
        };
        file.holders = file.holders.saturating_sub(1);
        file.removable = removable && !file.kept;
        if !file.removable {
            write_out(written, path, true)?;
        }
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
        if !file.removable {
            // It stays: it must be on disk before it is forgotten.
            write_out(written, &path, true)?;
        }
        let Some(file) = written.remove(&path) else {
            // Someone else wrote it meanwhile: it is theirs.
            return Ok(deleted);
        };
        if file.removable {
            if file.unwritten.is_none() {
                remove_if_there(&path)?;
            }
            if deferral(&path).unwrap_or(true) {
                remove_if_there(&metadata_path(&path))?;
            }
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
pub(crate) fn metadata_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.metadata"))
}

pub(crate) fn remove_if_there(path: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test file's content: it says how it was written.
    #[derive(Clone)]
    struct Text {
        base: Option<PathBuf>,
    }

    impl Unwritten for Text {
        fn difference_base(&self, _path: &Path) -> Option<PathBuf> {
            self.base.clone()
        }

        fn write_to(&self, path: &Path, base: Option<&Path>) -> std::io::Result<()> {
            let text = match base {
                Some(base) => format!("difference from {}", base.file_name().unwrap().to_string_lossy()),
                None => "whole".to_string(),
            };
            std::fs::write(path, text)
        }
    }

    /// Files `names` saved in `dir`, each proposed from the one before it.
    fn chain(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
        let mut base: Option<PathBuf> = None;
        names
            .iter()
            .map(|name| {
                let path = dir.join(name);
                save(&path, Box::new(Text { base: base.clone() })).unwrap();
                base = Some(path.clone());
                path
            })
            .collect()
    }

    fn written_here(path: &Path) -> bool {
        with_written(|written| written.contains_key(path))
    }

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap()
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
        assert!(hold(&files[0]));
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
        pin_on_disk(&files[0]).unwrap();
        assert_eq!(left(&files[0], true).unwrap(), 0);
        pin_on_disk(&files[1]).unwrap();
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
        // A state proposed from a file not written here is written whole.
        let child = dir.path().join("child");
        save(
            &child,
            Box::new(Text {
                base: Some(foreign.clone()),
            }),
        )
        .unwrap();
        assert_eq!(read(&child), "whole");
        assert!(!hold(&dir.path().join("never-saved")));
        assert!(hold(&foreign), "a file on disk is there to stand on");
        assert_eq!(left(&child, true).unwrap(), 1);
        assert!(foreign.exists() && !child.exists());
    }

    #[test]
    fn in_a_deferred_directory_only_what_is_needed_reaches_the_disk() {
        let dir = tempfile::tempdir().unwrap();
        defer_writes_in(dir.path(), true);
        let files = chain(dir.path(), &["a", "b", "c", "d", "e"]);
        assert!(files.iter().all(|f| !f.exists()));
        // This process reads a waiting file from memory.
        assert_eq!(unwritten::<Text>(&files[1]).unwrap().base, Some(files[0].clone()));
        assert!(hold(&files[0]), "a waiting state is there to come back to");
        // a is let go twice (a chain came back to it): it goes without ever being written.
        std::fs::write(metadata_path(&files[0]), "{}").unwrap();
        assert_eq!(left(&files[0], true).unwrap(), 0);
        assert_eq!(left(&files[0], true).unwrap(), 1);
        assert!(!files[0].exists() && !metadata_path(&files[0]).exists());
        // The chains file names b: written whole, as a is not on disk.
        pin_on_disk(&files[1]).unwrap();
        assert_eq!(read(&files[1]), "whole");
        assert!(unwritten::<Text>(&files[1]).is_none());
        // c added coverage: kept, as a difference from b, which stays with it.
        assert_eq!(left(&files[1], true).unwrap(), 0);
        assert_eq!(left(&files[2], false).unwrap(), 0);
        assert_eq!(read(&files[2]), "difference from b");
        assert_eq!(unpin(&files[1]).unwrap(), 0, "c reads through b");
        assert!(files[1].exists());
        // The client ends: what it still holds is written out, bases first. c is on disk for
        // good and no longer followed: d is written whole.
        write_out_all().unwrap();
        assert_eq!(read(&files[3]), "whole");
        assert_eq!(read(&files[4]), "difference from d");
    }

    #[test]
    fn in_a_deferred_directory_a_file_written_elsewhere_is_found_when_it_would_be_written() {
        let beside_metadata = tempfile::tempdir().unwrap();
        defer_writes_in(beside_metadata.path(), true);
        let theirs = beside_metadata.path().join("another-client");
        std::fs::write(&theirs, "theirs").unwrap();
        assert!(hold(&theirs), "a file with metadata beside is looked for");
        let dir = tempfile::tempdir().unwrap();
        defer_writes_in(dir.path(), false);
        let foreign = dir.path().join("another-client");
        std::fs::write(&foreign, "theirs").unwrap();
        assert!(!hold(&foreign), "only this process's saves are looked for");
        // Saved here too, let go before it reached the disk: their file stays.
        save(&foreign, Box::new(Text { base: None })).unwrap();
        assert_eq!(left(&foreign, true).unwrap(), 1);
        assert_eq!(read(&foreign), "theirs");
        // Saved again and named by the chains file: their file stands for it, and is theirs.
        save(&foreign, Box::new(Text { base: None })).unwrap();
        pin_on_disk(&foreign).unwrap();
        assert_eq!(read(&foreign), "theirs");
        assert!(!written_here(&foreign));
        assert_eq!(unpin(&foreign).unwrap(), 0);
        assert!(foreign.exists());
    }

    #[test]
    fn a_file_saved_again_at_once_is_replaced() {
        // A save that does not wait writes what it is given (a variant saved under a name of
        // the caller's for `ccfuzz replay`, twice).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("replayed");
        save(&path, Box::new(Text { base: None })).unwrap();
        assert_eq!(read(&path), "whole");
        save(
            &path,
            Box::new(Text {
                base: Some(dir.path().join("elsewhere")),
            }),
        )
        .unwrap();
        std::fs::write(dir.path().join("elsewhere"), "").unwrap();
        save(&dir.path().join("elsewhere"), Box::new(Text { base: None })).unwrap();
        save(
            &path,
            Box::new(Text {
                base: Some(dir.path().join("elsewhere")),
            }),
        )
        .unwrap();
        assert_eq!(read(&path), "difference from elsewhere");
    }

    #[test]
    fn without_metadata_files_a_deleted_state_looks_for_none() {
        let dir = tempfile::tempdir().unwrap();
        defer_writes_in(dir.path(), false);
        let state = &chain(dir.path(), &["p"])[0];
        pin_on_disk(state).unwrap();
        assert!(state.exists());
        // Not LibAFL's: nothing writes metadata in this directory, so a file of that name is
        // someone else's.
        std::fs::write(metadata_path(state), "{}").unwrap();
        assert_eq!(unpin(state).unwrap(), 0);
        assert_eq!(left(state, true).unwrap(), 1);
        assert!(!state.exists() && metadata_path(state).exists());
    }

    #[test]
    fn a_deferred_file_someone_else_wrote_meanwhile_is_theirs() {
        let dir = tempfile::tempdir().unwrap();
        defer_writes_in(dir.path(), true);
        let files = chain(dir.path(), &["x", "y"]);
        // Another client saved the same state (the same name, so the same content) first.
        std::fs::write(&files[0], "another client's").unwrap();
        pin_on_disk(&files[0]).unwrap();
        assert_eq!(read(&files[0]), "another client's");
        assert!(!written_here(&files[0]));
        assert_eq!(unpin(&files[0]).unwrap(), 0);
        assert_eq!(left(&files[0], true).unwrap(), 0);
        assert!(files[0].exists());
        // Its child is not written as a difference from a file it does not own.
        pin_on_disk(&files[1]).unwrap();
        assert_eq!(read(&files[1]), "whole");
    }
}
