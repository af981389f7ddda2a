//! Helpers shared by the end-to-end tests: the ccfuzz binary, configurations, seed folders.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `ccfuzz` binary of the code under test: Cargo builds it for the package's integration
/// tests and names it here.
pub fn ccfuzz() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ccfuzz"));
    command.env("RUST_LOG", "info");
    command
}

pub fn seeds(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/seeds").join(folder)
}

/// Writes a campaign configuration testing `configurations` and returns its path.
pub fn write_config(dir: &Path, configurations: &[&str], compile_timeout: f64) -> PathBuf {
    let list = configurations
        .iter()
        .map(|c| format!("{c:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "reference = \"gcc -O0\"\nub_check = [\"clang -O0\"]\nconfigurations = [{list}]\ncompile_timeout = {compile_timeout:?}\nseed_timeout = 5.0\nrun_timeout = 10.0\ncsmith_include = \"/usr/include/csmith\"\ncsmith_args = [\"--no-packed-struct\"]\n"
    );
    let path = dir.join("configuration.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A `make instrumented-tcc` build: `tcc-afl`, `tcc-gcov` or `tcc-plain`.
pub fn built_tcc(kind: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build").join(kind);
    assert!(
        dir.join("tcc").is_file(),
        "{} is missing: run `make instrumented-tcc`",
        dir.join("tcc").display()
    );
    dir.canonicalize().unwrap()
}

/// Writes a campaign configuration that observes the AFL edges of the `tcc-afl` build in
/// `tcc` and gcc-12 -O1's statistics, and returns its path.
pub fn write_edges_and_counters_config(dir: &Path, tcc: &Path) -> PathBuf {
    let path = dir.join("configuration.toml");
    std::fs::write(
        &path,
        format!(
            "reference = \"gcc -O0\"\nub_check = [\"clang -O0\"]\n\
             configurations = [{{ command = \"{tcc} -B{build}\", coverage = \"afl\" }}, {{ command = \"gcc-12 -O1\", counters = \"gcc\" }}]\n\
             compile_timeout = 60.0\nseed_timeout = 5.0\nrun_timeout = 10.0\n\
             csmith_include = \"/usr/include/csmith\"\ncsmith_args = [\"--no-packed-struct\"]\n",
            tcc = tcc.join("tcc").display(),
            build = tcc.display()
        ),
    )
    .unwrap();
    path
}

pub fn free_port() -> u16 {
    ccfuzz::campaign::broker::free_port().unwrap()
}

pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// `ccfuzz fuzz` writing into `out` with the configuration file `config`.
pub fn fuzz(out: &Path, config: &Path) -> Command {
    let mut command = ccfuzz();
    command.arg("fuzz").arg("--out").arg(out).arg("--config").arg(config);
    command
}

/// `ccfuzz fuzz` on core 0, with a broker on a free port.
pub fn fuzz_on_one_core(out: &Path, config: &Path) -> Command {
    let mut command = fuzz(out, config);
    command.args(["--cores", "0", "--broker-port", &free_port().to_string()]);
    command
}

/// Runs a campaign to completion and returns its combined output.
pub fn campaign(out: &Path, config: &Path, extra: &[&str]) -> String {
    let output = fuzz_on_one_core(out, config).args(extra).output().unwrap();
    let log = text(&output);
    assert!(output.status.success(), "campaign failed:\n{log}");
    log
}

/// The finding directories of a campaign, sorted.
pub fn findings(out: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = match std::fs::read_dir(out.join("findings")) {
        Ok(entries) => entries
            .map(|e| e.unwrap().path())
            .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
            .collect(),
        Err(_) => Vec::new(),
    };
    dirs.sort();
    dirs
}

pub fn finding_json(dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(dir.join("finding.json")).unwrap()).unwrap()
}

/// Runs a finding's repro.sh and asserts that it reproduces and leaves nothing in its `TMPDIR`.
pub fn assert_reproduces(dir: &Path) -> String {
    let tmpdir = tempfile::tempdir().unwrap();
    let output = Command::new(dir.join("repro.sh"))
        .env("TMPDIR", tmpdir.path())
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{} does not reproduce:\n{log}", dir.display());
    assert!(log.contains("reproduced:") && !log.contains("not reproduced"), "{log}");
    // Nor do its compilers (a crashing clang writes its reproducer to TMPDIR).
    let left: Vec<_> = std::fs::read_dir(tmpdir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "repro.sh left {left:?} in its TMPDIR");
    log
}

/// The line of a sanitized binary's stderr that says what UBSan or ASan found, if any.
pub fn sanitizer_report(stderr: &str) -> &str {
    stderr
        .lines()
        .find(|l| l.contains("runtime error") || l.contains("ERROR"))
        .unwrap_or("")
}

/// The report the campaign's first client wrote when it stopped.
pub fn client_report(out: &Path) -> ccfuzz::campaign::ClientReport {
    let path = out.join("clients/client-1.json");
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&bytes).unwrap()
}

/// clang 22 of the Debian unstable root as `make unstable-compilers` (a part of `make deps`)
/// installs it.
pub fn clang_22() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/bin/clang-22");
    assert!(path.is_file(), "{} is missing: run `make deps`", path.display());
    path.canonicalize().unwrap()
}

