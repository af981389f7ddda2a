//! `ccfuzz triage OUT`: the campaign's findings triaged into bugs (the `ccfuzz-triage` crate
//! does the work), summarized and printed as a table sorted by findings per bug.

use crate::cli::load_config;
use crate::config::installed::{matrix_versions, versions, which};
use crate::config::Config;
use anyhow::{bail, Context, Result};
use ccfuzz_triage::check::Guard;
use ccfuzz_triage::known::{read_known_bugs, KnownTests};
use ccfuzz_triage::pipeline::{scratch_dir, triage_campaign, Options};
use ccfuzz_triage::reduce::available_reducer;
use ccfuzz_triage::report::table;
use ccfuzz_triage::verdict::Verdict;
use clap::Args;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct TriageArgs {
    /// The campaign directory (its findings/ and seeds/).
    pub out: PathBuf,
    /// The campaign configuration (reference, UB checks, timeouts).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// `cvise`, `creduce` or `none` (edit-list minimization only); default: the first installed.
    #[arg(long)]
    pub reducer: Option<String>,
    /// Processes the reducer may use (default: every core).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Runs of each finding; one that shows on some runs only is flaky.
    #[arg(long, default_value_t = 3)]
    pub runs: u32,
    /// Keep going: triage new findings every this many seconds (what a campaign with
    /// `background_triage = true` runs).
    #[arg(long, conflicts_with = "history")]
    pub watch: Option<u64>,
    #[command(flatten)]
    pub history: super::triage_history::HistoryArgs,
}

impl TriageArgs {
    pub fn run(self) -> Result<()> {
        // Everything triage starts keeps its temporary files where triage can empty them. Set
        // while this process has one thread: the environment is not safe to change beside others.
        // Absolute: scripts run in the reducer's copies of their directory.
        crate::ops::format_version::check(&self.out, "campaign")?;
        let scratch = scratch_dir(&self.out);
        std::fs::create_dir_all(&scratch).with_context(|| format!("cannot create {}", scratch.display()))?;
        std::env::set_var("TMPDIR", scratch.canonicalize()?);
        // A campaign directory records its configuration.
        let config = self
            .config
            .or_else(|| Some(self.out.join("configuration.toml")).filter(|p| p.is_file()));
        let mut config = load_config(config.as_deref())?;
        if self.history.known_bugs.is_some() {
            config.known_bugs = self.history.known_bugs.clone();
        }
        // With a history, the buckets' known bugs are recognized by commit: the reduced tests
        // of the list are not needed to tell them.
        let only = self.history.bucket(&self.out, &config)?;
        if only.is_some() {
            config.known_bugs = None;
        }
        run_triage(
            &self.out,
            &config,
            self.reducer.as_deref(),
            self.jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            self.runs,
            self.watch,
            only,
        )
    }
}

/// The UB guard of a campaign configuration: its reference gives the expected output, its
/// UB-check configurations must agree, and the clang among them gives the clang warnings.
pub fn guard_of(config: &Config) -> Guard {
    let agree: Vec<String> = config.ub_check.iter().map(|c| c.name().to_string()).collect();
    let clang = agree
        .iter()
        .filter_map(|line| line.split_whitespace().next())
        .find(|compiler| compiler.contains("clang"))
        .unwrap_or("clang")
        .to_string();
    Guard {
        reference: config.reference.name().to_string(),
        agree,
        clang,
        compile_timeout: config.compile_timeout.ceil() as u64,
        run_timeout: config.run_timeout.ceil() as u64,
    }
}

/// The compilers a reduced bug is tried with again: of gcc and clang, the newest installed
/// version and the newest Debian-packaged one (on the `PATH`); tcc and pcc; and a current
/// TinyCC build named by `CCFUZZ_TCC_CURRENT` (see the README's triage section).
pub fn newest_compilers() -> Vec<String> {
    let mut newest = Vec::new();
    for family in ["gcc", "clang"] {
        let installed = versions(family);
        let packaged = installed.iter().rev().find(|i| !i.program.contains('/'));
        for found in installed.last().into_iter().chain(packaged) {
            if !newest.contains(&found.program) {
                newest.push(found.program.clone());
            }
        }
    }
    newest.extend(["tcc", "pcc"].into_iter().filter(|p| which(p)).map(String::from));
    if let Some(current) = std::env::var_os("CCFUZZ_TCC_CURRENT") {
        newest.push(current.to_string_lossy().into_owned());
    }
    newest
}

