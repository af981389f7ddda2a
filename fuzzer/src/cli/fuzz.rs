//! `ccfuzz fuzz`: the campaign's command line turned into [`CampaignOptions`].

use crate::campaign::{run_campaign, CampaignOptions, MixedSource, SeedSource};
use crate::cli::generate_orange::{policies, PolicyName};
use crate::config::Config;
use crate::mcmc::{Family, FamilyChoice, Guidance, McmcOptions};
use anyhow::Result;
use ccfuzz_mutators::athena::AthenaParams;
use ccfuzz_mutators::flow_graph::DistanceWeights;
use ccfuzz_orange::GenOptions;
use clap::{Args, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Args)]
pub struct FuzzArgs {
    /// Output directory; a campaign started again on it resumes.
    #[arg(long, default_value = "out")]
    pub out: PathBuf,
    /// Campaign configuration (TOML, see `ccfuzz config`); default: this machine's compilers.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Without --config: test every installed gcc-N and clang-N, not only the newest of each.
    #[arg(long, conflicts_with = "config")]
    pub all_versions: bool,
    /// Take seeds from this directory of C files instead of generating them.
    #[arg(long)]
    pub seeds: Option<PathBuf>,
    /// What generates seeds when there is no --seeds directory.
    #[arg(long, value_enum, default_value = "csmith")]
    pub generator: SeedGeneratorName,
    /// Mix seed sources: each new seed comes from one of them in proportion to its weight.
    /// SOURCE is `csmith`, `orange` or a directory of C files (each file taken once, shared out
    /// among the cores). Repeat it: `--mix csmith=1 --mix build/seeds/gcc-torture=3`.
    #[arg(long, value_name = "SOURCE=WEIGHT", value_parser = parse_mixed_source, conflicts_with = "seeds")]
    pub mix: Vec<(String, f64)>,
    /// Operators per Orange seed are drawn log-uniformly from 1 to this.
    #[arg(long, default_value_t = 3000)]
    pub orange_max_operators: usize,
    /// The generation policies of Orange seeds (`none` for plain Orange3).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "contexts,constants,subexpressions,shuffle"
    )]
    pub orange_policies: Vec<PolicyName>,
    /// With generated seeds: a new seed after this many variants (per core); 0 tests each seed
    /// alone, unmutated (plain Csmith or Orange differential testing).
    #[arg(long, default_value_t = 25)]
    pub variants_per_seed: u64,
    /// Cores to run on: `all`, `0`, `0-3`, `0,2`.
    #[arg(long, default_value = "all")]
    pub cores: String,
    /// TCP port of this machine's LLMP broker [default: 1337, or a free port when another
    /// campaign holds 1337].
    #[arg(long)]
    pub broker_port: Option<u16>,
    /// Connect this machine's broker to another machine's broker (HOST:PORT).
    #[arg(long)]
    pub remote_broker: Option<SocketAddr>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub seconds: Option<u64>,
    /// Stop each core after this many executions.
    #[arg(long)]
    pub iterations: Option<u64>,
    /// Seconds between status lines (default: 1 on a terminal, where the line is
    /// rewritten in place, else 10).
    #[arg(long)]
    pub status_interval: Option<f64>,
    /// Put scratch directories (variants, binaries, compiler temporaries) under this directory.
    /// Default: /dev/shm when it is a tmpfs with 64 MB free per core, else OUT/tmp.
    #[arg(long, conflicts_with = "scratch_on_disk")]
    pub scratch: Option<PathBuf>,
    /// Keep scratch directories in OUT/tmp even when /dev/shm has room.
    #[arg(long)]
    pub scratch_on_disk: bool,
    /// With generated seeds: the largest share of each core's time that making seeds (csmith,
    /// profiling, vetting) may take; a seed keeps being mutated past --variants-per-seed while
    /// the share is above it. Only fast compilers (tcc, pcc) reach it: against gcc and clang at
    /// five levels, seed making is under a tenth of the time. 1 turns this off; with
    /// `--family-choice yield` the seeds' yield sets the share instead.
    #[arg(long, default_value_t = 0.25)]
    pub max_seed_share: f64,
    /// Seed each client's random numbers with this (and its id) instead of the clock: a fresh
    /// campaign then draws the same csmith seeds in the same order on every run, which makes
    /// runs comparable (timing still decides how many it reaches and when). For benchmarks and
    /// comparisons: a client restarted before it ever saved its state draws the same again.
    #[arg(long)]
    pub random_seed: Option<u64>,
    #[command(flatten)]
    pub mcmc: McmcArgs,
}

