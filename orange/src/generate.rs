//! Random Orange programs (the paper's `make_expression(n, d)` and its mode 4: many expressions,
//! 1 to 10,000 operators per program), steered by YARPGen's generation policies.

use crate::program::{Assignment, Expr, FloatKind, OrangeProgram, Ty, Var};
use ccfuzz_semantics::{BinaryOp, IntKind, UnaryOp};
use libafl_bolts::rands::Rand;
use serde::{Deserialize, Serialize};

/// Integer types of Orange's variables: every one but `_Bool` (the first).
pub const INT_KINDS: &[IntKind] = IntKind::ALL.split_at(1).1;

/// Which of YARPGen's generation policies are on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Policies {
    /// Operator contexts (additive, bitwise, logical, multiplicative, bitwise-shift,
    /// additive-multiplicative) on random sub-trees.
    pub contexts: bool,
    /// Constant leaves: all or half of an expression's leaves, small, near-boundary and
    /// contiguous-bit constants, and a buffer of reused constants.
    pub constants: bool,
    /// A buffer of sub-expressions reused later.
    pub common_subexpressions: bool,
    /// The generator's distributions themselves drawn at random for each program.
    pub shuffle: bool,
}

impl Policies {
    pub const ALL: Policies = Policies {
        contexts: true,
        constants: true,
        common_subexpressions: true,
        shuffle: true,
    };
    pub const NONE: Policies = Policies {
        contexts: false,
        constants: false,
        common_subexpressions: false,
        shuffle: false,
    };
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenOptions {
    /// Operators per program are drawn log-uniformly from `min_operators` to `max_operators`.
    pub min_operators: usize,
    pub max_operators: usize,
    pub policies: Policies,
    /// Floating-point variables and expressions (rounding-free restrictions).
    pub float: bool,
}

impl Default for GenOptions {
    fn default() -> Self {
        GenOptions {
            min_operators: 1,
            max_operators: 10_000,
            policies: Policies::ALL,
            float: false,
        }
    }
}

/// Sets of operators a sub-tree may be confined to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Additive,
    Bitwise,
    Logical,
    Multiplicative,
    BitwiseShift,
    AdditiveMultiplicative,
}

impl Context {
    pub const ALL: [Context; 6] = [
        Context::Additive,
        Context::Bitwise,
        Context::Logical,
        Context::Multiplicative,
        Context::BitwiseShift,
        Context::AdditiveMultiplicative,
    ];

    pub fn operators(self) -> &'static [BinaryOp] {
        use BinaryOp::*;
        match self {
            Context::Additive => &[Add, Sub],
            Context::Bitwise => &[BitAnd, BitOr, BitXor],
            Context::Logical => &[LogAnd, LogOr, Lt, Gt, Le, Ge, Eq, Ne],
            Context::Multiplicative => &[Mul, Div, Rem],
            Context::BitwiseShift => &[Shl, Shr, BitAnd, BitOr, BitXor],
            Context::AdditiveMultiplicative => &[Add, Sub, Mul],
        }
    }
}

/// Kinds of constant leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ConstKind {
    Small,
    NearBoundary,
    ContiguousBits,
    Reused,
}

/// The distributions of one program (drawn at random when the shuffle policy is on).
struct Params {
    op_weights: [u32; 18],
    unary_percent: u32,
    ternary_percent: u32,
    context_percent: u32,
    const_kind_weights: [u32; 4],
    cse_percent: u32,
    float_percent: u32,
}

