//! The fuzzer's input: a variant is a seed id plus a list of edits, a few hundred bytes on the
//! wire; its C text is materialized from the seed store when it is compiled. A variant that
//! introduces a seed to other nodes carries the seed with it.
//!
//! A chain's states share most of their edits with the state they were proposed from, so a
//! state is saved as the difference from that state's file ([`Lineage`]) when this process
//! wrote it ([`crate::saved`]): a chain of n moves costs O(n) bytes on disk, not O(n²). Every
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

/// What a saved difference starts with (a whole variant is plain postcard, as it always was).
const DELTA_MAGIC: &[u8] = b"ccfuzz-delta-1\n";

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

    /// Saves the variant ([`saved::save`]: in the campaign's corpus, once it is needed on disk),
    /// as the difference from its parent when this process wrote the parent's file beside it
    /// and this generation is no checkpoint; whole otherwise (a finding, a received testcase,
    /// the first move after a resume). A file of the variant's name already holds it (another
    /// client saved the same variant, or a chain came back to a state): it is kept, so that every
    /// difference names a file older than itself and reads end.
    fn to_file<P: AsRef<Path>>(&self, path: P) -> Result<(), Error> {
        let path = path.as_ref();
        if path.file_name().is_some_and(|name| *name == *self.name()) && saved::hold(path) {
            return Ok(());
        }
        saved::save(path, Box::new(self.clone()))?;
        Ok(())
    }

    /// Reads a saved variant, following the differences back to a whole one.
    fn from_file<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        let path = path.as_ref();
        if let Some(waiting) = saved::unwritten::<Variant>(path) {
            return Ok(waiting);
        }
        // Differences are read back to the nearest whole save, children first.
        let mut deltas = Vec::new();
        let mut next = path.to_path_buf();
        let whole = loop {
            let bytes = std::fs::read(&next)?;
            let Some(delta) = bytes.strip_prefix(DELTA_MAGIC) else {
                break Variant::from_whole(&bytes)?;
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

impl Variant {
    /// A variant saved whole; corpus files written before variants could carry seeds are the
    /// seed id and the edits alone.
    fn from_whole(bytes: &[u8]) -> Result<Self, Error> {
        match postcard::from_bytes(bytes) {
            Ok(variant) => Ok(variant),
            Err(current) => postcard::from_bytes::<(SeedId, Vec<Edit>)>(bytes)
                .map(|(seed, edits)| Variant::new(seed, edits))
                .map_err(|_| current.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::StmtKind;

    #[test]
    fn variants_are_small_on_the_wire_and_round_trip() {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let edits = (0..100).map(|i| Edit::Delete { stmt: 1000 + i * 7 }).collect();
        let variant = Variant::new(seed, edits);
        let bytes = postcard::to_allocvec(&variant).unwrap();
        // 33 bytes of seed id and three bytes per deletion: the text never travels.
        assert!(bytes.len() < 400, "{} bytes", bytes.len());
        assert_eq!(postcard::from_bytes::<Variant>(&bytes).unwrap(), variant);
        assert_eq!(variant.name(), variant.clone().name());
        assert_ne!(variant.name(), Variant::of_seed(variant.seed.clone()).name());
    }

    #[test]
    fn a_remembered_name_follows_the_edits() {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let mut variant = Variant::of_seed(seed.clone());
        let unedited = variant.name();
        variant.edits_mut().push(Edit::Delete { stmt: 1 });
        let one = Variant::new(seed.clone(), vec![Edit::Delete { stmt: 1 }]).name();
        assert_eq!(variant.name(), one);
        assert_ne!(one, unedited);
        variant.set_edits(Vec::new());
        assert_eq!(variant.name(), unedited);
        // A clone remembers its original's name, and forgets it as the original does.
        let mut clone = variant.clone();
        clone.edits_mut().push(Edit::Delete { stmt: 1 });
        assert_eq!((variant.name(), clone.name()), (unedited, one));
    }

    #[test]
    fn varints_of_every_width_are_postcards() {
        for width in 1..=10u32 {
            let first = 1u64.checked_shl(7 * (width - 1)).unwrap_or(0).max(u64::from(width > 1));
            let last = if width == 10 {
                u64::MAX
            } else {
                (1u64 << (7 * width)) - 1
            };
            for value in [first, last] {
                let mut ours = Vec::new();
                encode_varint(value, &mut ours);
                assert_eq!(ours, postcard::to_allocvec(&value).unwrap(), "{value}");
                assert_eq!(ours.len(), width as usize, "{value}");
            }
        }
    }

    #[test]
    fn names_are_the_xxh3_of_the_serialized_seed_and_edits() {
        // Stored corpus entries are named so: a change leaves the chains of a resumed campaign
        // to find their states by file name.
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let long: Vec<Edit> = (0..5000).map(|i| Edit::Delete { stmt: i }).collect();
        // Texts whose lengths take one varint byte and two.
        let texts: Vec<Edit> = (0..300)
            .map(|i| Edit::InsertBefore {
                stmt: i,
                code: "x++;".repeat(i as usize % 300).into(),
            })
            .collect();
        // Every kind of edit and field, with varints of several widths and nested shapes.
        let leaf = |kind| Shape {
            kind,
            children: Vec::new(),
        };
        let shape = Shape {
            kind: StmtKind::Asm,
            children: vec![
                Shape {
                    kind: StmtKind::For,
                    children: (0..200).map(|_| leaf(StmtKind::Labeled)).collect(),
                },
                leaf(StmtKind::Compound),
            ],
        };
        let kinds: Vec<Edit> = [0, 127, 128, 16_383, 16_384, u32::MAX]
            .into_iter()
            .flat_map(|stmt| {
                [
                    Edit::Wrap {
                        stmt,
                        before: "if (1) {".repeat(stmt as usize % 40).into(),
                        after: "}".into(),
                    },
                    Edit::Transplant {
                        stmt,
                        code: "g = 1;".into(),
                        shape: Arc::new(shape.clone()),
                        choices: u64::from(stmt) << 32 | 1,
                    },
                    Edit::Transplant {
                        stmt,
                        code: String::new().into(),
                        shape: Arc::new(leaf(StmtKind::Expression)),
                        choices: u64::MAX,
                    },
                    Edit::Delete { stmt },
                ]
            })
            .collect();
        for edits in [long, texts, kinds, vec![Edit::Delete { stmt: 1 }], Vec::new()] {
            let serialized = postcard::to_allocvec(&(&seed, &edits)).unwrap();
            let expected = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&serialized));
            assert_eq!(Variant::new(seed.clone(), edits).name(), expected);
        }
        // Pinned: the name of the unedited seed.
        assert_eq!(Variant::of_seed(seed).name(), "db7e9cdb136ae9701fc622722c6967d2");
    }

    #[test]
    fn clones_and_parents_share_edits_until_one_changes() {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let edits: Vec<Edit> = (0..100).map(|i| Edit::Delete { stmt: i }).collect();
        let state = Variant::new(seed, edits.clone());
        let mut proposal = state.clone();
        assert!(std::ptr::eq(state.edits(), proposal.edits()));
        proposal.descend();
        let parent = proposal.lineage.parent.clone().unwrap();
        assert!(std::ptr::eq(&parent.edits[..], proposal.edits()));
        let state_name = state.name();
        proposal.edits_mut().push(Edit::Delete { stmt: 500 });
        assert_eq!((state.edits(), &parent.edits[..]), (&edits[..], &edits[..]));
        assert_eq!(proposal.edits().len(), 101);
        assert_ne!(proposal.name(), state_name);
        assert_eq!(state.name(), state_name);
    }

    /// A chain of `moves` states, each proposed from the one before by deleting a statement,
    /// now and then restoring an earlier deletion, saved beside each other as a corpus does.
    fn saved_chain(dir: &Path, moves: u32) -> Vec<Variant> {
        let mut state = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
        state.to_file(dir.join(state.name())).unwrap();
        let mut states = vec![state.clone()];
        for step in 0..moves {
            let mut proposal = state.clone();
            proposal.descend();
            if step % 5 == 4 {
                let edits = proposal.edits_mut();
                edits.remove(step as usize % edits.len());
            } else {
                proposal.edits_mut().push(Edit::InsertBefore {
                    stmt: step,
                    code: format!("if (g == {step}) {{ g = g + 1; }}").into(),
                });
            }
            proposal.to_file(dir.join(proposal.name())).unwrap();
            states.push(proposal.clone());
            state = proposal;
        }
        states
    }

    #[test]
    fn chain_states_are_saved_as_differences_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let states = saved_chain(dir.path(), 200);
        for state in &states {
            let read = Variant::from_file(dir.path().join(state.name())).unwrap();
            assert_eq!(read.edits, state.edits);
            assert_eq!(read.name(), state.name());
        }
        let sizes: Vec<u64> = states
            .iter()
            .map(|s| std::fs::metadata(dir.path().join(s.name())).unwrap().len())
            .collect();
        let whole = states.last().unwrap();
        let whole_size = postcard::to_allocvec(whole).unwrap().len() as u64;
        let mean = sizes.iter().sum::<u64>() / sizes.len() as u64;
        // Whole saves would average half the last state; differences and a checkpoint every
        // 16 moves stay far below.
        assert!(
            mean * 4 < whole_size / 2,
            "mean {mean} bytes, last state {whole_size} bytes whole"
        );
        // A checkpoint is whole: reading it needs no other file.
        let checkpoint = &states[CHECKPOINT as usize];
        assert!(!std::fs::read(dir.path().join(checkpoint.name()))
            .unwrap()
            .starts_with(DELTA_MAGIC));
        assert!(std::fs::read(dir.path().join(states[CHECKPOINT as usize + 1].name()))
            .unwrap()
            .starts_with(DELTA_MAGIC));
    }

    #[test]
    fn a_variant_saved_again_keeps_its_first_save() {
        let dir = tempfile::tempdir().unwrap();
        let states = saved_chain(dir.path(), 3);
        // Another client reached the last state from elsewhere: its save would name a parent
        // that is newer than the file.
        let mut again = states[3].clone();
        again.lineage.parent = Some(Arc::new(Parent {
            name: states[1].name(),
            edits: states[1].edits.clone(),
        }));
        let path = dir.path().join(again.name());
        let first = std::fs::read(&path).unwrap();
        again.to_file(&path).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), first);
        assert_eq!(Variant::from_file(&path).unwrap().edits, states[3].edits);
    }

    #[test]
    fn a_deferred_chain_is_read_from_memory_and_written_as_differences_when_needed() {
        let dir = tempfile::tempdir().unwrap();
        saved::defer_writes_in(dir.path(), true);
        let states = saved_chain(dir.path(), 4);
        let paths: Vec<PathBuf> = states.iter().map(|s| dir.path().join(s.name())).collect();
        assert!(paths.iter().all(|p| !p.exists()));
        for (state, path) in states.iter().zip(&paths) {
            assert_eq!(Variant::from_file(path).unwrap().edits, state.edits);
        }
        // Needed on disk in order (the chains file named each in turn): each but the first is
        // the difference from the one before, and reads back whole from disk alone.
        for path in &paths {
            saved::pin_on_disk(path).unwrap();
        }
        assert!(!std::fs::read(&paths[0]).unwrap().starts_with(DELTA_MAGIC));
        for (state, path) in states.iter().zip(&paths).skip(1) {
            assert!(std::fs::read(path).unwrap().starts_with(DELTA_MAGIC));
            assert_eq!(Variant::from_file(path).unwrap().edits, state.edits);
        }
    }

    #[test]
    fn differences_that_loop_are_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let delta = Delta {
            seed: SeedId::of_text("int main(void) { return 0; }"),
            parent: "itself".into(),
            generation: 1,
            removed: Vec::new(),
            added: vec![Edit::Delete { stmt: 1 }],
        };
        let mut bytes = DELTA_MAGIC.to_vec();
        bytes.extend(postcard::to_allocvec(&delta).unwrap());
        std::fs::write(dir.path().join("itself"), bytes).unwrap();
        assert!(Variant::from_file(dir.path().join("itself")).is_err());
    }

    #[test]
    fn a_variant_whose_parent_file_is_elsewhere_is_saved_whole() {
        let mut variant = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
        variant.descend();
        variant.edits_mut().push(Edit::Delete { stmt: 2 });
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(variant.name());
        variant.to_file(&path).unwrap();
        assert!(!std::fs::read(&path).unwrap().starts_with(DELTA_MAGIC));
        assert_eq!(Variant::from_file(&path).unwrap(), variant);
    }

    #[test]
    fn a_parent_file_this_process_did_not_write_is_not_read_through() {
        // Another client's save of the parent, or one from before a resume: it may be deleted
        // by whoever wrote it.
        let parent = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(parent.name()), postcard::to_allocvec(&parent).unwrap()).unwrap();
        let mut child = parent.clone();
        child.descend();
        child.edits_mut().push(Edit::Delete { stmt: 2 });
        let path = dir.path().join(child.name());
        child.to_file(&path).unwrap();
        assert!(!std::fs::read(&path).unwrap().starts_with(DELTA_MAGIC));
        // Once this process saved the parent, its children are differences.
        let dir = tempfile::tempdir().unwrap();
        parent.to_file(dir.path().join(parent.name())).unwrap();
        let path = dir.path().join(child.name());
        child.to_file(&path).unwrap();
        assert!(std::fs::read(&path).unwrap().starts_with(DELTA_MAGIC));
        assert_eq!(Variant::from_file(&path).unwrap().edits(), child.edits());
    }

    #[test]
    fn a_carried_seed_does_not_change_the_name_and_old_files_still_load() {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let plain = Variant::new(seed.clone(), vec![Edit::Delete { stmt: 3 }]);
        let carrying = Variant {
            carried_seed: Some(Box::new(SeedPackage {
                id: seed.clone(),
                files: Default::default(),
                headers: Vec::new(),
            })),
            ..plain.clone()
        };
        assert_eq!(carrying.name(), plain.name());
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        std::fs::write(&old, postcard::to_allocvec(&(&plain.seed, &plain.edits)).unwrap()).unwrap();
        assert_eq!(Variant::from_file(&old).unwrap(), plain);
        let current = dir.path().join("current");
        carrying.to_file(&current).unwrap();
        assert_eq!(Variant::from_file(&current).unwrap(), carrying);
        std::fs::write(&old, b"\xff\xff").unwrap();
        assert!(Variant::from_file(&old).is_err());
    }
}
