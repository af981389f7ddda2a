//! ccfuzz: the campaign around the mutators and observers — compiler configurations, seed
//! profiling, the compile/run executor, objectives and findings, and the multi-core wiring.

pub mod bench;
pub mod broker;
pub mod campaign;
pub mod compile;
pub mod config;
pub mod coverage_study;
pub mod executor;
pub mod experiment;
pub mod generate;
pub mod installed;
pub mod instrument;
pub mod manager;
pub mod mcmc;
pub mod objective;
pub mod plot;
pub mod runner;
pub mod seeds;
pub mod sharing;
pub mod shutdown;
pub mod stats;
pub mod status;
pub mod triage;
