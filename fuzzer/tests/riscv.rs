//! RISC-V as `make riscv-compilers` installs it (`make test` does, and runs these tests): `build/bin/riscv64-gcc-16`
//! compiles for riscv64 with gcc-16's cross compiler and leaves a launcher that runs the program
//! under qemu-user, at the vector length its `-march` names. Its binaries print what the host's
//! reference prints, vector code included, and a campaign tells its configurations' binaries
//! apart (the launchers of two of them are one script but for the program's checksum).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;

fn riscv_gcc() -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../build/bin/riscv64-gcc-16");
    assert!(
        path.is_file(),
        "{} is missing: run `make riscv-compilers`",
        path.display()
    );
    path.canonicalize().unwrap()
}

/// A loop gcc vectorizes at -O3 for rv64gcv, and a checksum of its results.
const VECTOR_LOOP: &str = r#"#include <stdio.h>
int a[1000], b[1000];
int main(void) {
    long sum = 0;
    for (int i = 0; i < 1000; i++) b[i] = i * 7 - 300;
    for (int i = 0; i < 1000; i++) a[i] = b[i] * 3 + (b[i] >> 2);
    for (int i = 0; i < 1000; i++) sum += a[i] ^ i;
    printf("%ld\n", sum);
    return 0;
}
"#;

fn stdout_of(binary: &Path) -> String {
    let output = Command::new("timeout")
        .args(["-s", "KILL", "60"])
        .arg(binary)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}: {}", binary.display(), text(&output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
#[ignore = "needs `make riscv-compilers`: make test"]
fn vector_code_and_a_csmith_program_print_under_qemu_what_gcc_12_at_o0_prints() {
    let dir = tempfile::tempdir().unwrap();
    let vector_loop = dir.path().join("loop.c");
    std::fs::write(&vector_loop, VECTOR_LOOP).unwrap();
    let csmith = dir.path().join("csmith.c");
    write_csmith_program(7411, &csmith);

    let assembly = dir.path().join("loop.s");
    let output = Command::new(riscv_gcc())
        .args(["-O3", "-march=rv64gcv", "-S"])
        .arg(&vector_loop)
        .arg("-o")
        .arg(&assembly)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output));
    assert!(std::fs::read_to_string(&assembly).unwrap().contains("vsetvli"));

    // The vector length of `_zvl256b` with -mrvv-vector-bits=zvl is exact: run at qemu's
    // default 128 bits, that build prints another sum.
    let marches = [
        vec!["-O3", "-march=rv64gcv"],
        vec!["-O3", "-march=rv64gcv_zvl256b", "-mrvv-vector-bits=zvl"],
        vec!["-O2", "-march=rv64gc"],
    ];
    for source in [&vector_loop, &csmith] {
        let reference = dir.path().join("reference");
        compile(
            Path::new("gcc-12"),
            &["-O0", "-I/usr/include/csmith"],
            source,
            &reference,
        );
        let expected = stdout_of(&reference);
        for flags in &marches {
            let binary = dir.path().join("riscv");
            let mut all = flags.clone();
            all.extend(["-fsigned-char", "-I/usr/include/csmith"]);
            compile(&riscv_gcc(), &all, source, &binary);
            let program = std::fs::read(binary.with_extension("riscv64")).unwrap();
            // ELF, e_machine EM_RISCV (243).
            assert_eq!((&program[..4], program[18]), (&b"\x7fELF"[..], 243));
            assert_eq!(stdout_of(&binary), expected, "{} {flags:?}", source.display());
        }
    }
}

#[test]
#[ignore = "runs compiler campaigns: make test"]
fn a_campaign_finds_the_riscv_configuration_whose_char_is_unsigned() {
    // riscv64's plain `char` is unsigned, the reference's (x86-64) signed: only the
    // configuration without -fsigned-char prints another value on the seed that shows it.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let signed = format!("{} -O2 -march=rv64gcv -fsigned-char", riscv_gcc().display());
    let unsigned = format!("{} -O2 -march=rv64gcv", riscv_gcc().display());
    let config = write_config(dir.path(), &[&signed, &unsigned], 60.0);
    let output = fuzz(&out, &config)
        .args(["--cores", "0", "--iterations", "6", "--seeds"])
        .arg(seeds("char"))
        .output()
        .unwrap();
    let log = text(&output);
    assert!(output.status.success(), "{log}");
    let found = findings(&out);
    assert!(!found.is_empty(), "{log}");
    for finding in &found {
        assert_eq!(finding_json(finding)["configuration"], unsigned.as_str(), "{log}");
    }
    assert_reproduces(&found[0]);
}
