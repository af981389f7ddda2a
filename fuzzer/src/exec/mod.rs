//! Compile and run a variant, as LibAFL's executor: what the observed compilers need and report
//! ([`instrument`]), the executor over every configuration ([`executor`]) and the variant's
//! source file it writes over ([`source_file`]), the reference's gate on a variant's run
//! ([`gate`]), and the input filter that runs a text once ([`repeats`]). Compiling and
//! running one program is [`crate::process`]'s, which seed making uses too.

pub mod executor;
pub mod gate;
pub mod instrument;
pub mod repeats;
pub mod source_file;

/// Where the end-to-end tests still look for them.
pub use crate::process::{compile, runner};