impl Params {
    fn new<R: Rand>(policies: Policies, rand: &mut R) -> Self {
        // Shifts get a lower weight: their amount is usually a sub-expression whose value is
        // out of range, and each such shift costs an inserted operation.
        let mut op_weights = [10; 18];
        op_weights[5] = 3;
        op_weights[6] = 3;
        let mut params = Params {
            op_weights,
            unary_percent: 10,
            ternary_percent: 5,
            context_percent: 20,
            const_kind_weights: [10; 4],
            cse_percent: 10,
            float_percent: 30,
        };
        if policies.shuffle {
            for (i, w) in params.op_weights.iter_mut().enumerate() {
                let most = if i == 5 || i == 6 { 7 } else { 21 };
                *w = rand.below_or_zero(most) as u32;
            }
            if params.op_weights.iter().all(|&w| w == 0) {
                params.op_weights[0] = 1;
            }
            params.unary_percent = rand.below_or_zero(25) as u32;
            params.ternary_percent = rand.below_or_zero(15) as u32;
            params.context_percent = rand.below_or_zero(50) as u32;
            for w in &mut params.const_kind_weights {
                *w = 1 + rand.below_or_zero(20) as u32;
            }
            params.cse_percent = rand.below_or_zero(30) as u32;
        }
        params
    }
}

fn weighted<R: Rand, T: Copy>(items: &[T], weight: impl Fn(T) -> u32, rand: &mut R) -> T {
    let total: u32 = items.iter().map(|&i| weight(i)).sum();
    if total == 0 {
        return items[rand.below_or_zero(items.len())];
    }
    let mut pick = rand.below_or_zero(total as usize) as u32;
    for &item in items {
        let w = weight(item);
        if pick < w {
            return item;
        }
        pick -= w;
    }
    items[items.len() - 1]
}

/// How an expression's leaves are chosen.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Leaves {
    Variables,
    HalfConstants,
    AllConstants,
}

struct Generator<'r, R> {
    rand: &'r mut R,
    options: GenOptions,
    params: Params,
    /// Variables an expression may read (x-variables and t-variables).
    readable: Vec<usize>,
    float_readable: Vec<usize>,
    vars: Vec<Var>,
    constants: Vec<(IntKind, i128)>,
    /// Reusable sub-expressions and their sizes.
    subexpressions: Vec<(usize, Expr)>,
}

