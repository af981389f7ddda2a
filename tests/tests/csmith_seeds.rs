//! The program model and Orion on hundreds of real csmith seeds: normalization keeps each
//! program's meaning, re-emission is exact, and every Orion variant prints its seed's output.

mod common;

use ccfuzz::compile::compile_and_run;
use ccfuzz::config::CompilerConfig;
use ccfuzz_mutators::ctype::CType;
use ccfuzz_mutators::edit::Edit;
use ccfuzz_mutators::input::Variant;
use ccfuzz_mutators::model::Variable;
use ccfuzz_mutators::orion::orion_prune;
use ccfuzz_mutators::programs::Programs;
use ccfuzz_mutators::seed::{SeedId, SeedStore};
use ccfuzz_observers::ConfigOutcome;
use common::*;
use libafl_bolts::rands::StdRand;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

const SEEDS: usize = 200;

/// A store of at least 200 csmith seeds, profiled once per test run by two `ccfuzz seeds`
/// processes in parallel.
fn store() -> &'static (tempfile::TempDir, Vec<SeedId>) {
    static STORE: OnceLock<(tempfile::TempDir, Vec<SeedId>)> = OnceLock::new();
    STORE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let config = write_config(dir.path(), &["gcc -O0"], 60.0);
        let store = dir.path().join("store");
        let workers: Vec<_> = [1, 10_001]
            .iter()
            .map(|first| {
                ccfuzz()
                    .args([
                        "seeds",
                        "--csmith",
                        "125",
                        "--first-seed",
                        &first.to_string(),
                        "--store",
                    ])
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
            "only {} of 250 csmith programs were accepted",
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
                Duration::from_secs(120),
                Duration::from_secs(20),
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
fn seeds_keep_their_meaning_and_re_emit_exactly() {
    let ids = &store().1[..SEEDS];
    let failures = on_two_threads(ids, |programs, id, dir| {
        let loaded = programs.get(id).unwrap();
        let emitted = programs.materialize(&Variant::of_seed(id.clone())).unwrap();
        if emitted != loaded.seed.text {
            return Err(format!("seed {id} does not re-emit to its own text"));
        }
        // csmith declares its globals (`static int32_t g_1` is an int) after its runtime's
        // helpers and before its own functions: main, the last function, sees them all.
        let program = &loaded.program;
        let ints = |vars: Vec<&Variable>| vars.iter().filter(|v| matches!(v.ty, CType::Int(_))).count();
        let globals = ints(
            program.scopes[0]
                .vars
                .iter()
                .filter(|v| v.name.starts_with("g_"))
                .collect(),
        );
        if globals == 0 {
            return Err(format!("seed {id}: no integer global in the file scope"));
        }
        let main_body = *program.roots.last().unwrap();
        for stmt in program.statements.iter().filter(|s| s.id >= main_body) {
            if ints(program.vars_in_scope(stmt.id)) < globals {
                return Err(format!("seed {id}: statement {} does not see the globals", stmt.id));
            }
        }
        expect_seed_output(programs, id, &emitted, dir, "re-emitted text")?;
        // The normalized seed prints what csmith's original program prints.
        let csmith_args: Vec<&str> = loaded.seed.profile.origin.split_whitespace().skip(1).collect();
        let original = std::process::Command::new("csmith")
            .args(&csmith_args)
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
            Duration::from_secs(120),
            Duration::from_secs(20),
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
        let text = programs
            .materialize(&Variant {
                seed: id.clone(),
                edits,
            })
            .unwrap();
        if text == loaded.seed.text {
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
