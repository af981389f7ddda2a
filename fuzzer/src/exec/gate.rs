//! The validity gate: every variant is compiled and run by the reference configuration first.
//! A variant the reference does not run to the seed's output is *invalid* (a mutator defect, or
//! an evaluation order the profile did not see) unless another compiler family at -O0 prints
//! the seed's output, which makes it the reference compiler's fault. An invalid variant costs
//! one compilation and at most one run timeout, and is never judged or accepted.

use ccfuzz_mutators::seed::Seed;
use ccfuzz_observers::{ConfigOutcome, RunResult};
use std::time::Duration;

/// A variant's binary may run this many times as long as its seed's profiling run did.
const RUN_TIME_FACTOR: u32 = 20;
/// ... but never less than this: process start-up and a loaded machine.
const MIN_RUN_TIMEOUT: Duration = Duration::from_secs(1);

/// The run timeout of a variant of a seed whose profiling run took `seed_ms`, capped by the
/// configuration's `run_timeout` (which seeds profiled before run times were recorded get).
pub fn variant_run_timeout(seed_ms: Option<u64>, cap: Duration) -> Duration {
    match seed_ms {
        Some(ms) => (Duration::from_millis(ms) * RUN_TIME_FACTOR)
            .max(MIN_RUN_TIMEOUT)
            .min(cap),
        None => cap,
    }
}

/// What the reference's outcome on a variant decides.
#[derive(Debug, PartialEq)]
pub enum Gate {
    /// It printed the seed's output: the tested configurations run.
    Valid,
    /// The reference compiler itself failed (crash or hang): a finding against it, and the
    /// tested configurations run.
    ReferenceFailed,
    /// It printed something else: another compiler family decides between a reference
    /// miscompilation and an invalid variant.
    AskAnother,
    /// Invalid without asking anyone: why.
    Invalid(String),
}

pub fn gate(outcome: &ConfigOutcome, seed: &Seed) -> Gate {
    match outcome {
        _ if prints_seed_output(outcome, seed) => Gate::Valid,
        ConfigOutcome::Ran {
            run: RunResult::TimedOut,
        } => Gate::Invalid("does not terminate under the reference".into()),
        ConfigOutcome::Ran { .. } => Gate::AskAnother,
        ConfigOutcome::Rejected { message } => Gate::Invalid(format!("the reference rejects it: {message}")),
        ConfigOutcome::Crashed { .. } | ConfigOutcome::Hung => Gate::ReferenceFailed,
    }
}

/// Whether a configuration compiled the variant and its binary printed the seed's output.
pub fn prints_seed_output(outcome: &ConfigOutcome, seed: &Seed) -> bool {
    matches!(outcome, ConfigOutcome::Ran { run } if run.is_expected(seed.profile.expected_exit, &seed.expected_output))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfuzz_mutators::seed::SeedProfile;
    use std::collections::BTreeMap;

    #[test]
    fn the_run_timeout_follows_the_seed_within_bounds() {
        let cap = Duration::from_secs(10);
        assert_eq!(variant_run_timeout(Some(2), cap), Duration::from_secs(1));
        assert_eq!(variant_run_timeout(Some(150), cap), Duration::from_secs(3));
        assert_eq!(variant_run_timeout(Some(4000), cap), cap);
        assert_eq!(variant_run_timeout(None, cap), cap);
    }

    #[test]
    fn only_the_seed_output_passes_the_gate() {
        let profile = SeedProfile {
            origin: "test".into(),
            headers: String::new(),
            include_block_len: 0,
            line_counts: BTreeMap::new(),
            expected_exit: 0,
            run_ms: Some(1),
        };
        let seed = Seed::new("int main(void) { return 0; }\n".into(), profile, b"1\n".to_vec());
        let ran = |code, out: &[u8]| ConfigOutcome::Ran {
            run: RunResult::exited(code, out.to_vec()),
        };
        assert_eq!(gate(&ran(0, b"1\n"), &seed), Gate::Valid);
        assert_eq!(gate(&ran(0, b"2\n"), &seed), Gate::AskAnother);
        assert_eq!(gate(&ran(1, b"1\n"), &seed), Gate::AskAnother);
        assert!(matches!(
            gate(
                &ConfigOutcome::Ran {
                    run: RunResult::TimedOut
                },
                &seed
            ),
            Gate::Invalid(_)
        ));
        assert!(matches!(
            gate(
                &ConfigOutcome::Rejected {
                    message: "error".into()
                },
                &seed
            ),
            Gate::Invalid(_)
        ));
        assert_eq!(gate(&ConfigOutcome::Hung, &seed), Gate::ReferenceFailed);
    }
}
