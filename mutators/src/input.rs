//! The fuzzer's input: a variant is a seed id plus a list of edits, a few hundred bytes on the
//! wire; its C text is materialized from the seed store when it is compiled. A variant that
//! introduces a seed to other nodes carries the seed with it.
//!
//! A chain's states share most of their edits with the state they were proposed from, so the
//! campaign's corpus saves a state as the difference from that state's file ([`Lineage`]) when
//! it wrote it ([`crate::saved`]): a chain of n moves costs O(n) bytes on disk, not O(n²). Every
//! [`CHECKPOINT`]th generation is saved whole, so that reading a state follows at most that
//! many files.

use crate::edit::Edit;
use crate::pool::Shape;
use crate::saved;
use crate::seed::{SeedId, SeedPackage};
use libafl::corpus::CorpusId;
use libafl::inputs::Input;
use libafl::Error;
use libafl_bolts::fs::write_file_atomic;
use serde::{Deserialize, Serialize};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// A chain state is saved whole at every CHECKPOINT-th generation, else as a difference.
pub const CHECKPOINT: u32 = 16;

/// What a saved difference starts with (a whole variant is plain postcard).
pub(crate) const DELTA_MAGIC: &[u8] = b"ccfuzz-delta-1\n";

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Variant {
    /// Never changes: the name remembered is computed from it.
    pub seed: SeedId,
    /// Changed only through [`Variant::edits_mut`] and [`Variant::set_edits`], which forget the
    /// remembered name. Shared: LibAFL clones an input several times per execution, and the
    /// proposal's parent keeps its edits; a long chain's are thousands. Serialized as a list.
    edits: Arc<Vec<Edit>>,
    /// The seed itself, only while the variant travels to nodes whose stores may lack it (a new
    /// seed, a finding); the receiver stores it and drops it from the variant.
    pub carried_seed: Option<Box<SeedPackage>>,
    /// Where the variant came from, in memory only: it decides how the variant is saved and
    /// never its name, its equality or what travels to other cores.
    #[serde(skip)]
    pub lineage: Lineage,
    /// The name, once computed: a proposal's name is asked for by the mutator, the filters,
    /// the acceptance, the scheduler and the corpus, and hashing a long chain's edits each time
    /// was a tenth of the client's CPU against tcc.
    #[serde(skip)]
    name: RememberedName,
}

/// A name computed once, which no comparison or hash of the variant sees.
#[derive(Clone, Debug, Default)]
struct RememberedName(OnceLock<String>);

impl PartialEq for RememberedName {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for RememberedName {}

impl Hash for RememberedName {
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

/// The state a variant was proposed from, and how many moves from its last whole save it is.
#[derive(Clone, Debug, Default)]
pub struct Lineage {
    pub parent: Option<Arc<Parent>>,
    pub generation: u32,
}

/// A chain state as its proposals need it to save themselves as differences.
#[derive(Debug)]
pub struct Parent {
    pub name: String,
    pub edits: Arc<Vec<Edit>>,
}

impl PartialEq for Lineage {
    fn eq(&self, _other: &Self) -> bool {
        true
    }
}

impl Eq for Lineage {}

impl Hash for Lineage {
    fn hash<H: Hasher>(&self, _state: &mut H) {}
}

/// A saved variant as the difference from its parent's file: the parent's edits without
/// `removed` (indices, ascending), then `added`.
#[derive(Debug, Serialize, Deserialize)]
struct Delta {
    seed: SeedId,
    parent: String,
    generation: u32,
    removed: Vec<u32>,
    added: Vec<Edit>,
}

impl Delta {
    /// The difference that turns `parent` into `edits`: the parent's edits matched in order,
    /// the unmatched ones removed, the child's rest added.
    fn between(seed: &SeedId, parent: &Parent, edits: &[Edit], generation: u32) -> Delta {
        let mut removed = Vec::new();
        let mut next = 0;
        for (index, edit) in parent.edits.iter().enumerate() {
            if edits.get(next) == Some(edit) {
                next += 1;
            } else {
                removed.push(index as u32);
            }
        }
        Delta {
            seed: seed.clone(),
            parent: parent.name.clone(),
            generation,
            removed,
            added: edits[next..].to_vec(),
        }
    }

