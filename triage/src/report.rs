//! Bug reports: findings with one fingerprint (same kind and configuration) are one bug. Each
//! bug gets a directory with its smallest reduced test, `repro.sh` showing expected against
//! actual in one command, the interestingness test, and `report.md` (compiler versions and
//! flags, fingerprint, the raw findings it absorbed).

use crate::check::{quote, Check, Symptom};
use crate::finding::FindingKind;
use crate::pipeline::{Triaged, Verdict};
use anyhow::{Context, Result};
use ccfuzz_mutators::seed::content_hash;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

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
}

/// Groups triaged findings into bugs, rewrites `dir` with one directory per bug, and returns
/// the bugs sorted by how many findings each absorbed.
pub fn write_reports(dir: &Path, results: &[Triaged]) -> Result<Vec<Bug>> {
    let mut groups: BTreeMap<(FindingKind, String, String, bool), Vec<&Triaged>> = BTreeMap::new();
    for result in results {
        let key = match (&result.verdict, &result.fingerprint) {
            (Verdict::Reduced, Some(fingerprint)) => fingerprint.clone(),
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
            let smallest = members
                .iter()
                .min_by_key(|m| (m.lines_after, m.finding.clone()))
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
        .map(|c| format!("- `{c}`: {}", compiler_version(c)))
        .collect();
    let report = format!(
        "# {kind} in `{conf}`\n\n\
         - fingerprint: {fingerprint}\n\
         - symptom: {symptom}\n\
         - raw findings absorbed: {count}{flaky}\n\
         - reduced test: `test.c`, {lines} non-blank lines (from {before} lines and {edits_before} edits; {edits_after} edits kept)\n\n\
         `./repro.sh` compiles `test.c` with `{conf}` and with the reference `{reference}`, prints\n\
         both results and exits 0 when the bug shows. `./interesting.sh test.c` is the test the\n\
         reduction kept true: the symptom plus the UB guard (gcc and clang UB warnings as errors,\n\
         gcc UBSan+ASan at -O0, agreement of {agree}).\n\n\
         ## Compilers\n\n{versions}\n\n## Flags\n\n`{conf}` (with `-w test.c -o BINARY -lm` appended)\n\n## Findings\n\n{findings}\n",
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
        reference = check.guard.reference,
        agree = check
            .guard
            .agree
            .iter()
            .map(|a| format!("`{a}`"))
            .collect::<Vec<_>>()
            .join(", "),
        versions = versions.join("\n"),
        findings = bug.findings.iter().map(|f| format!("- {f}")).collect::<Vec<_>>().join("\n"),
    );
    fs::write(dir.join("report.md"), report)?;
    fs::write(dir.join("bug.json"), serde_json::to_vec_pretty(bug)?)?;
    Ok(())
}

fn first_word(line: &str) -> &str {
    line.split_whitespace().next().unwrap_or("")
}

/// The compiler's first version line (`--version`, or `-v` for tcc).
fn compiler_version(compiler: &str) -> String {
    for flag in ["--version", "-v"] {
        if let Ok(output) = Command::new(compiler).arg(flag).output() {
            if output.status.success() {
                let text = String::from_utf8_lossy(&output.stdout);
                if let Some(line) = text.lines().next() {
                    return line.trim().to_string();
                }
            }
        }
    }
    "unknown version".into()
}

/// The one-command reproduction of a bug, showing expected against actual.
pub fn repro_script(check: &Check) -> String {
    let line = |c: &str| c.split_whitespace().map(quote).collect::<Vec<_>>().join(" ");
    let (conf, reference) = (line(&check.configuration), line(&check.guard.reference));
    let (ct, rt) = (check.guard.compile_timeout, check.guard.run_timeout);
    let header = format!(
        "#!/bin/sh\n# {symptom} of `{c}` on test.c. Exits 0 when the bug shows, 1 when not.\n\
         cd \"$(dirname \"$0\")\" || exit 2\nt=$(mktemp -d) || exit 2\ntrap 'rm -rf \"$t\"' EXIT\n",
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
        "{:>8}  {:<9} {:<22} {:>6}  {}\n",
        "findings", "kind", "configuration", "lines", "fingerprint"
    );
    for bug in bugs {
        out += &format!(
            "{:>8}  {:<9} {:<22} {:>6}  {}{}\n",
            bug.findings.len(),
            bug.kind.as_str(),
            bug.configuration,
            bug.lines,
            bug.fingerprint,
            if bug.flaky { " [flaky]" } else { "" }
        );
    }
    out
}
