//! The `ccfuzz` command line.

use anyhow::{bail, Context, Result};
use ccfuzz::bench::{run_bench, BenchOptions, BenchPart};
use ccfuzz::campaign::{profile_directory, replay, run_campaign, CampaignOptions, SeedSource};
use ccfuzz::config::Config;
use ccfuzz::coverage_study::{coverage_experiment, CoveragePlan};
use ccfuzz::experiment::{counters_experiment, guidance_experiment, RunPlan, Setup};
use ccfuzz::generate::write_orange;
use ccfuzz::mcmc::{Family, Guidance, McmcOptions};
use ccfuzz::seeds::SeedMaker;
use ccfuzz_mutators::athena::{AthenaChain, AthenaParams};
use ccfuzz_mutators::cfg::DistanceWeights;
use ccfuzz_mutators::hermes::hermes_variant;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::orion::OrionMutator;
use ccfuzz_mutators::pool::Pool;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_orange::{GenOptions, Policies};
use clap::{Args, Parser, Subcommand, ValueEnum};
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl_bolts::rands::StdRand;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Parser)]
#[command(
    name = "ccfuzz",
    version,
    about = "Coverage-guided MCMC fuzzer for C compilers (EMI, Orange, Csmith)"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a campaign: mutate seeds, compile every variant with every configuration, save findings.
    Fuzz {
        /// Output directory; a campaign started again on it resumes.
        #[arg(long, default_value = "out")]
        out: PathBuf,
        /// Campaign configuration (TOML, see `ccfuzz config`); default: this machine's compilers.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Without --config: test every installed gcc-N and clang-N, not only the newest of each.
        #[arg(long, conflicts_with = "config")]
        all_versions: bool,
        /// Take seeds from this directory of C files instead of generating them.
        #[arg(long)]
        seeds: Option<PathBuf>,
        /// What generates seeds when there is no --seeds directory.
        #[arg(long, value_enum, default_value = "csmith")]
        generator: SeedGeneratorName,
        /// Operators per Orange seed are drawn log-uniformly from 1 to this.
        #[arg(long, default_value_t = 3000)]
        orange_max_operators: usize,
        /// The generation policies of Orange seeds (`none` for plain Orange3).
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "contexts,constants,subexpressions,shuffle"
        )]
        orange_policies: Vec<PolicyName>,
        /// With generated seeds: a new seed after this many variants (per core).
        #[arg(long, default_value_t = 25)]
        variants_per_seed: u64,
        /// Cores to run on: `all`, `0`, `0-3`, `0,2`.
        #[arg(long, default_value = "all")]
        cores: String,
        /// TCP port of this machine's LLMP broker.
        #[arg(long, default_value_t = 1337)]
        broker_port: u16,
        /// Connect this machine's broker to another machine's broker (HOST:PORT).
        #[arg(long)]
        remote_broker: Option<SocketAddr>,
        /// Stop after this many seconds.
        #[arg(long)]
        seconds: Option<u64>,
        /// Stop each core after this many executions.
        #[arg(long)]
        iterations: Option<u64>,
        /// Seconds between status lines (default: 1 on a terminal, where the line is
        /// rewritten in place, else 10).
        #[arg(long)]
        status_interval: Option<f64>,
        #[command(flatten)]
        mcmc: McmcArgs,
    },
    /// Write variants of one seed as C files, without compiling them.
    Mutate {
        #[arg(long)]
        seed: PathBuf,
        #[arg(long, value_enum, default_value = "orion")]
        mutator: MutatorName,
        #[arg(short = 'n', long, default_value_t = 10)]
        count: usize,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
        /// Random seed of the mutator.
        #[arg(long, default_value_t = 0)]
        random_seed: u64,
    },
    /// Profile seeds into a seed store, reporting each rejection with its reason.
    Seeds {
        /// The seed store (a campaign's is OUT/seeds).
        #[arg(long)]
        store: PathBuf,
        /// Profile every .c file of this directory.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Generate and profile this many csmith programs.
        #[arg(long)]
        csmith: Option<u64>,
        /// First csmith random seed (the others follow).
        #[arg(long, default_value_t = 1)]
        first_seed: u64,
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Execute saved variants (files of OUT/corpus or OUT/solutions) again and print each
    /// configuration's outcome; new findings are saved in OUT/findings.
    Replay {
        /// The campaign directory whose seed store the variants refer to.
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        config: Option<PathBuf>,
        files: Vec<PathBuf>,
    },
    /// Triage a campaign's findings: minimize, reduce without UB, fingerprint, merge into bugs
    /// (reports in OUT/triage/bugs) and print them, most findings first.
    Triage {
        /// The campaign directory (its findings/ and seeds/).
        out: PathBuf,
        /// The campaign configuration (reference, UB checks, timeouts).
        #[arg(long)]
        config: Option<PathBuf>,
        /// `cvise`, `creduce` or `none` (edit-list minimization only); default: the first installed.
        #[arg(long)]
        reducer: Option<String>,
        /// Processes the reducer may use.
        #[arg(long, default_value_t = 1)]
        jobs: usize,
        /// Runs of each finding; one that shows on some runs only is flaky.
        #[arg(long, default_value_t = 3)]
        runs: u32,
        /// Keep going: triage new findings every this many seconds (what a campaign with
        /// `background_triage = true` runs).
        #[arg(long)]
        watch: Option<u64>,
    },
    /// Print the default configuration for this machine (edit it and pass it with --config).
    Config {
        /// Test every installed gcc-N and clang-N, not only the newest of each.
        #[arg(long)]
        all_versions: bool,
    },
    /// Generate test programs.
    Generate {
        #[command(subcommand)]
        generator: GeneratorCommand,
    },
    /// Measure the fuzzer: variant making time, CPU share, executions per second on 1 and 2 cores.
    Bench {
        /// What to measure (default: everything).
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "observers,variants,orange,campaigns"
        )]
        parts: Vec<BenchPart>,
        #[arg(long)]
        config: Option<PathBuf>,
        /// Length of each measured campaign.
        #[arg(long, default_value_t = 60)]
        seconds: u64,
        /// Seeds used for the variant-making measurement.
        #[arg(long, default_value_t = 5)]
        seeds: u64,
        #[arg(long, default_value = "bench-out")]
        out: PathBuf,
        /// The build directory of `make instrumented-tcc`, for the observers' overheads.
        #[arg(long, default_value = "build")]
        build: PathBuf,
    },
    /// Draw a campaign's progress over time (from OUT/stats.json) into OUT/plots/campaign.{png,svg}.
    Plot { out: PathBuf },
    /// Compare two campaign setups, as YARPGen's optimization-counter study.
    #[command(subcommand)]
    Experiment(Experiment),
}

