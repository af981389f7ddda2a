//! Orion (Le et al., PLDI 2014): delete statements the profile says never ran. Each variant
//! draws two fresh pruning probabilities, one for statements with children and one for leaves;
//! a statement that is kept is visited recursively.

use crate::edit::Edit;
use crate::input::Variant;
use crate::model::{Program, StmtId};
use crate::programs::Programs;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl::Error;
use libafl_bolts::rands::Rand;
use libafl_bolts::Named;
use std::borrow::Cow;
use std::sync::Arc;

pub struct OrionMutator {
    programs: Arc<Programs>,
}

impl OrionMutator {
    pub fn new(programs: Arc<Programs>) -> Self {
        OrionMutator { programs }
    }
}

/// One Orion pruning of a program: the statements to delete.
pub fn orion_prune<R: Rand>(program: &Program, rand: &mut R) -> Vec<StmtId> {
    let p_parent = rand.next_float();
    let p_leaf = rand.next_float();
    let mut deleted = Vec::new();
    let mut stack: Vec<StmtId> = program.roots.iter().rev().copied().collect();
    while let Some(id) = stack.pop() {
        let stmt = program.statement(id);
        let p = if stmt.children.is_empty() { p_leaf } else { p_parent };
        if stmt.is_deletable() && rand.coinflip(p) {
            deleted.push(id);
        } else {
            stack.extend(stmt.children.iter().rev());
        }
    }
    deleted
}

impl Named for OrionMutator {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("orion");
        &NAME
    }
}

impl<S: HasRand> Mutator<Variant, S> for OrionMutator {
    /// Replaces the variant's deletions by a fresh Orion pruning of its seed; edits of other
    /// kinds are kept.
    fn mutate(&mut self, state: &mut S, input: &mut Variant) -> Result<MutationResult, Error> {
        let loaded = self
            .programs
            .get(&input.seed)
            .map_err(|e| Error::illegal_state(format!("orion: {e:#}")))?;
        let deleted = orion_prune(&loaded.program, state.rand_mut());
        if deleted.is_empty() {
            return Ok(MutationResult::Skipped);
        }
        let edits = input.edits_mut();
        edits.retain(|e| !matches!(e, Edit::Delete { .. }));
        edits.extend(deleted.into_iter().map(|stmt| Edit::Delete { stmt }));
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _new_corpus_id: Option<libafl::corpus::CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}
