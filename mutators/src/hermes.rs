//! Hermes (Sun, Le, Su, OOPSLA 2016): live-code EMI mutation. Before statements that ran, at
//! points whose valuation profile is complete, insert code that leaves the program's state as
//! it was: an always-false block (FCB), an always-true guard around the statement (TG), or an
//! always-true block that backs up, changes, uses and restores a variable (TCB, the paper's
//! Figure 6). Every predicate and every expression that runs is checked by speculative
//! execution over all observed values, so no snippet adds undefined behaviour.

use crate::edit::Edit;
use crate::input::Variant;
use crate::model::StmtId;
use crate::programs::{LoadedSeed, Programs};
use crate::synthesis::{dead_code, syn_expr, syn_pred, Env, EnvEntry};
use crate::valuation::PointValues;
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl::Error;
use libafl_bolts::rands::Rand;
use libafl_bolts::Named;
use std::borrow::Cow;
use std::sync::Arc;

/// Predicates are drawn with a depth in 0..=2, as in the paper.
const MAX_PREDICATE_DEPTH: usize = 3;
/// Nesting of the random code in a false block.
const DEAD_CODE_DEPTH: u32 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// Always-false conditional block.
    Fcb,
    /// Always-true guard around the statement.
    Tg,
    /// Always-true conditional block with undone side effects.
    Tcb,
}

impl Strategy {
    pub const ALL: [Strategy; 3] = [Strategy::Fcb, Strategy::Tg, Strategy::Tcb];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::Fcb => "fcb",
            Strategy::Tg => "tg",
            Strategy::Tcb => "tcb",
        }
    }
}

/// The environment of a profiled point.
pub fn env_at(point: &PointValues) -> Env {
    let entries = point
        .readables
        .iter()
        .zip(&point.values)
        .filter(|(_, values)| !values.is_empty())
        .map(|(readable, values)| EnvEntry {
            expr: readable.expr.clone(),
            kind: readable.kind,
            assignable: readable.assignable,
            values: values.iter().copied().collect(),
        })
        .collect();
    Env { entries }
}

/// Points where Hermes may insert code: they ran, and their profile is complete.
pub fn usable_points(loaded: &LoadedSeed) -> Vec<StmtId> {
    loaded
        .valuation
        .points
        .iter()
        .filter(|(stmt, point)| {
            point.is_usable()
                && (**stmt as usize) < loaded.program.statements.len()
                && loaded.program.accepts_insertion_before(**stmt)
        })
        .map(|(stmt, _)| *stmt)
        .collect()
}

fn depth<R: Rand>(rand: &mut R) -> u32 {
    rand.below_or_zero(MAX_PREDICATE_DEPTH) as u32
}

/// One snippet of the given strategy for the point before `stmt`. A statement on which its
/// function's last path ends (see [`crate::model::Statement::ends_function`]) is not wrapped
/// in a guard: compilers would warn that control reaches the end of the function. It gets an
/// always-false block instead.
pub fn synthesize<R: Rand>(strategy: Strategy, stmt: StmtId, env: &Env, wrappable: bool, rand: &mut R) -> Edit {
    let assignable: Vec<&EnvEntry> = env.entries.iter().filter(|e| e.assignable).collect();
    match strategy {
        Strategy::Tg if wrappable => {
            let p = syn_pred(env, true, depth(rand), rand);
            Edit::Wrap {
                stmt,
                before: format!("if ({}) {{ /* hermes tg */\n", p.text).into(),
                after: "\n}".into(),
            }
        }
        Strategy::Tcb if !assignable.is_empty() => {
            let v = assignable[rand.below_or_zero(assignable.len())].clone();
            let mut env = env.clone();
            let initial = syn_expr(&env, rand);
            env.assign("hermes_backup", v.kind, true, &initial.values);
            let guard = syn_pred(&env, true, depth(rand), rand);
            env.assign("hermes_backup", v.kind, true, &v.values);
            let change = syn_expr(&env, rand);
            env.assign(&v.expr, v.kind, true, &change.values);
            let never = syn_pred(&env, false, depth(rand), rand);
            let keyword = if rand.coinflip(0.5) { "if" } else { "while" };
            let user = assignable[rand.below_or_zero(assignable.len())];
            let code = format!(
                "{{ /* hermes tcb */\n{ty} hermes_backup = {initial};\nif ({guard}) {{\nhermes_backup = {v};\n{v} = {change};\n{keyword} ({never}) {{\n{user} = {v};\n}}\n}}\n{v} = hermes_backup;\n}}\n",
                ty = v.kind.spelling(),
                initial = initial.text,
                guard = guard.text,
                v = v.expr,
                change = change.text,
                never = never.text,
                user = user.expr,
            );
            Edit::InsertBefore {
                stmt,
                code: code.into(),
            }
        }
        // FCB, and TCB where nothing may be assigned.
        _ => {
            let p = syn_pred(env, false, depth(rand), rand);
            let keyword = if rand.coinflip(0.5) { "if" } else { "while" };
            let body = dead_code(env, DEAD_CODE_DEPTH, keyword == "while", rand);
            Edit::InsertBefore {
                stmt,
                code: format!("{keyword} ({}) {{ /* hermes fcb */\n{body}\n}}\n", p.text).into(),
            }
        }
    }
}

/// A Hermes variant as in the paper's Algorithm 1 with sparse profiling: one snippet, of a
/// strategy drawn uniformly, before every usable point.
pub fn hermes_variant<R: Rand>(loaded: &LoadedSeed, rand: &mut R) -> Vec<Edit> {
    usable_points(loaded)
        .into_iter()
        .map(|stmt| {
            let strategy = Strategy::ALL[rand.below_or_zero(3)];
            let wrappable = !loaded.program.statement(stmt).ends_function;
            synthesize(
                strategy,
                stmt,
                &env_at(&loaded.valuation.points[&stmt]),
                wrappable,
                rand,
            )
        })
        .collect()
}

/// A LibAFL mutator adding one snippet of its strategy at a random usable point.
pub struct HermesMutator {
    programs: Arc<Programs>,
    strategy: Strategy,
    name: Cow<'static, str>,
}

impl HermesMutator {
    pub fn new(programs: Arc<Programs>, strategy: Strategy) -> Self {
        HermesMutator {
            programs,
            strategy,
            name: Cow::Owned(format!("hermes-{}", strategy.name())),
        }
    }
}

impl Named for HermesMutator {
    fn name(&self) -> &Cow<'static, str> {
        &self.name
    }
}

impl<S: HasRand> Mutator<Variant, S> for HermesMutator {
    fn mutate(&mut self, state: &mut S, input: &mut Variant) -> Result<MutationResult, Error> {
        let loaded = self
            .programs
            .get(&input.seed)
            .map_err(|e| Error::illegal_state(format!("hermes: {e:#}")))?;
        let points = usable_points(&loaded);
        if points.is_empty() {
            return Ok(MutationResult::Skipped);
        }
        let rand = state.rand_mut();
        let stmt = points[rand.below_or_zero(points.len())];
        let wrappable = !loaded.program.statement(stmt).ends_function;
        let edit = synthesize(
            self.strategy,
            stmt,
            &env_at(&loaded.valuation.points[&stmt]),
            wrappable,
            rand,
        );
        input.edits_mut().push(edit);
        Ok(MutationResult::Mutated)
    }

    fn post_exec(&mut self, _state: &mut S, _new_corpus_id: Option<libafl::corpus::CorpusId>) -> Result<(), Error> {
        Ok(())
    }
}
