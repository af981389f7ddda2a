//! The program model and Orion on a hundred real csmith seeds: normalization keeps each
//! program's meaning, re-emission is exact, and every Orion variant prints its seed's output.

mod common;

use ccfuzz::config::CompilerConfig;
use ccfuzz::exec::compile::{compile, compile_and_run, run_binary, BinaryRuns};
use ccfuzz::exec::instrument::Additions;
use ccfuzz::exec::runner::{run, Exit, Limits};
use ccfuzz::seeds::parse_gcov;
use ccfuzz_mutators::athena::{AthenaChain, AthenaParams};
use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::hermes::{env_at, hermes_variant, synthesize, usable_points, Strategy};
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::model::Variable;
use ccfuzz_mutators::orion::orion_prune;
use ccfuzz_mutators::pool::Pool;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_observers::ConfigOutcome;
use common::*;
use libafl_bolts::rands::{Rand, StdRand};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

const SEEDS: usize = 100;

static STORE: OnceLock<(tempfile::TempDir, Vec<SeedId>)> = OnceLock::new();

/// Removes the store's directory when the test process exits: a static is never dropped, and
/// each test run left its store (a few MB) in the temporary directory.
extern "C" fn remove_store() {
    if let Some((dir, _)) = STORE.get() {
        let _ = std::fs::remove_dir_all(dir.path());
    }
}

/// A store of at least 100 csmith seeds (of 150 candidates), profiled once per test run by two `ccfuzz seeds`
/// processes in parallel.
fn store() -> &'static (tempfile::TempDir, Vec<SeedId>) {
    STORE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        // SAFETY: registers a function that takes no arguments and does not unwind.
        assert_eq!(unsafe { libc::atexit(remove_store) }, 0);
        let config = write_config(dir.path(), &["gcc -O0"], 60.0);
        let store = dir.path().join("store");
        let workers: Vec<_> = [1, 10_001]
            .iter()
            .map(|first| {
                ccfuzz()
                    .args(["seeds", "--csmith", "75", "--first-seed", &first.to_string(), "--store"])
                    .arg(&store)
                    .arg("--config")
                    .arg(&config)
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for worker in workers {
            let output = worker.wait_with_output().unwrap();
            assert!(output.status.success(), "{}", text(&output));
        }
        let ids = SeedStore::open(&store).unwrap().ids().unwrap();
        assert!(
            ids.len() >= SEEDS,
            "only {} of 150 csmith programs were accepted",
            ids.len()
        );
        (dir, ids)
    })
}

fn store_path() -> PathBuf {
    store().0.path().join("store")
}

/// Compiles `text` with gcc -O0 and clang -O0 and returns what each printed.
fn outputs(text: &str, dir: &Path) -> Vec<(String, ConfigOutcome)> {
    let source = dir.join("program.c");
    std::fs::write(&source, text).unwrap();
    ["gcc -O0", "clang -O0"]
        .iter()
        .map(|c| {
            let config = CompilerConfig::new(*c);
            let (outcome, _) = compile_and_run(
                &config,
                &source,
                &dir.join("prog"),
                &Additions::default(),
                Duration::from_secs(120),
                Duration::from_secs(20),
                &mut BinaryRuns::for_binaries(1),
            )
            .unwrap();
            (c.to_string(), outcome)
        })
        .collect()
}

fn expect_seed_output(programs: &Programs, id: &SeedId, text: &str, dir: &Path, what: &str) -> Result<(), String> {
    let seed = &programs.get(id).unwrap().seed;
    for (config, outcome) in outputs(text, dir) {
        match &outcome {
            ConfigOutcome::Ran { run } if run.is_expected(seed.profile.expected_exit, &seed.expected_output) => {}
            other => return Err(format!("{what} of seed {id} under {config}: {other:?}")),
        }
    }
    Ok(())
}

