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
