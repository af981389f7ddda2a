//! GNU C that lang-c 0.15 does not parse, made parseable without changing what the model
//! learns from it, and GNU C that it parses but the model must not take at face value.
//!
//! lang-c parses a copy of the seed text (its *parse text*); the seed text itself is never
//! changed. Two kinds of changes make that copy parseable:
//!
//! - [`rewrite`], before parsing, replaces constructs by text of the same length, so offsets
//!   are unchanged: `__int128` (and `__int128_t`, `__uint128_t`) by `_Float64`, a type the model
//!   treats as opaque ([`crate::ctype::CType::Other`]); `__real__` and `__imag__` by a unary
//!   `+`; `__alignof__` of an expression by `sizeof`; `__builtin_types_compatible_p (T1, T2)` by
//!   a constant expression that is not an integer literal (so no array takes it as a length);
//!   a label's address `&&l` by `0`, and the operand of a computed `goto *e;` by an identifier;
//!   `__label__` declarations and attributes between `struct`/`union`/`enum` and the body by
//!   blanks. The model reads nothing from any of these: expressions are opaque to it, and only
//!   `vector_size` and `mode` attributes change a type (they are never blanked; see
//!   [`changes_type`]). A statement that takes a label's address is kept whole (as if it held
//!   the label), and a computed `goto` has no label in the model.
//! - [`repair`], after a syntax error, inserts text where lang-c stopped or blanks a top-level
//!   `asm`, and the parse is tried again: `int ` before a C89 implicit-int declaration (`main()
//!   {`, `static x;`, `register i;`), `0` in an empty initializer `{}` (C23 and GNU) and in
//!   the conditional with an omitted operand (`a ?: b`). Insertions are recorded as
//!   [`Insertions`], which map parse-text offsets back to seed-text offsets.
//!
//! Not handled, so such seeds are still rejected: nested functions (clang has none either),
//! attributes inside abstract declarators, `$` and UCNs in identifiers.
//!
//! The code is split by job: [`rewrites`] (same-length rewrites before parsing), [`insertions`]
//! (repairs after a syntax error and the position mapping back to the seed), [`attributes`]
//! (attributes that change a type), [`statement_expressions`] (statement expressions that hide
//! jumps) and [`tokens`] (the small lexer they share).

mod attributes;
mod insertions;
mod rewrites;
mod statement_expressions;
#[cfg(test)]
mod tests;
mod tokens;

use lang_c::span::Span;

pub(super) use attributes::changes_type;
pub(super) use insertions::{repair, Insertions, MAX_REPAIRS};
pub(super) use rewrites::rewrite;
pub(super) use statement_expressions::{hides_jumps, may_hold_statement_expressions};

static NO_SPAN: Span = Span { start: 0, end: 0 };
