//! Tidy: the structural rules of the workspace, checked by reading its sources and manifests
//! (no compiler, no campaign). The layering of the crates and of the fuzzer crate's folders
//! (the tables below, which ARCHITECTURE.md shows), no module cycle in any crate, a doc comment
//! first in every Rust file, no file over 600 lines, no two source files of one name, and no line
//! that speaks of how the project was built or of a development machine. The exceptions that
//! stand today are listed by name, each with the change that removes it; none may be added.

#[path = "tidy/manifests.rs"]
mod manifests;
#[path = "tidy/module_graph.rs"]
mod module_graph;
#[path = "tidy/rust_paths.rs"]
mod rust_paths;

use module_graph::{cycles, folder, forbidden_extern_paths, imports, layering_violations, module_of_file, Source};
use std::fs;
use std::path::{Path, PathBuf};

/// The workspace crates each crate may depend on (normal, dev and build dependencies alike).
/// The end-to-end tests may use every crate.
const CRATE_LAYERS: &[(&str, &[&str])] = &[
    ("ccfuzz-semantics", &[]),
    ("ccfuzz-observers", &[]),
    ("ccfuzz-orange", &["ccfuzz-semantics"]),
    ("ccfuzz-mutators", &["ccfuzz-semantics"]),
    (
        "ccfuzz-triage",
        &["ccfuzz-semantics", "ccfuzz-orange", "ccfuzz-mutators"],
    ),
    (
        "ccfuzz",
        &[
            "ccfuzz-semantics",
            "ccfuzz-orange",
            "ccfuzz-mutators",
            "ccfuzz-observers",
            "ccfuzz-triage",
        ],
    ),
    (
        "ccfuzz-tests",
        &[
            "ccfuzz-semantics",
            "ccfuzz-orange",
            "ccfuzz-mutators",
            "ccfuzz-observers",
            "ccfuzz-triage",
            "ccfuzz",
        ],
    ),
];

/// The fuzzer crate's top-level folders (and top-level files), lowest row first: a module
/// imports modules of its own folder and of lower rows only. `ops` and `process` are not
/// pipeline stages but what the stages stand on; the stages follow the pipeline.
const FUZZER_LAYERS: &[&[&str]] = &[
    // Which compilers and configurations.
    &["config"],
    // This process's own services: stop flag, heap, usage figures, status line, user statistics,
    // background triage, orphaned shared memory.
    &["ops"],
    // Child processes under limits; one configuration compiling one program, its binary run.
    &["process"],
    &["seeds"],
    &["exec"],
    &["judge"],
    // Seeds and findings announced to other cores and nodes.
    &["sharing"],
    &["mcmc"],
    &["campaign"],
    &["measure"],
    &["cli"],
];

