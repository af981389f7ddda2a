//! The chains, one per seed, as state metadata: where each stands, its statistics, which are in
//! the rotation and which retired, and their saving and restoring across a resumed campaign.

use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::saved::corpus::VariantCorpus;
use ccfuzz_mutators::seed::SeedId;
use libafl::corpus::{Corpus, CorpusId};
use libafl::state::HasCorpus;
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// An accepted move of a chain: the state it moves to, and that state's energy and distance.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct Acceptance {
    pub(super) name: String,
    pub(super) energy: f64,
    pub(super) distance: f64,
    /// Proposed from the seed: the chain started again.
    pub(super) from_seed: bool,
}

/// One seed's chain.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Chain {
    /// The corpus entry holding the chain's state Q, and Q's name.
    pub current: CorpusId,
    pub current_name: String,
    pub energy: f64,
    pub distance: f64,
    pub proposals: u64,
    /// Accepted moves, over all of the chain's starts.
    pub accepted: u64,
    /// Accepted moves since the chain last started from its seed: its length.
    pub length: u64,
    /// Times the chain started again from its seed, having reached the longest length.
    pub restarts: u64,
    /// Out of the rotation for good: a newer seed took its place.
    pub retired: bool,
}

impl Chain {
    pub(super) fn new(current: CorpusId, current_name: String) -> Self {
        Chain {
            current,
            current_name,
            energy: 0.0,
            distance: 0.0,
            proposals: 0,
            accepted: 0,
            length: 0,
            restarts: 0,
            retired: false,
        }
    }

    /// Whether the chain's next proposal starts from its seed: it made `longest` accepted
    /// moves since it last did. Athena's distance of a chain's state peaks after a few hundred
    /// moves and then falls as the inserted statements' size penalty grows, while the cost of
    /// every proposal (naming, materializing, the distance itself) grows with the length.
    pub fn starts_again(&self, longest: Option<u64>) -> bool {
        longest.is_some_and(|longest| self.length >= longest.max(1))
    }
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
    /// The rotation: seeds of the chains not retired, in the order they started; the active one
    /// is `order[active]`.
    pub(super) order: Vec<SeedId>,
    pub(super) active: usize,
    pub(super) turn_proposals: u64,
    pub proposals: u64,
    pub accepted: u64,
    pub by_length: DistanceByLength,
    /// Corpus entries no chain will visit again, to be forgotten by the scheduler: LibAFL keeps
    /// a record of every entry in memory (file names, paths, metadata, about 850 bytes with its
    /// slot), which over a day of accepted moves is what would keep a client's memory growing.
    /// A chain stands on one entry; the states it left, and other clients' variants, are
    /// forgotten (a chain that comes back to a state adds it again). The files of the states
    /// left go too, unless they added something else to the corpus or a file kept reads
    /// through them.
    pub(super) unvisited: Vec<CorpusId>,
    /// Entries forgotten so far.
    pub forgotten: u64,
    /// Their files deleted so far (see [`VariantCorpus::let_go`]).
    #[serde(default)]
    pub deleted_files: u64,
    /// Retired chains whose seeds left the store, no longer remembered, and their restarts:
    /// every client starts a chain on every seed, so over days the records (and the chains
    /// file, saved every few seconds) would grow with every seed the campaign ever made.
    #[serde(default)]
    pub forgotten_chains: u64,
    #[serde(default)]
    pub forgotten_restarts: u64,
}
impl_serdeany!(McmcChains);

impl McmcChains {
    /// Moves `seed`'s chain to the entry `id` of its accepted state `name`, proposed from the
    /// seed itself when `from_seed` (the chain started again); the entry it left will not be
    /// visited again, nor will any entry of a retired chain.
    pub(super) fn move_chain(&mut self, seed: &SeedId, id: CorpusId, accepted: &Acceptance) {
        if let Some(chain) = self.chains.get_mut(seed) {
            if chain.current != id {
                self.unvisited.push(chain.current);
            }
            if chain.retired {
                self.unvisited.push(id);
            }
            chain.current = id;
            chain.current_name = accepted.name.clone();
            chain.energy = accepted.energy;
            chain.distance = accepted.distance;
            chain.accepted += 1;
            if accepted.from_seed {
                chain.restarts += 1;
                chain.length = 1;
            } else {
                chain.length += 1;
            }
        }
    }

