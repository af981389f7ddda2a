//! The ground-truth benchmark end to end on a two-commit TinyCC history made here: Debian's
//! tcc source (the 2020 snapshot 62c30a4a, `make deps` unpacks it), then upstream's fix
//! c771cb52 ("Fix code suppression during nocode_wanted") applied by hand. A campaign seeded
//! with the dead-`||` program of `bugs/` finds it against the first commit, and the bisection
//! must name the second commit as its correcting commit; `ccfuzz triage --history` buckets
//! the run's findings by it too. A second setup finds it with the first commit's build
//! instrumented by afl-clang-fast (`coverage=afl`). Started again, the benchmark reuses the
//! run it finished, and the density survey runs at both commits from the build cache.
//!
//! The same for pcc, whose history is told apart by its sources: upstream's 2022-03-31
//! snapshot (the one Debian packages), then the fix of `bugs/pcc-ulong-to-long-double-stack`
//! applied to it, tested with `-O` by two setups paired on two cores.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

const FIX_SUBJECT: &str = "Fix code suppression during nocode_wanted";

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Debian's unpacked source of `package` (`tcc-*/` or `pcc-*/` under `build/<package>-src`).
fn debian_source(package: &str) -> PathBuf {
    let dir = manifest().join(format!("../build/{package}-src"));
    std::fs::read_dir(&dir)
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&format!("{package}-")))
        })
        .unwrap_or_else(|| panic!("no {package}-*/ in {}: run `make test`", dir.display()))
}

fn git(repo: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=ccfuzz", "-c", "user.email=ccfuzz@example.org"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_string()
}

/// A two-commit history in `repo`: `source` as it is, then `file` with `broken` (found once)
/// replaced by `fixed`; returns the hashes of both commits.
fn two_commit_history(
    repo: &Path,
    source: &Path,
    subject: &str,
    (file, broken, fixed, fix_subject): (&str, &str, &str, &str),
) -> (String, String) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(source.join("."))
        .arg(repo)
        .status()
        .unwrap();
    assert!(status.success());
    git(repo, &["init", "-q"]);
    git(repo, &["add", "-A", "-f", "."]);
    git(repo, &["commit", "-q", "-m", subject]);
    let path = repo.join(file);
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.matches(broken).count(), 1, "{file} is not the one the fix is for");
    std::fs::write(&path, text.replace(broken, fixed)).unwrap();
    git(repo, &["commit", "-q", "-a", "-m", fix_subject]);
    (git(repo, &["rev-parse", "HEAD~1"]), git(repo, &["rev-parse", "HEAD"]))
}

/// `ccfuzz experiment ground-truth` on `repo` with `config` and the build cache `cache`, one
/// repetition of 20 s.
fn ground_truth(repo: &Path, config: &Path, cache: &Path) -> Command {
    let mut command = ccfuzz();
    command
        .args(["experiment", "ground-truth", "--history"])
        .arg(repo)
        .arg("--config")
        .arg(config)
        .arg("--build-cache")
        .arg(cache)
        .args(["--seconds", "20", "--repetitions", "1"]);
    command
}

