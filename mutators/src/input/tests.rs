//! Tests of variants: names, saving as differences and reading back.

use super::*;
use crate::model::StmtKind;

#[test]
fn variants_are_small_on_the_wire_and_round_trip() {
    let seed = SeedId::of_text("int main(void) { return 0; }");
    let edits = (0..100).map(|i| Edit::Delete { stmt: 1000 + i * 7 }).collect();
    let variant = Variant::new(seed, edits);
    let bytes = postcard::to_allocvec(&variant).unwrap();
    // 33 bytes of seed id and three bytes per deletion: the text never travels.
    assert!(bytes.len() < 400, "{} bytes", bytes.len());
    assert_eq!(postcard::from_bytes::<Variant>(&bytes).unwrap(), variant);
    assert_eq!(variant.name(), variant.clone().name());
    assert_ne!(variant.name(), Variant::of_seed(variant.seed.clone()).name());
}

#[test]
fn a_remembered_name_follows_the_edits() {
    let seed = SeedId::of_text("int main(void) { return 0; }");
    let mut variant = Variant::of_seed(seed.clone());
    let unedited = variant.name();
    variant.edits_mut().push(Edit::Delete { stmt: 1 });
    let one = Variant::new(seed.clone(), vec![Edit::Delete { stmt: 1 }]).name();
    assert_eq!(variant.name(), one);
    assert_ne!(one, unedited);
    variant.set_edits(Vec::new());
    assert_eq!(variant.name(), unedited);
    // A clone remembers its original's name, and forgets it as the original does.
    let mut clone = variant.clone();
    clone.edits_mut().push(Edit::Delete { stmt: 1 });
    assert_eq!((variant.name(), clone.name()), (unedited, one));
}

#[test]
fn varints_of_every_width_are_postcards() {
    for width in 1..=10u32 {
        let first = 1u64.checked_shl(7 * (width - 1)).unwrap_or(0).max(u64::from(width > 1));
        let last = if width == 10 {
            u64::MAX
        } else {
            (1u64 << (7 * width)) - 1
        };
        for value in [first, last] {
            let mut ours = Vec::new();
            encode_varint(value, &mut ours);
            assert_eq!(ours, postcard::to_allocvec(&value).unwrap(), "{value}");
            assert_eq!(ours.len(), width as usize, "{value}");
        }
    }
}

#[test]
fn names_are_the_xxh3_of_the_serialized_seed_and_edits() {
    // Stored corpus entries are named so: a change leaves the chains of a resumed campaign
    // to find their states by file name.
    let seed = SeedId::of_text("int main(void) { return 0; }");
    let long: Vec<Edit> = (0..5000).map(|i| Edit::Delete { stmt: i }).collect();
    // Texts whose lengths take one varint byte and two.
    let texts: Vec<Edit> = (0..300)
        .map(|i| Edit::InsertBefore {
            stmt: i,
            code: "x++;".repeat(i as usize % 300).into(),
        })
        .collect();
    // Every kind of edit and field, with varints of several widths and nested shapes.
    let leaf = |kind| Shape {
        kind,
        children: Vec::new(),
    };
    let shape = Shape {
        kind: StmtKind::Asm,
        children: vec![
            Shape {
                kind: StmtKind::For,
                children: (0..200).map(|_| leaf(StmtKind::Labeled)).collect(),
            },
            leaf(StmtKind::Compound),
        ],
    };
    let kinds: Vec<Edit> = [0, 127, 128, 16_383, 16_384, u32::MAX]
        .into_iter()
        .flat_map(|stmt| {
            [
                Edit::Wrap {
                    stmt,
                    before: "if (1) {".repeat(stmt as usize % 40).into(),
                    after: "}".into(),
                },
                Edit::Transplant {
                    stmt,
                    code: "g = 1;".into(),
                    shape: Arc::new(shape.clone()),
                    choices: u64::from(stmt) << 32 | 1,
                },
                Edit::Transplant {
                    stmt,
                    code: String::new().into(),
                    shape: Arc::new(leaf(StmtKind::Expression)),
                    choices: u64::MAX,
                },
                Edit::Delete { stmt },
            ]
        })
        .collect();
    for edits in [long, texts, kinds, vec![Edit::Delete { stmt: 1 }], Vec::new()] {
        let serialized = postcard::to_allocvec(&(&seed, &edits)).unwrap();
        let expected = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&serialized));
        assert_eq!(Variant::new(seed.clone(), edits).name(), expected);
    }
    // Pinned: the name of the unedited seed.
    assert_eq!(Variant::of_seed(seed).name(), "db7e9cdb136ae9701fc622722c6967d2");
}

