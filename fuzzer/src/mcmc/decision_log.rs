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

#[cfg(test)]
mod tests {
    use super::*;

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
