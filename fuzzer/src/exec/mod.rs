//! Compile and run: child processes under limits ([`runner`], started by [`spawn`]), a compiler configuration applied
//! to one program and its binary run ([`compile`]), what the observed compilers need and report
//! ([`instrument`]), the LibAFL executor over every configuration ([`executor`]), and the
//! input filter that runs a text once ([`repeats`]).

pub mod compile;
pub mod executor;
pub mod instrument;
pub mod repeats;
pub mod runner;
pub mod spawn;
pub mod validity;
