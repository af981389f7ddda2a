//! Sanitizer vetting of a seed: undefined behaviour that the compilers may exploit differently
//! at other optimization levels (signed overflow, out-of-bounds accesses, oversized shifts)
//! and reads of uninitialized memory make every optimized configuration a false finding.
//!
//! Two clang builds at -O0 must run the seed cleanly and print the reference output:
//! UBSan with ASan, and MSan. MSan, not the compilers' uninitialized-use warnings: clang's
//! `-Wsometimes-uninitialized` and gcc's `-Wmaybe-uninitialized` see one function at a time
//! and miss a value left uninitialized in a callee or in memory, which MSan reports when it
//! is used; on csmith programs neither MSan nor the warnings flagged anything.
//!
//! Then the triage guard's warning checks (gcc and clang warnings that suggest undefined
//! behaviour, as errors): a seed they reject would have every finding of its variants rejected
//! by the guard, so the campaign time spent on it could never yield a bug. Csmith programs
//! trip gcc's `-Wsequence-point` now and then where the order is in fact defined.
//!
//! Last, the tested gcc and clang front ends must accept the seed: the reference may take a
//! program that a tested compiler's newer default dialect rejects (a K&R function called with
//! arguments is an error in C23), and every variant of such a seed would be rejected too.

use crate::config::installed::{is_gcc_or_clang, SANITIZER_FLAGS};
use crate::config::{CompilerConfig, Config};
use crate::process::compile::Additions;
use crate::process::compile::{compile, crash_message};
use crate::process::runner::{run, Exit, Limits};
use anyhow::Result;
use ccfuzz_mutators::ub_warnings::{clang_warning_flags, gcc_warning_flags};
use ccfuzz_observers::RunResult;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

/// One sanitized build of a seed.
struct Sanitizer {
    /// How a rejection names it.
    name: &'static str,
    /// What a report of it means.
    meaning: &'static str,
    flags: &'static [&'static str],
}

/// Eager checks (the default from clang 16 on) report an uninitialized value where it is passed
/// or returned, not only where it decides a branch: a value printed through `printf` counts.
const MSAN_FLAGS: [&str; 3] = [
    "-fsanitize=memory",
    "-fsanitize-memory-param-retval",
    "-fno-sanitize-recover=all",
];

const SANITIZERS: [Sanitizer; 2] = [
    Sanitizer {
        name: "UBSan+ASan",
        meaning: "has undefined behaviour",
        flags: &SANITIZER_FLAGS,
    },
    Sanitizer {
        name: "MSan",
        meaning: "reads uninitialized memory",
        flags: &MSAN_FLAGS,
    },
];

/// Sanitized binaries run slower than the reference's: this many times the seed timeout.
const SLOWDOWN: u32 = 4;

/// Why the sanitizers reject a seed, as one line.
#[derive(Debug, Clone, PartialEq)]
pub struct SanitizerReport {
    pub sanitizer: &'static str,
    pub meaning: &'static str,
    pub detail: String,
}

/// The clang that vets seeds: the first UB-check configuration that is a clang (its sanitizer
/// runtime, `libclang-rt-N-dev`, is installed by `make deps`).
pub fn vetting_clang(config: &Config) -> Option<String> {
    config
        .ub_check
        .iter()
        .map(|c| c.argv()[0].clone())
        .find(|program| program.contains("clang"))
}

/// Builds `source` with each sanitizer and runs it; `Ok(None)` when every build runs cleanly
/// and prints `expected` (the reference's exit status and output).
pub fn sanitize(
    clang: &str,
    source: &Path,
    dir: &Path,
    expected: &RunResult,
    compile_timeout: Duration,
    seed_timeout: Duration,
) -> Result<Option<SanitizerReport>> {
    let RunResult::Exited { code, stdout, .. } = expected else {
        anyhow::bail!("the reference run of a seed did not exit");
    };
    // A sanitized build that prints something else without a report most often read a value
    // never set (stack garbage differs from run to run): MSan, later, names that.
    let mut first_difference = None;
    for sanitizer in &SANITIZERS {
        let reject = |detail: String| {
            Ok(Some(SanitizerReport {
                sanitizer: sanitizer.name,
                meaning: sanitizer.meaning,
                detail,
            }))
        };
        let build = CompilerConfig::new(format!("{clang} -O0 {}", sanitizer.flags.join(" ")));
        let binary = dir.join("sanitized");
        let (failure, _) = compile(&build, source, &binary, &Additions::default(), compile_timeout)?;
        if let Some(failure) = failure {
            return reject(format!("the sanitized build fails: {}", failure.describe()));
        }
        let mut command = Command::new(&binary);
        // Leaks are not undefined behaviour, and LeakSanitizer needs ptrace.
        command.current_dir(dir).env("ASAN_OPTIONS", "detect_leaks=0");
        // The sanitizers reserve terabytes of address space for their shadow memory.
        let limits = Limits {
            memory: u64::MAX,
            ..Limits::program(seed_timeout * SLOWDOWN)
        };
        let out = run(command, &limits)?;
        let actual = match out.exit {
            Exit::Timeout => return reject(format!("does not terminate within {:?}", seed_timeout * SLOWDOWN)),
            Exit::Signal(signal) => RunResult::Signaled(signal),
            Exit::Code(status) => RunResult::exited(status, out.stdout.clone()),
        };
        if let Some(report) = first_report(&out.stderr_text()) {
            return reject(report);
        }
        if !actual.is_expected(*code, stdout) && first_difference.is_none() {
            first_difference = Some(SanitizerReport {
                sanitizer: sanitizer.name,
                meaning: sanitizer.meaning,
                detail: format!("{} instead of {}", actual.describe(), expected.describe()),
            });
        }
    }
    Ok(first_difference)
}

