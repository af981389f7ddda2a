//! Values with their C type and the integer operators: the value of each operation or the
//! undefined behaviour it has.

use crate::int_types::{convert, usual_arithmetic, IntKind};
use serde::{Deserialize, Serialize};
use std::fmt;

/// A value together with its C type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Value {
    pub kind: IntKind,
    pub value: i128,
}

impl Value {
    /// A value of `kind`; `value` is converted into range the way a cast would.
    pub fn new(kind: IntKind, value: i128) -> Self {
        Value {
            kind,
            value: convert(value, kind),
        }
    }

    pub fn is_true(self) -> bool {
        self.value != 0
    }

    fn int(truth: bool) -> Self {
        Value {
            kind: IntKind::Int,
            value: truth as i128,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.kind.literal(self.value))
    }
}

/// Undefined behaviour of an integer operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ub {
    /// A signed result outside its type (`+ - *`, unary `-`, `INT_MIN / -1`, `INT_MIN % -1`).
    SignedOverflow,
    DivisionByZero,
    NegativeShift,
    /// A shift by the width of the promoted left operand or more.
    ShiftTooFar,
    /// `<<` of a negative signed value.
    ShiftOfNegative,
    /// `<<` of a signed value whose result is not representable (into or past the sign bit).
    ShiftOverflow,
}

impl fmt::Display for Ub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ub::SignedOverflow => "signed overflow",
            Ub::DivisionByZero => "division by zero",
            Ub::NegativeShift => "shift by a negative amount",
            Ub::ShiftTooFar => "shift by the width of the type or more",
            Ub::ShiftOfNegative => "left shift of a negative value",
            Ub::ShiftOverflow => "left shift past the sign bit",
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Shl,
    Shr,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    LogAnd,
    LogOr,
}

impl BinaryOp {
    pub const ALL: [BinaryOp; 18] = [
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
        BinaryOp::Gt,
        BinaryOp::Le,
        BinaryOp::Ge,
        BinaryOp::Eq,
        BinaryOp::Ne,
        BinaryOp::LogAnd,
        BinaryOp::LogOr,
    ];

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Sub => "-",
            BinaryOp::Mul => "*",
            BinaryOp::Div => "/",
            BinaryOp::Rem => "%",
            BinaryOp::Shl => "<<",
            BinaryOp::Shr => ">>",
            BinaryOp::BitAnd => "&",
            BinaryOp::BitOr => "|",
            BinaryOp::BitXor => "^",
            BinaryOp::Lt => "<",
            BinaryOp::Gt => ">",
            BinaryOp::Le => "<=",
            BinaryOp::Ge => ">=",
            BinaryOp::Eq => "==",
            BinaryOp::Ne => "!=",
            BinaryOp::LogAnd => "&&",
            BinaryOp::LogOr => "||",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum UnaryOp {
    /// `-`
    Neg,
    /// `~`
    BitNot,
    /// `!`
    Not,
}

impl UnaryOp {
    pub const ALL: [UnaryOp; 3] = [UnaryOp::Neg, UnaryOp::BitNot, UnaryOp::Not];

    pub fn symbol(self) -> &'static str {
        match self {
            UnaryOp::Neg => "-",
            UnaryOp::BitNot => "~",
            UnaryOp::Not => "!",
        }
    }
}

/// The value of `op x`, or its undefined behaviour.
pub fn eval_unary(op: UnaryOp, x: Value) -> Result<Value, Ub> {
    let kind = x.kind.promoted();
    match op {
        UnaryOp::Not => Ok(Value::int(x.value == 0)),
        UnaryOp::BitNot => Ok(Value::new(kind, !x.value)),
        UnaryOp::Neg => {
            let negated = -x.value;
            if kind.is_signed() && !kind.contains(negated) {
                Err(Ub::SignedOverflow)
            } else {
                Ok(Value::new(kind, negated))
            }
        }
    }
}

/// The value of `a op b`, or its undefined behaviour. `&&` and `||` are evaluated on both
/// values; short-circuiting is the caller's business.
pub fn eval_binary(op: BinaryOp, a: Value, b: Value) -> Result<Value, Ub> {
    match op {
        BinaryOp::LogAnd => return Ok(Value::int(a.is_true() && b.is_true())),
        BinaryOp::LogOr => return Ok(Value::int(a.is_true() || b.is_true())),
        BinaryOp::Shl | BinaryOp::Shr => return shift(op, a, b),
        _ => {}
    }
    let kind = usual_arithmetic(a.kind, b.kind);
    let (x, y) = (convert(a.value, kind), convert(b.value, kind));
    let exact = match op {
        BinaryOp::Lt => return Ok(Value::int(x < y)),
        BinaryOp::Gt => return Ok(Value::int(x > y)),
        BinaryOp::Le => return Ok(Value::int(x <= y)),
        BinaryOp::Ge => return Ok(Value::int(x >= y)),
        BinaryOp::Eq => return Ok(Value::int(x == y)),
        BinaryOp::Ne => return Ok(Value::int(x != y)),
        BinaryOp::BitAnd => x & y,
        BinaryOp::BitOr => x | y,
        BinaryOp::BitXor => x ^ y,
        BinaryOp::Add => x + y,
        BinaryOp::Sub => x - y,
        // Operands are below 2^64 in magnitude: the product needs up to 128 bits, so an
        // unsigned product is taken modulo 2^128 first, which keeps it exact modulo 2^64.
        BinaryOp::Mul => {
            if kind.is_signed() {
                x * y
            } else {
                (x as u128).wrapping_mul(y as u128) as i128
            }
        }
        BinaryOp::Div | BinaryOp::Rem => {
            if y == 0 {
                return Err(Ub::DivisionByZero);
            }
            if kind.is_signed() && x == kind.min() && y == -1 {
                return Err(Ub::SignedOverflow);
            }
            // Rust's `/` and `%` truncate toward zero, as C does.
            if op == BinaryOp::Div {
                x / y
            } else {
                x % y
            }
        }
        BinaryOp::LogAnd | BinaryOp::LogOr | BinaryOp::Shl | BinaryOp::Shr => unreachable!("handled above"),
    };
    if kind.is_signed() && !kind.contains(exact) {
        return Err(Ub::SignedOverflow);
    }
    Ok(Value::new(kind, exact))
}

fn shift(op: BinaryOp, a: Value, b: Value) -> Result<Value, Ub> {
    let kind = a.kind.promoted();
    let amount = b.value;
    if amount < 0 {
        return Err(Ub::NegativeShift);
    }
    if amount >= kind.bits() as i128 {
        return Err(Ub::ShiftTooFar);
    }
    let x = a.value;
    if op == BinaryOp::Shr {
        // A negative value shifts arithmetically (implementation-defined; gcc and clang).
        return Ok(Value::new(kind, x >> amount));
    }
    if kind.is_signed() {
        if x < 0 {
            return Err(Ub::ShiftOfNegative);
        }
        let shifted = x << amount;
        if shifted > kind.max() {
            return Err(Ub::ShiftOverflow);
        }
        Ok(Value::new(kind, shifted))
    } else {
        Ok(Value::new(kind, ((x as u128) << amount) as i128))
    }
}
