//! The measuring commands: `ccfuzz bench` (the fuzzer's own costs), `ccfuzz experiment` (A/B
//! campaign studies and the coverage study) and `ccfuzz plot`.

use crate::cli::load_config;
use crate::measure::bench::{run_bench, BenchOptions, BenchPart};
use crate::measure::bug_rate::{bug_rate_study, NamedSetup};
use crate::measure::coverage_study::{coverage_experiment, CoveragePlan};
use crate::measure::experiment::{counters_experiment, guidance_experiment, RunPlan, Setup};
use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct BenchArgs {
    /// What to measure (default: everything).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "observers,variants,orange,campaigns"
    )]
    pub parts: Vec<BenchPart>,
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Length of each measured campaign.
    #[arg(long, default_value_t = 60)]
    pub seconds: u64,
    /// Seeds used for the variant-making measurement.
    #[arg(long, default_value_t = 5)]
    pub seeds: u64,
    #[arg(long, default_value = "bench-out")]
    pub out: PathBuf,
    /// The build directory of `make instrumented-tcc`, for the observers' overheads.
    #[arg(long, default_value = "build")]
    pub build: PathBuf,
    /// The `ccfuzz` whose campaigns the campaigns part measures (default: this one), for
    /// before-and-after figures of an older build in one run.
    #[arg(long)]
    pub fuzzer: Option<PathBuf>,
    /// Start every campaign's random numbers from this: each then draws the same csmith seeds
    /// on every run of the bench, which makes executions per second comparable between runs
    /// and builds (the default draws new seeds each time).
    #[arg(long)]
    pub random_seed: Option<u64>,
}

impl BenchArgs {
    pub fn run(self) -> Result<()> {
        run_bench(BenchOptions {
            parts: self.parts,
            config: load_config(self.config.as_deref())?,
            config_path: self.config,
            seconds: self.seconds,
            seeds: self.seeds,
            out: self.out,
            build: self.build,
            fuzzer: self.fuzzer,
            random_seed: self.random_seed,
        })
    }
}

#[derive(Subcommand)]
pub enum Experiment {
    /// Runs setups A and B R times each (one core per run) and classifies every optimization counter
    /// as A better / B better / comparable (Welch, 95%); writes report.md, counters.csv and
    /// verdicts.{png,svg} in --out.
    Counters {
        /// Setup A: `ccfuzz fuzz` options as key=value words, e.g. "mutators=hermes".
        #[arg(long)]
        a: String,
        /// Setup B, e.g. "mutators=athena".
        #[arg(long)]
        b: String,
        #[command(flatten)]
        runs: ExperimentRuns,
        #[arg(long, default_value = "experiment-counters")]
        out: PathBuf,
    },
    /// Runs the same campaign with the MCMC energy's coverage/counter terms on and off (plain
    /// Athena distance), R times each (one core per run); reports compiler coverage, distinct
    /// counters, findings with 95% confidence intervals in --out/report.md.
    Guidance {
        /// Setup with guidance (key=value `ccfuzz fuzz` options).
        #[arg(long, default_value = "mutators=athena coverage-weight=0.001 counter-weight=0.005")]
        on: String,
        /// Setup without.
        #[arg(long, default_value = "mutators=athena coverage-weight=0 counter-weight=0")]
        off: String,
        #[command(flatten)]
        runs: ExperimentRuns,
        #[arg(long, default_value = "experiment-guidance")]
        out: PathBuf,
    },
    /// The bug-rate study: every setup runs R times for the same time on all --cores, each run
    /// is triaged, and raw findings and distinct bugs per CPU-hour are reported with 95%
    /// intervals in --out/report.md (and bug-rate.csv).
    Bugs {
        /// A named setup, `NAME: key=value …` (repeat; two or more). Plain Csmith differential
        /// testing is `plain-csmith: variants-per-seed=0`; Orange seeds are `orange:
        /// generator=orange`; the default campaign is `default:`.
        #[arg(long = "setup", required = true)]
        setups: Vec<String>,
        /// The reducer of each run's triage (`ccfuzz triage --reducer`).
        #[arg(long)]
        reducer: Option<String>,
        #[command(flatten)]
        runs: ExperimentRuns,
        #[arg(long, default_value = "experiment-bugs")]
        out: PathBuf,
    },
    /// The Hermes coverage study: gcov lines of a `--coverage` compiler covered by the seeds,
    /// then by the seeds with k variants each per mutator family; report.md, coverage.csv,
    /// coverage.{png,svg} in --out.
    Coverage(CoverageArgs),
    /// Where plain csmith meets bugs on a compiler's history: how many of a pool of vetted csmith
    /// programs the compiler at each revision rejects or miscompiles (one line per revision).
    Density(super::ground_truth::DensityArgs),
    /// The ground-truth benchmark on TinyCC's or pcc's history: every setup runs R times
    /// against the compiler built at --from, each finding is bucketed by its correcting commit (bisected up to --to)
    /// before any reduction; distinct bugs per CPU-hour, time to first bug and programs per
    /// hour in --out/report.md, one row per distinct bug in --out/bugs.csv.
    GroundTruth(super::ground_truth::GroundTruthArgs),
}