    fn apply(self, parent_edits: Vec<Edit>) -> Variant {
        let mut removed = self.removed.iter().peekable();
        let mut edits: Vec<Edit> = parent_edits
            .into_iter()
            .enumerate()
            .filter(|(index, _)| removed.next_if(|r| **r as usize == *index).is_none())
            .map(|(_, edit)| edit)
            .collect();
        edits.extend(self.added);
        Variant {
            lineage: Lineage {
                parent: None,
                generation: self.generation,
            },
            ..Variant::new(self.seed, edits)
        }
    }
}

impl Variant {
    pub fn new(seed: SeedId, edits: Vec<Edit>) -> Self {
        Variant {
            seed,
            edits: Arc::new(edits),
            carried_seed: None,
            lineage: Lineage::default(),
            name: RememberedName::default(),
        }
    }

    /// Tells the variant its name, known from where it is kept, so that it is not computed
    /// again (debug builds check it).
    pub fn remember_name(&mut self, name: String) {
        debug_assert_eq!(name, self.computed_name(), "a wrong name for {self:?}");
        let _ = self.name.0.set(name);
    }

    pub fn edits(&self) -> &[Edit] {
        &self.edits
    }

    /// The edits, to change: the name is computed again when next asked for.
    pub fn edits_mut(&mut self) -> &mut Vec<Edit> {
        self.name = RememberedName::default();
        Arc::make_mut(&mut self.edits)
    }

    pub fn set_edits(&mut self, edits: Vec<Edit>) {
        *self.edits_mut() = edits;
    }

    /// Makes this variant, which is about to become a proposal from the chain state it still
    /// equals, remember that state as its parent.
    pub fn descend(&mut self) {
        self.lineage = Lineage {
            parent: Some(Arc::new(Parent {
                name: self.name(),
                edits: self.edits.clone(),
            })),
            generation: self.lineage.generation + 1,
        };
    }

    /// The seed itself, unedited.
    pub fn of_seed(seed: SeedId) -> Self {
        Variant::new(seed, Vec::new())
    }

    /// A stable name: the hash of the seed id and the edits (XXH3-128 of their postcard, in
    /// hex). Not a cryptographic hash, as seed ids are: names only tell apart the states of a
    /// campaign, and hashing a long chain's state with SHA-256 was a twentieth of a client's
    /// CPU against tcc.
    pub fn name(&self) -> String {
        self.name.0.get_or_init(|| self.computed_name()).clone()
    }

