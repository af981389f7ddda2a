//! Seed ids: content hashes, so that a seed is stored once and names itself across cores and
//! machines.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The id of a seed: the first 16 bytes of the SHA-256 of its text, in hex.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SeedId(pub String);

impl SeedId {
    pub fn of_text(text: &str) -> Self {
        SeedId(content_hash(text.as_bytes()))
    }
}

impl fmt::Display for SeedId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Hex of the first 16 bytes of SHA-256.
pub fn content_hash(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest[..16].iter().map(|b| format!("{b:02x}")).collect()
}
