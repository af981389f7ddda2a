//! Hermes's synthesis (§4.3–4.4): expressions whose every value is known by speculative
//! execution over the observed values (Algorithm 3), predicates with a required truth value
//! (Algorithm 2), and random code for blocks that never run.
//!
//! Speculative execution applies the C-semantics core to the Cartesian product of the
//! operands' value sets: an over-approximation, so "no value is undefined" and "every value is
//! true" hold for whatever the program actually computes at that point.

use ccfuzz_semantics::{convert, eval_binary, eval_unary, BinaryOp, IntKind, UnaryOp, Value};
use libafl_bolts::rands::Rand;
use std::collections::BTreeSet;
use std::sync::Arc;

/// Larger Cartesian products are not evaluated; the operator is then not used.
const PRODUCT_LIMIT: usize = 4096;
/// Consecutive unary operators at most, so that Algorithm 3 terminates.
const UNARY_STREAK: u32 = 2;

/// An expression with its C type and every value it can take at its program point.
#[derive(Clone, Debug, PartialEq)]
pub struct SynExpr {
    pub text: String,
    pub kind: IntKind,
    pub values: Vec<i128>,
}

impl SynExpr {
    pub fn constant(kind: IntKind, value: i128) -> Self {
        SynExpr {
            text: kind.literal(value),
            kind,
            values: vec![value],
        }
    }

    /// Every value is true (`expected`) or every value is false.
    pub fn is_constantly(&self, expected: bool) -> bool {
        !self.values.is_empty() && self.values.iter().all(|v| (*v != 0) == expected)
    }

    pub fn unary(op: UnaryOp, a: &SynExpr) -> Option<SynExpr> {
        let mut values = BTreeSet::new();
        let mut kind = None;
        for &x in &a.values {
            let result = eval_unary(op, Value { kind: a.kind, value: x }).ok()?;
            kind = Some(result.kind);
            values.insert(result.value);
        }
        Some(SynExpr {
            text: format!("({}{})", op.symbol(), a.text),
            kind: kind?,
            values: values.into_iter().collect(),
        })
    }

    pub fn binary(op: BinaryOp, a: &SynExpr, b: &SynExpr) -> Option<SynExpr> {
        if a.values.len().saturating_mul(b.values.len()) > PRODUCT_LIMIT {
            return None;
        }
        let mut values = BTreeSet::new();
        let mut kind = None;
        for &x in &a.values {
            for &y in &b.values {
                let result =
                    eval_binary(op, Value { kind: a.kind, value: x }, Value { kind: b.kind, value: y }).ok()?;
                kind = Some(result.kind);
                values.insert(result.value);
            }
        }
        Some(SynExpr {
            text: format!("({} {} {})", a.text, op.symbol(), b.text),
            kind: kind?,
            values: values.into_iter().collect(),
        })
    }
}

/// An lvalue of the environment with its observed values.
#[derive(Clone, Debug, PartialEq)]
pub struct EnvEntry {
    /// Shared with the valuation's readable: Hermes builds an environment at every proposal.
    pub expr: Arc<str>,
    pub kind: IntKind,
    pub assignable: bool,
    pub values: Vec<i128>,
}

impl EnvEntry {
    pub fn as_expr(&self) -> SynExpr {
        SynExpr {
            text: self.expr.to_string(),
            kind: self.kind,
            values: self.values.clone(),
        }
    }
}

/// The environment at a program point: what each readable lvalue may hold there.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Env {
    pub entries: Vec<EnvEntry>,
}

impl Env {
    /// Records an assignment `lvalue = expr`: the lvalue now holds the values of `expr`
    /// converted to its type.
    pub fn assign(&mut self, lvalue: &str, kind: IntKind, assignable: bool, values: &[i128]) {
        let converted: BTreeSet<i128> = values.iter().map(|v| convert(*v, kind)).collect();
        let values = converted.into_iter().collect();
        match self.entries.iter_mut().find(|e| &*e.expr == lvalue) {
            Some(entry) => entry.values = values,
            None => self.entries.push(EnvEntry {
                expr: lvalue.into(),
                kind,
                assignable,
                values,
            }),
        }
    }
}

fn shuffled<T: Copy, R: Rand>(items: &[T], rand: &mut R) -> Vec<T> {
    let mut items = items.to_vec();
    for i in (1..items.len()).rev() {
        let j = rand.below_or_zero(i + 1);
        items.swap(i, j);
    }
    items
}

