//! [`FindingsCorpus`]: the campaign's solutions corpus. LibAFL adds each execution the
//! objective judged a new finding to it, and it stores the finding where triage reads it, once:
//! a directory per symptom under `OUT/findings` with the variant, its seed, `finding.json` and a
//! `repro.sh` that reproduces it with one command. A finding this client observed itself is
//! queued for the other clients and nodes, which the client tells after each execution.

use crate::config::{CompilerConfig, Config};
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::Seed;
use ccfuzz_triage::finding::{Finding, FindingKind};
use libafl::corpus::{Corpus, CorpusId, InMemoryCorpus, Testcase};
use libafl::executors::ExitKind;
use libafl::{Error, HasMetadata};
use libafl_bolts::impl_serdeany;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The files of a finding's directory besides `finding.json` and `repro.sh`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindingFiles {
    pub variant_text: String,
    pub seed_text: String,
    pub expected_output: Vec<u8>,
    pub expected_exit: i32,
}

impl FindingFiles {
    pub fn of(variant_text: String, seed: &Seed) -> Self {
        FindingFiles {
            variant_text,
            seed_text: seed.text.to_string(),
            expected_output: seed.expected_output.clone(),
            expected_exit: seed.profile.expected_exit,
        }
    }
}

/// What the objective judged a solution's execution to show, on the solution's testcase until
/// the findings corpus stores it.
#[derive(Debug, Serialize, Deserialize)]
pub struct NewFindings {
    /// One per symptom not saved before.
    pub findings: Vec<Finding>,
    pub files: FindingFiles,
    /// The observations the findings were judged by (postcard of the observers), when this
    /// client made them: receivers with the same configuration judge the finding from them
    /// without compiling anything.
    pub observations: Option<Vec<u8>>,
    pub exit: ExitKind,
}
impl_serdeany!(NewFindings);

/// A finding made here, to be announced to the other clients and nodes.
#[derive(Clone, Debug)]
pub struct Announcement {
    pub variant: Variant,
    pub observations: Vec<u8>,
    pub exit: ExitKind,
}

/// The solutions corpus: findings written as finding directories in `dir`; the solutions
/// themselves (the variants, a few hundred bytes each) stay in memory for LibAFL's count.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FindingsCorpus {
    dir: PathBuf,
    /// For `repro.sh`'s timeouts.
    config: Config,
    solutions: InMemoryCorpus<Variant>,
    /// Findings made here since the client last announced them.
    #[serde(skip)]
    announcements: Vec<Announcement>,
}

impl FindingsCorpus {
    pub fn new(dir: PathBuf, config: Config) -> Self {
        FindingsCorpus {
            dir,
            config,
            solutions: InMemoryCorpus::new(),
            announcements: Vec::new(),
        }
    }

    /// Whether a finding of this symptom is stored (by any client of the campaign, in this run
    /// or before a resume).
    pub fn holds(&self, finding: &Finding) -> bool {
        finding_dir(&self.dir, finding).exists()
    }

    /// The findings made here that the other clients have not been told of.
    pub fn take_announcements(&mut self) -> Vec<Announcement> {
        std::mem::take(&mut self.announcements)
    }

    /// Writes the finding directories of a solution; queues it for the other clients when a
    /// directory is new and the observations are this client's.
    fn store(&mut self, input: Option<&Variant>, judged: NewFindings) {
        let mut written = false;
        for finding in &judged.findings {
            match save_finding(&self.dir, finding, &judged.files, &self.config) {
                Ok(true) => {
                    log::info!(
                        "new {} finding: {} ({})",
                        finding.kind.as_str(),
                        finding.configuration,
                        finding.actual
                    );
                    written = true;
                }
                // Another client saved the symptom since the objective looked.
                Ok(false) => {}
                Err(e) => log::error!("cannot save a finding in {}: {e}", self.dir.display()),
            }
        }
        if let (true, Some(variant), Some(observations)) = (written, input, judged.observations) {
            self.announcements.push(Announcement {
                variant: variant.clone(),
                observations,
                exit: judged.exit,
            });
        }
    }
}

impl Corpus<Variant> for FindingsCorpus {
    fn count(&self) -> usize {
        self.solutions.count()
    }

    fn count_disabled(&self) -> usize {
        self.solutions.count_disabled()
    }

    fn count_all(&self) -> usize {
        self.solutions.count_all()
    }

    /// Stores the findings the objective attached, and keeps the solution without them.
    fn add(&mut self, mut testcase: Testcase<Variant>) -> Result<CorpusId, Error> {
        if let Some(judged) = testcase.metadata_map_mut().remove::<NewFindings>() {
            self.store(testcase.input().as_ref(), *judged);
        }
        self.solutions.add(testcase)
    }

