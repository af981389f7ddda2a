//! Athena (Le, Sun, Su, OOPSLA 2015): EMI mutation of code that never ran, by deleting such
//! statements and by transplanting statements from the pool into such regions, as proposals of
//! a Metropolis–Hastings chain.
//!
//! Every move has a reverse move, so the proposal ratio q(Q|Q*)/q(Q*|Q) is countable: deleting a
//! statement (it leaves a `;` placeholder where code can be transplanted again) is undone by
//! restoring it, and a transplant is undone by removing it. The four kinds of move are drawn
//! with equal probability, so that probability cancels from the ratio.

use crate::edit::Edit;
use crate::flow_graph::{DistanceWeights, SeedGraph};
use crate::input::Variant;
use crate::metropolis::accepts;
use crate::model::{Execution, Program, StmtId};
use crate::pool::Pool;
use crate::programs::Programs;
use crate::seed::SeedId;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl::Error;
use libafl_bolts::rands::Rand;
use libafl_bolts::Named;
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// Delete a statement that never ran.
    Delete,
    /// Undo a deletion.
    Restore,
    /// Insert a pool statement before a statement that never ran (or its placeholder).
    Transplant,
    /// Undo a transplant.
    Remove,
}

/// A proposed state of the chain and ln q(Q|Q*) − ln q(Q*|Q).
#[derive(Clone, Debug)]
pub struct Proposal {
    pub edits: Vec<Edit>,
    pub log_q_ratio: f64,
    pub kind: Move,
}

/// Which statements of the seed a state leaves visible: what each kind of move can act on
/// follows from it. A proposal needs one set of its state and the size of one set of the
/// proposed state (for the reverse move), so each set is made only when asked: making all four
/// for both states was a twentieth of a client's CPU against tcc.
struct Visibility<'a> {
    program: &'a Program,
    edits: &'a [Edit],
    deleted: Vec<bool>,
    hidden: Vec<bool>,
}

impl<'a> Visibility<'a> {
    fn of(program: &'a Program, edits: &'a [Edit]) -> Self {
        let count = program.statements.len();
        let mut deleted = vec![false; count];
        for edit in edits {
            if let Edit::Delete { stmt } = edit {
                if let Some(d) = deleted.get_mut(*stmt as usize) {
                    *d = true;
                }
            }
        }
        // Statements are numbered in pre-order, so a parent is marked before its children.
        let mut hidden = vec![false; count];
        for stmt in &program.statements {
            if let Some(parent) = stmt.parent {
                let p = parent as usize;
                hidden[stmt.id as usize] = hidden[p] || deleted[p];
            }
        }
        Visibility {
            program,
            edits,
            deleted,
            hidden,
        }
    }

    fn visible(&self, stmt: StmtId) -> bool {
        (stmt as usize) < self.hidden.len() && !self.hidden[stmt as usize]
    }

    fn dead(&self, stmt: StmtId) -> bool {
        self.visible(stmt) && self.program.statement(stmt).execution == Execution::NotExecuted
    }

    /// Statements a deletion may remove. The four sets are iterators: a proposal's own sets
    /// are only counted, for the reverse move's probability.
    fn deletable(&self) -> impl Iterator<Item = StmtId> + '_ {
        self.program
            .statements
            .iter()
            .filter(|s| self.dead(s.id) && !self.deleted[s.id as usize] && s.is_deletable())
            .map(|s| s.id)
    }

    /// Indexes of deletions that are not inside another deletion.
    fn restorable(&self) -> impl Iterator<Item = usize> + '_ {
        let mut seen = HashSet::new();
        self.edits
            .iter()
            .enumerate()
            .filter(move |(_, e)| matches!(e, Edit::Delete { stmt } if self.visible(*stmt) && seen.insert(*stmt)))
            .map(|(i, _)| i)
    }

    /// Statements a transplant may go before.
    fn locations(&self) -> impl Iterator<Item = StmtId> + '_ {
        self.program
            .statements
            .iter()
            .filter(|s| self.dead(s.id) && self.program.accepts_insertion_before(s.id))
            .map(|s| s.id)
    }

    /// Indexes of transplants that are not inside a deletion.
    fn transplants(&self) -> impl Iterator<Item = usize> + '_ {
        self.edits
            .iter()
            .enumerate()
            .filter(|(_, e)| matches!(e, Edit::Transplant { stmt, .. } if self.visible(*stmt)))
            .map(|(i, _)| i)
    }
}

