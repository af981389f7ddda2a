//! A per-process cache of parsed seeds, so each core parses a seed once and materializes its
//! variants in microseconds. The cache is bounded by an estimate of the memory its seeds hold,
//! and the seed used least recently leaves first; a seed whose chain retired leaves at once.

use crate::edit::apply_edits_into;
use crate::input::Variant;
use crate::model::{Program, Scope, Statement, Variable};
use crate::seed::{Seed, SeedId, SeedStore};
use crate::valuation::{PointValues, Readable, Valuation, ValueSet};
use anyhow::{Context, Result};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

/// A stored seed together with its parsed model.
#[derive(Debug)]
pub struct LoadedSeed {
    pub seed: Seed,
    pub program: Program,
    /// The valuation profile, for the live-code mutators (empty when it was not profiled).
    pub valuation: Valuation,
}

impl LoadedSeed {
    /// Roughly the heap bytes the seed holds: its text, the model's tables and the valuation.
    pub fn approximate_bytes(&self) -> usize {
        use std::mem::size_of;
        let program = &self.program;
        let statements: usize = program
            .statements
            .iter()
            .map(|s| size_of::<Statement>() + 4 * s.children.len() + s.label.as_ref().map_or(0, String::len))
            .sum();
        let variables: usize = program
            .scopes
            .iter()
            .flat_map(|scope| &scope.vars)
            .map(|v| size_of::<Variable>() + v.name.len() + v.qualifiers.len())
            .sum();
        // Map nodes, names and types of records, functions and typedefs.
        let declarations = 160
            * (program.records.values().map(Vec::len).sum::<usize>()
                + program.functions.len()
                + program.typedefs.len())
            + program.functions.values().map(|f| f.signature.len()).sum::<usize>();
        // glibc gives a block its size plus an 8-byte header, rounded up to 16.
        let block = |bytes: usize| {
            if bytes == 0 {
                0
            } else {
                (bytes + 8).next_multiple_of(16)
            }
        };
        let mut names = std::collections::HashSet::new();
        let valuation: usize = self
            .valuation
            .points
            .values()
            .map(|point| {
                let readables: usize = point
                    .readables
                    .iter()
                    .filter(|r| names.insert(Arc::as_ptr(&r.expr)))
                    .map(|r| block(16 + r.expr.len()))
                    .sum();
                let values: usize = point
                    .values
                    .iter()
                    .map(|set| block(size_of::<i128>() * set.len()))
                    .sum();
                size_of::<PointValues>()
                    + 32
                    + block(size_of::<Readable>() * point.readables.len())
                    + readables
                    + block(size_of::<ValueSet>() * point.values.len())
                    + values
            })
            .sum();
        // The program shares the seed's text when the seed parsed it.
        let texts = if Arc::ptr_eq(&program.text, &self.seed.text) {
            1
        } else {
            2
        };
        // A B-tree of line counts holds at most eleven 12-byte entries in a 200-byte node.
        let profile = 24 * self.seed.profile.line_counts.len() + self.seed.expected_output.len();
        texts * program.text.len()
            + profile
            + statements
            + size_of::<Scope>() * program.scopes.len()
            + variables
            + declarations
            + valuation
    }
}

/// Parsed seeds by id with their estimated sizes, and their ids from least to most recently
/// used.
#[derive(Debug, Default)]
struct Cache {
    loaded: HashMap<SeedId, (Arc<LoadedSeed>, usize)>,
    order: VecDeque<SeedId>,
    bytes: usize,
}

impl Cache {
    fn touch(&mut self, id: &SeedId) {
        if let Some(at) = self.order.iter().position(|o| o == id) {
            let id = self.order.remove(at).expect("position is in range");
            self.order.push_back(id);
        }
    }
}

/// Loads and parses seeds from the store on demand, keeping the most recently used ones within
/// a memory budget.
#[derive(Debug)]
pub struct Programs {
    store: SeedStore,
    budget_bytes: usize,
    /// Seeds kept whatever their bytes: those a cycle of the chains visits.
    minimum_seeds: usize,
    cache: Mutex<Cache>,
    /// Seeds parsed so far (cache misses): a parse takes tens of megabytes for a moment.
    parses: std::sync::atomic::AtomicU64,
    /// The last variant materialized, by name: the repeated-text filter and then the executor
    /// ask for the same proposal's text.
    last_text: Mutex<Option<(String, Arc<String>)>>,
}

