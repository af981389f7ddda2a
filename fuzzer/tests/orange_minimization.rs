//! Orange's own minimization in `ccfuzz triage`, on a real divergence: plain `char` is signed
//! under the reference `gcc -O0` and unsigned under `gcc -O0 -funsigned-char`, so an Orange
//! program holding a negative `char` prints another checksum. The finding directory is made as
//! the campaign makes it (seed store with `orange.json`, `finding.json`, `repro.sh`); triage
//! must shrink the program to a few expressions that still show the mismatch and pass the UB
//! guard. The next program of its mutation chain, which prints another checksum, minimizes to
//! the same program and is absorbed as its duplicate there, before text reduction.

mod common;

use ccfuzz::config::{CompilerConfig, Config};
use ccfuzz::exec::compile::{compile_and_run, BinaryRuns};
use ccfuzz::exec::instrument::Additions;
use ccfuzz::judge::findings::{save_finding, FindingFiles};
use ccfuzz::judge::objective::{finding_for, FindingKind};
use ccfuzz::seeds::generator::store_orange_program;
use ccfuzz::seeds::SeedMaker;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::seed::SeedStore;
use ccfuzz_observers::{ConfigOutcome, Outcome};
use ccfuzz_orange::program::{Assignment, Expr, OrangeProgram, Ty, Var};
use ccfuzz_orange::{generate, GenOptions, Policies};
use ccfuzz_semantics::IntKind;
use common::*;
use libafl_bolts::rands::StdRand;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const TESTED: &str = "gcc -O0 -funsigned-char";

fn uses_plain_char(program: &OrangeProgram) -> bool {
    let mut found = program.vars.iter().any(|v| v.ty == Ty::Int(IntKind::Char));
    for a in &program.assignments {
        a.expr
            .visit(&mut |e| found |= matches!(e, Expr::Const(IntKind::Char, _)));
    }
    found
}

/// Stores `program` as a seed, with its structure, and saves its finding when it shows the
/// mismatch under the configuration `tested`; the finding directory.
fn orange_finding_of(
    out: &Path,
    maker: &mut SeedMaker,
    config: &Config,
    tested: &str,
    program: &OrangeProgram,
    label: &str,
) -> Option<std::path::PathBuf> {
    let store = SeedStore::open(out.join("seeds")).unwrap();
    let id = maker.make(&program.to_c(), label).unwrap().ok()?;
    store_orange_program(&store, &id, program).unwrap();
    let seed = store.load(&id).unwrap();
    let source = out.join("tmp/variant.c");
    std::fs::write(&source, seed.text.as_bytes()).unwrap();
    let (outcome, _) = compile_and_run(
        &CompilerConfig::new(tested),
        &source,
        &out.join("tmp/variant"),
        &Additions::default(),
        Duration::from_secs(60),
        Duration::from_secs(10),
        &mut BinaryRuns::for_binaries(1),
    )
    .unwrap();
    let ConfigOutcome::Ran { run } = &outcome else {
        panic!("{tested} fails on {label}: {outcome:?}")
    };
    if run.is_expected(seed.profile.expected_exit, &seed.expected_output) {
        return None;
    }
    let outcome = Outcome {
        config: tested.to_string(),
        outcome,
        compile_ms: 0,
    };
    let before = findings(out);
    let finding = finding_for(FindingKind::Mismatch, &outcome, &seed, &Variant::of_seed(id));
    let files = FindingFiles::of(seed.text.to_string(), &seed);
    assert!(save_finding(&out.join("findings"), &finding, &files, config).unwrap());
    findings(out).into_iter().find(|dir| !before.contains(dir))
}

/// The seed maker of a campaign's output directory, as `ccfuzz triage` reads it.
fn seed_maker(out: &Path, config: &Config) -> SeedMaker {
    ccfuzz::ops::format_version::claim(out, "campaign").unwrap();
    let store = SeedStore::open(out.join("seeds")).unwrap();
    SeedMaker::new(config.clone(), store, out.join("tmp/seeds")).unwrap()
}

