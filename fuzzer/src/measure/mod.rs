//! Measuring the fuzzer: its own costs ([`bench`]), A/B campaign studies ([`experiment`]),
//! the bug rate of setups ([`bug_rate`]), distinct bugs on TinyCC's history ([`ground_truth`]),
//! the Hermes coverage study ([`coverage_study`]), charts ([`plot`]) and statistics ([`stats`]).

pub mod bench;
pub mod bug_rate;
pub mod coverage_study;
pub mod experiment;
pub mod ground_truth;
pub mod plot;
pub mod stats;
