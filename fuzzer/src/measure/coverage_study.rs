//! The Hermes coverage study (Figure 7): the lines of a gcov-built compiler that S seeds cover,
//! then the lines the seeds with k = 1, 10, 20… variants each cover, per mutator family.
//! Variants come from `ccfuzz mutate`; the compiler's `.gcda` counters accumulate over every
//! file compiled under one `GCOV_PREFIX`, so one gcov pass gives the union of a file set.

use crate::measure::plot::draw_bars;
use anyhow::{bail, Context, Result};
use ccfuzz_observers::gcov::{gcov_env, take_gcov};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

pub struct CoveragePlan {
    /// The `ccfuzz` binary (for `ccfuzz mutate`).
    pub binary: PathBuf,
    /// A `--coverage` compiler command, e.g. `build/tcc-gcov/tcc -Bbuild/tcc-gcov`.
    pub compiler: String,
    /// The campaign configuration `ccfuzz mutate` profiles seeds with.
    pub config: PathBuf,
    pub seeds: PathBuf,
    pub families: Vec<String>,
    /// Variants per seed, ascending.
    pub ks: Vec<usize>,
    pub out: PathBuf,
}

/// Lines of the compiler covered by compiling all of `files` (each with `-c`).
fn lines_covered(compiler: &str, files: &[PathBuf], scratch: &Path) -> Result<usize> {
    let prefix = scratch.join("gcov");
    let _ = std::fs::remove_dir_all(&prefix);
    std::fs::create_dir_all(&prefix)?;
    let words: Vec<&str> = compiler.split_whitespace().collect();
    let (program, args) = words.split_first().context("empty compiler command")?;
    for file in files {
        // Compile failures still cover compiler code: the status does not matter.
        Command::new(program)
            .args(args)
            .args(["-I/usr/include/csmith", "-w", "-c"])
            .arg(file)
            .arg("-o")
            .arg(scratch.join("object.o"))
            .envs(gcov_env(&prefix))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .with_context(|| format!("cannot run {compiler}"))?;
    }
    Ok(take_gcov(&prefix, "gcov")?.lines_covered())
}

/// Runs the study; returns the Markdown report (also in `out/report.md`, with `coverage.csv`
/// and `coverage.{png,svg}`).
pub fn coverage_experiment(plan: &CoveragePlan) -> Result<String> {
    crate::ops::format_version::claim(&plan.out, "experiment")?;
    let scratch = plan.out.join("scratch");
    std::fs::create_dir_all(&scratch)?;
    let mut seeds: Vec<PathBuf> = std::fs::read_dir(&plan.seeds)
        .with_context(|| format!("cannot read {}", plan.seeds.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "c"))
        .collect();
    seeds.sort();
    if seeds.is_empty() {
        bail!("no .c seed in {}", plan.seeds.display());
    }
    let k_max = *plan.ks.iter().max().context("no k")?;
    let baseline = lines_covered(&plan.compiler, &seeds, &scratch)?;
    let mut csv = String::from("family,k,variants,lines,gain\n");
    writeln!(csv, "seeds,0,0,{baseline},0")?;
    let mut gains = Vec::new();
    for family in &plan.families {
        // variants[i]: the variants of seed i, in the order the mutator made them.
        let mut variants: Vec<Vec<PathBuf>> = Vec::new();
        for (index, seed) in seeds.iter().enumerate() {
            let dir = plan.out.join("variants").join(family).join(index.to_string());
            let status = Command::new(&plan.binary)
                .args(["mutate", "--mutator", family, "-n", &k_max.to_string(), "--seed"])
                .arg(seed)
                .arg("--out")
                .arg(&dir)
                .arg("--config")
                .arg(&plan.config)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            let mut made: Vec<PathBuf> = std::fs::read_dir(&dir)
                .map(|d| {
                    d.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| {
                            p.file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with("variant-"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            made.sort();
            if !status.success() {
                log::warn!("{family} made {} variants of {} ({status})", made.len(), seed.display());
            }
            variants.push(made);
        }
        let mut row = Vec::new();
        for &k in &plan.ks {
            let mut files = seeds.clone();
            files.extend(variants.iter().flat_map(|v| v.iter().take(k).cloned()));
            let lines = lines_covered(&plan.compiler, &files, &scratch)?;
            let gain = lines as f64 - baseline as f64;
            writeln!(csv, "{family},{k},{},{lines},{gain}", files.len() - seeds.len())?;
            row.push(gain.max(0.0));
        }
        gains.push((family.clone(), row));
    }
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::write(plan.out.join("coverage.csv"), &csv)?;
    let mut md = format!(
        "# Compiler coverage of seeds and their variants\n\n- compiler: `{}`\n- {} seeds from {}: {baseline} lines\n\n| family | k | variants | lines | gain |\n|---|---:|---:|---:|---:|\n",
        plan.compiler,
        seeds.len(),
        plan.seeds.display()
    );
    for line in csv.lines().skip(1) {
        writeln!(md, "| {} |", line.replace(',', " | "))?;
    }
    std::fs::write(plan.out.join("report.md"), &md)?;
    draw_bars(
        &plan.out.join("coverage"),
        &format!("lines gained over {} seeds ({baseline} lines)", seeds.len()),
        "lines gained",
        &plan.ks.iter().map(|k| format!("k = {k}")).collect::<Vec<_>>(),
        &gains,
    )?;
    Ok(md)
}
