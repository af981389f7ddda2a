//! The `ccfuzz` binary: parses the command line and runs the subcommand.

use anyhow::Result;
use ccfuzz::cli::Cli;
use clap::Parser;

fn main() -> Result<()> {
    ccfuzz::ops::heap::keep_large_allocations_out_of_the_heap();
    ccfuzz::ops::heap::merge_freed_blocks_at_once();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info,ll_mp=warn")).init();
    Cli::parse().command.run()
}
