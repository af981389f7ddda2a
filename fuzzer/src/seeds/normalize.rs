//! Normalization of a seed: it is preprocessed, but system headers are kept as `#include`
//! lines at the top, so the text compiles with any compiler's own headers (gcc's expansion of
//! glibc's headers does not compile with tcc or clang), while its own code, csmith's runtime
//! included, is plain C without macros whose lines gcov reports directly.

use crate::config::Config;
use crate::process::runner::{run, Limits};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A preprocessed seed: system `#include` lines, then the program's own code.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    pub includes: String,
    pub body: String,
}

/// Splits `gcc -E` output (with line markers) into the system headers it entered from the
/// program's own files and the text of those files.
pub fn normalize(preprocessed: &str, system_dirs: &[PathBuf]) -> Normalized {
    let mut includes: Vec<String> = Vec::new();
    let mut body = String::new();
    // Stack of (file, is_system).
    let mut stack: Vec<(String, bool)> = Vec::new();
    let mut blank_run = 0;
    for line in preprocessed.lines() {
        if let Some((file, flags)) = parse_marker(line) {
            let system = flags.contains(&3);
            if flags.contains(&1) {
                let from_own_code = stack.last().is_some_and(|(f, sys)| !sys && !f.starts_with('<'));
                if system && from_own_code {
                    let include = include_line(&file, system_dirs);
                    if !includes.contains(&include) {
                        includes.push(include);
                    }
                }
                stack.push((file, system));
            } else if flags.contains(&2) {
                stack.pop();
                if let Some(top) = stack.last_mut() {
                    top.0 = file;
                }
            } else if let Some(top) = stack.last_mut() {
                // A marker without flags moves within a file. gcc also emits one, flagged as
                // system, around a system macro's expansion inside the program's own code:
                // whether code is the program's own is decided when its file is entered.
                if top.0 != file {
                    *top = (file, system);
                }
            } else {
                stack.push((file, system));
            }
            continue;
        }
        let in_own_code = stack.last().is_some_and(|(f, sys)| !sys && !f.starts_with('<'));
        if !in_own_code {
            continue;
        }
        if line.trim().is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        body.push_str(line);
        body.push('\n');
    }
    let includes = includes.iter().map(|i| format!("{i}\n")).collect();
    Normalized { includes, body }
}

fn parse_marker(line: &str) -> Option<(String, Vec<u32>)> {
    let rest = line.strip_prefix("# ")?;
    let (number, rest) = rest.split_once(' ')?;
    number.parse::<u64>().ok()?;
    let rest = rest.strip_prefix('"')?;
    let close = rest.rfind('"')?;
    let file = rest[..close].to_string();
    let flags = rest[close + 1..]
        .split_whitespace()
        .filter_map(|f| f.parse().ok())
        .collect();
    Some((file, flags))
}

fn include_line(file: &str, system_dirs: &[PathBuf]) -> String {
    let path = Path::new(file);
    let best = system_dirs
        .iter()
        .filter_map(|dir| path.strip_prefix(dir).ok())
        .min_by_key(|rel| rel.as_os_str().len());
    match best {
        Some(rel) => format!("#include <{}>", rel.display()),
        None => format!("#include \"{file}\""),
    }
}

/// The reference compiler's system include directories.
pub fn system_include_dirs(config: &Config) -> Result<Vec<PathBuf>> {
    let mut command = Command::new(&config.reference.argv()[0]);
    command.args(["-xc", "-E", "-v", "-"]);
    let out = run(command, &Limits::compiler(Duration::from_secs(30)))?;
    let stderr = out.stderr_text();
    let dirs: Vec<PathBuf> = stderr
        .lines()
        .skip_while(|l| !l.starts_with("#include <...> search starts here:"))
        .skip(1)
        .take_while(|l| !l.starts_with("End of search list."))
        .map(|l| PathBuf::from(l.trim()))
        .map(|p| p.canonicalize().unwrap_or(p))
        .collect();
    if dirs.is_empty() {
        bail!(
            "cannot find the system include directories of {}",
            config.reference.name()
        );
    }
    Ok(dirs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_own_code_and_hoists_system_includes() {
        let pre = "# 0 \"t.c\"\n# 0 \"<built-in>\"\n# 0 \"<command-line>\"\n# 1 \"/usr/include/stdc-predef.h\" 1 3 4\n# 0 \"<command-line>\" 2\n# 1 \"t.c\"\n# 1 \"/usr/include/stdio.h\" 1 3 4\nextern int printf(const char *, ...);\n# 2 \"t.c\" 2\n# 1 \"/usr/include/csmith/csmith.h\" 1\nint m = \n# 7 \"/usr/include/csmith/csmith.h\" 3 4\n(-128)\n# 7 \"/usr/include/csmith/csmith.h\"\n;\n# 1 \"/usr/include/x86_64-linux-gnu/bits/types.h\" 1 3 4\ntypedef int x;\n# 2 \"/usr/include/csmith/csmith.h\" 2\nstatic int helper;\n# 3 \"t.c\" 2\n\n\n\nint main(void) { return 0; }\n";
        let dirs = [
            PathBuf::from("/usr/include/x86_64-linux-gnu"),
            PathBuf::from("/usr/include"),
        ];
        let n = normalize(pre, &dirs);
        assert_eq!(n.includes, "#include <stdio.h>\n#include <bits/types.h>\n");
        assert_eq!(
            n.body,
            "int m = \n(-128)\n;\nstatic int helper;\n\nint main(void) { return 0; }\n"
        );
    }
}
