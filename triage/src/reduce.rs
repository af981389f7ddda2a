//! Text reduction with cvise, or creduce when cvise is missing, driven by the interestingness
//! script of `check`.

use anyhow::{bail, Context, Result};
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// The reducers triage can drive, in order of preference.
pub const REDUCERS: [&str; 2] = ["cvise", "creduce"];

/// The first installed reducer.
pub fn available_reducer() -> Option<&'static str> {
    REDUCERS.into_iter().find(|name| {
        Command::new(name)
            .arg("--help")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// Reduces `file` in place with `reducer` (`cvise` or `creduce`) under `script`, on `jobs`
/// processes. `timeout` bounds one run of the script (a reduction step that makes the program
/// loop forever must not stall the reduction). `quick_hang` runs the script with
/// `CCFUZZ_QUICK_HANG`: a binary that does not terminate is told after a multiple of the
/// reference's run time instead of the whole run limit.
pub fn reduce(
    reducer: &str,
    script: &Path,
    file: &Path,
    jobs: usize,
    timeout: Duration,
    quick_hang: bool,
) -> Result<()> {
    // The reducer runs the script in copies of the file's directory: the path must be absolute.
    let script = script
        .canonicalize()
        .with_context(|| format!("no script {}", script.display()))?;
    let dir = file.parent().context("the file to reduce has no directory")?;
    if !REDUCERS.contains(&reducer) {
        bail!("unknown reducer {reducer}");
    }
    // cvise and creduce take the same options.
    let mut command = Command::new(reducer);
    command
        .current_dir(dir)
        .args(["--n", &jobs.to_string(), "--tidy", "--timeout"])
        .arg(timeout.as_secs().max(1).to_string());
    if quick_hang {
        command.env("CCFUZZ_QUICK_HANG", "1");
    }
    let log = dir.join(format!("{reducer}.log"));
    let log_file = fs::File::create(&log).with_context(|| format!("cannot create {}", log.display()))?;
    let status = command
        .arg(&script)
        .arg(file.file_name().context("the file to reduce has no name")?)
        .stdin(Stdio::null())
        .stdout(log_file.try_clone()?)
        .stderr(log_file)
        .status()
        .with_context(|| format!("cannot start {reducer}"))?;
    if !status.success() {
        let tail: String = fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .join(" / ");
        bail!("{reducer} failed ({status}): {tail}");
    }
    Ok(())
}

/// Lines that hold something other than white space.
pub fn line_count(text: &str) -> usize {
    text.lines().filter(|l| !l.trim().is_empty()).count()
}
