//! The C-semantics core: the integer types of x86-64 Linux (LP64, plain `char` signed as in gcc
//! and clang), integer promotions, the usual arithmetic conversions, conversion on assignment,
//! and the value or the undefined behaviour of every integer operator.
//!
//! Hermes's speculative execution and the Orange generator's expected values rely on it: a
//! mistake here becomes a false bug report, so it is tested exhaustively against gcc with UBSan.
//! Values are carried as `i128`, wide enough for every operand and intermediate result.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An integer type of C on x86-64.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum IntKind {
    Bool,
    Char,
    SChar,
    UChar,
    Short,
    UShort,
    Int,
    UInt,
    Long,
    ULong,
    LongLong,
    ULongLong,
}

impl IntKind {
    pub const ALL: [IntKind; 12] = [
        IntKind::Bool,
        IntKind::Char,
        IntKind::SChar,
        IntKind::UChar,
        IntKind::Short,
        IntKind::UShort,
        IntKind::Int,
        IntKind::UInt,
        IntKind::Long,
        IntKind::ULong,
        IntKind::LongLong,
        IntKind::ULongLong,
    ];

    /// Width in bits (`_Bool` occupies 8 but holds 0 or 1).
    pub fn bits(self) -> u32 {
        match self {
            IntKind::Bool | IntKind::Char | IntKind::SChar | IntKind::UChar => 8,
            IntKind::Short | IntKind::UShort => 16,
            IntKind::Int | IntKind::UInt => 32,
            IntKind::Long | IntKind::ULong | IntKind::LongLong | IntKind::ULongLong => 64,
        }
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            IntKind::Char | IntKind::SChar | IntKind::Short | IntKind::Int | IntKind::Long | IntKind::LongLong
        )
    }

    pub fn min(self) -> i128 {
        if self.is_signed() {
            -(1i128 << (self.bits() - 1))
        } else {
            0
        }
    }

    pub fn max(self) -> i128 {
        match self {
            IntKind::Bool => 1,
            _ if self.is_signed() => (1i128 << (self.bits() - 1)) - 1,
            _ => (1i128 << self.bits()) - 1,
        }
    }

    pub fn contains(self, value: i128) -> bool {
        (self.min()..=self.max()).contains(&value)
    }

    /// Integer conversion rank (C11 6.3.1.1).
    pub fn rank(self) -> u8 {
        match self {
            IntKind::Bool => 0,
            IntKind::Char | IntKind::SChar | IntKind::UChar => 1,
            IntKind::Short | IntKind::UShort => 2,
            IntKind::Int | IntKind::UInt => 3,
            IntKind::Long | IntKind::ULong => 4,
            IntKind::LongLong | IntKind::ULongLong => 5,
        }
    }

    /// The type after the integer promotions: everything narrower than `int` becomes `int`
    /// (every such type's values fit in `int` on this target).
    pub fn promoted(self) -> IntKind {
        if self.rank() < IntKind::Int.rank() {
            IntKind::Int
        } else {
            self
        }
    }

    /// The unsigned type of the same rank.
    pub fn to_unsigned(self) -> IntKind {
        match self {
            IntKind::Char | IntKind::SChar => IntKind::UChar,
            IntKind::Short => IntKind::UShort,
            IntKind::Int => IntKind::UInt,
            IntKind::Long => IntKind::ULong,
            IntKind::LongLong => IntKind::ULongLong,
            unsigned => unsigned,
        }
    }

    /// The C spelling of the type.
    pub fn spelling(self) -> &'static str {
        match self {
            IntKind::Bool => "_Bool",
            IntKind::Char => "char",
            IntKind::SChar => "signed char",
            IntKind::UChar => "unsigned char",
            IntKind::Short => "short",
            IntKind::UShort => "unsigned short",
            IntKind::Int => "int",
            IntKind::UInt => "unsigned int",
            IntKind::Long => "long",
            IntKind::ULong => "unsigned long",
            IntKind::LongLong => "long long",
            IntKind::ULongLong => "unsigned long long",
        }
    }

    /// A C expression of this type with the given value (which must be in range).
    pub fn literal(self, value: i128) -> String {
        debug_assert!(self.contains(value), "{value} is not a {}", self.spelling());
        let suffix = match self {
            IntKind::Int => "",
            IntKind::UInt => "U",
            IntKind::Long => "L",
            IntKind::ULong => "UL",
            IntKind::LongLong => "LL",
            IntKind::ULongLong => "ULL",
            narrow => {
                let inner = IntKind::Int.literal(value);
                return format!("(({}){inner})", narrow.spelling());
            }
        };
        if value == self.min() && self.is_signed() {
            // The negation of the minimum's magnitude would not fit: write MIN as -MAX - 1.
            format!("(-{}{suffix}-1)", self.max())
        } else if value < 0 {
            format!("(-{}{suffix})", -value)
        } else {
            format!("{value}{suffix}")
        }
    }
}

