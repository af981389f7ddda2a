//! The pipeline on real compilers: seeds are vetted, and mismatches, crashes and hangs are
//! detected, saved and reproducible.

mod common;

use ccfuzz_mutators::seed::SeedStore;
use common::*;
use std::path::Path;

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn implementation_defined_char_signedness_is_an_output_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char", "gcc -O1"], 60.0);
    let log = campaign(
        &out,
        &config,
        &["--seeds", seeds("char").to_str().unwrap(), "--iterations", "6"],
    );
    assert!(log.contains("seeds: 2 accepted, 0 rejected"), "{log}");
    let found = findings(&out);
    // Every variant of plain_char.c shows the same symptom: one finding, not one per variant.
    assert_eq!(found.len(), 1, "{found:?}\n{log}");
    let finding = finding_json(&found[0]);
    assert_eq!(finding["kind"], "mismatch");
    assert_eq!(finding["configuration"], "gcc -O0 -funsigned-char");
    assert_eq!(finding["compiler"], "gcc");
    let version = finding["compiler_version"].as_str().unwrap();
    assert!(version.starts_with("gcc (Debian 12."), "{finding}");
    let repro = std::fs::read_to_string(found[0].join("repro.sh")).unwrap();
    assert!(repro.contains(&format!("# Found with {version}.")), "{repro}");
    assert!(finding["expected"].as_str().unwrap().contains("\"10 0\""), "{finding}");
    assert!(finding["actual"].as_str().unwrap().contains("\"20 0\""), "{finding}");
    for file in ["variant.c", "seed.c", "expected.out", "repro.sh"] {
        assert!(found[0].join(file).is_file(), "{file} missing");
    }
    assert_reproduces(&found[0]);
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn bad_seeds_are_rejected_with_their_reason() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["gcc -O0"], 60.0);
    let log = vet_seeds(&dir.path().join("store"), &seeds("bad"), &config);
    let line = |name: &str| {
        log.lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("no line for {name}:\n{log}"))
            .to_string()
    };
    assert!(
        line("malformed.c").contains("rejected: does not compile: gcc -O0"),
        "{log}"
    );
    assert!(line("auto_type.c").contains("rejected: does not parse"), "{log}");
    assert!(line("endless.c").contains("rejected: does not terminate"), "{log}");
    assert!(
        line("unsequenced.c").contains("rejected: prints something else under clang -O0"),
        "{log}"
    );
    // Each undefined behaviour that both -O0 builds hide is rejected by a sanitizer, on one line.
    for (file, reason) in [
        ("overflow_at_o2.c", "has undefined behaviour (UBSan+ASan): "),
        ("out_of_bounds.c", "has undefined behaviour (UBSan+ASan): "),
        ("shift_width.c", "has undefined behaviour (UBSan+ASan): "),
        ("uninitialized.c", "reads uninitialized memory (MSan): "),
    ] {
        assert!(line(file).contains(&format!("rejected: {reason}")), "{file}: {log}");
    }
    assert!(line("overflow_at_o2.c").contains("signed integer overflow"), "{log}");
    assert!(line("shift_width.c").contains("shift exponent 32"), "{log}");
    // Clean under the sanitizers, but the triage guard would reject every finding of it.
    assert!(
        line("sequence_point_warning.c").contains(
            "rejected: the triage guard would reject every finding of it: gcc: seed.c:8:10: error: operation on"
        ),
        "{log}"
    );
    for file in ["own_llabs.c", "declares_llabs.c"] {
        assert!(
            line(file).contains("rejected: defines llabs, a name reserved to the C library"),
            "{file}: {log}"
        );
    }
    assert!(line("good.c").contains("accepted as"), "{log}");
    assert!(log.contains("seeds: 1 accepted, 11 rejected"), "{log}");
    assert_eq!(
        SeedStore::open(dir.path().join("store")).unwrap().ids().unwrap().len(),
        1
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn two_cores_share_their_seeds_over_llmp() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O1"], 60.0);
    let output = fuzz(&out, &config)
        .arg("--seeds")
        .arg(seeds("char"))
        .args([
            "--cores",
            "0-1",
            "--iterations",
            "6",
            "--broker-port",
            &free_port().to_string(),
        ])
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let mut reports = Vec::new();
    for entry in std::fs::read_dir(out.join("clients")).unwrap() {
        reports
            .push(serde_json::from_slice::<serde_json::Value>(&std::fs::read(entry.unwrap().path()).unwrap()).unwrap());
    }
    assert_eq!(reports.len(), 2, "{log}");
    // Each client executed its share of the two seeds and took the other one from its peer
    // without executing it; its own accepted chain states, which brought nothing new (no map is
    // observed), were not even sent.
    for report in &reports {
        assert!(report["corpus"].as_u64().unwrap() >= 2, "{reports:?}");
        assert_eq!(report["imported"], 1, "{reports:?}");
        // (A chain that moves back to a state it held adds nothing to send.)
        assert!(
            report["unshared_states"].as_u64() <= report["mcmc"]["accepted"].as_u64(),
            "{reports:?}"
        );
    }
    assert!(
        reports.iter().any(|r| r["unshared_states"].as_u64().unwrap() > 0),
        "{reports:?}"
    );
}