/// Saves the finding of the first generated program (from fixed random seeds) that shows the
/// mismatch under `tested`; its directory and the program.
fn orange_finding(
    out: &Path,
    maker: &mut SeedMaker,
    config: &Config,
    tested: &str,
) -> (std::path::PathBuf, OrangeProgram) {
    let options = GenOptions {
        min_operators: 100,
        max_operators: 200,
        policies: Policies::ALL,
        float: false,
    };
    for n in 0..50 {
        let program = generate(options, &mut StdRand::with_seed(n));
        if !uses_plain_char(&program) || program.assignments.len() < 4 {
            continue;
        }
        if let Some(dir) = orange_finding_of(out, maker, config, tested, &program, &format!("orange test {n}")) {
            return (dir, program);
        }
    }
    panic!("no generated program shows the plain char mismatch");
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn triage_minimizes_an_orange_mismatch_to_a_few_expressions() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = Config::load(&write_config(dir.path(), &[TESTED], 60.0)).unwrap();
    let (finding, program) = orange_finding(&out, &mut seed_maker(&out, &config), &config, TESTED);
    assert!(out
        .join("seeds")
        .join(finding_json(&finding)["seed"].as_str().unwrap())
        .join("orange.json")
        .is_file());
    assert_reproduces(&finding);

    let log = triage_without_text_reduction(&out, None);
    assert!(log.contains("1 reduced"), "{log}");
    let name = finding.file_name().unwrap().to_str().unwrap();
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("triage/work").join(name).join("result.json")).unwrap())
            .unwrap();
    let orange = &result["orange"];
    let number = |key: &str| orange[key].as_u64().unwrap_or_else(|| panic!("no {key} in {result}"));
    println!(
        "{} -> {} lines, {} -> {} operators, {} -> {} expressions, {} tests, {:.1} s",
        number("lines_before"),
        number("lines_after"),
        number("operators_before"),
        number("operators_after"),
        number("expressions_before"),
        number("expressions_after"),
        number("tests"),
        orange["seconds"].as_f64().unwrap()
    );
    assert_eq!(number("operators_before") as usize, program.size());
    assert!(number("expressions_after") <= 2, "{result}");
    assert!(number("operators_after") <= 4, "{result}");
    assert!(number("lines_after") * 2 < number("lines_before"), "{result}");

    // The bug's test is the minimized program: the mismatch shows and the UB guard passes.
    let bugs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("triage/bugs/bugs.json")).unwrap()).unwrap();
    let bug_dir = out.join("triage/bugs").join(bugs[0]["name"].as_str().unwrap());
    let test = std::fs::read_to_string(bug_dir.join("test.c")).unwrap();
    println!("{test}");
    assert!(test.contains("char"), "{test}");
    let guard = Command::new("sh")
        .arg(bug_dir.join("interesting.sh"))
        .arg(bug_dir.join("test.c"))
        .status()
        .unwrap();
    assert!(guard.success(), "{test}");
    let repro = Command::new(bug_dir.join("repro.sh")).output().unwrap();
    assert!(repro.status.success(), "{}", text(&repro));
    let report = std::fs::read_to_string(bug_dir.join("report.md")).unwrap();
    assert!(report.contains("Orange minimization"), "{report}");
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn the_next_program_of_a_mutation_chain_is_absorbed_after_orange_minimization() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // A compiler that is neither gcc nor clang, as tcc and pcc are: triage has no pass or flag
    // to bisect, so a wrong output's fingerprint is the first line that differs.
    let compiler = dir.path().join("cc-with-unsigned-char");
    std::fs::write(&compiler, "#!/bin/sh\nexec gcc -funsigned-char \"$@\"\n").unwrap();
    std::fs::set_permissions(&compiler, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let tested = format!("{} -O0", compiler.display());
    let config = Config::load(&write_config(dir.path(), &[&tested], 60.0)).unwrap();
    let mut maker = seed_maker(&out, &config);
    let (first, program) = orange_finding(&out, &mut maker, &config, &tested);
    // The next programs of a chain: a variable and an assignment more, which the mismatch does
    // not need, change the checksum, so their cheap fingerprints differ from the first's. The
    // third prints what the second prints.
    let with_seven = |kind: IntKind| {
        let mut next = program.clone();
        next.vars.push(Var {
            name: format!("t{}", program.vars.len()),
            ty: Ty::Int(kind),
            init: 0,
            global: false,
            is_const: false,
            is_volatile: false,
            is_static: false,
        });
        next.assignments.push(Assignment {
            target: program.vars.len(),
            expr: Expr::Const(kind, 7),
            expected: 7,
        });
        next
    };
    let second = orange_finding_of(&out, &mut maker, &config, &tested, &with_seven(IntKind::Int), "next")
        .expect("the next program shows the mismatch");
    let third = orange_finding_of(&out, &mut maker, &config, &tested, &with_seven(IntKind::Long), "third")
        .expect("the third program shows the mismatch");

    let log = triage_without_text_reduction(&out, None);
    assert!(
        log.contains("3 raw findings: 1 reduced, 2 duplicates of a reduced one"),
        "{log}"
    );
    let result = |finding: &Path| -> serde_json::Value {
        let name = finding.file_name().unwrap();
        serde_json::from_slice(&std::fs::read(out.join("triage/work").join(name).join("result.json")).unwrap()).unwrap()
    };
    let (first, second, third) = (result(&first), result(&second), result(&third));
    assert_ne!(first["cheap_fingerprint"], second["cheap_fingerprint"], "{second}");
    assert_eq!(second["verdict"]["duplicate"]["of"], first["finding"], "{second}");
    assert_eq!(second["fingerprint"], first["fingerprint"], "{second}");
    let minimized = first["orange"]["program"].as_str().unwrap();
    assert!(minimized.contains("char"), "{first}");
    assert_eq!(second["orange"]["program"].as_str().unwrap(), minimized);
    // The third is absorbed by the second's cheap fingerprint, without minimization, as a
    // duplicate of the reduced first.
    assert_eq!(third["cheap_fingerprint"], second["cheap_fingerprint"], "{third}");
    assert_eq!(third["verdict"]["duplicate"]["of"], first["finding"], "{third}");
    assert!(third["orange"].is_null(), "{third}");
}
