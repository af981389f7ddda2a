//! [`AcceptanceFeedback`]: the Metropolis–Hastings acceptance of a proposal after it was
//! compiled and run. Energy E = Athena's Δ(Q*; seed) + w_c·(compiler-coverage entries it set
//! first) + w_o·(optimization counters it set first); zero weights are Athena as published.
//! Every decision is appended to `OUT/mcmc/client-N.csv`.

use crate::mcmc::chains::Acceptance;
use crate::mcmc::decision_log::fixed;
use crate::mcmc::{DecisionLog, FamilyYields, Guidance, McmcChains, PendingProposal};
use ccfuzz_mutators::athena::AthenaParams;
use ccfuzz_mutators::flow_graph::SeedGraph;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::metropolis::accepts;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedId;
use ccfuzz_observers::novelty::Novelty;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::state::HasRand;
use libafl::{Error, HasMetadata};
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Instant;

/// The accepted proposal about to enter the corpus, for the scheduler's `on_add`, which moves
/// the chain there. It carries the input while it is still in memory: the corpus writes a new
/// entry's input to disk and drops it, and the chain that moves there would read it back at its
/// next proposal (through its differences, and compute its name again): a fifth of the client's
/// CPU against tcc.
#[derive(Debug, Serialize, Deserialize)]
pub(super) struct AcceptedProposal {
    pub(super) input: Variant,
    pub(super) acceptance: Acceptance,
}
impl_serdeany!(AcceptedProposal);

/// Accepts or rejects the pending proposal by the Metropolis–Hastings rule. Inputs that are not
/// this client's pending proposal (imports, seeds) are left to the other feedbacks.
pub struct AcceptanceFeedback {
    programs: Arc<Programs>,
    params: AthenaParams,
    guidance: Guidance,
    /// Least recently used first.
    seed_graphs: VecDeque<(SeedId, Arc<SeedGraph>)>,
    log: Option<DecisionLog>,
    started: Instant,
}

/// Seed graphs kept, the most recently used: a chain's seed's graph is needed on every
/// proposal, and a turn of the rotation (four chains by default) visits few seeds. A csmith
/// seed's graph holds about 70 KB of heap (`ccfuzz bench --parts variants`): 64 of them, the
/// seeds of an hour, grew a client's heap by 4.5 MB before the first clearing.
const SEED_GRAPHS_KEPT: usize = 8;

impl AcceptanceFeedback {
    pub fn new(
        programs: Arc<Programs>,
        params: AthenaParams,
        guidance: Guidance,
        log: Option<DecisionLog>,
    ) -> Result<Self, Error> {
        Ok(AcceptanceFeedback {
            programs,
            params,
            guidance,
            seed_graphs: VecDeque::new(),
            log,
            started: Instant::now(),
        })
    }

    /// The graph of `seed`, built on a miss; graphs of retired chains' seeds go first.
    fn seed_graph(&mut self, seed: &SeedId, chains: &McmcChains) -> Result<Arc<SeedGraph>, Error> {
        if let Some(at) = self.seed_graphs.iter().position(|(id, _)| id == seed) {
            let entry = self.seed_graphs.remove(at).expect("position is in range");
            let cfg = entry.1.clone();
            self.seed_graphs.push_back(entry);
            return Ok(cfg);
        }
        let loaded = self
            .programs
            .get(seed)
            .map_err(|e| Error::illegal_state(format!("mcmc: {e:#}")))?;
        self.seed_graphs
            .retain(|(id, _)| chains.chains.get(id).is_some_and(|chain| !chain.retired));
        if self.seed_graphs.len() >= SEED_GRAPHS_KEPT {
            self.seed_graphs.pop_front();
        }
        let graph = Arc::new(SeedGraph::of(&loaded.program));
        self.seed_graphs.push_back((seed.clone(), graph.clone()));
        Ok(graph)
    }

