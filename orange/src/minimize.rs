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

/// The operands of a node's root operator (a conditional's three).
fn operands(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Var(_) | Expr::Const(..) => Vec::new(),
        Expr::Unary(_, a) | Expr::Cast(_, a) => vec![(**a).clone()],
        Expr::Binary(_, a, b) => vec![(**a).clone(), (**b).clone()],
        Expr::Ternary(c, a, b) => vec![(**a).clone(), (**b).clone(), (**c).clone()],
    }
}

fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Var(_) | Expr::Const(..) => Vec::new(),
        Expr::Unary(_, a) | Expr::Cast(_, a) => vec![a],
        Expr::Binary(_, a, b) => vec![a, b],
        Expr::Ternary(c, a, b) => vec![c, a, b],
    }
}

/// The node reached by following child positions from the root (in `children`' order).
fn node_at<'e>(e: &'e Expr, path: &[usize]) -> Option<&'e Expr> {
    match path.split_first() {
        None => Some(e),
        Some((&first, rest)) => node_at(children(e).get(first)?, rest),
    }
}

fn node_at_mut<'e>(e: &'e mut Expr, path: &[usize]) -> Option<&'e mut Expr> {
    let Some((&first, rest)) = path.split_first() else {
        return Some(e);
    };
    let child = match (e, first) {
        (Expr::Unary(_, a) | Expr::Cast(_, a), 0) => a,
        (Expr::Binary(_, a, _), 0) | (Expr::Ternary(_, a, _), 1) => a,
        (Expr::Binary(_, _, b), 1) | (Expr::Ternary(_, _, b), 2) => b,
        (Expr::Ternary(c, _, _), 0) => c,
        _ => return None,
    };
    node_at_mut(child, rest)
}

/// The pre-order index (as `Expr::visit` counts) of the node at `path`.
fn pre_order_index(e: &Expr, path: &[usize]) -> usize {
    match path.split_first() {
        None => 0,
        Some((&first, rest)) => {
            let children = children(e);
            1 + children[..first].iter().map(|c| c.nodes()).sum::<usize>() + pre_order_index(children[first], rest)
        }
    }
}