/// A campaign on generated Orange seeds of at most `max_operators` operators, a new seed after
/// `variants_per_seed` variants, stopped after `iterations` executions.
fn orange_campaign(
    out: &Path,
    config: &Path,
    max_operators: usize,
    extra: &[&str],
    variants_per_seed: u64,
    iterations: u64,
) -> String {
    let (max_operators, variants_per_seed, iterations) = (
        max_operators.to_string(),
        variants_per_seed.to_string(),
        iterations.to_string(),
    );
    let mut args = vec![
        "--generator",
        "orange",
        "--orange-max-operators",
        &max_operators,
        "--variants-per-seed",
        &variants_per_seed,
        "--iterations",
        &iterations,
        "--seconds",
        "600",
    ];
    args.extend_from_slice(extra);
    campaign(out, config, &args)
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn orange_seeds_that_leave_the_mutators_nothing_to_change_give_way_to_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    // One-operator programs: no statement Athena could delete, rarely a point for Hermes.
    let log = orange_campaign(
        &out,
        &config,
        1,
        &["--orange-policies", "none", "--mutators", "athena"],
        5,
        8,
    );
    let report = client_report(&out);
    // A stalled client would sit on its first seed until the deadline.
    assert!(report.executions >= 8, "{report:?}\n{log}");
    let store = SeedStore::open(out.join("seeds")).unwrap();
    let orange_seeds = store
        .ids()
        .unwrap()
        .iter()
        .filter(|id| store.orange_program(id).unwrap().is_some())
        .count();
    // Two one-operator programs may be the same text, hence the same seed.
    assert!(orange_seeds >= 4, "{orange_seeds} Orange seeds\n{log}");
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn no_variants_per_seed_is_plain_differential_testing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    // What a bug-rate study runs as plain Csmith (or plain Orange): seeds only, no mutation.
    let log = orange_campaign(&out, &config, 20, &[], 0, 6);
    let report = client_report(&out);
    assert!(report.executions >= 6, "{report:?}\n{log}");
    assert_eq!(report.mcmc.proposals, 0, "{report:?}");
    let store = SeedStore::open(out.join("seeds")).unwrap();
    let ids = store.ids().unwrap();
    let seeds = ids.len();
    assert!(seeds >= 4, "{seeds} seeds\n{log}");
    // Nothing reads a valuation profile here, so none is made.
    for id in &ids {
        assert!(
            store.valuation(id).unwrap().is_none(),
            "seed {id} has a valuation profile"
        );
    }
    // Seed making is most of such a campaign: the report says how much, and the vetting's part.
    // Every seed executed was accepted, and the report counts it (the store may forget some;
    // a seed made as the campaign stops may go unexecuted).
    let making = &report.seed_making;
    assert!(making.candidates >= making.accepted, "{making:?}");
    assert!(making.accepted as usize >= seeds, "{making:?}");
    assert!(u64::from(making.accepted) >= report.executions, "{report:?}");
    assert!(
        0.0 < making.sanitizer_seconds && making.sanitizer_seconds < making.seconds,
        "{making:?}"
    );
    assert!(making.seconds <= report.wall_seconds, "{report:?}");
    // And the CPU it took, the client's and its children's, part of the client's totals.
    assert!(0.0 < making.own_cpu && making.own_cpu <= report.own_cpu, "{report:?}");
    assert!(
        0.0 < making.children_cpu && making.children_cpu <= report.children_cpu,
        "{report:?}"
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn an_output_directory_relative_to_the_working_directory_works() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["tcc"], 60.0);
    let output = ccfuzz()
        .current_dir(dir.path())
        .args(["fuzz", "--out", "out", "--cores", "0", "--iterations", "4"])
        .args(["--broker-port", &free_port().to_string(), "--seeds"])
        .arg(seeds("dead"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // Compilers run in the scratch directory: a relative path to the variant would not be found.
    let report = client_report(&dir.path().join("out"));
    assert!(report.executions >= 4, "{report:?}\n{log}");
    assert_eq!(report.invalid.total, 0, "{log}");
}

/// The csmith programs a campaign drew, in order: `csmith ... -s N` of each seed made or
/// rejected.
fn csmith_draws(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| line.contains("made from `csmith") || line.contains("seed `csmith"))
        .filter_map(|line| Some(line.split('`').nth(1)?.to_string()))
        .collect()
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_random_seed_makes_a_fresh_campaign_draw_the_same_csmith_seeds() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["tcc"], 60.0);
    let draws = |name: &str, random_seed: &str| {
        let mut extra = vec!["--variants-per-seed", "1", "--max-seed-share", "1", "--iterations", "3"];
        if !random_seed.is_empty() {
            extra.extend(["--random-seed", random_seed]);
        }
        let log = campaign(&dir.path().join(name), &config, &extra);
        let draws = csmith_draws(&log);
        assert!(draws.len() >= 2, "{draws:?}\n{log}");
        draws
    };
    let first = draws("first", "42");
    let again = draws("again", "42");
    // Timing still decides how far each run gets, not what it draws.
    let common = first.len().min(again.len());
    assert_eq!(first[..common], again[..common]);
    let unseeded = draws("unseeded", "");
    assert_ne!(first[0], unseeded[0], "{first:?} {unseeded:?}");
}

