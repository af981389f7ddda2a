//! Settled programs checked against an independent evaluator.

use super::*;
use crate::generate::{generate, GenOptions, Policies};
use crate::program::Assignment;
use ccfuzz_semantics::Value;
use libafl_bolts::rands::StdRand;

/// Evaluates an expression as C would, independently of the settling code, and fails on
/// any undefined behaviour or inexact floating value.
fn eval(e: &Expr, vars: &[Var], values: &[i128]) -> Val {
    let int = |v: Val| match v.ty {
        Ty::Int(k) => Value { kind: k, value: v.v },
        Ty::Float(_) => panic!("a floating operand reached an integer operator"),
    };
    match e {
        Expr::Var(i) => Val {
            ty: vars[*i].ty,
            v: values.get(*i).copied().unwrap_or(vars[*i].init),
        },
        Expr::Const(k, v) => Val { ty: Ty::Int(*k), v: *v },
        Expr::Cast(k, a) => {
            let x = eval(a, vars, values);
            assert!(k.contains(x.v) || matches!(x.ty, Ty::Int(_)), "cast out of range");
            Val {
                ty: Ty::Int(*k),
                v: convert(x.v, *k),
            }
        }
        Expr::Unary(op, a) => {
            let x = eval(a, vars, values);
            match x.ty {
                Ty::Float(_) => match op {
                    UnaryOp::Neg => Val { ty: x.ty, v: -x.v },
                    UnaryOp::Not => Val {
                        ty: Ty::Int(IntKind::Int),
                        v: (x.v == 0) as i128,
                    },
                    UnaryOp::BitNot => panic!("~ on a floating value"),
                },
                Ty::Int(_) => {
                    let r = eval_unary(*op, int(x)).unwrap_or_else(|ub| panic!("{ub} in {e:?}"));
                    Val {
                        ty: Ty::Int(r.kind),
                        v: r.value,
                    }
                }
            }
        }
        Expr::Ternary(c, a, b) => {
            let c = eval(c, vars, values);
            let (x, y) = (eval(a, vars, values), eval(b, vars, values));
            let ty = Ty::common(x.ty, y.ty);
            let chosen = if c.v != 0 { x } else { y };
            match ty {
                Ty::Int(k) => Val {
                    ty,
                    v: convert(chosen.v, k),
                },
                Ty::Float(f) => {
                    assert!(chosen.v.abs() <= f.limit() * 4, "inexact ternary");
                    Val { ty, v: chosen.v }
                }
            }
        }
        Expr::Binary(op, a, b) => {
            let (x, y) = (eval(a, vars, values), eval(b, vars, values));
            if let (Ty::Int(_), Ty::Int(_)) = (x.ty, y.ty) {
                let r = eval_binary(*op, int(x), int(y)).unwrap_or_else(|ub| panic!("{ub} in {e:?}"));
                return Val {
                    ty: Ty::Int(r.kind),
                    v: r.value,
                };
            }
            match op {
                BinaryOp::LogAnd => return bool_val(x.v != 0 && y.v != 0),
                BinaryOp::LogOr => return bool_val(x.v != 0 || y.v != 0),
                _ => {}
            }
            let ty = Ty::common(x.ty, y.ty);
            let Ty::Float(f) = ty else { unreachable!() };
            // Every operand and result of floating arithmetic and comparison is an exact
            // integer.
            let exact = f.limit() * 4;
            assert!(x.v.abs() <= exact && y.v.abs() <= exact, "inexact operand in {e:?}");
            let v = match op {
                BinaryOp::Add => x.v + y.v,
                BinaryOp::Sub => x.v - y.v,
                BinaryOp::Mul => x.v * y.v,
                BinaryOp::Div => {
                    assert!(y.v != 0 && x.v % y.v == 0, "inexact division in {e:?}");
                    x.v / y.v
                }
                cmp if is_comparison(*cmp) => return bool_val(compare(*cmp, x.v, y.v)),
                other => panic!("{other:?} on a floating operand"),
            };
            assert!(v.abs() <= exact, "inexact result in {e:?}");
            Val { ty, v }
        }
    }
}

