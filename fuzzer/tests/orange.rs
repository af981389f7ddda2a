//! Orange programs on real compilers: every generated program compiles with gcc and clang at
//! -O0 and -O2, prints its expected checksum and passes its own checks, and is clean under
//! UBSan and ASan. `ORANGE_PROGRAMS=10000 ORANGE_MAX_OPERATORS=10000` runs the full study;
//! `ORANGE_FIRST=N` starts at program N, so that a long study can be run in parts (it says
//! every 100 programs up to where all are done).
//!
//! The sanitizers are clang's, whose `-fsanitize=undefined` includes float-cast-overflow:
//! gcc's leaves it out, and gcc's UBSan compile time grows exponentially with the nesting of
//! divisions and shifts (one 7,000-operator program took over 10 minutes at -O0).
//!
//! A program that only an optimizing build of one compiler gets wrong, while the sanitizers
//! are clean and both -O0 builds and the other compiler's optimizing build print the expected
//! values, is the compiler's fault, not the generator's: it is kept under `ORANGE_KEEP`
//! (default `orange-study/` in cargo's test scratch directory) and counted, not failed.

mod common;

use ccfuzz::config::CompilerConfig;
use ccfuzz::exec::compile::{compile, compile_and_run, BinaryRuns};
use ccfuzz::exec::instrument::Additions;
use ccfuzz::exec::runner::{run, Exit, Limits};
use ccfuzz_observers::ConfigOutcome;
use ccfuzz_orange::{generate, GenOptions, Policies};
use common::sanitizer_report;
use libafl_bolts::rands::StdRand;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

const CONFIGURATIONS: [&str; 4] = ["gcc -O0", "gcc -O2", "clang -O0", "clang -O2"];
/// Complete for Orange's operations: clang's `undefined` includes float-cast-overflow.
const CLANG_SANITIZED: &str = "clang -O0 -fsanitize=undefined,float-divide-by-zero,address -fno-sanitize-recover=all";

/// What the study found, over all workers.
#[derive(Default)]
struct Tally {
    /// Programs whose expected values or UB freedom are wrong: the generator's fault.
    generator_faults: Vec<String>,
    /// Programs one compiler's optimizer alone got wrong (wrong code, a crash or a hang).
    compiler_faults: Vec<String>,
}

/// Which programs are done, so that a study stopped before its end can be taken up with
/// `ORANGE_FIRST` at the first program not done.
struct Progress {
    /// Every program below this one is done.
    done_below: usize,
    /// Programs done above `done_below`.
    ahead: BTreeSet<usize>,
}

impl Progress {
    fn new(first: usize) -> Self {
        Progress {
            done_below: first,
            ahead: BTreeSet::new(),
        }
    }

    fn finish(&mut self, n: usize, operators: &AtomicUsize) {
        self.ahead.insert(n);
        while self.ahead.remove(&self.done_below) {
            self.done_below += 1;
            if self.done_below.is_multiple_of(100) {
                eprintln!(
                    "Orange: every program below {} done, {} operators so far",
                    self.done_below,
                    operators.load(Ordering::Relaxed)
                );
            }
        }
    }
}

/// `Err` with the sanitizer's report unless the sanitized build of `source` runs cleanly and
/// prints `expected`.
fn sanitized_run(source: &Path, dir: &Path, expected: &str) -> Result<(), String> {
    let binary = dir.join("sanitized");
    let config = CompilerConfig::new(CLANG_SANITIZED);
    if let (Some(failure), _) = compile(
        &config,
        source,
        &binary,
        &Additions::default(),
        Duration::from_secs(300),
    )
    .unwrap()
    {
        return Err(format!("{CLANG_SANITIZED} does not compile it: {failure:?}"));
    }
    // AddressSanitizer needs no memory limit.
    let limits = Limits {
        memory: u64::MAX,
        ..Limits::program(Duration::from_secs(60))
    };
    let out = run(std::process::Command::new(&binary), &limits).unwrap();
    if out.exit == Exit::Code(0) && out.stdout == expected.as_bytes() {
        return Ok(());
    }
    Err(format!("{:?} {}", out.exit, sanitizer_report(&out.stderr_text())))
}