#[derive(Subcommand)]
enum Experiment {
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
    /// The Hermes coverage study: gcov lines of a `--coverage` compiler covered by the seeds,
    /// then by the seeds with k variants each per mutator family; report.md, coverage.csv,
    /// coverage.{png,svg} in --out.
    Coverage {
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
    },
}

/// The campaigns of an A/B experiment.
#[derive(Args)]
struct ExperimentRuns {
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
    /// Cores the runs are pinned to: one core alternates A and B; two run them side by side.
    #[arg(long, value_delimiter = ',', default_value = "0")]
    cores: Vec<usize>,
}

impl ExperimentRuns {
    fn plan(self, out: PathBuf) -> Result<RunPlan> {
        Ok(RunPlan {
            binary: std::env::current_exe().context("cannot find the ccfuzz binary")?,
            config: self.config,
            seeds: self.seeds,
            seconds: self.seconds,
            repetitions: self.repetitions,
            cores: self.cores,
            out,
        })
    }
}

/// YARPGen's generation policies, by name.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum PolicyName {
    /// Operator contexts on random sub-trees.
    Contexts,
    /// Constant leaves and the buffer of reused constants.
    Constants,
    /// The buffer of reused sub-expressions.
    Subexpressions,
    /// Distributions drawn anew for each program.
    Shuffle,
    /// No policy at all (plain Orange3).
    None,
}

