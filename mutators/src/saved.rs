//! [`SavedFiles`]: the files of one corpus directory that this process wrote, so that the chain
//! states nobody needs leave the disk and, in the campaign's corpus, never reach it. It is state
//! of the corpus object ([`corpus::VariantCorpus`]), not of the process.
//!
//! A chain accepts most of its proposals, so a client against a fast compiler saves tens of
//! states a second, each a file (a few hundred bytes, a 4-KB block and an inode): left alone,
//! over a gigabyte and a quarter of a million files an hour per core. A state the chain has left
//! is needed by nothing but the states saved as differences from it and, until the next save of
//! the chains file, a resume: a state the campaign lets go ([`SavedFiles::left`]) is deleted
//! once nothing holds it ([`SavedFiles::hold`], [`SavedFiles::pin_on_disk`]) and no kept file
//! reads through it.
//!
//! When writes are deferred (the campaign's corpus) a saved state stays in memory until
//! something outside this process may read it: the chains file names it
//! ([`SavedFiles::pin_on_disk`]), it is kept ([`SavedFiles::left`]), or the client ends
//! ([`SavedFiles::write_out_all`]). Most states are let go within a move of being saved, and
//! then never cost a file.
//!
//! Only files written by this process in this run are ever deleted: another client may stand on
//! a file of the same name it did not write (variants are named by their content), and files of
//! an earlier run may be what a resumed chain stands on. For the same reason a difference only
//! ever names a parent written here; any other state is saved whole.

pub mod corpus;

use std::any::Any;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

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
    /// saved chains naming it ([`SavedFiles::pin_on_disk`]).
    holders: u32,
    /// Once let go, it may be deleted; a kept file's ancestors are kept with it.
    removable: bool,
    kept: bool,
    /// Its content while it is not on disk yet (a deferred write).
    unwritten: Option<Box<dyn Unwritten>>,
}

/// The files of a corpus directory this process saved and has not let go.
#[derive(Default)]
pub struct SavedFiles {
    written: HashMap<PathBuf, Written>,
    /// Files are written only when needed on disk; only this process may read them meanwhile,
    /// through [`SavedFiles::unwritten`].
    deferred: bool,
    /// LibAFL-style metadata files stand beside the entries. Without them a deleted file's
    /// metadata file is not looked for (an `unlink` that fails for every state a chain leaves),
    /// and only this process's saves are looked for in [`SavedFiles::hold`].
    metadata_beside: bool,
}

impl std::fmt::Debug for SavedFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SavedFiles")
            .field("files", &self.written.len())
            .field("deferred", &self.deferred)
            .field("metadata_beside", &self.metadata_beside)
            .finish()
    }
}

impl SavedFiles {
    /// Files written as soon as they are saved.
    pub fn immediate(metadata_beside: bool) -> Self {
        SavedFiles {
            written: HashMap::new(),
            deferred: false,
            metadata_beside,
        }
    }

    /// Files written only when they are needed on disk.
    pub fn deferred(metadata_beside: bool) -> Self {
        SavedFiles {
            deferred: true,
            ..SavedFiles::immediate(metadata_beside)
        }
    }

    /// Saves `content` as `path`: at once, or when it is needed on disk if writes are deferred.
    /// A corpus entry holds it.
    pub fn save(&mut self, path: &Path, content: Box<dyn Unwritten>) -> std::io::Result<()> {
        let deferred = self.deferred;
        let written = &mut self.written;
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
            Self::write_out(written, path, false)
        }
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
    pub fn unwritten<T: Unwritten + Clone>(&self, path: &Path) -> Option<T> {
        let content: &dyn Any = self.written.get(path)?.unwritten.as_deref()?;
        content.downcast_ref::<T>().cloned()
    }