    fn add_disabled(&mut self, testcase: Testcase<Variant>) -> Result<CorpusId, Error> {
        self.solutions.add_disabled(testcase)
    }

    fn replace(&mut self, id: CorpusId, testcase: Testcase<Variant>) -> Result<Testcase<Variant>, Error> {
        self.solutions.replace(id, testcase)
    }

    /// Forgets the solution; its finding directories stay: they are triage's.
    fn remove(&mut self, id: CorpusId) -> Result<Testcase<Variant>, Error> {
        self.solutions.remove(id)
    }

    fn get(&self, id: CorpusId) -> Result<&RefCell<Testcase<Variant>>, Error> {
        self.solutions.get(id)
    }

    fn get_from_all(&self, id: CorpusId) -> Result<&RefCell<Testcase<Variant>>, Error> {
        self.solutions.get_from_all(id)
    }

    fn current(&self) -> &Option<CorpusId> {
        self.solutions.current()
    }

    fn current_mut(&mut self) -> &mut Option<CorpusId> {
        self.solutions.current_mut()
    }

    fn next(&self, id: CorpusId) -> Option<CorpusId> {
        self.solutions.next(id)
    }

    fn peek_free_id(&self) -> CorpusId {
        self.solutions.peek_free_id()
    }

    fn prev(&self, id: CorpusId) -> Option<CorpusId> {
        self.solutions.prev(id)
    }

    fn first(&self) -> Option<CorpusId> {
        self.solutions.first()
    }

    fn last(&self) -> Option<CorpusId> {
        self.solutions.last()
    }

    fn nth_from_all(&self, nth: usize) -> CorpusId {
        self.solutions.nth_from_all(nth)
    }

    fn load_input_into(&self, testcase: &mut Testcase<Variant>) -> Result<(), Error> {
        self.solutions.load_input_into(testcase)
    }

    fn store_input_from(&self, testcase: &Testcase<Variant>) -> Result<(), Error> {
        self.solutions.store_input_from(testcase)
    }
}

/// The directory of a finding: its kind and signature.
fn finding_dir(dir: &Path, finding: &Finding) -> PathBuf {
    dir.join(format!("{}-{}", finding.kind.as_str(), finding.signature))
}

/// The reproduction script: exit 0 and say so when the symptom shows, exit 1 otherwise.
pub fn repro_script(finding: &Finding, config: &Config, expected_exit: i32) -> String {
    let compiler = CompilerConfig::new(finding.configuration.clone());
    let compile_line = compiler
        .shell_line("variant.c", "\"$tmp/prog\"")
        .replace("'\"$tmp/prog\"'", "\"$tmp/prog\"");
    let compile_timeout = config.compile_timeout.ceil() as u64;
    let run_timeout = config.run_timeout.ceil() as u64;
    let header = format!(
        "#!/bin/sh\n# {kind} of `{conf}` on variant.c (a variant of seed.c).\n# Found with {version}.\n# Exits 0 when the {kind} reproduces.\ncd \"$(dirname \"$0\")\" || exit 2\ntmp=$(mktemp -d) || exit 2\ntrap 'rm -rf \"$tmp\"' EXIT\n# The compilers' temporary files (a crashing clang's reproducer) go with it.\nexport TMPDIR=\"$tmp\"\n",
        kind = finding.kind.as_str(),
        conf = finding.configuration,
        version = finding.compiler_version.as_deref().unwrap_or("a compiler of unknown version"),
    );
    let body = match finding.kind {
        FindingKind::Mismatch => format!(
            "timeout {compile_timeout} {compile_line} || {{ echo \"not reproduced: variant.c does not compile\"; exit 1; }}\n\
             (cd \"$tmp\" && timeout -s KILL {run_timeout} ./prog > actual.out)\nstatus=$?\n\
             if [ \"$status\" -eq {expected_exit} ] && cmp -s expected.out \"$tmp/actual.out\"; then\n  echo \"not reproduced: {conf} prints the expected output\"; exit 1\nfi\n\
             echo \"reproduced: {conf} exits with $status (expected {expected_exit}); output diff (expected, actual):\"\n\
             diff expected.out \"$tmp/actual.out\" | head -20\nexit 0\n",
            conf = finding.configuration
        ),
        FindingKind::Crash => format!(
            "timeout {compile_timeout} {compile_line} 2> \"$tmp/stderr\"\nstatus=$?\n\
             if grep -qE 'internal compiler error|PLEASE submit a bug report|frontend command failed' \"$tmp/stderr\" || {{ [ \"$status\" -gt 128 ] && [ \"$status\" -ne 137 ]; }}; then\n  echo \"reproduced: {conf} crashed (status $status)\"; grep -E 'internal compiler error|^[0-9]+\\.|error:' \"$tmp/stderr\" | head -5; exit 0\nfi\n\
             echo \"not reproduced: {conf} exits with $status\"; exit 1\n",
            conf = finding.configuration
        ),
        FindingKind::Hang => format!(
            "timeout -s KILL {compile_timeout} {compile_line}\nstatus=$?\n\
             if [ \"$status\" -eq 137 ] || [ \"$status\" -eq 124 ]; then echo \"reproduced: {conf} ran longer than {compile_timeout} s\"; exit 0; fi\n\
             echo \"not reproduced: {conf} finished with status $status\"; exit 1\n",
            conf = finding.configuration
        ),
    };
    format!("{header}{body}")
}

