//! Compiling a program with one configuration and running the binary, classified into the
//! outcomes the judges understand.

use crate::config::CompilerConfig;
use crate::process::runner::{run, Exit, Limits, Streams};
use anyhow::{Context, Result};
use ccfuzz_observers::{ConfigOutcome, RunResult};
use std::collections::HashMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// Flags and environment added to one compilation.
#[derive(Debug, Default)]
pub struct Additions {
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl Additions {
    /// Flags alone.
    pub fn flags(flags: &[&str]) -> Self {
        Additions {
            args: flags.iter().map(|f| f.to_string()).collect(),
            env: Vec::new(),
        }
    }
}

/// Recognizes a compiler crash in its stderr and extracts a short message that identifies it.
pub fn crash_message(stderr: &str) -> Option<String> {
    if let Some(line) = stderr.lines().find(|l| l.contains("internal compiler error")) {
        let at = line.find("internal compiler error").unwrap_or(0);
        return Some(line[at..].trim().to_string());
    }
    let clang_crash = ["PLEASE submit a bug report", "frontend command failed", "Stack dump:"];
    if clang_crash.iter().any(|m| stderr.contains(m)) {
        let mut parts: Vec<String> = stderr
            .lines()
            .skip_while(|l| !l.starts_with("Stack dump:"))
            .filter(|l| l.chars().next().is_some_and(|c| c.is_ascii_digit()) && !l.contains("Program arguments"))
            .take(3)
            .map(|l| l.split_once('\t').map_or(l, |(_, rest)| rest).trim().to_string())
            .collect();
        if let Some(failed) = stderr.lines().find(|l| l.contains("frontend command failed")) {
            parts.push(failed.trim().to_string());
        }
        if parts.is_empty() {
            parts.push("compiler crashed (PLEASE submit a bug report)".into());
        }
        return Some(parts.join(" | "));
    }
    None
}

/// One write of a file, told from another by its inode and times: a compiler that exits 0 must
/// have written its output anew.
#[derive(Debug, PartialEq)]
struct Written {
    inode: u64,
    modified: (i64, i64),
    changed: (i64, i64),
    len: u64,
}

impl Written {
    fn of(path: &Path) -> Option<Written> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        meta.is_file().then(|| Written {
            inode: meta.ino(),
            modified: (meta.mtime(), meta.mtime_nsec()),
            changed: (meta.ctime(), meta.ctime_nsec()),
            len: meta.size(),
        })
    }
}

/// Compiles `source` into `binary` in the same directory, with `additions` (flags and
/// environment: what profiling or the observers need from the compiler). `None` means it
/// compiled; otherwise the outcome says how the compiler failed.
///
/// A binary of an earlier compile may stand at `binary`: the compiler replaces it (removing it
/// here was a tenth of a client's CPU against tcc, freeing its pages).
pub fn compile(
    config: &CompilerConfig,
    source: &Path,
    binary: &Path,
    additions: &Additions,
    timeout: Duration,
) -> Result<(Option<ConfigOutcome>, Duration)> {
    let earlier = Written::of(binary);
    let extra: Vec<&str> = additions.args.iter().map(String::as_str).collect();
    let mut command = config.command(source, binary, &extra);
    command.envs(additions.env.iter().map(|(k, v)| (k, v)));
    if let Some(dir) = source.parent() {
        // Compilers' own temporary files go to the private directory too: they are removed with
        // it, and two cores running one compiler cannot collide on a fixed name in /tmp.
        command.current_dir(dir);
        // A child whose environment differs from this process's gets a copy of all of it,
        // built at each start: a client whose `TMPDIR` is already this directory skips that.
        if std::env::var_os("TMPDIR").is_none_or(|tmpdir| tmpdir != dir.as_os_str()) {
            command.env("TMPDIR", dir);
        }
    }
    let limits = Limits {
        read: Streams::Stderr,
        ..Limits::compiler(timeout)
    };
    let out = run(command, &limits)?;
    let stderr = out.stderr_text();
    let failure = match out.exit {
        Exit::Timeout => Some(ConfigOutcome::Hung),
        Exit::Signal(signal) => Some(ConfigOutcome::Crashed {
            message: crash_message(&stderr).unwrap_or_else(|| format!("compiler killed by signal {signal}")),
        }),
        Exit::Code(code) => match crash_message(&stderr) {
            Some(message) => Some(ConfigOutcome::Crashed { message }),
            None => match (code, Written::of(binary)) {
                (0, Some(written)) if Some(&written) != earlier.as_ref() => None,
                // Rewritten in place within one tick of the file clock, or not at all: which,
                // only a compile onto no file tells.
                (0, Some(_)) => {
                    std::fs::remove_file(binary).with_context(|| format!("cannot remove {}", binary.display()))?;
                    return compile(config, source, binary, additions, timeout);
                }
                _ => Some(ConfigOutcome::Rejected {
                    message: first_error(&stderr, code),
                }),
            },
        },
    };
    Ok((failure, out.elapsed))
}