/// Eight Orion proposals on the one seed stored in `out` (`env` set for the campaign), none of
/// which may be a finding or a chain state; returns the client report and the log.
fn orion_on_stored_seed(out: &Path, config: &Path, env: &[(&str, &str)]) -> (ccfuzz::campaign::ClientReport, String) {
    let no_more_seeds = out.with_file_name("none");
    std::fs::create_dir_all(&no_more_seeds).unwrap();
    let output = fuzz_on_one_core(out, config)
        .envs(env.iter().copied())
        .args(["--seeds", no_more_seeds.to_str().unwrap()])
        .args(["--mutators", "orion", "--iterations", "8"])
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    // Without the validity gate, each such variant is one finding per configuration.
    assert!(findings(out).is_empty(), "{:?}\n{log}", findings(out));
    let report = client_report(out);
    assert!(report.executions >= 8, "{log}");
    assert_eq!(report.mcmc.accepted, 0, "{log}");
    assert_eq!(report.corpus, 1, "only the seed is in the corpus: {log}");
    assert!(log.contains("invalid orion variant of seed"), "{log}");
    (report, log)
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn variants_whose_meaning_changed_are_invalid_not_findings() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0", "gcc -O2", "clang -O2"], 60.0);
    store_seed(&out, &config, &seeds("env"));
    // Every configuration prints 2 where the seed printed 1, the seed's own run included.
    let (report, log) = orion_on_stored_seed(&out, &config, &[("CCFUZZ_TEST_LIVE", "1")]);
    assert_eq!(report.invalid.total, report.executions, "{log}");
    assert!(
        report.invalid.by_family.get("orion").is_some_and(|n| *n >= 7),
        "{:?}",
        report.invalid
    );
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn wrong_edits_make_invalid_variants_never_findings_nor_chain_states() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0", "gcc -O2", "clang -O2"], 60.0);
    store_seed_marked_never_run(&out, &config);
    let (report, log) = orion_on_stored_seed(&out, &config, &[]);
    // Every execution but the seed's own is a wrong variant.
    assert_eq!(report.invalid.total, report.executions - 1, "{report:?}\n{log}");
    assert_eq!(
        report.invalid.by_family.get("orion"),
        Some(&report.invalid.total),
        "{:?}",
        report.invalid
    );
}