    /// Whether a file of this name is saved (in memory or on disk). One saved by this process is
    /// held by one more corpus entry (a chain came back to a state it still has).
    ///
    /// In a directory whose writes are deferred and that has no metadata files, only this
    /// process's saves are looked for: a file someone else wrote there is found when this process's
    /// would be written, and is left as it is (`write_out`). Looking on disk for each new state
    /// was a `stat` of a name the directory does not have, a search of its blocks: 3% of a client's
    /// CPU against tcc. Beside metadata files the file is looked for, as a save of this process
    /// would delete the metadata file that LibAFL rewrote for it, and that is someone else's.
    pub fn hold(&mut self, path: &Path) -> bool {
        let look_on_disk = !self.deferred || self.metadata_beside;
        match self.written.get_mut(path) {
            Some(file) if file.unwritten.is_some() || path.is_file() => {
                file.holders += 1;
                true
            }
            Some(_) => false,
            None => look_on_disk && path.is_file(),
        }
    }

    /// The chains file is about to name `path`, which a resumed campaign goes on from: it is written
    /// out, and stays until a later save no longer names it ([`SavedFiles::unpin`]).
    pub fn pin_on_disk(&mut self, path: &Path) -> std::io::Result<()> {
        let written = &mut self.written;
        let Some(file) = written.get_mut(path) else {
            return Ok(());
        };
        file.holders += 1;
        Self::write_out(written, path, true)
    }

    /// Writes out every file still waiting in memory: the client ends, and a later run or a study
    /// may read what its corpus held.
    pub fn write_out_all(&mut self) -> std::io::Result<()> {
        let written = &mut self.written;
        let waiting: Vec<PathBuf> = written
            .iter()
            .filter(|(_, file)| file.unwritten.is_some())
            .map(|(path, _)| path.clone())
            .collect();
        for path in waiting {
            // Its waiting bases first, so that it can be written as a difference.
            let mut line = vec![path];
            while let Some(base) = Self::waiting_base(written, line.last().expect("never empty")) {
                if line.contains(&base) {
                    break;
                }
                line.push(base);
            }
            for path in line.iter().rev() {
                Self::write_out(written, path, true)?;
            }
        }
        Ok(())
    }

    /// The base of `path` when both wait in memory.
    fn waiting_base(written: &HashMap<PathBuf, Written>, path: &Path) -> Option<PathBuf> {
        let base = written.get(path)?.unwritten.as_ref()?.difference_base(path)?;
        written.get(&base)?.unwritten.is_some().then_some(base)
    }

    /// The chains file no longer names `path`; it goes if nothing else holds it and it was let go
    /// as removable ([`SavedFiles::left`]). Returns how many states went.
    pub fn unpin(&mut self, path: &Path) -> std::io::Result<usize> {
        let metadata_beside = self.metadata_beside;
        let written = &mut self.written;
        let Some(file) = written.get_mut(path) else {
            return Ok(0);
        };
        file.holders = file.holders.saturating_sub(1);
        Self::settle(written, path.to_path_buf(), metadata_beside)
    }

    /// A corpus entry holding `path` is gone. A `removable` file (a chain state that added nothing
    /// else to the corpus) goes once nothing holds it and no file written here reads through it,
    /// from the disk or before ever reaching it; any other file is written out and stays, and so do
    /// the files it reads through. Returns how many states went.
    pub fn left(&mut self, path: &Path, removable: bool) -> std::io::Result<usize> {
        let metadata_beside = self.metadata_beside;
        let written = &mut self.written;
        let Some(file) = written.get_mut(path) else {
            return Ok(0);
        };
        file.holders = file.holders.saturating_sub(1);
        file.removable = removable && !file.kept;
        if !file.removable {
            Self::write_out(written, path, true)?;
        }
        Self::settle(written, path.to_path_buf(), metadata_beside)
    }

    /// Deletes or forgets `path` and then its ancestors, as far as nothing holds them.
    fn settle(
        written: &mut HashMap<PathBuf, Written>,
        mut path: PathBuf,
        metadata_beside: bool,
    ) -> std::io::Result<usize> {
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
                Self::write_out(written, &path, true)?;
            }
            let Some(file) = written.remove(&path) else {
                // Someone else wrote it meanwhile: it is theirs.
                return Ok(deleted);
            };
            if file.removable {
                if file.unwritten.is_none() {
                    remove_if_there(&path)?;
                }
                if metadata_beside {
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
mod tests;