/// `ccfuzz seeds` on the C files of `seed_dir` into `store`: its output, one line a file.
pub fn vet_seeds(store: &Path, seed_dir: &Path, config: &Path) -> String {
    let output = ccfuzz()
        .args(["seeds", "--store"])
        .arg(store)
        .arg("--dir")
        .arg(seed_dir)
        .arg("--config")
        .arg(config)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    log
}

/// Profiles the seeds of `seed_dir` into `out/seeds` and returns the id of the first accepted.
/// `out` becomes a campaign directory (of this format version) that campaigns and replays take.
pub fn store_seed(out: &Path, config: &Path, seed_dir: &Path) -> ccfuzz_mutators::seed::SeedId {
    ccfuzz::ops::format_version::claim(out, "campaign").unwrap();
    let log = vet_seeds(&out.join("seeds"), seed_dir, config);
    let id = log
        .lines()
        .find_map(|l| l.split("accepted as ").nth(1))
        .unwrap_or_else(|| panic!("{log}"));
    ccfuzz_mutators::seed::SeedId(id.trim().to_string())
}

/// Executes with `ccfuzz replay` the variant of seed `id` that inserts `code` before the first
/// statement that ran, saving any finding in `out/findings`; returns replay's output.
pub fn replay_insertion(out: &Path, config: &Path, id: ccfuzz_mutators::seed::SeedId, code: &str) -> Output {
    use ccfuzz_mutators::edit::Edit;
    use ccfuzz_mutators::input::Variant;
    use ccfuzz_mutators::model::Execution;
    use libafl::inputs::Input;
    let programs =
        ccfuzz_mutators::programs::Programs::new(ccfuzz_mutators::seed::SeedStore::open(out.join("seeds")).unwrap(), 1);
    let program = &programs.get(&id).unwrap().program;
    let target = program
        .statements
        .iter()
        .find(|s| s.execution == Execution::Executed && !s.function_body)
        .unwrap()
        .id;
    let variant = Variant::new(
        id,
        vec![Edit::InsertBefore {
            stmt: target,
            code: code.into(),
        }],
    );
    let file = out.join("replayed-variant");
    variant.to_file(&file).unwrap();
    ccfuzz()
        .args(["replay", "--out"])
        .arg(out)
        .arg("--config")
        .arg(config)
        .arg(&file)
        .output()
        .unwrap()
}

/// Compiles `source` with `compiler` and `flags` (and `-w`, `-lm`) into `binary`, or fails the test.
pub fn compile(compiler: &Path, flags: &[&str], source: &Path, binary: &Path) {
    let build = Command::new(compiler)
        .args(flags)
        .arg("-w")
        .arg(source)
        .arg("-o")
        .arg(binary)
        .arg("-lm")
        .output()
        .unwrap();
    assert!(
        build.status.success(),
        "{} {flags:?} failed:\n{}",
        compiler.display(),
        text(&build)
    );
}

/// `ccfuzz triage` of `out` (under `config`, or the campaign's own) without text reduction: edit
/// lists and Orange programs are minimized. Its output.
pub fn triage_without_text_reduction(out: &Path, config: Option<&Path>) -> String {
    let mut command = ccfuzz();
    command.args(["triage", "--reducer", "none"]);
    if let Some(config) = config {
        command.arg("--config").arg(config);
    }
    let output = command.arg(out).output().unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    log
}

/// Writes csmith's program of `seed` (`--no-packed-struct`) to `path`. Seed 7411 finishes in
/// milliseconds and prints a checksum.
pub fn write_csmith_program(seed: u64, path: &Path) {
    let generated = Command::new("csmith")
        .args(["--seed", &seed.to_string(), "--no-packed-struct", "--output"])
        .arg(path)
        .output()
        .unwrap();
    assert!(generated.status.success(), "{}", text(&generated));
}
