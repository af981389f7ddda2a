//! The compilers of the Debian unstable root as `make deps` installs them (`build/bin/gcc-trunk`,
//! `gcc-16`, `clang-23`, run through bubblewrap): they compile csmith programs right at
//! `-O3 -march=native`, the binaries they link run on this older host even when they need its
//! newer glibc's symbols, they read and write the host directories their arguments name, they
//! build sanitized binaries, and `ccfuzz config` names them with their exact versions.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A wrapper that `make unstable-compilers` (a part of `make deps`) writes.
fn unstable(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/bin").join(name);
    assert!(path.is_file(), "{} is missing: run `make deps`", path.display());
    path.canonicalize().unwrap()
}

/// Runs `binary` under a time limit (a csmith program may loop for long).
fn run(binary: &Path) -> Output {
    Command::new("timeout")
        .args(["-s", "KILL", "20"])
        .arg(binary)
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .output()
        .unwrap()
}

#[test]
fn a_csmith_program_at_o3_native_prints_what_gcc_12_at_o0_prints() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("prog.c");
    write_csmith_program(7411, &source);
    let csmith = ["-I/usr/include/csmith"];
    let reference = dir.path().join("reference");
    compile(Path::new("gcc-12"), &["-O0", csmith[0]], &source, &reference);
    let expected = run(&reference);
    assert!(expected.status.success(), "{}", text(&expected));
    assert!(String::from_utf8_lossy(&expected.stdout).starts_with("checksum = "));
    for name in ["gcc-trunk", "gcc-16", "clang-23"] {
        let binary = dir.path().join(name);
        compile(&unstable(name), &["-O3", "-march=native", csmith[0]], &source, &binary);
        let actual = run(&binary);
        assert!(actual.status.success(), "{name}: {}", text(&actual));
        assert_eq!(actual.stdout, expected.stdout, "{name} -O3 -march=native");
    }
}

/// Calls `strtol`, which C23 headers of glibc 2.38 and later redirect to `__isoc23_strtol`.
const STRTOL: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    printf("%ld\n", strtol(argc > 1 ? argv[1] : "0b101010", NULL, 0));
    return 0;
}
"#;

#[test]
fn binaries_needing_the_roots_newer_glibc_run_on_the_host() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("strtol.c");
    std::fs::write(&source, STRTOL).unwrap();
    for (name, flags) in [
        ("gcc-trunk", vec![]),
        ("gcc-16", vec![]),
        ("gcc-trunk", vec!["-std=c23"]),
    ] {
        let binary = dir.path().join(format!("strtol-{name}"));
        compile(&unstable(name), &flags, &source, &binary);
        let symbols = Command::new("readelf")
            .args(["--wide", "--dyn-syms"])
            .arg(&binary)
            .output()
            .unwrap();
        let symbols = String::from_utf8_lossy(&symbols.stdout);
        assert!(
            symbols.contains("__isoc23_strtol@GLIBC_2.38"),
            "{name} {flags:?} should need glibc 2.38:\n{symbols}"
        );
        let output = run(&binary);
        assert!(output.status.success(), "{name} {flags:?}: {}", text(&output));
        // C23 reads the 0b prefix; before it strtol stopped at the 'b'.
        assert_eq!(String::from_utf8_lossy(&output.stdout), "42\n", "{name} {flags:?}");
    }
}