impl Programs {
    /// A cache holding at most `budget_bytes` of parsed seeds (estimated), and always the one
    /// in use.
    pub fn new(store: SeedStore, budget_bytes: usize) -> Self {
        Programs {
            store,
            budget_bytes,
            minimum_seeds: 0,
            cache: Mutex::new(Cache::default()),
            parses: std::sync::atomic::AtomicU64::new(0),
            last_text: Mutex::new(None),
        }
    }

    /// Keeps the `seeds` most recently used even beyond the budget: with fewer, every turn of a
    /// rotation of that many chains would parse its seed again.
    pub fn keeping_at_least(self, seeds: usize) -> Self {
        Programs {
            minimum_seeds: seeds,
            ..self
        }
    }

    /// Seeds this cache has parsed.
    pub fn parses(&self) -> u64 {
        self.parses.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Seeds held and their estimated bytes.
    pub fn held(&self) -> (usize, usize) {
        let cache = self.cache.lock().expect("cache lock");
        (cache.loaded.len(), cache.bytes)
    }

    pub fn store(&self) -> &SeedStore {
        &self.store
    }

    pub fn get(&self, id: &SeedId) -> Result<Arc<LoadedSeed>> {
        {
            let mut cache = self.cache.lock().expect("cache lock");
            if let Some((loaded, _)) = cache.loaded.get(id) {
                let loaded = loaded.clone();
                cache.touch(id);
                return Ok(loaded);
            }
        }
        self.parses.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seed = self.store.load(id)?;
        let headers = self.store.headers(&seed.profile.headers)?;
        let program = seed
            .parse(&headers)
            .with_context(|| format!("stored seed {id} does not parse"))?;
        let valuation = self.store.valuation(id)?.unwrap_or_default();
        Ok(self.insert(LoadedSeed {
            seed,
            program,
            valuation,
        }))
    }

    /// Puts a seed parsed elsewhere (by the seed maker, which has just parsed it) in the
    /// cache, so that its chain's first proposal does not parse it again.
    pub fn insert(&self, loaded: LoadedSeed) -> Arc<LoadedSeed> {
        let id = loaded.seed.id.clone();
        let id = &id;
        let loaded = Arc::new(loaded);
        let bytes = loaded.approximate_bytes();
        let mut guard = self.cache.lock().expect("cache lock");
        let cache = &mut *guard;
        while cache.bytes + bytes > self.budget_bytes && cache.loaded.len() >= self.minimum_seeds {
            let Some(oldest) = cache.order.pop_front() else {
                break;
            };
            if let Some((_, freed)) = cache.loaded.remove(&oldest) {
                cache.bytes -= freed;
            }
        }
        // Another thread may have loaded it meanwhile: count it once.
        if let Some((_, replaced)) = cache.loaded.insert(id.clone(), (loaded.clone(), bytes)) {
            cache.bytes -= replaced;
            cache.touch(id);
        } else {
            cache.order.push_back(id.clone());
        }
        cache.bytes += bytes;
        loaded
    }

    /// Drops a seed nothing will visit again.
    pub fn forget(&self, id: &SeedId) {
        let mut cache = self.cache.lock().expect("cache lock");
        if let Some((_, freed)) = cache.loaded.remove(id) {
            cache.bytes -= freed;
            cache.order.retain(|o| o != id);
        }
    }

    /// The C text of a variant.
    pub fn materialize(&self, variant: &Variant) -> Result<Arc<String>> {
        let name = variant.name();
        let mut last = self.last_text.lock().expect("last text lock");
        if let Some((_, text)) = last.as_ref().filter(|(last_name, _)| *last_name == name) {
            return Ok(text.clone());
        }
        let loaded = self.get(&variant.seed)?;
        // The last text's buffer, once nobody else holds it, takes the new one.
        let mut buffer = last
            .take()
            .and_then(|(_, text)| Arc::try_unwrap(text).ok())
            .unwrap_or_default();
        apply_edits_into(&loaded.program, variant.edits(), &mut buffer);
        let text = Arc::new(buffer);
        *last = Some((name, text.clone()));
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::{apply_edits, Edit};
    use crate::testing::stored_counting_seed;
    use std::collections::BTreeMap;

    #[test]
    fn a_variant_materializes_to_its_own_text_however_often_asked() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeedStore::open(dir.path()).unwrap();
        let id = stored_counting_seed(&store, 3);
        let programs = Programs::new(store, usize::MAX);
        let unedited = Variant::of_seed(id.clone());
        let mut edited = unedited.clone();
        edited.edits_mut().push(Edit::Delete { stmt: 2 });
        let seed_text = programs.materialize(&unedited).unwrap();
        let edited_text = programs.materialize(&edited).unwrap();
        assert_ne!(seed_text, edited_text);
        for _ in 0..2 {
            assert_eq!(programs.materialize(&unedited).unwrap(), seed_text);
            assert_eq!(programs.materialize(&unedited).unwrap(), seed_text);
            assert_eq!(programs.materialize(&edited).unwrap(), edited_text);
        }
        let loaded = programs.get(&id).unwrap();
        assert_eq!(*edited_text, apply_edits(&loaded.program, edited.edits()));
        // A text nobody holds any more lends its buffer to the next one: nothing of it stays.
        let seed_text = seed_text.to_string();
        let edited_text = edited_text.to_string();
        for _ in 0..2 {
            assert_eq!(*programs.materialize(&edited).unwrap(), edited_text);
            assert_eq!(*programs.materialize(&unedited).unwrap(), seed_text);
        }
    }

    #[test]
    fn a_cached_seed_holds_its_text_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeedStore::open(dir.path()).unwrap();
        let id = stored_counting_seed(&store, 50);
        let loaded = Programs::new(store, usize::MAX).get(&id).unwrap();
        assert!(Arc::ptr_eq(&loaded.program.text, &loaded.seed.text));
        // A program parsed apart holds a text of its own, and the estimate counts it.
        let apart = LoadedSeed {
            seed: loaded.seed.clone(),
            program: Program::parse_parts(&loaded.seed.text, "", 0, &BTreeMap::new()).unwrap(),
            valuation: Valuation::default(),
        };
        assert_eq!(
            apart.approximate_bytes(),
            loaded.approximate_bytes() + loaded.seed.text.len()
        );
    }

