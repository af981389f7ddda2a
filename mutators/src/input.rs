//! The fuzzer's input: a variant is a seed id plus a list of edits, a few hundred bytes on the
//! wire; its C text is materialized from the seed store when it is compiled. A variant that
//! introduces a seed to other nodes carries the seed with it.

use crate::edit::Edit;
use crate::seed::{content_hash, SeedId, SeedPackage};
use libafl::corpus::CorpusId;
use libafl::inputs::Input;
use libafl::Error;
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Variant {
    pub seed: SeedId,
    pub edits: Vec<Edit>,
    /// The seed itself, only while the variant travels to nodes whose stores may lack it (a new
    /// seed, a finding); the receiver stores it and drops it from the variant.
    pub carried_seed: Option<Box<SeedPackage>>,
}

impl Variant {
    pub fn new(seed: SeedId, edits: Vec<Edit>) -> Self {
        Variant {
            seed,
            edits,
            carried_seed: None,
        }
    }

    /// The seed itself, unedited.
    pub fn of_seed(seed: SeedId) -> Self {
        Variant::new(seed, Vec::new())
    }

    /// A stable name: the content hash of the seed id and the edits.
    pub fn name(&self) -> String {
        content_hash(&postcard::to_allocvec(&(&self.seed, &self.edits)).expect("variants always serialize"))
    }
}

impl Input for Variant {
    fn generate_name(&self, _id: Option<CorpusId>) -> String {
        self.name()
    }

    /// Reads a saved variant; corpus files written before variants could carry seeds are the
    /// seed id and the edits alone.
    fn from_file<P: AsRef<Path>>(path: P) -> Result<Self, Error> {
        let bytes = std::fs::read(path)?;
        match postcard::from_bytes(&bytes) {
            Ok(variant) => Ok(variant),
            Err(current) => postcard::from_bytes::<(SeedId, Vec<Edit>)>(&bytes)
                .map(|(seed, edits)| Variant::new(seed, edits))
                .map_err(|_| current.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_carried_seed_does_not_change_the_name_and_old_files_still_load() {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let plain = Variant::new(seed.clone(), vec![Edit::Delete { stmt: 3 }]);
        let carrying = Variant {
            carried_seed: Some(Box::new(SeedPackage {
                id: seed.clone(),
                files: Default::default(),
                headers: String::new(),
            })),
            ..plain.clone()
        };
        assert_eq!(carrying.name(), plain.name());
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old");
        std::fs::write(&old, postcard::to_allocvec(&(&plain.seed, &plain.edits)).unwrap()).unwrap();
        assert_eq!(Variant::from_file(&old).unwrap(), plain);
        let current = dir.path().join("current");
        carrying.to_file(&current).unwrap();
        assert_eq!(Variant::from_file(&current).unwrap(), carrying);
        std::fs::write(&old, b"\xff\xff").unwrap();
        assert!(Variant::from_file(&old).is_err());
    }
}