/// The line of a sanitizer's stderr that says what it found.
fn first_report(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find(|l| {
            l.contains("runtime error:") || l.contains("ERROR: AddressSanitizer") || l.contains("MemorySanitizer:")
        })
        .map(|l| {
            let l = l.trim_start_matches(|c: char| c == '=' || c.is_ascii_digit()).trim();
            // UBSan names the source by its path in a scratch directory: keep the file name.
            let l = match l.split_once(": runtime error:") {
                Some((place, what)) => format!("{}: runtime error:{what}", place.rsplit('/').next().unwrap_or(place)),
                None => l.to_string(),
            };
            l.chars().take(160).collect()
        })
}

/// The first ordinary error of a tested gcc or clang front end on `source`, named by its
/// configuration: `-fsyntax-only` once per compiler and dialect (optimization and target
/// flags do not change what the front end accepts). A front end that crashes or hangs is no
/// rejection: that is a finding, which the campaign's first execution of the seed makes.
pub fn front_end_rejection(
    configurations: &[CompilerConfig],
    source: &Path,
    dir: &Path,
    timeout: Duration,
) -> Result<Option<String>> {
    let mut checked = std::collections::HashSet::new();
    for config in configurations {
        let argv = config.argv();
        if !is_gcc_or_clang(&argv[0]) {
            continue;
        }
        let dialect: Vec<&String> = argv
            .iter()
            .filter(|w| !w.starts_with("-O") && !w.starts_with("-march=") && !w.starts_with("-mtune="))
            .collect();
        if !checked.insert(format!("{dialect:?}")) {
            continue;
        }
        let mut command = config.command(source, &dir.join("front-end-check"), &["-fsyntax-only"]);
        command.current_dir(dir);
        let out = run(command, &Limits::compiler(timeout))?;
        let Exit::Code(code) = out.exit else { continue };
        let stderr = out.stderr_text();
        if code == 0 || crash_message(&stderr).is_some() {
            continue;
        }
        let error = stderr.lines().find(|l| l.contains("error")).unwrap_or("fails");
        // The seed's path is a scratch directory's: keep the file name.
        let error = error.rsplit_once('/').map_or(error, |(_, rest)| rest);
        return Ok(Some(format!("{}: {}", config.name(), error.trim())));
    }
    Ok(None)
}

/// The triage guard's warning checks on `source` with `gcc` and `clang`: `Ok(Some(line))`
/// names the compiler and its first error when one rejects it.
pub fn guard_warnings(gcc: &str, clang: &str, source: &Path, dir: &Path, timeout: Duration) -> Result<Option<String>> {
    for (program, flags, object) in [
        (gcc, gcc_warning_flags(), Some(dir.join("guard.o"))),
        (clang, clang_warning_flags(), None),
    ] {
        let mut command = Command::new(program);
        command.args(&flags).arg(source).current_dir(dir);
        if let Some(object) = &object {
            command.arg("-o").arg(object);
        }
        let out = run(command, &Limits::compiler(timeout))?;
        match out.exit {
            Exit::Code(0) => continue,
            Exit::Timeout => {
                return Ok(Some(format!(
                    "{program} does not finish its warning check within {timeout:?}"
                )))
            }
            _ => {}
        }
        let stderr = out.stderr_text();
        let error = stderr.lines().find(|l| l.contains("error:")).unwrap_or("fails");
        // The seed's path is a scratch directory's: keep the file name.
        let error = error.rsplit_once('/').map_or(error, |(_, rest)| rest);
        return Ok(Some(format!("{program}: {}", error.trim())));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_are_cut_to_what_was_found() {
        let ubsan =
            "seed.c:3:54: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'\n";
        assert_eq!(
            first_report(ubsan).unwrap(),
            "seed.c:3:54: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'"
        );
        let msan = "==18683==WARNING: MemorySanitizer: use-of-uninitialized-value\n    #0 0x1 in main\n";
        assert_eq!(
            first_report(msan).unwrap(),
            "WARNING: MemorySanitizer: use-of-uninitialized-value"
        );
        assert_eq!(first_report("checksum = 1\n"), None);
    }
}
