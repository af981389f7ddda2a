//! Optimization counters: what the optimizer did while compiling a variant, as named counters.
//!
//! GCC writes its statistics (`-fdump-statistics-stats=FILE`), LLVM its statistics as JSON
//! when it was built with them, and otherwise its optimization remarks
//! (`-fsave-optimization-record`), which are counted by pass, remark name and kind. The
//! counters are kept by name in [`CounterNamesObserver`] (for reports) and hashed into a
//! fixed-size byte map, one entry per name holding the magnitude of its value, so that LibAFL's
//! `MaxMapFeedback` sees a new counter or a counter that grew past a power of two.

use anyhow::{Context, Result};
use libafl::observers::{MapObserver, Observer, StdMapObserver};
use libafl::Error;
use libafl_bolts::Named;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Named counters of one compilation (or several, summed).
pub type Counters = BTreeMap<String, u64>;

/// Entries of the hashed counter map: a few hundred names per compiler, few collisions.
pub const COUNTER_MAP_SIZE: usize = 4096;

/// The hashed counter map (magnitudes, not hit counts: no AFL bucketing).
pub type CounterMapObserver = StdMapObserver<'static, u8, false>;

/// An empty counter map named `counters`; of one entry when no compiler reports counters, as
/// LibAFL scans the map after every execution and serializes it with every new corpus entry.
pub fn counter_map(observed: bool) -> CounterMapObserver {
    let len = if observed { COUNTER_MAP_SIZE } else { 1 };
    StdMapObserver::owned("counters", vec![0u8; len])
}

/// Where a compiler's counters come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CounterSource {
    /// GCC's `-fdump-statistics-stats`.
    GccStatistics,
    /// LLVM's `-stats -stats-json` (only in builds with statistics enabled).
    LlvmStatistics,
    /// LLVM's optimization remarks, counted by (pass, name, kind).
    LlvmRemarks,
}

impl CounterSource {
    /// The best source for an LLVM compiler: its statistics if it has them, else its remarks.
    pub fn for_llvm(compiler: &str) -> Self {
        if llvm_has_statistics(compiler) {
            CounterSource::LlvmStatistics
        } else {
            CounterSource::LlvmRemarks
        }
    }

    /// Flags that make the compiler write its counters to `dump`.
    pub fn flags(self, dump: &Path) -> Vec<String> {
        let dump = dump.display();
        match self {
            CounterSource::GccStatistics => vec![format!("-fdump-statistics-stats={dump}")],
            CounterSource::LlvmStatistics => ["-mllvm", "-stats", "-mllvm", "-stats-json", "-mllvm"]
                .iter()
                .map(|s| s.to_string())
                .chain([format!("-info-output-file={dump}")])
                .collect(),
            CounterSource::LlvmRemarks => vec![
                "-fsave-optimization-record".into(),
                format!("-foptimization-record-file={dump}"),
            ],
        }
    }

    /// Reads and removes the dump; a compilation that wrote none (it failed early, or nothing
    /// was optimized) has no counters.
    pub fn take(self, dump: &Path) -> Result<Counters> {
        let text = match std::fs::read_to_string(dump) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Counters::new()),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", dump.display())),
        };
        std::fs::remove_file(dump).with_context(|| format!("cannot remove {}", dump.display()))?;
        match self {
            CounterSource::GccStatistics => Ok(parse_gcc_statistics(&text)),
            CounterSource::LlvmStatistics => parse_llvm_statistics(&text),
            CounterSource::LlvmRemarks => Ok(parse_llvm_remarks(&text)),
        }
    }
}

