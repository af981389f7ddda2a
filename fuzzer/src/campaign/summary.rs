//! The campaign's closing words: once every client has stopped, the scratch directory is
//! removed and a summary printed from the client reports written in this run.

use crate::campaign::client_report::ClientReport;
use crate::ops::shutdown::stopped_early;
use crate::ops::status::compact_duration;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Once every client has stopped: removes the scratch directory `tmp` and prints the summary.
pub fn finish(out: &Path, tmp: &Path, started: SystemTime) {
    if let Err(e) = std::fs::remove_dir_all(tmp) {
        if e.kind() != std::io::ErrorKind::NotFound {
            log::warn!("cannot remove {}: {e}", tmp.display());
        }
    }
    // On a terminal the summary replaces the last status line.
    use std::io::IsTerminal;
    let clear = if std::io::stdout().is_terminal() {
        "\r\x1b[2K"
    } else {
        ""
    };
    println!("{clear}{}", summary(out, started));
}

/// What the launcher prints when the campaign has stopped: why, how long it ran, and what the
/// client reports written since `started` and the output directory hold.
pub fn summary(out: &Path, started: SystemTime) -> String {
    let reason = if stopped_early() {
        "stopped on request"
    } else {
        "finished"
    };
    let elapsed = started.elapsed().unwrap_or(Duration::ZERO);
    let executions: u64 = std::fs::read_dir(out.join("clients"))
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok())
        .filter(|entry| {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .is_ok_and(|modified| modified >= started)
        })
        .filter_map(|entry| std::fs::read(entry.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<ClientReport>(&bytes).ok())
        .map(|report| report.executions)
        .sum();
    let visible_entries = |dir: &str| {
        std::fs::read_dir(out.join(dir))
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.ok())
            .filter(|entry| !entry.file_name().to_string_lossy().starts_with('.'))
            .count()
    };
    format!(
        "campaign {reason} after {}: {executions} executions in this run, {} corpus entries, {} findings in {}",
        compact_duration(elapsed),
        visible_entries("corpus"),
        visible_entries("findings"),
        out.display()
    )
}
