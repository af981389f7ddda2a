//! The fuzzer's input: a variant is a seed id plus a list of edits, a few hundred bytes on the
//! wire; its C text is materialized from the seed store when it is compiled.

use crate::edit::Edit;
use crate::seed::{content_hash, SeedId};
use libafl::corpus::CorpusId;
use libafl::inputs::Input;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Variant {
    pub seed: SeedId,
    pub edits: Vec<Edit>,
}

impl Variant {
    /// The seed itself, unedited.
    pub fn of_seed(seed: SeedId) -> Self {
        Variant {
            seed,
            edits: Vec::new(),
        }
    }

    /// A stable name: the content hash of the serialized variant.
    pub fn name(&self) -> String {
        content_hash(&postcard::to_allocvec(self).expect("variants always serialize"))
    }
}

impl Input for Variant {
    fn generate_name(&self, _id: Option<CorpusId>) -> String {
        self.name()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variants_are_small_on_the_wire_and_round_trip() {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        let edits = (0..100).map(|i| Edit::Delete { stmt: 1000 + i * 7 }).collect();
        let variant = Variant { seed, edits };
        let bytes = postcard::to_allocvec(&variant).unwrap();
        // 33 bytes of seed id and three bytes per deletion: the text never travels.
        assert!(bytes.len() < 400, "{} bytes", bytes.len());
        assert_eq!(postcard::from_bytes::<Variant>(&bytes).unwrap(), variant);
        assert_eq!(variant.name(), variant.clone().name());
        assert_ne!(variant.name(), Variant::of_seed(variant.seed.clone()).name());
    }
}
