//! Settling an Orange program: every expression is evaluated bottom-up with the C-semantics
//! core, and undefined behaviour (and, in floating-point mode, rounding) is removed where it
//! appears, by operation flipping and operation insertion (the paper's Table 1), so that the
//! expected values it records are exact.

use crate::program::{Expr, OrangeProgram, Ty, Val, Var};
use ccfuzz_semantics::{convert, eval_binary, eval_unary, BinaryOp, IntKind, Ub, UnaryOp};
use libafl_bolts::rands::{Rand, StdRand};

fn is_comparison(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Lt | BinaryOp::Gt | BinaryOp::Le | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne
    )
}

fn complement(op: BinaryOp) -> BinaryOp {
    match op {
        BinaryOp::Lt => BinaryOp::Ge,
        BinaryOp::Ge => BinaryOp::Lt,
        BinaryOp::Gt => BinaryOp::Le,
        BinaryOp::Le => BinaryOp::Gt,
        BinaryOp::Eq => BinaryOp::Ne,
        BinaryOp::Ne => BinaryOp::Eq,
        other => other,
    }
}

/// Operators that only take integers.
fn integer_only(op: BinaryOp) -> bool {
    matches!(
        op,
        BinaryOp::Rem | BinaryOp::Shl | BinaryOp::Shr | BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor
    )
}

impl OrangeProgram {
    /// Evaluates every expression in order, removing undefined behaviour and rounding where it
    /// appears, and records each t-variable's expected value.
    pub fn settle<R: Rand>(&mut self, rand: &mut R) {
        self.settle_traced(rand, false);
    }

    /// The value and type of every node of every expression (per assignment, in pre-order),
    /// as settling computes them. Meant for settled programs, which settling leaves unchanged.
    pub fn node_values(&self) -> Vec<Vec<Val>> {
        self.clone().settle_traced(&mut StdRand::with_seed(0), true)
    }

    fn settle_traced<R: Rand>(&mut self, rand: &mut R, traced: bool) -> Vec<Vec<Val>> {
        let mut values: Vec<i128> = self.vars.iter().map(|v| v.init).collect();
        let mut assignments = std::mem::take(&mut self.assignments);
        let mut traces = Vec::new();
        for assignment in &mut assignments {
            let mut settler = Settler {
                program: self,
                values: &values,
                rand,
                trace: traced.then(Vec::new),
            };
            let mut value = settler.settle(&mut assignment.expr);
            let target_ty = settler.program.vars[assignment.target].ty;
            // A floating value (a shared sub-expression, a changed type) converts to an integer
            // t-variable only within the variable's range: beyond it the conversion is undefined.
            if let (Ty::Int(k), Ty::Float(_)) = (target_ty, value.ty) {
                value = settler.fit_integer(&mut assignment.expr, value, k);
            }
            traces.extend(settler.trace);
            // Integer values convert as gcc and clang define it; floating t-variables hold
            // integer values their mantissa represents, so assigning them does not round.
            let expected = match target_ty {
                Ty::Int(k) => convert(value.v, k),
                Ty::Float(_) => value.v,
            };
            assignment.expected = expected;
            values[assignment.target] = expected;
        }
        self.assignments = assignments;
        traces
    }

    /// Adds a variable for an inserted operand.
    fn add_offset_var(&mut self, ty: Ty, value: i128) -> usize {
        let name = format!("k{}", self.vars.len());
        self.vars.push(Var {
            name,
            ty,
            init: value,
            global: false,
            is_const: false,
            is_volatile: false,
            is_static: false,
        });
        self.vars.len() - 1
    }
}

struct Settler<'p, 'r, R> {
    program: &'p mut OrangeProgram,
    values: &'p [i128],
    rand: &'r mut R,
    /// Each node's value in pre-order, when asked for.
    trace: Option<Vec<Val>>,
}

impl<R: Rand> Settler<'_, '_, R> {
    fn var_value(&self, index: usize) -> Val {
        let var = &self.program.vars[index];
        // Variables added while settling are not in `values` yet.
        let v = self.values.get(index).copied().unwrap_or(var.init);
        Val { ty: var.ty, v }
    }

