//! A directory of C files profiled into the seed store, each rejection reported on one line.
//! `X.expect` beside `X.c` is what X must print (with exit status 0): a test suite's expected
//! output, or an empty file for self-checking tests such as GCC's torture tests. Pre-C99
//! programs are repaired first ([`crate::seeds::repair`]).

use crate::config::Config;
use crate::seeds::SeedMaker;
use anyhow::{Context, Result};
use ccfuzz_mutators::seed::SeedStore;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Profiles every `.c` file of `dir` into the store, reporting rejections one line each.
pub fn profile_directory(config: &Config, store: &SeedStore, dir: &Path, workdir: &Path) -> Result<(usize, usize)> {
    let mut maker = SeedMaker::new(config.clone(), store.clone(), workdir.to_path_buf())?;
    let files = c_files(dir)?;
    let (mut accepted, mut rejected) = (0, 0);
    let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
    for file in files {
        let source = match std::fs::read_to_string(&file) {
            Ok(s) => s,
            Err(e) => {
                println!("seed {}: rejected: unreadable: {e}", file.display());
                rejected += 1;
                continue;
            }
        };
        let (made, repairs) = maker.make_file(&file, &source)?;
        let repairs = if repairs.is_empty() {
            String::new()
        } else {
            format!(" (repaired: {})", repairs.join(", "))
        };
        match made {
            Ok(id) => {
                println!("seed {}: accepted as {id}{repairs}", file.display());
                accepted += 1;
            }
            Err(reason) => {
                println!("seed {}: rejected: {reason}{repairs}", file.display());
                *reasons.entry(reason.class()).or_default() += 1;
                rejected += 1;
            }
        }
    }
    println!("seeds: {accepted} accepted, {rejected} rejected");
    if !reasons.is_empty() {
        let counts: Vec<String> = reasons.iter().map(|(class, n)| format!("{class} {n}")).collect();
        println!("rejections: {}", counts.join(", "));
    }
    println!("seed making: {}", maker.timing.describe());
    Ok((accepted, rejected))
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