fn take<T, R: Rand>(items: &mut Vec<T>, rand: &mut R) -> T {
    let index = rand.below_or_zero(items.len());
    items.swap_remove(index)
}

/// Algorithm 3: a random expression over the environment with no undefined behaviour for any
/// observed value.
pub fn syn_expr<R: Rand>(env: &Env, rand: &mut R) -> SynExpr {
    if env.entries.is_empty() {
        return SynExpr::constant(IntKind::Int, rand.below_or_zero(100) as i128);
    }
    let leaves = 1 + rand.below_or_zero(env.entries.len().min(5));
    let mut pool: Vec<&EnvEntry> = env.entries.iter().collect();
    let mut worklist: Vec<SynExpr> = (0..leaves).map(|_| take(&mut pool, rand).as_expr()).collect();
    if rand.coinflip(0.3) {
        let kind = worklist[0].kind.promoted();
        let value = convert(rand.below_or_zero(64) as i128 - 16, kind);
        worklist.push(SynExpr::constant(kind, value));
    }
    let mut unary_streak = 0;
    while worklist.len() > 1 {
        if unary_streak < UNARY_STREAK && rand.coinflip(0.5) {
            unary_streak += 1;
            let index = rand.below_or_zero(worklist.len());
            if let Some(e) = shuffled(&UnaryOp::ALL, rand)
                .into_iter()
                .find_map(|op| SynExpr::unary(op, &worklist[index]))
            {
                worklist[index] = e;
            }
        } else {
            unary_streak = 0;
            let a = take(&mut worklist, rand);
            let b = take(&mut worklist, rand);
            let combined = shuffled(&BinaryOp::ALL, rand)
                .into_iter()
                .find_map(|op| SynExpr::binary(op, &a, &b));
            // Only an oversized product leaves no operator: keep one side.
            worklist.push(combined.unwrap_or(a));
        }
    }
    if rand.coinflip(0.2) {
        if let Some(e) = shuffled(&UnaryOp::ALL, rand)
            .into_iter()
            .find_map(|op| SynExpr::unary(op, &worklist[0]))
        {
            worklist[0] = e;
        }
    }
    worklist.pop().expect("the worklist is never empty")
}

const RELATIONS: [BinaryOp; 6] = [
    BinaryOp::Lt,
    BinaryOp::Le,
    BinaryOp::Gt,
    BinaryOp::Ge,
    BinaryOp::Eq,
    BinaryOp::Ne,
];

/// An atomic predicate with the expected truth value: a variable against a constant (rule 1)
/// or two variables (rule 2).
fn syn_atom<R: Rand>(env: &Env, expected: bool, rand: &mut R) -> SynExpr {
    if env.entries.len() >= 2 && rand.coinflip(0.5) {
        for _ in 0..4 {
            let u = &env.entries[rand.below_or_zero(env.entries.len())];
            let v = &env.entries[rand.below_or_zero(env.entries.len())];
            if u.expr == v.expr {
                continue;
            }
            for op in shuffled(&RELATIONS, rand) {
                if let Some(p) = SynExpr::binary(op, &u.as_expr(), &v.as_expr()) {
                    if p.is_constantly(expected) {
                        return p;
                    }
                }
            }
        }
    }
    let Some(v) = (!env.entries.is_empty()).then(|| &env.entries[rand.below_or_zero(env.entries.len())]) else {
        return SynExpr::constant(IntKind::Int, expected as i128);
    };
    let kind = v.kind.promoted();
    let (low, high) = (v.values[0], v.values[v.values.len() - 1]);
    let mut candidates = vec![
        low,
        high,
        low - 1,
        high + 1,
        low + 1,
        high - 1,
        rand.below_or_zero(256) as i128 - 128,
    ];
    candidates.retain(|c| kind.contains(*c));
    for c in shuffled(&candidates, rand) {
        for op in shuffled(&RELATIONS, rand) {
            if let Some(p) = SynExpr::binary(op, &v.as_expr(), &SynExpr::constant(kind, c)) {
                if p.is_constantly(expected) {
                    return p;
                }
            }
        }
    }
    // `v != c` for a value v never held is always true, `v == c` always false.
    let unseen = (kind.min()..)
        .find(|c| v.values.binary_search(c).is_err())
        .expect("a type has more values");
    let op = if expected { BinaryOp::Ne } else { BinaryOp::Eq };
    SynExpr::binary(op, &v.as_expr(), &SynExpr::constant(kind, unseen)).expect("a comparison is always defined")
}

