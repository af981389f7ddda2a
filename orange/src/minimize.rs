//! Minimization of an Orange program that shows an error, as the Orange3 paper's section 5
//! specifies: expression elimination, top-down and bottom-up minimization (each by binary
//! search the first time, linearly afterwards) and value and type minimization, in the flow of
//! its Fig. 15. The error is whatever an interestingness predicate says; every candidate is
//! settled again, and one that settling would have to change (undefined behaviour, rounding) is
//! dropped untested, so each tested program is UB-free with exact expected values.

use crate::program::{Expr, OrangeProgram, Ty, Val, Var};
use ccfuzz_semantics::IntKind;
use libafl_bolts::rands::StdRand;
use std::collections::HashSet;

mod paths;

use paths::{node_at, node_at_mut, operands, post_order_paths, pre_order_index};

/// The smallest program found, and what it cost.
#[derive(Clone, Debug)]
pub struct Minimized {
    pub program: OrangeProgram,
    /// Calls of the predicate (the starting program's included).
    pub tests: usize,
}

/// Minimizes `program` under `interesting`. `None` when the program itself is not interesting
/// (one test). Errors of the predicate stop the minimization.
pub fn minimize<E>(
    program: &OrangeProgram,
    interesting: impl FnMut(&OrangeProgram) -> Result<bool, E>,
) -> Result<Option<Minimized>, E> {
    let mut minimizer = Minimizer {
        current: program.clone(),
        values: program.node_values(),
        interesting,
        tests: 0,
        tried: HashSet::new(),
    };
    minimizer.tried.insert(program.to_c());
    minimizer.tests += 1;
    if !(minimizer.interesting)(program)? {
        return Ok(None);
    }
    minimizer.run()?;
    Ok(Some(Minimized {
        program: minimizer.current,
        tests: minimizer.tests,
    }))
}

/// One change of the value and type minimization.
#[derive(Clone, Copy, Debug)]
enum Simplification {
    /// Drop `const`, `volatile` and `static`, and make a global variable local.
    PlainVariable(usize),
    /// A variable's integer kind, its value converted.
    VariableKind(usize, IntKind),
    /// A variable's initial value.
    VariableValue(usize, i128),
    /// A constant of an expression: assignment, pre-order node, new kind and value.
    Constant(usize, usize, IntKind, i128),
}

impl Simplification {
    /// Whether both change the same variable's value or the same constant.
    fn same_site(&self, other: &Simplification) -> bool {
        match (self, other) {
            (Simplification::VariableValue(a, _), Simplification::VariableValue(b, _)) => a == b,
            (Simplification::Constant(a, i, ..), Simplification::Constant(b, j, ..)) => (a, i) == (b, j),
            _ => false,
        }
    }
}

struct Minimizer<F> {
    current: OrangeProgram,
    /// `current`'s node values (`OrangeProgram::node_values`).
    values: Vec<Vec<Val>>,
    interesting: F,
    tests: usize,
    /// Texts of every candidate tested, so that none is tested twice.
    tried: HashSet<String>,
}

impl<E, F: FnMut(&OrangeProgram) -> Result<bool, E>> Minimizer<F> {
    /// The paper's Fig. 15.
    fn run(&mut self) -> Result<(), E> {
        let (mut binary_elimination, mut binary_bottom_up) = (true, true);
        loop {
            loop {
                while self.eliminate_expressions(binary_elimination)? {
                    binary_elimination = false;
                }
                binary_elimination = false;
                let top_down = loop {
                    let top_down = self.top_down()?;
                    let bottom_up = self.bottom_up(binary_bottom_up)?;
                    binary_bottom_up = false;
                    if !bottom_up {
                        break top_down;
                    }
                };
                if !top_down {
                    break;
                }
            }
            if !self.values_and_types()? {
                break;
            }
        }
        self.remove_leftovers()
    }

