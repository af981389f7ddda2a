//! The chains, one per seed, as state metadata: where each stands, its statistics, and their
//! saving and restoring across a resumed campaign.

use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::SeedId;
use libafl::corpus::{Corpus, CorpusId};
use libafl::state::HasCorpus;
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

/// One seed's chain.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Chain {
    /// The corpus entry holding the chain's state Q, and Q's name.
    pub current: CorpusId,
    pub current_name: String,
    pub energy: f64,
    pub distance: f64,
    pub proposals: u64,
    /// Accepted moves: the chain's length.
    pub accepted: u64,
}

/// Mean distance of the states reached after a given number of accepted moves, by buckets of
/// chain length (0–9, 10–19, …).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DistanceByLength {
    pub buckets: BTreeMap<u64, (f64, u64)>,
}

pub const LENGTH_BUCKET: u64 = 10;

impl DistanceByLength {
    pub(super) fn record(&mut self, length: u64, distance: f64) {
        let bucket = self.buckets.entry(length / LENGTH_BUCKET * LENGTH_BUCKET).or_default();
        bucket.0 += distance;
        bucket.1 += 1;
    }

    /// (first length of the bucket, mean distance, decisions).
    pub fn means(&self) -> Vec<(u64, f64, u64)> {
        self.buckets
            .iter()
            .map(|(&length, &(sum, n))| (length, sum / n as f64, n))
            .collect()
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
pub struct McmcChains {
    pub chains: BTreeMap<SeedId, Chain>,
    /// Seeds in the order their chains started; the active one is `order[active]`.
    pub(super) order: Vec<SeedId>,
    pub(super) active: usize,
    pub(super) turn_proposals: u64,
    pub proposals: u64,
    pub accepted: u64,
    pub by_length: DistanceByLength,
    /// Corpus entries of the chains' states by variant name: a chain that returns to a state
    /// moves to its entry instead of adding it again.
    pub(super) states: HashMap<String, CorpusId>,
}
impl_serdeany!(McmcChains);

impl McmcChains {
    pub(super) fn move_chain(&mut self, seed: &SeedId, id: CorpusId, name: &str, energy: f64, distance: f64) {
        if let Some(chain) = self.chains.get_mut(seed) {
            chain.current = id;
            chain.current_name = name.to_string();
            chain.energy = energy;
            chain.distance = distance;
            chain.accepted += 1;
        }
    }

    pub fn acceptance_rate(&self) -> f64 {
        self.accepted as f64 / self.proposals.max(1) as f64
    }

    pub fn mean_length(&self) -> f64 {
        let n = self.chains.len().max(1) as f64;
        self.chains.values().map(|c| c.accepted as f64).sum::<f64>() / n
    }

    pub fn mean_distance(&self) -> f64 {
        let n = self.chains.len().max(1) as f64;
        self.chains.values().map(|c| c.distance).sum::<f64>() / n
    }
}

/// Where a chain stood, as saved on disk.
#[derive(Debug, Serialize, Deserialize)]
struct SavedChain {
    variant: String,
    energy: f64,
    distance: f64,
    proposals: u64,
    accepted: u64,
}

/// Saves where each chain stands, so that a resumed campaign continues its chains.
pub fn save_chains(chains: &McmcChains, path: &Path) -> std::io::Result<()> {
    let saved: BTreeMap<&SeedId, SavedChain> = chains
        .chains
        .iter()
        .map(|(seed, c)| {
            let saved = SavedChain {
                variant: c.current_name.clone(),
                energy: c.energy,
                distance: c.distance,
                proposals: c.proposals,
                accepted: c.accepted,
            };
            (seed, saved)
        })
        .collect();
    let staging = path.with_extension("tmp");
    std::fs::write(&staging, serde_json::to_vec_pretty(&saved)?)?;
    std::fs::rename(staging, path)
}

/// Puts the chains of a resumed corpus back where `save_chains` left them; chains whose state
/// is not in the corpus start again from their seed. Returns how many chains were restored.
pub fn restore_chains<S>(state: &mut S, path: &Path) -> Result<usize, Error>
where
    S: HasCorpus<Variant> + HasMetadata,
{
    let Ok(bytes) = std::fs::read(path) else {
        return Ok(0);
    };
    let saved: BTreeMap<SeedId, SavedChain> =
        serde_json::from_slice(&bytes).map_err(|e| Error::serialize(format!("{}: {e}", path.display())))?;
    let mut by_name = HashMap::new();
    for id in state.corpus().ids().collect::<Vec<_>>() {
        by_name.insert(state.corpus().cloned_input_for_id(id)?.name(), id);
    }
    let chains = state.metadata_or_insert_with(McmcChains::default);
    let mut restored = 0;
    for (seed, saved) in saved {
        let (Some(chain), Some(&id)) = (chains.chains.get_mut(&seed), by_name.get(&saved.variant)) else {
            continue;
        };
        *chain = Chain {
            current: id,
            current_name: saved.variant.clone(),
            energy: saved.energy,
            distance: saved.distance,
            proposals: saved.proposals,
            accepted: saved.accepted,
        };
        chains.states.insert(saved.variant, id);
        restored += 1;
    }
    Ok(restored)
}
