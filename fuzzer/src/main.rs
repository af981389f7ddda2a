//! The `ccfuzz` binary: parses the command line, runs the subcommand and prints its error, if
//! any, as one line.

use ccfuzz::cli::Cli;
use clap::Parser;
use std::process::ExitCode;

/// ccfuzz's own messages at info (status line, seeds made or rejected, findings); LibAFL's
/// internals (its restarts, forks and set-up) only when something is wrong. RUST_LOG overrides.
const DEFAULT_LOG_FILTER: &str = "warn,ccfuzz=info";

fn main() -> ExitCode {
    ccfuzz::ops::heap::keep_large_allocations_out_of_the_heap();
    ccfuzz::ops::heap::merge_freed_blocks_at_once();
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(DEFAULT_LOG_FILTER)).init();
    match Cli::parse().command.run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ccfuzz: {}", one_line(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes joined by `: `, each cause left out when a message before it already
/// says it (a context that quotes its source, or a library error that embeds the OS error).
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(text.trim()) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(text.trim());
    }
    line
}