/// Evaluates the program independently and checks every expected value.
pub(crate) fn assert_exact(program: &OrangeProgram) {
    let mut values: Vec<i128> = program.vars.iter().map(|v| v.init).collect();
    for assignment in &program.assignments {
        let value = eval(&assignment.expr, &program.vars, &values);
        let expected = match program.vars[assignment.target].ty {
            Ty::Int(k) => {
                let in_range = k.contains(value.v) || matches!(value.ty, Ty::Int(_));
                assert!(in_range, "a floating value beyond the range of its integer variable");
                convert(value.v, k)
            }
            Ty::Float(_) => value.v,
        };
        assert_eq!(expected, assignment.expected);
        values[assignment.target] = expected;
    }
}

fn bool_val(truth: bool) -> Val {
    Val {
        ty: Ty::Int(IntKind::Int),
        v: truth as i128,
    }
}

#[test]
fn settled_programs_are_free_of_undefined_behaviour_and_their_values_exact() {
    let mut rand = StdRand::with_seed(2026);
    let mut checked = 0;
    for n in 0..600u32 {
        let options = GenOptions {
            min_operators: 1,
            max_operators: 1500,
            policies: if n.is_multiple_of(2) {
                Policies::ALL
            } else {
                Policies::NONE
            },
            float: n.is_multiple_of(3),
        };
        let program = generate(options, &mut rand);
        assert_exact(&program);
        checked += program.assignments.len();
    }
    assert!(checked > 1000, "{checked} expressions");
}

#[test]
fn flipping_and_insertion_follow_table_1() {
    let mut rand = StdRand::with_seed(1);
    let int = |k: IntKind, v: i128, name: &str| Var {
        name: name.into(),
        ty: Ty::Int(k),
        init: v,
        global: false,
        is_const: false,
        is_volatile: false,
        is_static: false,
    };
    let program_of = |vars: Vec<Var>, expr: Expr| OrangeProgram {
        assignments: vec![Assignment {
            target: vars.len() - 1,
            expr,
            expected: 0,
        }],
        vars,
        inserted: 0,
        flipped: 0,
    };
    let var = |i| Box::new(Expr::Var(i));
    // INT_MAX + 1 overflows: the addition becomes a subtraction, nothing is inserted.
    let mut p = program_of(
        vec![
            int(IntKind::Int, i32::MAX as i128, "a"),
            int(IntKind::Int, 1, "b"),
            int(IntKind::Int, 0, "t"),
        ],
        Expr::Binary(BinaryOp::Add, var(0), var(1)),
    );
    p.settle(&mut rand);
    assert_eq!(p.assignments[0].expr, Expr::Binary(BinaryOp::Sub, var(0), var(1)));
    assert_eq!(
        (p.flipped, p.inserted, p.assignments[0].expected),
        (1, 0, i32::MAX as i128 - 1)
    );
    // a / (b < c) with b >= c: the comparison is flipped, the divisor becomes 1.
    let mut p = program_of(
        vec![
            int(IntKind::Int, 7, "a"),
            int(IntKind::Int, 5, "b"),
            int(IntKind::Int, 2, "c"),
            int(IntKind::Int, 0, "t"),
        ],
        Expr::Binary(
            BinaryOp::Div,
            var(0),
            Box::new(Expr::Binary(BinaryOp::Lt, var(1), var(2))),
        ),
    );
    p.settle(&mut rand);
    assert_eq!((p.flipped, p.inserted, p.assignments[0].expected), (1, 0, 7));
    // a / b with b == 0: an addition is inserted on the divisor.
    let mut p = program_of(
        vec![
            int(IntKind::Int, 7, "a"),
            int(IntKind::Int, 0, "b"),
            int(IntKind::Int, 0, "t"),
        ],
        Expr::Binary(BinaryOp::Div, var(0), var(1)),
    );
    p.settle(&mut rand);
    assert_eq!((p.flipped, p.inserted), (0, 1));
    assert!(
        matches!(&p.assignments[0].expr, Expr::Binary(BinaryOp::Div, _, d) if matches!(**d, Expr::Binary(BinaryOp::Add, ..)))
    );
    // a << b with b too large: the shift amount gets an inserted addition.
    let mut p = program_of(
        vec![
            int(IntKind::Int, 1, "a"),
            int(IntKind::Int, 40, "b"),
            int(IntKind::Int, 0, "t"),
        ],
        Expr::Binary(BinaryOp::Shl, var(0), var(1)),
    );
    p.settle(&mut rand);
    assert!(p.inserted >= 1 && p.flipped == 0);
}
