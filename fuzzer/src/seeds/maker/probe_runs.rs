//! Profiling a seed's valuations: the values its variables hold at sampled points, under every
//! compiler family of the campaign, for Hermes's snippets.

use super::SeedMaker;
use crate::config::CompilerConfig;
use crate::process::compile::run_binary;
use anyhow::Result;
use ccfuzz_mutators::model::Program;
use ccfuzz_mutators::seed::Seed;
use ccfuzz_mutators::valuation::{Valuation, ValuationPlan, OUTPUT_FILE};
use libafl_bolts::rands::StdRand;
use std::path::Path;

/// Samples of valuation points tried before a seed goes without valuations.
const VALUATION_SAMPLES: usize = 3;

impl SeedMaker {
    /// Runs the seed instrumented with valuation probes at sampled points (the sample is
    /// drawn from the seed's id, so it is the same every time). A sample that a compiler does
    /// not take gives way to another: pcc rejects some probed programs with a bogus syntax
    /// error in a system header, and a seed without valuations is lost to Hermes.
    pub(super) fn profile_valuation(
        &self,
        seed: &Seed,
        program: &Program,
        dir: &Path,
    ) -> Result<std::result::Result<Valuation, String>> {
        let mut rand = StdRand::with_seed(u64::from_str_radix(&seed.id.0[..16], 16).unwrap_or(0));
        let mut failure = String::new();
        for _ in 0..VALUATION_SAMPLES {
            let plan = ValuationPlan::sample(program, self.config.p_profile, &mut rand);
            match self.run_valuation_plan(seed, program, &plan, dir)? {
                Ok(valuation) => return Ok(Ok(valuation)),
                Err(reason) => failure = reason,
            }
        }
        Ok(Err(failure))
    }

    fn run_valuation_plan(
        &self,
        seed: &Seed,
        program: &Program,
        plan: &ValuationPlan,
        dir: &Path,
    ) -> Result<std::result::Result<Valuation, String>> {
        let source = dir.join("valuation.c");
        std::fs::write(&source, plan.instrument(program, seed.profile.include_block_len))?;
        let binary = dir.join("valuation");
        // The seed's output is the same under every compiler, but with operands evaluated in
        // another order the values at a point may differ (pcc assigns `*p = 0` in
        // `f() != g(*p = 0)` before it calls `f`, gcc after): the profile is the union over
        // every compiler family of the campaign at -O0, and a snippet built on it holds under
        // each of them.
        let mut valuation = Valuation::default();
        for compiler in &self.config.profiling_compilers() {
            let failure = self.compile_plain(compiler, &source, &binary)?;
            if let Some(failure) = failure {
                if !self.seed_runs_as_expected(compiler, seed, dir)? {
                    continue;
                }
                return Ok(Err(format!(
                    "the instrumented seed does not compile with {}: {}",
                    compiler.name(),
                    failure.describe()
                )));
            }
            let output = dir.join(OUTPUT_FILE);
            let _ = std::fs::remove_file(&output);
            let run = run_binary(&binary, self.config.seed_timeout() * 4)?;
            if !run.is_expected(seed.profile.expected_exit, &seed.expected_output) {
                if !self.seed_runs_as_expected(compiler, seed, dir)? {
                    continue;
                }
                return Ok(Err(format!(
                    "the probes changed what the seed does under {}: {}",
                    compiler.name(),
                    run.describe()
                )));
            }
            let probes = std::fs::read_to_string(&output).unwrap_or_default();
            valuation.merge(plan.parse_output(&probes));
        }
        Ok(Ok(valuation))
    }

    /// Whether `compiler` builds the seed itself into a binary that does what the seed must.
    /// One that does not (tcc lacks most `__builtin_*` of GCC's torture tests; a miscompiled
    /// seed is a finding of its own) never runs a variant as the seed does, so the values it
    /// would see do not constrain Hermes's snippets.
    fn seed_runs_as_expected(&self, compiler: &CompilerConfig, seed: &Seed, dir: &Path) -> Result<bool> {
        let binary = dir.join("plain");
        let failure = self.compile_plain(compiler, &dir.join("seed.c"), &binary)?;
        if failure.is_some() {
            return Ok(false);
        }
        let run = run_binary(&binary, self.config.seed_timeout())?;
        Ok(run.is_expected(seed.profile.expected_exit, &seed.expected_output))
    }
}
