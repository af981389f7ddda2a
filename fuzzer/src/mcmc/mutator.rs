//! [`ChainMutator`]: proposes Q* from a chain's state Q with Athena, Hermes or Orion and leaves
//! the proposal's ln q(Q|Q*)/q(Q*|Q) in the state ([`PendingProposal`]) for the acceptance.

use crate::mcmc::{Family, FamilyChoice, FamilyYields, McmcChains};
use ccfuzz_mutators::athena::AthenaMutator;
use ccfuzz_mutators::hermes::{HermesMutator, Strategy};
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::orion::OrionMutator;
use ccfuzz_mutators::programs::Programs;
use libafl::corpus::{Corpus, CorpusId};
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::{HasCorpus, HasRand, HasSolutions};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::Rand;
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;
use std::time::Instant;

/// The proposal just made, to be judged once it has run.
#[derive(Debug, Serialize, Deserialize)]
pub struct PendingProposal {
    pub name: String,
    pub log_q_ratio: f64,
    pub family: Family,
    /// Made from the seed itself: the chain, at its longest, starts again.
    pub from_seed: bool,
}
impl_serdeany!(PendingProposal);

/// Proposes a move of the chain with a family drawn as `choice` says; from the seed itself once
/// the chain made its longest number of accepted moves. Each proposal's seconds and new findings
/// go to its family's yield.
pub struct ChainMutator {
    families: Vec<Family>,
    choice: FamilyChoice,
    longest_chain: Option<u64>,
    /// The proposal being executed: its family, when it was made, and the findings before it.
    in_flight: Option<(Family, Instant, usize)>,
    athena: AthenaMutator,
    hermes: [HermesMutator; 3],
    orion: OrionMutator,
}

