//! Judging an execution: output mismatches against the seed's reference output, compiler
//! crashes and compiler hangs. Each new symptom is saved as a finding directory with the
//! variant, its seed, `finding.json` and a `repro.sh` that reproduces it with one command.

use crate::config::{CompilerConfig, Config};
use crate::ops::user_stats;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::{content_hash, Seed};
use ccfuzz_observers::{ConfigOutcome, ExecutionObserver, Outcome, RunResult};
pub use ccfuzz_triage::finding::{Finding, FindingKind};
use ccfuzz_triage::version::exact_version;
use libafl::events::EventFirer;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, StateInitializer};
use libafl::monitors::stats::{AggregatorOps, UserStatsValue};
use libafl::state::{HasCorpus, HasExecutions};
use libafl::{Error, HasMetadata};
use libafl_bolts::tuples::{Handle, MatchNameRef};
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fs;
use std::marker::PhantomData;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

fn expected_description(seed: &Seed) -> String {
    RunResult::exited(seed.profile.expected_exit, seed.expected_output.clone()).describe()
}

pub fn finding_for(kind: FindingKind, outcome: &Outcome, seed: &Seed, variant: &Variant) -> Finding {
    let (actual, message, key) = match &outcome.outcome {
        ConfigOutcome::Ran { run } => (run.describe(), None, format!("{}|{run:?}", seed.id)),
        ConfigOutcome::Crashed { message } => (
            "compiler crashed".to_string(),
            Some(message.clone()),
            normalize_message(message),
        ),
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

/// The reproduction script: exit 0 and say so when the symptom shows, exit 1 otherwise.
pub fn repro_script(finding: &Finding, config: &Config, expected_exit: i32) -> String {
    let compiler = CompilerConfig::new(finding.configuration.clone());
    let compile_line = compiler
        .shell_line("variant.c", "\"$tmp/prog\"")
        .replace("'\"$tmp/prog\"'", "\"$tmp/prog\"");
    let compile_timeout = config.compile_timeout.ceil() as u64;
    let run_timeout = config.run_timeout.ceil() as u64;
    let header = format!(
        "#!/bin/sh\n# {kind} of `{conf}` on variant.c (a variant of seed.c).\n# Found with {version}.\n# Exits 0 when the {kind} reproduces.\ncd \"$(dirname \"$0\")\" || exit 2\ntmp=$(mktemp -d) || exit 2\ntrap 'rm -rf \"$tmp\"' EXIT\n# The compilers' temporary files (a crashing clang's reproducer) go with it.\nexport TMPDIR=\"$tmp\"\n",
        kind = finding.kind.as_str(),
        conf = finding.configuration,
        version = finding.compiler_version.as_deref().unwrap_or("a compiler of unknown version"),
    );
    let body = match finding.kind {
        FindingKind::Mismatch => format!(
            "timeout {compile_timeout} {compile_line} || {{ echo \"not reproduced: variant.c does not compile\"; exit 1; }}\n\
             (cd \"$tmp\" && timeout -s KILL {run_timeout} ./prog > actual.out)\nstatus=$?\n\
             if [ \"$status\" -eq {expected_exit} ] && cmp -s expected.out \"$tmp/actual.out\"; then\n  echo \"not reproduced: {conf} prints the expected output\"; exit 1\nfi\n\
             echo \"reproduced: {conf} exits with $status (expected {expected_exit}); output diff (expected, actual):\"\n\
             diff expected.out \"$tmp/actual.out\" | head -20\nexit 0\n",
            conf = finding.configuration
        ),
        FindingKind::Crash => format!(
            "timeout {compile_timeout} {compile_line} 2> \"$tmp/stderr\"\nstatus=$?\n\
             if grep -qE 'internal compiler error|PLEASE submit a bug report|frontend command failed' \"$tmp/stderr\" || {{ [ \"$status\" -gt 128 ] && [ \"$status\" -ne 137 ]; }}; then\n  echo \"reproduced: {conf} crashed (status $status)\"; grep -E 'internal compiler error|^[0-9]+\\.|error:' \"$tmp/stderr\" | head -5; exit 0\nfi\n\
             echo \"not reproduced: {conf} exits with $status\"; exit 1\n",
            conf = finding.configuration
        ),
        FindingKind::Hang => format!(
            "timeout -s KILL {compile_timeout} {compile_line}\nstatus=$?\n\
             if [ \"$status\" -eq 137 ] || [ \"$status\" -eq 124 ]; then echo \"reproduced: {conf} ran longer than {compile_timeout} s\"; exit 0; fi\n\
             echo \"not reproduced: {conf} finished with status $status\"; exit 1\n",
            conf = finding.configuration
        ),
    };
    format!("{header}{body}")
}

/// Writes a finding directory atomically; returns false when one with that signature exists.
pub fn save_finding(
    dir: &Path,
    finding: &Finding,
    variant_text: &str,
    seed: &Seed,
    config: &Config,
) -> std::io::Result<bool> {
    let target = dir.join(format!("{}-{}", finding.kind.as_str(), finding.signature));
    if target.exists() {
        return Ok(false);
    }
    fs::create_dir_all(dir)?;
    let staging = dir.join(format!(".staging-{}-{}", finding.signature, std::process::id()));
    fs::create_dir_all(&staging)?;
    fs::write(staging.join("variant.c"), variant_text)?;
    fs::write(staging.join("seed.c"), seed.text.as_bytes())?;
    fs::write(staging.join("expected.out"), &seed.expected_output)?;
    fs::write(
        staging.join("finding.json"),
        serde_json::to_vec_pretty(finding).map_err(std::io::Error::other)?,
    )?;
    let script = staging.join("repro.sh");
    fs::write(&script, repro_script(finding, config, seed.profile.expected_exit))?;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
    match fs::rename(&staging, &target) {
        Ok(()) => Ok(true),
        Err(_) if target.exists() => {
            fs::remove_dir_all(&staging)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Signatures already saved by this client, and counts for the monitor.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct FindingsMetadata {
    pub seen: HashSet<String>,
    /// Variants that some configuration rejected with an ordinary compile error.
    pub rejected_variants: u64,
}
impl_serdeany!(FindingsMetadata);

/// The objective: an execution is a solution when it shows a symptom not saved before.
pub struct FindingsObjective<S> {
    execution: Handle<ExecutionObserver>,
    programs: Arc<Programs>,
    config: Config,
    findings_dir: PathBuf,
    phantom: PhantomData<S>,
}

impl<S> FindingsObjective<S> {
    pub fn new(
        execution: Handle<ExecutionObserver>,
        programs: Arc<Programs>,
        config: Config,
        findings_dir: PathBuf,
    ) -> Self {
        FindingsObjective {
            execution,
            programs,
            config,
            findings_dir,
            phantom: PhantomData,
        }
    }
}

impl<S> Named for FindingsObjective<S> {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("findings");
        &NAME
    }
}

impl<S: HasMetadata> StateInitializer<S> for FindingsObjective<S> {
    fn init_state(&mut self, state: &mut S) -> Result<(), Error> {
        state.metadata_or_insert_with(FindingsMetadata::default);
        Ok(())
    }
}

impl<EM, OT, S> Feedback<EM, Variant, OT, S> for FindingsObjective<S>
where
    OT: MatchNameRef + Serialize,
    S: HasMetadata + HasExecutions + HasCorpus<Variant>,
    EM: EventFirer<Variant, S>,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        manager: &mut EM,
        input: &Variant,
        observers: &OT,
        exit: &ExitKind,
    ) -> Result<bool, Error> {
        let observer = super::execution_observer(observers, &self.execution)?;
        if observer
            .outcomes
            .iter()
            .any(|o| matches!(o.outcome, ConfigOutcome::Rejected { .. }))
        {
            let rejected = {
                let meta = state.metadata_or_insert_with(FindingsMetadata::default);
                meta.rejected_variants += 1;
                meta.rejected_variants
            };
            user_stats::send(
                state,
                manager,
                "rejected",
                UserStatsValue::Number(rejected),
                AggregatorOps::Sum,
            )?;
        }
        let loaded = match self.programs.get(&input.seed) {
            Ok(loaded) => loaded,
            Err(e) => {
                log::error!("cannot judge a variant: {e:#}");
                return Ok(false);
            }
        };
        let mut new_finding = false;
        for (kind, outcome) in judge(&observer.outcomes, &loaded.seed) {
            let finding = finding_for(kind, outcome, &loaded.seed, input);
            let meta = state.metadata_or_insert_with(FindingsMetadata::default);
            if !meta.seen.insert(finding.signature.clone()) {
                continue;
            }
            let text = ccfuzz_mutators::edit::apply_edits(&loaded.program, input.edits());
            match save_finding(&self.findings_dir, &finding, &text, &loaded.seed, &self.config) {
                Ok(true) => {
                    log::info!(
                        "new {} finding: {} ({})",
                        kind.as_str(),
                        finding.configuration,
                        finding.actual
                    );
                    new_finding = true;
                }
                Ok(false) => {}
                Err(e) => log::error!("cannot save a finding in {}: {e}", self.findings_dir.display()),
            }
        }
        // A finding made here reaches the other cores and nodes; one received is not sent on.
        if new_finding && observer.observed_here {
            crate::sharing::announce(state, manager, self.programs.store(), input, observers, *exit)?;
        }
        Ok(new_finding)
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
}
