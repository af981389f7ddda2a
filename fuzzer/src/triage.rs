//! `ccfuzz triage OUT`: the campaign's findings triaged into bugs (the `ccfuzz-triage` crate
//! does the work), summarized and printed as a table sorted by findings per bug.

use crate::config::Config;
use anyhow::{bail, Context, Result};
use ccfuzz_triage::check::Guard;
use ccfuzz_triage::pipeline::{triage_campaign, Options, Verdict};
use ccfuzz_triage::reduce::available_reducer;
use ccfuzz_triage::report::table;
use std::path::Path;

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
/// findings that arrived meanwhile) until killed.
pub fn run_triage(
    out: &Path,
    config: &Config,
    reducer: Option<&str>,
    jobs: usize,
    runs: u32,
    watch: Option<u64>,
) -> Result<()> {
    let options = Options {
        guard: guard_of(config),
        reducer: choose_reducer(reducer)?,
        jobs,
        runs: runs.max(1),
    };
    loop {
        triage_once(out, &options)?;
        match watch {
            Some(seconds) => std::thread::sleep(std::time::Duration::from_secs(seconds)),
            None => return Ok(()),
        }
    }
}

fn triage_once(out: &Path, options: &Options) -> Result<()> {
    let (results, bugs) = triage_campaign(out, options)?;
    let count = |wanted: fn(&Verdict) -> bool| results.iter().filter(|r| wanted(&r.verdict)).count();
    println!(
        "{} raw findings: {} reduced, {} flaky, {} rejected by the UB guard, {} not reproduced",
        results.len(),
        count(|v| *v == Verdict::Reduced),
        count(|v| matches!(v, Verdict::Flaky { .. })),
        count(|v| *v == Verdict::RejectedByGuard),
        count(|v| *v == Verdict::NotReproduced),
    );
    for rejected in results.iter().filter(|r| r.verdict == Verdict::RejectedByGuard) {
        println!(
            "  {} rejected: {}",
            rejected.finding,
            rejected
                .reason
                .as_deref()
                .unwrap_or("the symptom needs the reference to misbehave")
        );
    }
    let mut lines: Vec<usize> = bugs.iter().filter(|b| !b.flaky).map(|b| b.lines).collect();
    lines.sort_unstable();
    println!(
        "{} distinct bugs in {}; reduced test lines: {:?} ({} of {} at most 40)",
        bugs.len(),
        out.join("triage").join("bugs").display(),
        lines,
        lines.iter().filter(|&&l| l <= 40).count(),
        lines.len(),
    );
    print!("{}", table(&bugs));
    Ok(())
}

/// `ccfuzz triage OUT --watch` started by a campaign: its own process group at the lowest
/// priority, so reductions take only idle CPU and stop with the campaign.
pub struct BackgroundTriage {
    child: std::process::Child,
    /// The campaign process that started it; forked clients must not stop it.
    owner: u32,
}

impl BackgroundTriage {
    pub fn start(out: &Path) -> Result<Self> {
        use std::os::unix::process::CommandExt;
        let exe = std::env::current_exe().context("cannot find the ccfuzz binary")?;
        let log = std::fs::File::create(out.join("triage.log")).context("cannot create triage.log")?;
        let child = std::process::Command::new("nice")
            .args(["-n", "19"])
            .arg(exe)
            .arg("triage")
            .arg(out)
            .arg("--config")
            .arg(out.join("configuration.toml"))
            .args(["--watch", "60"])
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .process_group(0)
            .spawn()
            .context("cannot start background triage")?;
        log::info!(
            "background triage started (pid {}), log in {}",
            child.id(),
            out.join("triage.log").display()
        );
        Ok(BackgroundTriage {
            child,
            owner: std::process::id(),
        })
    }

    /// Stops the triage process and the reducers it started (its process group).
    pub fn stop(mut self) {
        if std::process::id() != self.owner {
            return;
        }
        let group = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::killpg(group, nix::sys::signal::Signal::SIGKILL);
        let _ = self.child.wait();
    }
}