/// Runs `check` over the ids on two threads and collects the failures.
fn on_two_threads(
    ids: &[SeedId],
    check: impl Fn(&Programs, &SeedId, &Path) -> Result<(), String> + Sync,
) -> Vec<String> {
    let half = ids.len().div_ceil(2);
    std::thread::scope(|scope| {
        let handles: Vec<_> = ids
            .chunks(half)
            .map(|chunk| {
                let check = &check;
                scope.spawn(move || {
                    let programs = Programs::new(SeedStore::open(store_path()).unwrap(), 4);
                    let dir = tempfile::tempdir().unwrap();
                    chunk
                        .iter()
                        .filter_map(|id| check(&programs, id, dir.path()).err())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

#[test]
#[ignore = "compiles many programs: make test"]
fn seeds_keep_their_meaning_and_re_emit_exactly() {
    let ids = &store().1[..SEEDS];
    let failures = on_two_threads(ids, |programs, id, dir| {
        let loaded = programs.get(id).unwrap();
        let emitted = programs.materialize(&Variant::of_seed(id.clone())).unwrap();
        if *emitted != *loaded.seed.text {
            return Err(format!("seed {id} does not re-emit to its own text"));
        }
        // main, the last function, sees csmith's globals if it made any (they are declared
        // after its runtime's helpers) and its own initialized locals: integer lvalues Hermes
        // can read everywhere.
        let program = &loaded.program;
        let main_body = *program.roots.last().unwrap();
        let globals: Vec<&Variable> = program.scopes[0]
            .vars
            .iter()
            .filter(|v| v.name.starts_with("g_"))
            .collect();
        for stmt in program.statements.iter().filter(|s| s.id >= main_body) {
            let visible = program.vars_in_scope(stmt.id);
            if !globals.iter().all(|g| visible.iter().any(|v| v.name == g.name)) {
                return Err(format!(
                    "seed {id}: statement {} of main does not see every global",
                    stmt.id
                ));
            }
            if program.readables(stmt.id).is_empty() {
                return Err(format!(
                    "seed {id}: no readable integer lvalue at statement {} of main",
                    stmt.id
                ));
            }
        }
        expect_seed_output(programs, id, &emitted, dir, "re-emitted text")?;
        // The normalized seed prints what csmith's original program prints.
        let csmith_args: Vec<&str> = loaded.seed.profile.origin.split_whitespace().skip(1).collect();
        // csmith writes `platform.info` into its working directory.
        let original = std::process::Command::new("csmith")
            .args(&csmith_args)
            .current_dir(dir)
            .output()
            .unwrap()
            .stdout;
        let source = dir.join("original.c");
        std::fs::write(&source, original).unwrap();
        let config = CompilerConfig::new("gcc -O0 -I/usr/include/csmith");
        let (outcome, _) = compile_and_run(
            &config,
            &source,
            &dir.join("orig"),
            &Additions::default(),
            Duration::from_secs(120),
            Duration::from_secs(20),
            &mut BinaryRuns::for_binaries(1),
        )
        .unwrap();
        match outcome {
            ConfigOutcome::Ran { run }
                if run.is_expected(loaded.seed.profile.expected_exit, &loaded.seed.expected_output) =>
            {
                Ok(())
            }
            other => Err(format!("csmith's original of seed {id} prints {other:?}")),
        }
    });
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
#[ignore = "compiles many programs: make test"]
fn orion_variants_print_their_seeds_output() {
    let ids = &store().1[..100];
    let failures = on_two_threads(ids, |programs, id, dir| {
        let loaded = programs.get(id).unwrap();
        let mut rand = StdRand::with_seed(id.0.len() as u64 + u64::from_str_radix(&id.0[..8], 16).unwrap());
        let mut deleted = Vec::new();
        for _ in 0..20 {
            deleted = orion_prune(&loaded.program, &mut rand);
            if !deleted.is_empty() {
                break;
            }
        }
        if deleted.is_empty() {
            return Err(format!("Orion deleted nothing from seed {id}"));
        }
        for &stmt in &deleted {
            if !loaded.program.statement(stmt).is_deletable() {
                return Err(format!("Orion deleted a statement of seed {id} that ran"));
            }
        }
        let edits: Vec<Edit> = deleted.into_iter().map(|stmt| Edit::Delete { stmt }).collect();
        let text = programs.materialize(&Variant::new(id.clone(), edits)).unwrap();
        if *text == *loaded.seed.text {
            return Err(format!("the Orion variant of seed {id} equals the seed"));
        }
        expect_seed_output(programs, id, &text, dir, "Orion variant")
    });
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The first 50 seeds of the store that have points Hermes can use.
fn hermes_seeds(programs: &Programs) -> Vec<SeedId> {
    let ids: Vec<SeedId> = store()
        .1
        .iter()
        .filter(|id| !usable_points(&programs.get(id).unwrap()).is_empty())
        .take(50)
        .cloned()
        .collect();
    assert_eq!(
        ids.len(),
        50,
        "fewer than 50 of {} seeds have usable points",
        store().1.len()
    );
    ids
}

#[test]
#[ignore = "compiles many programs: make test"]
fn hermes_variants_print_their_seeds_output_and_are_ub_free() {
    let programs = Programs::new(SeedStore::open(store_path()).unwrap(), 64);
    let ids = hermes_seeds(&programs);
    let sanitized = CompilerConfig::new("gcc -O0 -fsanitize=undefined,address -fno-sanitize-recover=all");
    let failures = on_two_threads(&ids, |programs, id, dir| {
        let loaded = programs.get(id).unwrap();
        let mut rand = StdRand::with_seed(u64::from_str_radix(&id.0[..8], 16).unwrap());
        let mut problems = Vec::new();
        for n in 0..20 {
            let edits = hermes_variant(&loaded, &mut rand);
            let text = programs.materialize(&Variant::new(id.clone(), edits)).unwrap();
            if let Err(e) = expect_seed_output(programs, id, &text, dir, &format!("Hermes variant {n}")) {
                problems.push(e);
                continue;
            }
            let source = dir.join("program.c");
            let binary = dir.join("sanitized");
            let (failure, _) = compile(
                &sanitized,
                &source,
                &binary,
                &Additions::default(),
                Duration::from_secs(120),
            )
            .unwrap();
            if let Some(failure) = failure {
                problems.push(format!(
                    "Hermes variant {n} of seed {id} does not compile with sanitizers: {failure:?}"
                ));
                continue;
            }
            // AddressSanitizer reserves terabytes of address space: no memory limit here.
            let limits = Limits {
                memory: u64::MAX,
                ..Limits::program(Duration::from_secs(60))
            };
            let mut command = std::process::Command::new(&binary);
            command.current_dir(dir);
            let out = run(command, &limits).unwrap();
            let seed = &loaded.seed;
            if out.exit != Exit::Code(seed.profile.expected_exit) || out.stdout != seed.expected_output {
                problems.push(format!(
                    "Hermes variant {n} of seed {id} under UBSan/ASan: {:?} {}",
                    out.exit,
                    sanitizer_report(&out.stderr_text())
                ));
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    });
    println!(
        "Hermes: {} variants of {} seeds checked, {} seeds with failures",
        ids.len() * 20,
        ids.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
#[ignore = "compiles many programs: make test"]
fn athena_chain_states_print_their_seeds_output() {
    let programs = Programs::new(SeedStore::open(store_path()).unwrap(), 8);
    // The pool holds statements of every stored seed, so most transplants cross seeds.
    let mut pool = Pool::default();
    for id in &store().1 {
        pool.add_seed(id, &programs.get(id).unwrap().program);
    }
    let ids: Vec<SeedId> = store()
        .1
        .iter()
        .filter(|id| {
            let program = &programs.get(id).unwrap().program;
            program.statements.iter().any(|s| s.is_deletable())
        })
        .take(50)
        .cloned()
        .collect();
    assert_eq!(ids.len(), 50, "fewer than 50 seeds have code that never ran");
    let pool = &pool;
    let counts = std::sync::Mutex::new((0u64, 0u64, 0usize));
    let failures = on_two_threads(&ids, |programs, id, dir| {
        let loaded = programs.get(id).unwrap();
        let mut chain = AthenaChain::new(&loaded.program, AthenaParams::default());
        let mut rand = StdRand::with_seed(u64::from_str_radix(&id.0[..8], 16).unwrap());
        let mut problems = Vec::new();
        let mut written = 0;
        while written < 20 && chain.proposals < 2000 {
            if !chain.step(&loaded.program, id, pool, &mut rand) {
                continue;
            }
            written += 1;
            let variant = Variant::new(id.clone(), chain.edits.clone());
            let text = programs.materialize(&variant).unwrap();
            if let Err(e) = expect_seed_output(programs, id, &text, dir, &format!("Athena state {written}")) {
                problems.push(e);
            }
        }
        let transplants = chain
            .edits
            .iter()
            .filter(|e| matches!(e, Edit::Transplant { .. }))
            .count();
        let mut counts = counts.lock().unwrap();
        counts.0 += chain.proposals;
        counts.1 += chain.accepted;
        counts.2 += transplants;
        if written < 20 {
            problems.push(format!("seed {id}: the chain moved only {written} times"));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    });
    let (proposals, accepted, transplants) = *counts.lock().unwrap();
    println!(
        "Athena: {} chain states of {} seeds checked ({proposals} proposals, {accepted} accepted, {transplants} transplants in the final states, pool of {} statements), {} seeds with failures",
        ids.len() * 20,
        ids.len(),
        pool.entries.len(),
        failures.len()
    );
    assert!(transplants > 0, "no transplant survived in any chain");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Compiles with `gcc --coverage -O0`, runs, and returns gcov's line counts.
fn line_counts(text: &str, dir: &Path) -> std::collections::BTreeMap<u32, u64> {
    let source = dir.join("cov.c");
    std::fs::write(&source, text).unwrap();
    let binary = dir.join("covprog");
    let (failure, _) = compile(
        &CompilerConfig::new("gcc -O0"),
        &source,
        &binary,
        &Additions::flags(&["--coverage"]),
        Duration::from_secs(120),
    )
    .unwrap();
    assert!(failure.is_none(), "{failure:?}");
    run_binary(&binary, Duration::from_secs(20)).unwrap();
    let gcov = std::process::Command::new("gcov")
        .args(["-j", "-t", "covprog-cov.gcda"])
        .current_dir(dir)
        .output()
        .unwrap();
    parse_gcov(&gcov.stdout, "cov.c").unwrap()
}

#[test]
#[ignore = "compiles many programs: make test"]
fn each_hermes_strategy_leaves_its_mark_in_the_coverage() {
    let programs = Programs::new(SeedStore::open(store_path()).unwrap(), 8);
    let dir = tempfile::tempdir().unwrap();
    let mut rand = StdRand::with_seed(5);
    for id in hermes_seeds(&programs).iter().take(4) {
        let loaded = programs.get(id).unwrap();
        let points = usable_points(&loaded);
        for strategy in Strategy::ALL {
            let stmt = points[rand.below_or_zero(points.len())];
            let env = env_at(&loaded.valuation.points[&stmt]);
            let has_assignable = env.entries.iter().any(|e| e.assignable);
            let wrappable = !loaded.program.statement(stmt).ends_function;
            if (strategy == Strategy::Tcb && !has_assignable) || (strategy == Strategy::Tg && !wrappable) {
                continue;
            }
            let edit = synthesize(strategy, stmt, &env, wrappable, &mut rand);
            let text = programs.materialize(&Variant::new(id.clone(), vec![edit])).unwrap();
            let counts = line_counts(&text, dir.path());
            let lines: Vec<&str> = text.lines().collect();
            let marker = format!("/* hermes {} */", strategy.name());
            let at = lines
                .iter()
                .position(|l| l.contains(&marker))
                .unwrap_or_else(|| panic!("no {marker} in the variant")) as u32
                + 1;
            let count = |line: u32| counts.get(&line).copied();
            match strategy {
                Strategy::Fcb => {
                    assert!(count(at) > Some(0), "seed {id}: the FCB's predicate did not run");
                    if has_assignable {
                        assert_eq!(
                            count(at + 1),
                            Some(0),
                            "seed {id}: the FCB's body ran:\n{}",
                            lines[at as usize]
                        );
                    }
                }
                Strategy::Tg => {
                    assert!(count(at) > Some(0), "seed {id}: the TG's predicate did not run");
                    let guarded = (at + 1..).find(|l| counts.contains_key(l)).unwrap();
                    assert!(count(guarded) > Some(0), "seed {id}: the guarded statement did not run");
                }
                Strategy::Tcb => {
                    let line_of = |needle: &str| lines.iter().position(|l| l.starts_with(needle)).unwrap() as u32 + 1;
                    assert!(
                        count(line_of("hermes_backup = ")) > Some(0),
                        "seed {id}: the TCB's body did not run"
                    );
                    let restore = lines.iter().position(|l| l.ends_with("= hermes_backup;")).unwrap() as u32 + 1;
                    assert!(count(restore) > Some(0), "seed {id}: the TCB's restore did not run");
                }
            }
        }
    }
}
