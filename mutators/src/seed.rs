//! The content-addressed seed store: each accepted seed's text, profile and reference output,
//! written once and read by every core.

use crate::model::{ParseError, Program};
pub use crate::seed_id::{content_hash, SeedId};
use crate::valuation::Valuation;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What profiling learned about a seed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SeedProfile {
    /// Where the seed came from (a path, or the csmith command line).
    pub origin: String,
    /// Content hash of the preprocessed system headers that the seed's `#include` block expands to.
    pub headers: String,
    /// Length in bytes of the `#include` block at the top of the seed text.
    pub include_block_len: usize,
    /// Execution count of every line gcov instrumented (1-based line numbers of the seed text).
    pub line_counts: BTreeMap<u32, u64>,
    /// Exit status of the reference run.
    pub expected_exit: i32,
    /// Milliseconds the seed's profiling run took (its variants' binaries get a timeout in
    /// proportion); absent in stores made before it was recorded.
    #[serde(default)]
    pub run_ms: Option<u64>,
}

/// A seed as stored: text, profile and the reference configuration's output.
#[derive(Clone, Debug, PartialEq)]
pub struct Seed {
    pub id: SeedId,
    /// Shared with the seed's parsed [`Program`]: a cached seed holds its text once.
    pub text: Arc<str>,
    pub profile: SeedProfile,
    pub expected_output: Vec<u8>,
}

impl Seed {
    /// Parses the seed, whose `#include` block stands for the expanded `headers`. The program
    /// shares the seed's text.
    pub fn parse(&self, headers: &str) -> Result<Program, ParseError> {
        let program = Program::parse_parts(
            &self.text,
            headers,
            self.profile.include_block_len,
            &self.profile.line_counts,
        )?;
        Ok(program.sharing_text(&self.text))
    }

    pub fn new(text: String, profile: SeedProfile, expected_output: Vec<u8>) -> Self {
        Seed {
            id: SeedId::of_text(&text),
            text: text.into(),
            profile,
            expected_output,
        }
    }
}

/// A stored seed as it travels between nodes: the files of its directory and the header block
/// its profile names. A node whose store lacks a seed stores it from this.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeedPackage {
    pub id: SeedId,
    /// File name to content.
    pub files: BTreeMap<String, Vec<u8>>,
    pub headers: String,
}

/// Name of a seed's Orange program structure in its directory.
pub const ORANGE_PROGRAM: &str = "orange.json";

/// A directory of seeds (`<id>/seed.c`, `profile.json`, `expected.out`, `orange.json` for Orange
/// programs) and of expanded system-header blocks (`headers/<hash>.i`). Writes are atomic
/// renames, so several processes may share one store.
#[derive(Clone, Debug)]
pub struct SeedStore {
    root: PathBuf,
}

