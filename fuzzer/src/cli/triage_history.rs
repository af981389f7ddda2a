//! `ccfuzz triage OUT --history GITDIR --from REV`: the options that bucket a campaign's
//! findings by correcting commit in the tested compiler's history before reducing anything;
//! then one finding per bucket is reduced.

use crate::config::Config;
use crate::measure::ground_truth::by_commit::bucket_by_correcting_commit;
use crate::measure::ground_truth::history::History;
use anyhow::Result;
use clap::Args;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct HistoryArgs {
    /// The tested compiler's git directory (TinyCC or pcc): bucket the findings by the commit that
    /// corrected each one, then reduce the smallest finding of each bucket that is not a known
    /// bug.
    #[arg(long, requires = "from")]
    pub history: Option<PathBuf>,
    /// The commit the campaign tested.
    #[arg(long)]
    pub from: Option<String>,
    /// The newest commit a correction is searched up to.
    #[arg(long, default_value = "HEAD")]
    pub to: String,
    /// Where each commit's build is cached, under its hash.
    #[arg(long, default_value = "build/compiler-history")]
    pub build_cache: PathBuf,
    /// Options the campaign tested the compiler with, e.g. pcc's `-O`.
    #[arg(long = "history-options", default_value = "", allow_hyphen_values = true)]
    pub options: String,
    /// Known bugs (correcting commits, with --history, or reduced tests), counted apart and not
    /// reduced; default: the configuration's `known_bugs`.
    #[arg(long)]
    pub known_bugs: Option<PathBuf>,
}

impl HistoryArgs {
    /// Buckets the findings of `out`, prints the buckets and returns the findings to reduce, one
    /// per bucket; `None` without a history.
    pub fn bucket(&self, out: &Path, config: &Config) -> Result<Option<BTreeSet<String>>> {
        let (Some(git), Some(from)) = (&self.history, &self.from) else {
            return Ok(None);
        };
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let history = History::open(git, from, &self.to, &self.build_cache, jobs, &self.options)?;
        let buckets = bucket_by_correcting_commit(out, config, &history, config.known_bugs.as_deref())?;
        print!("{}", buckets.summary);
        Ok(Some(buckets.to_reduce.into_iter().collect()))
    }
}
