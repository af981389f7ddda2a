//! Child processes, below every pipeline stage: a child started under limits in its own
//! process group ([`spawn`]), waited for with a timeout and its output captured ([`runner`]),
//! and one compiler configuration applied to one program and its binary run ([`compile`]).
//! Seed making and the executor both stand on it.

pub mod compile;
pub mod runner;
pub mod spawn;
