//! The interestingness script run on small programs: what the UB guard accepts and rejects,
//! symptoms that must show, kept outputs, crash signals.

use super::*;

fn guard() -> Guard {
    test_guard()
}

const SHOW: &str = "#ifdef SHOW\n  printf(\"shown\\n\");\n#endif\n";

/// A program with `globals`, then `main` running `body` and printing `printf_args`; built
/// with `-DSHOW` it prints an extra line first.
fn program_showing(globals: &str, body: &str, printf_args: &str) -> String {
    format!("#include <stdio.h>\n{globals}int main(void) {{\n{body}{SHOW}  printf({printf_args});\n  return 0;\n}}\n")
}

/// Whether the guard accepts [`program_showing`]`(globals, body, printf_args)`. `-DSHOW`
/// makes the tested binary print an extra line, so every such program shows the symptom:
/// what is left to decide is the guard.
fn guard_accepts(globals: &str, body: &str, printf_args: &str) -> bool {
    guard_accepts_under(guard(), globals, body, printf_args)
}

/// [`guard_accepts`] under another guard.
fn guard_accepts_under(guard: Guard, globals: &str, body: &str, printf_args: &str) -> bool {
    script_accepts(guard, &program_showing(globals, body, printf_args))
}

/// Whether the script of a wrong-output check of `gcc -O0 -DSHOW` under `guard` accepts
/// `program`.
fn script_accepts(guard: Guard, program: &str) -> bool {
    let dir = tempfile::tempdir().unwrap();
    let check = Check {
        configuration: "gcc -O0 -DSHOW".into(),
        symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
        guard,
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    fs::write(&file, program).unwrap();
    run_script(&script, &file, &RunOptions::default()).unwrap()
}

#[test]
fn the_guard_accepts_a_clean_program() {
    assert!(guard_accepts("int g = 5;\n", "  int x = g * 3;\n", "\"%d\\n\", x"));
}

#[test]
fn the_guard_rejects_signed_overflow() {
    // No compiler warns: the overflow happens at run time, UBSan sees it.
    assert!(!guard_accepts(
        "int g = 2147483600;\n",
        "  int x = g + 100;\n",
        "\"%d\\n\", x > 0"
    ));
}

#[test]
fn the_guard_rejects_a_float_to_integer_conversion_out_of_range() {
    // Both compilers print the same (x86 gives INT_MIN): only clang's UBSan sees it.
    assert!(!guard_accepts(
        "double d = 1e20;\n",
        "  int x = (int)d;\n",
        "\"%d\\n\", x"
    ));
}

#[test]
fn the_guard_rejects_an_uninitialized_read() {
    assert!(!guard_accepts(
        "int g;\n",
        "  int x;\n  if (g) x = 1;\n",
        "\"%d\\n\", x"
    ));
}

#[test]
fn the_guard_rejects_an_out_of_bounds_read() {
    assert!(!guard_accepts("int a[4];\nint i = 4;\n", "", "\"%d\\n\", a[i]"));
}

#[test]
fn the_guard_rejects_gnu_extensions() {
    assert!(!guard_accepts(
        "struct empty { int : 0; };\nstruct empty *p;\n",
        "",
        "\"%d\\n\", (int)sizeof(struct empty)"
    ));
}

#[test]
fn the_guard_rejects_a_call_with_more_arguments_than_the_definition_takes() {
    // Declared without a prototype, defined after the call: no warning counts the arguments.
    // g's `()` declaration before its definition with a parameter is valid before C23 and
    // conflicts in C23: that does not hide f's count (a reduction of the pcc finding did so).
    let declared = "struct U { int a; };\nstruct U f();\nint g();\nint g(int a) { return a; }\n";
    let defined = "struct U f() { struct U u = {1}; return u; }\n";
    let dir = tempfile::tempdir().unwrap();
    let check = Check {
        configuration: "gcc -O0 -DSHOW".into(),
        symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
        guard: counting_guard(),
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    let accepts = |call: &str| {
        let program = program_showing(
            declared,
            &format!("  int x = 0;\n  struct U u = {call};\n"),
            "\"%d\\n\", u.a + x",
        );
        fs::write(&file, format!("{program}{defined}")).unwrap();
        run_script(&script, &file, &RunOptions::default()).unwrap()
    };
    assert!(accepts("f()"));
    assert!(!accepts("f(0, &x)"));
    let keep = tempfile::tempdir().unwrap();
    let reason = accepts_keeping(&script, &file, keep.path());
    assert!(reason.contains("a call passes a wrong number of arguments"), "{reason}");
}

/// The guard with a clang that counts arguments in C23 mode (15 and later; the campaign's
/// guard has clang-19).
fn counting_guard() -> Guard {
    Guard {
        clang: "clang-19".into(),
        ..guard()
    }
}

#[test]
fn a_call_counted_against_a_declaration_its_definition_conflicts_with_passes() {
    // In C23 `int f();` takes nothing and f(1) is miscounted, but f's definition after the call
    // takes one argument: the program is right before C23.
    let program = program_showing("int f();\n", "  int x = f(1);\n", "\"%d\\n\", x");
    assert!(script_accepts(
        counting_guard(),
        &format!("{program}int f(int a) {{ return a; }}\n")
    ));
}

#[test]
fn old_style_definitions_called_rightly_pass_the_argument_count() {
    // K&R definitions are no C23: the count decides nothing, and the call is right anyway.
    assert!(guard_accepts_under(
        counting_guard(),
        "int add();\nint add(a, b) int a; int b; { return a + b; }\n",
        "  int x = add(2, 3);\n",
        "\"%d\\n\", x"
    ));
}

#[test]
fn a_program_with_prototypes_keeps_them_through_the_reduction() {
    // The third reduction of the pcc finding: f's `()` declaration hides the miscount from
    // C23 too, since f's own definition conflicts with it there.
    let dir = tempfile::tempdir().unwrap();
    let unreduced = dir.path().join("unreduced.c");
    let prototyped = program_showing("int f(int a);\n", "  int x = f(1);\n", "\"%d\\n\", x");
    fs::write(&unreduced, format!("{prototyped}int f(int a) {{ return a; }}\n")).unwrap();
    assert!(passes_arguments_by_prototype(&counting_guard(), &unreduced).unwrap());
    let reduced = program_showing("int f();\n", "  int x = f(1, 2);\n", "\"%d\\n\", x");
    let reduced = format!("{reduced}int f(int a) {{ return a; }}\n");
    fs::write(&unreduced, &reduced).unwrap();
    assert!(!passes_arguments_by_prototype(&counting_guard(), &unreduced).unwrap());
    let accepts = |prototypes: bool| {
        let check = Check {
            prototypes,
            ..wrong_output_check("gcc -O0 -DSHOW")
        };
        let check = Check {
            guard: counting_guard(),
            ..check
        };
        let script = check.write(dir.path()).unwrap();
        let file = dir.path().join("test.c");
        fs::write(&file, &reduced).unwrap();
        run_script(&script, &file, &RunOptions::default()).unwrap()
    };
    assert!(accepts(false), "the C23 count alone cannot see this miscount");
    assert!(!accepts(true));
}

#[test]
fn a_program_with_old_style_definitions_is_not_held_to_prototypes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("test.c");
    fs::write(
        &file,
        "int add();\nint add(a, b) int a; int b; { return a + b; }\nint main(void) { return add(1, -1); }\n",
    )
    .unwrap();
    assert!(!passes_arguments_by_prototype(&counting_guard(), &file).unwrap());
}

#[test]
fn a_clang_that_spins_on_the_prototype_check_is_stopped() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let spinning = dir.path().join("clang");
    fs::write(&spinning, "#!/bin/sh\nwhile :; do :; done\n").unwrap();
    fs::set_permissions(&spinning, fs::Permissions::from_mode(0o755)).unwrap();
    let file = dir.path().join("test.c");
    fs::write(&file, "int main(void) { return 0; }\n").unwrap();
    let guard = Guard {
        clang: spinning.display().to_string(),
        compile_timeout: 1,
        ..guard()
    };
    let error = passes_arguments_by_prototype(&guard, &file).unwrap_err();
    assert!(format!("{error:#}").contains("does not finish"), "{error:#}");
}

