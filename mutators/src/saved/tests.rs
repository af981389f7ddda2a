//! Tests of the saved files: what goes, what stays, what waits in memory.

use super::*;

/// A test file's content: it says how it was written.
#[derive(Clone)]
struct Text {
    base: Option<PathBuf>,
}

impl Unwritten for Text {
    fn difference_base(&self, _path: &Path) -> Option<PathBuf> {
        self.base.clone()
    }

    fn write_to(&self, path: &Path, base: Option<&Path>) -> std::io::Result<()> {
        let text = match base {
            Some(base) => format!("difference from {}", base.file_name().unwrap().to_string_lossy()),
            None => "whole".to_string(),
        };
        std::fs::write(path, text)
    }
}

/// Files `names` saved in `dir`, each proposed from the one before it.
fn chain(saved: &mut SavedFiles, dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    let mut base: Option<PathBuf> = None;
    names
        .iter()
        .map(|name| {
            let path = dir.join(name);
            saved.save(&path, Box::new(Text { base: base.clone() })).unwrap();
            base = Some(path.clone());
            path
        })
        .collect()
}

fn written_here(saved: &SavedFiles, path: &Path) -> bool {
    saved.written.contains_key(path)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn a_left_state_goes_with_the_ancestors_only_it_needed() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::immediate(true);
    let files = chain(&mut saved, dir.path(), &["a", "b", "c"]);
    std::fs::write(metadata_path(&files[1]), "{}").unwrap();
    // The chain moved from a to b to c: a and b are let go, and stay while c reads through.
    assert_eq!(saved.left(&files[0], true).unwrap(), 0);
    assert_eq!(saved.left(&files[1], true).unwrap(), 0);
    assert!(files.iter().all(|f| f.exists()));
    // Then it left c too: all three go, with b's metadata file.
    assert_eq!(saved.left(&files[2], true).unwrap(), 3);
    assert!(files.iter().all(|f| !f.exists()));
    assert!(!metadata_path(&files[1]).exists());
    assert!(!written_here(&saved, &files[0]));
}

#[test]
fn a_kept_file_keeps_what_it_reads_through() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::immediate(true);
    let files = chain(&mut saved, dir.path(), &["a", "b", "c", "d"]);
    // b added coverage: it stays, and so does a; c and d go once left.
    saved.left(&files[0], true).unwrap();
    saved.left(&files[1], false).unwrap();
    saved.left(&files[2], true).unwrap();
    assert_eq!(saved.left(&files[3], true).unwrap(), 2);
    assert!(files[0].exists() && files[1].exists());
    assert!(!files[2].exists() && !files[3].exists());
    // Nothing of the chain is noted any more: a and b are on disk for good.
    assert!(!written_here(&saved, &files[0]) && !written_here(&saved, &files[1]));
    // A file let go before its kept child is kept all the same.
    let files = chain(&mut saved, dir.path(), &["e", "f"]);
    saved.left(&files[1], false).unwrap();
    assert_eq!(saved.left(&files[0], true).unwrap(), 0);
    assert!(files[0].exists());
}

#[test]
fn a_state_a_chain_came_back_to_stays_while_it_stands_there() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::immediate(true);
    let files = chain(&mut saved, dir.path(), &["g", "h"]);
    saved.left(&files[0], true).unwrap();
    // The chain moves from h back to g, whose file is still there.
    assert!(saved.hold(&files[0]));
    assert_eq!(saved.left(&files[1], true).unwrap(), 1);
    assert!(files[0].exists() && !files[1].exists());
    assert_eq!(saved.left(&files[0], true).unwrap(), 1);
    assert!(!files[0].exists());
}

#[test]
fn a_state_the_chains_file_names_stays_until_the_next_save() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::immediate(true);
    let files = chain(&mut saved, dir.path(), &["i", "j"]);
    // Saved as the chain's state, then left before the next save.
    saved.pin_on_disk(&files[0]).unwrap();
    assert_eq!(saved.left(&files[0], true).unwrap(), 0);
    saved.pin_on_disk(&files[1]).unwrap();
    assert_eq!(saved.unpin(&files[0]).unwrap(), 0, "j reads through i");
    assert_eq!(saved.left(&files[1], true).unwrap(), 0, "the chains file names j");
    assert_eq!(saved.unpin(&files[1]).unwrap(), 2);
    assert!(files.iter().all(|f| !f.exists()));
}

#[test]
fn files_not_written_here_are_never_deleted_nor_named_as_parents() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::immediate(true);
    let foreign = dir.path().join("other-client");
    std::fs::write(&foreign, "x").unwrap();
    assert!(!written_here(&saved, &foreign));
    assert_eq!(saved.left(&foreign, true).unwrap(), 0);
    assert!(foreign.exists());
    // A state proposed from a file not written here is written whole.
    let child = dir.path().join("child");
    saved
        .save(
            &child,
            Box::new(Text {
                base: Some(foreign.clone()),
            }),
        )
        .unwrap();
    assert_eq!(read(&child), "whole");
    assert!(!saved.hold(&dir.path().join("never-saved")));
    assert!(saved.hold(&foreign), "a file on disk is there to stand on");
    assert_eq!(saved.left(&child, true).unwrap(), 1);
    assert!(foreign.exists() && !child.exists());
}