/// Converts a value to a type as assignment and casts do: modulo 2^N for unsigned types,
/// `!= 0` for `_Bool`, and for signed types gcc's and clang's implementation-defined choice
/// (modulo 2^N, two's complement).
pub fn convert(value: i128, to: IntKind) -> i128 {
    if to == IntKind::Bool {
        return (value != 0) as i128;
    }
    let modulus = 1i128 << to.bits();
    let wrapped = value.rem_euclid(modulus);
    if to.is_signed() && wrapped > to.max() {
        wrapped - modulus
    } else {
        wrapped
    }
}

/// The common type of the usual arithmetic conversions (C11 6.3.1.8) of two operand types.
pub fn usual_arithmetic(a: IntKind, b: IntKind) -> IntKind {
    let (a, b) = (a.promoted(), b.promoted());
    if a == b {
        return a;
    }
    if a.is_signed() == b.is_signed() {
        return if a.rank() >= b.rank() { a } else { b };
    }
    let (signed, unsigned) = if a.is_signed() { (a, b) } else { (b, a) };
    if unsigned.rank() >= signed.rank() {
        unsigned
    } else if signed.max() >= unsigned.max() {
        signed
    } else {
        signed.to_unsigned()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use IntKind::*;

    #[test]
    fn promotions_and_usual_arithmetic_conversions() {
        assert_eq!(usual_arithmetic(UChar, Short), Int);
        assert_eq!(usual_arithmetic(Int, UInt), UInt);
        assert_eq!(usual_arithmetic(Long, UInt), Long);
        assert_eq!(usual_arithmetic(LongLong, ULong), ULongLong);
        assert_eq!(usual_arithmetic(Long, ULongLong), ULongLong);
        assert_eq!(usual_arithmetic(Bool, Bool), Int);
        assert_eq!(usual_arithmetic(UShort, UShort), Int);
    }

    #[test]
    fn the_papers_example_of_a_conversion() {
        // int a = 0; short b = -1: a + b is -1; with unsigned a it is UINT_MAX.
        let b = Value::new(Short, -1);
        assert_eq!(
            eval_binary(BinaryOp::Add, Value::new(Int, 0), b),
            Ok(Value::new(Int, -1))
        );
        assert_eq!(
            eval_binary(BinaryOp::Add, Value::new(UInt, 0), b),
            Ok(Value::new(UInt, 4294967295))
        );
        assert_eq!(
            eval_binary(BinaryOp::Lt, Value::new(UInt, 0), b),
            Ok(Value::new(Int, 1))
        );
    }

    #[test]
    fn undefined_behaviour_is_reported() {
        let int = |v| Value::new(Int, v);
        assert_eq!(
            eval_binary(BinaryOp::Add, int(i32::MAX as i128), int(1)),
            Err(Ub::SignedOverflow)
        );
        assert_eq!(
            eval_binary(BinaryOp::Div, int(i32::MIN as i128), int(-1)),
            Err(Ub::SignedOverflow)
        );
        assert_eq!(
            eval_binary(BinaryOp::Rem, int(i32::MIN as i128), int(-1)),
            Err(Ub::SignedOverflow)
        );
        assert_eq!(eval_binary(BinaryOp::Rem, int(5), int(0)), Err(Ub::DivisionByZero));
        assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(32)), Err(Ub::ShiftTooFar));
        assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(-1)), Err(Ub::NegativeShift));
        assert_eq!(eval_binary(BinaryOp::Shl, int(-1), int(1)), Err(Ub::ShiftOfNegative));
        assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(31)), Err(Ub::ShiftOverflow));
        assert_eq!(eval_binary(BinaryOp::Shl, int(1), int(30)), Ok(int(1 << 30)));
        assert_eq!(eval_binary(BinaryOp::Shr, int(-8), int(1)), Ok(int(-4)));
        assert_eq!(eval_unary(UnaryOp::Neg, int(i32::MIN as i128)), Err(Ub::SignedOverflow));
        assert_eq!(
            eval_unary(UnaryOp::Neg, Value::new(UInt, 1)),
            Ok(Value::new(UInt, u32::MAX as i128))
        );
        // A char operand is promoted to int first: no overflow.
        assert_eq!(eval_unary(UnaryOp::Neg, Value::new(SChar, -128)), Ok(int(128)));
        let ull = Value::new(ULongLong, u64::MAX as i128);
        assert_eq!(eval_binary(BinaryOp::Mul, ull, ull), Ok(Value::new(ULongLong, 1)));
        assert_eq!(
            eval_binary(BinaryOp::Shl, ull, Value::new(Int, 63)),
            Ok(Value::new(ULongLong, 1i128 << 63))
        );
    }

    #[test]
    fn literals_have_their_type_and_value() {
        assert_eq!(Int.literal(i32::MIN as i128), "(-2147483647-1)");
        assert_eq!(ULongLong.literal(5), "5ULL");
        assert_eq!(Long.literal(-3), "(-3L)");
        assert_eq!(SChar.literal(-3), "((signed char)(-3))");
        assert_eq!(convert(300, UChar), 44);
        assert_eq!(convert(200, SChar), -56);
        assert_eq!(convert(-1, ULong), u64::MAX as i128);
        assert_eq!(convert(256, Bool), 1);
    }
}