    /// Athena's Δ of a variant from its seed.
    fn distance_of(&mut self, input: &Variant, chains: &McmcChains) -> Result<f64, Error> {
        let seed_graph = self.seed_graph(&input.seed, chains)?;
        let loaded = self
            .programs
            .get(&input.seed)
            .map_err(|e| Error::illegal_state(format!("mcmc: {e:#}")))?;
        Ok(seed_graph.distance(&loaded.program, input.edits(), self.params.weights))
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
    /// Reads the [`Novelty`] that `NoveltyFeedback` measured on this execution just before
    /// ([`super::CorpusFeedback`] runs them in that order).
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
        let novelty = state.metadata::<Novelty>().copied().unwrap_or_default();
        state
            .metadata_or_insert_with(FamilyYields::default)
            .record_novelty(pending.family, (novelty.new_coverage + novelty.new_counters) as u64);
        let chains = state.metadata_or_insert_with(McmcChains::default);
        let Some(chain) = chains.chains.get(&input.seed) else {
            log::debug!("mcmc: no chain for seed {}", input.seed);
            return Ok(false);
        };
        // A chain that starts again stands on its seed, whose energy is nought.
        let current_energy = if pending.from_seed { 0.0 } else { chain.energy };
        let proposed_distance = self.distance_of(input, chains)?;
        let energy = proposed_distance
            + self.guidance.coverage * novelty.new_coverage as f64
            + self.guidance.counters * novelty.new_counters as f64;
        let accepted = accepts(
            current_energy,
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
        let (length, distance_now) = match (accepted, pending.from_seed) {
            (true, true) => (1, proposed_distance),
            (true, false) => (entry.length + 1, proposed_distance),
            (false, true) => (0, 0.0),
            (false, false) => (entry.length, entry.distance),
        };
        chains.by_length.record(length, distance_now);
        if let Some(log) = &mut self.log {
            log.record(format_args!(
                "{},{},{},{:?},{},{},{},{},{},{},{},{}",
                fixed(self.started.elapsed().as_secs_f64(), 1),
                input.seed,
                name,
                pending.family,
                u8::from(accepted),
                entry.proposals,
                length,
                fixed(distance_now, 6),
                fixed(proposed_distance, 6),
                novelty.new_coverage,
                novelty.new_counters,
                fixed(pending.log_q_ratio, 4)
            ))?;
        }
        if !accepted {
            return Ok(false);
        }
        let acceptance = Acceptance {
            name,
            energy,
            distance: proposed_distance,
            from_seed: pending.from_seed,
        };
        if let Some(known) = chains.current_state(&input.seed, &acceptance.name) {
            chains.move_chain(&input.seed, known, &acceptance);
            return Ok(false);
        }
        state.add_metadata(AcceptedProposal {
            input: input.clone(),
            acceptance,
        });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfuzz_mutators::seed::SeedStore;
    use ccfuzz_mutators::testing::stored_counting_seed;
    use libafl::corpus::CorpusId;

    #[test]
    fn graphs_of_retired_chains_seeds_go_before_those_in_the_rotation() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeedStore::open(dir.path()).unwrap();
        let programs = Arc::new(Programs::new(store.clone(), usize::MAX));
        let mut feedback =
            AcceptanceFeedback::new(programs, AthenaParams::default(), Guidance::default(), None).unwrap();
        let mut chains = McmcChains::default();
        let seeds: Vec<SeedId> = (0..6).map(|n| stored_counting_seed(&store, n + 1)).collect();
        // A rotation of two: each new chain retires the oldest.
        for (n, seed) in seeds.iter().enumerate() {
            chains.start(seed.clone(), CorpusId(n), seed.0.clone(), Some(2));
            feedback.seed_graph(seed, &chains).unwrap();
        }
        let kept: Vec<&SeedId> = feedback.seed_graphs.iter().map(|(id, _)| id).collect();
        assert_eq!(kept, [&seeds[4], &seeds[5]]);
        // Without a rotation every chain stays, and the most recent graphs are kept.
        let mut chains = McmcChains::default();
        for (n, seed) in seeds.iter().enumerate() {
            chains.start(seed.clone(), CorpusId(n), seed.0.clone(), None);
            feedback.seed_graph(seed, &chains).unwrap();
        }
        assert_eq!(feedback.seed_graphs.len(), 6);
    }
}
