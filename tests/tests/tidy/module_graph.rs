//! One crate's module graph from its sources: which file module names which through `crate::`,
//! `super::`, `self::` and child-module paths (re-exports followed to the module that defines
//! the item), its cycles, and the imports that break a layering of its top-level folders.

use crate::rust_paths::{file_paths, FilePaths, NamedPath};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

/// A module's path from the crate root (`["exec", "executor"]`; the root is empty).
pub type Module = Vec<String>;

/// One source file: its module and text.
pub struct Source {
    pub module: Module,
    pub text: String,
}

/// The module of a file at `relative` to the crate's `src/`.
pub fn module_of_file(relative: &Path) -> Module {
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    let file = parts.pop().unwrap_or_default();
    let stem = file.trim_end_matches(".rs");
    if !matches!(stem, "mod" | "lib" | "main") {
        parts.push(stem.to_string());
    }
    parts
}

/// A module naming another, at a line of the first.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Import {
    pub from: String,
    pub to: String,
    pub line: usize,
}

/// `a::b` for a module, `crate` for the root.
pub fn name(module: &[String]) -> String {
    if module.is_empty() {
        "crate".to_string()
    } else {
        module.join("::")
    }
}

/// The top-level folder (or top-level file) a module belongs to.
pub fn folder(module_name: &str) -> &str {
    module_name.split("::").next().unwrap_or(module_name)
}

struct Crate {
    modules: BTreeSet<Module>,
    /// Per module, the names its top-level `use`s bring into scope, as absolute paths.
    scopes: HashMap<Module, HashMap<String, Vec<String>>>,
}

impl Crate {
    /// The absolute segments of `path` named in `module`, if it names something of this crate.
    fn absolute(module: &[String], declared: &[String], path: &NamedPath) -> Option<Vec<String>> {
        let segments = &path.segments;
        let here: Vec<String> = module.iter().chain(&path.inline).cloned().collect();
        match segments[0].as_str() {
            "crate" => Some(segments[1..].to_vec()),
            "self" => Some(here.into_iter().chain(segments[1..].iter().cloned()).collect()),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let base = here.len().checked_sub(ups)?;
                Some(here[..base].iter().chain(&segments[ups..]).cloned().collect())
            }
            child if declared.iter().any(|d| d == child) => {
                Some(module.iter().chain(segments.iter()).cloned().collect())
            }
            _ => None,
        }
    }

    /// The file module that defines what `segments` names: the deepest module on the path,
    /// through the re-exports of the modules it passes.
    fn resolve(&self, segments: &[String], hops: usize) -> Module {
        let mut module = Vec::new();
        for (k, segment) in segments.iter().enumerate() {
            let mut next = module.clone();
            next.push(segment.clone());
            if self.modules.contains(&next) {
                module = next;
                continue;
            }
            if let Some(target) = self.scopes.get(&module).and_then(|scope| scope.get(segment)) {
                let mut target = target.clone();
                target.extend(segments[k + 1..].iter().cloned());
                if hops < 8 && target != segments {
                    return self.resolve(&target, hops + 1);
                }
            }
            break;
        }
        module
    }
}