impl<R: Rand> Generator<'_, R> {
    fn random_value(&mut self, ty: Ty) -> i128 {
        match ty {
            Ty::Int(k) => {
                let span = (k.max() - k.min()) as u128;
                let offset = ((self.rand.next() as u128) << 64 | self.rand.next() as u128) % (span + 1);
                // Most values are small, as in real code: fewer operations overflow, and
                // shift amounts are more often in range, so fewer operations are inserted.
                match self.rand.below_or_zero(10) {
                    0..=3 => (self.rand.below_or_zero(32) as i128).clamp(k.min(), k.max()),
                    4..=6 => (self.rand.below_or_zero(2001) as i128 - 1000).clamp(k.min(), k.max()),
                    _ => k.min() + offset as i128,
                }
            }
            Ty::Float(f) => {
                let limit = f.limit() as u64;
                let magnitude = if self.rand.coinflip(0.5) {
                    self.rand.below_or_zero(1000) as i128
                } else {
                    (self.rand.next() % (limit / 1024)) as i128
                };
                if self.rand.coinflip(0.5) {
                    magnitude
                } else {
                    -magnitude
                }
            }
        }
    }

    fn new_var(&mut self, prefix: &str, ty: Ty, assigned: bool) -> usize {
        let name = format!("{prefix}{}", self.vars.len());
        let init = self.random_value(ty);
        let var = Var {
            name,
            ty,
            init,
            global: self.rand.coinflip(0.5),
            // t-variables are assigned, so never const.
            is_const: !assigned && self.rand.coinflip(0.25),
            is_volatile: self.rand.coinflip(0.2),
            is_static: self.rand.coinflip(0.3),
        };
        self.vars.push(var);
        self.vars.len() - 1
    }

    fn random_type(&mut self) -> Ty {
        if self.options.float && self.rand.below_or_zero(100) < self.params.float_percent as usize {
            Ty::Float(FloatKind::ALL[self.rand.below_or_zero(3)])
        } else {
            Ty::Int(INT_KINDS[self.rand.below_or_zero(INT_KINDS.len())])
        }
    }

    fn constant(&mut self) -> Expr {
        let kinds = [
            ConstKind::Small,
            ConstKind::NearBoundary,
            ConstKind::ContiguousBits,
            ConstKind::Reused,
        ];
        let weights = self.params.const_kind_weights;
        let kind = weighted(&kinds, |k| weights[k as usize], self.rand);
        let ty = INT_KINDS[self.rand.below_or_zero(INT_KINDS.len())];
        let (ty, value) = match kind {
            ConstKind::Reused if !self.constants.is_empty() => {
                let (ty, v) = self.constants[self.rand.below_or_zero(self.constants.len())];
                // Reused as is, negated or complemented.
                let v = match self.rand.below_or_zero(3) {
                    0 => v,
                    1 => -v,
                    _ => !v,
                };
                (ty, ccfuzz_semantics::convert(v, ty))
            }
            ConstKind::NearBoundary => {
                let k = self.rand.below_or_zero(4) as i128;
                let v = if self.rand.coinflip(0.5) {
                    ty.max() - k
                } else {
                    ty.min() + k
                };
                (ty, v)
            }
            ConstKind::ContiguousBits => {
                let bits = ty.bits();
                let low = self.rand.below_or_zero(bits as usize) as u32;
                let high = low + self.rand.below_or_zero((bits - low) as usize) as u32;
                let mask = ((1i128 << (high - low + 1)) - 1) << low;
                (ty, ccfuzz_semantics::convert(mask, ty))
            }
            ConstKind::Small | ConstKind::Reused => (ty, self.rand.below_or_zero(17) as i128),
        };
        self.constants.push((ty, value));
        Expr::Const(ty, value)
    }

    fn leaf(&mut self, leaves: Leaves, float: bool) -> Expr {
        let constant = match leaves {
            Leaves::AllConstants => true,
            Leaves::HalfConstants => self.rand.coinflip(0.5),
            Leaves::Variables => false,
        };
        if float && !self.float_readable.is_empty() && !constant {
            return Expr::Var(self.float_readable[self.rand.below_or_zero(self.float_readable.len())]);
        }
        if constant || self.readable.is_empty() {
            return self.constant();
        }
        Expr::Var(self.readable[self.rand.below_or_zero(self.readable.len())])
    }

    /// An expression of at most `n` operators and depth `d` (the paper's Fig. 6).
    fn expression(&mut self, n: usize, d: usize, context: Option<Context>, leaves: Leaves, float: bool) -> Expr {
        if n == 0 || d == 0 {
            return self.leaf(leaves, float);
        }
        if self.options.policies.common_subexpressions
            && n >= 2
            && self.rand.below_or_zero(100) < self.params.cse_percent as usize
        {
            let fitting: Vec<usize> = (0..self.subexpressions.len())
                .filter(|&i| self.subexpressions[i].0 <= n)
                .collect();
            if let Some(&i) = self.rand.choose(&fitting) {
                return self.subexpressions[i].1.clone();
            }
        }
        let context =
            if self.options.policies.contexts && self.rand.below_or_zero(100) < self.params.context_percent as usize {
                Some(Context::ALL[self.rand.below_or_zero(Context::ALL.len())])
            } else {
                context
            };
        let roll = self.rand.below_or_zero(100) as u32;
        let expr = if roll < self.params.unary_percent && context.is_none() {
            let op = UnaryOp::ALL[self.rand.below_or_zero(3)];
            Expr::Unary(op, Box::new(self.expression(n - 1, d - 1, context, leaves, float)))
        } else if roll < self.params.unary_percent + self.params.ternary_percent && context.is_none() && n >= 2 {
            let rest = n - 1;
            let c = self.rand.below_or_zero(rest / 2 + 1);
            let a = self.rand.below_or_zero(rest - c + 1);
            let b = rest - c - a;
            Expr::Ternary(
                Box::new(self.expression(c, d - 1, context, leaves, false)),
                Box::new(self.expression(a, d - 1, context, leaves, float)),
                Box::new(self.expression(b, d - 1, context, leaves, float)),
            )
        } else {
            let ops: &[BinaryOp] = match context {
                Some(c) => c.operators(),
                None => &BinaryOp::ALL,
            };
            let weights = self.params.op_weights;
            let op = weighted(
                ops,
                |o| weights[BinaryOp::ALL.iter().position(|&x| x == o).unwrap()],
                self.rand,
            );
            let left = self.rand.below_or_zero(n);
            let right = n - 1 - left;
            Expr::Binary(
                op,
                Box::new(self.expression(left, d - 1, context, leaves, float)),
                Box::new(self.expression(right, d - 1, context, leaves, float)),
            )
        };
        // Small sub-expressions are the ones worth sharing; a bounded buffer keeps it cheap.
        if self.options.policies.common_subexpressions && (2..=32).contains(&n) && self.subexpressions.len() < 64 {
            self.subexpressions.push((expr.size(), expr.clone()));
        }
        expr
    }

    fn leaves(&mut self) -> Leaves {
        if !self.options.policies.constants {
            return Leaves::Variables;
        }
        match self.rand.below_or_zero(4) {
            0 => Leaves::AllConstants,
            1 => Leaves::HalfConstants,
            _ => Leaves::Variables,
        }
    }
}

