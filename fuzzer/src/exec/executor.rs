//! The LibAFL executor: materialize the variant, compile it with every configuration in a
//! private temporary directory, run each binary, and record the outcomes in the
//! [`ExecutionObserver`]; what the observed compilers report inside (coverage, optimization
//! counters) goes to the coverage and counter observers. Compiler failures are outcomes,
//! never errors of the fuzzer.

use crate::config::{Config, ReferenceGate};
use crate::exec::gate::{gate, prints_seed_output, variant_run_timeout, Gate};
use crate::exec::instrument::Instruments;
use crate::exec::source_file::SourceFile;
use crate::process::compile::Additions;
use crate::process::compile::{compile_and_run, BinaryRuns};
use anyhow::Context;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::Seed;
use ccfuzz_observers::counters::{counter_map, fill_map, CounterMapObserver, CounterNamesObserver, Counters};
use ccfuzz_observers::coverage::CoverageObserver;
use ccfuzz_observers::gcov::GcovCoverage;
use ccfuzz_observers::{ConfigOutcome, ExecutionObserver};
use libafl::executors::{Executor, ExitKind, HasObservers};
use libafl::state::HasExecutions;
use libafl::Error;
use libafl_bolts::tuples::{tuple_list, tuple_list_type, Handle, Handled, MatchNameRef, RefIndexable};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The file name of the variant in the executor's private directory.
pub(crate) const VARIANT_SOURCE: &str = "variant.c";

/// The observers the executor fills, by handle.
#[derive(Clone, Debug)]
pub struct ObserverHandles {
    pub execution: Handle<ExecutionObserver>,
    pub coverage: Handle<CoverageObserver>,
    pub counters: Handle<CounterMapObserver>,
    pub counter_names: Handle<CounterNamesObserver>,
}

/// The observers of an execution as a campaign or a replay sets them up for a configuration.
/// Feedbacks are built on references to them first; then the executor takes them all.
pub struct ExecutionObservers {
    pub execution: ExecutionObserver,
    pub coverage: CoverageObserver,
    pub counters: CounterMapObserver,
    pub counter_names: CounterNamesObserver,
    instruments: Instruments,
}

/// The executor's observer tuple.
pub type ObserverTuple = tuple_list_type!(
    ExecutionObserver,
    CoverageObserver,
    CounterMapObserver,
    CounterNamesObserver
);

impl ExecutionObservers {
    pub fn new(config: &Config) -> anyhow::Result<Self> {
        let (instruments, coverage) = Instruments::new(config)?;
        Ok(ExecutionObservers {
            execution: ExecutionObserver::new("execution"),
            coverage,
            counters: counter_map(config.observes_counters()),
            counter_names: CounterNamesObserver::new("counter_names"),
            instruments,
        })
    }

    /// The executor that compiles with `config`'s configurations and fills these observers.
    pub fn into_executor(
        self,
        programs: Arc<Programs>,
        config: Config,
        workdir: PathBuf,
    ) -> CompileRunExecutor<ObserverTuple> {
        // Compilers run in the private directory and are given its files' paths.
        let workdir = std::path::absolute(&workdir).unwrap_or(workdir);
        let source = SourceFile::new(private_dir(&workdir).join(VARIANT_SOURCE));
        let handles = ObserverHandles {
            execution: self.execution.handle(),
            coverage: self.coverage.handle(),
            counters: self.counters.handle(),
            counter_names: self.counter_names.handle(),
        };
        let reference_on_disagreement = config.reference_gate == ReferenceGate::OnDisagreement
            && !config
                .configurations
                .iter()
                .any(|tested| tested.same_command(&config.reference));
        CompileRunExecutor {
            observers: tuple_list!(self.execution, self.coverage, self.counters, self.counter_names),
            handles,
            instruments: self.instruments,
            totals: ExecutorTotals::default(),
            unlisted: LISTED_EVERY,
            programs,
            config,
            reference_on_disagreement,
            workdir,
            source,
        }
    }
}

pub struct CompileRunExecutor<OT> {
    observers: OT,
    handles: ObserverHandles,
    instruments: Instruments,
    programs: Arc<Programs>,
    config: Config,
    /// The gate runs on disagreement: asked for, and the reference is no tested configuration.
    reference_on_disagreement: bool,
    workdir: PathBuf,
    source: SourceFile,
    /// Executions since the private directory was last listed and emptied.
    unlisted: u32,
    pub totals: ExecutorTotals,
}