    fn computed_name(&self) -> String {
        NAME_BYTES.with_borrow_mut(|bytes| {
            bytes.clear();
            encode_for_name(&self.seed, &self.edits, bytes);
            format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
        })
    }
}

thread_local! {
    /// The bytes a name hashes, kept between names: a long chain's state encodes to tens of
    /// kilobytes.
    static NAME_BYTES: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The postcard serialization of `(seed, edits)`, byte for byte, written by hand: through serde,
/// postcard hands its output over a few bytes at a time, and gathering them for the hasher was
/// most of computing a name (a twentieth of a client's CPU against tcc). The names test checks
/// every kind of edit against postcard itself.
fn encode_for_name(seed: &SeedId, edits: &[Edit], out: &mut Vec<u8>) {
    encode_str(&seed.0, out);
    encode_varint(edits.len() as u64, out);
    for edit in edits {
        // An enum is its variant's index, then its fields in order.
        match edit {
            Edit::Delete { stmt } => {
                encode_varint(0, out);
                encode_varint(u64::from(*stmt), out);
            }
            Edit::InsertBefore { stmt, code } => {
                encode_varint(1, out);
                encode_varint(u64::from(*stmt), out);
                encode_str(code, out);
            }
            Edit::Wrap { stmt, before, after } => {
                encode_varint(2, out);
                encode_varint(u64::from(*stmt), out);
                encode_str(before, out);
                encode_str(after, out);
            }
            Edit::Transplant {
                stmt,
                code,
                shape,
                choices,
            } => {
                encode_varint(3, out);
                encode_varint(u64::from(*stmt), out);
                encode_str(code, out);
                encode_shape(shape, out);
                encode_varint(*choices, out);
            }
        }
    }
}

fn encode_shape(shape: &Shape, out: &mut Vec<u8>) {
    // Destructured whole: a field added to `Shape` must be added here too.
    let Shape { kind, children } = shape;
    encode_varint(*kind as u64, out);
    encode_varint(children.len() as u64, out);
    for child in children {
        encode_shape(child, out);
    }
}

fn encode_str(text: &str, out: &mut Vec<u8>) {
    encode_varint(text.len() as u64, out);
    out.extend_from_slice(text.as_bytes());
}

/// Postcard's unsigned varint: seven bits a byte, low bits first.
fn encode_varint(mut value: u64, out: &mut Vec<u8>) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

impl Input for Variant {
    fn generate_name(&self, _id: Option<CorpusId>) -> String {
        self.name()
    }

    /// Saves the variant whole (the campaign's corpus saves its states itself, as differences:
    /// [`crate::saved::corpus::VariantCorpus`]).
    fn to_file<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        write_file_atomic(path, &postcard::to_allocvec(self)?)
    }

    /// Reads a saved variant, following the differences back to a whole one.
    fn from_file<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        let path = path.as_ref();
        // Differences are read back to the nearest whole save, children first.
        let mut deltas = Vec::new();
        let mut next = path.to_path_buf();
        let whole = loop {
            let bytes = std::fs::read(&next)?;
            let Some(delta) = bytes.strip_prefix(DELTA_MAGIC) else {
                break postcard::from_bytes::<Variant>(&bytes)?;
            };
            let delta: Delta = postcard::from_bytes(delta)?;
            // A chain of differences never exceeds the checkpoint interval; a longer one loops.
            if deltas.len() > CHECKPOINT as usize {
                return Err(Error::illegal_state(format!(
                    "{}: more than {CHECKPOINT} differences before a whole save",
                    path.display()
                )));
            }
            next = next.with_file_name(&delta.parent);
            deltas.push(delta);
        };
        Ok(deltas
            .into_iter()
            .rev()
            .fold(whole, |parent, delta| delta.apply(Arc::unwrap_or_clone(parent.edits))))
    }
}

/// The seed of a saved variant, and whether the variant is the seed unedited, from the first
/// bytes of its file (the seed id comes first in both forms; a difference always has edits).
pub fn saved_seed(head: &[u8]) -> Option<(SeedId, bool)> {
    if let Some(delta) = head.strip_prefix(DELTA_MAGIC) {
        let (seed, _) = postcard::take_from_bytes::<SeedId>(delta).ok()?;
        return Some((seed, false));
    }
    let (seed, rest) = postcard::take_from_bytes::<SeedId>(head).ok()?;
    let (edits, _) = postcard::take_from_bytes::<usize>(rest).ok()?;
    Some((seed, edits == 0))
}

impl saved::Unwritten for Variant {
    fn difference_base(&self, path: &Path) -> Option<PathBuf> {
        let parent = self.lineage.parent.as_ref()?;
        let base = path.with_file_name(&parent.name);
        let checkpoint = self.lineage.generation.is_multiple_of(CHECKPOINT);
        (!checkpoint && self.carried_seed.is_none() && base != path).then_some(base)
    }

    fn write_to(&self, path: &Path, base: Option<&Path>) -> std::io::Result<()> {
        let bytes = match (base, &self.lineage.parent) {
            (Some(_), Some(parent)) => {
                let delta = Delta::between(&self.seed, parent, &self.edits, self.lineage.generation);
                let mut bytes = DELTA_MAGIC.to_vec();
                bytes.extend(postcard::to_allocvec(&delta).map_err(std::io::Error::other)?);
                bytes
            }
            _ => postcard::to_allocvec(self).map_err(std::io::Error::other)?,
        };
        write_file_atomic(path, &bytes).map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests;
