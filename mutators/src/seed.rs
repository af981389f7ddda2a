//! The content-addressed seed store: each accepted seed's text, profile and reference output,
//! written once and read by every core.

use crate::model::{ParseError, Program};
pub use crate::seed_id::{content_hash, SeedId};
use crate::valuation::Valuation;
use anyhow::{bail, Context, Result};
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::io::{Read, Write};
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
/// its profile names, each gzipped. A node whose store lacks a seed stores it from this.
///
/// Gzipped because LibAFL's event manager serializes every event into one buffer that it keeps
/// at its largest size and zeroes whole before each event: a large csmith seed's plain package
/// (its text, valuation and profile, 0.4–2 MB) left each client that announced one holding that
/// many more megabytes, for good.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct SeedPackage {
    pub id: SeedId,
    /// File name to gzipped content.
    pub files: BTreeMap<String, Vec<u8>>,
    /// The header block, gzipped.
    pub headers: Vec<u8>,
}

/// Name of a seed's Orange program structure in its directory.
pub const ORANGE_PROGRAM: &str = "orange.json";

/// Files of a seed directory that a retired seed keeps gzipped (`seed.c.gz`): together nine
/// tenths of a csmith seed's 200 KB, and a fifth of that compressed.
const COMPRESSED_WHEN_RETIRED: [&str; 2] = ["seed.c", "valuation.json"];

