//! Compile and run: child processes under limits ([`runner`]), a compiler configuration applied
//! to one program and its binary run ([`compile`]), what the observed compilers need and report
//! ([`instrument`]), and the LibAFL executor over every configuration ([`executor`]).

pub mod compile;
pub mod executor;
pub mod instrument;
pub mod runner;
pub mod validity;
