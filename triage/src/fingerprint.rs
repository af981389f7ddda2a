//! What identifies a bug. Crashes: the normalized crash signature (message, pass, compiler
//! function). Wrong code: the compiler pass that causes it, found by bisection — clang's
//! `-mllvm -opt-bisect-limit=N`, gcc's optimization flags turned off (`-fno-…`) from the end of
//! the list of enabled ones. Compilers without optional passes (tcc) are fingerprinted by
//! their misbehaviour and the reduced program's output difference.

use crate::check::{run_script, Check, Misbehaviour, RunOptions, Symptom};
use anyhow::{Context, Result};
use std::fs;
use std::path::Path;
use std::process::Command;

/// Cuts a crash message where what varies between programs begins: digits (positions, line
/// numbers, addresses), quotes and `@` (names of the program's own functions).
pub fn stable_prefix(text: &str) -> &str {
    let mut previous = ' ';
    for (at, c) in text.char_indices() {
        // A digit inside a name (`expand_expr_real_1`) is part of it.
        let number = c.is_ascii_digit() && !(previous.is_ascii_alphanumeric() || previous == '_');
        if number || matches!(c, '\'' | '@' | '`' | '‘') {
            return text[..at].trim_end();
        }
        previous = c;
    }
    text.trim_end()
}

/// Drops a leading `file:line:col: ` position.
fn without_position(line: &str) -> &str {
    let mut rest = line;
    for _ in 0..3 {
        match rest.split_once(':') {
            Some((_, after)) => rest = after,
            None => return line.trim(),
        }
    }
    rest.trim()
}

/// The fixed strings a crash's stderr must keep containing while it is reduced, from the
/// message the campaign recorded (`compile::crash_message`).
pub fn crash_markers(message: &str) -> Vec<String> {
    message
        .split(" | ")
        .map(|part| {
            let part = part.trim();
            let part = if part.contains("internal compiler error") {
                part
            } else {
                without_position(part)
            };
            stable_prefix(part).to_string()
        })
        .filter(|marker| marker.len() >= 8)
        .collect()
}

/// The signal of a crash the campaign recorded as `compiler killed by signal N`.
pub fn crash_signal(message: &str) -> Option<i32> {
    message.strip_prefix("compiler killed by signal ")?.trim().parse().ok()
}

/// A crash's signature from the compiler's stderr and exit status: the ICE message (with the
/// compiler function it names), the pass it happened in, or the signal.
pub fn crash_signature(stderr: &str, status: i32) -> String {
    let mut parts = Vec::new();
    if let Some(line) = stderr.lines().find(|l| l.contains("internal compiler error")) {
        let at = line.find("internal compiler error").unwrap_or(0);
        parts.push(stable_prefix(&line[at..]).to_string());
    }
    if let Some(line) = stderr
        .lines()
        .find(|l| l.starts_with("during ") && l.contains(" pass: "))
    {
        parts.push(line.trim().to_string());
    }
    if let Some(line) = stderr.lines().find(|l| l.contains("Running pass '")) {
        let pass = line.split('\'').nth(1).unwrap_or("");
        parts.push(format!("running pass {pass}"));
    }
    if parts.is_empty() {
        parts.push(if status > 128 {
            format!("killed by signal {}", status - 128)
        } else {
            format!("exit status {status}")
        });
    }
    parts.join("; ")
}

/// The fingerprint of a reduced program that shows `check`'s symptom (the script is `script`).
pub fn fingerprint(check: &Check, script: &Path, file: &Path, scratch: &Path) -> Result<String> {
    let compiler = check.configuration.split_whitespace().next().unwrap_or("");
    match &check.symptom {
        Symptom::Hang => Ok("compiler hang".into()),
        Symptom::Crash { .. } => {
            let kept = observe(script, file, scratch, &[])?;
            Ok(format!("crash: {}", crash_signature(&kept.stderr, kept.status)))
        }
        Symptom::Mismatch(misbehaviour) if compiler.contains("clang") => {
            clang_pass(script, file, scratch, *misbehaviour)
        }
        Symptom::Mismatch(misbehaviour) if compiler.contains("gcc") => {
            gcc_flag(check, script, file, scratch, *misbehaviour)
        }
        Symptom::Mismatch(misbehaviour) => {
            let kept = observe(script, file, scratch, &[])?;
            Ok(format!("{}: {}", misbehaviour.describe(), run_difference(&kept)))
        }
    }
}

/// What the script kept of one run.
struct Kept {
    expected: String,
    actual: String,
    /// The tested binary's stderr (mismatches) or the compiler's (crashes).
    stderr: String,
    /// The compiler's stderr, for mismatches.
    compiler_stderr: String,
    status: i32,
    expected_status: i32,
}

