//! [`SeedGenerator`]: new seeds in a running campaign, from csmith or Orange (new programs, or
//! the previous one changed by an Orange mutator), a directory's files, or a weighted mix of
//! these, profiled and stored.

use crate::ops::shutdown;
use crate::seeds::directory::c_files;
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
use libafl_bolts::rands::{Rand, StdRand};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where generated seed programs come from.
pub enum ProgramSource {
    /// csmith, with the random numbers its seeds are drawn from.
    Csmith(StdRand),
    /// Orange programs: new ones, or the previous one changed by an Orange mutator (its expected
    /// values stay exact).
    Orange {
        generator: OrangeGenerator,
        mutators: Vec<OrangeMutator>,
        last: Option<OrangeProgram>,
    },
    /// This client's share of a directory's C files, in order, each once (repaired as
    /// [`crate::seeds::repair`] says, with `X.expect` as its expected output when present).
    Directory { files: Vec<PathBuf>, next: usize },
    /// One of these sources per program, drawn in proportion to the weights.
    Mixed(Vec<(ProgramSource, f64)>),
}

impl ProgramSource {
    pub fn orange(options: GenOptions) -> Self {
        ProgramSource::Orange {
            generator: OrangeGenerator { options },
            mutators: Change::ALL.map(|c| OrangeMutator::new(c, options)).into(),
            last: None,
        }
    }

    /// Client `client` of `clients`: its share of the `.c` files of `dir`, sorted by name.
    pub fn directory(dir: &Path, client: usize, clients: usize) -> Result<Self> {
        let files = c_files(dir)?
            .into_iter()
            .enumerate()
            .filter(|(index, _)| index % clients.max(1) == client % clients.max(1))
            .map(|(_, file)| file)
            .collect();
        Ok(ProgramSource::Directory { files, next: 0 })
    }

    /// Whether every program of the source has been taken.
    fn exhausted(&self) -> bool {
        match self {
            ProgramSource::Csmith(_) | ProgramSource::Orange { .. } => false,
            ProgramSource::Directory { files, next } => *next >= files.len(),
            ProgramSource::Mixed(sources) => sources.iter().all(|(source, _)| source.exhausted()),
        }
    }

    /// The next program: its text, where it came from, and its structure when it is an Orange
    /// program.
    fn next<S: HasRand + HasMetadata>(&mut self, maker: &SeedMaker, state: &mut S) -> Result<GeneratedProgram, Error> {
        match self {
            ProgramSource::Mixed(sources) => {
                let live: Vec<usize> = (0..sources.len())
                    .filter(|&i| sources[i].1 > 0.0 && !sources[i].0.exhausted())
                    .collect();
                let total: f64 = live.iter().map(|&i| sources[i].1).sum();
                let Some(&last) = live.last() else {
                    return Err(Error::empty("every seed source of the mix is used up"));
                };
                let unit = (state.rand_mut().next() >> 11) as f64 / (1u64 << 53) as f64;
                let mut draw = unit * total;
                let chosen = live
                    .iter()
                    .copied()
                    .find(|&i| {
                        draw -= sources[i].1;
                        draw < 0.0
                    })
                    .unwrap_or(last);
                sources[chosen].0.next(maker, state)
            }
            ProgramSource::Directory { files, next } => loop {
                let Some(file) = files.get(*next) else {
                    return Err(Error::empty("the seed directory is used up"));
                };
                *next += 1;
                match std::fs::read_to_string(file) {
                    Ok(text) => {
                        break Ok(GeneratedProgram {
                            text,
                            origin: file.display().to_string(),
                            orange: None,
                            file: Some(file.clone()),
                        })
                    }
                    // A bad file is a rejected seed (a test in Latin-1), not a failure of ours.
                    Err(e) => {
                        state.metadata_or_insert_with(SeedProgress::default).rejected += 1;
                        log::info!("seed `{}` rejected: unreadable: {e}", file.display());
                    }
                }
            },
            ProgramSource::Csmith(rand) => {
                let random_seed = rand.next() >> 1;
                let (text, origin) = maker
                    .csmith(random_seed)
                    .map_err(|e| Error::illegal_state(format!("{e:#}")))?;
                Ok(GeneratedProgram {
                    text,
                    origin,
                    orange: None,
                    file: None,
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
                    file: None,
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
    /// The file it was read from, which [`SeedMaker::make_file`] takes with its neighbours.
    file: Option<PathBuf>,
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
            if self.programs.exhausted() {
                return Err(Error::empty("every seed source is used up"));
            }
            let made = self.programs.next(&self.maker, state).and_then(|generated| {
                let made = match &generated.file {
                    Some(file) => self.maker.make_file(file, &generated.text).map(|(made, _)| made),
                    None => {
                        let oracle = generated.orange.as_ref().map(|program| program.expected_output());
                        self.maker.make_with_oracle(
                            &generated.text,
                            &generated.origin,
                            oracle.as_deref().map(str::as_bytes),
                        )
                    }
                }
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
                Ok((Ok(id), origin)) => {
                    progress.generated += 1;
                    log::info!("seed {id} made from `{origin}`");
                    return Ok(Variant::of_seed(id));
                }
                Ok((Err(reason), origin)) => {
                    progress.rejected += 1;
                    log::info!("seed `{origin}` rejected: {reason}");
                }
                Err(_) if shutdown::requested() => return Err(Error::shutting_down()),
                Err(e) => log::error!("cannot make a seed: {e}"),
            }
        }
        Err(Error::illegal_state(format!(
            "no acceptable seed was generated in {} attempts",
            self.attempts
        )))
    }
}
