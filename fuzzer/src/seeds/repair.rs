//! Repairs of pre-C99 test programs that today's clang rejects but whose meaning is plain:
//! a library function called without its header (the header is included), implicit `int`
//! (clang's own fix-it inserts it), a function called before it is declared (declared
//! `int f();` at the top, which is what C89's implicit declaration meant), and a non-void
//! function that falls off its end (`return 0;` before its closing brace). GCC's torture tests
//! are written this way; without the repairs clang-19 rejects 662 of the 1,592.
//!
//! Falling off the end is defined when no caller uses the value (C11 6.9.1p12), but clang's
//! MemorySanitizer checks every return value, and the triage guard's `-Werror=return-type`
//! rejects it: 105 torture tests were lost to vetting for it alone.

use crate::process::runner::{run, Limits};
use anyhow::{Context, Result};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// A program after its repairs, and what they were.
#[derive(Debug, Clone, PartialEq)]
pub struct Repaired {
    pub text: String,
    pub changes: Vec<String>,
}

/// Each round lets clang report what the previous round's repairs uncovered.
const ROUNDS: usize = 3;

/// Repairs `source` with the diagnostics of `clang -fsyntax-only`, in `dir`.
pub fn repair(clang: &str, source: &str, dir: &Path, timeout: Duration) -> Result<Repaired> {
    let mut repaired = Repaired {
        text: source.to_string(),
        changes: Vec::new(),
    };
    let file = dir.join("repair.c");
    for _ in 0..ROUNDS {
        std::fs::write(&file, &repaired.text).with_context(|| format!("cannot write {}", file.display()))?;
        let mut command = Command::new(clang);
        command
            .args([
                "-fsyntax-only",
                "-fno-color-diagnostics",
                "-fdiagnostics-parseable-fixits",
                "-ferror-limit=0",
            ])
            // Errors since clang 16, warnings before; the triage guard makes them errors anyway.
            .args([
                "-Werror=implicit-int",
                "-Werror=implicit-function-declaration",
                "-Werror=return-type",
            ])
            .arg(&file);
        let out = run(command, &Limits::compiler(timeout)).with_context(|| format!("cannot run {clang}"))?;
        if out.success() {
            break;
        }
        let fixes = Fixes::read(&out.stderr_text());
        if fixes.is_empty() {
            break;
        }
        fixes.apply(&mut repaired);
    }
    Ok(repaired)
}

/// The repairs one round of diagnostics asks for.
#[derive(Debug, Default, PartialEq)]
struct Fixes {
    headers: BTreeSet<String>,
    declarations: BTreeSet<String>,
    /// Implicit-int fix-its: (line, column, text), 1-based byte columns as clang gives them.
    insertions: Vec<(usize, usize, String)>,
    /// Closing braces of functions that fall off their end: (line, column).
    returns: Vec<(usize, usize)>,
}

/// What goes before the closing brace of a non-void function that falls off its end.
const FALL_OFF_RETURN: &str = "return 0;";

impl Fixes {
    fn read(diagnostics: &str) -> Fixes {
        let mut fixes = Fixes::default();
        // An implicit-int error's position, until the fix-it that may follow it (clang 16 and
        // later give one, older clangs do not: then `int` goes where the error points).
        let mut implicit_int: Option<(usize, usize)> = None;
        for line in diagnostics.lines() {
            if let Some(fix) = line.strip_prefix("fix-it:") {
                if implicit_int.take().is_some() {
                    if let Some(insertion) = parse_insertion(fix) {
                        fixes.insertions.push(insertion);
                    }
                }
                continue;
            }
            if let Some((line, column)) = implicit_int.take() {
                fixes.insertions.push((line, column, "int".to_string()));
            }
            if let Some(at) = line.find(": error: ") {
                if line.ends_with("-Wimplicit-int]") {
                    implicit_int = position(&line[..at]);
                }
                let falls_off = line[at..].starts_with(": error: non-void function does not return a value");
                if falls_off && line.ends_with("-Wreturn-type]") {
                    if let Some((line, column)) = position(&line[..at]) {
                        fixes.returns.push((line, column));
                    }
                }
                let undeclared = ["call to undeclared function '", "implicit declaration of function '"];
                if line.ends_with("-Wimplicit-function-declaration]") {
                    if let Some(name) = undeclared.iter().find_map(|prefix| quoted_between(line, prefix, '\'')) {
                        fixes.declarations.insert(name.to_string());
                    }
                }
            } else if let Some(header) = quoted_between(line, "note: include the header <", '>') {
                fixes.headers.insert(header.to_string());
            }
        }
        if let Some((line, column)) = implicit_int {
            fixes.insertions.push((line, column, "int".to_string()));
        }
        fixes.insertions.sort();
        fixes.insertions.dedup();
        fixes.returns.sort();
        fixes.returns.dedup();
        fixes
    }