/// Runs the script on `file` keeping its outputs in `keep`; the reason it rejected the file.
fn accepts_keeping(script: &std::path::Path, file: &std::path::Path, keep: &std::path::Path) -> String {
    let options = RunOptions {
        keep: Some(keep.to_path_buf()),
        ..RunOptions::default()
    };
    run_script(script, file, &options).unwrap();
    fs::read_to_string(keep.join("reason.err")).unwrap_or_default()
}

/// An executable shell script standing for a compiler.
fn write_script(path: &std::path::Path, body: &str) {
    use std::os::unix::fs::PermissionsExt;
    fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn a_guard_compiler_that_is_killed_decides_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // A clang that dies by SIGKILL, as a compile the timeout ends does.
    let killed = dir.path().join("killed-clang");
    write_script(&killed, "kill -KILL $$");
    let check = Check {
        configuration: "gcc -O0 -DSHOW".into(),
        symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
        guard: Guard {
            clang: killed.display().to_string(),
            ..guard()
        },
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    fs::write(
        &file,
        program_showing("int g = 5;\n", "  int x = g * 3;\n", "\"%d\\n\", x"),
    )
    .unwrap();
    let keep = dir.path().join("kept");
    let options = RunOptions {
        keep: Some(keep.clone()),
        ..RunOptions::default()
    };
    let error = run_script(&script, &file, &options).unwrap_err().to_string();
    assert!(error.contains("could not judge"), "{error}");
    assert_eq!(
        fs::read_to_string(keep.join("reason.err")).unwrap(),
        "clang:  (killed by signal 9)\n"
    );
    // A clang that fails with an error still rejects.
    write_script(&killed, "echo 'x.c:1:1: error: no' >&2; exit 1");
    assert!(!run_script(&script, &file, &options).unwrap());
    assert_eq!(
        fs::read_to_string(keep.join("reason.err")).unwrap(),
        "clang: x.c:1:1: error: no\n"
    );
}

#[test]
fn limits_are_cpu_seconds_not_the_wall_clock() {
    let dir = tempfile::tempdir().unwrap();
    // A compiler that waits 3 s before compiling, as a starved one does, within a limit of 1 s.
    let slow = dir.path().join("slow-gcc");
    write_script(&slow, "sleep 3; exec gcc \"$@\"");
    let check = Check {
        configuration: format!("{} -O0 -DSHOW", slow.display()),
        symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
        guard: Guard {
            compile_timeout: 1,
            ..guard()
        },
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    fs::write(&file, program_showing("", "", "\"1\\n\"")).unwrap();
    let symptom_only = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    assert!(run_script(&script, &file, &symptom_only).unwrap());
    // A compiler that spends its second of CPU is stopped.
    write_script(&slow, "while :; do :; done");
    assert!(!run_script(&script, &file, &symptom_only).unwrap());
}

#[test]
fn a_quick_hang_limit_follows_the_reference_run_time() {
    // The tested binary spends 6 CPU seconds, then prints what the reference prints.
    let dir = tempfile::tempdir().unwrap();
    let check = Check {
        configuration: "gcc -O0 -DSPIN".into(),
        symptom: Symptom::Mismatch(Misbehaviour::Timeout),
        guard: guard(),
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    let spin = "#ifdef SPIN\n  while (clock() < 6 * CLOCKS_PER_SEC) ;\n#endif\n";
    fs::write(&file, program_showing("#include <time.h>\n", spin, "\"1\\n\"")).unwrap();
    let whole_limit = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    // Within the run limit of 10 s it terminates: no symptom.
    assert!(!run_script(&script, &file, &whole_limit).unwrap());
    // The reference runs in milliseconds, so the quick limit is 1 s: it counts as not terminating.
    let quick = RunOptions {
        quick_hang: true,
        ..whole_limit
    };
    assert!(run_script(&script, &file, &quick).unwrap());
}

#[test]
fn the_symptom_must_show() {
    // The tested configuration prints the same as the reference: not interesting.
    let dir = tempfile::tempdir().unwrap();
    let check = Check {
        configuration: "gcc -O1".into(),
        symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
        guard: guard(),
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    let program = program_showing("", "", "\"1\\n\"");
    fs::write(&file, program).unwrap();
    assert!(!run_script(&script, &file, &RunOptions::default()).unwrap());
    // With a flag that changes the output it shows, and the outputs can be kept.
    let keep = dir.path().join("kept");
    let options = RunOptions {
        extra_flags: vec!["-DSHOW".into()],
        without_guard: true,
        keep: Some(keep.clone()),
        ..RunOptions::default()
    };
    assert!(run_script(&script, &file, &options).unwrap());
    assert_eq!(fs::read_to_string(keep.join("ref.out")).unwrap(), "1\n");
    assert_eq!(fs::read_to_string(keep.join("bad.out")).unwrap(), "shown\n1\n");
}

#[test]
fn a_compiler_crash_keeps_its_signal_and_the_guard_still_applies() {
    // TinyCC 0.9.27 overflows its stack on 20,000 nested parentheses (SIGSEGV); clang's
    // limit of 256 makes the guard reject such a program all the same.
    let dir = tempfile::tempdir().unwrap();
    let check = Check {
        configuration: "tcc".into(),
        symptom: Symptom::Crash {
            signal: Some(11),
            markers: Vec::new(),
        },
        guard: guard(),
        prototypes: false,
    };
    let script = check.write(dir.path()).unwrap();
    let file = dir.path().join("test.c");
    let depth = 20_000;
    fs::write(
        &file,
        format!(
            "int main(void) {{ return {}0{}; }}\n",
            "(".repeat(depth),
            ")".repeat(depth)
        ),
    )
    .unwrap();
    let symptom_only = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    assert!(run_script(&script, &file, &symptom_only).unwrap());
    let keep = dir.path().join("kept");
    let guarded = RunOptions {
        keep: Some(keep.clone()),
        ..RunOptions::default()
    };
    assert!(!run_script(&script, &file, &guarded).unwrap());
    let reason = fs::read_to_string(keep.join("reason.err")).unwrap();
    assert!(reason.contains("bracket nesting"), "{reason}");
    // Another signal is another symptom.
    let other = Check {
        symptom: Symptom::Crash {
            signal: Some(6),
            markers: Vec::new(),
        },
        ..check
    };
    let script = other.write(dir.path()).unwrap();
    assert!(!run_script(&script, &file, &symptom_only).unwrap());
}

#[test]
fn misbehaviour_is_read_from_the_campaign_description() {
    assert_eq!(
        Misbehaviour::from_description("exit 0, 3 bytes of output ending in \"1\"", "killed by signal 11"),
        Misbehaviour::Signal(11)
    );
    assert_eq!(
        Misbehaviour::from_description(
            "exit 0, 3 bytes of output ending in \"1\"",
            "did not terminate within the run timeout"
        ),
        Misbehaviour::Timeout
    );
    assert_eq!(
        Misbehaviour::from_description(
            "exit 0, 25 bytes of output ending in \"checksum = 2\"",
            "exit 0, 25 bytes of output ending in \"checksum = 1\""
        ),
        Misbehaviour::WrongOutput
    );
    assert_eq!(
        Misbehaviour::from_description(
            "exit 0, 26 bytes of output ending in \"checksum 20dd8b2610fb8f8a\"",
            "exit 1, 33 bytes of output ending in \"checksum 20e07498a5e0424b\""
        ),
        Misbehaviour::WrongOutput
    );
    assert_eq!(
        Misbehaviour::from_description(
            "exit 0, 0 bytes of output ending in \"\"",
            "exit 1, 0 bytes of output ending in \"\""
        ),
        Misbehaviour::WrongStatus
    );
}

/// A pcc wrong-output finding once "reduced" to `int main() {}`: pcc returns garbage from the
/// end of `main`, which kept the exit status wrong after every output line was gone.
#[test]
fn a_wrong_output_is_not_kept_by_a_wrong_exit_status_alone() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("test.c");
    fs::write(
        &file,
        "#include <stdio.h>\nint main(void) {\n  printf(\"same\\n\");\n#ifdef STATUS\n  return 3;\n#endif\n  return 0;\n}\n",
    )
    .unwrap();
    let symptom_only = RunOptions {
        without_guard: true,
        ..RunOptions::default()
    };
    let shows = |misbehaviour| {
        let check = Check {
            configuration: "gcc -O0 -DSTATUS".into(),
            symptom: Symptom::Mismatch(misbehaviour),
            guard: guard(),
            prototypes: false,
        };
        let script = check.write(dir.path()).unwrap();
        run_script(&script, &file, &symptom_only).unwrap()
    };
    assert!(!shows(Misbehaviour::WrongOutput));
    assert!(shows(Misbehaviour::WrongStatus));
}