impl FuzzArgs {
    pub fn run(self) -> Result<()> {
        let config = match self.config {
            Some(path) => Config::load(&path)?,
            None => Config::detected(self.all_versions)?,
        };
        let orange_options = GenOptions {
            max_operators: self.orange_max_operators,
            policies: policies(&self.orange_policies),
            ..GenOptions::default()
        };
        let seeds = match (self.seeds, self.generator) {
            _ if !self.mix.is_empty() => SeedSource::Mixed {
                variants_per_seed: self.variants_per_seed,
                sources: self
                    .mix
                    .into_iter()
                    .map(|(source, weight)| {
                        let source = match source.as_str() {
                            "csmith" => MixedSource::Csmith,
                            "orange" => MixedSource::Orange(orange_options),
                            dir => MixedSource::Directory(dir.into()),
                        };
                        (source, weight)
                    })
                    .collect(),
            },
            (Some(dir), _) => SeedSource::Directory(dir),
            (None, SeedGeneratorName::Csmith) => SeedSource::Csmith {
                variants_per_seed: self.variants_per_seed,
            },
            (None, SeedGeneratorName::Orange) => SeedSource::Orange {
                variants_per_seed: self.variants_per_seed,
                options: orange_options,
            },
        };
        run_campaign(CampaignOptions {
            out: self.out,
            config,
            seeds,
            cores: self.cores,
            broker_port: self.broker_port,
            remote_broker: self.remote_broker,
            seconds: self.seconds,
            iterations: self.iterations,
            mcmc: self.mcmc.options(),
            status_interval: self.status_interval.map(std::time::Duration::from_secs_f64),
            scratch_root: self.scratch,
            scratch_on_disk: self.scratch_on_disk,
            max_seed_share: self.max_seed_share,
            random_seed: self.random_seed,
        })
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SeedGeneratorName {
    /// csmith programs.
    Csmith,
    /// Orange programs with YARPGen's policies (new ones, or mutations of the previous one).
    Orange,
}

/// The chains: who proposes, and Athena's objective.
#[derive(Args)]
pub struct McmcArgs {
    /// Mutator families proposing the chains' moves (drawn as --family-choice says).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "athena,hermes")]
    mutators: Vec<Family>,
    /// How the time is spread over the sources of programs: `uniform` (families drawn equally,
    /// fresh seeds within --max-seed-share), or `yield`, a bandit: fresh seeds get a share of
    /// the time in proportion to their recent findings and novelty per second against the
    /// variants' (15% at least for each side), and families are drawn in proportion to theirs
    /// (a tenth of the draws at least for each of three).
    #[arg(long, value_enum, default_value = "uniform")]
    family_choice: FamilyChoice,
    /// Proposals on one seed's chain before turning to the next seed.
    #[arg(long, default_value_t = 25)]
    proposals_per_turn: u64,
    /// With generated or mixed seeds: chains taking turns; a new seed's chain retires the oldest
    /// (a client holds the parsed seeds of this many chains, whatever the campaign's length).
    #[arg(long, default_value_t = McmcOptions::default().active_chains)]
    active_chains: usize,
    /// Accepted moves after which a chain starts again from its seed (0: never). Athena's
    /// distance of a chain peaks after a few hundred moves, and every proposal costs more the
    /// longer the chain.
    #[arg(long, default_value_t = crate::mcmc::LONGEST_CHAIN)]
    longest_chain: u64,
    /// Inverse temperature of the acceptance rule.
    #[arg(long, default_value_t = AthenaParams::default().sigma)]
    sigma: f64,
    /// Weight of the distance between control-flow vertex sets.
    #[arg(long, default_value_t = DistanceWeights::default().alpha)]
    alpha: f64,
    /// Weight of the distance between control-flow edge sets.
    #[arg(long, default_value_t = DistanceWeights::default().beta)]
    beta: f64,
    /// Penalty per statement of size difference from the seed.
    #[arg(long, default_value_t = DistanceWeights::default().gamma)]
    gamma: f64,
    /// Energy per compiler-coverage entry a proposal covers first (0 with the next: plain
    /// Athena). Ten new edges weigh about as much as three Athena moves.
    #[arg(long, default_value_t = 0.001)]
    coverage_weight: f64,
    /// Energy per optimization counter a proposal sets first.
    #[arg(long, default_value_t = 0.005)]
    counter_weight: f64,
    /// Megabytes of a client's decision log (`OUT/mcmc/client-N.csv`, a line per proposal)
    /// before it is set aside as `client-N.older.csv`, replacing the one before.
    #[arg(long, default_value_t = McmcOptions::default().decision_log_bytes >> 20)]
    decision_log_mb: u64,
}

impl McmcArgs {
    pub fn options(self) -> McmcOptions {
        McmcOptions {
            athena: AthenaParams {
                sigma: self.sigma,
                weights: DistanceWeights {
                    alpha: self.alpha,
                    beta: self.beta,
                    gamma: self.gamma,
                },
            },
            guidance: Guidance {
                coverage: self.coverage_weight,
                counters: self.counter_weight,
            },
            proposals_per_turn: self.proposals_per_turn,
            active_chains: self.active_chains.max(1),
            families: self.mutators,
            family_choice: self.family_choice,
            longest_chain: (self.longest_chain > 0).then_some(self.longest_chain),
            decision_log_bytes: self.decision_log_mb << 20,
        }
    }
}

/// `SOURCE=WEIGHT` of `--mix`: a directory must exist, a weight be positive.
fn parse_mixed_source(spec: &str) -> Result<(String, f64), String> {
    let (source, weight) = spec
        .rsplit_once('=')
        .ok_or_else(|| format!("`{spec}` is not SOURCE=WEIGHT"))?;
    let weight: f64 = weight
        .parse()
        .map_err(|_| format!("the weight of `{source}` is not a number: `{weight}`"))?;
    if !(weight > 0.0 && weight.is_finite()) {
        return Err(format!("the weight of `{source}` must be positive"));
    }
    if !matches!(source, "csmith" | "orange") && !std::path::Path::new(source).is_dir() {
        return Err(format!("`{source}` is neither csmith, orange nor a directory"));
    }
    Ok((source.to_string(), weight))
}
