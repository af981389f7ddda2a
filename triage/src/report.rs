//! Bug reports: findings with one fingerprint (same kind and configuration) are one bug. Each
//! bug gets a directory with its smallest reduced test, `repro.sh` showing expected against
//! actual in one command, the interestingness test, and `report.md` (compiler versions and
//! flags, fingerprint, the raw findings it absorbed).

use crate::check::{quote, Check, Symptom};
use crate::finding::FindingKind;
use crate::matrix::{describe, release};
use crate::newest::family;
use crate::verdict::{OrangeMinimization, Triaged, Verdict};
use anyhow::{Context, Result};
use ccfuzz_mutators::compiler_version::exact_version;
use ccfuzz_mutators::seed::content_hash;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// One distinct bug.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bug {
    /// Name of its directory.
    pub name: String,
    pub kind: FindingKind,
    pub configuration: String,
    pub fingerprint: String,
    /// Raw findings merged into it.
    pub findings: Vec<String>,
    /// Non-blank lines of its reduced test.
    pub lines: usize,
    /// Its findings reproduce only sometimes (not reduced).
    pub flaky: bool,
    /// Seconds triage spent on its findings.
    #[serde(default)]
    pub seconds: f64,
}

/// Groups triaged findings into bugs, rewrites `dir` with one directory per bug, and returns
/// the bugs sorted by how many findings each absorbed.
pub fn write_reports(dir: &Path, results: &[Triaged]) -> Result<Vec<Bug>> {
    let mut groups: BTreeMap<(FindingKind, String, String, bool), Vec<&Triaged>> = BTreeMap::new();
    for result in results {
        let key = match (&result.verdict, &result.fingerprint) {
            (Verdict::Reduced | Verdict::Duplicate { .. }, Some(fingerprint)) => fingerprint.clone(),
            (Verdict::Flaky { .. }, _) => format!("flaky: {}", result.check.describe()),
            _ => continue,
        };
        let flaky = matches!(result.verdict, Verdict::Flaky { .. });
        groups
            .entry((result.kind, result.configuration.clone(), key, flaky))
            .or_default()
            .push(result);
    }
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut bugs: Vec<(Bug, &Triaged)> = groups
        .into_iter()
        .map(|((kind, configuration, fingerprint, flaky), members)| {
            // A duplicate's test is its unreduced variant: the bug's test is a reduced one.
            let smallest = members
                .iter()
                .min_by_key(|m| {
                    let duplicate = matches!(m.verdict, Verdict::Duplicate { .. });
                    (duplicate, m.lines_after, m.finding.clone())
                })
                .expect("groups are not empty");
            let name = format!(
                "{}-{}-{}",
                kind.as_str(),
                slug(&configuration),
                &content_hash(format!("{configuration}|{fingerprint}").as_bytes())[..8]
            );
            let bug = Bug {
                name,
                kind,
                configuration,
                fingerprint,
                findings: members.iter().map(|m| m.finding.clone()).collect(),
                seconds: members.iter().map(|m| m.seconds).sum(),
                lines: smallest.lines_after,
                flaky,
            };
            (bug, *smallest)
        })
        .collect();
    bugs.sort_by(|a, b| {
        b.0.findings
            .len()
            .cmp(&a.0.findings.len())
            .then(a.0.name.cmp(&b.0.name))
    });
    for (bug, representative) in &bugs {
        write_bug(&dir.join(&bug.name), bug, representative)?;
    }
    let bugs: Vec<Bug> = bugs.into_iter().map(|(bug, _)| bug).collect();
    fs::write(dir.join("bugs.json"), serde_json::to_vec_pretty(&bugs)?)?;
    Ok(bugs)
}