/// Whether an LLVM compiler was built with statistics (Debian's are not: they print
/// "Statistics are disabled").
pub fn llvm_has_statistics(compiler: &str) -> bool {
    let Ok(dir) = tempfile::tempdir() else {
        return false;
    };
    let source = dir.path().join("probe.c");
    let dump = dir.path().join("stats.json");
    if std::fs::write(&source, "int f(int x) { return x * 2 + 1; }\n").is_err() {
        return false;
    }
    let out = Command::new(compiler)
        .args(["-O2", "-c"])
        .args(CounterSource::LlvmStatistics.flags(&dump))
        .arg(&source)
        .arg("-o")
        .arg(dir.path().join("probe.o"))
        .output();
    match out {
        Ok(out) => {
            out.status.success()
                && !String::from_utf8_lossy(&out.stderr).contains("Statistics are disabled")
                && CounterSource::LlvmStatistics
                    .take(&dump)
                    .is_ok_and(|counters| !counters.is_empty())
        }
        Err(_) => false,
    }
}

/// GCC statistics: lines `<pass number> <pass> "<counter>" <value>`, summed per
/// (pass number, pass, counter). Histogram counters (`RPO num values == 241`) are one counter
/// per histogram, summing its counts, or every program would have new names.
pub fn parse_gcc_statistics(text: &str) -> Counters {
    let mut counters = Counters::new();
    for line in text.lines() {
        let Some((head, rest)) = line.split_once('"') else {
            continue;
        };
        let Some((name, value)) = rest.rsplit_once('"') else {
            continue;
        };
        let Ok(value) = value.trim().parse::<u64>() else {
            continue;
        };
        let name = match name.rsplit_once(" == ") {
            Some((histogram, bucket)) if bucket.parse::<i64>().is_ok() => histogram,
            _ => name,
        };
        let pass = head.split_whitespace().collect::<Vec<_>>().join(" ");
        *counters.entry(format!("{pass}: {name}")).or_default() += value;
    }
    counters
}

/// LLVM `-stats-json` output: one JSON object of `"pass.Name": value`.
pub fn parse_llvm_statistics(text: &str) -> Result<Counters> {
    let values: BTreeMap<String, serde_json::Value> =
        serde_json::from_str(text).context("LLVM statistics are not a JSON object")?;
    let mut counters = Counters::new();
    for (key, value) in values {
        // Timers (`time.pass.*`, fractions of seconds) are not counters.
        if let Some(value) = value.as_u64() {
            let key = match key.split_once('.') {
                Some((pass, name)) => format!("{pass}: {name}"),
                None => key,
            };
            counters.insert(key, value);
        }
    }
    Ok(counters)
}

/// LLVM optimization remarks (YAML): each `--- !Kind` document is counted under
/// `pass: Name (Kind)`. The keys are top-level, so a line scan is exact for these files.
pub fn parse_llvm_remarks(text: &str) -> Counters {
    fn unquote(s: &str) -> &str {
        let s = s.trim();
        s.strip_prefix('\'')
            .and_then(|s| s.strip_suffix('\''))
            .or_else(|| s.strip_prefix('"').and_then(|s| s.strip_suffix('"')))
            .unwrap_or(s)
    }
    let mut counters = Counters::new();
    let mut flush = |kind: &mut Option<String>, pass: &mut Option<String>, name: &mut Option<String>| {
        if let (Some(k), Some(p), Some(n)) = (kind.take(), pass.take(), name.take()) {
            *counters.entry(format!("{p}: {n} ({k})")).or_default() += 1;
        }
    };
    let (mut kind, mut pass, mut name) = (None, None, None);
    for line in text.lines() {
        if let Some(k) = line.strip_prefix("--- !") {
            flush(&mut kind, &mut pass, &mut name);
            kind = Some(k.trim().to_string());
        } else if let Some(p) = line.strip_prefix("Pass:") {
            pass = Some(unquote(p).to_string());
        } else if let Some(n) = line.strip_prefix("Name:") {
            name = Some(unquote(n).to_string());
        }
    }
    flush(&mut kind, &mut pass, &mut name);
    counters
}

/// The map entry of a counter name: FNV-1a, stable across processes and builds.
pub fn slot(name: &str, len: usize) -> usize {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    (hash % len as u64) as usize
}

