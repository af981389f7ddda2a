//! Compile and run: child processes under limits ([`runner`], started by [`spawn`]), a compiler configuration applied
//! to one program and its binary run ([`compile`]), what the observed compilers need and report
//! ([`instrument`]), the LibAFL executor over every configuration ([`executor`]) and the
//! variant's source file it writes over ([`source_file`]), and the input filter that runs a
//! text once ([`repeats`]).

pub mod compile;
pub mod executor;
pub mod instrument;
pub mod repeats;
pub mod runner;
pub mod source_file;
pub mod spawn;
pub mod validity;