fn ln(n: usize) -> f64 {
    (n as f64).ln()
}

/// One Athena proposal from the state `edits` of a chain on `seed`, or `None` when the drawn
/// kind of move has nothing to act on (the chain then stays where it is).
pub fn propose<R: Rand>(
    program: &Program,
    seed: &SeedId,
    pool: &Pool,
    edits: &[Edit],
    rand: &mut R,
) -> Option<Proposal> {
    let state = Visibility::of(program, edits);
    let kind = [Move::Delete, Move::Restore, Move::Transplant, Move::Remove][rand.below_or_zero(4)];
    let mut next = edits.to_vec();
    let log_q_ratio = match kind {
        Move::Delete => {
            let deletable: Vec<StmtId> = state.deletable().collect();
            let stmt = *rand.choose(&deletable)?;
            next.push(Edit::Delete { stmt });
            ln(deletable.len()) - ln(Visibility::of(program, &next).restorable().count())
        }
        Move::Restore => {
            let restorable: Vec<usize> = state.restorable().collect();
            let index = *rand.choose(&restorable)?;
            next.remove(index);
            ln(restorable.len()) - ln(Visibility::of(program, &next).deletable().count())
        }
        Move::Transplant => {
            let locations: Vec<StmtId> = state.locations().collect();
            let stmt = *rand.choose(&locations)?;
            let candidates = pool.candidates(program, seed, stmt);
            let candidate = candidates.candidate(rand.choose(&candidates.entries)?);
            let picks: Vec<usize> = candidate.choices.iter().map(|c| rand.below_or_zero(c.len())).collect();
            let choices = (candidates.entries.len() as u64).saturating_mul(candidate.renamings());
            next.push(Edit::Transplant {
                stmt,
                code: format!("{}\n", candidate.instantiate(&picks)).into(),
                shape: Arc::new(candidate.entry.fragment.shape.clone()),
                choices,
            });
            ln(locations.len()) + (choices as f64).ln() - ln(Visibility::of(program, &next).transplants().count())
        }
        Move::Remove => {
            let transplants: Vec<usize> = state.transplants().collect();
            let index = *rand.choose(&transplants)?;
            let Edit::Transplant { choices, .. } = next.remove(index) else {
                unreachable!("transplant indexes name transplants")
            };
            ln(transplants.len()) - ln(Visibility::of(program, &next).locations().count()) - (choices as f64).ln()
        }
    };
    Some(Proposal {
        edits: next,
        log_q_ratio,
        kind,
    })
}

/// Athena's objective: program distance from the seed, and σ, the inverse temperature of the
/// acceptance rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AthenaParams {
    pub sigma: f64,
    pub weights: DistanceWeights,
}

impl Default for AthenaParams {
    /// One move changes Δ by 0.004 in the median on csmith seeds (0.002–0.016 from the 10th
    /// to the 90th percentile); σ = 100 turns that into odds of 1.2 to 5 for the farther
    /// program: a push away from the seed that still lets the chain step back.
    fn default() -> Self {
        AthenaParams {
            sigma: 100.0,
            weights: DistanceWeights::default(),
        }
    }
}

/// A chain on one seed whose energy is the program distance alone (Athena as published).
pub struct AthenaChain {
    pub edits: Vec<Edit>,
    pub distance: f64,
    pub proposals: u64,
    pub accepted: u64,
    seed_graph: SeedGraph,
    params: AthenaParams,
}

impl AthenaChain {
    pub fn new(program: &Program, params: AthenaParams) -> Self {
        AthenaChain {
            edits: Vec::new(),
            distance: 0.0,
            proposals: 0,
            accepted: 0,
            seed_graph: SeedGraph::of(program),
            params,
        }
    }

    /// Makes one proposal and accepts or rejects it; true when the chain moved.
    pub fn step<R: Rand>(&mut self, program: &Program, seed: &SeedId, pool: &Pool, rand: &mut R) -> bool {
        let Some(proposal) = propose(program, seed, pool, &self.edits, rand) else {
            return false;
        };
        self.proposals += 1;
        let proposed = self.seed_graph.distance(program, &proposal.edits, self.params.weights);
        if !accepts(self.distance, proposed, proposal.log_q_ratio, self.params.sigma, rand) {
            return false;
        }
        self.accepted += 1;
        self.edits = proposal.edits;
        self.distance = proposed;
        true
    }
}