/// Every import between two distinct file modules of the crate, except a module's imports of its
/// own ancestors: a sub-module is part of its parent, split into a file of its own, and uses the
/// parent's items as the parent's own code would.
pub fn imports(sources: &[Source]) -> Vec<Import> {
    let parsed: Vec<(&Module, FilePaths)> = sources.iter().map(|s| (&s.module, file_paths(&s.text))).collect();
    let mut krate = Crate {
        modules: sources.iter().map(|s| s.module.clone()).collect(),
        scopes: HashMap::new(),
    };
    for (module, paths) in &parsed {
        let scope = krate.scopes.entry((*module).clone()).or_default();
        for used in paths.uses.iter().filter(|u| u.inline.is_empty()) {
            if let (Some(alias), Some(target)) = (
                &used.imported_as,
                Crate::absolute(module, &paths.declared_modules, used),
            ) {
                scope.insert(alias.clone(), target);
            }
        }
    }
    let mut found = BTreeSet::new();
    for (module, paths) in &parsed {
        for path in paths.uses.iter().chain(&paths.paths) {
            let Some(target) = Crate::absolute(module, &paths.declared_modules, path) else {
                continue;
            };
            let to = krate.resolve(&target, 0);
            if !to.is_empty() && !module.starts_with(&to) {
                found.insert(Import {
                    from: name(module),
                    to: name(&to),
                    line: path.line,
                });
            }
        }
    }
    // One import per pair of modules, at its first line.
    let mut first: BTreeMap<(String, String), usize> = BTreeMap::new();
    for import in found {
        first.entry((import.from, import.to)).or_insert(import.line);
    }
    first
        .into_iter()
        .map(|((from, to), line)| Import { from, to, line })
        .collect()
}

/// The cycles of a graph: its strongly connected components of more than one node, each sorted.
pub fn cycles(edges: &[(String, String)]) -> Vec<Vec<String>> {
    let mut next: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in edges {
        next.entry(from).or_default().push(to);
        next.entry(to).or_default();
    }
    // Kosaraju: finish order on the graph, then components on the reversed graph.
    let mut order = Vec::new();
    let mut seen = BTreeSet::new();
    for &start in next.keys() {
        if !seen.insert(start) {
            continue;
        }
        let mut stack = vec![(start, 0)];
        while let Some((node, child)) = stack.pop() {
            if let Some(&to) = next[node].get(child) {
                stack.push((node, child + 1));
                if seen.insert(to) {
                    stack.push((to, 0));
                }
            } else {
                order.push(node);
            }
        }
    }
    let mut previous: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, tos) in &next {
        for to in tos {
            previous.entry(to).or_default().push(from);
        }
    }
    let mut assigned = BTreeSet::new();
    let mut components = Vec::new();
    for &root in order.iter().rev() {
        if !assigned.insert(root) {
            continue;
        }
        let mut component = vec![root.to_string()];
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            for &from in previous.get(node).into_iter().flatten() {
                if assigned.insert(from) {
                    component.push(from.to_string());
                    stack.push(from);
                }
            }
        }
        if component.len() > 1 {
            component.sort();
            components.push(component);
        }
    }
    components.sort();
    components
}