fn policies(names: &[PolicyName]) -> Policies {
    Policies {
        contexts: names.contains(&PolicyName::Contexts),
        constants: names.contains(&PolicyName::Constants),
        common_subexpressions: names.contains(&PolicyName::Subexpressions),
        shuffle: names.contains(&PolicyName::Shuffle),
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum SeedGeneratorName {
    /// csmith programs.
    Csmith,
    /// Orange programs with YARPGen's policies (new ones, or mutations of the previous one).
    Orange,
}

#[derive(Subcommand)]
enum GeneratorCommand {
    /// Orange3 arithmetic programs with YARPGen's generation policies: each checks its own
    /// expected values and prints a checksum (`orange-N.c`, and `orange-N.expected`).
    Orange {
        #[arg(short = 'n', long, default_value_t = 10)]
        count: usize,
        #[arg(long)]
        out: PathBuf,
        /// Random seed of the generator.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Operators per program are drawn log-uniformly from --min-operators to this.
        #[arg(long, default_value_t = 10_000)]
        max_operators: usize,
        #[arg(long, default_value_t = 1)]
        min_operators: usize,
        /// The generation policies on (`none` for plain Orange3).
        #[arg(
            long,
            value_enum,
            value_delimiter = ',',
            default_value = "contexts,constants,subexpressions,shuffle"
        )]
        policies: Vec<PolicyName>,
        /// Turn off every generation policy (the same as `--policies none`).
        #[arg(long)]
        no_policies: bool,
        /// Floating-point variables and expressions, restricted to exact integer values.
        #[arg(long)]
        float: bool,
    },
}

/// The chains: who proposes, and Athena's objective.
#[derive(Args)]
struct McmcArgs {
    /// Mutator families proposing the chains' moves, drawn uniformly.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "athena,hermes")]
    mutators: Vec<Family>,
    /// Proposals on one seed's chain before turning to the next seed.
    #[arg(long, default_value_t = 25)]
    proposals_per_turn: u64,
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
}