/// A clean execution leaves only the variant's source in the executor's directory (each binary
/// is removed once it ran): the directory is listed and emptied every this many executions,
/// for what a configuration writes beside them (`-save-temps`, dump files), and after every
/// execution that may have left something (a compiler killed or crashed, a tie-breaker run,
/// an instrumented compiler, an error of ours). Listing it each time was a fortieth
/// of the client's CPU against tcc.
const LISTED_EVERY: u32 = 16;

/// What an executor added up over all its executions.
#[derive(Debug, Default)]
pub struct ExecutorTotals {
    /// Every optimization counter summed (the counters experiment's measure, as YARPGen's: how
    /// often the optimizer did each thing over the whole run).
    pub counters: Counters,
    /// Binaries not run because another configuration had linked the same bytes.
    pub reused_runs: u64,
    /// Variants the reference compiled (all of them, unless the gate runs on disagreement).
    pub reference_runs: u64,
}

/// What one execution reported, before it is moved into the observers.
struct Reports {
    execution: ExecutionObserver,
    /// Binaries of this variant not run because an earlier one had the same bytes.
    reused_runs: u64,
    reference_runs: u64,
    counter_names: CounterNamesObserver,
    lines: Option<GcovCoverage>,
    /// A compiler was killed or crashed, or a tie-breaker ran: files may be left behind.
    untidy: bool,
}

/// Whether a compiler ended as compilers do, having removed its own temporary files.
fn ended_tidily(outcome: &ConfigOutcome) -> bool {
    matches!(outcome, ConfigOutcome::Ran { .. } | ConfigOutcome::Rejected { .. })
}

impl<OT> CompileRunExecutor<OT> {
    /// Compiles and runs one variant with the reference, then, when it passes the validity
    /// gate, with every configuration. With the gate on disagreement, the tested configurations
    /// run first and the reference only decides when one of them does not print the seed's
    /// output.
    fn execute(&mut self, input: &Variant, reports: &mut Reports, list_dir: bool) -> anyhow::Result<()> {
        let loaded = self.programs.get(&input.seed)?;
        let text = self.programs.materialize(input)?;
        let dir = if list_dir {
            self.emptied_private_dir()?
        } else {
            self.private_dir()
        };
        let dir = dir.as_path();
        self.source
            .write(text.as_bytes())
            .with_context(|| format!("cannot write {}", self.source.path().display()))?;
        let source = self.source.path();
        let run_timeout = variant_run_timeout(loaded.seed.profile.run_ms, self.config.run_timeout());
        let reference = &self.config.reference;
        // With the gate on disagreement the reference links a binary only now and then.
        let binaries = self.config.configurations.len() + usize::from(!self.reference_on_disagreement);
        let mut runs = BinaryRuns::for_binaries(binaries);
        let variant = VariantFiles {
            source,
            dir,
            seed: &loaded.seed,
            run_timeout,
        };
        let mut consulted = None;
        if !self.reference_on_disagreement {
            match self.consult_reference(&variant, &mut runs, reports)? {
                Some(decision) => consulted = Some(decision),
                None => return Ok(()),
            }
        }
        for (index, config) in self.config.configurations.iter().enumerate() {
            // The reference already ran: a tested copy of it is not compiled twice.
            if let Some((reference_outcome, reference_time, reference_is_wrong)) = &consulted {
                if config.observe == Default::default() && config.same_command(reference) {
                    if !reference_is_wrong {
                        reports.execution.record(
                            config.name(),
                            reference_outcome.clone(),
                            reference_time.as_millis() as u64,
                        );
                    }
                    continue;
                }
            }
            let binary = dir.join(format!("prog{index}"));
            let (outcome, compile_time) = compile_and_run(
                config,
                source,
                &binary,
                &self.instruments.before(index, dir),
                self.config.compile_timeout(),
                run_timeout,
                &mut runs,
            )?;
            if let ConfigOutcome::Rejected { message } = &outcome {
                log::warn!("{} rejected a variant of seed {}: {message}", config.name(), input.seed);
            }
            // A compiler that crashed may leave no report: the outcome says what happened.
            match self.instruments.after(index, config, dir, &mut reports.counter_names) {
                Ok(Some(lines)) => reports.lines = Some(lines),
                Ok(None) => {}
                Err(e) => log::warn!("{e:#}"),
            }
            reports.untidy |= !ended_tidily(&outcome);
            let disagrees = !prints_seed_output(&outcome, &loaded.seed);
            reports
                .execution
                .record(config.name(), outcome, compile_time.as_millis() as u64);
            if disagrees && consulted.is_none() {
                match self.consult_reference(&variant, &mut runs, reports)? {
                    Some(decision) => consulted = Some(decision),
                    None => {
                        // Invalid: what the tested configurations did is no observation.
                        reports.execution.outcomes.clear();
                        reports.lines = None;
                        reports.counter_names.counters.clear();
                        return Ok(());
                    }
                }
            }
        }
        reports.reused_runs = runs.reused;
        Ok(())
    }

