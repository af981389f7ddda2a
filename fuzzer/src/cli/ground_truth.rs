//! `ccfuzz experiment ground-truth` and `ccfuzz experiment density`: the options of the
//! benchmark on a compiler's history (TinyCC or pcc) and of the survey that tells where to
//! start it.

use crate::cli::load_config;
use crate::measure::bug_rate::NamedSetup;
use crate::measure::ground_truth::density::{density, DensityPlan};
use crate::measure::ground_truth::{ground_truth_study, GroundTruthPlan};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct GroundTruthArgs {
    /// The tested compiler's git directory (a clone or a bare mirror): TinyCC's or pcc's,
    /// told apart by their sources.
    #[arg(long, alias = "tinycc", alias = "pcc")]
    history: PathBuf,
    /// The revision the setups test (TinyCC: 0.9.27 or later, older ones make binaries that
    /// crash on today's glibc).
    #[arg(long)]
    from: String,
    /// Options the compiler is tested with, e.g. pcc's `-O`.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    options: String,
    /// The newest revision a correcting commit is searched up to.
    #[arg(long, default_value = "HEAD")]
    to: String,
    /// A named setup, `NAME: key=value …` (repeat), e.g. `plain-csmith: variants-per-seed=0`.
    #[arg(long = "setup", required = true)]
    setups: Vec<String>,
    /// Reference, UB checks, timeouts and csmith options (default: this machine's); its
    /// configurations are replaced by the compiler at --from, its reference by `gcc -O0`.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Seed programs for every setup (a setup may give its own with `seeds=DIR`).
    #[arg(long)]
    seeds: Option<PathBuf>,
    /// Wall seconds of each run; its CPU time is this times the cores.
    #[arg(long, default_value_t = 1200)]
    seconds: u64,
    #[arg(long, default_value_t = 3)]
    repetitions: usize,
    /// Cores every run is pinned to.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    cores: Vec<usize>,
    /// Run the setups of each repetition at the same time, one core each (the first setup on
    /// the first core, …): a paired design, in which the setups meet the same load of a shared
    /// machine. With more setups than cores they run in groups of as many as there are cores.
    #[arg(long)]
    paired: bool,
    /// Where each commit's build is cached, under its hash.
    #[arg(long, default_value = "build/compiler-history")]
    build_cache: PathBuf,
    /// Known bugs, one a line: a correcting commit or a reduced test (`.c`). Their findings
    /// are recognized without bisection and counted apart.
    #[arg(long)]
    known_bugs: Option<PathBuf>,
    #[arg(long, default_value = "experiment-ground-truth")]
    out: PathBuf,
}

impl GroundTruthArgs {
    /// Runs the benchmark and returns its report.
    pub fn run(self) -> Result<String> {
        let setups = self
            .setups
            .iter()
            .map(|spec| NamedSetup::parse(spec))
            .collect::<Result<Vec<_>>>()?;
        let plan = GroundTruthPlan {
            binary: std::env::current_exe().context("cannot find the ccfuzz binary")?,
            history: self.history,
            options: self.options,
            from: self.from,
            to: self.to,
            base_config: load_config(self.config.as_deref())?,
            seeds: self.seeds,
            seconds: self.seconds,
            repetitions: self.repetitions,
            cores: self.cores,
            paired: self.paired,
            out: self.out,
            build_cache: self.build_cache,
            known: self.known_bugs,
        };
        ground_truth_study(&plan, &setups)
    }
}

#[derive(Args)]
pub struct DensityArgs {
    /// The compiler's git directory (TinyCC's or pcc's).
    #[arg(long, alias = "tinycc", alias = "pcc")]
    history: PathBuf,
    /// Options the compiler is run with, e.g. pcc's `-O`.
    #[arg(long, default_value = "", allow_hyphen_values = true)]
    options: String,
    /// Vetted csmith programs in the pool.
    #[arg(long, default_value_t = 187)]
    programs: usize,
    /// Where the pool is kept (made once, reused by later surveys).
    #[arg(long, default_value = "build/density-pool")]
    pool: PathBuf,
    /// Reference and UB check the pool is vetted with, timeouts, csmith's headers (default:
    /// this machine's).
    #[arg(long)]
    config: Option<PathBuf>,
    /// Where each commit's build is cached, under its hash.
    #[arg(long, default_value = "build/compiler-history")]
    build_cache: PathBuf,
    /// The revisions to build and survey.
    #[arg(required = true)]
    revisions: Vec<String>,
}

impl DensityArgs {
    /// Runs the survey and returns its lines.
    pub fn run(self) -> Result<String> {
        density(&DensityPlan {
            history: self.history,
            options: self.options,
            revisions: self.revisions,
            programs: self.programs,
            pool: self.pool,
            build_cache: self.build_cache,
            config: load_config(self.config.as_deref())?,
        })
    }
}
