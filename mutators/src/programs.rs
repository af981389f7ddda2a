//! A per-process cache of parsed seeds, so each core parses a seed once and materializes its
//! variants in microseconds.

use crate::edit::apply_edits;
use crate::input::Variant;
use crate::model::Program;
use crate::seed::{Seed, SeedId, SeedStore};
use crate::valuation::Valuation;
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

/// Parsed seeds by id, and their ids in loading order (the oldest is evicted first).
#[derive(Debug, Default)]
struct Cache {
    loaded: HashMap<SeedId, Arc<LoadedSeed>>,
    order: VecDeque<SeedId>,
}

/// Loads and parses seeds from the store on demand, keeping the most recently loaded ones.
#[derive(Debug)]
pub struct Programs {
    store: SeedStore,
    capacity: usize,
    cache: Mutex<Cache>,
}

impl Programs {
    pub fn new(store: SeedStore, capacity: usize) -> Self {
        Programs {
            store,
            capacity: capacity.max(1),
            cache: Mutex::new(Cache::default()),
        }
    }

    pub fn store(&self) -> &SeedStore {
        &self.store
    }

    pub fn get(&self, id: &SeedId) -> Result<Arc<LoadedSeed>> {
        if let Some(loaded) = self.cache.lock().expect("cache lock").loaded.get(id) {
            return Ok(loaded.clone());
        }
        let seed = self.store.load(id)?;
        let headers = self.store.headers(&seed.profile.headers)?;
        let program = seed
            .parse(&headers)
            .with_context(|| format!("stored seed {id} does not parse"))?;
        let valuation = self.store.valuation(id)?.unwrap_or_default();
        let loaded = Arc::new(LoadedSeed {
            seed,
            program,
            valuation,
        });
        let mut guard = self.cache.lock().expect("cache lock");
        let cache = &mut *guard;
        if cache.loaded.len() >= self.capacity {
            if let Some(oldest) = cache.order.pop_front() {
                cache.loaded.remove(&oldest);
            }
        }
        if cache.loaded.insert(id.clone(), loaded.clone()).is_none() {
            cache.order.push_back(id.clone());
        }
        Ok(loaded)
    }

    /// The C text of a variant.
    pub fn materialize(&self, variant: &Variant) -> Result<String> {
        let loaded = self.get(&variant.seed)?;
        Ok(apply_edits(&loaded.program, &variant.edits))
    }
}
