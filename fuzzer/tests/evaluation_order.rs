//! Valuations hold under every compiler's evaluation order: a seed whose values at a point
//! depend on the unspecified order of operands is profiled under every tested compiler family,
//! and Hermes's snippets there hold for pcc as for gcc.

mod common;

use ccfuzz_mutators::seed::SeedStore;
use common::*;
use std::path::Path;
use std::process::Command;

/// gcc is the reference, tcc and pcc are tested; every statement is a profiling point.
fn order_config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("configuration.toml");
    std::fs::write(
        &path,
        "reference = \"gcc -O0\"\nub_check = [\"clang -O0\"]\nconfigurations = [\"tcc\", \"pcc\"]\ncompile_timeout = 60.0\nseed_timeout = 5.0\nrun_timeout = 10.0\ncsmith_include = \"/usr/include/csmith\"\ncsmith_args = [\"--no-packed-struct\"]\np_profile = 1.0\n",
    )
    .unwrap();
    path
}

#[test]
#[ignore = "compiles many programs: make test"]
fn values_profiled_under_pcc_join_those_of_gcc() {
    let dir = tempfile::tempdir().unwrap();
    let config = order_config(dir.path());
    let log = vet_seeds(&dir.path().join("store"), &seeds("order"), &config);
    assert!(log.contains("seeds: 1 accepted, 0 rejected"), "{log}");
    let store = SeedStore::open(dir.path().join("store")).unwrap();
    let id = store.ids().unwrap().remove(0);
    let valuation = store.valuation(&id).unwrap().expect("a valuation profile");
    // Inside func_18, g_721 is 9 under gcc, clang and tcc, and 0 under pcc.
    let seen: Vec<_> = valuation
        .points
        .values()
        .flat_map(|point| point.readables.iter().zip(&point.values))
        .filter(|(readable, _)| &*readable.expr == "g_721")
        .map(|(_, values)| values.iter().copied().collect::<Vec<i128>>())
        .collect();
    assert!(seen.contains(&vec![0, 9]), "g_721's value sets: {seen:?}");
}

#[test]
#[ignore = "compiles many programs: make test"]
fn hermes_variants_of_an_order_dependent_seed_print_the_seed_output_under_pcc_and_tcc() {
    let dir = tempfile::tempdir().unwrap();
    let config = order_config(dir.path());
    let variants = dir.path().join("variants");
    let output = ccfuzz()
        .args(["mutate", "--mutator", "hermes", "-n", "60", "--seed"])
        .arg(seeds("order").join("unspecified_order.c"))
        .arg("--out")
        .arg(&variants)
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let mut checked = 0;
    for entry in std::fs::read_dir(&variants).unwrap() {
        let path = entry.unwrap().path();
        if !path.file_name().unwrap().to_string_lossy().starts_with("variant-") {
            continue;
        }
        for compiler in ["pcc", "tcc"] {
            let binary = dir.path().join("prog");
            let built = Command::new(compiler)
                .arg("-w")
                .arg(&path)
                .arg("-o")
                .arg(&binary)
                .output()
                .unwrap();
            assert!(built.status.success(), "{compiler} rejects {}", path.display());
            // A snippet built on values pcc never has may loop or trap: the run is bounded.
            let run = Command::new("timeout")
                .args(["-s", "KILL", "10"])
                .arg(&binary)
                .output()
                .unwrap();
            assert_eq!(
                String::from_utf8_lossy(&run.stdout),
                "1 0\n",
                "{compiler} on {}: {}",
                path.display(),
                std::fs::read_to_string(&path).unwrap()
            );
            checked += 1;
        }
    }
    assert_eq!(checked, 120);
}

/// A seed that one tested compiler cannot build (tcc lacks most of GCC's `__builtin_*`) is
/// profiled under the others: that compiler never runs a variant, so its order does not count.
#[test]
#[ignore = "compiles many programs: make test"]
fn a_seed_a_tested_compiler_rejects_is_profiled_under_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let config = order_config(dir.path());
    let seeds = dir.path().join("seeds");
    std::fs::create_dir(&seeds).unwrap();
    std::fs::write(
        seeds.join("builtin.c"),
        "#include <stdio.h>\nint main(void) {\n  int x = 3;\n  x = x * 2;\n  printf(\"%d\\n\", x + __builtin_classify_type(x));\n  return 0;\n}\n",
    )
    .unwrap();
    let log = vet_seeds(&dir.path().join("store"), &seeds, &config);
    assert!(log.contains("seeds: 1 accepted, 0 rejected"), "{log}");
    let store = SeedStore::open(dir.path().join("store")).unwrap();
    let id = store.ids().unwrap().remove(0);
    let valuation = store.valuation(&id).unwrap();
    assert!(valuation.is_some_and(|v| !v.points.is_empty()), "{log}");
}
