//! Orange programs on real compilers: every generated program compiles with gcc and clang at
//! -O0 and -O2, prints its expected checksum and passes its own checks, and is clean under
//! UBSan and ASan. `ORANGE_PROGRAMS=10000 ORANGE_MAX_OPERATORS=10000` runs the full study;
//! `ORANGE_FIRST=N` starts at program N, so that a long study can be run in parts.

use ccfuzz::compile::{compile, compile_and_run};
use ccfuzz::config::CompilerConfig;
use ccfuzz::runner::{run, Exit, Limits};
use ccfuzz_observers::ConfigOutcome;
use ccfuzz_orange::{generate, GenOptions, Policies};
use libafl_bolts::rands::StdRand;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Keeps a failure for the final assertion and shows it at once: a long study may be stopped.
fn report(failures: &mut Vec<String>, failure: String) {
    eprintln!("Orange: FAILED {failure}");
    failures.push(failure);
}

const CONFIGURATIONS: [&str; 4] = ["gcc -O0", "gcc -O2", "clang -O0", "clang -O2"];
/// gcc's runtimes (clang's are not installed); AddressSanitizer needs no memory limit.
const SANITIZED: &str = "gcc -O0 -fsanitize=undefined,address -fno-sanitize-recover=all";

#[test]
fn generated_programs_print_their_expected_values_under_every_compiler() {
    let count = env_number("ORANGE_PROGRAMS", 120);
    let first = env_number("ORANGE_FIRST", 0);
    let max_operators = env_number("ORANGE_MAX_OPERATORS", 2000);
    let next = AtomicUsize::new(first);
    let (operators, float_programs) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let dir = tempfile::tempdir().unwrap();
                    let mut failures = Vec::new();
                    loop {
                        let n = next.fetch_add(1, Ordering::SeqCst);
                        if n >= first + count {
                            return failures;
                        }
                        // A long study shows where it is, in case it is stopped before its end.
                        if n > 0 && n.is_multiple_of(250) {
                            eprintln!(
                                "Orange: program {n} of {first}..{} started, {} operators so far, {} failures in this worker",
                                first + count,
                                operators.load(Ordering::Relaxed),
                                failures.len()
                            );
                        }
                        // Mixed sizes, policies on and off, a third in floating mode.
                        let options = GenOptions {
                            min_operators: 1,
                            max_operators,
                            policies: if n.is_multiple_of(2) {
                                Policies::ALL
                            } else {
                                Policies::NONE
                            },
                            float: n.is_multiple_of(3),
                        };
                        let program = generate(options, &mut StdRand::with_seed(n as u64));
                        operators.fetch_add(program.size(), Ordering::Relaxed);
                        float_programs.fetch_add(usize::from(options.float), Ordering::Relaxed);
                        let source = dir.path().join("orange.c");
                        std::fs::write(&source, program.to_c()).unwrap();
                        let expected = program.expected_output();
                        for configuration in CONFIGURATIONS {
                            let (outcome, _) = compile_and_run(
                                &CompilerConfig::new(configuration),
                                &source,
                                &dir.path().join("orange"),
                                Duration::from_secs(300),
                                Duration::from_secs(60),
                            )
                            .unwrap();
                            match outcome {
                                ConfigOutcome::Ran { run } if run.is_expected(0, expected.as_bytes()) => {}
                                other => {
                                    let kept = dir.path().join(format!("failed-{n}.c"));
                                    std::fs::copy(&source, &kept).unwrap();
                                    report(&mut failures, format!("program {n} under {configuration}: {other:?}"));
                                }
                            }
                        }
                        let binary = dir.path().join("sanitized");
                        let (failure, _) = compile(
                            &CompilerConfig::new(SANITIZED),
                            &source,
                            &binary,
                            &[],
                            Duration::from_secs(300),
                        )
                        .unwrap();
                        if let Some(failure) = failure {
                            report(&mut failures, format!("program {n} does not compile with sanitizers: {failure:?}"));
                            continue;
                        }
                        let limits = Limits {
                            memory: u64::MAX,
                            ..Limits::program(Duration::from_secs(60))
                        };
                        let out = run(std::process::Command::new(&binary), &limits).unwrap();
                        if out.exit != Exit::Code(0) || out.stdout != expected.as_bytes() {
                            let sanitizer = out
                                .stderr_text()
                                .lines()
                                .find(|l| l.contains("runtime error") || l.contains("ERROR"))
                                .unwrap_or("")
                                .to_string();
                            report(&mut failures, format!("program {n} under UBSan/ASan: {:?} {sanitizer}", out.exit));
                        }
                    }
                })
            })
            .collect();
        workers.into_iter().flat_map(|w| w.join().unwrap()).collect()
    });
    println!(
        "Orange: {count} programs ({} in floating mode, {} operators, up to {max_operators} per program) × {} configurations and UBSan+ASan, {} failures",
        float_programs.load(Ordering::Relaxed),
        operators.load(Ordering::Relaxed),
        CONFIGURATIONS.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