    /// Beyond the paper: assignments of constants, then variables that nothing reads or
    /// assigns, are removed (in groups), so that the program's text shrinks as well.
    fn remove_leftovers(&mut self) -> Result<(), E> {
        let constant_targets: Vec<String> = self
            .current
            .assignments
            .iter()
            .filter(|a| matches!(a.expr, Expr::Const(..)))
            .map(|a| self.current.vars[a.target].name.clone())
            .collect();
        self.in_groups(&constant_targets, &|program, name| {
            let vars = &program.vars;
            program.assignments.retain(|a| vars[a.target].name != *name);
        })?;
        let mut used = vec![false; self.current.vars.len()];
        for assignment in &self.current.assignments {
            used[assignment.target] = true;
            assignment.expr.visit(&mut |e| {
                if let Expr::Var(i) = e {
                    used[*i] = true;
                }
            });
        }
        let unused: Vec<String> = (0..used.len())
            .filter(|&i| !used[i])
            .map(|i| self.current.vars[i].name.clone())
            .collect();
        self.in_groups(&unused, &|program, name| {
            if let Some(index) = program.vars.iter().position(|v| v.name == *name) {
                remove_variable(program, index);
            }
        })?;
        Ok(())
    }

    /// Settles `candidate` and tests it; it becomes the current program when the predicate
    /// holds. Candidates that settling would change, that assign a floating value to an
    /// integer variable (a conversion settling does not guard) or that were tested before are
    /// dropped without a test.
    fn try_candidate(&mut self, candidate: OrangeProgram) -> Result<bool, E> {
        let mut settled = candidate.clone();
        settled.settle(&mut StdRand::with_seed(0));
        let unchanged = settled.vars == candidate.vars
            && settled
                .assignments
                .iter()
                .zip(&candidate.assignments)
                .all(|(s, c)| s.expr == c.expr);
        if !unchanged || !self.tried.insert(settled.to_c()) {
            return Ok(false);
        }
        let values = settled.node_values();
        if assigns_floating_to_integer(&settled, &values) {
            return Ok(false);
        }
        self.tests += 1;
        if (self.interesting)(&settled)? {
            self.current = settled;
            self.values = values;
            return Ok(true);
        }
        Ok(false)
    }

    /// (1) Assignments replaced by their expected values. Binary: all the expressions, then each
    /// half, quarter... of a group that cannot go as a whole; linear: one at a time.
    fn eliminate_expressions(&mut self, binary: bool) -> Result<bool, E> {
        let candidates: Vec<usize> = (0..self.current.assignments.len())
            .filter(|&i| eliminated(&self.current, i).is_some())
            .collect();
        if binary {
            return self.in_groups(&candidates, &|program, &i| {
                if let Some(constant) = eliminated(program, i) {
                    program.assignments[i].expr = constant;
                }
            });
        }
        let mut changed = false;
        for i in candidates {
            if let Some(constant) = eliminated(&self.current, i) {
                let mut candidate = self.current.clone();
                candidate.assignments[i].expr = constant;
                changed |= self.try_candidate(candidate)?;
            }
        }
        Ok(changed)
    }

    /// Applies `change` for every item of a group at once; a group that fails is split in two
    /// and each half tried, down to single items.
    fn in_groups<T>(&mut self, items: &[T], change: &impl Fn(&mut OrangeProgram, &T)) -> Result<bool, E> {
        if items.is_empty() {
            return Ok(false);
        }
        let mut candidate = self.current.clone();
        for item in items {
            change(&mut candidate, item);
        }
        if candidate != self.current && self.try_candidate(candidate)? {
            return Ok(true);
        }
        if items.len() == 1 {
            return Ok(false);
        }
        let (first, second) = items.split_at(items.len() / 2);
        let first_changed = self.in_groups(first, change)?;
        let second_changed = self.in_groups(second, change)?;
        Ok(first_changed || second_changed)
    }

