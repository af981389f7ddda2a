//! ccfuzz: the campaign around the mutators and observers, laid out along the pipeline:
//! seeds ([`seeds`]) → compile/run ([`exec`]) → judge ([`judge`]) → MCMC ([`mcmc`]), run on many
//! cores by [`campaign`], operated by [`ops`], measured by [`measure`]; [`config`] says which
//! compilers, and [`cli`] is the command line.

pub mod campaign;
pub mod cli;
pub mod config;
pub mod exec;
pub mod judge;
pub mod mcmc;
pub mod measure;
pub mod ops;
pub mod process;
pub mod seeds;
pub mod sharing;
