//! Today's compilers as `make deps` installs them: clang 22.1.8 and clang 23 of the Debian
//! unstable root (behind `build/bin/clang-22` and `clang-23`) and Debian's clang-19 compile and
//! run programs, the sandboxed clang leaves nothing behind and builds sanitized binaries, and
//! the default configuration tests GCC trunk and clang-23 (older versions only with
//! `--all-versions`).
mod common;

use ccfuzz::config::Config;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Prints values that a miscompiled or misconfigured build gets wrong: integer arithmetic in a
/// loop, a libm call (`-lm`), a struct copy and `long`'s size on x86-64 Linux.
const PROGRAM: &str = r#"#include <math.h>
#include <stdio.h>
#include <string.h>
struct pair { int a; long b; };
int main(int argc, char **argv) {
    unsigned hash = 2166136261u;
    for (int i = 0; i < 1000; i++) hash = (hash ^ (unsigned)i) * 16777619u;
    struct pair p = { argc, 40 }, q = p;
    q.b += 2;
    printf("%08x %.6f %d %ld %zu %zu\n", hash, sqrt(2.0 * argc), q.a, q.b, sizeof(long), strlen(argv[0]) > 0);
    return 0;
}
"#;
/// FNV-1a over 0..1000 (computed apart, in Python), √2, the copied struct, `sizeof(long)`.
const EXPECTED: &str = "a06ae7fd 1.414214 1 42 8 1\n";

/// Compiles `source` with `compiler` and `flags` into `dir`, runs it with `args`.
fn build_and_run(compiler: &Path, flags: &[&str], source: &Path, args: &[&str]) -> Output {
    let binary = source.with_extension("bin");
    compile(compiler, flags, source, &binary);
    Command::new(&binary)
        .args(args)
        .env("ASAN_OPTIONS", "detect_leaks=0")
        .output()
        .unwrap()
}

fn write_source(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn version_line(compiler: &Path) -> String {
    let output = Command::new(compiler).arg("--version").output().unwrap();
    assert!(output.status.success(), "{}", text(&output));
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn clang_22_and_clang_19_compile_and_run_a_program() {
    let dir = tempfile::tempdir().unwrap();
    let source = write_source(dir.path(), "prog.c", PROGRAM);
    let clang_19 = PathBuf::from("clang-19");
    let compilers = [(clang_22(), "clang version 22.1.8"), (clang_19, "clang version 19.")];
    for (compiler, version) in &compilers {
        assert!(version_line(compiler).contains(version), "{}", version_line(compiler));
        for level in ["-O0", "-O2"] {
            let run = build_and_run(compiler, &[level], &source, &[]);
            assert!(run.status.success(), "{}", text(&run));
            assert_eq!(
                String::from_utf8_lossy(&run.stdout),
                EXPECTED,
                "{} {level}",
                compiler.display()
            );
        }
    }
}

#[test]
fn clang_22_writes_nothing_outside_its_output_and_temporary_files() {
    // The sandbox binds the working directory, TMPDIR and /tmp writable: clang must leave
    // nothing there but its output, and nothing in HOME.
    let dir = tempfile::tempdir().unwrap();
    let (home, tmp, work) = (dir.path().join("home"), dir.path().join("tmp"), dir.path().join("work"));
    for d in [&home, &tmp, &work] {
        std::fs::create_dir(d).unwrap();
    }
    let source = write_source(&work, "prog.c", PROGRAM);
    let build = Command::new(clang_22())
        .args(["-O2", "-w"])
        .arg(&source)
        .args(["-o", "prog", "-lm"])
        .current_dir(&work)
        .env("HOME", &home)
        .env("TMPDIR", &tmp)
        .env_remove("XDG_CACHE_HOME")
        .env_remove("ZIG_GLOBAL_CACHE_DIR")
        .env_remove("ZIG_LOCAL_CACHE_DIR")
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", text(&build));
    let listing = |d: &Path| -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(listing(&home), Vec::<String>::new(), "clang 22 wrote into HOME");
    assert_eq!(listing(&tmp), Vec::<String>::new(), "clang 22 left temporary files");
    assert_eq!(listing(&work), ["prog", "prog.c"]);
}

/// `argv[1]` picks the undefined behaviour: none, a signed overflow, a float division by
/// zero, a heap overflow, a read of uninitialized memory.
const UB_PROGRAM: &str = r#"#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int which = atoi(argv[1]);
    volatile int big = 2147483647;
    volatile double zero = 0.0;
    int *a = malloc(4 * sizeof(int));
    a[0] = 1;
    if (which == 1) printf("%d\n", big + argc);
    if (which == 2) printf("%f\n", 1.0 / zero);
    if (which == 3) printf("%d\n", a[argc + 2]);
    if (which == 4) { int *u = malloc(sizeof(int)); if (*u) puts("set"); free(u); }
    free(a);
    puts("fine");
    return 0;
}
"#;

/// What the sanitized binary prints on stderr for each case of `UB_PROGRAM`.
fn sanitizer_verdicts(compiler: &Path, flags: &[&str], cases: &[(&str, &str)]) {
    let dir = tempfile::tempdir().unwrap();
    let source = write_source(dir.path(), "ub.c", UB_PROGRAM);
    for &(case, report) in cases {
        let run = build_and_run(compiler, flags, &source, &[case]);
        let stderr = String::from_utf8_lossy(&run.stderr);
        if report.is_empty() {
            assert!(run.status.success(), "case {case}: {}", text(&run));
            assert_eq!(String::from_utf8_lossy(&run.stdout), "fine\n");
        } else {
            assert!(!run.status.success(), "case {case} was not caught: {}", text(&run));
            assert!(stderr.contains(report), "case {case}: {stderr}");
        }
    }
}

#[test]
fn clang_22_clang_23_and_clang_19_build_sanitized_binaries() {
    let guard = [
        "-O0",
        "-g",
        "-fsanitize=undefined,float-divide-by-zero,address",
        "-fno-sanitize-recover=all",
    ];
    let guard_cases = [
        ("0", ""),
        ("1", "signed integer overflow"),
        ("2", "division by zero"),
        ("3", "AddressSanitizer: heap-buffer-overflow"),
    ];
    let memory = ["-O1", "-g", "-fsanitize=memory", "-fno-sanitize-recover=all"];
    let memory_cases = [("0", ""), ("4", "MemorySanitizer: use-of-uninitialized-value")];
    let clang_23 = clang_22().with_file_name("clang-23");
    for compiler in [clang_22(), clang_23, PathBuf::from("clang-19")] {
        sanitizer_verdicts(&compiler, &guard, &guard_cases);
        sanitizer_verdicts(&compiler, &memory, &memory_cases);
    }
}

/// The compiler programs (file names) of a configuration's lines, without repetitions.
fn programs<'a>(lines: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut programs: Vec<String> = Vec::new();
    for line in lines {
        let program = line.split_whitespace().next().unwrap();
        let name = Path::new(program).file_name().unwrap().to_string_lossy().into_owned();
        if !programs.contains(&name) {
            programs.push(name);
        }
    }
    programs
}

