//! Tests of the corpus of variants: states saved late and as differences, read back whole.

use super::*;
use crate::edit::Edit;
use crate::input::{Parent, CHECKPOINT, DELTA_MAGIC};
use crate::seed::SeedId;
use std::sync::Arc;

fn corpus_in(dir: &Path) -> VariantCorpus {
    VariantCorpus::new(dir.to_path_buf(), 4, false, true).unwrap()
}

fn is_difference(path: &Path) -> bool {
    std::fs::read(path).unwrap().starts_with(DELTA_MAGIC)
}

/// A chain of `moves` states, each proposed from the one before by deleting a statement,
/// now and then restoring an earlier deletion, added to `corpus` as the fuzzer adds them.
fn saved_chain(corpus: &mut VariantCorpus, moves: u32) -> Vec<(CorpusId, Variant)> {
    let mut state = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
    let mut states = vec![(corpus.add(Testcase::new(state.clone())).unwrap(), state.clone())];
    for step in 0..moves {
        let mut proposal = state.clone();
        proposal.descend();
        if step % 5 == 4 {
            let edits = proposal.edits_mut();
            edits.remove(step as usize % edits.len());
        } else {
            proposal.edits_mut().push(Edit::InsertBefore {
                stmt: step,
                code: format!("if (g == {step}) {{ g = g + 1; }}").into(),
            });
        }
        let id = corpus.add(Testcase::new(proposal.clone())).unwrap();
        states.push((id, proposal.clone()));
        state = proposal;
    }
    states
}

#[test]
fn chain_states_are_saved_as_differences_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut corpus = corpus_in(dir.path());
    let states = saved_chain(&mut corpus, 200);
    corpus.write_out_all().unwrap();
    for (_, state) in &states {
        let read = Variant::from_file(dir.path().join(state.name())).unwrap();
        assert_eq!(read.edits(), state.edits());
        assert_eq!(read.name(), state.name());
    }
    let sizes: Vec<u64> = states
        .iter()
        .map(|(_, s)| std::fs::metadata(dir.path().join(s.name())).unwrap().len())
        .collect();
    let whole_size = postcard::to_allocvec(&states.last().unwrap().1).unwrap().len() as u64;
    let mean = sizes.iter().sum::<u64>() / sizes.len() as u64;
    // Whole saves would average half the last state; differences and a checkpoint every
    // 16 moves stay far below.
    assert!(
        mean * 4 < whole_size / 2,
        "mean {mean} bytes, last state {whole_size} bytes whole"
    );
    // A checkpoint is whole: reading it needs no other file.
    let at = |generation: u32| dir.path().join(states[generation as usize].1.name());
    assert!(!is_difference(&at(CHECKPOINT)));
    assert!(is_difference(&at(CHECKPOINT + 1)));
}

#[test]
fn a_state_saved_again_keeps_its_first_save() {
    let dir = tempfile::tempdir().unwrap();
    let mut corpus = corpus_in(dir.path());
    let states = saved_chain(&mut corpus, 3);
    corpus.write_out_all().unwrap();
    // Another chain reached the last state from elsewhere: its save would name a parent that
    // is newer than the file.
    let mut again = states[3].1.clone();
    again.lineage.parent = Some(Arc::new(Parent {
        name: states[1].1.name(),
        edits: Arc::new(states[1].1.edits().to_vec()),
    }));
    let path = dir.path().join(again.name());
    let first = std::fs::read(&path).unwrap();
    corpus.add(Testcase::new(again)).unwrap();
    corpus.write_out_all().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), first);
    assert_eq!(Variant::from_file(&path).unwrap().edits(), states[3].1.edits());
}

#[test]
fn states_are_read_from_memory_and_written_as_differences_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    let mut corpus = corpus_in(dir.path());
    let states = saved_chain(&mut corpus, 4);
    let paths: Vec<PathBuf> = states.iter().map(|(_, s)| dir.path().join(s.name())).collect();
    assert!(paths.iter().all(|p| !p.exists()));
    for (id, state) in &states {
        assert_eq!(corpus.cloned_input_for_id(*id).unwrap().edits(), state.edits());
    }
    // Needed on disk in order (the chains file named each in turn): each but the first is the
    // difference from the one before, and reads back whole from disk alone.
    for (_, state) in &states {
        corpus.pin(&state.name()).unwrap();
    }
    assert!(!is_difference(&paths[0]));
    for ((_, state), path) in states.iter().zip(&paths).skip(1) {
        assert!(is_difference(path));
        assert_eq!(Variant::from_file(path).unwrap().edits(), state.edits());
    }
}

#[test]
fn a_state_whose_parent_file_is_not_this_corpus_s_is_saved_whole() {
    // Another client's save of the parent, or one from before a resume: it may be deleted by
    // whoever wrote it.
    let parent = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(parent.name()), postcard::to_allocvec(&parent).unwrap()).unwrap();
    let mut child = parent.clone();
    child.descend();
    child.edits_mut().push(Edit::Delete { stmt: 2 });
    let mut corpus = corpus_in(dir.path());
    corpus.add(Testcase::new(child.clone())).unwrap();
    corpus.write_out_all().unwrap();
    let path = dir.path().join(child.name());
    assert!(!is_difference(&path));
    assert_eq!(Variant::from_file(&path).unwrap(), child);
    // Once this corpus saved the parent, its children are differences.
    let dir = tempfile::tempdir().unwrap();
    let mut corpus = corpus_in(dir.path());
    corpus.add(Testcase::new(parent.clone())).unwrap();
    corpus.add(Testcase::new(child.clone())).unwrap();
    corpus.write_out_all().unwrap();
    let path = dir.path().join(child.name());
    assert!(is_difference(&path));
    assert_eq!(Variant::from_file(&path).unwrap().edits(), child.edits());
}

#[test]
fn a_removable_state_let_go_never_reaches_the_disk_and_a_kept_one_stays() {
    let dir = tempfile::tempdir().unwrap();
    let mut corpus = corpus_in(dir.path());
    let states = saved_chain(&mut corpus, 3);
    // The chain left its first three states, which added nothing else; the last added
    // coverage and is kept, whole, as its parent never reached the disk.
    for (id, _) in &states[..3] {
        assert_eq!(corpus.let_go(*id, true).unwrap(), 1);
    }
    assert_eq!(corpus.let_go(states[3].0, false).unwrap(), 0);
    assert_eq!(corpus.count(), 0);
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, [states[3].1.name()]);
    let kept = dir.path().join(states[3].1.name());
    assert!(!is_difference(&kept));
    assert_eq!(Variant::from_file(&kept).unwrap().edits(), states[3].1.edits());
}
