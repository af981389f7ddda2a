//! The workspace crates each crate depends on, read from the members' `Cargo.toml` files, and
//! the dependencies a table of allowed ones does not list.

use std::collections::BTreeMap;

/// A manifest's package name and the dependencies of every dependency table (normal, dev,
/// build, target-specific), by the name they are declared under.
pub fn package_and_dependencies(manifest: &str) -> (String, Vec<String>) {
    let mut package = String::new();
    let mut dependencies = Vec::new();
    let mut section = String::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            section = line.trim_matches(|c| c == '[' || c == ']').to_string();
            // A `[dependencies.name]` table names its dependency in the header.
            if let Some((_, name)) = section.split_once("dependencies.") {
                dependencies.push(name.to_string());
            }
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let key = key.trim();
        if section == "package" && key == "name" {
            package = value.trim().trim_matches('"').to_string();
        } else if section.ends_with("dependencies") && !key.starts_with('#') {
            dependencies.push(key.split('.').next().unwrap_or(key).trim_matches('"').to_string());
        }
    }
    (package, dependencies)
}

/// The workspace dependencies of each member that `allowed` does not list for it (a member
/// missing from `allowed` may depend on no other member).
pub fn forbidden_dependencies(manifests: &[String], allowed: &[(&str, &[&str])]) -> Vec<String> {
    let members: BTreeMap<String, Vec<String>> = manifests.iter().map(|m| package_and_dependencies(m)).collect();
    let mut found = Vec::new();
    for (package, dependencies) in &members {
        let may: &[&str] = allowed.iter().find(|(p, _)| p == package).map_or(&[], |(_, may)| may);
        for dependency in dependencies {
            if members.contains_key(dependency) && dependency != package && !may.contains(&dependency.as_str()) {
                found.push(format!("{package} depends on {dependency}"));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    const TRIAGE: &str = "[package]\nname = \"ccfuzz-triage\"\n\n[dependencies]\nanyhow.workspace = true\n\
                          ccfuzz-mutators.workspace = true\n\n[dev-dependencies]\nccfuzz = { path = \"../fuzzer\" }\n";
    const FUZZER: &str = "[package]\nname = \"ccfuzz\"\n\n[dependencies]\nccfuzz-triage = { workspace = true }\n";
    const MUTATORS: &str = "[package]\nname = \"ccfuzz-mutators\"\n\n[dependencies.serde]\nversion = \"1\"\n";

    #[test]
    fn dependencies_of_every_table_are_read() {
        let (package, dependencies) = package_and_dependencies(TRIAGE);
        assert_eq!(package, "ccfuzz-triage");
        assert_eq!(dependencies, ["anyhow", "ccfuzz-mutators", "ccfuzz"]);
        assert_eq!(package_and_dependencies(MUTATORS).1, ["serde"]);
    }

    #[test]
    fn a_dependency_the_table_does_not_allow_is_reported_even_a_dev_dependency() {
        let manifests = [TRIAGE, FUZZER, MUTATORS].map(String::from);
        let allowed: [(&str, &[&str]); 2] = [("ccfuzz-triage", &["ccfuzz-mutators"]), ("ccfuzz", &["ccfuzz-triage"])];
        assert_eq!(
            forbidden_dependencies(&manifests, &allowed),
            ["ccfuzz-triage depends on ccfuzz"]
        );
        assert!(forbidden_dependencies(
            &manifests,
            &[("ccfuzz-triage", &["ccfuzz-mutators", "ccfuzz"]), allowed[1]]
        )
        .is_empty());
    }
}