/// Algorithm 2: a predicate that is `expected` for every observed value.
pub fn syn_pred<R: Rand>(env: &Env, expected: bool, depth: u32, rand: &mut R) -> SynExpr {
    let choice = if depth == 0 { 3 } else { rand.below_or_zero(4) };
    let predicate = match choice {
        0 => SynExpr::unary(UnaryOp::Not, &syn_pred(env, !expected, depth - 1, rand)),
        1 => {
            let (left, right) = if expected {
                (true, true)
            } else if rand.coinflip(0.5) {
                (true, false)
            } else {
                (false, rand.coinflip(0.5))
            };
            let l = syn_pred(env, left, depth - 1, rand);
            let r = syn_pred(env, right, depth - 1, rand);
            SynExpr::binary(BinaryOp::LogAnd, &l, &r)
        }
        2 => {
            let (left, right) = if !expected {
                (false, false)
            } else if rand.coinflip(0.5) {
                (false, true)
            } else {
                (true, rand.coinflip(0.5))
            };
            let l = syn_pred(env, left, depth - 1, rand);
            let r = syn_pred(env, right, depth - 1, rand);
            SynExpr::binary(BinaryOp::LogOr, &l, &r)
        }
        _ => Some(syn_atom(env, expected, rand)),
    };
    match predicate {
        Some(p) if p.is_constantly(expected) => p,
        // Products too large to check: an atom is always small enough.
        _ => syn_atom(env, expected, rand),
    }
}

/// Operators of the expressions in code that never runs.
const DEAD_OPERATORS: [BinaryOp; 14] = [
    BinaryOp::Add,
    BinaryOp::Sub,
    BinaryOp::Mul,
    BinaryOp::Div,
    BinaryOp::Rem,
    BinaryOp::Shl,
    BinaryOp::Shr,
    BinaryOp::BitAnd,
    BinaryOp::BitOr,
    BinaryOp::BitXor,
    BinaryOp::Lt,
    BinaryOp::Eq,
    BinaryOp::LogAnd,
    BinaryOp::LogOr,
];

/// A random expression for code that never runs. Its values need not be defined, but what a
/// compiler can see in it must be: gcc and clang diagnose, even in dead code, a constant zero
/// divisor, a constant negative or oversized shift count, a shifted negative constant and a
/// constant sub-expression that overflows, and the triage guard makes those errors. So a
/// constant divisor is not zero, a constant shift count is below the width of `int` (the
/// narrowest promoted type), a shifted constant is not negative, and a sub-expression of
/// constants is evaluated by the C-semantics core and kept only when it is defined. A side
/// that decides an operation alone (`-1 | x`, `0 * x`) makes it a constant too: gcc folds it.
fn dead_expression<R: Rand>(env: &Env, rand: &mut R) -> String {
    // A `const` variable with one value is a constant to the compiler too.
    let operand = |rand: &mut R| -> (String, Option<Value>, IntKind) {
        if env.entries.is_empty() || rand.coinflip(0.3) {
            // Half of the constants are the special ones that absorb or neutralize an operand.
            let value = if rand.coinflip(0.5) {
                rand.below_or_zero(3) as i128 - 1
            } else {
                rand.below_or_zero(200) as i128 - 100
            };
            (value.to_string(), Some(Value::new(IntKind::Int, value)), IntKind::Int)
        } else {
            let entry = &env.entries[rand.below_or_zero(env.entries.len())];
            let known = match (&entry.values[..], entry.assignable) {
                ([only], false) => Some(Value::new(entry.kind, *only)),
                _ => None,
            };
            (entry.expr.to_string(), known, entry.kind)
        }
    };
    let (mut text, mut value, mut kind) = operand(rand);
    for _ in 0..rand.below_or_zero(3) {
        let op = DEAD_OPERATORS[rand.below_or_zero(DEAD_OPERATORS.len())];
        let (mut right, mut right_value, right_kind) = operand(rand);
        match (op, right_value) {
            (BinaryOp::Div | BinaryOp::Rem, Some(v)) if v.value == 0 => {
                (right, right_value) = ("1".into(), Some(Value::new(IntKind::Int, 1)))
            }
            (BinaryOp::Shl | BinaryOp::Shr, Some(count)) if !(0..32).contains(&count.value) => {
                let count = count.value.rem_euclid(32);
                (right, right_value) = (count.to_string(), Some(Value::new(IntKind::Int, count)));
            }
            _ => {}
        }
        if let Some(negative) = value.filter(|v| v.value < 0 && matches!(op, BinaryOp::Shl | BinaryOp::Shr)) {
            text = (-negative.value).to_string();
            value = Some(Value::new(IntKind::Int, -negative.value));
        }
        let combined = match (value, right_value) {
            (Some(a), Some(b)) => match eval_binary(op, a, b) {
                Ok(result) => Some(result),
                // A constant expression with undefined behaviour: leave the operator out.
                Err(_) => continue,
            },
            (Some(a), None) => absorbed(op, a, Value::new(right_kind, 1), true),
            (None, Some(b)) => absorbed(op, Value::new(kind, 1), b, false),
            (None, None) => None,
        };
        text = format!("({text} {} {right})", op.symbol());
        kind = match combined {
            Some(v) => v.kind,
            None => eval_binary(op, Value::new(kind, 1), Value::new(right_kind, 1)).map_or(IntKind::Int, |v| v.kind),
        };
        value = combined;
    }
    text
}

