//! [`VariantCorpus`]: the campaign's corpus of variants behind LibAFL's `Corpus` trait. Its
//! records are LibAFL testcases in memory; its files are its own: a state is saved late (when
//! something outside the client may read it) and as the difference from its parent
//! ([`crate::input::Lineage`]), read back through its parents, and deleted once nothing reads it
//! ([`SavedFiles`], the corpus's own state). The scheduler lets entries go through it
//! ([`VariantCorpus::let_go`]), and the chains file pins the states it names
//! ([`VariantCorpus::pin`]).

use super::{metadata_path, SavedFiles};
use crate::input::Variant;
use crate::pruning::prune_retired_seeds;
use crate::seed::SeedStore;
use libafl::corpus::ondisk::OnDiskMetadata;
use libafl::corpus::{Corpus, CorpusId, InMemoryCorpus, Testcase};
use libafl::inputs::Input;
use libafl::{Error, HasMetadata};
use libafl_bolts::fs::write_file_atomic;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};

/// The corpus of a campaign's client, in `dir`.
#[derive(Debug, Serialize, Deserialize)]
pub struct VariantCorpus {
    dir: PathBuf,
    /// Each entry's metadata as JSON beside it (`.NAME.metadata`, LibAFL's layout): what it added
    /// to the observed maps.
    metadata_beside: bool,
    entries: InMemoryCorpus<Variant>,
    /// Entries whose inputs were read back, oldest first; at most `cached` keep them.
    #[serde(skip)]
    read_back: RefCell<VecDeque<CorpusId>>,
    cached: usize,
    /// The files this process wrote and has not let go. Not carried over a restart of the
    /// client: its files then count as another's, kept and never read through.
    #[serde(skip)]
    files: SavedFiles,
}

impl VariantCorpus {
    /// A corpus in `dir` keeping the inputs of `cached` entries read back. With `deferred` (the
    /// campaign's) its states reach the disk only when needed there; else as they are added.
    pub fn new(dir: PathBuf, cached: usize, metadata_beside: bool, deferred: bool) -> Result<Self, Error> {
        std::fs::create_dir_all(&dir)?;
        let files = if deferred {
            SavedFiles::deferred(metadata_beside)
        } else {
            SavedFiles::immediate(metadata_beside)
        };
        Ok(VariantCorpus {
            dir,
            metadata_beside,
            entries: InMemoryCorpus::new(),
            read_back: RefCell::new(VecDeque::new()),
            cached: cached.max(1),
            files,
        })
    }

