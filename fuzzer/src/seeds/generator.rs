//! [`SeedGenerator`]: new seeds in a running campaign, from csmith or Orange (new programs, or
//! the previous one changed by an Orange mutator), profiled and stored.

use crate::ops::shutdown;
use crate::seeds::SeedMaker;
use anyhow::Result;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_orange::{Change, GenOptions, OrangeGenerator, OrangeMutator, OrangeProgram};
use libafl::generators::Generator;
use libafl::inputs::Input;
use libafl::mutators::Mutator;
use libafl::state::HasRand;
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use libafl_bolts::rands::Rand;
use serde::{Deserialize, Serialize};

/// Where generated seed programs come from.
pub enum ProgramSource {
    Csmith,
    /// Orange programs: new ones, or the previous one changed by an Orange mutator (its expected
    /// values stay exact).
    Orange {
        generator: OrangeGenerator,
        mutators: Vec<OrangeMutator>,
        last: Option<OrangeProgram>,
    },
}

impl ProgramSource {
    pub fn orange(options: GenOptions) -> Self {
        ProgramSource::Orange {
            generator: OrangeGenerator { options },
            mutators: Change::ALL.map(|c| OrangeMutator::new(c, options)).into(),
            last: None,
        }
    }

    /// The next program: its text, where it came from, and its structure when it is an Orange
    /// program.
    fn next<S: HasRand>(&mut self, maker: &SeedMaker, state: &mut S) -> Result<GeneratedProgram, Error> {
        match self {
            ProgramSource::Csmith => {
                let random_seed = state.rand_mut().next() >> 1;
                let (text, origin) = maker
                    .csmith(random_seed)
                    .map_err(|e| Error::illegal_state(format!("{e:#}")))?;
                Ok(GeneratedProgram {
                    text,
                    origin,
                    orange: None,
                })
            }
            ProgramSource::Orange {
                generator,
                mutators,
                last,
            } => {
                let program = match last.take() {
                    Some(mut previous) if state.rand_mut().coinflip(0.5) => {
                        let index = state.rand_mut().below_or_zero(mutators.len());
                        mutators[index].mutate(state, &mut previous)?;
                        previous
                    }
                    _ => generator.generate(state)?,
                };
                let generated = GeneratedProgram {
                    text: program.to_c(),
                    origin: format!("orange {}", program.generate_name(None)),
                    orange: Some(program.clone()),
                };
                *last = Some(program);
                Ok(generated)
            }
        }
    }
}

/// A program made by a [`ProgramSource`].
struct GeneratedProgram {
    text: String,
    origin: String,
    orange: Option<OrangeProgram>,
}

/// Stores an Orange seed's structure next to it: the seed text is normalized, so triage
/// minimizes the program from this and not from the text.
pub fn store_orange_program(store: &SeedStore, id: &SeedId, program: &OrangeProgram) -> Result<()> {
    store.put_orange_program(id, &serde_json::to_string(program)?)
}

/// A LibAFL generator of seeds: generated programs, profiled and stored; a rejected program
/// (undefined behaviour, no termination) is reported and the next one is tried.
pub struct SeedGenerator {
    pub(crate) maker: SeedMaker,
    pub(crate) programs: ProgramSource,
    pub(crate) attempts: u32,
}

/// How many programs this client generated as seeds and how many of them were rejected.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct SeedProgress {
    pub generated: u64,
    pub rejected: u64,
}
impl_serdeany!(SeedProgress);

impl<S: HasRand + HasMetadata> Generator<Variant, S> for SeedGenerator {
    fn generate(&mut self, state: &mut S) -> Result<Variant, Error> {
        for _ in 0..self.attempts {
            if shutdown::requested() {
                return Err(Error::shutting_down());
            }
            let made = self.programs.next(&self.maker, state).and_then(|generated| {
                let oracle = generated.orange.as_ref().map(|program| program.expected_output());
                let made = self
                    .maker
                    .make_with_oracle(&generated.text, &generated.origin, oracle.as_deref().map(str::as_bytes))
                    .map_err(|e| Error::illegal_state(format!("{e:#}")))?;
                if let (Ok(id), Some(program)) = (&made, &generated.orange) {
                    // The seed stands without it; only its triage is poorer.
                    if let Err(e) = store_orange_program(self.maker.store(), id, program) {
                        log::warn!("seed {id}: {e:#}");
                    }
                }
                Ok((made, generated.origin))
            });
            let progress = state.metadata_or_insert_with(SeedProgress::default);
            match made {
                Ok((Ok(id), _)) => {
                    progress.generated += 1;
                    return Ok(Variant::of_seed(id));
                }
                Ok((Err(reason), origin)) => {
                    progress.rejected += 1;
                    log::info!("seed `{origin}` rejected: {reason}");
                }
                Err(e) => log::error!("cannot make a seed: {e}"),
            }
        }
        Err(Error::illegal_state(format!(
            "no acceptable seed was generated in {} attempts",
            self.attempts
        )))
    }
}