    /// Notes an entry no chain stands on (another client's variant, a seed whose chain has
    /// started or retired): it will never be visited.
    pub(super) fn release(&mut self, id: CorpusId) {
        self.unvisited.push(id);
    }

    /// Every entry that no chain in the rotation stands on becomes unvisited (after a resume,
    /// whose corpus is everything on disk).
    pub fn release_unheld(&mut self, ids: impl IntoIterator<Item = CorpusId>) {
        let held = self.held();
        self.unvisited = ids.into_iter().filter(|id| !held.contains(id)).collect();
    }

    /// The entries the chains in the rotation stand on.
    pub(super) fn held(&self) -> std::collections::HashSet<CorpusId> {
        self.chains
            .values()
            .filter(|chain| !chain.retired)
            .map(|chain| chain.current)
            .collect()
    }

    /// The entry of `seed`'s chain when it stands on the state `name`.
    pub(super) fn current_state(&self, seed: &SeedId, name: &str) -> Option<CorpusId> {
        let chain = self.chains.get(seed)?;
        (chain.current_name == name).then_some(chain.current)
    }

    /// Starts a seed's chain at its entry, in the rotation; when that makes the rotation longer
    /// than `capacity`, the oldest chain retires. Returns the retired chain's seed.
    pub(super) fn start(
        &mut self,
        seed: SeedId,
        id: CorpusId,
        name: String,
        capacity: Option<usize>,
    ) -> Option<SeedId> {
        self.chains.insert(seed.clone(), Chain::new(id, name));
        self.order.push(seed);
        if capacity.is_some_and(|capacity| self.order.len() > capacity.max(1)) {
            let oldest = self.order.remove(0);
            if self.active > 0 {
                self.active -= 1;
            } else {
                // The next chain in the rotation gets a whole turn.
                self.turn_proposals = 0;
            }
            self.retire(&oldest);
            return Some(oldest);
        }
        None
    }

    fn retire(&mut self, seed: &SeedId) {
        if let Some(chain) = self.chains.get_mut(seed) {
            chain.retired = true;
            self.unvisited.push(chain.current);
        }
    }

    /// Forgets the retired chains whose seeds `stored` says are gone (a resumed campaign has no
    /// entry to put them back on either). Returns how many went.
    pub fn forget_retired(&mut self, stored: impl Fn(&SeedId) -> bool) -> usize {
        let before = self.chains.len();
        let mut restarts = 0;
        self.chains.retain(|seed, chain| {
            let kept = !chain.retired || stored(seed);
            if !kept {
                restarts += chain.restarts;
            }
            kept
        });
        let forgotten = before - self.chains.len();
        self.forgotten_chains += forgotten as u64;
        self.forgotten_restarts += restarts;
        forgotten
    }

    /// Chains started so far, remembered or not.
    pub fn started(&self) -> u64 {
        self.chains.len() as u64 + self.forgotten_chains
    }

    /// Chains in the rotation.
    pub fn rotating(&self) -> usize {
        self.order.len()
    }

    pub fn acceptance_rate(&self) -> f64 {
        self.accepted as f64 / self.proposals.max(1) as f64
    }

    /// Mean length of the chains remembered (those in the rotation, and the retired ones whose
    /// seeds are still stored).
    pub fn mean_length(&self) -> f64 {
        let n = self.chains.len().max(1) as f64;
        self.chains.values().map(|c| c.length as f64).sum::<f64>() / n
    }

