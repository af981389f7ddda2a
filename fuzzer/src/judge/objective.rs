//! Judging an execution: output mismatches against the seed's reference output, compiler
//! crashes and compiler hangs. A symptom not stored before makes the execution a solution;
//! [`FindingsCorpus`] stores it.

use crate::config::CompilerConfig;
use crate::exec::executor::VARIANT_SOURCE;
use crate::judge::findings::{FindingFiles, FindingsCorpus, NewFindings};
use ccfuzz_mutators::compiler_version::exact_version;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::{content_hash, Seed};
use ccfuzz_observers::{ConfigOutcome, ExecutionObserver, Outcome, RunResult};
pub use ccfuzz_triage::finding::{Finding, FindingKind};
use libafl::corpus::Testcase;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::state::HasSolutions;
use libafl::{Error, HasMetadata};
use libafl_bolts::tuples::{Handle, MatchNameRef};
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

/// The symptoms an execution shows, one per misbehaving configuration.
pub fn judge<'a>(outcomes: &'a [Outcome], seed: &Seed) -> Vec<(FindingKind, &'a Outcome)> {
    outcomes
        .iter()
        .filter_map(|o| match &o.outcome {
            ConfigOutcome::Ran { run } if !run.is_expected(seed.profile.expected_exit, &seed.expected_output) => {
                Some((FindingKind::Mismatch, o))
            }
            ConfigOutcome::Crashed { .. } => Some((FindingKind::Crash, o)),
            ConfigOutcome::Hung => Some((FindingKind::Hang, o)),
            _ => None,
        })
        .collect()
}

/// Removes what varies between variants showing one crash: positions and addresses.
fn normalize_message(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_ascii_digit() || (c == '0' && chars.peek() == Some(&'x')) {
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit() || *c == 'x') {
                chars.next();
            }
            out.push('N');
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether a crash message says only where in the program the compiler gave up (pcc's
/// `major internal compiler error: variant.c, line 518`): nothing in it tells one compiler defect
/// from another, so such crashes are told apart by seed, as wrong output is; otherwise a
/// campaign keeps the first program of all of them and drops the rest.
fn says_only_where(message: &str) -> bool {
    let rest = message
        .split_once("internal compiler error")
        .map_or(message, |(_, rest)| rest);
    rest.split(|c: char| c.is_whitespace() || c == ',' || c == ':')
        .filter(|word| !word.is_empty())
        .all(|word| word.ends_with(VARIANT_SOURCE) || word == "line" || word.chars().all(|c| c.is_ascii_digit()))
}

fn expected_description(seed: &Seed) -> String {
    RunResult::exited(seed.profile.expected_exit, seed.expected_output.clone()).describe()
}

pub fn finding_for(kind: FindingKind, outcome: &Outcome, seed: &Seed, variant: &Variant) -> Finding {
    let (actual, message, key) = match &outcome.outcome {
        ConfigOutcome::Ran { run } => (run.describe(), None, format!("{}|{run:?}", seed.id)),
        ConfigOutcome::Crashed { message } => {
            let key = if says_only_where(message) {
                format!("{}|{}", normalize_message(message), seed.id)
            } else {
                normalize_message(message)
            };
            ("compiler crashed".to_string(), Some(message.clone()), key)
        }
        ConfigOutcome::Hung => (
            "compiler did not finish within the compile timeout".into(),
            None,
            seed.id.0.clone(),
        ),
        ConfigOutcome::Rejected { message } => (message.clone(), None, message.clone()),
    };
    let argv = CompilerConfig::new(outcome.config.clone()).argv();
    Finding {
        kind,
        configuration: outcome.config.clone(),
        compiler_version: Some(exact_version(&argv[0])),
        compiler: argv[0].clone(),
        flags: argv[1..].to_vec(),
        expected: expected_description(seed),
        actual,
        message,
        seed: seed.id.clone(),
        seed_origin: seed.profile.origin.clone(),
        edits: variant.edits().to_vec(),
        signature: content_hash(format!("{}|{}|{key}", kind.as_str(), outcome.config).as_bytes()),
    }
}

/// Symptoms this client has judged already: a symptom is a finding once.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct FindingsMetadata {
    pub seen: HashSet<String>,
}
impl_serdeany!(FindingsMetadata);

/// The objective: an execution is a solution when it shows a symptom not stored before. It
/// only judges; the findings corpus stores what it attaches to the solution ([`NewFindings`]).
pub struct FindingsObjective {
    execution: Handle<ExecutionObserver>,
    programs: Arc<Programs>,
    /// The last solution's findings, until LibAFL hands over its testcase.
    judged: Option<NewFindings>,
}

impl FindingsObjective {
    pub fn new(execution: Handle<ExecutionObserver>, programs: Arc<Programs>) -> Self {
        FindingsObjective {
            execution,
            programs,
            judged: None,
        }
    }
}

impl Named for FindingsObjective {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("findings");
        &NAME
    }
}