/// A directory of seeds (`<id>/seed.c`, `profile.json`, `expected.out`, `orange.json` for Orange
/// programs) and of expanded system-header blocks (`headers/<hash>.i`). Writes are atomic
/// renames, so several processes may share one store. A retired seed's text and valuation are
/// gzipped in place ([`SeedStore::compress`]); reads take either form.
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
        let mut profile = None;
        for entry in
            fs::read_dir(&dir).with_context(|| format!("seed {id} is not in the store {}", self.root.display()))?
        {
            let entry = entry?;
            let listed = entry.file_name().to_string_lossy().into_owned();
            // Files being replaced (`valuation.tmp<pid>`) are left behind; a gzipped file
            // travels as its plain self.
            let name = listed.strip_suffix(".gz").unwrap_or(&listed).to_string();
            if !entry.file_type()?.is_file() || name.contains(".tmp") || files.contains_key(&name) {
                continue;
            }
            match read_either(&dir, &name) {
                Ok(bytes) => {
                    if name == "profile.json" {
                        profile = Some(
                            serde_json::from_slice::<SeedProfile>(&bytes)
                                .with_context(|| format!("bad profile for seed {id}"))?,
                        );
                    }
                    files.insert(name, gzip(&bytes)?);
                }
                // Compressed or replaced while listed: the other form was read, or will be.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e).with_context(|| format!("cannot read {name} of seed {id}")),
            }
        }
        let profile = profile.with_context(|| format!("seed {id} has no profile"))?;
        Ok(SeedPackage {
            id: id.clone(),
            files,
            headers: gzip(self.headers(&profile.headers)?.as_bytes())?,
        })
    }

    /// Stores a seed that another node packaged, after checking that it is what it claims.
    pub fn unpack(&self, package: &SeedPackage) -> Result<()> {
        let id = &package.id;
        if self.contains(id) {
            return Ok(());
        }
        let files: BTreeMap<&str, Vec<u8>> = package
            .files
            .iter()
            .map(|(name, bytes)| Ok((name.as_str(), gunzip(bytes)?)))
            .collect::<std::io::Result<_>>()
            .with_context(|| format!("the package of seed {id} does not decompress"))?;
        let headers = String::from_utf8(gunzip(&package.headers)?)
            .with_context(|| format!("the header block of seed {id} is not UTF-8"))?;
        let file = |name: &str| {
            files
                .get(name)
                .with_context(|| format!("the package of seed {id} has no {name}"))
        };
        if SeedId(content_hash(file("seed.c")?)) != *id {
            bail!("the package of seed {id} holds another seed");
        }
        let profile: SeedProfile =
            serde_json::from_slice(file("profile.json")?).with_context(|| format!("bad profile for seed {id}"))?;
        file("expected.out")?;
        if content_hash(headers.as_bytes()) != profile.headers {
            bail!("the package of seed {id} holds other headers than its profile names");
        }
        if let Some(name) = files.keys().find(|n| n.contains('/') || n.starts_with('.')) {
            bail!("the package of seed {id} names a file outside its directory: {name:?}");
        }
        self.put_headers(&headers)?;
        self.put_files(id, files.iter().map(|(name, bytes)| (*name, &bytes[..])))
    }

    pub fn load(&self, id: &SeedId) -> Result<Seed> {
        let dir = self.seed_dir(id);
        let text = read_either(&dir, "seed.c")
            .with_context(|| format!("seed {id} is not in the store {}", self.root.display()))?;
        let text = String::from_utf8(text).with_context(|| format!("seed {id} is not UTF-8"))?;
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
        match read_either(&self.seed_dir(id), "valuation.json") {
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

    /// Gzips the text and valuation of a seed whose chain retired. Each compressed file is in
    /// place before its plain one goes, so a reader in another process finds one of them.
    /// Seeds with findings lose nothing: a finding's directory holds its own `seed.c`.
    pub fn compress(&self, id: &SeedId) -> Result<()> {
        let dir = self.seed_dir(id);
        for name in COMPRESSED_WHEN_RETIRED {
            let plain = dir.join(name);
            let bytes = match fs::read(&plain) {
                Ok(bytes) => bytes,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot read {}", plain.display())),
            };
            let gzipped = dir.join(format!("{name}.gz"));
            replace_file(&gzipped, &gzip(&bytes)?).with_context(|| format!("cannot write {}", gzipped.display()))?;
            // Another client that retired the same seed may have removed it first.
            match fs::remove_file(&plain) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", plain.display()))
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Whether a chain retired the seed: its text is gzipped.
    pub fn is_retired(&self, id: &SeedId) -> bool {
        self.seed_dir(id).join("seed.c.gz").is_file()
    }

    /// When the seed was stored.
    pub fn stored_at(&self, id: &SeedId) -> Option<std::time::SystemTime> {
        fs::metadata(self.seed_dir(id).join("profile.json"))
            .ok()?
            .modified()
            .ok()
    }

    /// Removes a seed: its directory is renamed away first, so a reader finds all of it or
    /// nothing. Returns whether this call removed it (another process may have first).
    pub fn remove(&self, id: &SeedId) -> Result<bool> {
        let doomed = self.root.join(format!(".removed-{id}-{}", std::process::id()));
        match fs::rename(self.seed_dir(id), &doomed) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e).with_context(|| format!("cannot remove seed {id}")),
            Ok(()) => {
                fs::remove_dir_all(&doomed).with_context(|| format!("cannot remove {}", doomed.display()))?;
                Ok(true)
            }
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

/// A file of a seed directory, plain or gzipped (`NAME.gz`); the plain one when both are there
/// (a valuation profiled again after its seed was compressed).
fn read_either(dir: &Path, name: &str) -> std::io::Result<Vec<u8>> {
    match fs::read(dir.join(name)) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = Vec::new();
            GzDecoder::new(fs::File::open(dir.join(format!("{name}.gz")))?).read_to_end(&mut bytes)?;
            Ok(bytes)
        }
        read => read,
    }
}

fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes)?;
    encoder.finish()
}