/// The imports that break `layers` (lowest first): a module may import its own folder and the
/// folders of lower rows only. A folder in no row is reported too, so a new folder gets a place.
pub fn layering_violations(imports: &[Import], layers: &[&[&str]]) -> Vec<String> {
    let row = |folder: &str| layers.iter().position(|row| row.contains(&folder));
    let mut found = Vec::new();
    for import in imports {
        let (from, to) = (folder(&import.from), folder(&import.to));
        if from == to || import.from == "crate" {
            continue;
        }
        match (row(from), row(to)) {
            (Some(a), Some(b)) if a > b => {}
            (Some(_), Some(_)) => found.push(format!(
                "{} (line {}) imports {}: folder `{from}` may not import `{to}` (same or higher row of the layering)",
                import.from, import.line, import.to
            )),
            (None, _) => found.push(format!("folder `{from}` is in no row of the layering table")),
            (_, None) => found.push(format!("folder `{to}` is in no row of the layering table")),
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Paths to crate `extern_crate` named in modules whose folder may not name it: `allowed` lists
/// (folder, path prefix) pairs, such as `("judge", "ccfuzz_triage::finding")`.
pub fn forbidden_extern_paths(sources: &[Source], extern_crate: &str, allowed: &[(&str, &str)]) -> Vec<String> {
    let mut found = Vec::new();
    for source in sources {
        let module = name(&source.module);
        let paths = file_paths(&source.text);
        for path in paths.uses.iter().chain(&paths.paths) {
            if path.segments[0] != extern_crate {
                continue;
            }
            let joined = path.segments.join("::");
            let permitted = allowed.iter().any(|(folder_name, prefix)| {
                folder(&module) == *folder_name && (joined == *prefix || joined.starts_with(&format!("{prefix}::")))
            });
            if !permitted {
                found.push(format!("{module} (line {}) names {joined}", path.line));
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(file: &str, text: &str) -> Source {
        Source {
            module: module_of_file(Path::new(file)),
            text: text.to_string(),
        }
    }

    fn pairs(imports: &[Import]) -> Vec<(String, String)> {
        imports.iter().map(|i| (i.from.clone(), i.to.clone())).collect()
    }

    #[test]
    fn imports_follow_reexports_to_the_defining_module() {
        let sources = [
            source("lib.rs", "pub mod a;\npub mod b;"),
            source(
                "a/mod.rs",
                "mod inner;\npub use inner::Thing;\npub use inner as old_name;",
            ),
            source("a/inner.rs", "pub struct Thing;"),
            source("b/mod.rs", "use crate::a::Thing;\nfn f() { crate::a::old_name::g(); }"),
        ];
        let found = pairs(&imports(&sources));
        assert!(found.contains(&("b".into(), "a::inner".into())), "{found:?}");
        assert!(!found.iter().any(|(from, to)| from == "b" && to == "a"), "{found:?}");
    }

    #[test]
    fn a_cycle_through_super_and_child_paths_is_found_but_not_a_child_using_its_parent() {
        let sources = [
            source("lib.rs", "pub mod x;"),
            source("x/mod.rs", "mod y;\nmod z;\nfn f() { y::g(); }\npub struct S;"),
            source(
                "x/y.rs",
                "use super::S;\n#[cfg(test)]\nmod tests { fn t() { super::super::z::h(); } }",
            ),
            source("x/z.rs", "use crate::x::y::g;"),
        ];
        let edges = pairs(&imports(&sources));
        assert!(!edges.contains(&("x::y".into(), "x".into())), "{edges:?}");
        assert_eq!(cycles(&edges), [vec!["x::y".to_string(), "x::z".to_string()]]);
    }

    #[test]
    fn an_acyclic_graph_has_no_cycle() {
        let edges = [("a", "b"), ("b", "c"), ("a", "c")].map(|(a, b)| (a.to_string(), b.to_string()));
        assert!(cycles(&edges).is_empty());
    }

    #[test]
    fn an_import_of_a_higher_row_or_an_unplaced_folder_breaks_the_layering() {
        let sources = [
            source("low/mod.rs", "pub mod a;"),
            source("high/mod.rs", "pub mod b;"),
            source("low/a.rs", "use crate::high::b::B;"),
            source("high/b.rs", "use crate::low::a::A;\npub struct B;"),
            source("stray.rs", "use crate::low::a::A;"),
        ];
        let layers: [&[&str]; 2] = [&["low"], &["high"]];
        let violations = layering_violations(&imports(&sources), &layers);
        assert_eq!(violations.len(), 2, "{violations:?}");
        assert!(violations[0].contains("`stray` is in no row"), "{violations:?}");
        assert!(
            violations[1].contains("low::a (line 1) imports high::b"),
            "{violations:?}"
        );
    }

    #[test]
    fn an_extern_crate_is_named_only_where_allowed() {
        let sources = [
            source("seeds/vetting.rs", "use ccfuzz_triage::check::flags;"),
            source("judge/objective.rs", "pub use ccfuzz_triage::finding::Finding;"),
            source("judge/other.rs", "fn f() { ccfuzz_triage::report::table(); }"),
        ];
        let found = forbidden_extern_paths(&sources, "ccfuzz_triage", &[("judge", "ccfuzz_triage::finding")]);
        assert_eq!(
            found,
            [
                "seeds::vetting (line 1) names ccfuzz_triage::check::flags",
                "judge::other (line 1) names ccfuzz_triage::report::table"
            ]
        );
    }
}
