//! [`SeedMaker`]: candidate programs (csmith's or a file's) normalized, profiled, parsed and
//! vetted, then stored. A seed that fails a step is rejected with a one-line reason.

use crate::config::{CompilerConfig, Config};
use crate::process::compile::Additions;
use crate::process::compile::{compile, run_binary};
use crate::process::runner::{run, Limits};
use crate::seeds::normalize::{normalize, system_include_dirs};
use crate::seeds::rejection::{Rejection, Vetted};
use crate::seeds::repair::{repair, Repaired};
use crate::seeds::reserved::ReservedNames;
use crate::seeds::vetting::{front_end_rejection, guard_warnings, sanitize, vetting_clang};
use anyhow::{bail, Context, Result};
use ccfuzz_mutators::model::Program;
use ccfuzz_mutators::programs::{LoadedSeed, Programs};
use ccfuzz_mutators::seed::{Seed, SeedId, SeedProfile, SeedStore};
use ccfuzz_mutators::valuation::Valuation;
use ccfuzz_observers::gcov::GcovReport;
use ccfuzz_observers::{ConfigOutcome, RunResult};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

mod probe_runs;

/// What running the profiling build of a seed produced.
struct Profiled {
    line_counts: BTreeMap<u32, u64>,
    /// Wall time of the run (with gcov's counters: a little more than a plain build's).
    run_time: Duration,
    reference: RunResult,
}

/// Line counts of `source_name` from `gcov -j -t` output.
pub fn parse_gcov(json: &[u8], source_name: &str) -> Result<BTreeMap<u32, u64>> {
    let report: GcovReport = serde_json::from_slice(json).context("gcov printed malformed JSON")?;
    let mut counts = BTreeMap::new();
    for file in report
        .files
        .iter()
        .filter(|f| Path::new(&f.file).file_name() == Path::new(source_name).file_name())
    {
        for line in &file.lines {
            *counts.entry(line.line_number).or_insert(0) += line.count;
        }
    }
    if counts.is_empty() {
        bail!("gcov reported no lines for {source_name}");
    }
    Ok(counts)
}

/// Turns candidate programs into stored, profiled seeds.
pub struct SeedMaker {
    config: Config,
    store: SeedStore,
    workdir: PathBuf,
    system_dirs: Vec<PathBuf>,
    headers: HashMap<String, String>,
    /// The clang whose sanitizers vet every seed.
    sanitizing_clang: Option<String>,
    /// Time spent making seeds, and the part of it the sanitizers took.
    pub timing: SeedTiming,
    /// Where an accepted seed goes parsed, when a campaign's chains will use it.
    parsed_seeds: Option<Arc<Programs>>,
    /// Whether seeds get a valuation profile: only Hermes reads one.
    valuations: bool,
    /// The C library's names, which a seed must not define.
    reserved: ReservedNames,
}