/// The magnitude of a counter value: 0 for 0, else 1 + ⌊log2 v⌋.
pub fn magnitude(value: u64) -> u8 {
    if value == 0 {
        0
    } else {
        1 + value.ilog2() as u8
    }
}

/// Writes counters into a (cleared) byte map: each name's entry holds the largest magnitude
/// hashed there.
pub fn fill_map<O: MapObserver<Entry = u8>>(counters: &Counters, map: &mut O) {
    let len = map.len();
    if len == 0 {
        return;
    }
    for (name, value) in counters {
        let index = slot(name, len);
        let m = magnitude(*value);
        if m > map.get(index) {
            map.set(index, m);
        }
    }
}

/// The named counters of the last execution, for reports and for the MCMC energy.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct CounterNamesObserver {
    name: Cow<'static, str>,
    pub counters: Counters,
}

impl CounterNamesObserver {
    pub fn new(name: &'static str) -> Self {
        CounterNamesObserver {
            name: Cow::Borrowed(name),
            counters: Counters::new(),
        }
    }

    /// Adds the counters of one configuration under its name.
    pub fn add(&mut self, configuration: &str, counters: Counters) {
        for (name, value) in counters {
            *self.counters.entry(format!("{configuration} | {name}")).or_default() += value;
        }
    }
}

impl Named for CounterNamesObserver {
    fn name(&self) -> &Cow<'static, str> {
        &self.name
    }
}

impl<I, S> Observer<I, S> for CounterNamesObserver {
    fn pre_exec(&mut self, _state: &mut S, _input: &I) -> Result<(), Error> {
        self.counters.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gcc_histograms_are_one_counter() {
        let text = "44 fre \"RPO num values == 241\" 1\n44 fre \"RPO num values == 4\" 3\n\
                    39 ccp \"Statements deleted\" 169\n39 ccp \"Statements deleted\" 1\n\
                    26 ssa \"a == b\" 2\n";
        let counters = parse_gcc_statistics(text);
        assert_eq!(counters["44 fre: RPO num values"], 4);
        assert_eq!(counters["39 ccp: Statements deleted"], 170);
        assert_eq!(counters["26 ssa: a == b"], 2);
        assert_eq!(counters.len(), 3);
    }

    #[test]
    fn remarks_are_counted_by_pass_name_and_kind() {
        let text = "--- !Passed\nPass:            licm\nName:            Hoisted\nArgs:\n  - Name: x\n...\n\
                    --- !Missed\nPass:            'inline'\nName:            NoDefinition\n...\n\
                    --- !Passed\nPass:            licm\nName:            Hoisted\n...\n";
        let counters = parse_llvm_remarks(text);
        assert_eq!(counters["licm: Hoisted (Passed)"], 2);
        assert_eq!(counters["inline: NoDefinition (Missed)"], 1);
        assert_eq!(counters.len(), 2);
    }

    #[test]
    fn llvm_statistics_skip_timers() {
        let counters =
            parse_llvm_statistics("{\n\t\"instcombine.NumCombined\": 12,\n\t\"time.pass.licm.wall\": 0.001\n}")
                .unwrap();
        assert_eq!(
            counters.into_iter().collect::<Vec<_>>(),
            vec![("instcombine: NumCombined".to_string(), 12)]
        );
    }

    #[test]
    fn counters_fill_magnitudes() {
        assert_eq!(
            (magnitude(0), magnitude(1), magnitude(2), magnitude(3), magnitude(1024)),
            (0, 1, 2, 2, 11)
        );
        let mut map = counter_map(true);
        let counters: Counters = [("a: b".to_string(), 5), ("c: d".to_string(), 0)].into();
        fill_map(&counters, &mut map);
        assert_eq!(map.get(slot("a: b", COUNTER_MAP_SIZE)), 3);
        assert_eq!(map.count_bytes(), 1);
        let mut unobserved = counter_map(false);
        fill_map(&counters, &mut unobserved);
        assert_eq!((unobserved.len(), unobserved.get(0)), (1, 3));
    }
}
