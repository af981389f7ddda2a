//! The chains' decision log, `OUT/mcmc/client-N.csv`: one line per proposal (about 120 bytes),
//! read by the studies (`tests/studies/campaign_summary.py`). Against tcc a client makes about 85
//! proposals a second, 35 MB an hour: past its size limit the log becomes `client-N.older.csv`
//! (replacing the one before) and starts again, so a campaign of days keeps its latest
//! decisions in at most twice the limit.

use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const HEADER: &str = "seconds,seed,variant,family,accepted,chain_proposals,chain_length,distance,proposed_distance,new_coverage,new_counters,log_q_ratio\n";

#[derive(Debug)]
pub struct DecisionLog {
    path: PathBuf,
    writer: BufWriter<File>,
    /// Bytes in the current file.
    size: u64,
    limit: u64,
    line: String,
    /// Flushed once a second: with fast compilers a flush per proposal was 2% of the client's
    /// CPU.
    flushed: Instant,
}

impl DecisionLog {
    /// Appends to the log at `path` (a resumed campaign's goes on), which holds at most `limit`
    /// bytes before it is set aside.
    pub fn open(path: &Path, limit: u64) -> std::io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let (writer, size) = Self::append(path)?;
        Ok(DecisionLog {
            path: path.to_path_buf(),
            writer,
            size,
            limit: limit.max(HEADER.len() as u64 + 1),
            line: String::new(),
            flushed: Instant::now(),
        })
    }

    /// The log's file opened for appending, with the header if it is new, and its size.
    fn append(path: &Path) -> std::io::Result<(BufWriter<File>, u64)> {
        let mut writer = BufWriter::new(File::options().create(true).append(true).open(path)?);
        let mut size = writer.get_ref().metadata()?.len();
        if size == 0 {
            writer.write_all(HEADER.as_bytes())?;
            size = HEADER.len() as u64;
        }
        Ok((writer, size))
    }

    /// Where a full log is set aside.
    pub fn older(path: &Path) -> PathBuf {
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        path.with_file_name(format!("{stem}.older.csv"))
    }

    /// Appends one decision (the CSV fields, without the line's end).
    pub fn record(&mut self, fields: std::fmt::Arguments) -> std::io::Result<()> {
        self.line.clear();
        let _ = writeln!(self.line, "{fields}");
        if self.size + self.line.len() as u64 > self.limit {
            self.writer.flush()?;
            std::fs::rename(&self.path, Self::older(&self.path))?;
            (self.writer, self.size) = Self::append(&self.path)?;
        }
        self.writer.write_all(self.line.as_bytes())?;
        self.size += self.line.len() as u64;
        if self.flushed.elapsed() >= Duration::from_secs(1) {
            self.flushed = Instant::now();
            self.writer.flush()?;
        }
        Ok(())
    }
}

/// A number with `decimals` digits after the point, printed as `{:.N}` prints it (the exact
/// binary value, rounded half to even) but by integer arithmetic: a decision's four numbers
/// through the standard formatting were 2% of a client's CPU against tcc.
pub struct Fixed {
    value: f64,
    decimals: u32,
}

/// `value` to print with `decimals` digits after the point.
pub fn fixed(value: f64, decimals: u32) -> Fixed {
    Fixed { value, decimals }
}

impl Fixed {
    /// The value times 10^decimals, rounded half to even, when it fits the integer arithmetic.
    fn scaled(&self) -> Option<u128> {
        if !self.value.is_finite() || self.decimals > 18 {
            return None;
        }
        // The value is mantissa × 2^exponent exactly.
        let bits = self.value.abs().to_bits();
        let (biased, fraction) = ((bits >> 52) as i32, bits & ((1 << 52) - 1));
        let (mantissa, exponent) = match biased {
            0 => (fraction, -1074),
            _ => (fraction | 1 << 52, biased - 1075),
        };
        let power = 10u128.pow(self.decimals);
        if exponent >= 0 {
            // Below 2^93 before scaling.
            return (exponent <= 40)
                .then(|| (u128::from(mantissa) << exponent).checked_mul(power))
                .flatten();
        }
        let shift = exponent.unsigned_abs();
        if shift >= 128 {
            return Some(0);
        }
        let exact = u128::from(mantissa) * power;
        let (quotient, remainder, half) = (exact >> shift, exact & ((1 << shift) - 1), 1u128 << (shift - 1));
        let round_up = remainder > half || (remainder == half && quotient % 2 == 1);
        Some(quotient + u128::from(round_up))
    }
}

impl std::fmt::Display for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Some(scaled) = self.scaled() else {
            return write!(f, "{:.*}", self.decimals as usize, self.value);
        };
        let sign = if self.value.is_sign_negative() { "-" } else { "" };
        if self.decimals == 0 {
            return write!(f, "{sign}{scaled}");
        }
        let power = 10u128.pow(self.decimals);
        let width = self.decimals as usize;
        write!(f, "{sign}{}.{:0width$}", scaled / power, scaled % power)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_numbers_print_as_the_standard_formatting_prints_them() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let special = [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0 / 128.0,
            2.5e-7,
            1e17,
            1.2e24,
            1e300,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let random = (0..200_000).map(|i| {
            let unit = (next() >> 11) as f64 / (1u64 << 53) as f64;
            // Distances, log ratios, seconds, and exact binary fractions (halves at any place).
            match i % 4 {
                0 => unit,
                1 => (unit - 0.5) * 100.0,
                2 => unit * 1e6,
                _ => (next() % (1 << 20)) as f64 / (1 << (next() % 24)) as f64,
            }
        });
        for value in special.into_iter().chain(random) {
            for decimals in [0, 1, 4, 6, 18] {
                let expected = format!("{value:.*}", decimals as usize);
                assert_eq!(
                    fixed(value, decimals).to_string(),
                    expected,
                    "{value:e} to {decimals} places"
                );
            }
        }
    }

    fn lines(path: &Path) -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn a_full_log_is_set_aside_once_and_the_latest_decisions_stay() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("client-1.csv");
        // Room for the header and three ten-byte lines.
        let mut log = DecisionLog::open(&path, HEADER.len() as u64 + 30).unwrap();
        for i in 0..10 {
            log.record(format_args!("{i:09}")).unwrap();
        }
        drop(log);
        let (current, older) = (lines(&path), lines(&DecisionLog::older(&path)));
        assert_eq!(current, [HEADER.trim_end(), "000000009"]);
        assert_eq!(older, [HEADER.trim_end(), "000000006", "000000007", "000000008"]);
        // A resumed campaign appends, and counts what is there against the limit.
        let mut log = DecisionLog::open(&path, HEADER.len() as u64 + 30).unwrap();
        for i in 10..13 {
            log.record(format_args!("{i:09}")).unwrap();
        }
        drop(log);
        assert_eq!(lines(&path), [HEADER.trim_end(), "000000012"]);
        assert_eq!(
            lines(&DecisionLog::older(&path)),
            [HEADER.trim_end(), "000000009", "000000010", "000000011"]
        );
    }
}