fn observe(script: &Path, file: &Path, scratch: &Path, extra: &[String]) -> Result<Kept> {
    let keep = scratch.join("observed");
    let _ = fs::remove_dir_all(&keep);
    run_script(
        script,
        file,
        &RunOptions {
            extra_flags: extra.to_vec(),
            without_guard: true,
            keep: Some(keep.clone()),
            ..RunOptions::default()
        },
    )?;
    let read = |name: &str| {
        fs::read(keep.join(name))
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default()
    };
    Ok(Kept {
        expected: read("ref.out"),
        actual: read("bad.out"),
        stderr: read("bad.err"),
        compiler_stderr: read("bad-cc.err"),
        status: read("bad.status").trim().parse().unwrap_or(-1),
        expected_status: read("ref.status").trim().parse().unwrap_or(-1),
    })
}

/// What the miscompiled binary did differently: its exit status, and its first complaint on
/// stderr (a runtime check such as tcc's bounds checker names the bug there) or else its first
/// differing output line. Numbers and addresses are normalized, program positions dropped.
fn run_difference(kept: &Kept) -> String {
    let status = if kept.status == kept.expected_status {
        String::new()
    } else {
        format!("exit status {} (expected {}), ", kept.status, kept.expected_status)
    };
    let complaint = kept.stderr.lines().find_map(|l| {
        ["BCHECK", "ERROR", "error"]
            .iter()
            .filter_map(|keyword| l.find(keyword))
            .min()
            .map(|at| &l[at..])
    });
    if let Some(line) = complaint {
        return format!("{status}stderr: {}", normalize_numbers(line.trim()));
    }
    if kept.expected == kept.actual {
        return format!("{status}same output");
    }
    let (expected, actual): (Vec<&str>, Vec<&str>) = (kept.expected.lines().collect(), kept.actual.lines().collect());
    let at = expected.iter().zip(&actual).take_while(|(e, a)| e == a).count();
    let line = |lines: &[&str]| lines.get(at).map_or("<no line>".to_string(), |l| format!("{l:?}"));
    format!(
        "{status}prints {} instead of {} (line {})",
        line(&actual),
        line(&expected),
        at + 1
    )
}

/// Replaces runs of digits (and hex addresses) by `N`.
fn normalize_numbers(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_number = false;
    for c in text.chars() {
        let digit = c.is_ascii_digit() || (in_number && (c.is_ascii_hexdigit() || c == 'x'));
        if digit && !in_number {
            out.push('N');
        } else if !digit {
            out.push(c);
        }
        in_number = digit;
    }
    out
}

/// The smallest `k` in `0..=n` with `shows(k)`, given `shows(n)`; binary search assumes the
/// symptom, once it shows, keeps showing as more passes run.
fn first_showing(n: usize, mut shows: impl FnMut(usize) -> Result<bool>) -> Result<usize> {
    let (mut low, mut high) = (0, n);
    while low < high {
        let mid = low + (high - low) / 2;
        if shows(mid)? {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    Ok(low)
}

fn clang_pass(script: &Path, file: &Path, scratch: &Path, misbehaviour: Misbehaviour) -> Result<String> {
    let limit = |n: usize| vec!["-mllvm".to_string(), format!("-opt-bisect-limit={n}")];
    // The limit is an `int` in LLVM, and INT_MAX means "no bisection": nothing is printed.
    let all = observe(script, file, scratch, &limit(i32::MAX as usize - 1))?;
    let passes: Vec<String> = all
        .compiler_stderr
        .lines()
        .filter_map(|l| l.strip_prefix("BISECT: running pass ("))
        .filter_map(|l| l.split_once(") "))
        .map(|(_, rest)| rest.split(" on ").next().unwrap_or(rest).to_string())
        .collect();
    let options = |n: usize| RunOptions {
        extra_flags: limit(n),
        without_guard: true,
        ..RunOptions::default()
    };
    let first = first_showing(passes.len(), |n| run_script(script, file, &options(n)))?;
    Ok(match first {
        0 => format!(
            "{}: no optional pass (front end or code generation)",
            misbehaviour.describe()
        ),
        n => format!("{}: clang pass {}", misbehaviour.describe(), passes[n - 1]),
    })
}

/// The optimization flags a gcc configuration enables (`-Q --help=optimizers`).
fn gcc_enabled_flags(configuration: &str, scratch: &Path) -> Result<Vec<String>> {
    let words: Vec<&str> = configuration.split_whitespace().collect();
    let output = Command::new(words[0])
        .args(&words[1..])
        .args(["-Q", "--help=optimizers"])
        .current_dir(scratch)
        .output()
        .with_context(|| format!("cannot run {}", words[0]))?;
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| {
            let mut fields = l.split_whitespace();
            let flag = fields.next()?;
            (flag.starts_with("-f") && !flag.contains('=') && fields.next() == Some("[enabled]"))
                .then(|| flag[2..].to_string())
        })
        .collect())
}

