//! Judging an execution: findings (mismatches, compiler crashes and hangs, [`objective`]),
//! where they are stored ([`findings`]), and what keeps a variant in the corpus besides the
//! MCMC acceptance ([`new_seed`], [`validity`]).

pub mod findings;
pub mod new_seed;
pub mod objective;
pub mod validity;

use ccfuzz_observers::ExecutionObserver;
use libafl::Error;
use libafl_bolts::tuples::{Handle, MatchNameRef};

/// The execution observer among a feedback's `observers`.
fn execution_observer<'o, OT: MatchNameRef>(
    observers: &'o OT,
    execution: &Handle<ExecutionObserver>,
) -> Result<&'o ExecutionObserver, Error> {
    observers
        .get(execution)
        .ok_or_else(|| Error::key_not_found("execution observer"))
}
