//! `ccfuzz mutate`: variants of one seed written as C files, without compiling them (Orion and
//! Hermes variants drawn independently, Athena's as the successive states of one chain).

use crate::cli::load_config;
use crate::config::Config;
use crate::seeds::SeedMaker;
use anyhow::{bail, Context, Result};
use ccfuzz_mutators::athena::{AthenaChain, AthenaParams};
use ccfuzz_mutators::hermes::hermes_variant;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::orion::OrionMutator;
use ccfuzz_mutators::pool::Pool;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use clap::{Args, ValueEnum};
use libafl::mutators::{MutationResult, Mutator};
use libafl::state::HasRand;
use libafl_bolts::rands::StdRand;
use std::path::{Path, PathBuf};
use std::sync::Arc;

#[derive(Args)]
pub struct MutateArgs {
    #[arg(long)]
    pub seed: PathBuf,
    #[arg(long, value_enum, default_value = "orion")]
    pub mutator: MutatorName,
    #[arg(short = 'n', long, default_value_t = 10)]
    pub count: usize,
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Random seed of the mutator.
    #[arg(long, default_value_t = 0)]
    pub random_seed: u64,
}

impl MutateArgs {
    pub fn run(self) -> Result<()> {
        let config = load_config(self.config.as_deref())?;
        mutate(
            &self.seed,
            self.mutator,
            self.count,
            &self.out,
            config,
            self.random_seed,
        )
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MutatorName {
    /// Delete statements that never ran.
    Orion,
    /// Insert live-code snippets (FCB, TG, TCB) before every usable profiled point.
    Hermes,
    /// Successive states of an Athena MCMC chain (deletions and transplants in code that never
    /// ran), pool from the seed and the seeds already in OUT/seeds.
    Athena,
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
    let made = maker.make_file(seed, &source).map(|(made, _)| made);
    let _ = std::fs::remove_dir_all(out.join("tmp"));
    let id = match made? {
        Ok(id) => id,
        Err(reason) => bail!("seed {} rejected: {reason}", seed.display()),
    };
    let programs = Arc::new(Programs::new(store.clone(), 1));
    let loaded = programs.get(&id)?;
    std::fs::write(out.join("seed.c"), loaded.seed.text.as_bytes())?;
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
                variant.set_edits(hermes_variant(&loaded, state.rand_mut()));
                if variant.edits().is_empty() {
                    continue;
                }
            }
            MutatorName::Athena => unreachable!("Athena variants come from a chain"),
        }
        written += 1;
        std::fs::write(
            out.join(format!("variant-{written:04}.c")),
            programs.materialize(&variant)?.as_bytes(),
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
            programs.materialize(&variant)?.as_bytes(),
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
