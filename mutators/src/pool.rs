//! Athena's statement pool: statements and small blocks taken from seeds, with what they need
//! to be transplanted into another place: the outside variables they use (holes, renamed to
//! in-scope variables of the same type), the functions, typedefs and tags they name, and whether
//! a `break` or `continue` in them needs an enclosing loop or switch.

use crate::ctype::CType;
use crate::model::{Program, Statement, StmtId, StmtKind, Variable};
use crate::seed_id::SeedId;
use serde::{Deserialize, Serialize};
// A transplant proposal looks up hundreds of names and types: SipHash is not needed for them.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::collections::VecDeque;
use std::sync::Arc;

mod extraction;
mod identifiers;

use crate::model::KEYWORDS;
use extraction::extract;
use identifiers::{identifiers, IdentRole};

/// Statements longer than this are not pooled: Athena inserts statements and small blocks.
const MAX_ENTRY_BYTES: usize = 600;
/// About the statements of six csmith seeds (390 each), as many as a client's rotation of chains
/// and the seed that comes next: a full pool makes room for a new seed's statements by dropping
/// its oldest ones, so a campaign's pool follows its latest seeds. The pool is full within the
/// first minutes of a campaign; at 5,000 entries it went on filling for half an hour, which kept
/// a client's memory growing that long. On csmith seeds an entry holds 516 bytes of heap
/// (`ccfuzz bench --parts variants`): its text is one allocation, and the names it uses with
/// their declarations are its seed's, shared with the seed's other entries.
const MAX_POOL_ENTRIES: usize = 2_500;

/// The control-flow shape of a statement: its kind and the shapes of its children.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Shape {
    pub kind: StmtKind,
    pub children: Vec<Shape>,
}

impl Shape {
    pub fn of(program: &Program, id: StmtId) -> Shape {
        let stmt = program.statement(id);
        Shape {
            kind: stmt.kind,
            children: stmt.children.iter().map(|&c| Shape::of(program, c)).collect(),
        }
    }

    /// Number of statements in the shape.
    pub fn size(&self) -> usize {
        1 + self.children.iter().map(Shape::size).sum::<usize>()
    }
}

/// Where an entry's text uses an outside variable, and which hole that variable is.
#[derive(Clone, Copy, Debug, PartialEq)]
struct HoleUse {
    start: u32,
    end: u32,
    hole: u16,
}

/// What the entries of one seed share: the seed, and the names they use that are neither
/// keywords nor variables (functions, typedefs, enumerators) with how the seed declared them.
#[derive(Debug, PartialEq)]
struct Donor {
    origin: SeedId,
    names: Vec<Box<str>>,
    /// For each name, its function signature or typedef in the seed, if it is one of those.
    declarations: Vec<Option<Declared>>,
}