    /// (2) Each expression replaced by an operand of its root operator, as long as one of
    /// them keeps the error.
    fn top_down(&mut self) -> Result<bool, E> {
        let mut changed = false;
        for i in 0..self.current.assignments.len() {
            'root: loop {
                for operand in operands(&self.current.assignments[i].expr) {
                    let mut candidate = self.current.clone();
                    candidate.assignments[i].expr = operand;
                    if self.try_candidate(candidate)? {
                        changed = true;
                        continue 'root;
                    }
                }
                break;
            }
        }
        Ok(changed)
    }

    /// (3) Variable references and operations replaced by their values. Binary: each operand of
    /// the root is tried as a whole and, when it must stay, its own operands in turn; linear:
    /// every node from the leaves up.
    fn bottom_up(&mut self, binary: bool) -> Result<bool, E> {
        let mut changed = false;
        for i in 0..self.current.assignments.len() {
            if binary {
                changed |= self.fold_below(i, &mut Vec::new())?;
            } else {
                let mut paths = Vec::new();
                post_order_paths(&self.current.assignments[i].expr, &mut Vec::new(), &mut paths);
                // Paths stay valid: a folded node's descendants come before it.
                for path in paths.into_iter().filter(|p| !p.is_empty()) {
                    changed |= self.fold(i, &path)?;
                }
            }
        }
        Ok(changed)
    }

    /// Folds each operand of the node at `path` into a constant, or else recurses into it.
    fn fold_below(&mut self, assignment: usize, path: &mut Vec<usize>) -> Result<bool, E> {
        let Some(node) = node_at(&self.current.assignments[assignment].expr, path) else {
            return Ok(false);
        };
        let mut changed = false;
        for child in 0..operands(node).len() {
            path.push(child);
            changed |= self.fold(assignment, path)? || self.fold_below(assignment, path)?;
            path.pop();
        }
        Ok(changed)
    }

    /// Replaces the node at `path` by a constant of its value and type.
    fn fold(&mut self, assignment: usize, path: &[usize]) -> Result<bool, E> {
        let expr = &self.current.assignments[assignment].expr;
        let Some(node) = node_at(expr, path) else {
            return Ok(false);
        };
        if matches!(node, Expr::Const(..)) {
            return Ok(false);
        }
        let index = pre_order_index(expr, path);
        let Val { ty: Ty::Int(kind), v } = self.values[assignment][index] else {
            return Ok(false);
        };
        let mut candidate = self.current.clone();
        if let Some(node) = node_at_mut(&mut candidate.assignments[assignment].expr, path) {
            *node = Expr::Const(kind, v);
        }
        self.try_candidate(candidate)
    }

    /// (4) Plainer variables, `int` for other integer kinds, then smaller magnitudes: 0, then
    /// ±1, then halving as long as it keeps the error. Changes are tried in groups.
    fn values_and_types(&mut self) -> Result<bool, E> {
        let mut changed = false;
        let plain: Vec<Simplification> = (0..self.current.vars.len())
            .filter(|&i| {
                let var = &self.current.vars[i];
                var.global || var.is_const || var.is_volatile || var.is_static
            })
            .map(Simplification::PlainVariable)
            .collect();
        changed |= self.in_groups(&plain, &apply)?;
        for target in [IntKind::Int, IntKind::UInt] {
            let kinds = self.kind_simplifications(target);
            changed |= self.in_groups(&kinds, &apply)?;
        }
        for shrink in [|_| 0, i128::signum] {
            let values = self.value_simplifications(shrink);
            changed |= self.in_groups(&values, &apply)?;
        }
        // What can be neither 0 nor ±1 is halved one value at a time, while that keeps the error.
        for site in self.value_simplifications(|v| v / 2) {
            let mut halved = site;
            while self.try_candidate(self.applied(&halved))? {
                changed = true;
                match self
                    .value_simplifications(|v| v / 2)
                    .into_iter()
                    .find(|s| s.same_site(&halved))
                {
                    Some(next) => halved = next,
                    None => break,
                }
            }
        }
        Ok(changed)
    }

    fn applied(&self, simplification: &Simplification) -> OrangeProgram {
        let mut candidate = self.current.clone();
        apply(&mut candidate, simplification);
        candidate
    }

    /// Variables and constants of an integer kind other than `target` that is not simpler
    /// than it (`int` is the simplest, then `unsigned int`), moved to `target`.
    fn kind_simplifications(&self, target: IntKind) -> Vec<Simplification> {
        let simpler = |kind: IntKind| kind == IntKind::Int || (kind == IntKind::UInt && target == IntKind::UInt);
        let mut found: Vec<Simplification> = self
            .current
            .vars
            .iter()
            .enumerate()
            .filter_map(|(i, var)| match var.ty {
                Ty::Int(kind) if !simpler(kind) => Some(Simplification::VariableKind(i, target)),
                _ => None,
            })
            .collect();
        for (a, assignment) in self.current.assignments.iter().enumerate() {
            let mut index = 0;
            assignment.expr.visit(&mut |node| {
                if let Expr::Const(kind, v) = node {
                    if !simpler(*kind) {
                        found.push(Simplification::Constant(a, index, target, *v));
                    }
                }
                index += 1;
            });
        }
        found
    }

    /// Initial values and constants whose magnitude `shrink` makes smaller.
    fn value_simplifications(&self, shrink: fn(i128) -> i128) -> Vec<Simplification> {
        let smaller = |v: i128| (shrink(v).abs() < v.abs()).then(|| shrink(v));
        let mut found: Vec<Simplification> = self
            .current
            .vars
            .iter()
            .enumerate()
            .filter_map(|(i, var)| smaller(var.init).map(|v| Simplification::VariableValue(i, v)))
            .collect();
        for (a, assignment) in self.current.assignments.iter().enumerate() {
            let mut index = 0;
            assignment.expr.visit(&mut |node| {
                if let Expr::Const(kind, v) = node {
                    if let Some(v) = smaller(*v) {
                        found.push(Simplification::Constant(a, index, *kind, v));
                    }
                }
                index += 1;
            });
        }
        found
    }
}

