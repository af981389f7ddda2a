//! The campaign's status line: a LibAFL `Monitor` that prints one compact line aggregated over
//! all clients, rewritten in place on a terminal and printed as a plain line at a slower pace
//! when stdout is a log file.

use ccfuzz_mutators::seed::SeedStore;
use libafl::monitors::stats::{ClientStatsManager, UserStatsValue};
use libafl::monitors::Monitor;
use libafl::Error;
use libafl_bolts::ClientId;
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::{Duration, Instant};

/// Seconds between lines when stdout is not a terminal, unless `--status-interval` says.
pub const LOG_INTERVAL: Duration = Duration::from_secs(10);
/// Seconds between rewrites of the line on a terminal, unless `--status-interval` says.
pub const TERMINAL_INTERVAL: Duration = Duration::from_secs(1);

/// What the status line shows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    pub run_time: Duration,
    pub executions: u64,
    pub executions_per_second: f64,
    pub corpus: u64,
    pub findings: u64,
    /// Compiler coverage and distinct counters, by short name (`edges`, `lines`, `counters`),
    /// when configurations observe them.
    pub observed: Vec<(String, u64)>,
    pub acceptance: Option<f64>,
    pub seeds: Option<usize>,
    /// Variants the validity gate stopped (shown once there is one).
    pub invalid: u64,
}

/// `45s`, `12m05s`, `3h07m`, `2d05h`.
pub fn compact_duration(duration: Duration) -> String {
    let seconds = duration.as_secs();
    let (minutes, hours, days) = (seconds / 60, seconds / 3600, seconds / 86400);
    match () {
        _ if days > 0 => format!("{days}d{:02}h", hours % 24),
        _ if hours > 0 => format!("{hours}h{:02}m", minutes % 60),
        _ if minutes > 0 => format!("{minutes}m{:02}s", seconds % 60),
        _ => format!("{seconds}s"),
    }
}

pub fn status_line(figures: &Figures) -> String {
    let mut line = format!(
        "{}  {} execs ({:.1}/s)  corpus {}  findings {}",
        compact_duration(figures.run_time),
        figures.executions,
        figures.executions_per_second,
        figures.corpus,
        figures.findings
    );
    if figures.invalid > 0 {
        line.push_str(&format!("  invalid {}", figures.invalid));
    }
    for (name, value) in &figures.observed {
        line.push_str(&format!("  {name} {value}"));
    }
    if let Some(acceptance) = figures.acceptance {
        line.push_str(&format!("  acceptance {:.1}%", 100.0 * acceptance));
    }
    if let Some(seeds) = figures.seeds {
        line.push_str(&format!("  seeds {seeds}"));
    }
    line
}

/// Reads the figures out of the broker's statistics (the clients' user statistics
/// `acceptance`, `<map>_covered` and `distinct_counters`, see `campaign.rs`).
fn figures_of(stats: &mut ClientStatsManager) -> Figures {
    let global = stats.global_stats();
    let mut figures = Figures {
        run_time: global.run_time,
        executions: global.total_execs,
        executions_per_second: global.execs_per_sec,
        corpus: global.corpus_size,
        findings: global.objective_size,
        ..Figures::default()
    };
    let number = |value: &UserStatsValue| match value {
        UserStatsValue::Number(n) => Some(*n),
        UserStatsValue::Float(f) => Some(*f as u64),
        _ => None,
    };
    let mut observed: Vec<(String, u64)> = stats
        .aggregated()
        .iter()
        .filter_map(|(name, value)| {
            let short = name
                .strip_suffix("_covered")
                .or_else(|| (name == "distinct_counters").then_some("counters"))?;
            Some((short.to_string(), number(value)?))
        })
        .collect();
    observed.sort();
    figures.observed = observed;
    figures.invalid = stats.aggregated().get("invalid").and_then(number).unwrap_or(0);
    figures.acceptance = match stats.aggregated().get("acceptance") {
        Some(UserStatsValue::Percent(p)) => Some(*p),
        _ => None,
    };
    figures
}

/// The status-line monitor. It runs in the broker process.
pub struct StatusMonitor {
    interval: Duration,
    terminal: bool,
    store: Option<SeedStore>,
    last_line: Option<Instant>,
}

