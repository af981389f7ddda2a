//! The chains, one per seed, as state metadata: where each stands, its statistics, which are in
//! the rotation and which retired, and their saving and restoring across a resumed campaign.

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
    /// Out of the rotation for good: a newer seed took its place.
    pub retired: bool,
    /// Corpus entries of the chain's states by variant name: a chain that returns to a state
    /// moves to its entry instead of adding it again. Emptied when the chain retires.
    pub(super) states: HashMap<String, CorpusId>,
    /// Every corpus entry of the chain's seed in this client: its states and the variants other
    /// clients sent. They leave the client's memory when the chain retires.
    pub(super) entries: Vec<CorpusId>,
}

impl Chain {
    pub(super) fn new(current: CorpusId, current_name: String) -> Self {
        let states = HashMap::from([(current_name.clone(), current)]);
        Chain {
            entries: vec![current],
            current,
            current_name,
            energy: 0.0,
            distance: 0.0,
            proposals: 0,
            accepted: 0,
            retired: false,
            states,
        }
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
    /// a record of every entry in memory (file names, paths, metadata), which over a day of
    /// retired chains is what would keep a client's memory growing.
    pub(super) unvisited: Vec<CorpusId>,
    /// Entries forgotten so far; their files stay in `corpus/`.
    pub forgotten: u64,
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
            if !chain.retired {
                chain.states.insert(name.to_string(), id);
            }
        }
    }

    /// Notes a new corpus entry of `seed`'s chain; an entry of a seed without a chain in the
    /// rotation will never be visited.
    pub(super) fn hold(&mut self, seed: &SeedId, id: CorpusId) {
        match self.chains.get_mut(seed) {
            Some(chain) if !chain.retired => chain.entries.push(id),
            _ => self.unvisited.push(id),
        }
    }

    /// Every entry that no chain in the rotation holds becomes unvisited (after a resume, whose
    /// corpus is everything on disk).
    pub fn release_unheld(&mut self, ids: impl IntoIterator<Item = CorpusId>) {
        let held = self.held();
        self.unvisited = ids.into_iter().filter(|id| !held.contains(id)).collect();
    }

    /// The entries of the chains in the rotation, their current states included.
    pub(super) fn held(&self) -> std::collections::HashSet<CorpusId> {
        self.chains
            .values()
            .filter(|chain| !chain.retired)
            .flat_map(|chain| chain.entries.iter().copied().chain([chain.current]))
            .collect()
    }

    /// The corpus entry of a state a seed's chain has been in.
    pub(super) fn known_state(&self, seed: &SeedId, name: &str) -> Option<CorpusId> {
        self.chains.get(seed)?.states.get(name).copied()
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
            chain.states = HashMap::new();
            self.unvisited.append(&mut chain.entries);
        }
    }

    /// Chains in the rotation.
    pub fn rotating(&self) -> usize {
        self.order.len()
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
    #[serde(default)]
    retired: bool,
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
        let (Some(chain), Some(&id)) = (chains.chains.get_mut(&seed), by_name.get(&saved.variant)) else {
            continue;
        };
        let entries = std::mem::take(&mut chain.entries);
        *chain = Chain {
            proposals: saved.proposals,
            accepted: saved.accepted,
            energy: saved.energy,
            distance: saved.distance,
            entries,
            ..Chain::new(id, saved.variant)
        };
        if saved.retired {
            chains.retire(&seed);
        }
        restored += 1;
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
mod tests {
    use super::*;

    fn seed(n: u8) -> SeedId {
        SeedId(format!("seed{n}"))
    }

    #[test]
    fn a_full_rotation_retires_its_oldest_chain_and_keeps_the_active_one_turning() {
        let mut chains = McmcChains::default();
        for n in 0..3 {
            assert_eq!(
                chains.start(seed(n), CorpusId(n.into()), format!("v{n}"), Some(3)),
                None
            );
        }
        chains.active = 2;
        chains.move_chain(&seed(0), CorpusId(7), "w0", 1.0, 0.5);
        chains.hold(&seed(0), CorpusId(7));
        assert_eq!(chains.known_state(&seed(0), "w0"), Some(CorpusId(7)));

        assert_eq!(chains.start(seed(3), CorpusId(3), "v3".into(), Some(3)), Some(seed(0)));
        assert_eq!(chains.order, [seed(1), seed(2), seed(3)]);
        // The chain that was turning still is.
        assert_eq!(chains.order[chains.active], seed(2));
        let retired = &chains.chains[&seed(0)];
        assert!(retired.retired && retired.states.is_empty() && retired.entries.is_empty());
        // The retired chain's seed entry and its state go; the other chains keep theirs.
        assert_eq!(chains.unvisited, [CorpusId(0), CorpusId(7)]);
        assert_eq!((retired.accepted, retired.current), (1, CorpusId(7)));
        assert_eq!(chains.known_state(&seed(0), "w0"), None);

        // Retiring the active chain hands a whole turn to the next.
        chains.active = 0;
        chains.turn_proposals = 9;
        assert_eq!(chains.start(seed(4), CorpusId(4), "v4".into(), Some(3)), Some(seed(1)));
        assert_eq!(
            (chains.order[chains.active].clone(), chains.turn_proposals),
            (seed(2), 0)
        );
    }

    #[test]
    fn without_a_capacity_every_chain_keeps_turning() {
        let mut chains = McmcChains::default();
        for n in 0..50 {
            assert_eq!(chains.start(seed(n), CorpusId(n.into()), format!("v{n}"), None), None);
        }
        assert_eq!(chains.rotating(), 50);
    }

    #[test]
    fn entries_without_a_chain_in_the_rotation_are_unvisited() {
        let mut chains = McmcChains::default();
        chains.start(seed(0), CorpusId(0), "v0".into(), Some(1));
        // Another client's variant of this seed, and one of a seed with no chain here.
        chains.hold(&seed(0), CorpusId(1));
        chains.hold(&seed(9), CorpusId(2));
        assert_eq!(chains.unvisited, [CorpusId(2)]);
        chains.start(seed(1), CorpusId(3), "v1".into(), Some(1));
        assert_eq!(chains.unvisited, [CorpusId(2), CorpusId(0), CorpusId(1)]);
        // A variant arriving for the retired seed is not kept either.
        chains.hold(&seed(0), CorpusId(4));
        assert_eq!(chains.unvisited.last(), Some(&CorpusId(4)));

        // After a resume, whatever the rotation does not hold; a chain's current state (as
        // restored from the chains file) is held.
        chains.chains.get_mut(&seed(1)).unwrap().current = CorpusId(5);
        chains.release_unheld((0..6).map(CorpusId));
        assert_eq!(chains.unvisited, [0, 1, 2, 4].map(CorpusId));
    }
}