fn slug(configuration: &str) -> String {
    configuration
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The report's line on Orange's minimization, before text reduction.
fn orange_line(m: &OrangeMinimization) -> String {
    format!(
        "\n- Orange minimization before text reduction: {} -> {} lines, {} -> {} operators, {} -> {} expressions, {} tests in {:.0} s",
        m.lines_before,
        m.lines_after,
        m.operators_before,
        m.operators_after,
        m.expressions_before,
        m.expressions_after,
        m.tests,
        m.seconds
    )
}

fn write_bug(dir: &Path, bug: &Bug, representative: &Triaged) -> Result<()> {
    fs::create_dir_all(dir)?;
    let text = fs::read_to_string(&representative.test)
        .with_context(|| format!("cannot read {}", representative.test.display()))?;
    fs::write(dir.join("test.c"), text)?;
    fs::write(dir.join("interesting.sh"), representative.check.script())?;
    let repro = dir.join("repro.sh");
    fs::write(&repro, repro_script(&representative.check))?;
    for script in [repro, dir.join("interesting.sh")] {
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755))?;
    }
    let check = &representative.check;
    let mut compilers: Vec<&str> = vec![first_word(&check.configuration), first_word(&check.guard.reference)];
    compilers.extend(check.guard.agree.iter().map(|a| first_word(a)));
    compilers.dedup();
    let versions: Vec<String> = compilers
        .iter()
        .map(|c| format!("- `{c}`: {}", exact_version(c)))
        .collect();
    let report = format!(
        "# {kind} in `{conf}`\n\n\
         - fingerprint: {fingerprint}\n\
         - symptom: {symptom}\n\
         - raw findings absorbed: {count}{flaky}\n\
         - reduced test: `test.c`, {lines} non-blank lines (from {before} lines and {edits_before} edits; {edits_after} edits kept){orange}\n\n\
         `./repro.sh` compiles `test.c` with `{conf}` and with the reference `{reference}`, prints\n\
         both results and exits 0 when the bug shows. `./interesting.sh test.c` is the test the\n\
         reduction kept true: the symptom plus the UB guard (gcc and clang UB warnings as errors,\n\
         UBSan+ASan of `{sanitizer} -O0`, agreement of {agree}).\n\n\
         ## Compilers\n\n{versions}\n\n## Flags\n\n`{conf}` (with `-w test.c -o BINARY -lm` appended)\n\n\
         ## Still a bug?\n\n{newest}\n\n## Version matrix\n\n{matrix}{pass}\n\n## Known upstream?\n\n{upstream}\n\n## Findings\n\n{findings}\n",
        kind = bug.kind.as_str(),
        conf = bug.configuration,
        fingerprint = bug.fingerprint,
        symptom = check.describe(),
        count = bug.findings.len(),
        flaky = if bug.flaky { " (flaky: not reduced)" } else { "" },
        lines = bug.lines,
        before = representative.lines_before,
        edits_before = representative.edits_before,
        edits_after = representative.edits_after,
        orange = representative.orange.as_ref().map(orange_line).unwrap_or_default(),
        reference = check.guard.reference,
        sanitizer = check.guard.clang,
        agree = check
            .guard
            .agree
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", "),
        versions = versions.join("\n"),
        newest = still_a_bug(representative),
        matrix = version_matrix(representative),
        pass = pass_line(&bug.fingerprint),
        upstream = upstream_search(bug),
        findings = bug.findings.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n"),
    );
    fs::write(dir.join("report.md"), report)?;
    fs::write(dir.join("bug.json"), serde_json::to_vec_pretty(bug)?)?;
    Ok(())
}