/// `bytes` decompressed when they are a gzip stream, else as they are (a package written plain).
fn gunzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut plain = Vec::new();
    GzDecoder::new(bytes).read_to_end(&mut plain)?;
    Ok(plain)
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
    fn a_compressed_seed_reads_and_travels_as_before() {
        let (seed, package, there, dirs) = packaged_seed();
        let here = SeedStore::open(dirs[0].path()).unwrap();
        here.compress(&seed.id).unwrap();
        let dir = here.seed_dir(&seed.id);
        for name in COMPRESSED_WHEN_RETIRED {
            assert!(!dir.join(name).exists(), "{name} is still plain");
            assert!(dir.join(format!("{name}.gz")).is_file(), "{name} is not gzipped");
        }
        assert!(here.contains(&seed.id));
        assert_eq!(here.load(&seed.id).unwrap(), seed);
        // It travels as plain files (the valuation among them), and the other store takes it.
        assert_eq!(here.package(&seed.id).unwrap(), package);
        there.unpack(&here.package(&seed.id).unwrap()).unwrap();
        assert_eq!(there.load(&seed.id).unwrap(), seed);
        // Compressing twice (two clients retiring the seed) changes nothing.
        here.compress(&seed.id).unwrap();
        assert_eq!(here.load(&seed.id).unwrap(), seed);
    }

    #[test]
    fn a_csmith_like_text_shrinks_to_a_fraction() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeedStore::open(dir.path()).unwrap();
        let headers = store.put_headers("").unwrap();
        let text: String = (0..3000)
            .map(|i| {
                format!(
                    "static int32_t g_{i} = {};\nint f_{i}(int a) {{ return a * {} + g_{i}; }}\n",
                    i * 7919 % 1000,
                    i % 13
                )
            })
            .collect();
        let profile = SeedProfile {
            origin: "test".into(),
            headers,
            include_block_len: 0,
            line_counts: BTreeMap::new(),
            expected_exit: 0,
            run_ms: None,
        };
        let seed = Seed::new(text, profile, Vec::new());
        store.put(&seed).unwrap();
        let plain = fs::metadata(store.seed_dir(&seed.id).join("seed.c")).unwrap().len();
        store.compress(&seed.id).unwrap();
        let gzipped = fs::metadata(store.seed_dir(&seed.id).join("seed.c.gz")).unwrap().len();
        assert!(gzipped * 4 < plain, "{plain} bytes gzipped to {gzipped}");
        assert_eq!(store.load(&seed.id).unwrap(), seed);
        let packed: usize = store.package(&seed.id).unwrap().files.values().map(Vec::len).sum();
        assert!(packed as u64 * 4 < plain, "{plain} bytes of text packed in {packed}");
    }

    #[test]
    fn packages_travel_gzipped_and_a_plain_one_is_refused() {
        let (seed, package, there, _dirs) = packaged_seed();
        for bytes in package.files.values().chain([&package.headers]) {
            assert!(bytes.starts_with(&[0x1f, 0x8b]), "{bytes:?}");
        }
        let plain = SeedPackage {
            id: package.id.clone(),
            files: package
                .files
                .iter()
                .map(|(name, bytes)| (name.clone(), gunzip(bytes).unwrap()))
                .collect(),
            headers: gunzip(&package.headers).unwrap(),
        };
        assert_eq!(plain.files["seed.c"], seed.text.as_bytes());
        assert!(there.unpack(&plain).is_err());
        there.unpack(&package).unwrap();
        assert_eq!(there.load(&seed.id).unwrap(), seed);
    }

    #[test]
    fn a_package_that_is_not_what_it_claims_is_refused() {
        let (seed, package, there, _dirs) = packaged_seed();
        let mut other_text = package.clone();
        other_text
            .files
            .insert("seed.c".into(), b"int main(void) { return 1; }\n".to_vec());
        let mut other_headers = package.clone();
        other_headers.headers = gzip(b"int x;\n").unwrap();
        let mut escaping = package.clone();
        escaping.files.insert("../evil".into(), Vec::new());
        for bad in [other_text, other_headers, escaping] {
            assert!(there.unpack(&bad).is_err());
            assert!(!there.contains(&seed.id));
        }
    }

    /// A point where `g` held `value` once.
    fn one_point(value: i128) -> crate::valuation::PointValues {
        use crate::valuation::{PointValues, Readable};
        let readables = vec![Readable {
            expr: "g".into(),
            kind: crate::ctype::IntKind::Int,
            assignable: true,
        }];
        PointValues {
            readables,
            values: vec![[value].into_iter().collect()],
            hits: 1,
            capped: false,
        }
    }

    #[test]
    fn a_stored_valuation_reads_back_with_one_allocation_per_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = SeedStore::open(dir.path()).unwrap();
        let seed = stored_seed(&store);
        let id = seed.id;
        let stored = Valuation {
            points: [(1, one_point(1)), (2, one_point(2))].into(),
        };
        store.put_valuation(&id, &stored).unwrap();
        let read = store.valuation(&id).unwrap().unwrap();
        assert_eq!(read, stored);
        // A retired seed's valuation is gzipped and reads the same.
        store.compress(&id).unwrap();
        assert_eq!(store.valuation(&id).unwrap().unwrap(), stored);
        let names: Vec<&Arc<str>> = read.points.values().map(|p| &p.readables[0].expr).collect();
        assert!(Arc::ptr_eq(names[0], names[1]));
    }
}