    /// Where the executor compiles and runs: the compilers' `TMPDIR` too.
    pub fn private_dir(&self) -> PathBuf {
        private_dir(&self.workdir)
    }

    /// The executor's private directory, emptied of the last execution's files (a compiler
    /// that crashed may have left its temporaries): creating and removing a directory for each
    /// execution took a twentieth of the client's CPU against tcc.
    fn emptied_private_dir(&mut self) -> anyhow::Result<PathBuf> {
        let dir = self.private_dir();
        empty_keeping_source(&dir, &mut self.source)?;
        Ok(dir)
    }

    /// Compiles and runs the variant with the reference and applies the validity gate: `None`
    /// when the variant is invalid (the reason is in `reports`), else the reference's outcome,
    /// its compile time and whether the reference is wrong (then its outcome is recorded as a
    /// finding's).
    fn consult_reference(
        &self,
        variant: &VariantFiles,
        runs: &mut BinaryRuns,
        reports: &mut Reports,
    ) -> anyhow::Result<Option<(ConfigOutcome, std::time::Duration, bool)>> {
        let reference = &self.config.reference;
        reports.reference_runs += 1;
        let binary = variant.dir.join("reference");
        let (outcome, time) = compile_and_run(
            reference,
            variant.source,
            &binary,
            &Additions::default(),
            self.config.compile_timeout(),
            variant.run_timeout,
            runs,
        )?;
        reports.untidy |= !ended_tidily(&outcome);
        let reference_is_wrong = match gate(&outcome, variant.seed) {
            Gate::Valid => false,
            Gate::ReferenceFailed => true,
            Gate::Invalid(reason) => {
                reports.execution.invalid = Some(reason);
                return Ok(None);
            }
            Gate::AskAnother => {
                reports.untidy = true;
                if !self.another_prints_seed_output(variant)? {
                    reports.execution.invalid =
                        Some(format!("the reference prints something else: {}", outcome.describe()));
                    return Ok(None);
                }
                true
            }
        };
        if reference_is_wrong {
            reports
                .execution
                .record(reference.name(), outcome.clone(), time.as_millis() as u64);
        }
        Ok(Some((outcome, time, reference_is_wrong)))
    }
}

/// A variant's files and what its runs are held to.
struct VariantFiles<'a> {
    source: &'a Path,
    dir: &'a Path,
    seed: &'a Seed,
    run_timeout: std::time::Duration,
}

