//! ccfuzz: the campaign around the mutators and observers, laid out along the pipeline:
//! seeds ([`seeds`]) → compile/run ([`exec`]) → judge ([`judge`]) → MCMC ([`mcmc`]), run on many
//! cores by [`campaign`], measured by [`measure`]; [`config`] says which compilers, and [`cli`]
//! is the command line. Below the stages, [`process`] runs compilers and binaries and [`ops`]
//! holds this process's own services. A folder imports only the folders below it in
//! ARCHITECTURE.md's table, which the tidy test checks.

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