/// Which reducer: the one named (`none` for no text reduction), else the first installed.
pub fn choose_reducer(name: Option<&str>) -> Result<Option<String>> {
    Ok(match name {
        Some("none") => None,
        Some(name) => Some(name.to_string()),
        None => match available_reducer() {
            Some(found) => Some(found.to_string()),
            None => bail!("neither cvise nor creduce is installed (`make deps`), or pass --reducer none"),
        },
    })
}

/// Triages the campaign in `out` once, or, with `watch`, again every `watch` seconds (for
/// findings that arrived meanwhile) until killed. Findings of the configuration's known bugs
/// are counted apart.
pub fn run_triage(
    out: &Path,
    config: &Config,
    reducer: Option<&str>,
    jobs: usize,
    runs: u32,
    watch: Option<u64>,
    only: Option<BTreeSet<String>>,
) -> Result<()> {
    let options = Options {
        guard: guard_of(config),
        reducer: choose_reducer(reducer)?,
        jobs,
        runs: runs.max(1),
        newest: newest_compilers(),
        matrix: ["gcc", "clang"].into_iter().flat_map(matrix_versions).collect(),
        only,
    };
    let mut known = match &config.known_bugs {
        Some(list) => KnownTests::from_list(&read_known_bugs(list)?)?,
        None => KnownTests::default(),
    };
    // A watching triage prints its summary when it changed, not every round: the log stays small.
    let mut last_summary = String::new();
    loop {
        let summary = triage_once(out, &options, &mut known)?;
        if summary != last_summary {
            print!("{summary}");
            last_summary = summary;
        }
        match watch {
            Some(seconds) => std::thread::sleep(std::time::Duration::from_secs(seconds)),
            None => return Ok(()),
        }
    }
}

/// Triages what is new and returns the summary of all of it.
fn triage_once(out: &Path, options: &Options, known: &mut KnownTests) -> Result<String> {
    use std::fmt::Write;
    let (results, bugs) = triage_campaign(out, options, known)?;
    let mut summary = String::new();
    let count = |wanted: fn(&Verdict) -> bool| results.iter().filter(|r| wanted(&r.verdict)).count();
    writeln!(
        summary,
        "{} raw findings: {} reduced, {} duplicates of a reduced one, {} of known bugs, {} flaky, {} rejected by the UB guard, {} not reproduced",
        results.len(),
        count(|v| *v == Verdict::Reduced),
        count(|v| matches!(v, Verdict::Duplicate { .. })),
        count(|v| matches!(v, Verdict::Known { .. })),
        count(|v| matches!(v, Verdict::Flaky { .. })),
        count(|v| *v == Verdict::RejectedByGuard),
        count(|v| *v == Verdict::NotReproduced),
    )?;
    for rejected in results.iter().filter(|r| r.verdict == Verdict::RejectedByGuard) {
        writeln!(
            summary,
            "  {} rejected: {}",
            rejected.finding,
            rejected
                .reason
                .as_deref()
                .unwrap_or("the symptom needs the reference to misbehave")
        )?;
    }
    let mut lines: Vec<usize> = bugs.iter().filter(|b| !b.flaky).map(|b| b.lines).collect();
    lines.sort_unstable();
    writeln!(
        summary,
        "{} distinct bugs in {}; reduced test lines: {:?} ({} of {} at most 40)",
        bugs.len(),
        out.join("triage").join("bugs").display(),
        lines,
        lines.iter().filter(|&&l| l <= 40).count(),
        lines.len(),
    )?;
    summary.push_str(&table(&bugs));
    writeln!(
        summary,
        "triage time: {:.0} s for {} findings (per bug in the table's `triage s` column)",
        results.iter().map(|r| r.seconds).sum::<f64>().max(0.0),
        results.len()
    )?;
    Ok(summary)
}
