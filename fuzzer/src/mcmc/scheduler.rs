//! [`McmcScheduler`]: hands out the current state of the active chain, moves a chain to a
//! newly added accepted proposal, starts a chain for every seed, turns to the next seed after a
//! number of proposals, and retires the oldest chain when the rotation is full, so that a
//! client holds the parsed seeds of a few chains, and one corpus record per chain, however long
//! it runs.

use crate::judge::new_seed::SeedsInCorpus;
use crate::mcmc::acceptance::AcceptedProposal;
use crate::mcmc::McmcChains;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::saved::corpus::VariantCorpus;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_observers::novelty::Novelty;
use libafl::corpus::{Corpus, CorpusId};
use libafl::schedulers::{RemovableScheduler, Scheduler};
use libafl::state::HasCorpus;
use libafl::{Error, HasMetadata};
use std::collections::HashSet;
use std::sync::Arc;

/// Schedules the current states of the chains, one seed's chain at a time.
#[derive(Debug)]
pub struct McmcScheduler {
    proposals_per_turn: u64,
    /// Chains in the rotation at most; `None` keeps every chain (a fixed set of seeds).
    rotation: Option<usize>,
    /// Forgets a retired chain's parsed seed.
    programs: Arc<Programs>,
    /// Entries whose inputs this scheduler put back in memory; each is dropped once no chain
    /// stands there, so that they stay as few as the chains (a state holds its chain's every
    /// edit).
    kept_inputs: Vec<CorpusId>,
    /// Entries that are chain states and nothing else (no new coverage, counters or seed):
    /// their files may go once they are forgotten.
    states_only: HashSet<CorpusId>,
    /// With a rotation and pruning, how many of the seeds stored last stay in the store however
    /// old and retired; older retired ones leave it when a chain retires.
    seeds_kept: Option<usize>,
}

/// Seeds kept in the store, per chain of the rotation and per client, however old and retired
/// (see [`prune_retired_seeds`]): sixteen rotations' worth, so that a client busy with one
/// long execution while the others make seeds has not missed its turn to retire one.
const SEEDS_KEPT_PER_CHAIN: usize = 16;

impl McmcScheduler {
    pub fn new(proposals_per_turn: u64, rotation: Option<usize>, programs: Arc<Programs>) -> Self {
        McmcScheduler {
            proposals_per_turn: proposals_per_turn.max(1),
            rotation,
            programs,
            kept_inputs: Vec::new(),
            states_only: HashSet::new(),
            seeds_kept: None,
        }
    }

    /// With a rotation, old retired seeds that nothing kept needs leave the campaign's store,
    /// which `clients` share (the corpus decides what it keeps that needs them).
    pub fn pruning_seeds(mut self, clients: usize) -> Self {
        self.seeds_kept = self
            .rotation
            .map(|rotation| SEEDS_KEPT_PER_CHAIN * rotation.max(1) * clients.max(1));
        self
    }

    /// Gzips a retired chain's seed, and has the corpus remove the old retired seeds that may go.
    fn retire_seed(&self, retired: &SeedId, corpus: &VariantCorpus) {
        self.programs.forget(retired);
        let store = self.programs.store();
        if let Err(e) = store.compress(retired) {
            log::warn!("seed {retired} stays uncompressed: {e:#}");
        }
        if let Some(kept) = self.seeds_kept {
            match corpus.prune_retired_seeds(store, kept) {
                Ok(0) => {}
                Ok(pruned) => log::debug!("mcmc: {pruned} old retired seeds left the store"),
                Err(e) => log::warn!("cannot remove old retired seeds: {e:#}"),
            }
        }
    }
}

/// Forgets the retired chains, and the seeds the corpus had, whose seeds left the store (this
/// client's pruning or another's): both would otherwise grow by a record for every seed the
/// campaign ever made.
fn forget_seeds_gone<S: HasMetadata>(state: &mut S, store: &SeedStore) {
    if let Ok(chains) = state.metadata_mut::<McmcChains>() {
        let forgotten = chains.forget_retired(|seed| store.contains(seed));
        if forgotten > 0 {
            log::debug!("mcmc: forgot {forgotten} retired chains whose seeds left the store");
        }
    }
    if let Ok(seeds) = state.metadata_mut::<SeedsInCorpus>() {
        seeds.0.retain(|seed| store.contains(seed));
    }
}

impl<I, S> RemovableScheduler<I, S> for McmcScheduler {}