    #[test]
    fn the_cache_keeps_the_recently_used_seeds_within_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeedStore::open(dir.path()).unwrap();
        let ids: Vec<SeedId> = (0..4).map(|n| stored_counting_seed(&store, 100 + n)).collect();
        let one = Programs::new(store.clone(), usize::MAX)
            .get(&ids[0])
            .unwrap()
            .approximate_bytes();
        // A hundred statements and their text: kilobytes, not bytes nor megabytes.
        assert!((5_000..200_000).contains(&one), "{one} bytes");
        let programs = Programs::new(store, one * 5 / 2);
        programs.get(&ids[0]).unwrap();
        programs.get(&ids[1]).unwrap();
        programs.get(&ids[0]).unwrap();
        // Room for two: the least recently used (ids[1]) leaves for ids[2].
        programs.get(&ids[2]).unwrap();
        let held = programs.held();
        assert_eq!(held.0, 2);
        assert!(held.1 <= one * 5 / 2);
        let cache = programs.cache.lock().unwrap();
        assert!(cache.loaded.contains_key(&ids[0]) && cache.loaded.contains_key(&ids[2]));
        drop(cache);
        // A forgotten seed leaves at once, and its bytes with it.
        programs.forget(&ids[0]);
        let after = programs.held();
        assert_eq!(after.0, 1);
        assert!(after.1 < held.1 && after.1 > 0, "{after:?} of {held:?}");
        assert_eq!(programs.cache.lock().unwrap().order, [ids[2].clone()]);
        // A seed parsed elsewhere is served as it was put in, not parsed again.
        let elsewhere = Programs::new(programs.store().clone(), usize::MAX)
            .get(&ids[1])
            .unwrap();
        let put = programs.insert(Arc::try_unwrap(elsewhere).unwrap());
        assert!(Arc::ptr_eq(&put, &programs.get(&ids[1]).unwrap()));
        // A seed larger than the whole budget is still served, alone.
        let tiny = Programs::new(programs.store().clone(), 1);
        tiny.get(&ids[3]).unwrap();
        tiny.get(&ids[2]).unwrap();
        assert_eq!(tiny.held().0, 1);
        // Unless the cache keeps a rotation's seeds whatever their bytes.
        let rotation = Programs::new(programs.store().clone(), 1).keeping_at_least(3);
        for id in &ids {
            rotation.get(id).unwrap();
        }
        let cache = rotation.cache.lock().unwrap();
        assert_eq!(Vec::from(cache.order.clone()), ids[1..]);
    }
}