// The coverage study's options (its help is the `Coverage` subcommand's).
#[derive(Args)]
pub struct CoverageArgs {
    /// The gcov-built compiler command (e.g. "build/tcc-gcov/tcc -Bbuild/tcc-gcov").
    #[arg(long)]
    compiler: String,
    /// The configuration `ccfuzz mutate` profiles the seeds with.
    #[arg(long)]
    config: PathBuf,
    #[arg(long)]
    seeds: PathBuf,
    #[arg(long, value_delimiter = ',', default_value = "orion,athena,hermes")]
    families: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "1,10,20")]
    ks: Vec<usize>,
    #[arg(long, default_value = "experiment-coverage")]
    out: PathBuf,
}

impl CoverageArgs {
    fn plan(self) -> Result<CoveragePlan> {
        Ok(CoveragePlan {
            binary: ccfuzz_binary()?,
            compiler: self.compiler,
            config: self.config,
            seeds: self.seeds,
            families: self.families,
            ks: self.ks,
            out: self.out,
        })
    }
}

/// The running `ccfuzz` binary, which the studies run as subprocesses.
fn ccfuzz_binary() -> Result<PathBuf> {
    std::env::current_exe().context("cannot find the ccfuzz binary")
}

/// The campaigns of an A/B experiment.
#[derive(Args)]
pub struct ExperimentRuns {
    /// The campaigns' configuration: it must observe what the experiment compares
    /// (`counters = "gcc"`, `coverage = "afl"`).
    #[arg(long)]
    config: PathBuf,
    /// Seed programs; without them each run generates its own (csmith, or the setup's
    /// `generator=orange`).
    #[arg(long)]
    seeds: Option<PathBuf>,
    /// Length of each run.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    #[arg(long, default_value_t = 5)]
    repetitions: usize,
    /// Cores the runs are pinned to: one core alternates A and B; two run them side by side (a
    /// bug-rate study gives every run all of them).
    #[arg(long, value_delimiter = ',', default_value = "0")]
    cores: Vec<usize>,
}

impl ExperimentRuns {
    fn plan(self, out: PathBuf) -> Result<RunPlan> {
        Ok(RunPlan {
            binary: ccfuzz_binary()?,
            config: self.config,
            seeds: self.seeds,
            seconds: self.seconds,
            repetitions: self.repetitions,
            cores: self.cores,
            out,
        })
    }
}

impl Experiment {
    pub fn run(self) -> Result<()> {
        let report = match self {
            Experiment::Counters { a, b, runs, out } => {
                counters_experiment(&runs.plan(out)?, &Setup::parse(&a)?, &Setup::parse(&b)?)?
            }
            Experiment::Guidance { on, off, runs, out } => {
                guidance_experiment(&runs.plan(out)?, &Setup::parse(&on)?, &Setup::parse(&off)?)?
            }
            Experiment::Bugs {
                setups,
                reducer,
                runs,
                out,
            } => {
                let setups = setups
                    .iter()
                    .map(|spec| NamedSetup::parse(spec))
                    .collect::<Result<Vec<_>>>()?;
                bug_rate_study(&runs.plan(out)?, &setups, reducer.as_deref())?
            }
            Experiment::Coverage(args) => coverage_experiment(&args.plan()?)?,
            Experiment::GroundTruth(args) => args.run()?,
            Experiment::Density(args) => args.run()?,
        };
        print!("{report}");
        Ok(())
    }
}

/// Draws a campaign's progress over time.
pub fn plot(out: &std::path::Path) -> Result<()> {
    for file in crate::measure::plot::plot_campaign(out)? {
        println!("wrote {}", file.display());
    }
    Ok(())
}
