//! LibAFL observers of a variant's execution and the feedbacks that read them.
//!
//! [`ExecutionObserver`] records, for every compiler configuration, what compiling the variant
//! and running the binary did. The executor fills it; objectives judge it; it travels with
//! each new corpus entry to the other cores, so it stays small (outputs are capped).
//! [`coverage`] observes which code of the compiler ran (AFL++ edges in shared memory, or gcov
//! lines, [`gcov`]), [`counters`] which optimizations fired, and [`novelty`] measures what an
//! execution added to the corpus's coverage and counters.

pub mod counters;
pub mod coverage;
pub mod gcov;
pub mod novelty;

use libafl::observers::Observer;
use libafl::Error;
use libafl_bolts::Named;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Outputs longer than this are cut before they are kept in the observer.
pub const KEPT_OUTPUT: usize = 64 * 1024;

/// What the compiled binary did.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum RunResult {
    /// `stdout` holds at most [`KEPT_OUTPUT`] bytes of the `len` the program printed.
    Exited {
        code: i32,
        stdout: Vec<u8>,
        len: usize,
    },
    Signaled(i32),
    TimedOut,
}

impl RunResult {
    /// The result of a program that exited, keeping a bounded prefix of its output.
    pub fn exited(code: i32, mut stdout: Vec<u8>) -> Self {
        let len = stdout.len();
        stdout.truncate(KEPT_OUTPUT);
        RunResult::Exited { code, stdout, len }
    }

    /// Whether this is exactly the expected exit code and output.
    pub fn is_expected(&self, expected_code: i32, expected_stdout: &[u8]) -> bool {
        match self {
            RunResult::Exited { code, stdout, len } => {
                *code == expected_code
                    && *len == expected_stdout.len()
                    && stdout[..] == expected_stdout[..expected_stdout.len().min(KEPT_OUTPUT)]
            }
            _ => false,
        }
    }

    /// A one-line description for reports.
    pub fn describe(&self) -> String {
        match self {
            RunResult::Exited { code, stdout, len } => {
                let text = String::from_utf8_lossy(stdout);
                let last = text.lines().last().unwrap_or("");
                format!("exit {code}, {len} bytes of output ending in {last:?}")
            }
            RunResult::Signaled(signal) => format!("killed by signal {signal}"),
            RunResult::TimedOut => "did not terminate within the run timeout".into(),
        }
    }
}

/// What one compiler configuration did with the variant.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ConfigOutcome {
    /// Compiled and ran.
    Ran { run: RunResult },
    /// The compiler rejected the program with an ordinary error (the variant is invalid for it).
    Rejected { message: String },
    /// The compiler crashed: a signal, or an internal compiler error.
    Crashed { message: String },
    /// The compiler outlived its timeout.
    Hung,
}

impl ConfigOutcome {
    /// A one-line description for rejections and reports.
    pub fn describe(&self) -> String {
        match self {
            ConfigOutcome::Ran { run } => run.describe(),
            ConfigOutcome::Rejected { message } => format!("rejected: {message}"),
            ConfigOutcome::Crashed { message } => format!("crashed: {message}"),
            ConfigOutcome::Hung => "did not finish within the compile timeout".into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Outcome {
    pub config: String,
    pub outcome: ConfigOutcome,
    /// Milliseconds the compilation took.
    pub compile_ms: u64,
}

/// The outcomes of the last execution, one per compiler configuration.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ExecutionObserver {
    name: Cow<'static, str>,
    pub outcomes: Vec<Outcome>,
    /// Why the variant is invalid: the reference configuration does not print the seed's
    /// output and no other configuration does either (its meaning changed, or it does not
    /// terminate). An invalid variant is no finding and no chain state.
    #[serde(default)]
    pub invalid: Option<String>,
    /// Whether this process ran the execution: observations that arrive with another client's
    /// testcase were made elsewhere (the flag does not travel).
    #[serde(skip)]
    pub observed_here: bool,
}

impl ExecutionObserver {
    pub fn new(name: &'static str) -> Self {
        ExecutionObserver {
            name: Cow::Borrowed(name),
            outcomes: Vec::new(),
            invalid: None,
            observed_here: false,
        }
    }

    pub fn record(&mut self, config: &str, outcome: ConfigOutcome, compile_ms: u64) {
        self.outcomes.push(Outcome {
            config: config.to_string(),
            outcome,
            compile_ms,
        });
    }
}

impl Named for ExecutionObserver {
    fn name(&self) -> &Cow<'static, str> {
        &self.name
    }
}

impl<I, S> Observer<I, S> for ExecutionObserver {
    fn pre_exec(&mut self, _state: &mut S, _input: &I) -> Result<(), Error> {
        self.outcomes.clear();
        self.invalid = None;
        self.observed_here = true;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outputs_are_capped_but_compared_in_full_length() {
        let long = vec![b'x'; KEPT_OUTPUT * 2];
        let run = RunResult::exited(0, long.clone());
        let RunResult::Exited { stdout, len, .. } = &run else {
            panic!()
        };
        assert_eq!((stdout.len(), *len), (KEPT_OUTPUT, KEPT_OUTPUT * 2));
        assert!(run.is_expected(0, &long));
        assert!(!run.is_expected(0, &long[..KEPT_OUTPUT + 1]));
        assert!(!run.is_expected(1, &long));
        assert!(!RunResult::exited(0, b"checksum = 1\n".to_vec()).is_expected(0, b"checksum = 2\n"));
    }

    #[test]
    fn outcomes_are_cleared_before_each_execution() {
        let mut observer = ExecutionObserver::new("execution");
        observer.record("gcc -O2", ConfigOutcome::Hung, 3);
        Observer::<(), ()>::pre_exec(&mut observer, &mut (), &()).unwrap();
        assert!(observer.outcomes.is_empty());
        assert!(observer.observed_here);
        let received: ExecutionObserver = postcard::from_bytes(&postcard::to_allocvec(&observer).unwrap()).unwrap();
        assert!(!received.observed_here);
    }
}