/// Stores the `wrong` seed with a profile that says nothing ran: Orion deletes live statements,
/// each deletion a wrong edit.
fn store_seed_marked_never_run(out: &Path, config: &Path) {
    let id = store_seed(out, config, &seeds("wrong"));
    let profile_path = out.join("seeds").join(&id.0).join("profile.json");
    let mut profile: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&profile_path).unwrap()).unwrap();
    for count in profile["line_counts"].as_object_mut().unwrap().values_mut() {
        *count = 0.into();
    }
    std::fs::write(&profile_path, profile.to_string()).unwrap();
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn the_gate_on_disagreement_asks_the_reference_only_when_a_tested_compiler_disagrees() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &["gcc -O2", "clang -O2"], 60.0);
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}reference_gate = \"on-disagreement\"\n")).unwrap();

    // Wrong edits: the tested compilers disagree with the seed, the reference finds them invalid.
    let out = dir.path().join("wrong");
    store_seed_marked_never_run(&out, &config);
    let (report, log) = orion_on_stored_seed(&out, &config, &[]);
    assert_eq!(report.invalid.total, report.executions - 1, "{report:?}\n{log}");
    assert_eq!(report.reference_runs, report.invalid.total, "{report:?}\n{log}");

    // Deletions of code that never ran: every tested compiler agrees, the reference never runs.
    let out = dir.path().join("dead");
    let log = campaign(
        &out,
        &config,
        &[
            "--seeds",
            seeds("dead").to_str().unwrap(),
            "--mutators",
            "orion",
            "--iterations",
            "8",
        ],
    );
    let report = client_report(&out);
    assert!(report.executions >= 8, "{log}");
    assert_eq!(
        (report.invalid.total, report.reference_runs),
        (0, 0),
        "{report:?}\n{log}"
    );
    assert!(findings(&out).is_empty(), "{log}");
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_reference_that_gets_an_orange_program_wrong_is_a_finding() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    // A stand-in for a reference compiler bug: its builds print a wrong checksum.
    let wrong = dir.path().join("wrong_printf.h");
    std::fs::write(
        &wrong,
        "#include <stdio.h>\n#define printf(...) (puts(\"checksum 0\"), 0)\n",
    )
    .unwrap();
    let reference = format!("gcc -O0 -include {}", wrong.display());
    let config = dir.path().join("configuration.toml");
    std::fs::write(
        &config,
        format!("reference = {reference:?}\nub_check = [\"clang -O0\"]\nconfigurations = [\"gcc -O1\"]\ncompile_timeout = 60.0\nseed_timeout = 5.0\nrun_timeout = 10.0\ncsmith_include = \"/usr/include/csmith\"\ncsmith_args = [\"--no-packed-struct\"]\n"),
    )
    .unwrap();
    let log = campaign(
        &out,
        &config,
        &[
            "--generator",
            "orange",
            "--orange-max-operators",
            "20",
            "--variants-per-seed",
            "2",
            "--iterations",
            "3",
        ],
    );
    let found = findings(&out);
    assert!(!found.is_empty(), "{log}");
    for finding in &found {
        let finding = finding_json(finding);
        // Judged by Orange's own expected values: only the reference is wrong.
        assert_eq!(finding["kind"], "mismatch", "{finding}");
        assert_eq!(finding["configuration"], reference.as_str(), "{finding}");
    }
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_mix_takes_seeds_from_orange_and_from_a_directory_of_pre_c99_tests() {
    let dir = tempfile::tempdir().unwrap();
    let tests = dir.path().join("tests");
    std::fs::create_dir(&tests).unwrap();
    // Torture-test style: implicit int, abort and exit undeclared, g called before it is
    // declared; clang-19 rejects it until it is repaired.
    std::fs::write(
        tests.join("old.c"),
        "f (x, y)\n     short x; int y;\n{\n  return x + y;\n}\n\nmain ()\n{\n  if (f (1, 2) != 3 || g (4) != 4)\n    abort ();\n  exit (0);\n}\n\ng (int x) { return x; }\n",
    )
    .unwrap();
    std::fs::write(tests.join("old.expect"), "").unwrap();
    // Its own header beside it: the seed is preprocessed from a private copy.
    std::fs::write(tests.join("square.h"), "#define SQUARE(x) ((x) * (x))\n").unwrap();
    std::fs::write(
        tests.join("prints.c"),
        "#include <stdio.h>\n#include \"square.h\"\nint main(void) {\n  int i, s = 0;\n  for (i = 0; i < 10; i++) s += SQUARE(i);\n  printf(\"%d\\n\", s);\n  return 0;\n}\n",
    )
    .unwrap();
    std::fs::write(tests.join("prints.expect"), "285\n").unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["tcc"], 60.0);
    let tests_weight = format!("{}=100", tests.display());
    // No variants: a new seed each round. The directory's two files come first (weight 100
    // against 1), then only Orange is left.
    let log = orange_campaign(&out, &config, 20, &["--mix", "orange=1", "--mix", &tests_weight], 0, 6);
    assert!(log.contains("repaired: implicit int"), "{log}");
    let store = SeedStore::open(out.join("seeds")).unwrap();
    let ids = store.ids().unwrap();
    let origins: Vec<String> = ids.iter().map(|id| store.load(id).unwrap().profile.origin).collect();
    for file in ["old.c", "prints.c"] {
        assert!(
            origins.iter().any(|o| o.ends_with(file)),
            "{file} not among {origins:?}\n{log}"
        );
    }
    let orange_seeds = ids
        .iter()
        .filter(|id| store.orange_program(id).unwrap().is_some())
        .count();
    assert!(orange_seeds >= 2, "{origins:?}\n{log}");
}
