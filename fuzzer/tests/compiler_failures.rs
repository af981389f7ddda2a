//! Compiler failures as findings: a crashing compiler is a crash finding and a compile that
//! outlives its timeout is a hang, never an error of the fuzzer.

mod common;

use common::*;

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_real_clang_crash_in_a_variant_is_a_crash_finding() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir_all(&seed_dir).unwrap();
    std::fs::copy(seeds("char").join("counter.c"), seed_dir.join("counter.c")).unwrap();
    let config = write_config(dir.path(), &["clang -O0", "gcc -O0"], 60.0);
    let id = store_seed(&out, &config, &seed_dir);

    // A variant that inserts clang's crash pragma before a statement that ran.
    let output = replay_insertion(&out, &config, id, "\n#pragma clang __debug crash\n");
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{log}");
    let finding = finding_json(&found[0]);
    assert_eq!(finding["kind"], "crash");
    assert_eq!(finding["configuration"], "clang -O0");
    assert!(
        finding["message"]
            .as_str()
            .unwrap()
            .contains("current parser token 'pragma'"),
        "{finding}"
    );
    assert_eq!(finding["edits"].as_array().unwrap().len(), 1);
    assert!(std::fs::read_to_string(found[0].join("variant.c"))
        .unwrap()
        .contains("#pragma clang __debug crash"));
    assert_reproduces(&found[0]);
}

/// A program that gcc compiles in a fifth of a second at -O0, in about 4 s at -O1 (the seed's
/// guard warnings, with a 60 s limit) and in about 7 s at -O3.
fn slow_to_optimize() -> String {
    let mut lines = vec![
        "#include <stdio.h>".to_string(),
        "static unsigned v[64];".into(),
        "int main(void) {".into(),
        "  unsigned x = 1, y = 2, i;".into(),
        "  for (i = 0; i < 3; i++) {".into(),
    ];
    for k in 0..1500 {
        lines.push(format!(
            "    x = x * {}u + y; y ^= x >> {}; v[{}] += x ^ y;",
            k % 7 + 3,
            k % 13 + 1,
            k % 64
        ));
    }
    lines.extend(
        [
            "  }",
            "  if (x == 12345u) {",
            "    v[0] = 1;",
            "  }",
            "  printf(\"%u %u\\n\", x, y + v[5]);",
            "  return 0;",
            "}",
        ]
        .map(String::from),
    );
    lines.join("\n") + "\n"
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_compile_that_outlives_its_timeout_is_a_hang() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let seed_dir = dir.path().join("seeds");
    std::fs::create_dir_all(&seed_dir).unwrap();
    std::fs::write(seed_dir.join("slow.c"), slow_to_optimize()).unwrap();
    let config = write_config(dir.path(), &["gcc -O3"], 2.0);
    let log = campaign(
        &out,
        &config,
        &[
            "--seeds",
            seed_dir.to_str().unwrap(),
            "--iterations",
            "2",
            "--scratch-on-disk",
        ],
    );
    let found = findings(&out);
    assert_eq!(found.len(), 1, "{log}");
    let finding = finding_json(&found[0]);
    assert_eq!(finding["kind"], "hang");
    assert_eq!(finding["configuration"], "gcc -O3");
    assert_reproduces(&found[0]);
    // The killed compiler left nothing behind.
    let leftovers: Vec<_> = walk(&out.join("tmp")).into_iter().filter(|p| p.is_file()).collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut all = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                all.extend(walk(&path));
            }
            all.push(path);
        }
    }
    all
}
