//! Resuming a campaign: the variants saved in `corpus/` put back into a fresh state without
//! executing them.

use crate::campaign::options::CampaignState;
use crate::judge::new_seed::SeedsInCorpus;
use anyhow::Result;
use ccfuzz_mutators::input::Variant;
use libafl::corpus::{Corpus, Testcase};
use libafl::inputs::Input;
use libafl::state::HasCorpus;
use libafl::{Error, HasMetadata};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// Puts the variants saved in `corpus/` back into a fresh state without executing them.
pub fn reload_corpus(state: &mut CampaignState, dir: &Path) -> Result<usize, Error> {
    let mut names: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries.filter_map(|e| e.ok().map(|e| e.path())).collect(),
        Err(_) => return Ok(0),
    };
    names.sort();
    let known: HashSet<String> = state
        .corpus()
        .ids()
        .filter_map(|id| {
            state
                .corpus()
                .get(id)
                .ok()
                .and_then(|t| t.borrow().input().as_ref().map(Variant::name))
        })
        .collect();
    let mut loaded = 0;
    for path in names {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if name.starts_with('.') || known.contains(&name) {
            continue;
        }
        let Ok(variant) = Variant::from_file(&path) else {
            continue;
        };
        if variant.edits().is_empty() {
            state
                .metadata_or_insert_with(SeedsInCorpus::default)
                .0
                .insert(variant.seed.clone());
        }
        // Under its file's name, which the chains file knows it by (see `restore_chains`).
        state.corpus_mut().add(Testcase::with_filename(variant, name))?;
        loaded += 1;
    }
    Ok(loaded)
}