fn apply(program: &mut OrangeProgram, simplification: &Simplification) {
    match *simplification {
        Simplification::PlainVariable(i) => {
            let var = &mut program.vars[i];
            (var.global, var.is_const, var.is_volatile, var.is_static) = (false, false, false, false);
        }
        Simplification::VariableKind(i, kind) => {
            let var = &mut program.vars[i];
            var.ty = Ty::Int(kind);
            var.init = ccfuzz_semantics::convert(var.init, kind);
        }
        Simplification::VariableValue(i, v) => program.vars[i].init = v,
        Simplification::Constant(a, index, kind, v) => {
            if let Some(node) = program.assignments[a].expr.node_mut(index) {
                *node = Expr::Const(kind, ccfuzz_semantics::convert(v, kind));
            }
        }
    }
}

/// Removes a variable that no expression reads and no assignment assigns.
fn remove_variable(program: &mut OrangeProgram, index: usize) {
    fn renumber(e: &mut Expr, removed: usize) {
        match e {
            Expr::Var(i) => *i -= usize::from(*i > removed),
            Expr::Const(..) => {}
            Expr::Unary(_, a) | Expr::Cast(_, a) => renumber(a, removed),
            Expr::Binary(_, a, b) => {
                renumber(a, removed);
                renumber(b, removed);
            }
            Expr::Ternary(c, a, b) => {
                renumber(c, removed);
                renumber(a, removed);
                renumber(b, removed);
            }
        }
    }
    program.vars.remove(index);
    for assignment in &mut program.assignments {
        assignment.target -= usize::from(assignment.target > index);
        renumber(&mut assignment.expr, index);
    }
}

/// The constant that replaces assignment `i`'s expression: its expected value in the
/// t-variable's type (`long long` for a floating one). `None` when it is a constant already.
fn eliminated(program: &OrangeProgram, i: usize) -> Option<Expr> {
    let assignment = &program.assignments[i];
    if matches!(assignment.expr, Expr::Const(..)) {
        return None;
    }
    let kind = match program.vars[assignment.target].ty {
        Ty::Int(kind) => kind,
        Ty::Float(_) if IntKind::LongLong.contains(assignment.expected) => IntKind::LongLong,
        Ty::Float(_) => return None,
    };
    Some(Expr::Const(kind, assignment.expected))
}

fn assigns_floating_to_integer(program: &OrangeProgram, values: &[Vec<Val>]) -> bool {
    program
        .assignments
        .iter()
        .zip(values)
        .any(|(a, nodes)| is_integer(&program.vars[a.target]) && matches!(nodes[0].ty, Ty::Float(_)))
}

fn is_integer(var: &Var) -> bool {
    matches!(var.ty, Ty::Int(_))
}

#[cfg(test)]
mod tests;