    fn settle(&mut self, e: &mut Expr) -> Val {
        // The slot is taken before the children's, so that the trace is in pre-order.
        let slot = self.trace.as_mut().map(|trace| {
            trace.push(Val {
                ty: Ty::Int(IntKind::Int),
                v: 0,
            });
            trace.len() - 1
        });
        let value = self.settle_node(e);
        if let (Some(trace), Some(slot)) = (self.trace.as_mut(), slot) {
            trace[slot] = value;
        }
        value
    }

    fn settle_node(&mut self, e: &mut Expr) -> Val {
        match e {
            Expr::Var(i) => self.var_value(*i),
            Expr::Const(k, v) => Val { ty: Ty::Int(*k), v: *v },
            Expr::Cast(k, a) => {
                let inner = self.settle(a);
                let kind = *k;
                let inner = self.fit_integer(a, inner, kind);
                Val {
                    ty: Ty::Int(kind),
                    v: convert(inner.v, kind),
                }
            }
            Expr::Unary(op, a) => {
                let op = *op;
                let mut x = self.settle(a);
                if let Ty::Float(_) = x.ty {
                    match op {
                        UnaryOp::Neg => return Val { ty: x.ty, v: -x.v },
                        UnaryOp::Not => {
                            return Val {
                                ty: Ty::Int(IntKind::Int),
                                v: (x.v == 0) as i128,
                            }
                        }
                        UnaryOp::BitNot => x = self.cast_to_long_long(a, x),
                    }
                }
                loop {
                    match eval_unary(op, x.int().expect("integer operand")) {
                        Ok(r) => {
                            return Val {
                                ty: Ty::Int(r.kind),
                                v: r.value,
                            }
                        }
                        Err(_) => {
                            // -INT_MIN: move the operand to a small value.
                            let target = self.small_value(true);
                            x = self.insert_offset(a, x, target);
                        }
                    }
                }
            }
            Expr::Ternary(c, a, b) => {
                let cond = self.settle(c);
                let x = self.settle(a);
                let y = self.settle(b);
                let ty = Ty::common(x.ty, y.ty);
                let x = self.fit(a, x, ty);
                let y = self.fit(b, y, ty);
                let chosen = if cond.v != 0 { x } else { y };
                Val {
                    ty,
                    v: match ty {
                        Ty::Int(k) => convert(chosen.v, k),
                        Ty::Float(_) => chosen.v,
                    },
                }
            }
            Expr::Binary(..) => self.settle_binary(e),
        }
    }