impl StatusMonitor {
    /// A monitor for the campaign in `out`, printing every `interval` (default: every second
    /// on a terminal, every [`LOG_INTERVAL`] otherwise).
    pub fn new(out: &Path, interval: Option<Duration>) -> Self {
        let terminal = std::io::stdout().is_terminal();
        let default = if terminal { TERMINAL_INTERVAL } else { LOG_INTERVAL };
        StatusMonitor {
            interval: interval.unwrap_or(default),
            terminal,
            store: SeedStore::open(out.join("seeds")).ok(),
            last_line: None,
        }
    }
}

impl Monitor for StatusMonitor {
    fn display(&mut self, stats: &mut ClientStatsManager, _event: &str, _sender: ClientId) -> Result<(), Error> {
        if self.last_line.is_some_and(|last| last.elapsed() < self.interval) {
            return Ok(());
        }
        self.last_line = Some(Instant::now());
        let mut figures = figures_of(stats);
        figures.seeds = self
            .store
            .as_ref()
            .and_then(|store| store.ids().ok())
            .map(|ids| ids.len());
        let line = status_line(&figures);
        let mut stdout = std::io::stdout().lock();
        // A status line that cannot be printed is not worth stopping the broker for.
        let _ = if self.terminal {
            // Back to the start of the line, clear it, and leave the cursor after the text.
            write!(stdout, "\r\x1b[2K{line}").and_then(|()| stdout.flush())
        } else {
            writeln!(stdout, "{line}")
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_compact() {
        assert_eq!(compact_duration(Duration::from_secs(45)), "45s");
        assert_eq!(compact_duration(Duration::from_secs(12 * 60 + 5)), "12m05s");
        assert_eq!(compact_duration(Duration::from_secs(3 * 3600 + 7 * 60 + 59)), "3h07m");
        assert_eq!(compact_duration(Duration::from_secs(2 * 86400 + 5 * 3600)), "2d05h");
    }

    #[test]
    fn the_line_shows_what_is_present() {
        let mut figures = Figures {
            run_time: Duration::from_secs(65),
            executions: 1234,
            executions_per_second: 40.78,
            corpus: 56,
            findings: 2,
            ..Figures::default()
        };
        assert_eq!(
            status_line(&figures),
            "1m05s  1234 execs (40.8/s)  corpus 56  findings 2"
        );
        figures.observed = vec![("counters".into(), 310), ("edges".into(), 1187)];
        figures.acceptance = Some(0.78728);
        figures.seeds = Some(3);
        figures.invalid = 4;
        assert_eq!(
            status_line(&figures),
            "1m05s  1234 execs (40.8/s)  corpus 56  findings 2  invalid 4  counters 310  edges 1187  acceptance 78.7%  seeds 3"
        );
    }

    #[test]
    fn figures_come_from_the_aggregated_user_statistics() {
        use libafl::monitors::stats::{AggregatorOps, UserStats};
        use std::borrow::Cow;
        let mut stats = ClientStatsManager::new();
        let client = ClientId(1);
        stats.client_stats_insert(client).unwrap();
        let user_stats = [
            ("edges_covered", UserStatsValue::Number(900), AggregatorOps::Max),
            ("distinct_counters", UserStatsValue::Number(42), AggregatorOps::Max),
            ("acceptance", UserStatsValue::Percent(0.5), AggregatorOps::Avg),
            ("distance", UserStatsValue::Float(1.5), AggregatorOps::Avg),
            ("invalid", UserStatsValue::Number(3), AggregatorOps::Sum),
        ];
        for (name, value, op) in user_stats {
            let name = Cow::Borrowed(name);
            stats
                .update_client_stats_for(client, |c| c.update_user_stats(name.clone(), UserStats::new(value, op)))
                .unwrap();
            stats.aggregate(&name);
        }
        stats
            .update_client_stats_for(client, |c| {
                c.update_corpus_size(7);
                c.update_objective_size(1);
            })
            .unwrap();
        let figures = figures_of(&mut stats);
        assert_eq!(
            figures.observed,
            vec![("counters".to_string(), 42), ("edges".to_string(), 900)]
        );
        assert_eq!(figures.acceptance, Some(0.5));
        assert_eq!(figures.invalid, 3);
        assert_eq!((figures.corpus, figures.findings), (7, 1));
    }
}