impl<S: HasMetadata> StateInitializer<S> for FindingsObjective {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        state.metadata_or_insert_with(FindingsMetadata::default);
        Ok(())
    }
}

impl<EM, OT, S> Feedback<EM, Variant, OT, S> for FindingsObjective
where
    OT: MatchNameRef + Serialize,
    S: HasMetadata + HasSolutions<Variant, Solutions = FindingsCorpus>,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        _manager: &mut EM,
        input: &Variant,
        observers: &OT,
        exit: &ExitKind,
    ) -> Result<bool, Error> {
        let observer = super::execution_observer(observers, &self.execution)?;
        let loaded = match self.programs.get(&input.seed) {
            Ok(loaded) => loaded,
            Err(e) => {
                log::error!("cannot judge a variant: {e:#}");
                return Ok(false);
            }
        };
        let mut findings = Vec::new();
        for (kind, outcome) in judge(&observer.outcomes, &loaded.seed) {
            let finding = finding_for(kind, outcome, &loaded.seed, input);
            let meta = state.metadata_or_insert_with(FindingsMetadata::default);
            // Stored by another client, or before a resume: no new symptom.
            if meta.seen.insert(finding.signature.clone()) && !state.solutions().holds(&finding) {
                findings.push(finding);
            }
        }
        if findings.is_empty() {
            return Ok(false);
        }
        let text = ccfuzz_mutators::edit::apply_edits(&loaded.program, input.edits());
        self.judged = Some(NewFindings {
            findings,
            files: FindingFiles::of(text, &loaded.seed),
            observations: None,
            exit: *exit,
        });
        Ok(true)
    }

    /// Attaches the findings, and the observations they were judged by when this client made
    /// them, to the solution LibAFL is about to add.
    fn append_metadata(
        &mut self,
        _state: &mut S,
        _manager: &mut EM,
        observers: &OT,
        testcase: &mut Testcase<Variant>,
    ) -> Result<(), Error> {
        let Some(mut judged) = self.judged.take() else {
            return Ok(());
        };
        if super::execution_observer(observers, &self.execution)?.observed_here {
            judged.observations = Some(postcard::to_allocvec(observers)?);
        }
        testcase.add_metadata(judged);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_signatures_ignore_positions_and_addresses() {
        let a = normalize_message("variant.c:12:3: current parser token 'pragma' at 0x7f00ab");
        let b = normalize_message("variant.c:845:19: current parser token 'pragma' at 0x55d1");
        assert_eq!(a, b);
        assert_ne!(a, normalize_message("variant.c:1:1: in compound statement"));
    }

    #[test]
    fn a_crash_message_that_only_points_into_the_program_is_told_apart_by_seed() {
        assert!(says_only_where(
            "internal compiler error: /dev/shm/x/client-1/exec/variant.c, line 518"
        ));
        assert!(says_only_where("internal compiler error: variant.c:12:3"));
        assert!(!says_only_where(
            "internal compiler error: in expand_expr_real_1, at expr.cc:9234"
        ));
        assert!(!says_only_where("internal compiler error: Segmentation fault"));
        assert!(!says_only_where("compiler killed by signal 11"));
    }
}