/// Where the fuzzer crate may name the triage crate, the last stage: the objective writes the
/// `Finding` record triage reads, the bug-rate study reads triage's bugs, and the command line
/// runs triage. Seed vetting and the rest may not.
const TRIAGE_USERS: &[(&str, &str)] = &[
    ("judge", "ccfuzz_triage::finding"),
    ("measure", "ccfuzz_triage"),
    ("cli", "ccfuzz_triage"),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// Files under `dir` whose names end with one of `extensions`, skipping build output, hidden
/// directories and the top-level directories `.gitignore` names (campaign and bench output).
fn files(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let ignored: Vec<String> = fs::read_to_string(workspace().join(".gitignore"))
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().trim_matches('/').to_string())
        .filter(|l| !l.is_empty())
        .collect();
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let top_level_ignored = dir == workspace() && ignored.contains(&name);
            if path.is_dir() {
                if !name.starts_with('.') && name != "target" && !top_level_ignored {
                    pending.push(path);
                }
            } else if extensions.iter().any(|e| name.ends_with(e)) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn relative(path: &Path) -> String {
    path.strip_prefix(workspace()).unwrap_or(path).display().to_string()
}

/// The sources of a crate's `src/`, each as its module.
fn crate_sources(crate_dir: &str) -> Vec<Source> {
    let src = workspace().join(crate_dir).join("src");
    files(&src, &[".rs"])
        .into_iter()
        .filter(|f| f.file_name().unwrap() != "main.rs")
        .map(|f| Source {
            module: module_of_file(f.strip_prefix(&src).unwrap()),
            text: fs::read_to_string(&f).unwrap(),
        })
        .collect()
}

fn members() -> Vec<String> {
    let manifest = fs::read_to_string(workspace().join("Cargo.toml")).unwrap();
    let line = manifest
        .lines()
        .find(|l| l.trim_start().starts_with("members"))
        .expect("workspace members");
    line.split('"').skip(1).step_by(2).map(String::from).collect()
}

#[test]
fn fuzzer_modules_form_no_cycle_and_follow_the_layering() {
    let found = imports(&crate_sources("fuzzer"));
    let violations = layering_violations(&found, FUZZER_LAYERS);
    assert!(
        violations.is_empty(),
        "the fuzzer crate's layering is broken:\n{}",
        violations.join("\n")
    );
    let edges: Vec<(String, String)> = found.iter().map(|i| (i.from.clone(), i.to.clone())).collect();
    let module_cycles = cycles(&edges);
    assert!(
        module_cycles.is_empty(),
        "module cycles in the fuzzer crate: {module_cycles:?}"
    );
    let folder_edges: Vec<(String, String)> = edges
        .iter()
        .map(|(from, to)| (folder(from).to_string(), folder(to).to_string()))
        .collect();
    let folder_cycles = cycles(&folder_edges);
    assert!(
        folder_cycles.is_empty(),
        "folder cycles in the fuzzer crate: {folder_cycles:?}"
    );
}

#[test]
fn no_crate_has_a_module_cycle() {
    for member in members().iter().filter(|m| m.as_str() != "fuzzer") {
        let edges: Vec<(String, String)> = imports(&crate_sources(member))
            .into_iter()
            .map(|i| (i.from, i.to))
            .collect();
        let found = cycles(&edges);
        assert!(found.is_empty(), "module cycles in {member}: {found:?}");
    }
}

#[test]
fn the_fuzzer_names_triage_only_where_allowed() {
    let found = forbidden_extern_paths(&crate_sources("fuzzer"), "ccfuzz_triage", TRIAGE_USERS);
    assert!(
        found.is_empty(),
        "the triage crate named outside {TRIAGE_USERS:?}:\n{}",
        found.join("\n")
    );
}

#[test]
fn workspace_crates_depend_only_on_lower_ones() {
    let manifests: Vec<String> = members()
        .iter()
        .map(|m| fs::read_to_string(workspace().join(m).join("Cargo.toml")).unwrap())
        .collect();
    let found = manifests::forbidden_dependencies(&manifests, CRATE_LAYERS);
    assert!(
        found.is_empty(),
        "dependencies outside the crate layering:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_rust_file_starts_with_a_doc_comment_and_has_at_most_600_lines() {
    let mut found = Vec::new();
    for file in files(&workspace(), &[".rs"]) {
        let text = fs::read_to_string(&file).unwrap();
        if !text.starts_with("//!") {
            found.push(format!("{} does not start with a `//!` doc comment", relative(&file)));
        }
        let lines = text.lines().count();
        if lines > 600 {
            found.push(format!("{} has {lines} lines (at most 600)", relative(&file)));
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Source files (the crates' `src/`; the end-to-end tests are named after what they test) have
/// distinct names, except the names Rust gives a role: `mod.rs`, `lib.rs`, `main.rs`, `tests.rs`.
#[test]
fn source_file_names_are_distinct() {
    let mut seen: Vec<(String, PathBuf)> = Vec::new();
    let mut found = Vec::new();
    for member in members() {
        for file in files(&workspace().join(member).join("src"), &[".rs"]) {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            if matches!(name.as_str(), "mod.rs" | "lib.rs" | "main.rs" | "tests.rs") {
                continue;
            }
            if let Some((_, other)) = seen.iter().find(|(n, _)| *n == name) {
                found.push(format!("{} and {}", relative(other), relative(&file)));
            }
            seen.push((name, file));
        }
    }
    assert!(found.is_empty(), "files of the same name:\n{}", found.join("\n"));
}

/// The rows of the Markdown table that follows `heading` in `text`, as their cells.
fn table_after<'t>(text: &'t str, heading: &str) -> Vec<Vec<&'t str>> {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("ARCHITECTURE.md has no `{heading}`"));
    text[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split('|').map(str::trim).collect())
        .collect()
}

/// ARCHITECTURE.md shows the layering this test enforces: the same crates with the same
/// dependencies, the same folders in the same order.
#[test]
fn architecture_shows_the_layering_the_test_enforces() {
    let text = fs::read_to_string(workspace().join("ARCHITECTURE.md")).unwrap();
    let folders: Vec<String> = table_after(&text, "**What each folder of the fuzzer crate may import**")
        .iter()
        .map(|row| {
            row[1]
                .trim_matches('`')
                .trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_string()
        })
        .collect();
    let enforced: Vec<&str> = FUZZER_LAYERS.iter().flat_map(|row| row.iter().copied()).collect();
    assert_eq!(
        folders, enforced,
        "ARCHITECTURE.md's folder table and FUZZER_LAYERS differ"
    );
    let crates = table_after(&text, "**What each crate may depend on**");
    let shown: Vec<(String, Vec<String>)> = crates
        .iter()
        .map(|row| {
            let names = row[1].split(" (").next().unwrap();
            let dependencies = match names {
                "no workspace crate" => Vec::new(),
                "every crate" => members_but(row[0].trim_matches('`')),
                names => names.split(", ").map(|n| format!("ccfuzz-{n}")).collect(),
            };
            (row[0].trim_matches('`').to_string(), sorted(dependencies))
        })
        .collect();
    let enforced: Vec<(String, Vec<String>)> = CRATE_LAYERS
        .iter()
        .map(|(name, may)| (name.to_string(), sorted(may.iter().map(|m| m.to_string()).collect())))
        .collect();
    assert_eq!(shown, enforced, "ARCHITECTURE.md's crate table and CRATE_LAYERS differ");
}

fn sorted(mut names: Vec<String>) -> Vec<String> {
    names.sort();
    names
}

/// The package names of the workspace's crates other than `package`.
fn members_but(package: &str) -> Vec<String> {
    members()
        .iter()
        .map(|m| {
            manifests::package_and_dependencies(&fs::read_to_string(workspace().join(m).join("Cargo.toml")).unwrap()).0
        })
        .filter(|name| name != package)
        .collect()
}

/// Whether a line names the stretches of work the project was built in, or a path of the
/// machine it was built on: the words are assembled so that this file does not match itself.
fn speaks_of_its_making(line: &str) -> bool {
    let line = line.to_lowercase();
    let word = ["sess", "ion"].concat();
    let machine_path = ["/wor", "k/"].concat();
    let is_word_char = |c: char| c.is_ascii_alphanumeric() || c == '_';
    line.contains(&machine_path)
        || line.match_indices(&word).any(|(at, _)| {
            let before = line[..at].chars().next_back();
            let mut after = line[at + word.len()..].chars();
            let next = match after.next() {
                Some('s') => after.next(),
                other => other,
            };
            !before.is_some_and(is_word_char) && !next.is_some_and(is_word_char)
        })
}

#[test]
fn no_line_speaks_of_how_the_project_was_built() {
    let mut found = Vec::new();
    for file in files(&workspace(), &[".md", ".rs", ".sh", ".py"]) {
        let Ok(text) = fs::read_to_string(&file) else { continue };
        for (number, line) in text.lines().enumerate() {
            if speaks_of_its_making(line) {
                found.push(format!("{}:{}: {}", relative(&file), number + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "lines that speak of how the project was built:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_making_check_matches_whole_words_and_machine_paths() {
    let word = ["Sess", "ion"].concat();
    assert!(speaks_of_its_making(&format!("the nineteenth {word}'s run")));
    assert!(speaks_of_its_making(&format!("two {}s at once", word.to_lowercase())));
    assert!(speaks_of_its_making(&["see ", "/wor", "k/main/README.md"].concat()));
    assert!(!speaks_of_its_making(&format!(
        "a {}ize or {}_id",
        word,
        word.to_lowercase()
    )));
    assert!(!speaks_of_its_making("the working tree"));
}