/// One program through every configuration and the sanitizers.
fn check_program(n: usize, source: &Path, expected: &str, dir: &Path, keep: &Path, tally: &Mutex<Tally>) {
    let wrong: Vec<(&str, String)> = CONFIGURATIONS
        .into_iter()
        .filter_map(|configuration| {
            let (outcome, _) = compile_and_run(
                &CompilerConfig::new(configuration),
                source,
                &dir.join("orange"),
                &Additions::default(),
                Duration::from_secs(300),
                Duration::from_secs(60),
                &mut BinaryRuns::for_binaries(1),
            )
            .unwrap();
            match outcome {
                ConfigOutcome::Ran { run } if run.is_expected(0, expected.as_bytes()) => None,
                ConfigOutcome::Ran { run } => Some((configuration, run.describe())),
                other => Some((configuration, format!("{other:?}"))),
            }
        })
        .collect();
    let sanitized = sanitized_run(source, dir, expected);
    let sanitizers_clean = sanitized.is_ok();
    // Only one optimizing configuration wrong, the program ran as expected everywhere else.
    let compiler_fault = sanitizers_clean && wrong.len() == 1 && wrong[0].0.ends_with("-O2");
    let mut tally = tally.lock().unwrap();
    for (configuration, outcome) in &wrong {
        let line = format!("program {n} under {configuration}: {outcome}");
        eprintln!(
            "Orange: {} {line}",
            if compiler_fault { "COMPILER FAULT" } else { "FAILED" }
        );
        if compiler_fault {
            tally.compiler_faults.push(line);
        } else {
            tally.generator_faults.push(line);
        }
    }
    if let Err(failure) = sanitized {
        let line = format!("program {n} under sanitizers: {failure}");
        eprintln!("Orange: FAILED {line}");
        tally.generator_faults.push(line);
    }
    if !wrong.is_empty() || !sanitizers_clean {
        std::fs::create_dir_all(keep).unwrap();
        std::fs::copy(source, keep.join(format!("orange-{n}.c"))).unwrap();
        std::fs::write(keep.join(format!("orange-{n}.expected")), expected).unwrap();
    }
}

#[test]
#[ignore = "compiles many programs: make test"]
fn generated_programs_print_their_expected_values_under_every_compiler() {
    let count = env_number("ORANGE_PROGRAMS", 120);
    let first = env_number("ORANGE_FIRST", 0);
    let max_operators = env_number("ORANGE_MAX_OPERATORS", 2000);
    let keep = std::env::var_os("ORANGE_KEEP")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_TARGET_TMPDIR")).join("orange-study"));
    let next = AtomicUsize::new(first);
    let (operators, float_programs) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let tally = Mutex::new(Tally::default());
    let progress = Mutex::new(Progress::new(first));
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                let dir = tempfile::tempdir().unwrap();
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= first + count {
                        return;
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
                    check_program(n, &source, &program.expected_output(), dir.path(), &keep, &tally);
                    progress.lock().unwrap().finish(n, &operators);
                }
            });
        }
    });
    let tally = tally.into_inner().unwrap();
    println!(
        "Orange: programs {first}..{} ({} in floating mode, {} operators, up to {max_operators} per program) × {} configurations and UBSan+ASan: {} generator faults, {} compiler faults; programs kept in {}",
        first + count,
        float_programs.load(Ordering::Relaxed),
        operators.load(Ordering::Relaxed),
        CONFIGURATIONS.len(),
        tally.generator_faults.len(),
        tally.compiler_faults.len(),
        keep.display()
    );
    for line in &tally.compiler_faults {
        println!("Orange: compiler fault: {line}");
    }
    assert!(
        tally.generator_faults.is_empty(),
        "{}",
        tally.generator_faults.join("\n")
    );
}
