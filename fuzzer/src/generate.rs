//! `ccfuzz generate orange`: Orange programs written as C files, each with the output it must
//! print, and a summary of their sizes and of the undefined behaviour removed.

use anyhow::{Context, Result};
use ccfuzz_orange::{generate, GenOptions};
use libafl_bolts::rands::StdRand;
use std::path::Path;

/// Writes `count` programs `orange-NNNNN.c` (and `.expected`, their output) into `out`.
pub fn write_orange(count: usize, out: &Path, random_seed: u64, options: GenOptions) -> Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut rand = StdRand::with_seed(random_seed);
    let (mut operators, mut inserted, mut flipped) = (0usize, 0usize, 0usize);
    for n in 0..count {
        let program = generate(options, &mut rand);
        operators += program.size();
        inserted += program.inserted;
        flipped += program.flipped;
        let stem = out.join(format!("orange-{n:05}"));
        std::fs::write(stem.with_extension("c"), program.to_c())?;
        std::fs::write(stem.with_extension("expected"), program.expected_output())?;
    }
    let generated = operators.saturating_sub(inserted);
    println!(
        "wrote {count} programs to {}: {operators} operators, {inserted} inserted and {flipped} flipped to remove undefined behaviour ({:.2}% extra operations)",
        out.display(),
        100.0 * inserted as f64 / generated.max(1) as f64
    );
    Ok(())
}