impl McmcArgs {
    fn options(self) -> McmcOptions {
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
            families: self.mutators,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MutatorName {
    /// Delete statements that never ran.
    Orion,
    /// Insert live-code snippets (FCB, TG, TCB) before every usable profiled point.
    Hermes,
    /// Successive states of an Athena MCMC chain (deletions and transplants in code that never
    /// ran), pool from the seed and the seeds already in OUT/seeds.
    Athena,
}

fn load_config(path: Option<&Path>) -> Result<Config> {
    match path {
        Some(path) => Config::load(path),
        None => Config::detected(false),
    }
}

/// The state a mutator needs outside a campaign: a random number generator.
struct MutateState {
    rand: StdRand,
}

impl HasRand for MutateState {
    type Rand = StdRand;

    fn rand(&self) -> &StdRand {
        &self.rand
    }

    fn rand_mut(&mut self) -> &mut StdRand {
        &mut self.rand
    }
}

fn mutate(seed: &Path, mutator: MutatorName, count: usize, out: &Path, config: Config, random_seed: u64) -> Result<()> {
    let source = std::fs::read_to_string(seed).with_context(|| format!("cannot read {}", seed.display()))?;
    std::fs::create_dir_all(out)?;
    let store = SeedStore::open(out.join("seeds"))?;
    let mut maker = SeedMaker::new(config, store.clone(), out.join("tmp"))?;
    let made = maker.make(&source, &seed.display().to_string());
    let _ = std::fs::remove_dir_all(out.join("tmp"));
    let id = match made? {
        Ok(id) => id,
        Err(reason) => bail!("seed {} rejected: {reason}", seed.display()),
    };
    let programs = Arc::new(Programs::new(store.clone(), 1));
    let loaded = programs.get(&id)?;
    std::fs::write(out.join("seed.c"), &loaded.seed.text)?;
    if mutator == MutatorName::Athena {
        return athena_chain(&store, &programs, &id, count, out, random_seed);
    }
    let mut orion = OrionMutator::new(programs.clone());
    let mut state = MutateState {
        rand: StdRand::with_seed(random_seed),
    };
    let mut written = 0;
    let mut attempts = 0;
    while written < count {
        attempts += 1;
        if attempts > count * 100 {
            bail!(
                "{}",
                match mutator {
                    MutatorName::Orion => "the seed has no statement that never ran: Orion cannot change it",
                    MutatorName::Hermes =>
                        "the seed has no profiled point with complete values: Hermes cannot change it",
                    MutatorName::Athena => unreachable!("Athena variants come from a chain"),
                }
            );
        }
        let mut variant = Variant::of_seed(id.clone());
        match mutator {
            MutatorName::Orion => {
                if orion.mutate(&mut state, &mut variant)? == MutationResult::Skipped {
                    continue;
                }
            }
            MutatorName::Hermes => {
                variant.edits = hermes_variant(&loaded, state.rand_mut());
                if variant.edits.is_empty() {
                    continue;
                }
            }
            MutatorName::Athena => unreachable!("Athena variants come from a chain"),
        }
        written += 1;
        std::fs::write(
            out.join(format!("variant-{written:04}.c")),
            programs.materialize(&variant)?,
        )?;
    }
    println!("wrote {written} variants of seed {id} to {}", out.display());
    Ok(())
}

/// Writes the successive states of an Athena chain on `id`, one file per accepted move.
fn athena_chain(
    store: &SeedStore,
    programs: &Programs,
    id: &SeedId,
    count: usize,
    out: &Path,
    random_seed: u64,
) -> Result<()> {
    let mut pool = Pool::default();
    for other in store.ids()? {
        match programs.get(&other) {
            Ok(loaded) => pool.add_seed(&other, &loaded.program),
            Err(e) => log::warn!("stored seed {other} left out of the pool: {e:#}"),
        }
    }
    let loaded = programs.get(id)?;
    let mut chain = AthenaChain::new(&loaded.program, AthenaParams::default());
    let mut rand = StdRand::with_seed(random_seed);
    let mut written = 0;
    let mut steps = 0;
    while written < count {
        steps += 1;
        if steps > count * 200 + 1000 {
            bail!("the chain stopped moving after {written} variants: the seed has too little code that never ran");
        }
        if !chain.step(&loaded.program, id, &pool, &mut rand) {
            continue;
        }
        written += 1;
        let variant = Variant::new(id.clone(), chain.edits.clone());
        std::fs::write(
            out.join(format!("variant-{written:04}.c")),
            programs.materialize(&variant)?,
        )?;
    }
    println!(
        "wrote {written} variants of seed {id} to {}: {} proposals, acceptance {:.1}%, final distance {:.4}, pool of {} statements",
        out.display(),
        chain.proposals,
        100.0 * chain.accepted as f64 / chain.proposals.max(1) as f64,
        chain.distance,
        pool.entries.len()
    );
    Ok(())
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,ll_mp=warn")).init();
    match Cli::parse().command {
        Command::Fuzz {
            out,
            config,
            all_versions,
            seeds,
            variants_per_seed,
            cores,
            broker_port,
            remote_broker,
            seconds,
            iterations,
            status_interval,
            mcmc,
            generator,
            orange_max_operators,
            orange_policies,
        } => {
            let config = match config {
                Some(path) => Config::load(&path)?,
                None => Config::detected(all_versions)?,
            };
            let seeds = match (seeds, generator) {
                (Some(dir), _) => SeedSource::Directory(dir),
                (None, SeedGeneratorName::Csmith) => SeedSource::Csmith { variants_per_seed },
                (None, SeedGeneratorName::Orange) => SeedSource::Orange {
                    variants_per_seed,
                    options: GenOptions {
                        max_operators: orange_max_operators,
                        policies: policies(&orange_policies),
                        ..GenOptions::default()
                    },
                },
            };
            run_campaign(CampaignOptions {
                out,
                config,
                seeds,
                cores,
                broker_port,
                remote_broker,
                seconds,
                iterations,
                mcmc: mcmc.options(),
                status_interval: status_interval.map(std::time::Duration::from_secs_f64),
            })
        }
        Command::Mutate {
            seed,
            mutator,
            count,
            out,
            config,
            random_seed,
        } => mutate(
            &seed,
            mutator,
            count,
            &out,
            load_config(config.as_deref())?,
            random_seed,
        ),
        Command::Seeds {
            store,
            dir,
            csmith,
            first_seed,
            config,
        } => {
            let config = load_config(config.as_deref())?;
            let seed_store = SeedStore::open(&store)?;
            // Several `ccfuzz seeds` may fill one store at once: each gets its own scratch.
            let workdir = store.join(format!(".tmp-{}", std::process::id()));
            if let Some(dir) = dir {
                profile_directory(&config, &seed_store, &dir, &workdir)?;
            }
            if let Some(count) = csmith {
                let mut maker = SeedMaker::new(config, seed_store, workdir.clone())?;
                let (mut accepted, mut rejected) = (0, 0);
                for random_seed in first_seed..first_seed + count {
                    let (source, origin) = maker.csmith(random_seed)?;
                    match maker.make(&source, &origin)? {
                        Ok(id) => {
                            println!("seed `{origin}`: accepted as {id}");
                            accepted += 1;
                        }
                        Err(reason) => {
                            println!("seed `{origin}`: rejected: {reason}");
                            rejected += 1;
                        }
                    }
                }
                println!("csmith seeds: {accepted} accepted, {rejected} rejected");
            }
            let _ = std::fs::remove_dir_all(&workdir);
            Ok(())
        }
        Command::Replay { out, config, files } => replay(&out, &load_config(config.as_deref())?, &files),
        Command::Generate {
            generator:
                GeneratorCommand::Orange {
                    count,
                    out,
                    seed,
                    max_operators,
                    min_operators,
                    policies: policy_names,
                    no_policies,
                    float,
                },
        } => {
            let options = GenOptions {
                min_operators,
                max_operators,
                policies: if no_policies {
                    Policies::NONE
                } else {
                    policies(&policy_names)
                },
                float,
            };
            write_orange(count, &out, seed, options)
        }
        Command::Triage {
            out,
            config,
            reducer,
            jobs,
            runs,
            watch,
        } => {
            // A campaign directory records its configuration.
            let config = config.or_else(|| Some(out.join("configuration.toml")).filter(|p| p.is_file()));
            let config = load_config(config.as_deref())?;
            ccfuzz::triage::run_triage(&out, &config, reducer.as_deref(), jobs, runs, watch)
        }
        Command::Config { all_versions } => {
            print!("{}", Config::detect(all_versions).to_toml());
            Ok(())
        }
        Command::Bench {
            parts,
            config,
            seconds,
            seeds,
            out,
            build,
        } => run_bench(BenchOptions {
            parts,
            config: load_config(config.as_deref())?,
            config_path: config,
            seconds,
            seeds,
            out,
            build,
        }),
        Command::Experiment(Experiment::Counters { a, b, runs, out }) => {
            let plan = runs.plan(out)?;
            print!(
                "{}",
                counters_experiment(&plan, &Setup::parse(&a)?, &Setup::parse(&b)?)?
            );
            Ok(())
        }
        Command::Experiment(Experiment::Guidance { on, off, runs, out }) => {
            let plan = runs.plan(out)?;
            print!(
                "{}",
                guidance_experiment(&plan, &Setup::parse(&on)?, &Setup::parse(&off)?)?
            );
            Ok(())
        }
        Command::Experiment(Experiment::Coverage {
            compiler,
            config,
            seeds,
            families,
            ks,
            out,
        }) => {
            let plan = CoveragePlan {
                binary: std::env::current_exe().context("cannot find the ccfuzz binary")?,
                compiler,
                config,
                seeds,
                families,
                ks,
                out,
            };
            print!("{}", coverage_experiment(&plan)?);
            Ok(())
        }
        Command::Plot { out } => {
            for file in ccfuzz::plot::plot_campaign(&out)? {
                println!("wrote {}", file.display());
            }
            Ok(())
        }
    }
}
