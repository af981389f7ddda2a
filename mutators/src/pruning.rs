//! Retired seeds that nothing kept refers to leave a campaign's store, so that `seeds/` stays
//! bounded: a retired csmith seed is about 50 KB gzipped, and against tcc a client makes
//! hundreds an hour.
//!
//! A seed goes when
//! - a chain retired it (its text is gzipped, [`SeedStore::compress`]);
//! - it is not among the `keep_newest` seeds stored last: every client of a node starts a chain
//!   on every seed and its rotation retires the oldest chain when one starts, so a seed that
//!   many seeds old has retired on every client;
//! - no finding names it (triage minimizes a finding's edits on its seed);
//! - no file of the corpus refers to it but its own unedited entry, which goes with it: a state
//!   that added coverage or counters stays readable.

use crate::input::saved_seed;
use crate::saved::{metadata_path, remove_if_there};
use crate::seed::{SeedId, SeedStore};
use anyhow::{Context, Result};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a campaign's directory keeps that refers to seeds.
struct References {
    /// Seeds that a finding, or a corpus file other than the seed's unedited entry, refers to.
    needed: HashSet<SeedId>,
    /// The unedited entries' files, by seed.
    unedited: HashMap<SeedId, Vec<PathBuf>>,
}

/// Removes the seeds of `store` that may go (see the module) from the campaign directory `out`,
/// with their unedited corpus entries. Returns how many seeds went.
pub fn prune_retired_seeds(store: &SeedStore, out: &Path, keep_newest: usize) -> Result<usize> {
    let mut retired = Vec::new();
    let mut stored_at = Vec::new();
    for id in store.ids()? {
        if let Some(time) = store.stored_at(&id) {
            stored_at.push(time);
            if store.is_retired(&id) {
                retired.push((time, id));
            }
        }
    }
    if stored_at.len() <= keep_newest {
        return Ok(0);
    }
    stored_at.sort_unstable_by(|a, b| b.cmp(a));
    // Seeds stored before the oldest of the newest `keep_newest`.
    let cutoff = keep_newest.checked_sub(1).map(|oldest_kept| stored_at[oldest_kept]);
    let old: Vec<SeedId> = retired
        .into_iter()
        .filter(|(time, _)| cutoff.is_none_or(|cutoff| *time < cutoff))
        .map(|(_, id)| id)
        .collect();
    if old.is_empty() {
        return Ok(0);
    }
    let references = references(out)?;
    let mut pruned = 0;
    for id in old.into_iter().filter(|id| !references.needed.contains(id)) {
        for file in references.unedited.get(&id).into_iter().flatten() {
            for path in [file.clone(), metadata_path(file)] {
                remove_if_there(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
        if store.remove(&id)? {
            pruned += 1;
        }
    }
    Ok(pruned)
}

/// The seeds the findings and the corpus of `out` refer to.
fn references(out: &Path) -> Result<References> {
    let mut references = References {
        needed: HashSet::new(),
        unedited: HashMap::new(),
    };
    for finding in entries(&out.join("findings"))? {
        let Ok(bytes) = std::fs::read(finding.join("finding.json")) else {
            continue;
        };
        let seed = serde_json::from_slice::<serde_json::Value>(&bytes)
            .ok()
            .and_then(|json| json["seed"].as_str().map(|s| SeedId(s.to_string())));
        references.needed.extend(seed);
    }
    for file in entries(&out.join("corpus"))? {
        // The seed and whether there are edits are in the first bytes.
        let mut head = Vec::with_capacity(128);
        let Ok(mut opened) = std::fs::File::open(&file) else {
            continue;
        };
        opened.by_ref().take(128).read_to_end(&mut head)?;
        match saved_seed(&head) {
            Some((seed, true)) => references.unedited.entry(seed).or_default().push(file),
            Some((seed, false)) => {
                references.needed.insert(seed);
            }
            None => {}
        }
    }
    Ok(references)
}

/// The entries of `dir` whose names do not start with a dot; none if it does not exist.
fn entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    let mut paths = Vec::new();
    for entry in listing {
        let entry = entry?;
        if !entry.file_name().to_string_lossy().starts_with('.') {
            paths.push(entry.path());
        }
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edit::Edit;
    use crate::input::Variant;
    use crate::testing::stored_counting_seed;
    use libafl::inputs::Input;

    #[test]
    fn old_retired_seeds_go_unless_a_finding_or_a_kept_state_needs_them() {
        let out = tempfile::tempdir().unwrap();
        let out = out.path();
        let store = SeedStore::open(out.join("seeds")).unwrap();
        std::fs::create_dir_all(out.join("corpus")).unwrap();
        // Seeds stored one after the other, each with its unedited entry in the corpus.
        let seeds: Vec<SeedId> = (1..=6)
            .map(|n| {
                let id = stored_counting_seed(&store, n);
                let unedited = Variant::of_seed(id.clone());
                unedited.to_file(out.join("corpus").join(unedited.name())).unwrap();
                std::thread::sleep(std::time::Duration::from_millis(20));
                id
            })
            .collect();
        // All but the last have retired; the newest two are kept whatever they are.
        for id in &seeds[..5] {
            store.compress(id).unwrap();
        }
        // A finding names seed 0; a kept state reads seed 1.
        let finding = out.join("findings").join("mismatch-1");
        std::fs::create_dir_all(&finding).unwrap();
        std::fs::write(finding.join("finding.json"), format!(r#"{{"seed": "{}"}}"#, seeds[0])).unwrap();
        let kept = Variant::new(seeds[1].clone(), vec![Edit::Delete { stmt: 2 }]);
        kept.to_file(out.join("corpus").join(kept.name())).unwrap();

        // LibAFL's metadata file of a pruned seed's entry goes with the entry.
        let pruned_entry = out.join("corpus").join(Variant::of_seed(seeds[2].clone()).name());
        std::fs::write(crate::saved::metadata_path(&pruned_entry), "{}").unwrap();
        assert_eq!(prune_retired_seeds(&store, out, 2).unwrap(), 2);
        assert!(!crate::saved::metadata_path(&pruned_entry).exists());
        let left: Vec<bool> = seeds.iter().map(|id| store.contains(id)).collect();
        assert_eq!(left, [true, true, false, false, true, true]);
        // The pruned seeds' unedited entries went with them; every other file stays.
        for (id, there) in seeds.iter().zip(&left) {
            let entry = out.join("corpus").join(Variant::of_seed(id.clone()).name());
            assert_eq!(entry.exists(), *there, "{id}");
        }
        assert!(out.join("corpus").join(kept.name()).exists());
        // Nothing more may go.
        assert_eq!(prune_retired_seeds(&store, out, 2).unwrap(), 0);
        assert_eq!(prune_retired_seeds(&store, out, 10).unwrap(), 0);
    }
}
