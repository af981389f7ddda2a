//! What is observed inside the compilers: before each compilation of an observed
//! configuration, the flags and environment that make the compiler report (AFL++ map id and
//! size, `GCOV_PREFIX`, counter dump files in the execution's private directory); after it,
//! reading the reports into the observers.

use crate::config::{CompilerConfig, Config, CounterFamily, Coverage};
pub use crate::process::compile::Additions;
use anyhow::{Context, Result};
use ccfuzz_observers::counters::{CounterNamesObserver, CounterSource};
use ccfuzz_observers::coverage::{map_size_for, private_map, AflMap, CoverageObserver, GCOV_MAP_SIZE};
use ccfuzz_observers::gcov::{gcov_env, take_gcov, GcovCoverage};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug)]
struct ConfigObservation {
    coverage: Option<Coverage>,
    counters: Option<CounterSource>,
}

/// The observation plan of a campaign client, one entry per configuration under test.
pub struct Instruments {
    /// Keeps the shared-memory segment alive as long as the executor and its observer.
    afl: Option<AflMap>,
    observed: Vec<ConfigObservation>,
}

impl Instruments {
    /// Whether any configuration is observed: its compiler (or its dump files) may leave files
    /// in the executor's directory at every execution.
    pub fn any(&self) -> bool {
        self.observed
            .iter()
            .any(|o| o.coverage.is_some() || o.counters.is_some())
    }

    /// The plan for `config` and the coverage observer it fills: `edges` in shared memory for
    /// an AFL++-instrumented compiler, `lines` for a gcov-built one, or an unused one-entry map.
    pub fn new(config: &Config) -> Result<(Self, CoverageObserver)> {
        let mut afl = None;
        let mut observer = private_map("edges", 1);
        let mut observed = Vec::new();
        for configuration in &config.configurations {
            let program = configuration.argv().first().cloned().unwrap_or_default();
            match configuration.observe.coverage {
                Some(Coverage::Afl) => {
                    let size = map_size_for(&program, configuration.observe.map_size)?;
                    let (map, edges) = AflMap::new(size)?;
                    log::info!("{}: AFL map of {size} entries", configuration.name());
                    afl = Some(map);
                    observer = edges;
                }
                Some(Coverage::Gcov) => observer = private_map("lines", GCOV_MAP_SIZE),
                None => {}
            }
            let counters = configuration.observe.counters.map(|family| match family {
                CounterFamily::Gcc => CounterSource::GccStatistics,
                CounterFamily::Llvm => CounterSource::for_llvm(&program),
            });
            if let Some(source) = counters {
                log::info!("{}: optimization counters from {source:?}", configuration.name());
            }
            observed.push(ConfigObservation {
                coverage: configuration.observe.coverage,
                counters,
            });
        }
        Ok((Instruments { afl, observed }, observer))
    }

    /// What to add to the compilation of configuration `index` in the private directory `dir`.
    pub fn before(&self, index: usize, dir: &Path) -> Additions {
        let mut additions = Additions::default();
        let Some(observed) = self.observed.get(index) else {
            return additions;
        };
        match (observed.coverage, &self.afl) {
            (Some(Coverage::Afl), Some(map)) => additions.env.extend(map.env()),
            (Some(Coverage::Gcov), _) => additions.env.extend(gcov_env(&gcov_prefix(dir, index))),
            _ => {}
        }
        if let Some(source) = observed.counters {
            additions.args.extend(source.flags(&counter_dump(dir, index)));
        }
        additions
    }

    /// Reads what the compilation of configuration `index` reported and removes the reports:
    /// its counters go to `names`, its gcov lines are returned (AFL edges are already in the
    /// shared map).
    pub fn after(
        &self,
        index: usize,
        configuration: &CompilerConfig,
        dir: &Path,
        names: &mut CounterNamesObserver,
    ) -> Result<Option<GcovCoverage>> {
        let Some(observed) = self.observed.get(index) else {
            return Ok(None);
        };
        if let Some(source) = observed.counters {
            let counters = source
                .take(&counter_dump(dir, index))
                .with_context(|| format!("unreadable counters of {}", configuration.name()))?;
            names.add(configuration.name(), counters);
        }
        if observed.coverage == Some(Coverage::Gcov) {
            let lines = take_gcov(&gcov_prefix(dir, index), "gcov")
                .with_context(|| format!("no gcov coverage from {}", configuration.name()))?;
            return Ok(Some(lines));
        }
        Ok(None)
    }
}

fn gcov_prefix(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("gcov-{index}"))
}

fn counter_dump(dir: &Path, index: usize) -> PathBuf {
    dir.join(format!("counters-{index}"))
}