impl Donor {
    fn name_index(&mut self, program: &Program, name: &str) -> u32 {
        if let Some(index) = self.names.iter().position(|n| &**n == name) {
            return index as u32;
        }
        let declared = if let Some(function) = program.functions.get(name) {
            Some(Declared::Function(function.signature.clone()))
        } else {
            program.typedefs.get(name).map(|ty| Declared::Typedef(ty.clone()))
        };
        self.names.push(name.into());
        self.declarations.push(declared);
        (self.names.len() - 1) as u32
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct PoolEntry {
    donor: Arc<Donor>,
    pub fragment: Fragment,
}

impl PoolEntry {
    pub fn origin(&self) -> &SeedId {
        &self.donor.origin
    }
}

/// A pooled statement's text with what transplanting it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct Fragment {
    text: Box<str>,
    hole_uses: Box<[HoleUse]>,
    /// The outside variables the entry uses, each by the number of its type and qualifiers
    /// in the pool's [`HoleKinds`].
    hole_kinds: Box<[u32]>,
    /// Every hole has a type that means the same in every seed ([`portable`]): asked of every
    /// entry at each transplant proposal.
    portable_holes: bool,
    /// The donor's names that the entry uses.
    free_names: Box<[u32]>,
    /// The entry names a struct, union or enum tag, meaningful only in its own seed and only
    /// where that tag is declared: from the start of the donor's function body on (a csmith
    /// program defines its structs after the safe-math functions that open it).
    tags_in_scope_from: Option<usize>,
    /// Variables declared inside the entry: a hole must not be renamed to one of them.
    inner_names: Box<[Box<str>]>,
    pub needs_loop: bool,
    pub needs_break_target: bool,
    pub shape: Shape,
    text_hash: u64,
}

impl Fragment {
    /// Whether a hole may be renamed to the variable `name`: not to one the entry declares.
    fn may_take(&self, name: &str) -> bool {
        !self.inner_names.iter().any(|n| &**n == name)
    }
}

fn hash_text(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

/// Seeds a pool remembers having added, the latest ones: a chain's seed is recent, and a seed
/// long gone that comes back is added again, its duplicate texts skipped.
const REMEMBERED_SEEDS: usize = 1_024;

/// The pool of the seeds added so far, the oldest entries first, without duplicate texts.
#[derive(Debug)]
pub struct Pool {
    pub entries: VecDeque<PoolEntry>,
    seeds: HashSet<SeedId>,
    /// The remembered seeds, oldest first.
    seed_order: VecDeque<SeedId>,
    /// Hashes of the entries' texts.
    texts: HashSet<u64>,
    kinds: HoleKinds,
    capacity: usize,
}

/// The types (with their qualifiers) of the pool's holes, numbered: a location groups its
/// variables by number once, and each hole of each entry finds its variables by index.
/// There are as many as distinct hole types among the entries, a few hundred; the numbers are
/// given again when the entries holding many of them are gone ([`Pool::forget_unused_kinds`]).
#[derive(Debug, Default)]
struct HoleKinds {
    by_type: HashMap<CType, Vec<(Box<str>, u32)>>,
    count: u32,
}

impl HoleKinds {
    fn number(&mut self, ty: &CType, qualifiers: &str) -> u32 {
        if let Some(number) = self.find(ty, qualifiers) {
            return number;
        }
        let number = self.count;
        self.count += 1;
        self.by_type
            .entry(ty.clone())
            .or_default()
            .push((qualifiers.into(), number));
        number
    }

    fn find(&self, ty: &CType, qualifiers: &str) -> Option<u32> {
        self.by_type
            .get(ty)?
            .iter()
            .find(|(q, _)| &**q == qualifiers)
            .map(|&(_, number)| number)
    }
}

impl Default for Pool {
    fn default() -> Self {
        Pool::with_capacity(MAX_POOL_ENTRIES)
    }
}

impl Pool {
    fn with_capacity(capacity: usize) -> Self {
        Pool {
            entries: VecDeque::new(),
            seeds: HashSet::new(),
            seed_order: VecDeque::new(),
            texts: HashSet::new(),
            kinds: HoleKinds::default(),
            capacity,
        }
    }

    /// Adds the statements of a seed, once per seed.
    pub fn add_seed(&mut self, origin: &SeedId, program: &Program) {
        if !self.seeds.insert(origin.clone()) {
            return;
        }
        self.seed_order.push_back(origin.clone());
        if self.seed_order.len() > REMEMBERED_SEEDS {
            if let Some(oldest) = self.seed_order.pop_front() {
                self.seeds.remove(&oldest);
            }
        }
        let mut donor = Donor {
            origin: origin.clone(),
            names: Vec::new(),
            declarations: Vec::new(),
        };
        let mut extracted: Vec<Fragment> = Vec::new();
        for stmt in &program.statements {
            let text_hash = hash_text(program.source_of(stmt.id));
            if !self.texts.contains(&text_hash) {
                extracted.extend(extract(program, &mut donor, &mut self.kinds, stmt, text_hash));
            }
        }
        let donor = Arc::new(donor);
        for fragment in extracted {
            if !self.texts.insert(fragment.text_hash) {
                continue;
            }
            if self.entries.len() >= self.capacity {
                if let Some(oldest) = self.entries.pop_front() {
                    self.texts.remove(&oldest.fragment.text_hash);
                }
            }
            self.entries.push_back(PoolEntry {
                donor: donor.clone(),
                fragment,
            });
        }
        self.forget_unused_kinds();
    }

    /// Numbers again the hole kinds the entries use, once those given out are more than twice
    /// as many: csmith seeds bring array types of their own, and a kind that only dropped
    /// entries used would stay for good (a pool of 2,500 entries grew by 8 KB a seed, and each
    /// transplant proposal sizes its site by the count).
    fn forget_unused_kinds(&mut self) {
        let count = self.kinds.count as usize;
        let mut renumbered = vec![u32::MAX; count];
        for entry in &self.entries {
            for &kind in entry.fragment.hole_kinds.iter() {
                renumbered[kind as usize] = 0;
            }
        }
        let used = renumbered.iter().filter(|&&n| n == 0).count();
        if count < 2 * used + 64 {
            return;
        }
        let mut next = 0;
        for number in renumbered.iter_mut().filter(|n| **n == 0) {
            *number = next;
            next += 1;
        }
        self.kinds.by_type.retain(|_, numbered| {
            numbered.retain_mut(|(_, number)| {
                *number = renumbered[*number as usize];
                *number != u32::MAX
            });
            !numbered.is_empty()
        });
        self.kinds.by_type.shrink_to_fit();
        self.kinds.count = next;
        for entry in &mut self.entries {
            for kind in entry.fragment.hole_kinds.iter_mut() {
                *kind = renumbered[*kind as usize];
            }
        }
    }

    /// The entries that fit before `location` of `target`. Every entry is checked at each
    /// transplant proposal, so the check allocates nothing and looks each donor name up once
    /// per call; only the entry chosen gets its choices of variables
    /// ([`Candidates::candidate`]).
    pub fn candidates<'p, 't>(
        &'p self,
        target: &'t Program,
        target_seed: &SeedId,
        location: StmtId,
    ) -> Candidates<'p, 't> {
        let site = Site::new(target, location, &self.kinds);
        let mut donors: Vec<DonorFit> = Vec::new();
        let mut entries = Vec::new();
        for entry in &self.entries {
            if site.fits(entry, DonorFit::of(&mut donors, entry, target_seed), target) {
                entries.push(entry);
            }
        }
        Candidates {
            site,
            target,
            target_seed: target_seed.clone(),
            entries,
        }
    }
}

/// The pool entries that fit a location.
pub struct Candidates<'p, 't> {
    site: Site<'t>,
    target: &'t Program,
    target_seed: SeedId,
    pub entries: Vec<&'p PoolEntry>,
}

impl<'p, 't> Candidates<'p, 't> {
    /// One of [`Candidates::entries`] with the in-scope variables each of its holes may take.
    pub fn candidate(&self, entry: &'p PoolEntry) -> Candidate<'p, 't> {
        let choices = self
            .site
            .choices(entry, self.target, &self.target_seed)
            .expect("an entry of the candidates fits their location");
        Candidate { entry, choices }
    }
}

/// What a donor's names are at a location of the target: usable (declared there as in the
/// donor, not hidden by a variable), each decided when an entry first asks.
struct DonorFit<'p> {
    donor: &'p Arc<Donor>,
    same_seed: bool,
    usable: Vec<Option<bool>>,
}

impl<'p> DonorFit<'p> {
    /// The fit of the entry's donor among `donors`, added if it is not there yet (a pool
    /// holds a few seeds' entries, each seed's together).
    fn of<'d>(donors: &'d mut Vec<DonorFit<'p>>, entry: &'p PoolEntry, target_seed: &SeedId) -> &'d mut DonorFit<'p> {
        let donor = &entry.donor;
        let index = match donors.iter().rposition(|d| Arc::ptr_eq(d.donor, donor)) {
            Some(index) => index,
            None => {
                donors.push(DonorFit {
                    donor,
                    same_seed: &donor.origin == target_seed,
                    usable: vec![None; donor.names.len()],
                });
                donors.len() - 1
            }
        };
        &mut donors[index]
    }
}

