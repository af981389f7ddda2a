//! Minimization of hand-made and generated programs under simple predicates.

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

fn minimizer(program: &OrangeProgram, predicate: impl Fn(&OrangeProgram) -> bool + 'static) -> Minimizer<Predicate> {
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
