//! A directory of C files profiled into the seed store, each rejection reported on one line.
//! `X.expect` beside `X.c` is what X must print (with exit status 0): a test suite's expected
//! output, or an empty file for self-checking tests such as GCC's torture tests. Pre-C99
//! programs are repaired first ([`crate::seeds::repair`]).

use crate::config::Config;
use crate::ops::shutdown;
use crate::seeds::{Rejection, SeedMaker, SeedTiming, Vetted};
use anyhow::{Context, Result};
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Profiles every `.c` file of `dir` into the store on `jobs` threads (each with its own seed
/// maker and scratch directory under `workdir`), reporting each verdict on one line as it comes
/// and the counts at the end. Stops between files when a stop is requested.
pub fn profile_directory(
    config: &Config,
    store: &SeedStore,
    dir: &Path,
    workdir: &Path,
    jobs: usize,
) -> Result<(usize, usize)> {
    let files = c_files(dir)?;
    let next_file = AtomicUsize::new(0);
    let tally = Mutex::new(Tally::default());
    let timings = std::thread::scope(|scope| {
        let (files, next_file, tally) = (&files, &next_file, &tally);
        let workers: Vec<_> = (0..jobs.clamp(1, files.len().max(1)))
            .map(|job| {
                scope.spawn(move || -> Result<SeedTiming> {
                    let mut maker = SeedMaker::new(config.clone(), store.clone(), workdir.join(format!("job-{job}")))?;
                    while let Some(file) = files.get(next_file.fetch_add(1, Ordering::Relaxed)) {
                        if shutdown::requested() {
                            break;
                        }
                        let verdict = vet_file(&mut maker, file)?;
                        tally
                            .lock()
                            .expect("no job panics holding the tally")
                            .record(file, verdict);
                    }
                    Ok(maker.timing)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|worker| worker.join().expect("a seed-making job panicked"))
            .collect::<Result<Vec<SeedTiming>>>()
    })?;
    let tally = tally.into_inner().expect("no job panicked");
    println!("seeds: {} accepted, {} rejected", tally.accepted, tally.rejected);
    if !tally.reasons.is_empty() {
        let counts: Vec<String> = tally.reasons.iter().map(|(class, n)| format!("{class} {n}")).collect();
        println!("rejections: {}", counts.join(", "));
    }
    let timing = timings.iter().fold(SeedTiming::default(), |sum, t| sum.plus(t));
    println!("seed making: {}", timing.describe());
    Ok((tally.accepted, tally.rejected))
}

/// A file's verdict, and the repairs made before it.
type FileVerdict = (Vetted<SeedId>, Vec<String>);

fn vet_file(maker: &mut SeedMaker, file: &Path) -> Result<FileVerdict> {
    match std::fs::read_to_string(file) {
        Ok(source) => maker.make_file(file, &source),
        Err(e) => Ok((Err(Rejection::Unreadable(e.to_string())), Vec::new())),
    }
}

#[derive(Default)]
struct Tally {
    accepted: usize,
    rejected: usize,
    reasons: BTreeMap<&'static str, usize>,
}

impl Tally {
    fn record(&mut self, file: &Path, (made, repairs): FileVerdict) {
        let repairs = if repairs.is_empty() {
            String::new()
        } else {
            format!(" (repaired: {})", repairs.join(", "))
        };
        match made {
            Ok(id) => {
                println!("seed {}: accepted as {id}{repairs}", file.display());
                self.accepted += 1;
            }
            Err(reason) => {
                println!("seed {}: rejected: {reason}{repairs}", file.display());
                *self.reasons.entry(reason.class()).or_default() += 1;
                self.rejected += 1;
            }
        }
    }
}

/// The `.c` files of `dir`, sorted by name.
pub fn c_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot read seed directory {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    Ok(files)
}