/// A pool entry that fits a location, and the in-scope variables each of its holes may take.
pub struct Candidate<'p, 't> {
    pub entry: &'p PoolEntry,
    pub choices: Vec<Vec<&'t str>>,
}

impl Candidate<'_, '_> {
    /// How many distinct renamings the candidate allows.
    pub fn renamings(&self) -> u64 {
        self.choices
            .iter()
            .fold(1u64, |acc, c| acc.saturating_mul(c.len() as u64))
    }

    /// The entry's text with each hole replaced by the chosen variable.
    pub fn instantiate(&self, picks: &[usize]) -> String {
        let text = &self.entry.fragment.text;
        let mut out = String::with_capacity(text.len());
        let mut cursor = 0;
        for used in self.entry.fragment.hole_uses.iter() {
            let hole = used.hole as usize;
            out.push_str(&text[cursor..used.start as usize]);
            out.push_str(self.choices[hole][picks[hole]]);
            cursor = used.end as usize;
        }
        out.push_str(&text[cursor..]);
        out
    }
}

/// What a location offers: the variables visible there (innermost of each name), by name and
/// by hole kind. A csmith location sees hundreds of globals, and every pool entry is checked
/// against it on each transplant proposal: scanning them per entry and hole was most of a
/// client's CPU against tcc.
struct Site<'t> {
    names: HashSet<&'t str>,
    /// Names of the variables of each hole kind, innermost scope first.
    by_kind: Vec<Vec<&'t str>>,
    offset: usize,
    in_loop: bool,
    in_switch: bool,
}

