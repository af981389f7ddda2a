//! `ccfuzz seeds`: programs profiled into a seed store (a directory of C files, or csmith
//! programs), each rejection printed with its reason.

use crate::cli::load_config;
use crate::seeds::{profile_directory, SeedMaker};
use anyhow::Result;
use ccfuzz_mutators::seed::SeedStore;
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct SeedsArgs {
    /// The seed store (a campaign's is OUT/seeds).
    #[arg(long)]
    pub store: PathBuf,
    /// Profile every .c file of this directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Generate and profile this many csmith programs.
    #[arg(long)]
    pub csmith: Option<u64>,
    /// First csmith random seed (the others follow).
    #[arg(long, default_value_t = 1)]
    pub first_seed: u64,
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Seeds of --dir vetted at once (default: one per core).
    #[arg(long)]
    pub jobs: Option<usize>,
}

impl SeedsArgs {
    pub fn run(self) -> Result<()> {
        let config = load_config(self.config.as_deref())?;
        let seed_store = SeedStore::open(&self.store)?;
        // Several `ccfuzz seeds` may fill one store at once: each gets its own scratch.
        let workdir = self.store.join(format!(".tmp-{}", std::process::id()));
        if let Some(dir) = &self.dir {
            let jobs = self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
            profile_directory(&config, &seed_store, dir, &workdir, jobs)?;
        }
        if let Some(count) = self.csmith {
            let mut maker = SeedMaker::new(config, seed_store, workdir.clone())?;
            let (mut accepted, mut rejected) = (0, 0);
            for random_seed in self.first_seed..self.first_seed + count {
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
            println!("seed making: {}", maker.timing.describe());
        }
        let _ = std::fs::remove_dir_all(&workdir);
        Ok(())
    }
}