impl<S> Scheduler<Variant, S> for McmcScheduler
where
    S: HasCorpus<Variant, Corpus = VariantCorpus> + HasMetadata,
{
    fn on_add(&mut self, state: &mut S, id: CorpusId) -> Result<(), Error> {
        let current = *state.corpus().current();
        state.corpus().get(id)?.borrow_mut().set_parent_id_optional(current);
        // An accepted proposal's input was handed over by the acceptance feedback, and goes back
        // into the entry, which the corpus left without one: a chain moves there next. The entry
        // is dropped when no chain stands on it any more (`forget_unvisited`). An entry added
        // otherwise (a seed, a resumed state, another client's variant) is read back.
        let filename = state.corpus().get(id)?.borrow().filename().clone();
        let accepted = match state.metadata_map().get::<AcceptedProposal>() {
            Some(accepted) if filename.as_deref() == Some(accepted.acceptance.name.as_str()) => {
                state.remove_metadata::<AcceptedProposal>()
            }
            _ => None,
        };
        let (seed, name, unedited, acceptance) = match accepted.map(|accepted| *accepted) {
            Some(AcceptedProposal { input, acceptance }) => {
                let (seed, unedited) = (input.seed.clone(), input.edits().is_empty());
                let mut entry = state.corpus().get(id)?.borrow_mut();
                if entry.input().is_none() {
                    *entry.input_mut() = Some(input);
                    self.kept_inputs.push(id);
                }
                (seed, acceptance.name.clone(), unedited, Some(acceptance))
            }
            None => {
                let input = state.corpus().cloned_input_for_id(id)?;
                (input.seed.clone(), input.name(), input.edits().is_empty(), None)
            }
        };
        if acceptance.is_some() && !added_novelty(state, id)? {
            self.states_only.insert(id);
        }
        let chains = state.metadata_or_insert_with(McmcChains::default);
        if let Some(acceptance) = acceptance {
            chains.move_chain(&seed, id, &acceptance);
        } else if unedited && !chains.chains.contains_key(&seed) {
            // A chain starts on its seed's entry.
            if let Some(retired) = chains.start(seed.clone(), id, name, self.rotation) {
                log::debug!("mcmc: the chain of seed {retired} retires");
                self.retire_seed(&retired, state.corpus());
                forget_seeds_gone(state, self.programs.store());
            }
        } else {
            chains.release(id);
        }
        Ok(())
    }

    fn next(&mut self, state: &mut S) -> Result<CorpusId, Error> {
        forget_unvisited(state, &mut self.states_only)?;
        self.drop_kept_inputs_left_behind(state);
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

impl McmcScheduler {
    /// Drops the kept inputs of the entries no chain stands on any more (an entry the corpus
    /// forgot is gone with its input); a chain that returns there reads it from disk, through
    /// the corpus's cache.
    fn drop_kept_inputs_left_behind<S>(&mut self, state: &mut S)
    where
        S: HasCorpus<Variant, Corpus = VariantCorpus> + HasMetadata,
    {
        let Some(chains) = state.metadata_map().get::<McmcChains>() else {
            return;
        };
        // The rotation, not every chain: retired chains stay in the map for their statistics.
        let standing: Vec<CorpusId> = chains
            .order
            .iter()
            .filter_map(|seed| chains.chains.get(seed))
            .map(|chain| chain.current)
            .collect();
        self.kept_inputs.retain(|id| {
            if standing.contains(id) {
                return true;
            }
            if let Ok(entry) = state.corpus().get(*id) {
                if let Ok(mut entry) = entry.try_borrow_mut() {
                    *entry.input_mut() = None;
                } else {
                    return true;
                }
            }
            false
        });
    }
}

/// Whether the entry `id` added coverage or counters to the corpus's maps.
fn added_novelty<S>(state: &S, id: CorpusId) -> Result<bool, Error>
where
    S: HasCorpus<Variant>,
{
    let entry = state.corpus().get(id)?.borrow();
    Ok(entry
        .metadata_map()
        .get::<Novelty>()
        .is_some_and(|novelty| novelty.new_coverage > 0 || novelty.new_counters > 0))
}

/// Lets the entries no chain will visit again go from the corpus: those of `states_only` are
/// deleted once no file kept reads through them, the others' files stay. Done when the next
/// entry is scheduled, so that nothing is removed under a stage or an event handler that still
/// holds an id.
fn forget_unvisited<S>(state: &mut S, states_only: &mut HashSet<CorpusId>) -> Result<(), Error>
where
    S: HasCorpus<Variant, Corpus = VariantCorpus> + HasMetadata,
{
    let (unvisited, held) = match state.metadata_map_mut().get_mut::<McmcChains>() {
        Some(chains) if !chains.unvisited.is_empty() => (std::mem::take(&mut chains.unvisited), chains.held()),
        _ => return Ok(()),
    };
    let (mut forgotten, mut deleted) = (0, 0);
    // An entry a chain in the rotation holds stays, whatever put it on the list.
    for id in unvisited.into_iter().filter(|id| !held.contains(id)) {
        if state.corpus().get(id).is_err() {
            continue;
        }
        let removable = states_only.remove(&id);
        match state.corpus_mut().let_go(id, removable) {
            Ok(files) => deleted += files,
            Err(e) => log::warn!("cannot let a chain state left behind go: {e}"),
        }
        forgotten += 1;
    }
    if let Some(chains) = state.metadata_map_mut().get_mut::<McmcChains>() {
        chains.forgotten += forgotten;
        chains.deleted_files += deleted as u64;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcmc::chains::Acceptance;
    use crate::mcmc::{test_state, TestState};
    use ccfuzz_mutators::edit::Edit;
    use ccfuzz_mutators::input::CHECKPOINT;
    use ccfuzz_mutators::seed::{SeedId, SeedStore};
    use libafl::corpus::Testcase;
    use libafl::inputs::Input;

    /// What the acceptance feedback hands over for an accepted `variant`.
    fn accepted(variant: &Variant) -> AcceptedProposal {
        AcceptedProposal {
            input: variant.clone(),
            acceptance: Acceptance {
                name: variant.name(),
                energy: 1.0,
                distance: 0.5,
                from_seed: false,
            },
        }
    }

    /// Adds `variant` as the fuzzer does, as an accepted proposal or as a seed.
    fn add(state: &mut TestState, scheduler: &mut McmcScheduler, variant: Variant, proposed: bool) -> CorpusId {
        if proposed {
            state.add_metadata(accepted(&variant));
        }
        let id = state.corpus_mut().add(Testcase::from(variant)).unwrap();
        scheduler.on_add(state, id).unwrap();
        id
    }

    fn files_in(dir: &std::path::Path) -> std::collections::BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| !name.starts_with('.'))
            .collect()
    }

    #[test]
    fn the_files_of_the_states_a_chain_left_go_unless_a_state_kept_reads_through_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = test_state(dir.path());
        let programs = Arc::new(Programs::new(SeedStore::open(dir.path().join("seeds")).unwrap(), 1));
        let mut scheduler = McmcScheduler::new(1000, None, programs);
        let seed = SeedId("c0ffee".into());
        let mut current = Variant::of_seed(seed.clone());
        add(&mut state, &mut scheduler, current.clone(), false);
        let mut names = vec![current.name()];
        let coverage_at = 20;
        for step in 1..=40u32 {
            scheduler.next(&mut state).unwrap();
            let mut proposal = current.clone();
            proposal.descend();
            proposal.edits_mut().push(Edit::Delete { stmt: step });
            if step == coverage_at {
                // This state also added coverage: it is kept, with what it reads through.
                state.add_metadata(accepted(&proposal));
                let mut testcase = Testcase::from(proposal.clone());
                testcase.add_metadata(Novelty {
                    new_coverage: 3,
                    ..Novelty::default()
                });
                let id = state.corpus_mut().add(testcase).unwrap();
                scheduler.on_add(&mut state, id).unwrap();
            } else {
                add(&mut state, &mut scheduler, proposal.clone(), true);
            }
            names.push(proposal.name());
            current = proposal;
        }
        scheduler.next(&mut state).unwrap();
        // On disk: the seed; the state that added coverage and those it reads through, back to
        // the whole save at generation 16; and the current state with those it reads through,
        // back to the whole save at generation 32.
        let expected: std::collections::BTreeSet<String> = [0]
            .into_iter()
            .chain(CHECKPOINT..=coverage_at)
            .chain(2 * CHECKPOINT..=40)
            .map(|step| names[step as usize].clone())
            .collect();
        let corpus = dir.path().join("corpus");
        assert_eq!(files_in(&corpus), expected);
        let report = state.metadata::<McmcChains>().unwrap();
        // Forgotten: the seed's entry and the 39 states left; deleted: those 39 but the five
        // kept and the eight the current state reads through.
        assert_eq!((report.forgotten, report.deleted_files), (40, 39 - 5 - 8));
        // What stays reads back.
        for name in &expected {
            Variant::from_file(corpus.join(name)).unwrap();
        }
        assert_eq!(
            Variant::from_file(corpus.join(&names[40])).unwrap().edits(),
            current.edits()
        );
    }

    #[test]
    fn a_chain_moves_to_its_new_state_without_reading_it_from_disk_which_stays_in_memory_while_it_stands_there() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = test_state(dir.path());
        let programs = Arc::new(Programs::new(SeedStore::open(dir.path().join("seeds")).unwrap(), 1));
        let mut scheduler = McmcScheduler::new(1000, None, programs);
        let seed = SeedId("c0ffee".into());
        let start = add(&mut state, &mut scheduler, Variant::of_seed(seed.clone()), false);
        assert_eq!(scheduler.next(&mut state).unwrap(), start);

        let first = Variant::new(seed.clone(), vec![Edit::Delete { stmt: 3 }]);
        let first_id = add(&mut state, &mut scheduler, first.clone(), true);
        let file = state
            .corpus()
            .get(first_id)
            .unwrap()
            .borrow()
            .file_path()
            .clone()
            .unwrap();
        std::fs::remove_file(&file).unwrap();
        assert_eq!(scheduler.next(&mut state).unwrap(), first_id);
        let mut entry = state.corpus().get(first_id).unwrap().borrow_mut();
        state.corpus().load_input_into(&mut entry).unwrap();
        assert_eq!(entry.input().as_ref().unwrap().name(), first.name());
        drop(entry);

        let second = Variant::new(seed, vec![Edit::Delete { stmt: 3 }, Edit::Delete { stmt: 5 }]);
        let second_id = add(&mut state, &mut scheduler, second, true);
        assert_eq!(scheduler.next(&mut state).unwrap(), second_id);
        assert!(state.corpus().get(second_id).unwrap().borrow().input().is_some());
        // The chain left its seed and its first state: their records are no longer in memory,
        // the one it stands on is, and its file stays on disk.
        assert!(state.corpus().get(first_id).is_err() && state.corpus().get(start).is_err());
        assert_eq!(state.corpus().count(), 1);
        let second_file = state
            .corpus()
            .get(second_id)
            .unwrap()
            .borrow()
            .file_path()
            .clone()
            .unwrap();
        assert!(second_file.exists());
        assert_eq!(state.metadata::<McmcChains>().unwrap().forgotten, 2);
    }

    #[test]
    fn a_retiring_chain_takes_the_seeds_older_than_sixteen_rotations_out_of_the_store() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = test_state(dir.path());
        let store = SeedStore::open(dir.path().join("seeds")).unwrap();
        let programs = Arc::new(Programs::new(store.clone(), 1));
        let mut scheduler = McmcScheduler::new(1000, Some(1), programs).pruning_seeds(1);
        let kept = SEEDS_KEPT_PER_CHAIN;
        let seeds: Vec<SeedId> = (1..=kept + 3)
            .map(|n| {
                let id = ccfuzz_mutators::testing::stored_counting_seed(&store, n);
                // Stored at distinct instants: the age decides.
                std::thread::sleep(std::time::Duration::from_millis(5));
                // What the new-seed feedback records for a seed entering the corpus.
                state
                    .metadata_or_insert_with(SeedsInCorpus::default)
                    .0
                    .insert(id.clone());
                add(&mut state, &mut scheduler, Variant::of_seed(id.clone()), false);
                scheduler.next(&mut state).unwrap();
                id
            })
            .collect();
        // Each new seed's chain retired the one before; the three oldest left the store with
        // their entries' files, the newest sixteen stay (the last one's chain in the rotation).
        let stored: Vec<bool> = seeds.iter().map(|id| store.contains(id)).collect();
        assert_eq!(stored.iter().filter(|s| !**s).count(), 3, "{stored:?}");
        assert!(stored[3..].iter().all(|s| *s), "{stored:?}");
        let entries = files_in(&dir.path().join("corpus"));
        assert!(!entries.contains(&Variant::of_seed(seeds[0].clone()).name()));
        assert!(entries.contains(&Variant::of_seed(seeds[3].clone()).name()));
        // Their chains and their places among the corpus's seeds are forgotten too.
        let chains = state.metadata::<McmcChains>().unwrap();
        let remembered: Vec<bool> = seeds.iter().map(|id| chains.chains.contains_key(id)).collect();
        assert_eq!(remembered, stored);
        assert_eq!((chains.forgotten_chains, chains.started()), (3, seeds.len() as u64));
        let in_corpus = &state.metadata::<SeedsInCorpus>().unwrap().0;
        assert_eq!(in_corpus.len(), kept, "{in_corpus:?}");
        assert!(!in_corpus.contains(&seeds[0]));
    }
}
