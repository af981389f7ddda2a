//! Proposals whose C text already ran are not run again: Athena's restore moves and Orion's
//! fresh prunings often rebuild a program that a chain has already been through, and a second
//! compilation of the same text with the same compilers can show nothing new.

use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::programs::Programs;
use libafl::fuzzer::InputFilter;
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// How many recent texts a client remembers (16 bytes each).
pub const REMEMBERED_TEXTS: usize = 1 << 16;

/// After this many repeats in a row a repeat runs anyway: the chains can make nothing new (a
/// small seed whose few variants all ran), and a campaign that counts executions must still
/// reach its count. Above the client's rounds before a generated seed gives way (100), below
/// those before it starts waiting (1,000).
pub const RUN_AFTER_REPEATS: u32 = 500;

/// Proposals a client did not run because their text had run (state metadata, for its report).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct RepeatedTexts(pub u64);
impl_serdeany!(RepeatedTexts);

/// LibAFL's input filter on the text a variant materializes into: the most recent
/// [`REMEMBERED_TEXTS`] texts run by this client, by 64-bit hash.
pub struct RepeatedTextFilter {
    programs: Arc<Programs>,
    seen: HashSet<u64>,
    order: VecDeque<u64>,
    capacity: usize,
    repeats_in_a_row: u32,
}

impl RepeatedTextFilter {
    pub fn new(programs: Arc<Programs>, capacity: usize) -> Self {
        RepeatedTextFilter {
            programs,
            seen: HashSet::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
            repeats_in_a_row: 0,
        }
    }

    /// Whether `text` is new; a new text is remembered, the oldest forgotten past capacity.
    pub fn first_time(&mut self, text: &str) -> bool {
        // xxh3: SipHash took a fifth of a millisecond on a 240-KB text, each proposal.
        let hash = libafl_bolts::hash_std(text.as_bytes());
        if !self.seen.insert(hash) {
            return false;
        }
        self.order.push_back(hash);
        if self.order.len() > self.capacity {
            if let Some(oldest) = self.order.pop_front() {
                self.seen.remove(&oldest);
            }
        }
        true
    }
}

impl RepeatedTextFilter {
    /// Whether a proposal of `text` runs: a new text does, a repeat only after
    /// [`RUN_AFTER_REPEATS`] repeats in a row.
    pub fn runs(&mut self, text: &str) -> bool {
        if self.first_time(text) || self.repeats_in_a_row >= RUN_AFTER_REPEATS {
            self.repeats_in_a_row = 0;
            return true;
        }
        self.repeats_in_a_row += 1;
        false
    }
}

impl<EM, S: HasMetadata> InputFilter<EM, Variant, S> for RepeatedTextFilter {
    fn should_execute(&mut self, input: &Variant, state: &mut S, _manager: &mut EM) -> Result<bool, Error> {
        // A variant whose seed cannot be loaded runs, so that the executor reports why.
        let Ok(text) = self.programs.materialize(input) else {
            return Ok(true);
        };
        let runs = self.runs(&text);
        if !runs {
            state.metadata_or_insert_with(RepeatedTexts::default).0 += 1;
        }
        Ok(runs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfuzz_mutators::seed::SeedStore;

    #[test]
    fn a_repeat_runs_when_nothing_new_comes() {
        let dir = tempfile::tempdir().unwrap();
        let programs = Arc::new(Programs::new(SeedStore::open(dir.path()).unwrap(), 1));
        let mut filter = RepeatedTextFilter::new(programs, 16);
        assert!(filter.runs("int main(void) { return 0; }"));
        for _ in 0..RUN_AFTER_REPEATS {
            assert!(!filter.runs("int main(void) { return 0; }"));
        }
        assert!(filter.runs("int main(void) { return 0; }"));
        assert!(!filter.runs("int main(void) { return 0; }"));
        // A new text between repeats starts the count again.
        assert!(filter.runs("int main(void) { return 1; }"));
        assert!(!filter.runs("int main(void) { return 0; }"));
    }

    #[test]
    fn a_text_runs_once_until_it_is_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let programs = Arc::new(Programs::new(SeedStore::open(dir.path()).unwrap(), 1));
        let mut filter = RepeatedTextFilter::new(programs, 2);
        assert!(filter.first_time("int main(void) { return 0; }"));
        assert!(!filter.first_time("int main(void) { return 0; }"));
        assert!(filter.first_time("int main(void) { return 1; }"));
        assert!(filter.first_time("int main(void) { return 2; }"));
        // Capacity 2: the first text is forgotten and may run again.
        assert!(filter.first_time("int main(void) { return 0; }"));
        assert!(!filter.first_time("int main(void) { return 2; }"));
    }
}