#[test]
fn the_wrappers_read_and_write_the_directories_their_arguments_name() {
    // Outside /tmp (bound whole) and outside the working directory.
    let elsewhere = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let (include, sources, output) = (
        elsewhere.path().join("include"),
        elsewhere.path().join("src"),
        elsewhere.path().join("out"),
    );
    for dir in [&include, &sources, &output] {
        std::fs::create_dir(dir).unwrap();
    }
    std::fs::write(include.join("answer.h"), "#define ANSWER 42\n").unwrap();
    std::fs::write(
        sources.join("prog.c"),
        "#include <stdio.h>\n#include \"answer.h\"\nint main(void) { printf(\"%d\\n\", ANSWER); return 0; }\n",
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let relative_source = pathdiff(&sources.join("prog.c"), work.path());
    for name in ["gcc-trunk", "clang-23"] {
        let binary = output.join(name);
        let build = Command::new(unstable(name))
            .arg(format!("-I{}", include.display()))
            .arg(&relative_source)
            .arg("-o")
            .arg(&binary)
            .current_dir(work.path())
            .output()
            .unwrap();
        assert!(build.status.success(), "{name}: {}", text(&build));
        assert_eq!(String::from_utf8_lossy(&run(&binary).stdout), "42\n", "{name}");
    }
}

/// `target` written relative to `base` through `..` steps (both absolute).
fn pathdiff(target: &Path, base: &Path) -> PathBuf {
    let base = base.canonicalize().unwrap();
    let ups = base.components().count() - 1;
    let mut relative: PathBuf = std::iter::repeat_n("..", ups).collect();
    relative.push(target.strip_prefix("/").unwrap());
    relative
}

#[test]
fn the_wrappers_build_sanitized_binaries() {
    for name in ["clang-23", "clang-22"] {
        let program = unstable(name).display().to_string();
        assert!(
            ccfuzz::config::installed::builds_sanitized(&program),
            "{name} cannot build binaries with UBSan and ASan"
        );
    }
    // gcc folds `big + 1 < 0` before UBSan sees it: the overflow depends on argc here.
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("overflow.c");
    let program = "#include <stdio.h>\nint main(int argc, char **argv) { volatile int big = 2147483647; printf(\"%d\\n\", big + argc); return 0; }\n";
    std::fs::write(&source, program).unwrap();
    let flags = ["-O0", "-fsanitize=undefined,address", "-fno-sanitize-recover=all"];
    for name in ["gcc-trunk", "gcc-16"] {
        let binary = dir.path().join(name);
        compile(&unstable(name), &flags, &source, &binary);
        let output = run(&binary);
        assert!(!output.status.success(), "{name}: {}", text(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains("signed integer overflow"),
            "{name}: {}",
            text(&output)
        );
    }
}

#[test]
fn ccfuzz_config_names_gcc_trunk_and_clang_23_with_their_exact_versions() {
    let dir = tempfile::tempdir().unwrap();
    let output = ccfuzz().arg("config").current_dir(dir.path()).output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let printed = String::from_utf8_lossy(&output.stdout);
    let line_of = |wrapper: &str| -> String {
        let prefix = format!("#   {}: ", unstable(wrapper).display());
        printed
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .unwrap_or_else(|| panic!("no version line for {wrapper}:\n{printed}"))
            .to_string()
    };
    let trunk = line_of("gcc-trunk");
    assert!(
        trunk.starts_with("gcc (Debian ") && trunk.contains("(experimental) [trunk r"),
        "{trunk}"
    );
    assert!(line_of("clang-23").starts_with("Debian clang version 23."), "{printed}");
    let versions_file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/unstable-root/versions");
    let versions = std::fs::read_to_string(&versions_file).unwrap();
    for package in ["gcc-snapshot", "clang-23", "gcc-16"] {
        let recorded = versions
            .lines()
            .find(|line| line.split('\t').next() == Some(package))
            .unwrap_or_else(|| panic!("{package} not in the root's versions:\n{versions}"));
        assert!(
            printed.contains(&recorded.replace('\t', " ")),
            "{recorded} not in\n{printed}"
        );
    }
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_gcc_bug_report_has_the_version_matrix_of_every_installed_gcc() {
    // `-funsigned-char` changes what plain_char.c prints under every gcc: a "bug" that every
    // version shows, so not a regression.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let config = write_config(dir.path(), &["gcc -O0 -funsigned-char"], 60.0);
    let log = campaign(
        &out,
        &config,
        &["--seeds", seeds("char").to_str().unwrap(), "--iterations", "3"],
    );
    assert!(!findings(&out).is_empty(), "{log}");
    let triage = ccfuzz()
        .args(["triage", "--reducer", "none", "--config"])
        .arg(&config)
        .arg(&out)
        .output()
        .unwrap();
    assert!(triage.status.success(), "{}", text(&triage));
    let bugs: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("triage/bugs/bugs.json")).unwrap()).unwrap();
    let name = bugs[0]["name"].as_str().unwrap();
    let report = std::fs::read_to_string(out.join("triage/bugs").join(name).join("report.md")).unwrap();
    let matrix = report
        .split("## Version matrix\n\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .unwrap_or_else(|| panic!("no version matrix:\n{report}"));
    for line in [
        "- 12.2.0: fails (`gcc-12 -O0 -funsigned-char`)",
        "- 12.5.0: fails",
        "- 16.2.0: fails",
        " (trunk): fails (`",
        "Known to work: none",
        "Regression: no, every installed version fails.",
    ] {
        assert!(matrix.contains(line), "{line:?} not in\n{matrix}");
    }
    let releases = matrix.lines().filter(|l| l.starts_with("- ")).count();
    assert!(
        releases >= 7,
        "gcc 12.2, 12.5, 13, 14, 15, 16 and trunk expected:\n{matrix}"
    );
}

#[test]
#[ignore = "runs the unstable root's compilers: make test"]
fn a_seed_that_gcc_trunk_rejects_is_not_a_seed_of_a_campaign_testing_it() {
    // C23, gcc-trunk's default, has no K&R definitions and reads `int add();` as `add(void)`;
    // gcc-12's gnu17, the reference, takes the program.
    let dir = tempfile::tempdir().unwrap();
    let seed_dir = dir.path().join("seed");
    std::fs::create_dir(&seed_dir).unwrap();
    std::fs::write(
        seed_dir.join("knr_call.c"),
        "#include <stdio.h>\nint add();\nint main(void) { printf(\"%d\\n\", add(2, 3)); return 0; }\nint add(a, b) int a, b; { return a + b; }\n",
    )
    .unwrap();
    let vet = |tested: &str| {
        let config = write_config(dir.path(), &[tested, "tcc"], 60.0);
        let log = vet_seeds(&dir.path().join("store"), &seed_dir, &config);
        log.lines()
            .find(|l| l.contains("knr_call.c"))
            .unwrap_or_else(|| panic!("no line for the seed:\n{log}"))
            .to_string()
    };
    let trunk = format!("{} -O2", unstable("gcc-trunk").display());
    let line = vet(&trunk);
    assert!(
        line.contains(&format!("rejected: does not compile: {trunk}: ")),
        "{line}"
    );
    assert!(line.contains("error"), "{line}");
    let line = vet("gcc -O2");
    assert!(line.contains("accepted as "), "{line}");
}