fn post_order_paths(e: &Expr, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    for (i, child) in children(e).into_iter().enumerate() {
        path.push(i);
        post_order_paths(child, path, out);
        path.pop();
    }
    out.push(path.clone());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::{generate, GenOptions, Policies};
    use crate::program::Assignment;
    use crate::settle::tests::assert_exact;
    use ccfuzz_semantics::BinaryOp;
    use std::convert::Infallible;

    fn var(name: &str, kind: IntKind, init: i128) -> Var {
        Var {
            name: name.into(),
            ty: Ty::Int(kind),
            init,
            global: true,
            is_const: false,
            is_volatile: true,
            is_static: true,
        }
    }

    fn binary(op: BinaryOp, a: Expr, b: Expr) -> Expr {
        Expr::Binary(op, Box::new(a), Box::new(b))
    }

    /// A settled program of x-variables `x0..` and one t-variable per expression.
    fn program(xs: Vec<Var>, exprs: Vec<Expr>) -> OrangeProgram {
        let mut vars = xs;
        let mut assignments = Vec::new();
        for (i, expr) in exprs.into_iter().enumerate() {
            vars.push(var(&format!("t{i}"), IntKind::Int, 0));
            assignments.push(Assignment {
                target: vars.len() - 1,
                expr,
                expected: 0,
            });
        }
        let mut program = OrangeProgram {
            vars,
            assignments,
            inserted: 0,
            flipped: 0,
        };
        program.settle(&mut StdRand::with_seed(0));
        program
    }

    type Predicate = Box<dyn FnMut(&OrangeProgram) -> Result<bool, Infallible>>;

    fn minimizer(
        program: &OrangeProgram,
        predicate: impl Fn(&OrangeProgram) -> bool + 'static,
    ) -> Minimizer<Predicate> {
        assert!(predicate(program), "the starting program must be interesting");
        Minimizer {
            current: program.clone(),
            values: program.node_values(),
            interesting: Box::new(move |p| Ok(predicate(p))),
            tests: 0,
            tried: HashSet::new(),
        }
    }

    fn is_constant(program: &OrangeProgram, i: usize) -> bool {
        matches!(program.assignments[i].expr, Expr::Const(..))
    }

    fn contains(e: &Expr, wanted: impl Fn(&Expr) -> bool) -> bool {
        let mut found = false;
        e.visit(&mut |node| found |= wanted(node));
        found
    }

    /// `x0 + x1`, `x1 - x0`, ... over two variables.
    fn sums(n: usize) -> OrangeProgram {
        let xs = vec![var("x0", IntKind::Int, 3), var("x1", IntKind::Int, 4)];
        let exprs = (0..n)
            .map(|_| binary(BinaryOp::Add, Expr::Var(0), Expr::Var(1)))
            .collect();
        program(xs, exprs)
    }

    #[test]
    fn binary_elimination_keeps_the_one_expression_in_few_tests() {
        let mut m = minimizer(&sums(16), |p| !is_constant(p, 11));
        assert!(m.eliminate_expressions(true).unwrap());
        let kept: Vec<usize> = (0..16).filter(|&i| !is_constant(&m.current, i)).collect();
        assert_eq!(kept, vec![11]);
        // Whole, halves, quarters... along one path: far fewer than 16 single tests.
        assert!(m.tests <= 10, "{} tests", m.tests);
        // Eliminated expressions hold their expected values.
        assert_eq!(m.current.assignments[3].expr, Expr::Const(IntKind::Int, 7));
        assert_exact(&m.current);
        assert!(!m.eliminate_expressions(false).unwrap());
    }

    #[test]
    fn elimination_keeps_both_expressions_when_the_error_needs_both() {
        let mut m = minimizer(&sums(12), |p| !is_constant(p, 2) && !is_constant(p, 9));
        while m.eliminate_expressions(m.tests == 0).unwrap() {}
        let kept: Vec<usize> = (0..12).filter(|&i| !is_constant(&m.current, i)).collect();
        assert_eq!(kept, vec![2, 9]);
    }

    #[test]
    fn top_down_keeps_the_operand_that_holds_the_error_and_recomputes_values() {
        // t0 = (x0 + x1) * x2 with x = 3, 4, 5; the error needs a `+`.
        let xs = vec![
            var("x0", IntKind::Int, 3),
            var("x1", IntKind::Int, 4),
            var("x2", IntKind::Int, 5),
        ];
        let sum = binary(BinaryOp::Add, Expr::Var(0), Expr::Var(1));
        let p = program(xs, vec![binary(BinaryOp::Mul, sum.clone(), Expr::Var(2))]);
        assert_eq!(p.assignments[0].expected, 35);
        let mut m = minimizer(&p, |p| {
            contains(&p.assignments[0].expr, |e| matches!(e, Expr::Binary(BinaryOp::Add, ..)))
        });
        assert!(m.top_down().unwrap());
        assert_eq!(m.current.assignments[0].expr, sum);
        assert_eq!(m.current.assignments[0].expected, 7);
        assert!(!m.top_down().unwrap());
    }

    #[test]
    fn binary_bottom_up_folds_what_the_error_does_not_need_and_keeps_values() {
        // A chain of 64 additions of x0 with one `x1 % x2` at the bottom of the left spine.
        let xs = vec![
            var("x0", IntKind::Int, 1),
            var("x1", IntKind::Int, 17),
            var("x2", IntKind::Int, 5),
        ];
        let mut e = binary(BinaryOp::Rem, Expr::Var(1), Expr::Var(2));
        for _ in 0..64 {
            e = binary(BinaryOp::Add, e, Expr::Var(0));
        }
        let p = program(xs, vec![e]);
        let expected = p.assignments[0].expected;
        assert_eq!(expected, 2 + 64);
        let has_rem = |p: &OrangeProgram| {
            contains(
                &p.assignments[0].expr,
                |e| matches!(e, Expr::Binary(BinaryOp::Rem, a, b) if matches!(**a, Expr::Var(_)) && matches!(**b, Expr::Var(_))),
            )
        };
        let mut m = minimizer(&p, has_rem);
        assert!(m.bottom_up(true).unwrap());
        let e = &m.current.assignments[0].expr;
        assert_eq!(m.current.assignments[0].expected, expected);
        // Every `+ x0` became `+ 1`: no variable but the remainder's operands is read.
        let reads = |i| contains(e, |n| *n == Expr::Var(i));
        assert!(!reads(0) && reads(1) && reads(2));
        // The right operands folded one test each, the left spine fails once per level:
        // linear in the depth of the error, not in all 129 nodes.
        assert!(m.tests <= 2 * 64 + 4, "{} tests", m.tests);
        assert!(!m.bottom_up(false).unwrap());
    }

    #[test]
    fn values_and_types_become_plain_and_small_without_undefined_behaviour() {
        // t0 = x0 / x1 with a static volatile global long x0 = 1000 and x1 = 7: any program
        // with a division is interesting, but x1 = 0 would divide by zero.
        let xs = vec![var("x0", IntKind::Long, 1000), var("x1", IntKind::Short, 7)];
        let p = program(xs, vec![binary(BinaryOp::Div, Expr::Var(0), Expr::Var(1))]);
        let mut m = minimizer(&p, |p| {
            contains(&p.assignments[0].expr, |e| matches!(e, Expr::Binary(BinaryOp::Div, ..)))
        });
        assert!(m.values_and_types().unwrap());
        let p = &m.current;
        assert!(p
            .vars
            .iter()
            .all(|v| !v.global && !v.is_static && !v.is_volatile && v.ty == Ty::Int(IntKind::Int)));
        assert_eq!((p.vars[0].init, p.vars[1].init), (0, 1));
        assert_eq!(p.assignments[0].expected, 0);
        assert_exact(p);
    }

    #[test]
    fn halving_stops_at_the_smallest_value_that_keeps_the_error() {
        // Interesting while x0 > 100: 1000 halves to 500, 250, 125, and 62 is too small; the
        // constant goes to 0.
        let p = program(
            vec![var("x0", IntKind::Int, 1000)],
            vec![binary(BinaryOp::Add, Expr::Var(0), Expr::Const(IntKind::Int, 9))],
        );
        let mut m = minimizer(&p, |p| p.vars[0].init > 100);
        m.values_and_types().unwrap();
        assert_eq!(m.current.vars[0].init, 125);
        assert_eq!(
            m.current.assignments[0].expr,
            binary(BinaryOp::Add, Expr::Var(0), Expr::Const(IntKind::Int, 0))
        );
        assert_eq!(m.current.assignments[0].expected, 125);
    }

    /// Some expression holds a `%` on two `unsigned char` operands.
    fn unsigned_char_remainder(p: &OrangeProgram) -> bool {
        let values = p.node_values();
        p.assignments.iter().zip(&values).any(|(a, nodes)| {
            let mut index = 0;
            let mut found = false;
            a.expr.visit(&mut |e| {
                if let Expr::Binary(BinaryOp::Rem, l, _) = e {
                    let right = index + 1 + l.nodes();
                    found |= [index + 1, right]
                        .iter()
                        .all(|&i| nodes[i].ty == Ty::Int(IntKind::UChar));
                }
                index += 1;
            });
            found
        })
    }

    #[test]
    fn a_large_program_shrinks_to_one_small_expression() {
        let mut rand = StdRand::with_seed(7);
        let options = GenOptions {
            min_operators: 1000,
            max_operators: 2000,
            policies: Policies::ALL,
            float: false,
        };
        let start = (0..200)
            .map(|_| generate(options, &mut rand))
            // Many expressions, and long ones, so that every transformation has work.
            .find(|p| unsigned_char_remainder(p) && p.assignments.len() >= 8 && p.size() >= 40 * p.assignments.len())
            .expect("a program with a % on unsigned char operands");
        let (operators, expressions) = (start.size(), start.assignments.len());
        let Minimized { program, tests } = minimize(&start, |p| Ok::<_, Infallible>(unsigned_char_remainder(p)))
            .unwrap()
            .unwrap();
        assert!(unsigned_char_remainder(&program));
        assert_exact(&program);
        let live: Vec<&Assignment> = program
            .assignments
            .iter()
            .filter(|a| !matches!(a.expr, Expr::Const(..)))
            .collect();
        // Exactly `(unsigned char)0 % (unsigned char)1`: one operator on constants, the
        // smallest values the remainder allows.
        assert_eq!(live.len(), 1, "{}", program.to_c());
        assert_eq!(
            live[0].expr,
            binary(
                BinaryOp::Rem,
                Expr::Const(IntKind::UChar, 0),
                Expr::Const(IntKind::UChar, 1)
            ),
            "{}",
            program.to_c()
        );
        assert!(program
            .vars
            .iter()
            .all(|v| v.ty == Ty::Int(IntKind::Int) && !v.global && v.init == 0));
        // Constant assignments and unread variables are gone: `int t = 0; t = ... % ...;`.
        assert_eq!(
            (program.assignments.len(), program.vars.len()),
            (1, 1),
            "{}",
            program.to_c()
        );
        println!(
            "{operators} operators in {expressions} expressions -> {} operator, {tests} tests",
            program.size()
        );
        assert!(tests < operators / 2, "{tests} tests for {operators} operators");
    }

    #[test]
    fn settled_programs_settle_unchanged_and_trace_every_node() {
        // `node_values` and the rejection of candidates rely on both. (Integer programs only:
        // settling a floating program again may insert offsets again.)
        let mut rand = StdRand::with_seed(3);
        let options = GenOptions {
            min_operators: 50,
            max_operators: 500,
            policies: Policies::ALL,
            float: false,
        };
        for _ in 0..40 {
            let program = generate(options, &mut rand);
            let mut again = program.clone();
            again.settle(&mut rand);
            assert_eq!(again.vars, program.vars);
            assert_eq!(again.assignments, program.assignments);
            let values = program.node_values();
            for (a, nodes) in program.assignments.iter().zip(&values) {
                assert_eq!(nodes.len(), a.expr.nodes());
            }
        }
    }

    #[test]
    fn an_uninteresting_program_costs_one_test() {
        let mut tests = 0;
        let result = minimize(&sums(3), |_| {
            tests += 1;
            Ok::<_, Infallible>(false)
        })
        .unwrap();
        assert!(result.is_none());
        assert_eq!(tests, 1);
    }
}
