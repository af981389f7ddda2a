//! C types of the x86-64 LP64 target as the program model sees them.

use serde::{Deserialize, Serialize};

pub use ccfuzz_semantics::IntKind;

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