/// What a program must print, when something other than the reference says so.
#[derive(Clone, Copy, Debug)]
enum Oracle<'a> {
    /// Exactly this (an Orange program's own expected values).
    Exact(&'a [u8]),
    /// A test suite's `.expect` file, compared as TinyCC's tests2 compares it: whitespace
    /// changes ignored (`diff -b`), and without the lines of tcc's own diagnostics that it
    /// records with the output. The reference's output, when it matches, is the seed's.
    TestSuite(&'a [u8]),
}

/// Whether `output` is what a test-suite `.expect` file says, as [`Oracle::TestSuite`] compares.
fn same_as_test_suite_expects(output: &[u8], expect: &[u8]) -> bool {
    fn is_diagnostic(line: &str) -> bool {
        let Some((file, rest)) = line.split_once(".c:") else {
            return false;
        };
        let (number, message) = rest.split_once(": ").unwrap_or(("", rest));
        !file.contains(' ')
            && !number.is_empty()
            && number.bytes().all(|b| b.is_ascii_digit())
            && (message.starts_with("warning:") || message.starts_with("error:"))
    }
    fn lines(text: &[u8], drop_diagnostics: bool) -> Vec<String> {
        let mut lines: Vec<String> = String::from_utf8_lossy(text)
            .lines()
            .filter(|line| !(drop_diagnostics && is_diagnostic(line)))
            .map(|line| line.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        lines
    }
    lines(output, false) == lines(expect, true)
}

/// Where the time of seed making goes.
#[derive(Clone, Copy, Debug, Default)]
pub struct SeedTiming {
    pub seeds: u32,
    /// The candidates that became seeds.
    pub accepted: u32,
    pub total: Duration,
    pub sanitizers: Duration,
    pub guard_warnings: Duration,
    /// The tested front ends' syntax checks.
    pub front_ends: Duration,
}

impl SeedTiming {
    /// The timings of two seed makers together.
    pub fn plus(&self, other: &SeedTiming) -> SeedTiming {
        SeedTiming {
            seeds: self.seeds + other.seeds,
            accepted: self.accepted + other.accepted,
            total: self.total + other.total,
            sanitizers: self.sanitizers + other.sanitizers,
            guard_warnings: self.guard_warnings + other.guard_warnings,
            front_ends: self.front_ends + other.front_ends,
        }
    }

    /// One line for the `ccfuzz seeds` summary.
    pub fn describe(&self) -> String {
        let per_seed = |d: Duration| d.as_secs_f64() * 1000.0 / f64::from(self.seeds.max(1));
        let share = |d: Duration| 100.0 * d.as_secs_f64() / self.total.as_secs_f64().max(1e-9);
        format!(
            "{:.0} ms per candidate seed, {:.0} ms of it for sanitizer vetting ({:.0}%), {:.0} ms for the guard's warnings ({:.0}%), {:.0} ms for the tested front ends ({:.0}%)",
            per_seed(self.total),
            per_seed(self.sanitizers),
            share(self.sanitizers),
            per_seed(self.guard_warnings),
            share(self.guard_warnings),
            per_seed(self.front_ends),
            share(self.front_ends)
        )
    }
}

impl SeedMaker {
    pub fn new(config: Config, store: SeedStore, workdir: PathBuf) -> Result<Self> {
        std::fs::create_dir_all(&workdir)?;
        let system_dirs = system_include_dirs(&config)?;
        let sanitizing_clang = vetting_clang(&config);
        if sanitizing_clang.is_none() {
            log::warn!("no clang among the UB-check configurations: seeds are not vetted with sanitizers");
        }
        let reserved = ReservedNames::of_library(
            &config.reference.argv()[0],
            &workdir,
            &Limits::compiler(config.compile_timeout().max(Duration::from_secs(60))),
        )
        .unwrap_or_else(|e| {
            log::warn!("{e:#}: only the names of a seed's own system headers are taken as reserved");
            ReservedNames::default()
        });
        Ok(SeedMaker {
            reserved,
            sanitizing_clang,
            timing: SeedTiming::default(),
            config,
            store,
            workdir,
            system_dirs,
            headers: HashMap::new(),
            parsed_seeds: None,
            valuations: true,
        })
    }

    /// Makes seeds without a valuation profile: a campaign without Hermes, or one that tests
    /// its seeds unmutated (plain Csmith), never reads it, and it costs a compilation and a
    /// run per seed.
    pub fn without_valuations(self) -> Self {
        SeedMaker {
            valuations: false,
            ..self
        }
    }

    /// Puts every accepted seed, parsed, in this cache.
    pub fn with_parsed_seeds(self, programs: Arc<Programs>) -> Self {
        SeedMaker {
            parsed_seeds: Some(programs),
            ..self
        }
    }

    pub fn store(&self) -> &SeedStore {
        &self.store
    }

    fn limits(&self) -> Limits {
        Limits::compiler(self.profile_compile_timeout())
    }

    /// Generates one program with csmith.
    pub fn csmith(&self, random_seed: u64) -> Result<(String, String)> {
        let mut command = Command::new("csmith");
        // csmith writes `platform.info` into its working directory.
        command
            .current_dir(&self.workdir)
            .args(&self.config.csmith_args)
            .arg("-s")
            .arg(random_seed.to_string());
        let out = run(command, &self.limits()).context("cannot run csmith")?;
        if !out.success() {
            bail!(
                "csmith -s {random_seed} failed ({} after {:.1} s): {}",
                out.exit,
                out.elapsed.as_secs_f64(),
                out.stderr_text().trim()
            );
        }
        let origin = format!("csmith {} -s {random_seed}", self.config.csmith_args.join(" "));
        Ok((
            String::from_utf8(out.stdout).context("csmith printed non-UTF-8")?,
            origin,
        ))
    }

    /// A C file as a seed: repaired as the vetting clang asks ([`repair`]), its `#include "…"`
    /// files found beside it, and `X.expect` beside `X.c` as its expected output. Returns the
    /// verdict and the repairs made.
    pub fn make_file(&mut self, file: &Path, source: &str) -> Result<(Vetted<SeedId>, Vec<String>)> {
        let repaired = self.repair(source)?;
        if !repaired.changes.is_empty() {
            log::info!("seed {}: repaired: {}", file.display(), repaired.changes.join(", "));
        }
        let expect = std::fs::read(file.with_extension("expect")).ok();
        let started = Instant::now();
        let made = self.make_untimed(
            &repaired.text,
            &file.display().to_string(),
            expect.as_deref().map(Oracle::TestSuite),
            file.parent(),
        );
        self.count(started, &made);
        Ok((made?, repaired.changes))
    }

    /// The program with the repairs the vetting clang asks for; unchanged without one.
    fn repair(&self, source: &str) -> Result<Repaired> {
        match &self.sanitizing_clang {
            Some(clang) => {
                let dir = tempfile::Builder::new().prefix("repair-").tempdir_in(&self.workdir)?;
                repair(clang, source, dir.path(), self.profile_compile_timeout())
            }
            None => Ok(Repaired {
                text: source.to_string(),
                changes: Vec::new(),
            }),
        }
    }

    /// Normalizes, profiles, parses and vets a program; stores it when it is accepted.
    pub fn make(&mut self, source: &str, origin: &str) -> Result<Vetted<SeedId>> {
        self.make_with_oracle(source, origin, None)
    }

    /// [`make`](Self::make) for a program that knows its own output (an Orange program computes
    /// its expected values while it is generated): the seed's expected output is the oracle's,
    /// and a reference that prints something else, while the UB checks print the oracle's
    /// output, is the reference compiler's fault, which the seed's first execution reports.
    pub fn make_with_oracle(&mut self, source: &str, origin: &str, oracle: Option<&[u8]>) -> Result<Vetted<SeedId>> {
        let started = Instant::now();
        let made = self.make_untimed(source, origin, oracle.map(Oracle::Exact), None);
        self.count(started, &made);
        made
    }

    fn count<T>(&mut self, started: Instant, made: &Result<Vetted<T>>) {
        self.timing.seeds += 1;
        self.timing.accepted += u32::from(matches!(made, Ok(Ok(_))));
        self.timing.total += started.elapsed();
    }

    /// `quote_dir`: where the program's own `#include "…"` files are (torture tests include
    /// their siblings; the program is preprocessed from a private copy).
    fn make_untimed(
        &mut self,
        source: &str,
        origin: &str,
        oracle: Option<Oracle>,
        quote_dir: Option<&Path>,
    ) -> Result<Vetted<SeedId>> {
        let dir = tempfile::Builder::new().prefix("seed-").tempdir_in(&self.workdir)?;
        let original = dir.path().join("original.c");
        std::fs::write(&original, source)?;
        let mut command = Command::new(self.preprocessor());
        command.arg("-E").arg("-I").arg(&self.config.csmith_include);
        if let Some(dir) = quote_dir {
            command.arg("-iquote").arg(dir);
        }
        command.arg(&original);
        let out = run(command, &self.limits())?;
        if !out.success() {
            let message = out
                .stderr_text()
                .lines()
                .find(|l| l.contains("error"))
                .unwrap_or("failed")
                .to_string();
            return Ok(Err(Rejection::Preprocess(message)));
        }
        let normalized = normalize(&String::from_utf8_lossy(&out.stdout), &self.system_dirs);
        let headers = match self.expand_headers(&normalized.includes, dir.path())? {
            Ok(h) => h,
            Err(rejection) => return Ok(Err(rejection)),
        };
        let text = format!("{}{}", normalized.includes, normalized.body);
        let include_block_len = normalized.includes.len();
        let Profiled {
            line_counts,
            reference,
            run_time,
        } = match self.profile(&text, dir.path())? {
            Ok(profile) => profile,
            Err(rejection) => return Ok(Err(rejection)),
        };
        // Parsed only once it ran: the parse is most of seed making's own CPU, and one csmith
        // program in ten does not end within the seed timeout. Before the UB checks, which a
        // seed defining a library function may fail for a reason less clear than this one's
        // (the profiling run may too, when the reference calls the seed's own definition).
        let unprofiled = match Program::parse_parts(&text, &headers, include_block_len, &BTreeMap::new()) {
            Err(e) => return Ok(Err(Rejection::Parse(e.to_string()))),
            Ok(program) => program,
        };
        // The parse's tens of megabytes are free now; the vetting and valuation runs that
        // follow take seconds, and a campaign's RSS would hold them all that time (a client
        // sampled during seed making showed 52-61 MB against 34 between seeds).
        crate::ops::heap::return_freed_memory();
        let reserved = self.reserved.defined_by(&unprofiled);
        if !reserved.is_empty() {
            return Ok(Err(Rejection::DefinesLibraryFunctions(reserved)));
        }
        let expected = match oracle {
            Some(Oracle::TestSuite(expect)) if matches!(&reference, RunResult::Exited { code: 0, stdout, .. } if same_as_test_suite_expects(stdout, expect)) => {
                reference.clone()
            }
            Some(Oracle::Exact(output) | Oracle::TestSuite(output)) => RunResult::exited(0, output.to_vec()),
            None => reference.clone(),
        };
        let RunResult::Exited { code, stdout, .. } = &expected else {
            unreachable!("profile returns exited runs only")
        };
        for check in &self.config.ub_check {
            let source = dir.path().join("seed.c");
            let binary = dir.path().join("check");
            let failure = self.compile_plain(check, &source, &binary)?;
            if let Some(failure) = failure {
                return Ok(Err(Rejection::Compile(format!(
                    "{}: {}",
                    check.name(),
                    failure.describe()
                ))));
            }
            let run = run_binary(&binary, self.config.seed_timeout())?;
            if reference != expected && !run.is_expected(*code, stdout) {
                return Ok(Err(Rejection::Unexpected(format!(
                    "{} instead of {}",
                    reference.describe(),
                    expected.describe()
                ))));
            }
            if !run.is_expected(*code, stdout) {
                let detail = format!("{} instead of {}", run.describe(), expected.describe());
                return Ok(Err(Rejection::Differs {
                    config: check.name().to_string(),
                    detail,
                }));
            }
        }
        if reference != expected {
            log::warn!(
                "{} prints {} where the program must print {}, and the UB checks agree with the program: a finding against the reference",
                self.config.reference.name(),
                reference.describe(),
                expected.describe()
            );
        }
        if let Some(clang) = &self.sanitizing_clang {
            let source = dir.path().join("seed.c");
            let started = Instant::now();
            let report = sanitize(
                clang,
                &source,
                dir.path(),
                &expected,
                self.profile_compile_timeout(),
                self.config.seed_timeout(),
            )?;
            self.timing.sanitizers += started.elapsed();
            if let Some(report) = report {
                return Ok(Err(Rejection::Sanitizer(report)));
            }
            let started = Instant::now();
            let gcc = self.config.reference.argv()[0].clone();
            let error = guard_warnings(&gcc, clang, &source, dir.path(), self.profile_compile_timeout())?;
            self.timing.guard_warnings += started.elapsed();
            if let Some(error) = error {
                return Ok(Err(Rejection::GuardWarnings(error)));
            }
        }
        let started = Instant::now();
        let source = dir.path().join("seed.c");
        let rejection = front_end_rejection(
            &self.config.configurations,
            &source,
            dir.path(),
            self.profile_compile_timeout(),
        )?;
        self.timing.front_ends += started.elapsed();
        if let Some(error) = rejection {
            return Ok(Err(Rejection::Compile(error)));
        }
        let headers_hash = self.store.put_headers(&headers)?;
        let profile = SeedProfile {
            origin: origin.to_string(),
            headers: headers_hash,
            include_block_len,
            line_counts,
            expected_exit: *code,
            run_ms: Some(run_time.as_millis() as u64),
        };
        let seed = Seed::new(text, profile, stdout.clone());
        self.store.put(&seed)?;
        let program = unprofiled
            .with_line_counts(&seed.profile.line_counts)
            .sharing_text(&seed.text);
        let valuation = if self.valuations {
            match self.profile_valuation(&seed, &program, dir.path())? {
                Ok(valuation) => {
                    self.store.put_valuation(&seed.id, &valuation)?;
                    valuation
                }
                Err(reason) => {
                    log::warn!("seed {} has no valuation profile: {reason}", seed.id);
                    Valuation::default()
                }
            }
        } else {
            Valuation::default()
        };
        let id = seed.id.clone();
        if let Some(programs) = &self.parsed_seeds {
            programs.insert(LoadedSeed {
                seed,
                program,
                valuation,
            });
        }
        Ok(Ok(id))
    }

    /// Vetting a seed is not testing the compiler: it gets at least a minute per compilation
    /// even when the campaign's compile timeout is short.
    fn profile_compile_timeout(&self) -> Duration {
        self.config.compile_timeout().max(Duration::from_secs(60))
    }

    /// A build of `source` by `compiler` as configured, with the seed making's timeout: the
    /// failure, if any.
    fn compile_plain(&self, compiler: &CompilerConfig, source: &Path, binary: &Path) -> Result<Option<ConfigOutcome>> {
        Ok(compile(
            compiler,
            source,
            binary,
            &Additions::default(),
            self.profile_compile_timeout(),
        )?
        .0)
    }

    fn preprocessor(&self) -> String {
        self.config.reference.argv()[0].clone()
    }

    /// The include block expanded by the reference preprocessor, for parsing.
    fn expand_headers(&mut self, includes: &str, dir: &Path) -> Result<Vetted<String>> {
        if let Some(expanded) = self.headers.get(includes) {
            return Ok(Ok(expanded.clone()));
        }
        let path = dir.join("includes.c");
        std::fs::write(&path, includes)?;
        let mut command = Command::new(self.preprocessor());
        command.arg("-E").arg("-P").arg(&path);
        let out = run(command, &self.limits())?;
        if !out.success() {
            return Ok(Err(Rejection::Preprocess(
                out.stderr_text().lines().next().unwrap_or("").to_string(),
            )));
        }
        let expanded = String::from_utf8_lossy(&out.stdout).into_owned();
        self.headers.insert(includes.to_string(), expanded.clone());
        Ok(Ok(expanded))
    }

    /// Compiles with the reference configuration plus `--coverage`, runs, reads gcov.
    fn profile(&self, text: &str, dir: &Path) -> Result<Vetted<Profiled>> {
        let source = dir.join("seed.c");
        std::fs::write(&source, text)?;
        let binary = dir.join("prof");
        let (failure, _) = compile(
            &self.config.reference,
            &source,
            &binary,
            &Additions::flags(&["--coverage"]),
            self.profile_compile_timeout(),
        )?;
        if let Some(failure) = failure {
            return Ok(Err(Rejection::Compile(format!(
                "{}: {}",
                self.config.reference.name(),
                failure.describe()
            ))));
        }
        let started = Instant::now();
        let result = run_binary(&binary, self.config.seed_timeout())?;
        let run_time = started.elapsed();
        match &result {
            RunResult::TimedOut => return Ok(Err(Rejection::Timeout)),
            RunResult::Signaled(signal) => return Ok(Err(Rejection::Crash(format!("killed by signal {signal}")))),
            RunResult::Exited { len, .. } if *len > ccfuzz_observers::KEPT_OUTPUT => {
                return Ok(Err(Rejection::Crash(format!(
                    "prints {len} bytes, more than a seed may"
                ))))
            }
            RunResult::Exited { .. } => {}
        }
        let mut command = Command::new(self.gcov());
        command.arg("-j").arg("-t").arg("prof-seed.gcda").current_dir(dir);
        let out = run(command, &Limits::compiler(Duration::from_secs(60)))?;
        // Before the parse now, so a program the parser would have rejected gets here too:
        // one seed's failure, not the seed maker's.
        if !out.success() {
            let message = out.stderr_text().lines().next().unwrap_or("failed").to_string();
            return Ok(Err(Rejection::Profile(format!("gcov: {message}"))));
        }
        Ok(Ok(Profiled {
            line_counts: parse_gcov(&out.stdout, "seed.c")?,
            reference: result,
            run_time,
        }))
    }

    /// The gcov that matches the reference gcc (`gcc-12` → `gcov-12`).
    fn gcov(&self) -> String {
        let compiler = self.preprocessor();
        match compiler.strip_prefix("gcc") {
            Some(version) if !version.is_empty() => format!("gcov{version}"),
            _ => "gcov".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tcc_test_expectation_ignores_whitespace_changes_and_tcc_diagnostics() {
        let expect = b"33_ternary_op.c:26: warning: pointer/integer mismatch in conditional expression\nx=0: 1 2\n\n";
        assert!(same_as_test_suite_expects(b"x=0:  1 2 \n", expect));
        assert!(!same_as_test_suite_expects(b"x=0: 1 3\n", expect));
        assert!(!same_as_test_suite_expects(b"x=0: 12\n", expect));
        // Only the expectation's diagnostics go; the program prints all it prints.
        assert!(same_as_test_suite_expects(b"", b"a.c:3: error: no\n"));
        assert!(!same_as_test_suite_expects(b"a.c:3: error: no\n", b""));
        assert!(!same_as_test_suite_expects(b"", b"in a.c: 3 errors\n"));
    }

    #[test]
    fn gcov_counts_are_read_for_the_seed_only() {
        let json = br#"{"files":[{"file":"seed.c","lines":[{"line_number":3,"count":2},{"line_number":5,"count":0}]},{"file":"other.h","lines":[{"line_number":1,"count":9}]}]}"#;
        let counts = parse_gcov(json, "seed.c").unwrap();
        assert_eq!(counts.into_iter().collect::<Vec<_>>(), [(3, 2), (5, 0)]);
    }
}