impl SeedStore {
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(root.join("headers"))
            .with_context(|| format!("cannot create seed store {}", root.display()))?;
        Ok(SeedStore { root })
    }

    pub fn seed_dir(&self, id: &SeedId) -> PathBuf {
        self.root.join(&id.0)
    }

    pub fn contains(&self, id: &SeedId) -> bool {
        self.seed_dir(id).join("profile.json").is_file()
    }

    /// Stores a seed; storing one that is already there is a no-op.
    pub fn put(&self, seed: &Seed) -> Result<()> {
        let profile = serde_json::to_vec_pretty(&seed.profile)?;
        self.put_files(
            &seed.id,
            [
                ("seed.c", seed.text.as_bytes()),
                ("expected.out", &seed.expected_output[..]),
                ("profile.json", &profile[..]),
            ],
        )
    }

    /// Writes a seed directory in one atomic rename, unless the seed is already stored.
    fn put_files<'a>(&self, id: &SeedId, files: impl IntoIterator<Item = (&'a str, &'a [u8])>) -> Result<()> {
        if self.contains(id) {
            return Ok(());
        }
        let staging = self.root.join(format!(".staging-{id}-{}", std::process::id()));
        fs::create_dir_all(&staging)?;
        for (name, bytes) in files {
            fs::write(staging.join(name), bytes).with_context(|| format!("cannot write {name} of seed {id}"))?;
        }
        match fs::rename(&staging, self.seed_dir(id)) {
            Ok(()) => Ok(()),
            // Another process stored the same seed first.
            Err(_) if self.contains(id) => {
                fs::remove_dir_all(&staging)?;
                Ok(())
            }
            Err(e) => Err(e).with_context(|| format!("cannot store seed {id}")),
        }
    }

    /// Everything the store holds about a seed, to be stored again by another node.
    pub fn package(&self, id: &SeedId) -> Result<SeedPackage> {
        let dir = self.seed_dir(id);
        let mut files = BTreeMap::new();
        for entry in
            fs::read_dir(&dir).with_context(|| format!("seed {id} is not in the store {}", self.root.display()))?
        {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // Files being replaced (`valuation.tmp<pid>`) are left behind.
            if entry.file_type()?.is_file() && !name.contains(".tmp") {
                files.insert(name, fs::read(entry.path())?);
            }
        }
        let profile: SeedProfile = serde_json::from_slice(files.get("profile.json").map_or(&[][..], |p| &p[..]))
            .with_context(|| format!("bad profile for seed {id}"))?;
        Ok(SeedPackage {
            id: id.clone(),
            files,
            headers: self.headers(&profile.headers)?,
        })
    }

    /// Stores a seed that another node packaged, after checking that it is what it claims.
    pub fn unpack(&self, package: &SeedPackage) -> Result<()> {
        let id = &package.id;
        if self.contains(id) {
            return Ok(());
        }
        let file = |name: &str| {
            package
                .files
                .get(name)
                .with_context(|| format!("the package of seed {id} has no {name}"))
        };
        if SeedId(content_hash(file("seed.c")?)) != *id {
            bail!("the package of seed {id} holds another seed");
        }
        let profile: SeedProfile =
            serde_json::from_slice(file("profile.json")?).with_context(|| format!("bad profile for seed {id}"))?;
        file("expected.out")?;
        if content_hash(package.headers.as_bytes()) != profile.headers {
            bail!("the package of seed {id} holds other headers than its profile names");
        }
        if let Some(name) = package.files.keys().find(|n| n.contains('/') || n.starts_with('.')) {
            bail!("the package of seed {id} names a file outside its directory: {name:?}");
        }
        self.put_headers(&package.headers)?;
        self.put_files(
            id,
            package.files.iter().map(|(name, bytes)| (name.as_str(), &bytes[..])),
        )
    }

    pub fn load(&self, id: &SeedId) -> Result<Seed> {
        let dir = self.seed_dir(id);
        let text = fs::read_to_string(dir.join("seed.c"))
            .with_context(|| format!("seed {id} is not in the store {}", self.root.display()))?;
        let profile: SeedProfile = serde_json::from_slice(&fs::read(dir.join("profile.json"))?)
            .with_context(|| format!("bad profile for seed {id}"))?;
        let expected_output = fs::read(dir.join("expected.out"))?;
        if SeedId::of_text(&text) != *id {
            bail!("seed {id} in {} does not match its content hash", dir.display());
        }
        Ok(Seed {
            id: id.clone(),
            text: text.into(),
            profile,
            expected_output,
        })
    }

    /// Ids of every stored seed, sorted.
    pub fn ids(&self) -> Result<Vec<SeedId>> {
        let mut ids = Vec::new();
        for entry in fs::read_dir(&self.root)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            let id = SeedId(name);
            if !id.0.starts_with('.') && id.0 != "headers" && self.contains(&id) {
                ids.push(id);
            }
        }
        ids.sort();
        Ok(ids)
    }

    /// Stores the valuation profile of a stored seed (replacing an earlier one).
    pub fn put_valuation(&self, id: &SeedId, valuation: &Valuation) -> Result<()> {
        replace_file(
            &self.seed_dir(id).join("valuation.json"),
            &serde_json::to_vec(valuation)?,
        )
        .with_context(|| format!("cannot store the valuation of seed {id}"))
    }

    /// The valuation profile of a seed, if it has one.
    pub fn valuation(&self, id: &SeedId) -> Result<Option<Valuation>> {
        let path = self.seed_dir(id).join("valuation.json");
        match fs::read(&path) {
            Ok(bytes) => {
                let mut valuation: Valuation =
                    serde_json::from_slice(&bytes).with_context(|| format!("bad {}", path.display()))?;
                valuation.share_names();
                Ok(Some(valuation))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Stores the structure of a stored seed generated as an Orange program (`orange.json`),
    /// which triage minimizes with Orange's own minimizer.
    pub fn put_orange_program(&self, id: &SeedId, json: &str) -> Result<()> {
        replace_file(&self.seed_dir(id).join(ORANGE_PROGRAM), json.as_bytes())
            .with_context(|| format!("cannot store the Orange program of seed {id}"))
    }

    /// The JSON of the Orange program a seed was rendered from, if it was one.
    pub fn orange_program(&self, id: &SeedId) -> Result<Option<String>> {
        let path = self.seed_dir(id).join(ORANGE_PROGRAM);
        match fs::read_to_string(&path) {
            Ok(json) => Ok(Some(json)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Stores an expanded header block and returns its hash.
    pub fn put_headers(&self, text: &str) -> Result<String> {
        let hash = content_hash(text.as_bytes());
        let path = self.root.join("headers").join(format!("{hash}.i"));
        if !path.is_file() {
            let staging = path.with_extension(format!("tmp{}", std::process::id()));
            fs::write(&staging, text)?;
            fs::rename(&staging, &path)?;
        }
        Ok(hash)
    }

    pub fn headers(&self, hash: &str) -> Result<String> {
        let path = self.root.join("headers").join(format!("{hash}.i"));
        fs::read_to_string(&path).with_context(|| format!("missing header block {}", path.display()))
    }
}

/// Writes a file of a seed directory through a staging file (`NAME.tmp<pid>`, which
/// [`SeedStore::package`] skips), so that readers never see it half-written.
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let staging = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&staging, bytes)?;
    fs::rename(&staging, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored_seed(store: &SeedStore) -> Seed {
        let headers = store.put_headers("int printf(const char *, ...);\n").unwrap();
        let profile = SeedProfile {
            origin: "test".into(),
            headers,
            include_block_len: 0,
            line_counts: BTreeMap::from([(1, 1)]),
            expected_exit: 0,
            run_ms: Some(2),
        };
        let seed = Seed::new("int main(void) { return 0; }\n".into(), profile, b"0\n".to_vec());
        store.put(&seed).unwrap();
        fs::write(store.seed_dir(&seed.id).join("valuation.json"), b"{}").unwrap();
        seed
    }

    /// [`stored_seed`] in a store, its package, and another store to unpack it into (the
    /// stores' temporary directories last: they must outlive the stores).
    fn packaged_seed() -> (Seed, SeedPackage, SeedStore, [tempfile::TempDir; 2]) {
        let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
        let (here, there) = (
            SeedStore::open(dirs[0].path()).unwrap(),
            SeedStore::open(dirs[1].path()).unwrap(),
        );
        let seed = stored_seed(&here);
        let package = here.package(&seed.id).unwrap();
        (seed, package, there, dirs)
    }

    #[test]
    fn a_packaged_seed_is_stored_again_elsewhere_with_all_its_files() {
        let (seed, package, there, _dirs) = packaged_seed();
        assert!(package.files.contains_key("valuation.json"));
        there.unpack(&package).unwrap();
        assert_eq!(there.load(&seed.id).unwrap(), seed);
        assert_eq!(there.package(&seed.id).unwrap(), package);
        // Unpacking twice is harmless.
        there.unpack(&package).unwrap();
    }

    #[test]
    fn a_package_that_is_not_what_it_claims_is_refused() {
        let (seed, package, there, _dirs) = packaged_seed();
        let mut other_text = package.clone();
        other_text
            .files
            .insert("seed.c".into(), b"int main(void) { return 1; }\n".to_vec());
        let mut other_headers = package.clone();
        other_headers.headers.push_str("int x;\n");
        let mut escaping = package.clone();
        escaping.files.insert("../evil".into(), Vec::new());
        for bad in [other_text, other_headers, escaping] {
            assert!(there.unpack(&bad).is_err());
            assert!(!there.contains(&seed.id));
        }
    }
}
