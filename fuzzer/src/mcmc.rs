//! The campaign's MCMC: one Metropolis–Hastings chain per seed, as LibAFL pieces.
//!
//! - [`ChainMutator`] proposes Q* from the chain's state Q with Athena, Hermes or Orion and
//!   leaves the proposal's ln q(Q|Q*)/q(Q*|Q) in the state ([`PendingProposal`]).
//! - [`AcceptanceFeedback`] judges the proposal after it was compiled and run (so every proposal
//!   is tested for mismatches): energy E = Athena's Δ(Q*; seed) + w_c·(compiler-coverage entries
//!   it set first) + w_o·(optimization counters it set first), accepted with the Metropolis–
//!   Hastings probability. Zero weights are Athena as published. An accepted proposal is
//!   corpus-worthy.
//! - [`McmcScheduler`] hands out the current state of the active chain, moves a chain to a newly
//!   added accepted proposal, starts a chain for every seed and turns to the next seed after a
//!   number of proposals.
//!
//! Chains and their statistics are state metadata ([`McmcChains`]); every decision is appended
//! to `OUT/mcmc/client-N.csv`.

use ccfuzz_mutators::athena::{AthenaMutator, AthenaParams};
use ccfuzz_mutators::cfg::{distance, Cfg};
use ccfuzz_mutators::hermes::{HermesMutator, Strategy};
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::metropolis::accepts;
use ccfuzz_mutators::orion::OrionMutator;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedId;
use ccfuzz_observers::novelty::Novelty;
use clap::ValueEnum;
use libafl::corpus::{Corpus, CorpusId};
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::mutators::{MutationResult, Mutator};
use libafl::schedulers::{RemovableScheduler, Scheduler};
use libafl::state::{HasCorpus, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::Rand;
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

/// The mutator families that propose moves of the chains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
pub enum Family {
    Athena,
    Hermes,
    Orion,
}

/// Weights of the compilers' feedback in the energy.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Guidance {
    /// Per compiler-coverage entry (AFL edge or gcov line) a proposal covered first.
    pub coverage: f64,
    /// Per optimization counter a proposal set first.
    pub counters: f64,
}

#[derive(Clone, Debug)]
pub struct McmcOptions {
    pub athena: AthenaParams,
    pub guidance: Guidance,
    /// Proposals made on a seed's chain before turning to the next seed.
    pub proposals_per_turn: u64,
    /// Families drawn uniformly for each proposal.
    pub families: Vec<Family>,
}

impl Default for McmcOptions {
    fn default() -> Self {
        McmcOptions {
            athena: AthenaParams::default(),
            guidance: Guidance::default(),
            proposals_per_turn: 50,
            families: vec![Family::Athena, Family::Hermes],
        }
    }
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
    fn record(&mut self, length: u64, distance: f64) {
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
    order: Vec<SeedId>,
    active: usize,
    turn_proposals: u64,
    pub proposals: u64,
    pub accepted: u64,
    pub by_length: DistanceByLength,
    /// Corpus entries of the chains' states by variant name: a chain that returns to a state
    /// moves to its entry instead of adding it again.
    states: HashMap<String, CorpusId>,
}
impl_serdeany!(McmcChains);

impl McmcChains {
    fn move_chain(&mut self, seed: &SeedId, id: CorpusId, name: &str, energy: f64, distance: f64) {
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

/// The proposal just made, to be judged once it has run.
#[derive(Debug, Serialize, Deserialize)]
pub struct PendingProposal {
    name: String,
    log_q_ratio: f64,
    family: Family,
}
impl_serdeany!(PendingProposal);

/// The last acceptance, so that the scheduler moves the chain when the entry is added.
#[derive(Debug, Serialize, Deserialize)]
struct LastAcceptance {
    name: String,
    energy: f64,
    distance: f64,
}
impl_serdeany!(LastAcceptance);

/// Proposes a move of the chain with a family drawn uniformly.
pub struct ChainMutator {
    families: Vec<Family>,
    athena: AthenaMutator,
    hermes: [HermesMutator; 3],
    orion: OrionMutator,
}

impl ChainMutator {
    pub fn new(programs: Arc<Programs>, families: Vec<Family>) -> Self {
        ChainMutator {
            families,
            athena: AthenaMutator::new(programs.clone()),
            hermes: Strategy::ALL.map(|s| HermesMutator::new(programs.clone(), s)),
            orion: OrionMutator::new(programs),
        }
    }
}

impl Named for ChainMutator {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("chain");
        &NAME
    }
}

impl<S: HasRand + HasMetadata> Mutator<Variant, S> for ChainMutator {
    fn mutate(&mut self, state: &mut S, input: &mut Variant) -> Result<MutationResult, Error> {
        let family = *state
            .rand_mut()
            .choose(&self.families)
            .ok_or_else(|| Error::illegal_argument("no mutator family"))?;
        // Hermes and Orion moves are taken as symmetric: their reverse is not countable.
        let (result, log_q_ratio) = match family {
            Family::Athena => {
                let result = self.athena.mutate(state, input)?;
                (result, self.athena.last_log_q_ratio)
            }
            Family::Hermes => {
                let strategy = state.rand_mut().below_or_zero(self.hermes.len());
                (self.hermes[strategy].mutate(state, input)?, 0.0)
            }
            Family::Orion => (self.orion.mutate(state, input)?, 0.0),
        };
        if result == MutationResult::Mutated {
            state.add_metadata(PendingProposal {
                name: input.name(),
                log_q_ratio,
                family,
            });
        }
        Ok(result)
    }