impl ChainMutator {
    pub fn new(
        programs: Arc<Programs>,
        families: Vec<Family>,
        choice: FamilyChoice,
        longest_chain: Option<u64>,
    ) -> Self {
        ChainMutator {
            families,
            choice,
            longest_chain,
            in_flight: None,
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

impl<S: HasRand + HasMetadata + HasCorpus<Variant> + HasSolutions<Variant>> Mutator<Variant, S> for ChainMutator {
    fn mutate(&mut self, state: &mut S, input: &mut Variant) -> Result<MutationResult, Error> {
        let drawn = match self.choice {
            FamilyChoice::Uniform => state.rand_mut().choose(&self.families).copied(),
            FamilyChoice::Yield => {
                let yields = state.metadata_or_insert_with(FamilyYields::default).clone();
                yields.draw(&self.families, state.rand_mut())
            }
        };
        let family = drawn.ok_or_else(|| Error::illegal_argument("no mutator family"))?;
        let started = Instant::now();
        // The entry being mutated is its chain's state, whose name the chain holds: read back
        // from disk, the variant would hash its edits again to learn it.
        let scheduled = *state.corpus().current();
        let mut from_seed = false;
        if let Some(chain) = state
            .metadata::<McmcChains>()
            .ok()
            .and_then(|c| c.chains.get(&input.seed))
        {
            if Some(chain.current) == scheduled {
                if chain.starts_again(self.longest_chain) {
                    *input = Variant::of_seed(input.seed.clone());
                    from_seed = true;
                } else {
                    input.remember_name(chain.current_name.clone());
                }
            }
        }
        input.descend();
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
        if result == MutationResult::Skipped {
            state
                .metadata_or_insert_with(FamilyYields::default)
                .record_seconds(family, started.elapsed().as_secs_f64());
        }
        if result == MutationResult::Mutated {
            self.in_flight = Some((family, started, state.solutions().count()));
            state.add_metadata(PendingProposal {
                name: input.name(),
                log_q_ratio,
                family,
                from_seed,
            });
        }
        Ok(result)
    }

    fn post_exec(&mut self, state: &mut S, _new_corpus_id: Option<CorpusId>) -> Result<(), Error> {
        if let Some((family, made, findings_before)) = self.in_flight.take() {
            let findings = state.solutions().count().saturating_sub(findings_before) as u64;
            state.metadata_or_insert_with(FamilyYields::default).record_proposal(
                family,
                made.elapsed().as_secs_f64(),
                findings,
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcmc::test_state;
    use ccfuzz_mutators::edit::Edit;
    use ccfuzz_mutators::model::Execution;
    use ccfuzz_mutators::seed::{Seed, SeedProfile, SeedStore};
    use libafl::corpus::Testcase;

    #[test]
    fn a_chain_at_its_longest_proposes_from_its_seed() {
        let dir = tempfile::tempdir().unwrap();
        let mut state = test_state(dir.path());
        let store = SeedStore::open(dir.path().join("seeds")).unwrap();
        // Lines 4–6 never ran: Athena deletes or transplants there.
        let text = "int g;\nint main(void) {\n  if (g) {\n    g = 1;\n    g = 2;\n    g = 3;\n  }\n  return 0;\n}\n";
        let profile = SeedProfile {
            origin: "test".into(),
            headers: store.put_headers("").unwrap(),
            include_block_len: 0,
            line_counts: [(2, 1), (3, 1), (4, 0), (5, 0), (6, 0), (8, 1)].into_iter().collect(),
            expected_exit: 0,
            run_ms: Some(1),
        };
        let seed = Seed::new(text.into(), profile, Vec::new());
        store.put(&seed).unwrap();
        let programs = Arc::new(Programs::new(store, usize::MAX));
        let program = &programs.get(&seed.id).unwrap().program;
        let edits: Vec<Edit> = program
            .statements
            .iter()
            .filter(|s| s.execution == Execution::NotExecuted && s.is_deletable())
            .take(2)
            .map(|s| Edit::Delete { stmt: s.id })
            .collect();
        assert_eq!(edits.len(), 2);
        let long = Variant::new(seed.id.clone(), edits);
        let id = state.corpus_mut().add(Testcase::new(long.clone())).unwrap();
        let mut chains = McmcChains::default();
        chains.start(seed.id.clone(), id, long.name(), None);
        chains.chains.get_mut(&seed.id).unwrap().length = 2;
        state.add_metadata(chains);
        *state.corpus_mut().current_mut() = Some(id);

        let parent_of = |longest, state: &mut crate::mcmc::TestState| {
            let mut mutator = ChainMutator::new(programs.clone(), vec![Family::Athena], FamilyChoice::Uniform, longest);
            // Athena's draw may find no move: it is drawn again.
            let mut input = long.clone();
            let mut draws = 1;
            while mutator.mutate(state, &mut input).unwrap() == MutationResult::Skipped {
                draws += 1;
                assert!(draws < 1000, "Athena finds no move");
                input = long.clone();
            }
            let pending = state.remove_metadata::<PendingProposal>().unwrap();
            assert_eq!(pending.name, input.name());
            // Once run, the proposal counts for its family (no finding came of it).
            let before = state
                .metadata_or_insert_with(FamilyYields::default)
                .by_family
                .get("athena")
                .map_or(0, |y| y.proposals);
            mutator.post_exec(state, None).unwrap();
            let athena = &state.metadata::<FamilyYields>().unwrap().by_family["athena"];
            assert_eq!((athena.proposals, athena.findings), (before + 1, 0));
            let parent = input.lineage.parent.as_ref().unwrap().name.clone();
            (parent, pending.from_seed, input.edits().len())
        };
        // Two moves long: below a longest length of 3 it goes on from its state.
        for longest in [None, Some(3)] {
            let (parent, from_seed, _) = parent_of(longest, &mut state);
            assert_eq!((parent, from_seed), (long.name(), false));
        }
        // At its longest, the proposal is one move from the seed.
        let (parent, from_seed, edits) = parent_of(Some(2), &mut state);
        assert_eq!(parent, Variant::of_seed(seed.id.clone()).name());
        assert!(from_seed);
        assert_eq!(edits, 1);
    }
}
