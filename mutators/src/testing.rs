//! Seeds for tests of this crate and of the crates above it (feature `testing`).

use crate::seed::{Seed, SeedId, SeedProfile, SeedStore};
use std::collections::BTreeMap;

/// Stores a seed of `statements` assignments to a global in `main`, every line executed once.
pub fn stored_counting_seed(store: &SeedStore, statements: usize) -> SeedId {
    let headers = store.put_headers("").unwrap();
    let body: String = (0..statements).map(|i| format!("  g = g + {i};\n")).collect();
    let text = format!("int g;\nint main(void) {{\n{body}  return 0;\n}}\n");
    let lines = (1..=statements as u32 + 4).map(|l| (l, 1)).collect::<BTreeMap<_, _>>();
    let profile = SeedProfile {
        origin: "test".into(),
        headers,
        include_block_len: 0,
        line_counts: lines,
        expected_exit: 0,
        run_ms: Some(1),
    };
    let seed = Seed::new(text, profile, Vec::new());
    store.put(&seed).unwrap();
    seed.id
}
