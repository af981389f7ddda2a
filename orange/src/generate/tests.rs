//! Generation under each YARPGen policy: what each policy changes in the programs it makes.

use super::*;
use libafl_bolts::rands::StdRand;
use std::collections::HashMap;

fn programs(policies: Policies) -> Vec<OrangeProgram> {
    let mut rand = StdRand::with_seed(99);
    let options = GenOptions {
        min_operators: 200,
        max_operators: 400,
        policies,
        float: false,
    };
    (0..150).map(|_| generate(options, &mut rand)).collect()
}

fn only(set: impl Fn(&mut Policies)) -> Policies {
    let mut policies = Policies::NONE;
    set(&mut policies);
    policies
}

/// The generated operators (before settling flips some).
fn binary_ops(program: &OrangeProgram) -> Vec<BinaryOp> {
    let mut ops = Vec::new();
    for a in &program.assignments {
        a.expr.visit(&mut |e| {
            if let Expr::Binary(op, ..) = e {
                ops.push(*op);
            }
        });
    }
    ops
}

/// Share of parent–child pairs of binary operators that belong to one context.
fn same_context_share(programs: &[OrangeProgram]) -> f64 {
    let family = |op: BinaryOp| {
        Context::ALL.iter().position(|c| {
            c.operators().contains(&op) && *c != Context::BitwiseShift && *c != Context::AdditiveMultiplicative
        })
    };
    let (mut same, mut pairs) = (0, 0);
    for p in programs {
        for a in &p.assignments {
            a.expr.visit(&mut |e| {
                if let Expr::Binary(op, l, r) = e {
                    for child in [l, r] {
                        if let Expr::Binary(c, ..) = &**child {
                            pairs += 1;
                            same += usize::from(family(*op) == family(*c));
                        }
                    }
                }
            });
        }
    }
    same as f64 / pairs as f64
}

fn constant_leaf_share(programs: &[OrangeProgram]) -> f64 {
    let (mut constants, mut leaves) = (0, 0);
    for p in programs {
        for a in &p.assignments {
            a.expr.visit(&mut |e| match e {
                Expr::Const(..) => {
                    constants += 1;
                    leaves += 1
                }
                Expr::Var(_) => leaves += 1,
                _ => {}
            });
        }
    }
    constants as f64 / leaves as f64
}

/// Sub-expressions of 2+ operators that occur more than once in their program.
fn repeated_subexpressions(programs: &[OrangeProgram]) -> usize {
    programs
        .iter()
        .map(|p| {
            let mut seen: HashMap<&Expr, usize> = HashMap::new();
            for a in &p.assignments {
                a.expr.visit(&mut |e| {
                    if e.size() >= 2 {
                        *seen.entry(e).or_default() += 1;
                    }
                });
            }
            seen.values().filter(|&&n| n > 1).count()
        })
        .sum()
}

/// Spread across programs of the share of `+` among binary operators.
fn spread_of_add_share(programs: &[OrangeProgram]) -> f64 {
    let shares: Vec<f64> = programs
        .iter()
        .map(|p| {
            let ops = binary_ops(p);
            ops.iter()
                .filter(|&&o| o == BinaryOp::Add || o == BinaryOp::Sub)
                .count() as f64
                / ops.len().max(1) as f64
        })
        .collect();
    let mean = shares.iter().sum::<f64>() / shares.len() as f64;
    (shares.iter().map(|s| (s - mean).powi(2)).sum::<f64>() / shares.len() as f64).sqrt()
}

#[test]
fn each_policy_changes_the_distribution_it_targets() {
    let none = programs(Policies::NONE);
    let contexts = programs(only(|p| p.contexts = true));
    let constants = programs(only(|p| p.constants = true));
    let cse = programs(only(|p| p.common_subexpressions = true));
    let shuffle = programs(only(|p| p.shuffle = true));

    let (a, b) = (same_context_share(&none), same_context_share(&contexts));
    assert!(b > a + 0.1, "operator contexts: same-context pairs {a:.3} -> {b:.3}");
    println!("operator contexts: same-context pairs {a:.3} -> {b:.3}");

    let (a, b) = (constant_leaf_share(&none), constant_leaf_share(&constants));
    assert!(a == 0.0 && b > 0.2, "constants: constant leaves {a:.3} -> {b:.3}");
    println!("constants: constant leaves {a:.3} -> {b:.3}");
    let boundary = constants
        .iter()
        .flat_map(|p| p.assignments.iter())
        .filter(|a| {
            let mut found = false;
            a.expr.visit(&mut |e| {
                if let Expr::Const(k, v) = e {
                    found |= *v == IntKind::max(*k) || *v == IntKind::min(*k) + 1 || *v == IntKind::max(*k) - 1;
                }
            });
            found
        })
        .count();
    assert!(boundary > 0, "no near-boundary constant");

    let (a, b) = (repeated_subexpressions(&none), repeated_subexpressions(&cse));
    assert!(b > 3 * a.max(1), "common sub-expressions: repeated {a} -> {b}");
    println!("common sub-expressions: repeated {a} -> {b}");

    let (a, b) = (spread_of_add_share(&none), spread_of_add_share(&shuffle));
    assert!(
        b > 2.0 * a,
        "parameter shuffling: spread of the additive share {a:.3} -> {b:.3}"
    );
    println!("parameter shuffling: spread of the additive share {a:.3} -> {b:.3}");
}
