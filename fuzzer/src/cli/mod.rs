//! The command line: one subcommand per job, each parsed into its own arguments and run by
//! its module.

mod fuzz;
mod generate_orange;
mod ground_truth;
mod measure;
mod mutate;
mod seeds;
mod triage;
mod triage_history;

pub use triage::{choose_reducer, guard_of, run_triage};

use crate::config::Config;
use anyhow::Result;
use clap::{Args, Parser, Subcommand};
use std::path::{Path, PathBuf};

#[derive(Parser)]
#[command(
    name = "ccfuzz",
    version,
    about = "Coverage-guided MCMC fuzzer for C compilers (EMI, Orange, Csmith)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run a campaign: mutate seeds, compile every variant with every configuration, save findings.
    Fuzz(Box<fuzz::FuzzArgs>),
    /// Write variants of one seed as C files, without compiling them.
    Mutate(mutate::MutateArgs),
    /// Profile seeds into a seed store, reporting each rejection with its reason.
    Seeds(seeds::SeedsArgs),
    /// Execute saved variants (files of OUT/corpus) again and print each
    /// configuration's outcome; new findings are saved in OUT/findings.
    Replay(ReplayArgs),
    /// Triage a campaign's findings: minimize, reduce without UB, fingerprint, merge into bugs
    /// (reports in OUT/triage/bugs) and print them, most findings first.
    Triage(triage::TriageArgs),
    /// Print the default configuration for this machine (edit it and pass it with --config).
    Config(ConfigArgs),
    /// Generate test programs.
    Generate {
        #[command(subcommand)]
        generator: generate_orange::GeneratorCommand,
    },
    /// Measure the fuzzer: variant making time, CPU share, executions per second on 1 and 2 cores.
    Bench(measure::BenchArgs),
    /// Draw a campaign's progress over time (from OUT/stats.json) into OUT/plots/campaign.{png,svg}.
    Plot { out: PathBuf },
    /// Compare two campaign setups, as YARPGen's optimization-counter study.
    #[command(subcommand)]
    Experiment(measure::Experiment),
}

impl Command {
    pub fn run(self) -> Result<()> {
        match self {
            Command::Fuzz(args) => args.run(),
            Command::Mutate(args) => args.run(),
            Command::Seeds(args) => args.run(),
            Command::Replay(args) => {
                crate::campaign::replay(&args.out, &load_config(args.config.as_deref())?, &args.files)
            }
            Command::Triage(args) => args.run(),
            Command::Config(args) => {
                let config = Config::detect(args.all_versions);
                print!("{}{}", config.versions_comment(), config.to_toml());
                Ok(())
            }
            Command::Generate { generator } => generator.run(),
            Command::Bench(args) => args.run(),
            Command::Plot { out } => measure::plot(&out),
            Command::Experiment(experiment) => experiment.run(),
        }
    }
}

#[derive(Args)]
pub struct ReplayArgs {
    /// The campaign directory whose seed store the variants refer to.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub config: Option<PathBuf>,
    pub files: Vec<PathBuf>,
}

#[derive(Args)]
pub struct ConfigArgs {
    /// Test every installed gcc-N and clang-N, not only the newest of each.
    #[arg(long)]
    pub all_versions: bool,
}

/// The configuration in `path`, or this machine's default.
pub fn load_config(path: Option<&Path>) -> Result<Config> {
    match path {
        Some(path) => Config::load(path),
        None => Config::detected(false),
    }
}