/// Parenthesis nesting stays well under compilers' limits (clang's default is 256).
const MAX_DEPTH: usize = 48;

/// A new program, its expected values computed and its undefined behaviour removed.
pub fn generate<R: Rand>(options: GenOptions, rand: &mut R) -> OrangeProgram {
    // Mode 4: operators per program log-uniform in 1..=max, split over expressions whose
    // count is itself log-uniform, so that count × size stays within the target.
    let min = options.min_operators.max(1) as f64;
    let max = (options.max_operators as f64).max(min);
    let total = (min * (max / min).powf(rand.next_float())).round().max(1.0) as usize;
    let expressions = (total as f64).powf(rand.next_float()).round().max(1.0) as usize;
    let per_expression = (total / expressions).max(1);
    let params = Params::new(options.policies, rand);
    let mut generator = Generator {
        rand,
        options,
        params,
        readable: Vec::new(),
        float_readable: Vec::new(),
        vars: Vec::new(),
        constants: Vec::new(),
        subexpressions: Vec::new(),
    };
    let x_count = 2 + generator.rand.below_or_zero(8 + expressions.min(40));
    for _ in 0..x_count {
        let ty = generator.random_type();
        let index = generator.new_var("x", ty, false);
        match ty {
            Ty::Float(_) => generator.float_readable.push(index),
            Ty::Int(_) => generator.readable.push(index),
        }
    }
    let mut assignments = Vec::new();
    for _ in 0..expressions {
        let leaves = generator.leaves();
        let float = options.float && !generator.float_readable.is_empty() && generator.rand.coinflip(0.3);
        let expr = generator.expression(per_expression, MAX_DEPTH, None, leaves, float);
        // The t-variable's type: the expression's in floating mode (set by settling), any
        // integer type otherwise.
        let ty = if float {
            Ty::Float(FloatKind::LongDouble)
        } else {
            Ty::Int(INT_KINDS[generator.rand.below_or_zero(INT_KINDS.len())])
        };
        let target = generator.new_var("t", ty, true);
        assignments.push(Assignment {
            target,
            expr,
            expected: 0,
        });
        // Later expressions may read earlier t-variables.
        if generator.rand.coinflip(0.3) {
            match ty {
                Ty::Float(_) => generator.float_readable.push(target),
                Ty::Int(_) => generator.readable.push(target),
            }
        }
    }
    let vars = generator.vars;
    let mut program = OrangeProgram {
        vars,
        assignments,
        inserted: 0,
        flipped: 0,
    };
    program.settle(generator.rand);
    program
}

#[cfg(test)]
mod tests;
