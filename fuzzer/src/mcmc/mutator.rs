//! [`ChainMutator`]: proposes Q* from a chain's state Q with Athena, Hermes or Orion and leaves
//! the proposal's ln q(Q
//! Q*)/q(Q*
//! Q) in the state ([`PendingProposal`]) for the acceptance.

use crate::mcmc::{Family, McmcChains};
use ccfuzz_mutators::athena::AthenaMutator;
use ccfuzz_mutators::hermes::{HermesMutator, Strategy};
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::orion::OrionMutator;
use ccfuzz_mutators::programs::Programs;
use libafl::corpus::{Corpus, CorpusId};
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::{HasCorpus, HasRand};
use libafl::{Error, HasMetadata};
use libafl_bolts::rands::Rand;
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::sync::Arc;

/// The proposal just made, to be judged once it has run.
#[derive(Debug, Serialize, Deserialize)]
pub struct PendingProposal {
    pub name: String,
    pub log_q_ratio: f64,
    pub family: Family,
}
impl_serdeany!(PendingProposal);

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

impl<S: HasRand + HasMetadata + HasCorpus<Variant>> Mutator<Variant, S> for ChainMutator {
    fn mutate(&mut self, state: &mut S, input: &mut Variant) -> Result<MutationResult, Error> {
        let family = *state
            .rand_mut()
            .choose(&self.families)
            .ok_or_else(|| Error::illegal_argument("no mutator family"))?;
        // The entry being mutated is its chain's state, whose name the chain holds: read back
        // from disk, the variant would hash its edits again to learn it.
        let scheduled = *state.corpus().current();
        if let Some(chain) = state
            .metadata::<McmcChains>()
            .ok()
            .and_then(|c| c.chains.get(&input.seed))
        {
            if Some(chain.current) == scheduled {
                input.remember_name(chain.current_name.clone());
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