/// A directory of one seed, a bug's test of `bugs/`.
fn seeds_of(dir: &Path, bug: &str) -> PathBuf {
    let seeds = dir.join("seeds");
    std::fs::create_dir(&seeds).unwrap();
    std::fs::copy(manifest().join(format!("../bugs/{bug}/test.c")), seeds.join("test.c")).unwrap();
    seeds
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn ground_truth_names_the_commit_that_corrected_a_found_bug() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("tinycc");
    std::fs::create_dir(&repo).unwrap();
    let (broken, fixed) = two_commit_history(
        &repo,
        &debian_source("tcc"),
        "tcc 0.9.27+git20200814.62c30a4a (Debian)",
        (
            "tccgen.c",
            "#define CODE_OFF() (nocode_wanted |= 0x20000000)",
            "#define CODE_OFF() if(!nocode_wanted)(nocode_wanted |= 0x20000000)",
            FIX_SUBJECT,
        ),
    );
    let seeds = seeds_of(dir.path(), "tcc-dead-or-operand-drops-the-rest-of-the-function");
    // A second program of the same bug: two findings, one bucket.
    let test = std::fs::read_to_string(seeds.join("test.c")).unwrap();
    std::fs::write(seeds.join("again.c"), format!("{test}\n/* once more */\n")).unwrap();
    let config = write_config(dir.path(), &["gcc -O1"], 60.0);
    let cache = dir.path().join("builds");
    let out = dir.path().join("gt");
    // A relative --out: the bisection's compilers run inside it, elsewhere than here. The
    // second setup tests the AFL-instrumented build; paired on one core, the two setups run
    // one after the other.
    let output = ground_truth(&repo, &config, &cache)
        .current_dir(dir.path())
        .args(["--from", "HEAD~1", "--setup"])
        .arg(format!("seeded: seeds={} variants-per-seed=0", seeds.display()))
        .arg("--setup")
        .arg(format!(
            "covered: seeds={} variants-per-seed=0 coverage=afl",
            seeds.display()
        ))
        .args(["--paired", "--cores", "0", "--out", "gt"])
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // Both commits were built, once each, into the cache under their hashes, and the first
    // also with afl-clang-fast, whose edges the second setup's campaign observed.
    for hash in [&broken, &fixed] {
        assert!(cache.join(hash).join("tcc").is_file(), "{hash} not built: {log}");
    }
    assert!(cache.join(format!("{broken}-afl/tcc")).is_file(), "{log}");
    let afl_config = std::fs::read_to_string(out.join("configuration-afl.toml")).unwrap();
    assert!(
        afl_config.contains(&format!("{broken}-afl/tcc -B")) && afl_config.contains("coverage = \"afl\""),
        "{afl_config}"
    );
    let report = std::fs::read_to_string(out.join("covered-1/clients/client-1.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&report).unwrap();
    assert!(report["covered"]["edges_covered"].as_u64().unwrap() > 1000, "{report}");
    for setup in ["seeded", "covered"] {
        let finished = std::fs::read_to_string(out.join(format!("{setup}-1.finished"))).unwrap();
        assert!(finished.contains("[\n    0\n  ]"), "{finished}");
    }
    // The seed itself is the finding (it prints nothing and exits 5 under the first commit),
    // and its program passes under the second.
    let findings = std::fs::read_to_string(out.join("findings.csv")).unwrap();
    assert!(
        findings.lines().any(|l| l.starts_with("seeded,1,mismatch-")
            && l.contains(",seed,")
            && l.ends_with(&format!(",corrected,{fixed}"))),
        "{findings}"
    );
    let bugs = std::fs::read_to_string(out.join("bugs.csv")).unwrap();
    let row = bugs
        .lines()
        .find(|l| l.starts_with(&fixed[..10]))
        .unwrap_or_else(|| panic!("{bugs}"));
    assert!(
        row.contains(FIX_SUBJECT) && row.contains(",no,1,seeded;covered,"),
        "{bugs}"
    );
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("| seeded (`seeds="), "{report}");
    assert!(report.contains(FIX_SUBJECT), "{report}");
    assert!(out.join("bugs-over-time.svg").is_file());

    // `ccfuzz triage --history` buckets the run's findings the same way before reducing
    // anything, then triages one finding per bucket (here by edit-list minimization only).
    let output = ccfuzz()
        .arg("triage")
        .arg(out.join("seeded-1"))
        .arg("--history")
        .arg(&repo)
        .args(["--from", &broken, "--reducer", "none", "--build-cache"])
        .arg(&cache)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let bucketed = log
        .lines()
        .find_map(|l| l.split_once(" findings bucketed by correcting commit into 1 "))
        .and_then(|(findings, _)| findings.trim().parse::<usize>().ok());
    assert!(bucketed.is_some_and(|n| n >= 2), "{log}");
    assert!(log.contains(&format!("{fixed} {FIX_SUBJECT}")), "{log}");
    let buckets = std::fs::read_to_string(out.join("seeded-1/triage/by-correcting-commit.csv")).unwrap();
    assert!(buckets.lines().skip(1).all(|l| l.contains(&fixed)), "{buckets}");
    let triaged: Vec<_> = std::fs::read_dir(out.join("seeded-1/triage/work"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().join("result.json").is_file())
        .collect();
    assert_eq!(triaged.len(), 1, "one finding per bucket is triaged: {log}");
    assert!(log.contains("1 distinct bugs in"), "{log}");

    // Started again with a known-bugs list, the benchmark reuses its finished run rather than
    // running it again, and recognizes the same bug by two program runs and counts it apart. A
    // setup whose campaign fails (its seed folder is missing) fails the command, but only
    // after the report of the others is written.
    let known = dir.path().join("known-bugs");
    std::fs::write(&known, format!("{fixed} # {FIX_SUBJECT}\n")).unwrap();
    let again = out.clone();
    let output = ground_truth(&repo, &config, &cache)
        .args(["--from", &broken, "--to", &fixed, "--setup"])
        .arg(format!("seeded: seeds={} variants-per-seed=0", seeds.display()))
        .arg("--setup")
        .arg(format!(
            "broken: seeds={} variants-per-seed=0",
            dir.path().join("missing").display()
        ))
        .args(["--cores", "0", "--known-bugs"])
        .arg(&known)
        .arg("--out")
        .arg(&again)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(!output.status.success(), "{log}");
    assert!(log.contains("1 of the runs failed (broken-1)"), "{log}");
    let report = std::fs::read_to_string(again.join("report.md")).unwrap();
    assert!(report.contains("| broken | 0 | no run finished |"), "{report}");
    let bugs = std::fs::read_to_string(again.join("bugs.csv")).unwrap();
    assert!(
        bugs.lines()
            .any(|l| l.starts_with(&fixed[..10]) && l.contains(",yes,1,seeded,")),
        "{bugs}"
    );
    // Both builds came from the cache, and the run was not repeated: triage's files are still in it.
    assert!(!log.contains("building tcc at"), "{log}");
    assert!(log.contains("finished before: its results are reused"), "{log}");
    assert!(out.join("seeded-1/triage/by-correcting-commit.csv").is_file());

    // The density survey runs a pool of vetted csmith programs at both commits, from the cache.
    let pool = dir.path().join("pool");
    let output = ccfuzz()
        .args(["experiment", "density", "--history"])
        .arg(&repo)
        .arg("--config")
        .arg(&config)
        .arg("--build-cache")
        .arg(&cache)
        .args(["--programs", "3", "--pool"])
        .arg(&pool)
        .args([&broken, &fixed])
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    assert!(!log.contains("building tcc at"), "{log}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for hash in [&broken, &fixed] {
        let line = format!("{hash} {} ", &hash[..8]);
        assert!(
            stdout.lines().any(|l| l.starts_with(&line) && l.contains("/3")),
            "{log}"
        );
    }
    let vetted = std::fs::read_dir(&pool)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".ref.json"))
        .count();
    assert_eq!(vetted, 3);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn ground_truth_builds_a_pcc_history_and_names_its_correcting_commit() {
    const PCC_FIX: &str = "amd64: pop the stack after an unsigned long to long double conversion";
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("pcc");
    std::fs::create_dir(&repo).unwrap();
    let (_, fixed) = two_commit_history(
        &repo,
        &debian_source("pcc"),
        "pcc 20220331",
        (
            "arch/amd64/table.c",
            "\t\t\"\taddq $16,%rsp\\n\"\n\t\t\"1:\\n\", },",
            "\t\t\"1:\\n\"\n\t\t\"\taddq $16,%rsp\\n\", },",
            PCC_FIX,
        ),
    );
    let seeds = seeds_of(dir.path(), "pcc-ulong-to-long-double-stack");
    let config = write_config(dir.path(), &["gcc -O1"], 60.0);
    let out = dir.path().join("gt");
    let output = ground_truth(&repo, &config, &dir.path().join("builds"))
        .args(["--from", "HEAD~1", "--options=-O", "--setup"])
        .arg(format!("seeded: seeds={} variants-per-seed=0", seeds.display()))
        .arg("--setup")
        .arg(format!("hermes: seeds={} mutators=hermes", seeds.display()))
        .args(["--paired", "--cores", "0,1", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    assert!(log.contains("building pcc at"), "{log}");
    let configuration = std::fs::read_to_string(out.join("configuration.toml")).unwrap();
    assert!(configuration.contains("/bin/pcc -O\""), "{configuration}");
    let bugs = std::fs::read_to_string(out.join("bugs.csv")).unwrap();
    let row = bugs
        .lines()
        .find(|l| l.starts_with(&fixed[..10]))
        .unwrap_or_else(|| panic!("{bugs}"));
    // Both setups ran at once, one core each, and both found it in their seed.
    assert!(row.contains(PCC_FIX) && row.contains(",no,1,seeded;hermes,"), "{bugs}");
    let report = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(report.contains("pcc ") && report.contains("options `-O`"), "{report}");
    assert!(report.contains("paired, one core each of [0, 1]"), "{report}");
    for (setup, core) in [("seeded", 0), ("hermes", 1)] {
        let finished = std::fs::read_to_string(out.join(format!("{setup}-1.finished"))).unwrap();
        assert!(finished.contains(&format!("[\n    {core}\n  ]")), "{finished}");
    }
}
