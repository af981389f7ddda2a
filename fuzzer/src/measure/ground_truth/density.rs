//! Where on a compiler's history plain csmith meets bugs: how many of a pool of vetted csmith
//! programs the compiler, built at each given revision, rejects or miscompiles. That tells
//! where the ground-truth benchmark can start. The pool (csmith `--no-packed-struct`, seeds
//! from 1001, the programs the reference and the first UB-check configuration compile, run and
//! agree on) is kept in a directory with the reference's outcome of each, so it is made once;
//! the builds go through the history's cache.

use super::classify::compile_and_run_once;
use super::history::History;
use crate::config::{CompilerConfig, Config};
use anyhow::{bail, Context, Result};
use ccfuzz_observers::ConfigOutcome;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Everything the survey needs.
pub struct DensityPlan {
    /// The compiler's git directory (TinyCC or pcc).
    pub history: PathBuf,
    /// Options the compiler is run with (pcc's `-O`).
    pub options: String,
    pub revisions: Vec<String>,
    /// Programs in the pool.
    pub programs: usize,
    /// Where the pool is kept.
    pub pool: PathBuf,
    pub build_cache: PathBuf,
    /// Reference, UB check, timeouts and csmith's header directory.
    pub config: Config,
}

/// The first csmith seed of the pool.
const FIRST_SEED: u64 = 1001;

/// Runs the survey: a line per revision, `REV HASH FAILED/PROGRAMS program…`, where a program
/// the compiler does not compile is marked `:rejected`.
pub fn density(plan: &DensityPlan) -> Result<String> {
    let Some(vetting) = plan.config.ub_check.first() else {
        bail!("the configuration has no ub_check configuration to vet the pool with");
    };
    std::fs::create_dir_all(&plan.pool).with_context(|| format!("cannot create {}", plan.pool.display()))?;
    let pool = plan.pool.canonicalize()?;
    let include = format!("-I{}", plan.config.csmith_include);
    let with_include = |config: &CompilerConfig| CompilerConfig::new(format!("{} {include}", config.name()));
    let reference = with_include(&plan.config.reference);
    let vetting = with_include(vetting);
    let run = |compiler: &CompilerConfig, program: &Path| {
        compile_and_run_once(compiler, program, &plan.config, plan.config.seed_timeout())
    };
    let mut programs: Vec<(PathBuf, ConfigOutcome)> = Vec::new();
    let mut seed = FIRST_SEED;
    while programs.len() < plan.programs {
        let source = pool.join(format!("p{seed}.c"));
        let expected = source.with_extension("ref.json");
        seed += 1;
        if let Ok(text) = std::fs::read(&expected) {
            programs.push((source, serde_json::from_slice(&text)?));
            continue;
        }
        if source.with_extension("unfit").exists() {
            continue;
        }
        let generated = Command::new("csmith")
            .args(["--no-packed-struct", "--seed", &(seed - 1).to_string(), "-o"])
            .arg(&source)
            .output()
            .context("cannot run csmith")?;
        let outcome = match generated.status.success() {
            true => Some(run(&reference, &source)?),
            false => None,
        };
        let agreed = match outcome {
            Some(outcome @ ConfigOutcome::Ran { .. }) => (run(&vetting, &source)? == outcome).then_some(outcome),
            _ => None,
        };
        if let Some(outcome) = agreed {
            std::fs::write(&expected, serde_json::to_vec(&outcome)?)?;
            programs.push((source, outcome));
        } else {
            // Kept as a mark, so that the pool is not vetted again.
            std::fs::write(source.with_extension("unfit"), "")?;
            let _ = std::fs::remove_file(&source);
        }
    }
    let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut report = String::new();
    for rev in &plan.revisions {
        let history = History::open(&plan.history, rev, rev, &plan.build_cache, jobs, &plan.options)?;
        let hash = &history.commits[0].hash[..8];
        let Some(build) = history.build(0)? else {
            writeln!(report, "{rev} {hash} does not build")?;
            continue;
        };
        let compiler = CompilerConfig::new(format!("{} {include}", build.command_line()));
        let mut failed = Vec::new();
        for (program, expected) in &programs {
            let name = program.file_stem().unwrap_or_default().to_string_lossy().into_owned();
            match run(&compiler, program)? {
                ConfigOutcome::Rejected { .. } => failed.push(format!("{name}:rejected")),
                outcome if outcome != *expected => failed.push(name),
                _ => {}
            }
        }
        let line = format!("{rev} {hash} {}/{} {}", failed.len(), programs.len(), failed.join(" "));
        log::info!("{line}");
        writeln!(report, "{}", line.trim_end())?;
    }
    Ok(report)
}