/// The constant a compiler folds `a op b` to when the known side decides it whatever the other
/// side holds (`-1 | x`, `0 & x`, `0 * x`, `x % 1`, `0 << x`); gcc diagnoses what it folds, as a
/// shifted negative value for `(-1 | x) << n`. `known_left` says which side is known; the
/// other side is given as 1 of its type, which yields the folded value in the result's type.
fn absorbed(op: BinaryOp, a: Value, b: Value, known_left: bool) -> Option<Value> {
    let known = if known_left { a } else { b };
    let all_ones = known.value == -1 || known.value == known.kind.max() && !known.kind.is_signed();
    let decides = match op {
        BinaryOp::BitOr => all_ones,
        BinaryOp::BitAnd | BinaryOp::Mul | BinaryOp::LogAnd => known.value == 0,
        BinaryOp::LogOr => known.value != 0,
        BinaryOp::Rem => !known_left && known.value.abs() == 1,
        BinaryOp::Shl | BinaryOp::Shr | BinaryOp::Div => known_left && known.value == 0,
        _ => false,
    };
    decides.then(|| eval_binary(op, a, b).ok()).flatten()
}

/// Random, type-correct statements for a block that never runs (FCB): assignments, ifs and
/// loops over the environment's assignable lvalues, up to `depth` levels deep.
pub fn dead_code<R: Rand>(env: &Env, depth: u32, in_loop: bool, rand: &mut R) -> String {
    let assignable: Vec<&EnvEntry> = env.entries.iter().filter(|e| e.assignable).collect();
    let expression = |rand: &mut R| dead_expression(env, rand);
    let choice = if depth == 0 || assignable.is_empty() {
        0
    } else {
        rand.below_or_zero(4)
    };
    match choice {
        0 if !assignable.is_empty() => {
            let target = assignable[rand.below_or_zero(assignable.len())];
            format!("{} = {};", target.expr, expression(rand))
        }
        0 if in_loop => "break;".to_string(),
        0 => ";".to_string(),
        1 => format!(
            "if ({}) {{ {} }}",
            expression(rand),
            dead_code(env, depth - 1, in_loop, rand)
        ),
        2 => {
            let counter = assignable[rand.below_or_zero(assignable.len())];
            // A body that assigns the counter can make it overflow, and gcc diagnoses the
            // overflowing iteration even in dead code (-Waggressive-loop-optimizations).
            let mut body_env = env.clone();
            for entry in body_env.entries.iter_mut().filter(|e| e.expr == counter.expr) {
                entry.assignable = false;
            }
            format!(
                "for ({c} = 0; {c} < {n}; {c}++) {{ {} }}",
                dead_code(&body_env, depth - 1, true, rand),
                c = counter.expr,
                n = 1 + rand.below_or_zero(8)
            )
        }
        _ => format!(
            "{} {}",
            dead_code(env, depth - 1, in_loop, rand),
            dead_code(env, depth - 1, in_loop, rand)
        ),
    }
}

#[cfg(test)]
mod tests;
