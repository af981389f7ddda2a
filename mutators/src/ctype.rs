//! C types of the x86-64 LP64 target as the program model sees them.

use serde::{Deserialize, Serialize};

/// The integer types of C on x86-64 (LP64; plain `char` is signed as in gcc and clang).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    /// Width in bits.
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
}

/// A C type, with typedefs resolved and struct/union bodies referred to by tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CType {
    Void,
    Int(IntKind),
    Float,
    Double,
    LongDouble,
    Pointer(Box<CType>),
    Array(Box<CType>, Option<u64>),
    /// A struct or union, by tag (anonymous ones get a synthetic tag such as `<anon 3>`).
    Record {
        union: bool,
        tag: String,
    },
    Function,
    /// Anything the model does not need to understand (complex, `_Float128`, typeof, …).
    Other,
}

impl CType {
    pub fn as_int(&self) -> Option<IntKind> {
        match self {
            CType::Int(kind) => Some(*kind),
            _ => None,
        }
    }

    pub fn is_scalar(&self) -> bool {
        matches!(
            self,
            CType::Int(_) | CType::Float | CType::Double | CType::LongDouble | CType::Pointer(_)
        )
    }
}

/// Builds an integer kind from the multiset of basic type specifiers (`unsigned long int`, …).
#[derive(Default)]
pub struct IntSpecifiers {
    pub char: bool,
    pub short: bool,
    pub int: bool,
    pub longs: u8,
    pub signed: bool,
    pub unsigned: bool,
    pub bool: bool,
}

impl IntSpecifiers {
    pub fn is_empty(&self) -> bool {
        !(self.char || self.short || self.int || self.longs > 0 || self.signed || self.unsigned || self.bool)
    }

    pub fn kind(&self) -> IntKind {
        let unsigned = self.unsigned;
        if self.bool {
            IntKind::Bool
        } else if self.char {
            match (self.signed, unsigned) {
                (true, _) => IntKind::SChar,
                (_, true) => IntKind::UChar,
                _ => IntKind::Char,
            }
        } else if self.short {
            if unsigned {
                IntKind::UShort
            } else {
                IntKind::Short
            }
        } else if self.longs >= 2 {
            if unsigned {
                IntKind::ULongLong
            } else {
                IntKind::LongLong
            }
        } else if self.longs == 1 {
            if unsigned {
                IntKind::ULong
            } else {
                IntKind::Long
            }
        } else if unsigned {
            IntKind::UInt
        } else {
            IntKind::Int
        }
    }
}