impl<OT> CompileRunExecutor<OT> {
    /// Whether a UB-check configuration (another compiler family at -O0) runs the variant to
    /// the seed's output: then a reference that does not is wrong, not the variant.
    fn another_prints_seed_output(&self, variant: &VariantFiles) -> anyhow::Result<bool> {
        for check in &self.config.ub_check {
            let (outcome, _) = compile_and_run(
                check,
                variant.source,
                &variant.dir.join("tie-breaker"),
                &Additions::default(),
                self.config.compile_timeout(),
                variant.run_timeout,
                &mut BinaryRuns::for_binaries(1),
            )?;
            if prints_seed_output(&outcome, variant.seed) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl<OT> HasObservers for CompileRunExecutor<OT> {
    type Observers = OT;

    fn observers(&self) -> RefIndexable<&Self::Observers, Self::Observers> {
        RefIndexable::from(&self.observers)
    }

    fn observers_mut(&mut self) -> RefIndexable<&mut Self::Observers, Self::Observers> {
        RefIndexable::from(&mut self.observers)
    }
}

fn missing(what: &str) -> Error {
    Error::key_not_found(format!("{what} observer"))
}

impl<EM, S, Z, OT> Executor<EM, Variant, S, Z> for CompileRunExecutor<OT>
where
    S: HasExecutions,
    OT: MatchNameRef,
{
    fn run_target(
        &mut self,
        _fuzzer: &mut Z,
        state: &mut S,
        _mgr: &mut EM,
        input: &Variant,
    ) -> Result<ExitKind, Error> {
        *state.executions_mut() += 1;
        let mut reports = Reports {
            execution: ExecutionObserver::new("execution"),
            reused_runs: 0,
            reference_runs: 0,
            counter_names: CounterNamesObserver::new("counter_names"),
            lines: None,
            untidy: false,
        };
        // An I/O failure of ours (disk full, store unreadable) must not kill the client:
        // the variant is reported and skipped with no outcomes. A run abandoned because the
        // campaign stops is not judged at all: the client loop sees the error and stops.
        let list_dir = self.unlisted >= LISTED_EVERY;
        let executed = self.execute(input, &mut reports, list_dir);
        let clean = executed.is_ok() && !reports.untidy && !self.instruments.any();
        self.unlisted = match (clean, list_dir) {
            (false, _) => LISTED_EVERY,
            (true, true) => 1,
            (true, false) => self.unlisted + 1,
        };
        if let Err(e) = executed {
            if e.is::<crate::ops::shutdown::Interrupted>() {
                return Err(Error::shutting_down());
            }
            log::error!("cannot execute a variant of seed {}: {e:#}", input.seed);
            reports.execution.outcomes.clear();
        }
        self.totals.reused_runs += reports.reused_runs;
        self.totals.reference_runs += reports.reference_runs;
        let handles = &self.handles;
        let observers = &mut self.observers;
        observers
            .get_mut(&handles.execution)
            .ok_or_else(|| missing("execution"))?
            .outcomes = reports.execution.outcomes;
        observers
            .get_mut(&handles.execution)
            .ok_or_else(|| missing("execution"))?
            .invalid = reports.execution.invalid;
        if let Some(lines) = reports.lines {
            lines.fill_map(
                observers
                    .get_mut(&handles.coverage)
                    .ok_or_else(|| missing("coverage"))?,
            );
        }
        fill_map(
            &reports.counter_names.counters,
            observers
                .get_mut(&handles.counters)
                .ok_or_else(|| missing("counter map"))?,
        );
        for (name, value) in &reports.counter_names.counters {
            *self.totals.counters.entry(name.clone()).or_default() += value;
        }
        observers
            .get_mut(&handles.counter_names)
            .ok_or_else(|| missing("counter names"))?
            .counters = reports.counter_names.counters;
        Ok(ExitKind::Ok)
    }
}

/// Empties `dir` but for the variant's source, which `source` forgets when it is not there: a
/// directory removed by someone else (a cleaner of `/dev/shm`, an operator) and created again
/// would otherwise have every later text written into the removed file.
fn empty_keeping_source(dir: &Path, source: &mut SourceFile) -> anyhow::Result<()> {
    match empty_dir(dir) {
        Ok(true) => {}
        Ok(false) => source.forget(),
        Err(_) => {
            // Something that cannot be removed one by one: the directory goes whole.
            source.forget();
            let _ = std::fs::remove_dir_all(dir);
            empty_dir(dir)?;
        }
    }
    Ok(())
}

/// Creates `dir`, or removes what it holds but the variant's source. Returns whether the source
/// was there.
fn empty_dir(dir: &Path) -> anyhow::Result<bool> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
            return Ok(false);
        }
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut source_kept = false;
    for entry in entries {
        let entry = entry?;
        // The variant's source is written over.
        if entry.file_name() == VARIANT_SOURCE {
            source_kept = true;
            continue;
        }
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        }
        .with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(source_kept)
}

/// Where an executor of the scratch directory `workdir` compiles and runs.
fn private_dir(workdir: &Path) -> PathBuf {
    workdir.join("exec")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_source_is_written_again_into_a_private_directory_removed_and_created_again() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = private_dir(scratch.path());
        let mut source = SourceFile::new(dir.join(VARIANT_SOURCE));
        empty_keeping_source(&dir, &mut source).unwrap();
        source.write(b"int main(void) { return 0; }\n").unwrap();
        std::fs::write(dir.join("a.out"), b"left by a compiler").unwrap();

        empty_keeping_source(&dir, &mut source).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1, "only the source stays");
        source.write(b"int main(void) { return 1; }\n").unwrap();
        assert_eq!(
            std::fs::read(dir.join(VARIANT_SOURCE)).unwrap(),
            b"int main(void) { return 1; }\n"
        );

        // Removed by someone else between two executions: the next text must reach the new
        // directory, not the removed file the descriptor still points to.
        std::fs::remove_dir_all(&dir).unwrap();
        empty_keeping_source(&dir, &mut source).unwrap();
        source.write(b"int main(void) { return 2; }\n").unwrap();
        assert_eq!(
            std::fs::read(dir.join(VARIANT_SOURCE)).unwrap(),
            b"int main(void) { return 2; }\n"
        );

        // Only the source removed.
        std::fs::remove_file(dir.join(VARIANT_SOURCE)).unwrap();
        empty_keeping_source(&dir, &mut source).unwrap();
        source.write(b"int main(void) { return 3; }\n").unwrap();
        assert_eq!(
            std::fs::read(dir.join(VARIANT_SOURCE)).unwrap(),
            b"int main(void) { return 3; }\n"
        );
    }
}