#[test]
fn in_a_deferred_directory_only_what_is_needed_reaches_the_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::deferred(true);
    let files = chain(&mut saved, dir.path(), &["a", "b", "c", "d", "e"]);
    assert!(files.iter().all(|f| !f.exists()));
    // This process reads a waiting file from memory.
    assert_eq!(saved.unwritten::<Text>(&files[1]).unwrap().base, Some(files[0].clone()));
    assert!(saved.hold(&files[0]), "a waiting state is there to come back to");
    // a is let go twice (a chain came back to it): it goes without ever being written.
    std::fs::write(metadata_path(&files[0]), "{}").unwrap();
    assert_eq!(saved.left(&files[0], true).unwrap(), 0);
    assert_eq!(saved.left(&files[0], true).unwrap(), 1);
    assert!(!files[0].exists() && !metadata_path(&files[0]).exists());
    // The chains file names b: written whole, as a is not on disk.
    saved.pin_on_disk(&files[1]).unwrap();
    assert_eq!(read(&files[1]), "whole");
    assert!(saved.unwritten::<Text>(&files[1]).is_none());
    // c added coverage: kept, as a difference from b, which stays with it.
    assert_eq!(saved.left(&files[1], true).unwrap(), 0);
    assert_eq!(saved.left(&files[2], false).unwrap(), 0);
    assert_eq!(read(&files[2]), "difference from b");
    assert_eq!(saved.unpin(&files[1]).unwrap(), 0, "c reads through b");
    assert!(files[1].exists());
    // The client ends: what it still holds is written out, bases first. c is on disk for
    // good and no longer followed: d is written whole.
    saved.write_out_all().unwrap();
    assert_eq!(read(&files[3]), "whole");
    assert_eq!(read(&files[4]), "difference from d");
}

#[test]
fn in_a_deferred_directory_a_file_written_elsewhere_is_found_when_it_would_be_written() {
    let beside_metadata = tempfile::tempdir().unwrap();
    let mut beside = SavedFiles::deferred(true);
    let theirs = beside_metadata.path().join("another-client");
    std::fs::write(&theirs, "theirs").unwrap();
    assert!(beside.hold(&theirs), "a file with metadata beside is looked for");
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::deferred(false);
    let foreign = dir.path().join("another-client");
    std::fs::write(&foreign, "theirs").unwrap();
    assert!(!saved.hold(&foreign), "only this process's saves are looked for");
    // Saved here too, let go before it reached the disk: their file stays.
    saved.save(&foreign, Box::new(Text { base: None })).unwrap();
    assert_eq!(saved.left(&foreign, true).unwrap(), 1);
    assert_eq!(read(&foreign), "theirs");
    // Saved again and named by the chains file: their file stands for it, and is theirs.
    saved.save(&foreign, Box::new(Text { base: None })).unwrap();
    saved.pin_on_disk(&foreign).unwrap();
    assert_eq!(read(&foreign), "theirs");
    assert!(!written_here(&saved, &foreign));
    assert_eq!(saved.unpin(&foreign).unwrap(), 0);
    assert!(foreign.exists());
}

#[test]
fn a_file_saved_again_at_once_is_replaced() {
    // A save that does not wait writes what it is given (a variant saved under a name of
    // the caller's for `ccfuzz replay`, twice).
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::immediate(true);
    let path = dir.path().join("replayed");
    saved.save(&path, Box::new(Text { base: None })).unwrap();
    assert_eq!(read(&path), "whole");
    saved
        .save(
            &path,
            Box::new(Text {
                base: Some(dir.path().join("elsewhere")),
            }),
        )
        .unwrap();
    std::fs::write(dir.path().join("elsewhere"), "").unwrap();
    saved
        .save(&dir.path().join("elsewhere"), Box::new(Text { base: None }))
        .unwrap();
    saved
        .save(
            &path,
            Box::new(Text {
                base: Some(dir.path().join("elsewhere")),
            }),
        )
        .unwrap();
    assert_eq!(read(&path), "difference from elsewhere");
}

#[test]
fn without_metadata_files_a_deleted_state_looks_for_none() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::deferred(false);
    let state = &chain(&mut saved, dir.path(), &["p"])[0];
    saved.pin_on_disk(state).unwrap();
    assert!(state.exists());
    // Not LibAFL's: nothing writes metadata in this directory, so a file of that name is
    // someone else's.
    std::fs::write(metadata_path(state), "{}").unwrap();
    assert_eq!(saved.unpin(state).unwrap(), 0);
    assert_eq!(saved.left(state, true).unwrap(), 1);
    assert!(!state.exists() && metadata_path(state).exists());
}

#[test]
fn a_deferred_file_someone_else_wrote_meanwhile_is_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let mut saved = SavedFiles::deferred(true);
    let files = chain(&mut saved, dir.path(), &["x", "y"]);
    // Another client saved the same state (the same name, so the same content) first.
    std::fs::write(&files[0], "another client's").unwrap();
    saved.pin_on_disk(&files[0]).unwrap();
    assert_eq!(read(&files[0]), "another client's");
    assert!(!written_here(&saved, &files[0]));
    assert_eq!(saved.unpin(&files[0]).unwrap(), 0);
    assert_eq!(saved.left(&files[0], true).unwrap(), 0);
    assert!(files[0].exists());
    // Its child is not written as a difference from a file it does not own.
    saved.pin_on_disk(&files[1]).unwrap();
    assert_eq!(read(&files[1]), "whole");
}