fn first_error(stderr: &str, code: i32) -> String {
    stderr
        .lines()
        .find(|l| l.contains("error"))
        .map(|l| l.trim().to_string())
        .unwrap_or_else(|| format!("compiler exited with status {code}"))
}

/// Runs a binary in its own directory under the program limits.
pub fn run_binary(binary: &Path, timeout: Duration) -> Result<RunResult> {
    let mut command = Command::new(binary);
    if let Some(dir) = binary.parent() {
        command.current_dir(dir);
    }
    let limits = Limits {
        read: Streams::Stdout,
        ..Limits::program(timeout)
    };
    let out = run(command, &limits)?;
    Ok(match out.exit {
        Exit::Code(code) => RunResult::exited(code, out.stdout),
        Exit::Signal(signal) => RunResult::Signaled(signal),
        Exit::Timeout => RunResult::TimedOut,
    })
}

/// Run results of binaries by content: two configurations of one variant (-O2 and -O3, a
/// compiler and its tested copy) often link the same bytes, which need not run twice.
pub struct BinaryRuns {
    by_content: HashMap<u64, RunResult>,
    /// Whether a binary may meet another: a lone one is not read (reading and hashing it was
    /// a twentieth of a client's CPU against tcc alone).
    compares: bool,
    /// Runs taken from an earlier binary of the same bytes.
    pub reused: u64,
}

impl BinaryRuns {
    /// For the `binaries` that one variant's configurations are expected to link.
    pub fn for_binaries(binaries: usize) -> Self {
        BinaryRuns {
            by_content: HashMap::new(),
            compares: binaries > 1,
            reused: 0,
        }
    }

    /// The run of `binary`: the earlier one of the same bytes, or a new one.
    fn run(&mut self, binary: &Path, timeout: Duration) -> Result<RunResult> {
        if !self.compares {
            return run_binary(binary, timeout);
        }
        let bytes = std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
        let key = libafl_bolts::hash_std(&bytes);
        if let Some(run) = self.by_content.get(&key) {
            self.reused += 1;
            return Ok(run.clone());
        }
        let run = run_binary(binary, timeout)?;
        self.by_content.insert(key, run.clone());
        Ok(run)
    }
}

