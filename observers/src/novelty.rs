//! How much an execution added to what the corpus already covers: novel compiler-coverage
//! entries (edges or gcov lines) and novel optimization counters. The MCMC energy and the
//! reports read these; the map feedbacks decide what enters the corpus.

use crate::counters::{slot, CounterMapObserver, CounterNamesObserver, Counters};
use crate::coverage::CoverageObserver;
use libafl::corpus::Testcase;
use libafl::executors::ExitKind;
use libafl::feedbacks::{Feedback, MapFeedbackMetadata, StateInitializer};
use libafl::observers::MapObserver;
use libafl::{Error, HasMetadata, HasNamedMetadata};
use libafl_bolts::tuples::{Handle, Handled, MatchNameRef};
use libafl_bolts::{impl_serdeany, Named};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Entries of `observer` that are set now and were never set by a corpus entry: the history
/// is the one its `MaxMapFeedback` keeps (named metadata under the observer's name), so this
/// is exact before the feedback records the execution.
pub fn novel_entries<O, S>(state: &S, observer: &O) -> usize
where
    O: MapObserver<Entry = u8>,
    S: HasNamedMetadata,
{
    let history = state
        .named_metadata_map()
        .get::<MapFeedbackMetadata<u8>>(observer.name())
        .map(|m| &m.history_map[..])
        .unwrap_or(&[]);
    (0..observer.len())
        .filter(|&i| observer.get(i) != 0 && history.get(i).copied().unwrap_or(0) == 0)
        .count()
}

/// Entries of the named map that some corpus entry has set (what its `MaxMapFeedback` holds).
pub fn covered_entries<S: HasNamedMetadata>(state: &S, map_name: &str) -> usize {
    state
        .named_metadata_map()
        .get::<MapFeedbackMetadata<u8>>(map_name)
        .map_or(0, |m| m.num_covered_map_indexes)
}

/// Novelty of the last execution (state metadata) or of the execution that added a testcase
/// (testcase metadata, written beside the corpus entry).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Novelty {
    /// Coverage-map entries (AFL edges or gcov lines) set for the first time.
    pub new_coverage: usize,
    /// Counter-map entries (optimization counters) set for the first time.
    pub new_counters: usize,
    /// Coverage-map entries set by the execution.
    pub coverage: usize,
    /// Counters the execution reported.
    pub counters: usize,
}
impl_serdeany!(Novelty);

/// The optimization counters that the compilation adding a testcase set first, with their
/// values: what it added (all of its counters would be kilobytes per corpus entry).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct NewCounters(pub Counters);
impl_serdeany!(NewCounters);

/// A feedback that never keeps anything itself: it measures [`Novelty`] on every execution
/// (state metadata `Novelty`), and attaches it and the counter names to new testcases. Put it
/// first in a `feedback_or!` with the map feedbacks, which update the history after it.
pub struct NoveltyFeedback {
    coverage: Handle<CoverageObserver>,
    counters: Handle<CounterMapObserver>,
    names: Handle<CounterNamesObserver>,
    last: Novelty,
    last_new_counters: Counters,
}

impl NoveltyFeedback {
    pub fn new(coverage: &CoverageObserver, counters: &CounterMapObserver, names: &CounterNamesObserver) -> Self {
        NoveltyFeedback {
            coverage: coverage.handle(),
            counters: counters.handle(),
            names: names.handle(),
            last: Novelty::default(),
            last_new_counters: Counters::default(),
        }
    }
}

impl Named for NoveltyFeedback {
    fn name(&self) -> &Cow<'static, str> {
        static NAME: Cow<'static, str> = Cow::Borrowed("novelty");
        &NAME
    }
}

impl<S> StateInitializer<S> for NoveltyFeedback {}

impl<EM, I, OT, S> Feedback<EM, I, OT, S> for NoveltyFeedback
where
    OT: MatchNameRef,
    S: HasMetadata + HasNamedMetadata,
{
    fn is_interesting(
        &mut self,
        state: &mut S,
        _mgr: &mut EM,
        _input: &I,
        observers: &OT,
        _exit_kind: &ExitKind,
    ) -> Result<bool, Error> {
        let coverage = observers
            .get(&self.coverage)
            .ok_or_else(|| Error::key_not_found("coverage observer"))?;
        let counters = observers
            .get(&self.counters)
            .ok_or_else(|| Error::key_not_found("counter map observer"))?;
        let names = observers
            .get(&self.names)
            .ok_or_else(|| Error::key_not_found("counter names observer"))?;
        self.last = Novelty {
            new_coverage: novel_entries(state, coverage),
            new_counters: novel_entries(state, counters),
            coverage: coverage.count_bytes() as usize,
            counters: names.counters.len(),
        };
        let history = state
            .named_metadata_map()
            .get::<MapFeedbackMetadata<u8>>(counters.name())
            .map(|m| &m.history_map[..])
            .unwrap_or(&[]);
        self.last_new_counters = names
            .counters
            .iter()
            .filter(|(name, value)| **value > 0 && history.get(slot(name, counters.len())).copied().unwrap_or(0) == 0)
            .map(|(name, value)| (name.clone(), *value))
            .collect();
        *state.metadata_or_insert_with(Novelty::default) = self.last;
        Ok(false)
    }

    fn append_metadata(
        &mut self,
        _state: &mut S,
        _mgr: &mut EM,
        _observers: &OT,
        testcase: &mut Testcase<I>,
    ) -> Result<(), Error> {
        testcase.add_metadata(self.last);
        if !self.last_new_counters.is_empty() {
            testcase.add_metadata(NewCounters(std::mem::take(&mut self.last_new_counters)));
        }
        Ok(())
    }
}
