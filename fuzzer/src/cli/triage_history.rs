//! `ccfuzz triage OUT --history GITDIR --from REV`: the options that bucket a campaign's
//! findings by correcting commit in the tested compiler's history instead of reducing them.

use crate::config::Config;
use crate::measure::ground_truth::by_commit::bucket_by_correcting_commit;
use crate::measure::ground_truth::history::History;
use anyhow::Result;
use clap::Args;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct HistoryArgs {
    /// The tested compiler's git directory (TinyCC or pcc): bucket the findings by the commit that
    /// corrected each one, before and instead of any reduction.
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
    /// Buckets the findings of `out` and prints the buckets; false without a history.
    pub fn bucket(&self, out: &Path, config: &Config) -> Result<bool> {
        let (Some(git), Some(from)) = (&self.history, &self.from) else {
            return Ok(false);
        };
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let history = History::open(git, from, &self.to, &self.build_cache, jobs, &self.options)?;
        print!(
            "{}",
            bucket_by_correcting_commit(out, config, &history, config.known_bugs.as_deref())?
        );
        Ok(true)
    }
}
