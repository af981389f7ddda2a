//! The C-semantics core: the integer types of x86-64 Linux (LP64, plain `char` signed as in gcc
//! and clang), integer promotions, the usual arithmetic conversions, conversion on assignment,
//! and the value or the undefined behaviour of every integer operator.
//!
//! Hermes's speculative execution and the Orange generator's expected values rely on it: a
//! mistake here becomes a false bug report, so it is tested exhaustively against gcc with UBSan.
//! Values are carried as `i128`, wide enough for every operand and intermediate result.

mod int_types;
mod operators;

pub use int_types::{convert, usual_arithmetic, IntKind};
pub use operators::{eval_binary, eval_unary, BinaryOp, Ub, UnaryOp, Value};

#[cfg(test)]
mod tests;
