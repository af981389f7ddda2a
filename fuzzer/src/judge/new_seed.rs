//! [`NewSeedFeedback`]: an unedited seed the corpus does not have yet is corpus-worthy, so seeds
//! reach the other cores without being executed again there.

use anyhow::Result;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::SeedId;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::{Error, HasMetadata};
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashSet;

/// Seeds already in this client's corpus.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SeedsInCorpus(pub HashSet<SeedId>);
impl_serdeany!(SeedsInCorpus);

/// Corpus feedback: an unedited seed that the corpus does not have yet. Seeds reach the other
/// cores through this, without being executed again there.
pub struct NewSeedFeedback;

impl Named for NewSeedFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("new_seed");
        &NAME
    }
}

impl<S: HasMetadata> StateInitializer<S> for NewSeedFeedback {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        state.metadata_or_insert_with(SeedsInCorpus::default);
        Ok(())
    }
}

impl<EM, OT, S: HasMetadata> Feedback<EM, Variant, OT, S> for NewSeedFeedback {
    fn is_interesting(
        &mut self,
        state: &mut S,
        _mgr: &mut EM,
        input: &Variant,
        _obs: &OT,
        _exit: &ExitKind,
    ) -> Result<bool, Error> {
        Ok(input.edits().is_empty()
            && state
                .metadata_or_insert_with(SeedsInCorpus::default)
                .0
                .insert(input.seed.clone()))
    }
}