/// A LibAFL mutator making one Athena proposal; the pool grows with every seed it meets.
pub struct AthenaMutator {
    programs: Arc<Programs>,
    pub pool: Pool,
    /// ln q(Q|Q*) − ln q(Q*|Q) of the last proposal, for the chain's acceptance.
    pub last_log_q_ratio: f64,
}

impl AthenaMutator {
    pub fn new(programs: Arc<Programs>) -> Self {
        AthenaMutator {
            programs,
            pool: Pool::default(),
            last_log_q_ratio: 0.0,
        }
    }
}

impl Named for AthenaMutator {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("athena");
        &NAME
    }
}

impl<S: HasRand> Mutator<Variant, S> for AthenaMutator {
    fn mutate(&mut self, state: &mut S, input: &mut Variant) -> Result<MutationResult, Error> {
        let loaded = self
            .programs
            .get(&input.seed)
            .map_err(|e| Error::illegal_state(format!("athena: {e:#}")))?;
        self.pool.add_seed(&input.seed, &loaded.program);
        match propose(
            &loaded.program,
            &input.seed,
            &self.pool,
            input.edits(),
            state.rand_mut(),
        ) {
            Some(proposal) => {
                input.set_edits(proposal.edits);
                self.last_log_q_ratio = proposal.log_q_ratio;
                Ok(MutationResult::Mutated)
            }
            None => Ok(MutationResult::Skipped),
        }
    }

    fn post_exec(&mut self, _state: &mut S, _new_corpus_id: Option<libafl::corpus::CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::apply_edits;
    use libafl_bolts::rands::StdRand;
    use std::collections::BTreeMap;

    /// A function whose `if` body never ran (line 3), and a loop that did.
    fn program() -> Program {
        let text = "int g;\nint f(int a) {\n  if (a > 100) {\n    g = a; a = a + 1;\n  }\n  for (int i = 0; i < 3; i++) { g += i; }\n  return a;\n}\n";
        let counts: BTreeMap<u32, u64> = [(2, 1), (3, 1), (4, 0), (6, 1), (7, 1)].into_iter().collect();
        Program::parse_parts(text, "", 0, &counts).unwrap()
    }

    #[test]
    fn every_move_is_reversible_with_the_inverse_ratio() {
        let p = program();
        let seed = SeedId::of_text(&p.text);
        let mut pool = Pool::default();
        pool.add_seed(&seed, &p);
        let mut rand = StdRand::with_seed(7);
        let mut state: Vec<Edit> = Vec::new();
        let mut seen = [0usize; 4];
        for _ in 0..2000 {
            let Some(proposal) = propose(&p, &seed, &pool, &state, &mut rand) else {
                continue;
            };
            seen[proposal.kind as usize] += 1;
            // Some proposal from Q* leads back to Q, with the opposite log ratio.
            let back = (0..5000).find_map(|_| {
                propose(&p, &seed, &pool, &proposal.edits, &mut rand).filter(|r| {
                    let mut a = r.edits.clone();
                    let mut b = state.clone();
                    a.sort();
                    b.sort();
                    a == b
                })
            });
            let back = back.expect("a reverse move exists");
            assert!(
                (back.log_q_ratio + proposal.log_q_ratio).abs() < 1e-9,
                "{:?}: {} vs {}",
                proposal.kind,
                proposal.log_q_ratio,
                back.log_q_ratio
            );
            state = proposal.edits;
            let text = apply_edits(&p, &state);
            assert!(text.contains("return a;"), "{text}");
        }
        assert!(seen.iter().all(|&n| n > 50), "every kind of move happens: {seen:?}");
    }

    #[test]
    fn a_chain_moves_away_from_its_seed() {
        let p = program();
        let seed = SeedId::of_text(&p.text);
        let mut pool = Pool::default();
        pool.add_seed(&seed, &p);
        let mut chain = AthenaChain::new(&p, AthenaParams::default());
        let mut rand = StdRand::with_seed(1);
        for _ in 0..200 {
            chain.step(&p, &seed, &pool, &mut rand);
        }
        assert!(chain.accepted > 0 && chain.accepted < chain.proposals);
        assert!(chain.distance > 0.0);
    }
}
