//! [`McmcScheduler`]: hands out the current state of the active chain, moves a chain to a
//! newly added accepted proposal, starts a chain for every seed, turns to the next seed after a
//! number of proposals, and retires the oldest chain when the rotation is full, so that a
//! client holds the parsed seeds and the corpus records of a few chains however long it runs.

use crate::mcmc::acceptance::{AddedVariant, LastAcceptance};
use crate::mcmc::McmcChains;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use libafl::corpus::{Corpus, CorpusId};
use libafl::schedulers::{RemovableScheduler, Scheduler};
use libafl::state::HasCorpus;
use libafl::{Error, HasMetadata};
use std::sync::Arc;

/// Schedules the current states of the chains, one seed's chain at a time.
#[derive(Debug)]
pub struct McmcScheduler {
    proposals_per_turn: u64,
    /// Chains in the rotation at most; `None` keeps every chain (a fixed set of seeds).
    rotation: Option<usize>,
    /// Forgets a retired chain's parsed seed.
    programs: Arc<Programs>,
}

impl McmcScheduler {
    pub fn new(proposals_per_turn: u64, rotation: Option<usize>, programs: Arc<Programs>) -> Self {
        McmcScheduler {
            proposals_per_turn: proposals_per_turn.max(1),
            rotation,
            programs,
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
        // An entry the fuzzer added was described by the acceptance feedback; one added
        // otherwise (a stored seed, a resumed state) is read back from disk.
        let filename = state.corpus().get(id)?.borrow().filename().clone();
        let added = match state.remove_metadata::<AddedVariant>() {
            Some(added) if filename.as_deref() == Some(added.name.as_str()) => *added,
            _ => {
                let input = state.corpus().cloned_input_for_id(id)?;
                AddedVariant {
                    name: input.name(),
                    unedited: input.edits().is_empty(),
                    seed: input.seed,
                }
            }
        };
        let AddedVariant { seed, name, unedited } = added;
        let acceptance = state
            .metadata_map()
            .get::<LastAcceptance>()
            .filter(|a| a.name == name)
            .map(|a| (a.energy, a.distance));
        let chains = state.metadata_or_insert_with(McmcChains::default);
        if let Some((energy, distance)) = acceptance {
            chains.move_chain(&seed, id, &name, energy, distance);
            chains.hold(&seed, id);
            state.remove_metadata::<LastAcceptance>();
        } else if unedited && !chains.chains.contains_key(&seed) {
            // A chain holds its seed's entry from its start.
            if let Some(retired) = chains.start(seed.clone(), id, name, self.rotation) {
                log::debug!("mcmc: the chain of seed {retired} retires");
                self.programs.forget(&retired);
            }
        } else {
            chains.hold(&seed, id);
        }
        Ok(())
    }

    fn next(&mut self, state: &mut S) -> Result<CorpusId, Error> {
        forget_unvisited(state)?;
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

/// Takes the entries no chain will visit again out of the in-memory corpus, leaving their files
/// in `corpus/` (LibAFL's removal would delete them). Done when the next entry is scheduled, so
/// that nothing is removed under a stage or an event handler that still holds an id.
fn forget_unvisited<S>(state: &mut S) -> Result<(), Error>
where
    S: HasCorpus<Variant> + HasMetadata,
{
    let (unvisited, held) = match state.metadata_map_mut().get_mut::<McmcChains>() {
        Some(chains) if !chains.unvisited.is_empty() => (std::mem::take(&mut chains.unvisited), chains.held()),
        _ => return Ok(()),
    };
    let mut forgotten = 0;
    // An entry a chain in the rotation holds stays, whatever put it on the list.
    for id in unvisited.into_iter().filter(|id| !held.contains(id)) {
        let Ok(testcase) = state.corpus().get(id) else {
            continue;
        };
        testcase.borrow_mut().filename_mut().take();
        state.corpus_mut().remove(id)?;
        forgotten += 1;
    }
    if let Some(chains) = state.metadata_map_mut().get_mut::<McmcChains>() {
        chains.forgotten += forgotten;
    }
    Ok(())
}
