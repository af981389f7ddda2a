//! The integer types of C on x86-64 Linux and the conversions between them: promotions, the
//! usual arithmetic conversions, conversion on assignment and casts, literals of each type.

use serde::{Deserialize, Serialize};

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