fn gcc_flag(check: &Check, script: &Path, file: &Path, scratch: &Path, misbehaviour: Misbehaviour) -> Result<String> {
    let flags = gcc_enabled_flags(&check.configuration, scratch)?;
    // Turning off the flags from index k on; k = flags.len() turns off nothing.
    let options = |k: usize| RunOptions {
        extra_flags: flags[k..].iter().map(|f| format!("-fno-{f}")).collect(),
        without_guard: true,
        ..RunOptions::default()
    };
    let first = first_showing(flags.len(), |k| run_script(script, file, &options(k)))?;
    Ok(match first {
        0 => format!(
            "{}: no optional gcc optimization (-fno-… hides nothing)",
            misbehaviour.describe()
        ),
        k => format!("{}: gcc -f{}", misbehaviour.describe(), flags[k - 1]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crash_markers_drop_positions_and_program_names() {
        let gcc = crash_markers("internal compiler error: in expand_expr_real_1, at expr.cc:8912");
        assert_eq!(gcc, vec!["internal compiler error: in expand_expr_real_1, at expr.cc:"]);
        let clang = crash_markers(
            "cr.c:2:2: current parser token 'pragma' | cr.c:1:15: parsing function body 'main' | clang: error: clang frontend command failed with exit code 134 (use -v to see invocation)",
        );
        assert_eq!(
            clang,
            vec![
                "current parser token",
                "parsing function body",
                "clang: error: clang frontend command failed with exit code"
            ]
        );
        assert_eq!(crash_signal("compiler killed by signal 11"), Some(11));
        assert_eq!(crash_signal("internal compiler error: x"), None);
    }

    #[test]
    fn crash_signatures_name_message_pass_and_signal() {
        let gcc = "t.c: In function 'f':\nt.c:3:1: internal compiler error: in vrp_visit, at tree-vrp.cc:1234\nduring GIMPLE pass: vrp\n0x1234 f\n";
        assert_eq!(
            crash_signature(gcc, 1),
            "internal compiler error: in vrp_visit, at tree-vrp.cc:; during GIMPLE pass: vrp"
        );
        let clang = "Stack dump:\n2.\tRunning pass 'Loop Strength Reduction' on loop at depth 1 in function '@g'\n";
        assert_eq!(crash_signature(clang, 139), "running pass Loop Strength Reduction");
        assert_eq!(crash_signature("", 139), "killed by signal 11");
    }

    #[test]
    fn run_differences_prefer_the_binary_complaint_and_normalize_it() {
        let kept = |stderr: &str, actual: &str| Kept {
            expected: "a\nb\n".into(),
            actual: actual.into(),
            stderr: stderr.into(),
            compiler_stderr: String::new(),
            status: 255,
            expected_status: 0,
        };
        let bcheck = "0044db05 : at ???: BCHECK: 0x66e450 is outside of the region\nt.c:6: by f\n";
        assert_eq!(
            run_difference(&kept(bcheck, "")),
            "exit status 255 (expected 0), stderr: BCHECK: N is outside of the region"
        );
        assert_eq!(
            run_difference(&kept("", "a\nc\n")),
            "exit status 255 (expected 0), prints \"c\" instead of \"b\" (line 2)"
        );
        assert_eq!(
            run_difference(&kept("", "a\nb\n")),
            "exit status 255 (expected 0), same output"
        );
    }

    /// Reassociating a float sum changes its last digits: not a compiler bug (the flag allows
    /// it), but a wrong-code symptom caused by known passes, to check the bisection with.
    fn fast_math_fingerprint(configuration: &str) -> String {
        let dir = tempfile::tempdir().unwrap();
        let check = crate::check::wrong_output_check(configuration);
        let script = check.write(dir.path()).unwrap();
        let file = dir.path().join("test.c");
        fs::write(
            &file,
            "#include <stdio.h>\nfloat a[1000];\nint main(void) {\n  int i;\n  float s = 0;\n  for (i = 0; i < 1000; i++) a[i] = 1.0f / (i + 1);\n  for (i = 0; i < 1000; i++) s += a[i];\n  printf(\"%.9g\\n\", s);\n  return 0;\n}\n",
        )
        .unwrap();
        fingerprint(&check, &script, &file, dir.path()).unwrap()
    }

    #[test]
    fn clang_bisection_names_the_pass_that_reassociates() {
        let fingerprint = fast_math_fingerprint("clang -O2 -ffast-math");
        assert!(fingerprint.starts_with("wrong output: clang pass "), "{fingerprint}");
    }

    #[test]
    fn gcc_bisection_names_the_flag_that_reassociates() {
        let fingerprint = fast_math_fingerprint("gcc -O2 -ffast-math");
        assert!(fingerprint.starts_with("wrong output: gcc -f"), "{fingerprint}");
    }

    #[test]
    fn binary_search_finds_the_first_showing_limit() {
        let mut calls = 0;
        let first = first_showing(1000, |n| {
            calls += 1;
            Ok(n >= 617)
        })
        .unwrap();
        assert_eq!(first, 617);
        assert!(calls <= 11);
        assert_eq!(first_showing(10, |_| Ok(true)).unwrap(), 0);
    }
}