/// `ccfuzz config` run from a directory without a build folder: the unstable root's wrappers
/// are found next to the executable.
fn default_config(extra: &[&str]) -> Config {
    let dir = tempfile::tempdir().unwrap();
    let output = ccfuzz()
        .arg("config")
        .args(extra)
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    let path = dir.path().join("config.toml");
    std::fs::write(&path, &output.stdout).unwrap();
    Config::load(&path).unwrap()
}

#[test]
fn the_default_configuration_tests_gcc_trunk_and_clang_23_and_tcc() {
    let config = default_config(&[]);
    let tested: Vec<&str> = config.configurations.iter().map(|c| c.name()).collect();
    assert_eq!(
        programs(tested.iter().copied()),
        ["gcc-trunk", "clang-23", "tcc"],
        "{tested:?}"
    );
    let bin = clang_22().with_file_name("");
    for level in ["-O1", "-Os", "-O2", "-O3", "-O3 -march=native"] {
        for compiler in ["gcc-trunk", "clang-23"] {
            let line = format!("{} {level}", bin.join(compiler).display());
            assert!(tested.contains(&line.as_str()), "{line} not in {tested:?}");
        }
    }
    assert_eq!(config.reference.name(), "gcc -O0");
    let vetting: Vec<&str> = config.ub_check.iter().map(|c| c.name()).collect();
    let clang_22 = format!("{} -O0", clang_22().display());
    assert_eq!(
        vetting,
        [clang_22.as_str()],
        "the newest clang with a sanitizer runtime, not under test"
    );

    let all = default_config(&["--all-versions"]);
    let every: Vec<&str> = all.configurations.iter().map(|c| c.name()).collect();
    assert_eq!(
        programs(every.iter().copied()),
        [
            "gcc-11",
            "gcc-12",
            "gcc-13",
            "gcc-14",
            "gcc-15",
            "gcc-16",
            "gcc-trunk",
            "clang-13",
            "clang-14",
            "clang-19",
            "clang-21",
            "clang-22",
            "clang-23",
            "tcc",
            "pcc"
        ],
        "{every:?}"
    );
    assert_eq!(every.len(), 13 * 5 + 2);
    assert_eq!(all.ub_check, config.ub_check);
}
