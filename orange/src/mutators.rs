//! LibAFL generator and mutators of Orange programs. Every mutator changes the program and
//! settles it again, so undefined behaviour introduced by the change is removed and the
//! expected values are recomputed exactly.

use crate::generate::{generate, GenOptions, INT_KINDS};
use crate::program::{Expr, OrangeProgram, Ty};
use ccfuzz_semantics::{convert, BinaryOp};
use libafl::corpus::CorpusId;
use libafl::generators::Generator;
use libafl::inputs::Input;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl::Error;
use libafl_bolts::rands::Rand;
use libafl_bolts::Named;
use std::borrow::Cow;
use std::hash::{Hash, Hasher};

impl Input for OrangeProgram {
    fn generate_name(&self, _id: Option<CorpusId>) -> String {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.hash(&mut hasher);
        format!("orange-{:016x}", hasher.finish())
    }
}

/// A LibAFL generator of Orange programs.
pub struct OrangeGenerator {
    pub options: GenOptions,
}

impl<S: HasRand> Generator<OrangeProgram, S> for OrangeGenerator {
    fn generate(&mut self, state: &mut S) -> Result<OrangeProgram, Error> {
        Ok(generate(self.options, state.rand_mut()))
    }
}

/// What a mutator changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// Replace a random sub-expression by a new one of the same size.
    Regrow,
    /// Change the operator of a binary node (then undefined behaviour is removed again).
    Operator,
    /// Change a variable's type and initial value, or a constant's value.
    TypeOrConstant,
    /// Add an expression, or remove one.
    AddOrRemove,
}

impl Change {
    pub const ALL: [Change; 4] = [
        Change::Regrow,
        Change::Operator,
        Change::TypeOrConstant,
        Change::AddOrRemove,
    ];
}

pub struct OrangeMutator {
    change: Change,
    options: GenOptions,
    name: Cow<'static, str>,
}

impl OrangeMutator {
    pub fn new(change: Change, options: GenOptions) -> Self {
        OrangeMutator {
            change,
            options,
            name: Cow::Owned(format!("orange-{change:?}").to_lowercase()),
        }
    }
}

impl Named for OrangeMutator {
    fn name(&self) -> &Cow<'static, str> {
        &self.name
    }
}

/// A donor expression of about `size` operators over the program's own variables: a small
/// program is generated and its first expression is rewritten to read `program`'s variables.
fn donor<R: Rand>(program: &OrangeProgram, size: usize, options: GenOptions, rand: &mut R) -> Option<Expr> {
    let ints: Vec<usize> = (0..program.vars.len())
        .filter(|&i| matches!(program.vars[i].ty, Ty::Int(_)))
        .collect();
    if ints.is_empty() {
        return None;
    }
    let small = GenOptions {
        min_operators: size.max(1),
        max_operators: size.max(1),
        float: false,
        ..options
    };
    let mut fresh = generate(small, rand).assignments.swap_remove(0).expr;
    retarget(&mut fresh, &ints, rand);
    Some(fresh)
}

fn retarget<R: Rand>(e: &mut Expr, vars: &[usize], rand: &mut R) {
    match e {
        Expr::Var(i) => *i = vars[rand.below_or_zero(vars.len())],
        Expr::Const(..) => {}
        Expr::Unary(_, a) | Expr::Cast(_, a) => retarget(a, vars, rand),
        Expr::Binary(_, a, b) => {
            retarget(a, vars, rand);
            retarget(b, vars, rand);
        }
        Expr::Ternary(c, a, b) => {
            retarget(c, vars, rand);
            retarget(a, vars, rand);
            retarget(b, vars, rand);
        }
    }
}

impl<S: HasRand> Mutator<OrangeProgram, S> for OrangeMutator {
    fn mutate(&mut self, state: &mut S, program: &mut OrangeProgram) -> Result<MutationResult, Error> {
        let rand = state.rand_mut();
        if program.assignments.is_empty() {
            return Ok(MutationResult::Skipped);
        }
        let which = rand.below_or_zero(program.assignments.len());
        match self.change {
            Change::Regrow => {
                let nodes = program.assignments[which].expr.nodes();
                let index = rand.below_or_zero(nodes);
                let size = program.assignments[which].expr.node_mut(index).map_or(0, |n| n.size());
                let Some(fresh) = donor(program, size, self.options, rand) else {
                    return Ok(MutationResult::Skipped);
                };
                if let Some(node) = program.assignments[which].expr.node_mut(index) {
                    *node = fresh;
                }
            }
            Change::Operator => {
                let expr = &mut program.assignments[which].expr;
                let binaries: Vec<usize> = {
                    let mut list = Vec::new();
                    let mut index = 0;
                    expr.visit(&mut |e| {
                        if matches!(e, Expr::Binary(..)) {
                            list.push(index);
                        }
                        index += 1;
                    });
                    list
                };
                let Some(&index) = rand.choose(&binaries) else {
                    return Ok(MutationResult::Skipped);
                };
                if let Some(Expr::Binary(op, ..)) = expr.node_mut(index) {
                    *op = BinaryOp::ALL[rand.below_or_zero(BinaryOp::ALL.len())];
                }
            }
            Change::TypeOrConstant => {
                let index = rand.below_or_zero(program.vars.len());
                let var = &mut program.vars[index];
                if let Ty::Int(_) = var.ty {
                    let kind = INT_KINDS[rand.below_or_zero(INT_KINDS.len())];
                    var.ty = Ty::Int(kind);
                    var.init = if rand.coinflip(0.5) {
                        convert(var.init, kind)
                    } else {
                        convert(rand.next() as i128, kind)
                    };
                } else {
                    var.init = -var.init;
                }
            }
            Change::AddOrRemove => {
                if program.assignments.len() > 1 && rand.coinflip(0.5) {
                    // The t-variable stays, holding its initial value.
                    program.assignments.remove(which);
                } else {
                    let size = program.assignments[which].expr.size().max(1);
                    let Some(expr) = donor(program, size, self.options, rand) else {
                        return Ok(MutationResult::Skipped);
                    };
                    let target = program.assignments[which].target;
                    let mut copy = program.vars[target].clone();
                    copy.name = format!("t{}", program.vars.len());
                    copy.is_const = false;
                    program.vars.push(copy);
                    program.assignments.push(crate::program::Assignment {
                        target: program.vars.len() - 1,
                        expr,
                        expected: 0,
                    });
                }
            }
        }
        program.settle(rand);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _new_corpus_id: Option<CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::Policies;
    use crate::settle::tests::assert_exact;
    use libafl::state::NopState;

    #[test]
    fn every_mutator_changes_programs_and_keeps_their_values_exact() {
        let mut state: NopState<OrangeProgram> = NopState::new();
        let options = GenOptions {
            min_operators: 20,
            max_operators: 300,
            policies: Policies::ALL,
            float: true,
        };
        for change in Change::ALL {
            let mut mutator = OrangeMutator::new(change, options);
            let mut changed = 0;
            for _ in 0..60 {
                let mut program = generate(options, state.rand_mut());
                let before = program.clone();
                if mutator.mutate(&mut state, &mut program).unwrap() == MutationResult::Mutated {
                    changed += usize::from(program != before);
                    assert_exact(&program);
                }
            }
            assert!(changed > 30, "{change:?} changed only {changed} of 60 programs");
        }
    }
}