/// The report's lines on the newest installed compilers of the bug's family.
fn still_a_bug(representative: &Triaged) -> String {
    if representative.newest.is_empty() {
        return "No newer compiler of this family was tried (none installed, or the bug is flaky).".into();
    }
    representative
        .newest
        .iter()
        .map(|n| {
            let verdict = if n.shows { "still shows" } else { "does not show" };
            format!("- `{}`: {verdict}", n.configuration)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The report's version matrix: the reduced test under every installed version of the family.
fn version_matrix(representative: &Triaged) -> String {
    let releases: Vec<String> = representative
        .matrix
        .iter()
        .map(|entry| release(&exact_version(first_word(&entry.configuration))))
        .collect();
    describe(&representative.matrix, &releases)
}

/// The optimization the fingerprint blames, and how it was found: clang's
/// `-mllvm -opt-bisect-limit`, or gcc's enabled optimizations turned off (`-fno-…`) from the end.
fn pass_line(fingerprint: &str) -> String {
    if let Some((_, pass)) = fingerprint.rsplit_once("clang pass ") {
        format!("\n\nPass: `{pass}` (the last pass `-mllvm -opt-bisect-limit=N` lets run when the bug shows).")
    } else if let Some((_, flag)) = fingerprint.rsplit_once("gcc -f") {
        format!("\n\nPass: the one `-f{flag}` enables (`-fno-{flag}` hides the bug, with every later optimization turned off).")
    } else {
        String::new()
    }
}

/// Where to look for the bug upstream, and with which words: ccfuzz has no network to search.
fn upstream_search(bug: &Bug) -> String {
    let symptom = match bug.kind {
        FindingKind::Mismatch => "miscompilation",
        FindingKind::Crash => "crash",
        FindingKind::Hang => "hang",
    };
    let pass = bug
        .fingerprint
        .rsplit_once("pass ")
        .or_else(|| bug.fingerprint.rsplit_once("gcc -f"))
        .map(|(_, pass)| format!(" \"{pass}\""))
        .unwrap_or_default();
    match family(first_word(&bug.configuration)) {
        "clang" => format!(
            "Not searched by ccfuzz (it has no network). Search github.com/llvm/llvm-project issues for `{symptom}{pass}` (labels `miscompilation` or `crash`); the README's \"Bugs found\" records the searches made for the bugs listed there."
        ),
        "gcc" => format!(
            "GCC's bugzilla cannot be searched from this machine; search gcc.gnu.org/bugzilla for `{symptom}{pass}` before filing."
        ),
        "tcc" => "TinyCC has no issue tracker: check current TinyCC (github.com/TinyCC/tinycc mob branch, `CCFUZZ_TCC_CURRENT`) and the tinycc-devel archive.".into(),
        other => format!("No upstream tracker known to ccfuzz for `{other}`."),
    }
}

fn first_word(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// The one-command reproduction of a bug, showing expected against actual.
pub fn repro_script(check: &Check) -> String {
    let line = |c: &str| c.split_whitespace().map(quote).collect::<Vec<_>>().join(" ");
    let (conf, reference) = (line(&check.configuration), line(&check.guard.reference));
    let (ct, rt) = (check.guard.compile_timeout, check.guard.run_timeout);
    let header = format!(
        "#!/bin/sh\n# {symptom} of `{c}` on test.c. Exits 0 when the bug shows, 1 when not.\n\
         cd \"$(dirname \"$0\")\" || exit 2\nt=$(mktemp -d) || exit 2\ntrap 'rm -rf \"$t\"' EXIT\nexport TMPDIR=\"$t\"\n",
        symptom = check.describe(),
        c = check.configuration,
    );
    let body = match &check.symptom {
        Symptom::Mismatch(_) => format!(
            "timeout -s KILL {ct} {reference} -w test.c -o \"$t/expected\" -lm || exit 2\n\
             timeout -s KILL {ct} {conf} -w test.c -o \"$t/actual\" -lm || exit 2\n\
             (cd \"$t\" && timeout -s KILL {rt} ./expected > expected.out 2>&1); es=$?\n\
             (cd \"$t\" && timeout -s KILL {rt} ./actual > actual.out 2>&1); as=$?\n\
             echo \"expected ({r}): exit status $es, output:\"; cat \"$t/expected.out\"\n\
             echo \"actual ({c}): exit status $as, output:\"; cat \"$t/actual.out\"\n\
             if [ \"$es\" -eq \"$as\" ] && cmp -s \"$t/expected.out\" \"$t/actual.out\"; then echo \"not reproduced\"; exit 1; fi\n\
             echo \"reproduced\"; exit 0\n",
            r = check.guard.reference,
            c = check.configuration,
        ),
        Symptom::Crash { .. } | Symptom::Hang => format!(
            "timeout -s KILL {ct} {conf} -w test.c -o \"$t/actual\" -lm 2> \"$t/stderr\"; status=$?\n\
             echo \"{c} exits with status $status; stderr:\"; head -30 \"$t/stderr\"\n\
             CCFUZZ_NO_GUARD=1 sh ./interesting.sh test.c && {{ echo \"reproduced: {symptom}\"; exit 0; }}\n\
             echo \"not reproduced\"; exit 1\n",
            c = check.configuration,
            symptom = check.describe(),
        ),
    };
    format!("{header}{body}")
}

/// The table `ccfuzz triage` prints: one bug a line, most findings first.
pub fn table(bugs: &[Bug]) -> String {
    let mut out = format!(
        "{:>8}  {:<9} {:<22} {:>6} {:>9}  {}\n",
        "findings", "kind", "configuration", "lines", "triage s", "fingerprint"
    );
    for bug in bugs {
        out += &format!(
            "{:>8}  {:<9} {:<22} {:>6} {:>9.0}  {}{}\n",
            bug.findings.len(),
            bug.kind.as_str(),
            bug.configuration,
            bug.lines,
            bug.seconds,
            bug.fingerprint,
            if bug.flaky { " [flaky]" } else { "" }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::{Guard, Misbehaviour};

    fn triaged(dir: &Path, name: &str, fingerprint: &str, lines: usize, verdict: Verdict) -> Triaged {
        let test = dir.join(format!("{name}.c"));
        fs::write(&test, "int main(void) { return 0; }\n".repeat(lines)).unwrap();
        Triaged {
            finding: name.into(),
            kind: FindingKind::Mismatch,
            configuration: "tcc".into(),
            verdict,
            check: Check {
                configuration: "tcc".into(),
                symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
                guard: Guard {
                    reference: "gcc -O0".into(),
                    agree: vec!["clang -O0".into()],
                    clang: "clang".into(),
                    compile_timeout: 60,
                    run_timeout: 10,
                },
                prototypes: false,
            },
            edits_before: 4,
            edits_after: 1,
            lines_before: 1500,
            lines_after: lines,
            fingerprint: Some(fingerprint.into()),
            cheap_fingerprint: None,
            reason: None,
            test,
            seconds: 1.0,
            orange: None,
            newest: Vec::new(),
            matrix: Vec::new(),
        }
    }

    #[test]
    fn the_pass_line_names_how_the_pass_was_found() {
        assert!(pass_line("wrong output: clang pass LoopVectorizePass").contains("`LoopVectorizePass`"));
        assert!(pass_line("wrong output: gcc -ftree-vrp").contains("`-fno-tree-vrp` hides the bug"));
        assert_eq!(pass_line("crash: internal compiler error"), "");
    }

    #[test]
    fn findings_with_one_fingerprint_are_one_bug_with_the_smallest_test() {
        let dir = tempfile::tempdir().unwrap();
        let results = vec![
            triaged(dir.path(), "a", "wrong output: X", 30, Verdict::Reduced),
            triaged(dir.path(), "b", "wrong output: Y", 12, Verdict::Reduced),
            triaged(dir.path(), "c", "wrong output: X", 9, Verdict::Reduced),
            triaged(dir.path(), "d", "-", 1500, Verdict::Flaky { shown: 1, runs: 3 }),
            triaged(dir.path(), "e", "-", 1500, Verdict::RejectedByGuard),
        ];
        let bugs = write_reports(&dir.path().join("bugs"), &results).unwrap();
        let summary: Vec<(usize, &str, usize, bool)> = bugs
            .iter()
            .map(|b| (b.findings.len(), b.fingerprint.as_str(), b.lines, b.flaky))
            .collect();
        assert_eq!(summary[0], (2, "wrong output: X", 9, false));
        assert_eq!(bugs[0].findings, vec!["a".to_string(), "c".to_string()]);
        assert_eq!(summary.len(), 3, "{summary:?}");
        assert!(summary.iter().any(|s| s.3), "the flaky finding is reported as such");
        let bug_dir = dir.path().join("bugs").join(&bugs[0].name);
        assert_eq!(fs::read_to_string(bug_dir.join("test.c")).unwrap().lines().count(), 9);
        let report = fs::read_to_string(bug_dir.join("report.md")).unwrap();
        assert!(report.contains("raw findings absorbed: 2"), "{report}");
        assert!(report.contains("tcc version"), "{report}");
        assert!(
            report.contains("## Version matrix\n\nNot run: only gcc and clang bugs"),
            "{report}"
        );
        let table = table(&bugs);
        assert!(table.lines().nth(1).unwrap().trim_start().starts_with("2 "), "{table}");
    }
}