#[test]
fn clones_and_parents_share_edits_until_one_changes() {
    let seed = SeedId::of_text("int main(void) { return 0; }");
    let edits: Vec<Edit> = (0..100).map(|i| Edit::Delete { stmt: i }).collect();
    let state = Variant::new(seed, edits.clone());
    let mut proposal = state.clone();
    assert!(std::ptr::eq(state.edits(), proposal.edits()));
    proposal.descend();
    let parent = proposal.lineage.parent.clone().unwrap();
    assert!(std::ptr::eq(&parent.edits[..], proposal.edits()));
    let state_name = state.name();
    proposal.edits_mut().push(Edit::Delete { stmt: 500 });
    assert_eq!((state.edits(), &parent.edits[..]), (&edits[..], &edits[..]));
    assert_eq!(proposal.edits().len(), 101);
    assert_ne!(proposal.name(), state_name);
    assert_eq!(state.name(), state_name);
}

/// A chain of `moves` states, each proposed from the one before by deleting a statement,
/// now and then restoring an earlier deletion, saved beside each other as a corpus does.
fn saved_chain(dir: &Path, moves: u32) -> Vec<Variant> {
    let mut state = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
    state.to_file(dir.join(state.name())).unwrap();
    let mut states = vec![state.clone()];
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
        proposal.to_file(dir.join(proposal.name())).unwrap();
        states.push(proposal.clone());
        state = proposal;
    }
    states
}

#[test]
fn chain_states_are_saved_as_differences_and_read_back_whole() {
    let dir = tempfile::tempdir().unwrap();
    let states = saved_chain(dir.path(), 200);
    for state in &states {
        let read = Variant::from_file(dir.path().join(state.name())).unwrap();
        assert_eq!(read.edits, state.edits);
        assert_eq!(read.name(), state.name());
    }
    let sizes: Vec<u64> = states
        .iter()
        .map(|s| std::fs::metadata(dir.path().join(s.name())).unwrap().len())
        .collect();
    let whole = states.last().unwrap();
    let whole_size = postcard::to_allocvec(whole).unwrap().len() as u64;
    let mean = sizes.iter().sum::<u64>() / sizes.len() as u64;
    // Whole saves would average half the last state; differences and a checkpoint every
    // 16 moves stay far below.
    assert!(
        mean * 4 < whole_size / 2,
        "mean {mean} bytes, last state {whole_size} bytes whole"
    );
    // A checkpoint is whole: reading it needs no other file.
    let checkpoint = &states[CHECKPOINT as usize];
    assert!(!std::fs::read(dir.path().join(checkpoint.name()))
        .unwrap()
        .starts_with(DELTA_MAGIC));
    assert!(std::fs::read(dir.path().join(states[CHECKPOINT as usize + 1].name()))
        .unwrap()
        .starts_with(DELTA_MAGIC));
}

#[test]
fn a_variant_saved_again_keeps_its_first_save() {
    let dir = tempfile::tempdir().unwrap();
    let states = saved_chain(dir.path(), 3);
    // Another client reached the last state from elsewhere: its save would name a parent
    // that is newer than the file.
    let mut again = states[3].clone();
    again.lineage.parent = Some(Arc::new(Parent {
        name: states[1].name(),
        edits: states[1].edits.clone(),
    }));
    let path = dir.path().join(again.name());
    let first = std::fs::read(&path).unwrap();
    again.to_file(&path).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), first);
    assert_eq!(Variant::from_file(&path).unwrap().edits, states[3].edits);
}