    /// Removes the old retired seeds nothing kept refers to from the campaign's `store`, with
    /// their unedited entries' files (see [`crate::pruning`]): the corpus holds what refers to
    /// seeds. `keep_newest` seeds stay however old and retired. Returns how many went.
    pub fn prune_retired_seeds(&self, store: &SeedStore, keep_newest: usize) -> anyhow::Result<usize> {
        let out = self.dir.parent().unwrap_or(&self.dir);
        prune_retired_seeds(store, out, keep_newest)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Forgets the entry `id`, and lets its file go: a `removable` one (a chain state that added
    /// nothing else) is deleted once nothing holds it or reads through it; any other is written
    /// out and stays. Returns how many files went.
    pub fn let_go(&mut self, id: CorpusId, removable: bool) -> Result<usize, Error> {
        Ok(self.forget(id, removable)?.1)
    }

    fn forget(&mut self, id: CorpusId, removable: bool) -> Result<(Testcase<Variant>, usize), Error> {
        let testcase = self.entries.remove(id)?;
        self.read_back.borrow_mut().retain(|cached| *cached != id);
        let gone = match testcase.filename() {
            Some(name) => self.files.left(&self.dir.join(name), removable)?,
            None => 0,
        };
        Ok((testcase, gone))
    }

    /// The chains file is about to name the state `name`: it is written out, and stays until
    /// [`VariantCorpus::unpin`].
    pub fn pin(&mut self, name: &str) -> Result<(), Error> {
        Ok(self.files.pin_on_disk(&self.dir.join(name))?)
    }

    /// The chains file no longer names the state `name`. Returns how many files went.
    pub fn unpin(&mut self, name: &str) -> Result<usize, Error> {
        Ok(self.files.unpin(&self.dir.join(name))?)
    }

    /// Writes out every state still waiting in memory: the client ends, and a resumed campaign
    /// or a study may read what the corpus held.
    pub fn write_out_all(&mut self) -> Result<(), Error> {
        Ok(self.files.write_out_all()?)
    }

    /// Saves a new entry's input under its name, unless a file of that name holds it already
    /// (another client's save, a state a chain came back to, a resumed entry), and its metadata
    /// beside it.
    fn save(&mut self, testcase: &mut Testcase<Variant>) -> Result<(), Error> {
        let input = testcase
            .input()
            .as_ref()
            .ok_or_else(|| Error::illegal_argument("a new corpus entry without its input"))?;
        let name = testcase.filename().clone().unwrap_or_else(|| input.name());
        let path = self.dir.join(&name);
        // Keeping an existing file keeps every difference pointing at an older file.
        if !(name == input.name() && self.files.hold(&path)) {
            self.files.save(&path, Box::new(input.clone()))?;
        }
        if self.metadata_beside {
            let metadata = OnDiskMetadata {
                metadata: testcase.metadata_map(),
                exec_time: testcase.exec_time(),
                executions: testcase.executions(),
            };
            let json = serde_json::to_vec_pretty(&metadata).map_err(|e| Error::serialize(format!("{e}")))?;
            let metadata_file = metadata_path(&path);
            write_file_atomic(&metadata_file, &json)?;
            *testcase.metadata_path_mut() = Some(metadata_file);
        }
        *testcase.filename_mut() = Some(name);
        *testcase.file_path_mut() = Some(path);
        Ok(())
    }

    fn read(&self, path: &Path) -> Result<Variant, Error> {
        match self.files.unwritten::<Variant>(path) {
            Some(waiting) => Ok(waiting),
            None => Variant::from_file(path),
        }
    }
}

impl Corpus<Variant> for VariantCorpus {
    fn count(&self) -> usize {
        self.entries.count()
    }

    fn count_disabled(&self) -> usize {
        self.entries.count_disabled()
    }

    fn count_all(&self) -> usize {
        self.entries.count_all()
    }

    /// Saves the entry (see [`VariantCorpus`]) and keeps its record without its input.
    fn add(&mut self, mut testcase: Testcase<Variant>) -> Result<CorpusId, Error> {
        self.save(&mut testcase)?;
        *testcase.input_mut() = None;
        self.entries.add(testcase)
    }

    fn add_disabled(&mut self, mut testcase: Testcase<Variant>) -> Result<CorpusId, Error> {
        self.save(&mut testcase)?;
        *testcase.input_mut() = None;
        self.entries.add_disabled(testcase)
    }

    fn replace(&mut self, id: CorpusId, mut testcase: Testcase<Variant>) -> Result<Testcase<Variant>, Error> {
        self.save(&mut testcase)?;
        *testcase.input_mut() = None;
        self.read_back.borrow_mut().retain(|cached| *cached != id);
        self.entries.replace(id, testcase)
    }

    /// Forgets the entry; its file stays (see [`VariantCorpus::let_go`]).
    fn remove(&mut self, id: CorpusId) -> Result<Testcase<Variant>, Error> {
        Ok(self.forget(id, false)?.0)
    }

    fn get(&self, id: CorpusId) -> Result<&RefCell<Testcase<Variant>>, Error> {
        self.entries.get(id)
    }

    fn get_from_all(&self, id: CorpusId) -> Result<&RefCell<Testcase<Variant>>, Error> {
        self.entries.get_from_all(id)
    }

    fn current(&self) -> &Option<CorpusId> {
        self.entries.current()
    }

    fn current_mut(&mut self) -> &mut Option<CorpusId> {
        self.entries.current_mut()
    }

    fn next(&self, id: CorpusId) -> Option<CorpusId> {
        self.entries.next(id)
    }

    fn peek_free_id(&self) -> CorpusId {
        self.entries.peek_free_id()
    }

    fn prev(&self, id: CorpusId) -> Option<CorpusId> {
        self.entries.prev(id)
    }

    fn first(&self) -> Option<CorpusId> {
        self.entries.first()
    }

    fn last(&self) -> Option<CorpusId> {
        self.entries.last()
    }

    fn nth_from_all(&self, nth: usize) -> CorpusId {
        self.entries.nth_from_all(nth)
    }

    /// Reads the entry's input back (from memory while its save waits, else through its
    /// differences on disk); the inputs of the entries read back longest ago are dropped again.
    fn load_input_into(&self, testcase: &mut Testcase<Variant>) -> Result<(), Error> {
        if testcase.input().is_some() {
            return Ok(());
        }
        let path = testcase
            .file_path()
            .clone()
            .ok_or_else(|| Error::illegal_argument("a corpus entry without a file"))?;
        testcase.set_input(self.read(&path)?);
        let Some(id) = testcase.corpus_id() else {
            return Ok(());
        };
        let mut read_back = self.read_back.borrow_mut();
        while read_back.len() >= self.cached {
            let Some(oldest) = read_back.pop_front() else {
                break;
            };
            // The entry being loaded, or one borrowed now, keeps its input.
            if let Ok(mut entry) = self
                .entries
                .get_from_all(oldest)
                .and_then(|cell| cell.try_borrow_mut().map_err(|_| Error::illegal_state("borrowed")))
            {
                *entry.input_mut() = None;
            }
        }
        read_back.push_back(id);
        Ok(())
    }

    /// Writes the entry's input whole under its file.
    fn store_input_from(&self, testcase: &Testcase<Variant>) -> Result<(), Error> {
        let (Some(path), Some(input)) = (testcase.file_path(), testcase.input()) else {
            return Err(Error::illegal_argument("a corpus entry without a file or an input"));
        };
        input.to_file(path)
    }
}

#[cfg(test)]
mod tests;