    fn settle_binary(&mut self, e: &mut Expr) -> Val {
        let Expr::Binary(op, a, b) = e else {
            unreachable!("a binary node")
        };
        let mut x = self.settle(a);
        let mut y = self.settle(b);
        let any_float = matches!(x.ty, Ty::Float(_)) || matches!(y.ty, Ty::Float(_));
        if any_float && integer_only(*op) {
            // The paper's rule: a floating operand of an integer operator gets a cast.
            for (operand, value) in [(&mut **a, &mut x), (&mut **b, &mut y)] {
                if matches!(value.ty, Ty::Float(_)) {
                    *value = self.cast_to_long_long(operand, *value);
                }
            }
        } else if any_float {
            return self.settle_float(e, x, y);
        }
        loop {
            let Expr::Binary(op, a, b) = e else {
                unreachable!("a binary node")
            };
            let result = eval_binary(*op, x.int().expect("integer"), y.int().expect("integer"));
            let ub = match result {
                Ok(r) => {
                    return Val {
                        ty: Ty::Int(r.kind),
                        v: r.value,
                    }
                }
                Err(ub) => ub,
            };
            match (ub, *op) {
                (Ub::SignedOverflow, BinaryOp::Add) => self.flip(op, BinaryOp::Sub),
                (Ub::SignedOverflow, BinaryOp::Sub) => self.flip(op, BinaryOp::Add),
                (Ub::SignedOverflow, BinaryOp::Mul) => self.flip(op, BinaryOp::Div),
                (Ub::DivisionByZero, _) if matches!(&**b, Expr::Binary(c, ..) if is_comparison(*c)) => {
                    let Expr::Binary(c, ..) = &mut **b else {
                        unreachable!("checked")
                    };
                    let flipped = complement(*c);
                    self.flip(c, flipped);
                    y = Val { ty: y.ty, v: 1 - y.v };
                }
                // Division by zero, and INT_MIN / -1 or % -1: a divisor of another value.
                (Ub::DivisionByZero | Ub::SignedOverflow, _) => {
                    let target = self.small_value(false);
                    y = self.insert_offset(b, y, target);
                }
                (Ub::NegativeShift | Ub::ShiftTooFar, _) => {
                    let width = match x.ty {
                        Ty::Int(k) => k.promoted().bits() as usize,
                        Ty::Float(_) => unreachable!("integer operands"),
                    };
                    let target = self.rand.below_or_zero(width) as i128;
                    y = self.insert_offset(b, y, target);
                }
                (Ub::ShiftOfNegative, _) => {
                    let target = self.rand.below_or_zero(64) as i128;
                    x = self.insert_offset(a, x, target);
                }
                // A shift into or past the sign bit: shift by nothing.
                (Ub::ShiftOverflow, _) => y = self.insert_offset(b, y, 0),
            }
        }
    }

    /// Floating arithmetic on integer values: results stay within the exact range by flipping,
    /// divisions stay exact by insertion.
    fn settle_float(&mut self, e: &mut Expr, x: Val, y: Val) -> Val {
        let Expr::Binary(op, a, b) = e else {
            unreachable!("a binary node")
        };
        if is_comparison(*op) {
            // Compared in the common type: an integer beyond its exact range would round.
            let ty = Ty::common(x.ty, y.ty);
            let (x, y) = (self.fit(a, x, ty), self.fit(b, y, ty));
            return Val {
                ty: Ty::Int(IntKind::Int),
                v: compare(*op, x.v, y.v) as i128,
            };
        }
        if *op == BinaryOp::LogAnd || *op == BinaryOp::LogOr {
            let truth = if *op == BinaryOp::LogAnd {
                x.v != 0 && y.v != 0
            } else {
                x.v != 0 || y.v != 0
            };
            return Val {
                ty: Ty::Int(IntKind::Int),
                v: truth as i128,
            };
        }
        let ty = Ty::common(x.ty, y.ty);
        let Ty::Float(f) = ty else {
            unreachable!("a floating operand")
        };
        let mut x = self.fit(a, x, ty);
        let mut y = self.fit(b, y, ty);
        let limit = f.limit();
        loop {
            let result = match *op {
                BinaryOp::Add => Some(x.v + y.v),
                BinaryOp::Sub => Some(x.v - y.v),
                BinaryOp::Mul => x.v.checked_mul(y.v),
                _ => {
                    if y.v == 0 {
                        let target = self.small_value(false);
                        y = self.insert_offset(b, y, target);
                        continue;
                    }
                    if x.v % y.v != 0 {
                        // (x − k) / y with k = x % y.
                        let target = x.v - x.v % y.v;
                        x = self.insert_offset(a, x, target);
                        continue;
                    }
                    Some(x.v / y.v)
                }
            };
            match result {
                Some(r) if r.abs() <= limit => return Val { ty, v: r },
                _ => match *op {
                    BinaryOp::Add => self.flip(op, BinaryOp::Sub),
                    BinaryOp::Sub => self.flip(op, BinaryOp::Add),
                    _ => self.flip(op, BinaryOp::Div),
                },
            }
        }
    }

    /// `(long long)e` for a floating operand of an integer-only operator (its value moved into
    /// range first).
    fn cast_to_long_long(&mut self, e: &mut Expr, value: Val) -> Val {
        let value = self.fit_integer(e, value, IntKind::LongLong);
        wrap_cast(e, IntKind::LongLong);
        self.program.inserted += 1;
        Val {
            ty: Ty::Int(IntKind::LongLong),
            v: value.v,
        }
    }