    fn post_exec(&mut self, _state: &mut S, _new_corpus_id: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

/// Accepts or rejects the pending proposal by the Metropolis–Hastings rule. Inputs that are not
/// this client's pending proposal (imports, seeds) are left to the other feedbacks.
pub struct AcceptanceFeedback {
    programs: Arc<Programs>,
    params: AthenaParams,
    guidance: Guidance,
    seed_cfgs: HashMap<SeedId, Arc<Cfg>>,
    log: Option<BufWriter<File>>,
    started: Instant,
}

/// Seed graphs kept; a chain's seed is needed on every proposal.
const SEED_CFGS_KEPT: usize = 64;

impl AcceptanceFeedback {
    pub fn new(
        programs: Arc<Programs>,
        params: AthenaParams,
        guidance: Guidance,
        log_path: Option<&Path>,
    ) -> Result<Self, Error> {
        let log = match log_path {
            Some(path) => {
                if let Some(dir) = path.parent() {
                    std::fs::create_dir_all(dir)?;
                }
                let fresh = !path.exists();
                let mut writer = BufWriter::new(File::options().create(true).append(true).open(path)?);
                if fresh {
                    writeln!(
                        writer,
                        "seconds,seed,variant,family,accepted,chain_proposals,chain_length,distance,proposed_distance,new_coverage,new_counters,log_q_ratio"
                    )?;
                }
                Some(writer)
            }
            None => None,
        };
        Ok(AcceptanceFeedback {
            programs,
            params,
            guidance,
            seed_cfgs: HashMap::new(),
            log,
            started: Instant::now(),
        })
    }

    fn seed_cfg(&mut self, seed: &SeedId) -> Result<Arc<Cfg>, Error> {
        if let Some(cfg) = self.seed_cfgs.get(seed) {
            return Ok(cfg.clone());
        }
        let loaded = self
            .programs
            .get(seed)
            .map_err(|e| Error::illegal_state(format!("mcmc: {e:#}")))?;
        if self.seed_cfgs.len() >= SEED_CFGS_KEPT {
            self.seed_cfgs.clear();
        }
        let cfg = Arc::new(Cfg::of_seed(&loaded.program));
        self.seed_cfgs.insert(seed.clone(), cfg.clone());
        Ok(cfg)
    }

    /// Athena's Δ of a variant from its seed.
    fn distance_of(&mut self, input: &Variant) -> Result<f64, Error> {
        let seed_cfg = self.seed_cfg(&input.seed)?;
        let loaded = self
            .programs
            .get(&input.seed)
            .map_err(|e| Error::illegal_state(format!("mcmc: {e:#}")))?;
        let cfg = Cfg::of_variant(&loaded.program, &input.edits);
        Ok(distance(&cfg, &seed_cfg, self.params.weights))
    }
}

impl Named for AcceptanceFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("mcmc_acceptance");
        &NAME
    }
}

impl<S: HasMetadata> StateInitializer<S> for AcceptanceFeedback {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        state.metadata_or_insert_with(McmcChains::default);
        Ok(())
    }
}

impl<EM, OT, S: HasMetadata + HasRand> Feedback<EM, Variant, OT, S> for AcceptanceFeedback {
    /// Reads the [`Novelty`] that `NoveltyFeedback` measured on this execution just before.
    fn is_interesting(
        &mut self,
        state: &mut S,
        _mgr: &mut EM,
        input: &Variant,
        _observers: &OT,
        _exit: &ExitKind,
    ) -> Result<bool, Error> {
        let Some(pending) = state.remove_metadata::<PendingProposal>() else {
            return Ok(false);
        };
        let name = input.name();
        if pending.name != name {
            log::debug!("mcmc: {name} is not the pending proposal {}", pending.name);
            return Ok(false);
        }
        let Some(chain) = state
            .metadata_or_insert_with(McmcChains::default)
            .chains
            .get(&input.seed)
            .cloned()
        else {
            log::debug!("mcmc: no chain for seed {}", input.seed);
            return Ok(false);
        };
        let proposed_distance = self.distance_of(input)?;
        let novelty = state.metadata::<Novelty>().copied().unwrap_or_default();
        let energy = proposed_distance
            + self.guidance.coverage * novelty.new_coverage as f64
            + self.guidance.counters * novelty.new_counters as f64;
        let accepted = accepts(
            chain.energy,
            energy,
            pending.log_q_ratio,
            self.params.sigma,
            state.rand_mut(),
        );
        let chains = state.metadata_or_insert_with(McmcChains::default);
        chains.proposals += 1;
        chains.accepted += u64::from(accepted);
        let entry = chains.chains.get_mut(&input.seed).expect("the chain exists");
        entry.proposals += 1;
        let (length, distance_now) = if accepted {
            (entry.accepted + 1, proposed_distance)
        } else {
            (entry.accepted, entry.distance)
        };
        chains.by_length.record(length, distance_now);
        if let Some(log) = &mut self.log {
            writeln!(
                log,
                "{:.1},{},{},{:?},{},{},{},{:.6},{:.6},{},{},{:.4}",
                self.started.elapsed().as_secs_f64(),
                input.seed,
                name,
                pending.family,
                u8::from(accepted),
                entry.proposals,
                length,
                distance_now,
                proposed_distance,
                novelty.new_coverage,
                novelty.new_counters,
                pending.log_q_ratio
            )?;
            log.flush()?;
        }
        if !accepted {
            return Ok(false);
        }
        if let Some(&known) = chains.states.get(&name) {
            chains.move_chain(&input.seed, known, &name, energy, proposed_distance);
            return Ok(false);
        }
        state.add_metadata(LastAcceptance {
            name,
            energy,
            distance: proposed_distance,
        });
        Ok(true)
    }
}

/// Schedules the current states of the chains, one seed's chain at a time.
#[derive(Debug)]
pub struct McmcScheduler {
    proposals_per_turn: u64,
}

impl McmcScheduler {
    pub fn new(proposals_per_turn: u64) -> Self {
        McmcScheduler {
            proposals_per_turn: proposals_per_turn.max(1),
        }
    }
}

impl<I, S> RemovableScheduler<I, S> for McmcScheduler {}

impl<S> Scheduler<Variant, S> for McmcScheduler
where
    S: HasCorpus<Variant> + HasMetadata,
{
    fn on_add(&mut self, state: &mut S, id: CorpusId) -> Result<(), Error> {
        let current = *state.corpus().current();
        state.corpus().get(id)?.borrow_mut().set_parent_id_optional(current);
        // The on-disk corpus keeps inputs on disk only.
        let input = state.corpus().cloned_input_for_id(id)?;
        let name = input.name();
        let acceptance = state
            .metadata_map()
            .get::<LastAcceptance>()
            .filter(|a| a.name == name)
            .map(|a| (a.energy, a.distance));
        let chains = state.metadata_or_insert_with(McmcChains::default);
        if let Some((energy, distance)) = acceptance {
            chains.move_chain(&input.seed, id, &name, energy, distance);
            chains.states.insert(name, id);
            state.remove_metadata::<LastAcceptance>();
        } else if input.edits.is_empty() && !chains.chains.contains_key(&input.seed) {
            chains.order.push(input.seed.clone());
            chains.chains.insert(
                input.seed.clone(),
                Chain {
                    current: id,
                    current_name: name.clone(),
                    energy: 0.0,
                    distance: 0.0,
                    proposals: 0,
                    accepted: 0,
                },
            );
            chains.states.insert(name, id);
        }
        Ok(())
    }

    fn next(&mut self, state: &mut S) -> Result<CorpusId, Error> {
        let chains = state.metadata_or_insert_with(McmcChains::default);
        let id = if chains.order.is_empty() {
            None
        } else {
            if chains.turn_proposals >= self.proposals_per_turn {
                chains.turn_proposals = 0;
                chains.active = (chains.active + 1) % chains.order.len();
            }
            chains.turn_proposals += 1;
            let seed = &chains.order[chains.active % chains.order.len()];
            Some(chains.chains[seed].current)
        };
        let id = match id.or_else(|| state.corpus().first()) {
            Some(id) => id,
            None => return Err(Error::empty("the corpus is empty")),
        };
        self.set_current_scheduled(state, Some(id))?;
        Ok(id)
    }

    fn set_current_scheduled(&mut self, state: &mut S, next_id: Option<CorpusId>) -> Result<(), Error> {
        *state.corpus_mut().current_mut() = next_id;
        Ok(())
    }
}