impl<'t> Site<'t> {
    fn new(target: &'t Program, location: StmtId, kinds: &HoleKinds) -> Self {
        let mut names = HashSet::new();
        let mut by_kind: Vec<Vec<&str>> = vec![Vec::new(); kinds.count as usize];
        for var in target.vars_in_scope(location) {
            if names.insert(var.name.as_str()) {
                if let Some(kind) = kinds.find(&var.ty, &var.qualifiers) {
                    by_kind[kind as usize].push(var.name.as_str());
                }
            }
        }
        let stmt = target.statement(location);
        Site {
            names,
            by_kind,
            offset: stmt.span.start,
            in_loop: stmt.in_loop,
            in_switch: stmt.in_switch,
        }
    }

    /// Whether an entry fits here: what [`Site::choices`] decides, without building the
    /// choices.
    fn fits(&self, entry: &PoolEntry, donor: &mut DonorFit, target: &Program) -> bool {
        let fragment = &entry.fragment;
        if !self.fits_shape_and_scope(fragment, donor.same_seed) {
            return false;
        }
        let usable = |n: usize| {
            self.name_usable(
                &donor.donor.names[n],
                &donor.donor.declarations[n],
                donor.same_seed,
                target,
            )
        };
        for &n in fragment.free_names.iter() {
            let n = n as usize;
            if !*donor.usable[n].get_or_insert_with(|| usable(n)) {
                return false;
            }
        }
        fragment
            .hole_kinds
            .iter()
            .all(|&kind| self.by_kind[kind as usize].iter().any(|name| fragment.may_take(name)))
    }

    /// The checks that need neither names nor holes.
    fn fits_shape_and_scope(&self, fragment: &Fragment, same_seed: bool) -> bool {
        if (fragment.needs_loop && !self.in_loop) || (fragment.needs_break_target && !self.in_loop && !self.in_switch) {
            return false;
        }
        if let Some(from) = fragment.tags_in_scope_from {
            if !same_seed || self.offset < from {
                return false;
            }
        }
        same_seed || fragment.portable_holes
    }

    /// Whether a donor's name means here what it meant in the donor: declared alike (or the
    /// same seed), not hidden by a variable, and, for a function, declared before the location.
    fn name_usable(&self, name: &str, declared: &Option<Declared>, same_seed: bool, target: &Program) -> bool {
        (same_seed || declared_alike(name, declared, target))
            && !self.names.contains(name)
            && target.functions.get(name).is_none_or(|f| f.offset < self.offset)
    }

    fn choices(&self, entry: &PoolEntry, target: &Program, target_seed: &SeedId) -> Option<Vec<Vec<&'t str>>> {
        let (donor, fragment) = (&entry.donor, &entry.fragment);
        let same_seed = entry.origin() == target_seed;
        if !self.fits_shape_and_scope(fragment, same_seed) {
            return None;
        }
        let all_usable = fragment.free_names.iter().all(|&n| {
            let n = n as usize;
            self.name_usable(&donor.names[n], &donor.declarations[n], same_seed, target)
        });
        if !all_usable {
            return None;
        }
        fragment
            .hole_kinds
            .iter()
            .map(|&kind| {
                let names: Vec<&'t str> = self.by_kind[kind as usize]
                    .iter()
                    .copied()
                    .filter(|name| fragment.may_take(name))
                    .collect();
                (!names.is_empty()).then_some(names)
            })
            .collect()
    }
}

/// Whether the target declares a name as the donor did (unknown names never match).
fn declared_alike(name: &str, declared: &Option<Declared>, target: &Program) -> bool {
    let Some(origin_decl) = declared else {
        return false;
    };
    match origin_decl {
        Declared::Function(sig) => target.functions.get(name).is_some_and(|f| &f.signature == sig),
        Declared::Typedef(ty) => target.typedefs.get(name) == Some(ty),
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Declared {
    Function(String),
    Typedef(CType),
}

#[cfg(test)]
mod tests;
