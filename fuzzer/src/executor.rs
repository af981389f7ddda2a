//! The LibAFL executor: materialize the variant, compile it with every configuration in a
//! private temporary directory, run each binary, and record the outcomes in the
//! [`ExecutionObserver`]. Compiler failures are outcomes, never errors of the fuzzer.

use crate::compile::compile_and_run;
use crate::config::Config;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_observers::{ConfigOutcome, ExecutionObserver};
use libafl::executors::{Executor, ExitKind, HasObservers};
use libafl::state::HasExecutions;
use libafl::Error;
use libafl_bolts::tuples::{Handle, MatchNameRef, RefIndexable};
use std::path::PathBuf;
use std::sync::Arc;

pub struct CompileRunExecutor<OT> {
    observers: OT,
    execution: Handle<ExecutionObserver>,
    programs: Arc<Programs>,
    config: Config,
    workdir: PathBuf,
}

impl<OT> CompileRunExecutor<OT> {
    pub fn new(
        observers: OT,
        execution: Handle<ExecutionObserver>,
        programs: Arc<Programs>,
        config: Config,
        workdir: PathBuf,
    ) -> Self {
        CompileRunExecutor {
            observers,
            execution,
            programs,
            config,
            workdir,
        }
    }

    /// Compiles and runs one variant with every configuration.
    fn execute(&self, input: &Variant, observer: &mut ExecutionObserver) -> anyhow::Result<()> {
        let text = self.programs.materialize(input)?;
        std::fs::create_dir_all(&self.workdir)?;
        let dir = tempfile::Builder::new().prefix("exec-").tempdir_in(&self.workdir)?;
        let source = dir.path().join("variant.c");
        std::fs::write(&source, text)?;
        for (index, config) in self.config.configurations.iter().enumerate() {
            let binary = dir.path().join(format!("prog{index}"));
            let (outcome, compile_time) = compile_and_run(
                config,
                &source,
                &binary,
                self.config.compile_timeout(),
                self.config.run_timeout(),
            )?;
            if let ConfigOutcome::Rejected { message } = &outcome {
                log::warn!("{} rejected a variant of seed {}: {message}", config.name(), input.seed);
            }
            let _ = std::fs::remove_file(&binary);
            observer.record(config.name(), outcome, compile_time.as_millis() as u64);
        }
        Ok(())
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
        let mut recorded = ExecutionObserver::new("execution");
        // An I/O failure of ours (disk full, store unreadable) must not kill the client:
        // the variant is reported and skipped with no outcomes.
        if let Err(e) = self.execute(input, &mut recorded) {
            log::error!("cannot execute a variant of seed {}: {e:#}", input.seed);
            recorded.outcomes.clear();
        }
        let observer = self
            .observers
            .get_mut(&self.execution)
            .ok_or_else(|| Error::key_not_found("execution observer"))?;
        observer.outcomes = recorded.outcomes;
        Ok(ExitKind::Ok)
    }
}
