//! `ccfuzz replay`: saved variants executed again through the campaign's executor and objective.

use crate::config::Config;
use crate::exec::executor::ExecutionObservers;
use crate::judge::findings::FindingsCorpus;
use crate::judge::new_seed::NewSeedFeedback;
use crate::judge::objective::FindingsObjective;
use anyhow::Result;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::SeedStore;
use libafl::fuzzer::{Evaluator, StdFuzzer};
use libafl::inputs::Input;
use libafl::schedulers::QueueScheduler;
use libafl::state::StdState;
use libafl_bolts::current_nanos;
use libafl_bolts::rands::StdRand;
use libafl_bolts::tuples::Handled;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Executes saved variants (corpus files) through the campaign's executor and
/// objective, printing every configuration's outcome; new findings go to `out/findings`.
pub fn replay(out: &Path, config: &Config, files: &[PathBuf]) -> Result<()> {
    use libafl::corpus::InMemoryCorpus;
    use libafl::events::SimpleEventManager;
    use libafl::fuzzer::ExecuteInputResult;
    use libafl::monitors::NopMonitor;

    crate::ops::format_version::check(out, "campaign")?;
    let store = SeedStore::open(out.join("seeds"))?;
    let programs = Arc::new(Programs::new(store, 16 << 20));
    let observers = ExecutionObservers::new(config)?;
    let handle = observers.execution.handle();
    let mut feedback = NewSeedFeedback;
    let mut objective = FindingsObjective::new(handle.clone(), programs.clone());
    let mut state: StdState<InMemoryCorpus<Variant>, Variant, StdRand, FindingsCorpus> = StdState::new(
        StdRand::with_seed(current_nanos()),
        InMemoryCorpus::new(),
        FindingsCorpus::new(out.join("findings"), config.clone()),
        &mut feedback,
        &mut objective,
    )?;
    let mut fuzzer = StdFuzzer::new(QueueScheduler::new(), feedback, objective);
    let workdir = out.join("tmp").join(format!("replay-{}", std::process::id()));
    let mut executor = observers.into_executor(programs, config.clone(), workdir.clone());
    let mut mgr = SimpleEventManager::new(NopMonitor::new());
    for file in files {
        let variant =
            Variant::from_file(file).map_err(|e| anyhow::anyhow!("{} is not a saved variant: {e}", file.display()))?;
        let (result, _) = fuzzer.evaluate_input(&mut state, &mut executor, &mut mgr, &variant)?;
        println!(
            "{} (seed {}, {} edits):",
            file.display(),
            variant.seed,
            variant.edits().len()
        );
        let observers = libafl::executors::HasObservers::observers(&executor);
        if let Some(reason) = &observers[&handle].invalid {
            println!("  invalid: {reason}");
        }
        for outcome in &observers[&handle].outcomes {
            println!("  {:<32} {}", outcome.config, outcome.outcome.describe());
        }
        if result == ExecuteInputResult::Solution {
            println!("  => new finding saved in {}", out.join("findings").display());
        }
    }
    let _ = std::fs::remove_dir_all(workdir);
    Ok(())
}