#[test]
fn a_deferred_chain_is_read_from_memory_and_written_as_differences_when_needed() {
    let dir = tempfile::tempdir().unwrap();
    saved::defer_writes_in(dir.path(), true);
    let states = saved_chain(dir.path(), 4);
    let paths: Vec<PathBuf> = states.iter().map(|s| dir.path().join(s.name())).collect();
    assert!(paths.iter().all(|p| !p.exists()));
    for (state, path) in states.iter().zip(&paths) {
        assert_eq!(Variant::from_file(path).unwrap().edits, state.edits);
    }
    // Needed on disk in order (the chains file named each in turn): each but the first is
    // the difference from the one before, and reads back whole from disk alone.
    for path in &paths {
        saved::pin_on_disk(path).unwrap();
    }
    assert!(!std::fs::read(&paths[0]).unwrap().starts_with(DELTA_MAGIC));
    for (state, path) in states.iter().zip(&paths).skip(1) {
        assert!(std::fs::read(path).unwrap().starts_with(DELTA_MAGIC));
        assert_eq!(Variant::from_file(path).unwrap().edits, state.edits);
    }
}

#[test]
fn differences_that_loop_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let delta = Delta {
        seed: SeedId::of_text("int main(void) { return 0; }"),
        parent: "itself".into(),
        generation: 1,
        removed: Vec::new(),
        added: vec![Edit::Delete { stmt: 1 }],
    };
    let mut bytes = DELTA_MAGIC.to_vec();
    bytes.extend(postcard::to_allocvec(&delta).unwrap());
    std::fs::write(dir.path().join("itself"), bytes).unwrap();
    assert!(Variant::from_file(dir.path().join("itself")).is_err());
}

#[test]
fn a_variant_whose_parent_file_is_elsewhere_is_saved_whole() {
    let mut variant = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
    variant.descend();
    variant.edits_mut().push(Edit::Delete { stmt: 2 });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(variant.name());
    variant.to_file(&path).unwrap();
    assert!(!std::fs::read(&path).unwrap().starts_with(DELTA_MAGIC));
    assert_eq!(Variant::from_file(&path).unwrap(), variant);
}

#[test]
fn a_parent_file_this_process_did_not_write_is_not_read_through() {
    // Another client's save of the parent, or one from before a resume: it may be deleted
    // by whoever wrote it.
    let parent = Variant::of_seed(SeedId::of_text("int main(void) { return 0; }"));
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(parent.name()), postcard::to_allocvec(&parent).unwrap()).unwrap();
    let mut child = parent.clone();
    child.descend();
    child.edits_mut().push(Edit::Delete { stmt: 2 });
    let path = dir.path().join(child.name());
    child.to_file(&path).unwrap();
    assert!(!std::fs::read(&path).unwrap().starts_with(DELTA_MAGIC));
    // Once this process saved the parent, its children are differences.
    let dir = tempfile::tempdir().unwrap();
    parent.to_file(dir.path().join(parent.name())).unwrap();
    let path = dir.path().join(child.name());
    child.to_file(&path).unwrap();
    assert!(std::fs::read(&path).unwrap().starts_with(DELTA_MAGIC));
    assert_eq!(Variant::from_file(&path).unwrap().edits(), child.edits());
}

#[test]
fn a_carried_seed_does_not_change_the_name_and_travels_in_the_saved_file() {
    let seed = SeedId::of_text("int main(void) { return 0; }");
    let plain = Variant::new(seed.clone(), vec![Edit::Delete { stmt: 3 }]);
    let carrying = Variant {
        carried_seed: Some(Box::new(SeedPackage {
            id: seed.clone(),
            files: Default::default(),
            headers: Vec::new(),
        })),
        ..plain.clone()
    };
    assert_eq!(carrying.name(), plain.name());
    let dir = tempfile::tempdir().unwrap();
    let current = dir.path().join("current");
    carrying.to_file(&current).unwrap();
    assert_eq!(Variant::from_file(&current).unwrap(), carrying);
    let garbage = dir.path().join("garbage");
    std::fs::write(&garbage, b"\xff\xff").unwrap();
    assert!(Variant::from_file(&garbage).is_err());
}