/// Writes a finding directory atomically; returns false when one with that signature exists.
pub fn save_finding(dir: &Path, finding: &Finding, files: &FindingFiles, config: &Config) -> std::io::Result<bool> {
    let target = finding_dir(dir, finding);
    if target.exists() {
        return Ok(false);
    }
    fs::create_dir_all(dir)?;
    let staging = dir.join(format!(".staging-{}-{}", finding.signature, std::process::id()));
    fs::create_dir_all(&staging)?;
    fs::write(staging.join("variant.c"), &files.variant_text)?;
    fs::write(staging.join("seed.c"), &files.seed_text)?;
    fs::write(staging.join("expected.out"), &files.expected_output)?;
    fs::write(
        staging.join("finding.json"),
        serde_json::to_vec_pretty(finding).map_err(std::io::Error::other)?,
    )?;
    let script = staging.join("repro.sh");
    fs::write(&script, repro_script(finding, config, files.expected_exit))?;
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
    match fs::rename(&staging, &target) {
        Ok(()) => Ok(true),
        Err(_) if target.exists() => {
            fs::remove_dir_all(&staging)?;
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ccfuzz_mutators::seed::SeedId;

    fn new_findings(signature: &str, observations: Option<Vec<u8>>) -> NewFindings {
        let seed = SeedId::of_text("int main(void) { return 0; }");
        NewFindings {
            findings: vec![Finding {
                kind: FindingKind::Mismatch,
                configuration: "gcc -O2".into(),
                compiler_version: Some("gcc (Debian 12.2.0-14) 12.2.0".into()),
                compiler: "gcc".into(),
                flags: vec!["-O2".into()],
                expected: "exit 0".into(),
                actual: "exit 1".into(),
                message: None,
                seed,
                seed_origin: "test".into(),
                edits: Vec::new(),
                signature: signature.into(),
            }],
            files: FindingFiles {
                variant_text: "int main(void) { return 1; }\n".into(),
                seed_text: "int main(void) { return 0; }\n".into(),
                expected_output: Vec::new(),
                expected_exit: 0,
            },
            observations,
            exit: ExitKind::Ok,
        }
    }

    fn solution(judged: NewFindings) -> Testcase<Variant> {
        let mut testcase = Testcase::new(Variant::of_seed(judged.findings[0].seed.clone()));
        testcase.add_metadata(judged);
        testcase
    }

    #[test]
    fn a_solution_is_stored_once_as_its_finding_directory_and_announced_when_observed_here() {
        let dir = tempfile::tempdir().unwrap();
        let mut corpus = FindingsCorpus::new(dir.path().join("findings"), Config::detect(false));
        let observed = new_findings("sig1", Some(vec![1, 2, 3]));
        assert!(!corpus.holds(&observed.findings[0]));
        let finding = observed.findings[0].clone();
        let id = corpus.add(solution(observed)).unwrap();
        assert!(corpus.holds(&finding));
        let stored = dir.path().join("findings").join("mismatch-sig1");
        for file in ["variant.c", "seed.c", "expected.out", "finding.json", "repro.sh"] {
            assert!(stored.join(file).is_file(), "{file}");
        }
        // Nothing else is written, and the solution keeps no copy of the files.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
        assert!(corpus.get(id).unwrap().borrow().metadata::<NewFindings>().is_err());
        let announced = corpus.take_announcements();
        assert_eq!(announced.len(), 1);
        assert_eq!(announced[0].observations, [1, 2, 3]);
        assert!(corpus.take_announcements().is_empty());
        // A symptom another client stored first, and one received from elsewhere: stored or
        // not, nothing is announced.
        corpus.add(solution(new_findings("sig1", Some(vec![4])))).unwrap();
        corpus.add(solution(new_findings("sig2", None))).unwrap();
        assert!(dir.path().join("findings").join("mismatch-sig2").is_dir());
        assert!(corpus.take_announcements().is_empty());
        assert_eq!(corpus.count(), 3);
    }
}