    /// Times a chain started again from its seed, over all chains.
    pub fn restarts(&self) -> u64 {
        self.forgotten_restarts + self.chains.values().map(|c| c.restarts).sum::<u64>()
    }

    /// Mean distance of the chains remembered, as [`mean_length`](Self::mean_length).
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
    length: u64,
    restarts: u64,
    retired: bool,
}

/// A client's chains file, and the corpus states it names: they stay on disk until a later save
/// no longer names them, whatever the chains did since.
#[derive(Debug)]
pub struct ChainsFile {
    path: PathBuf,
    named: HashSet<String>,
}

impl ChainsFile {
    pub fn new(path: PathBuf) -> Self {
        ChainsFile {
            path,
            named: HashSet::new(),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Saves where each chain of `state` stands; the corpus files the save let go count among
    /// the chains' deleted files.
    pub fn save<S>(&mut self, state: &mut S) -> Result<(), Error>
    where
        S: HasMetadata + HasCorpus<Variant, Corpus = VariantCorpus>,
    {
        let chains = state.metadata::<McmcChains>()?;
        let named: HashSet<String> = chains
            .chains
            .values()
            .filter(|chain| !chain.retired)
            .map(|chain| chain.current_name.clone())
            .collect();
        // What the file names is on disk before it does.
        for name in named.difference(&self.named) {
            state.corpus_mut().pin(name)?;
        }
        save_chains(state.metadata::<McmcChains>()?, &self.path)?;
        let mut deleted = 0;
        for name in self.named.difference(&named) {
            deleted += state.corpus_mut().unpin(name)?;
        }
        self.named = named;
        state.metadata_mut::<McmcChains>()?.deleted_files += deleted as u64;
        Ok(())
    }
}

/// Saves where each chain stands, so that a resumed campaign continues its chains.
fn save_chains(chains: &McmcChains, path: &Path) -> std::io::Result<()> {
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
                length: c.length,
                restarts: c.restarts,
                retired: c.retired,
            };
            (seed, saved)
        })
        .collect();
    let staging = path.with_extension("tmp");
    std::fs::write(&staging, serde_json::to_vec_pretty(&saved)?)?;
    std::fs::rename(staging, path)
}

/// Puts the chains of a resumed corpus back where `save_chains` left them; chains whose state
/// is not in the corpus start again from their seed. The rotation is the chains that had not
/// retired, at most `capacity` of them. Returns how many chains were restored.
pub fn restore_chains<S>(state: &mut S, path: &Path, capacity: Option<usize>) -> Result<usize, Error>
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
        let Some(chain) = chains.chains.get_mut(&seed) else {
            continue;
        };
        match by_name.get(&saved.variant) {
            Some(id) => {
                *chain = Chain {
                    proposals: saved.proposals,
                    accepted: saved.accepted,
                    length: saved.length,
                    restarts: saved.restarts,
                    energy: saved.energy,
                    distance: saved.distance,
                    ..Chain::new(*id, saved.variant.clone())
                };
                restored += 1;
            }
            // A retired chain's state is deleted once it retired: it stays retired, with its
            // statistics, on its seed's entry.
            None if saved.retired => {
                chain.proposals = saved.proposals;
                chain.accepted = saved.accepted;
                chain.length = saved.length;
                chain.restarts = saved.restarts;
                chain.distance = saved.distance;
            }
            None => continue,
        }
        if saved.retired {
            chains.retire(&seed);
        }
    }
    chains.order = chains
        .chains
        .iter()
        .filter(|(_, chain)| !chain.retired)
        .map(|(seed, _)| seed.clone())
        .collect();
    if let Some(capacity) = capacity {
        let excess = chains.order.len().saturating_sub(capacity.max(1));
        for seed in chains.order.drain(..excess).collect::<Vec<_>>() {
            chains.retire(&seed);
        }
    }
    chains.active = 0;
    chains.turn_proposals = 0;
    Ok(restored)
}

#[cfg(test)]
mod tests;