    fn is_empty(&self) -> bool {
        self.headers.is_empty() && self.declarations.is_empty() && self.insertions.is_empty() && self.returns.is_empty()
    }

    fn apply(self, repaired: &mut Repaired) {
        let mut lines: Vec<String> = repaired.text.split_inclusive('\n').map(str::to_string).collect();
        // A return goes only where clang points at a closing brace: one that a macro expands to
        // is not the program's text.
        let returns: Vec<_> = self
            .returns
            .iter()
            .filter(|(line, column)| {
                lines
                    .get(line - 1)
                    .and_then(|text| text.get(column - 1..))
                    .is_some_and(|rest| rest.starts_with('}'))
            })
            .map(|&(line, column)| (line, column, FALL_OFF_RETURN.to_string()))
            .collect();
        let mut insertions: Vec<_> = self.insertions.iter().chain(&returns).cloned().collect();
        insertions.sort();
        // From the end, so earlier positions stay valid.
        for (line, column, text) in insertions.iter().rev() {
            let Some(target) = lines.get_mut(line - 1) else {
                continue;
            };
            let at = (column - 1).min(target.len());
            if !target.is_char_boundary(at) {
                continue;
            }
            // clang's fix-it inserts `int` with no space after it.
            let spaced = if text.ends_with(['\n', ' ']) {
                text.clone()
            } else {
                format!("{text} ")
            };
            target.insert_str(at, &spaced);
        }
        if !self.insertions.is_empty() {
            repaired
                .changes
                .push(format!("implicit int ×{}", self.insertions.len()));
        }
        if !returns.is_empty() {
            repaired.changes.push(format!("return 0 ×{}", returns.len()));
        }
        let mut top = String::new();
        for header in &self.headers {
            top += &format!("#include <{header}>\n");
            repaired.changes.push(format!("<{header}>"));
        }
        for name in &self.declarations {
            top += &format!("int {name}();\n");
            repaired.changes.push(format!("declared {name}"));
        }
        repaired.text = top + &lines.concat();
    }
}

/// `"file":{13:1-13:1}:"int"` → (13, 1, "int"); only insertions (empty ranges).
fn parse_insertion(fix: &str) -> Option<(usize, usize, String)> {
    let range_start = fix.rfind(":{")? + 2;
    let range_end = range_start + fix[range_start..].find('}')?;
    let (from, to) = fix[range_start..range_end].split_once('-')?;
    if from != to {
        return None;
    }
    let (line, column) = from.split_once(':')?;
    let text = fix[range_end + 1..].strip_prefix(":\"")?.strip_suffix('"')?;
    let text = text.replace("\\n", "\n").replace("\\\"", "\"").replace("\\\\", "\\");
    Some((line.parse().ok()?, column.parse().ok()?, text))
}

/// `file.c:13:1` → (13, 1).
fn position(location: &str) -> Option<(usize, usize)> {
    let (rest, column) = location.rsplit_once(':')?;
    let (_, line) = rest.rsplit_once(':')?;
    Some((line.parse().ok()?, column.parse().ok()?))
}

fn quoted_between<'a>(line: &'a str, prefix: &str, end: char) -> Option<&'a str> {
    let start = line.find(prefix)? + prefix.len();
    let len = line[start..].find(end)?;
    Some(&line[start..start + len])
}

#[cfg(test)]
mod tests;