/// Compiles (with `additions`) and, when that succeeds, runs, unless `runs` already ran the same
/// bytes: the whole outcome of one configuration.
pub fn compile_and_run(
    config: &CompilerConfig,
    source: &Path,
    binary: &Path,
    additions: &Additions,
    compile_timeout: Duration,
    run_timeout: Duration,
    runs: &mut BinaryRuns,
) -> Result<(ConfigOutcome, Duration)> {
    let (failure, compile_time) = compile(config, source, binary, additions, compile_timeout)?;
    let outcome = match failure {
        None => ConfigOutcome::Ran {
            run: runs.run(binary, run_timeout)?,
        },
        Some(failure) => failure,
    };
    Ok((outcome, compile_time))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_binary_with_the_bytes_of_one_already_run_is_not_run_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("runs");
        let write = |name: &str, output: &str| {
            let path = dir.path().join(name);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho run >> {}\necho {output}\n", log.display()),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        let (o2, o3, other) = (write("o2", "1"), write("o3", "1"), write("other", "2"));
        let mut runs = BinaryRuns::for_binaries(3);
        let timeout = Duration::from_secs(5);
        let first = runs.run(&o2, timeout).unwrap();
        assert_eq!(runs.run(&o3, timeout).unwrap(), first);
        assert_ne!(runs.run(&other, timeout).unwrap(), first);
        assert_eq!(runs.reused, 1);
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
        // Where one binary is expected, binaries are not compared: each runs.
        let mut lone = BinaryRuns::for_binaries(1);
        assert_eq!(lone.run(&o2, timeout).unwrap(), first);
        assert_eq!(lone.run(&o3, timeout).unwrap(), first);
        assert_eq!(lone.reused, 0);
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 4);
    }

    #[test]
    fn a_compiler_replaces_the_binary_left_in_place_and_one_that_writes_nothing_is_not_run() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (source, binary) = (dir.path().join("p.c"), dir.path().join("prog"));
        let timeout = Duration::from_secs(60);
        let compile_and_print = |config: &CompilerConfig| {
            let (failure, _) = compile(config, &source, &binary, &Additions::default(), timeout).unwrap();
            failure.map_or_else(
                || Ok(run_binary(&binary, timeout).unwrap()),
                |failure| Err(failure.describe()),
            )
        };
        let printed = |text: &str| Ok(RunResult::exited(0, text.as_bytes().to_vec()));
        let gcc = CompilerConfig::new("gcc -O0");
        for word in ["first", "second"] {
            std::fs::write(
                &source,
                format!("#include <stdio.h>\nint main(void) {{ puts(\"{word}\"); return 0; }}\n"),
            )
            .unwrap();
            assert_eq!(compile_and_print(&gcc), printed(&format!("{word}\n")));
        }
        let fake = |name: &str, script: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, format!("#!/bin/sh\n{script}")).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
            CompilerConfig::new(path.to_str().unwrap())
        };
        // Exits 0 and writes nothing where a file stands, as a write within one tick of the file
        // clock would look: the compile is tried again onto no file.
        let writes_onto_nothing = fake(
            "writes-onto-nothing",
            "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && out=$2; shift; done\n\
             [ -e \"$out\" ] && exit 0\n\
             printf '#!/bin/sh\\necho new\\n' > \"$out\" && chmod +x \"$out\"\n",
        );
        assert_eq!(compile_and_print(&writes_onto_nothing), printed("new\n"));
        let writes_nothing = fake("writes-nothing", "exit 0\n");
        assert_eq!(
            compile_and_print(&writes_nothing),
            Err("rejected: compiler exited with status 0".to_string())
        );
        assert!(!binary.exists());
    }

    #[test]
    fn recognizes_gcc_and_clang_crashes() {
        let gcc = "x.c: In function 'f':\nx.c:3:1: internal compiler error: in expand_expr, at expr.c:1\n0x1 foo\n";
        assert_eq!(
            crash_message(gcc).unwrap(),
            "internal compiler error: in expand_expr, at expr.c:1"
        );
        let clang = "PLEASE submit a bug report to x\nStack dump:\n0.\tProgram arguments: clang -cc1\n1.\tcr.c:2:2: current parser token 'pragma'\n2.\tcr.c:1:15: parsing function body 'main'\n #0 0x0 llvm::sys::PrintStackTrace\nclang: error: clang frontend command failed with exit code 134 (use -v to see invocation)\n";
        let message = crash_message(clang).unwrap();
        assert!(
            message.starts_with("cr.c:2:2: current parser token 'pragma' | cr.c:1:15: parsing function body 'main'")
        );
        assert!(message.contains("frontend command failed"));
        assert_eq!(crash_message("x.c:1:1: error: expected ';'\n"), None);
    }
}