    fn flip(&mut self, op: &mut BinaryOp, to: BinaryOp) {
        *op = to;
        self.program.flipped += 1;
    }

    /// A small value for an inserted operand: nonzero unless `zero_ok`.
    fn small_value(&mut self, zero_ok: bool) -> i128 {
        let magnitude = self.rand.below_or_zero(16) as i128 + i128::from(!zero_ok);
        if self.rand.coinflip(0.5) {
            magnitude
        } else {
            -magnitude
        }
    }

    /// Converts an operand to `ty`, inserting an offset first when its value would not survive
    /// the conversion exactly (an integer beyond a floating type's exact range).
    fn fit(&mut self, e: &mut Expr, value: Val, ty: Ty) -> Val {
        match (value.ty, ty) {
            (_, Ty::Float(f)) if value.v.abs() > f.limit() => {
                // Non-negative: an unsigned operand would wrap a negative target.
                let target = self.small_value(true).abs();
                let moved = self.insert_offset(e, value, target);
                Val { ty, v: moved.v }
            }
            (_, Ty::Float(_)) => Val { ty, v: value.v },
            (_, Ty::Int(k)) => Val {
                ty,
                v: convert(value.v, k),
            },
        }
    }

    /// A floating value cast to an integer type must be in the type's range (else the cast is
    /// undefined).
    fn fit_integer(&mut self, e: &mut Expr, value: Val, kind: IntKind) -> Val {
        match value.ty {
            Ty::Float(_) if !kind.contains(value.v) => {
                let target = self.small_value(true).abs();
                self.insert_offset(e, value, target)
            }
            _ => value,
        }
    }

    /// Rewrites `e` into `(e + k)` with a new variable `k`, so that it evaluates to `target`
    /// (in the type `e + k` has). A `k` that the type cannot hold is split into two steps.
    fn insert_offset(&mut self, e: &mut Expr, current: Val, target: i128) -> Val {
        let ty = match current.ty {
            Ty::Int(k) => Ty::Int(k.promoted()),
            float => float,
        };
        let mut now = match ty {
            Ty::Int(k) => convert(current.v, k),
            Ty::Float(_) => current.v,
        };
        loop {
            let (offset, reached) = match ty {
                Ty::Int(k) if !k.is_signed() => (convert(target - now, k), target),
                Ty::Int(k) => {
                    let offset = target - now;
                    if k.contains(offset) {
                        (offset, target)
                    } else {
                        (-now / 2, now - now / 2)
                    }
                }
                Ty::Float(f) => {
                    let offset = target - now;
                    if offset.abs() <= f.limit() {
                        (offset, target)
                    } else {
                        (-now / 2, now - now / 2)
                    }
                }
            };
            let k = self.program.add_offset_var(ty, offset);
            let inner = std::mem::replace(e, Expr::Var(k));
            *e = Expr::Binary(BinaryOp::Add, Box::new(inner), Box::new(Expr::Var(k)));
            self.program.inserted += 1;
            now = match ty {
                Ty::Int(k) => convert(reached, k),
                Ty::Float(_) => reached,
            };
            if now == target || matches!(ty, Ty::Int(k) if convert(target, k) == now) {
                return Val { ty, v: now };
            }
        }
    }
}

fn compare(op: BinaryOp, x: i128, y: i128) -> bool {
    match op {
        BinaryOp::Lt => x < y,
        BinaryOp::Gt => x > y,
        BinaryOp::Le => x <= y,
        BinaryOp::Ge => x >= y,
        BinaryOp::Eq => x == y,
        _ => x != y,
    }
}

fn wrap_cast(e: &mut Expr, kind: IntKind) {
    let inner = std::mem::replace(e, Expr::Const(IntKind::Int, 0));
    *e = Expr::Cast(kind, Box::new(inner));
}

#[cfg(test)]
pub(crate) mod tests;
