//! The interestingness test: a generated shell script that exits 0 when a C file still shows a
//! finding's symptom and nothing suggests undefined behaviour. cvise and creduce run it as is;
//! edit-list minimization and pass bisection run the same script, so every stage keeps the same
//! symptom by the same definition.
//!
//! The UB guard, in order of cost: gcc and clang warnings that signal undefined behaviour or
//! uninitialized reads are errors; for wrong code, calls must pass as many arguments as their
//! callees' definitions take; a clang UBSan+ASan build at -O0 must run cleanly and print the
//! reference output; every agreement configuration (`clang -O0`) must print it too; and the
//! reference must terminate within the run timeout.

use anyhow::{bail, Context, Result};
use ccfuzz_mutators::ub_warnings::{clang_warning_flags, gcc_warning_flags};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the binary of the tested configuration does wrong; reduction keeps it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Misbehaviour {
    /// It exits and prints another output than the reference (its status may differ too).
    WrongOutput,
    /// It prints the reference's output but exits with another status. Kept apart from
    /// [`Misbehaviour::WrongOutput`] so a reduction of a wrong output cannot slide into a
    /// program that only falls off the end of `main` (pcc returns garbage there).
    WrongStatus,
    /// It is killed by this signal.
    Signal(i32),
    /// It does not terminate within the run timeout.
    Timeout,
}

impl Misbehaviour {
    /// Reads the campaign's descriptions of the reference's run and the tested one
    /// (`RunResult::describe`: "exit 0, 25 bytes of output ending in …").
    pub fn from_description(expected: &str, actual: &str) -> Self {
        if let Some(signal) = actual.strip_prefix("killed by signal ") {
            if let Ok(signal) = signal.trim().parse() {
                return Misbehaviour::Signal(signal);
            }
        }
        if actual.starts_with("did not terminate") {
            return Misbehaviour::Timeout;
        }
        let output = |run: &str| run.split_once(", ").map(|(_, output)| output.to_string());
        match (output(expected), output(actual)) {
            (Some(expected_output), Some(actual_output)) if expected_output == actual_output => {
                Misbehaviour::WrongStatus
            }
            _ => Misbehaviour::WrongOutput,
        }
    }

    pub fn describe(self) -> String {
        match self {
            Misbehaviour::WrongOutput => "wrong output".into(),
            Misbehaviour::WrongStatus => "wrong exit status".into(),
            Misbehaviour::Signal(signal) => format!("binary killed by signal {signal}"),
            Misbehaviour::Timeout => "binary does not terminate".into(),
        }
    }
}

/// The symptom a reduced program must keep.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Symptom {
    /// The tested configuration's binary disagrees with the reference's.
    Mismatch(Misbehaviour),
    /// The compiler crashes: killed by `signal`, or its stderr contains every marker.
    Crash { signal: Option<i32>, markers: Vec<String> },
    /// The compiler outlives the compile timeout.
    Hang,
}

/// The compilers of the UB guard.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Guard {
    /// Gives the expected output (`gcc -O0`); its compiler also checks gcc's warnings, so it
    /// must be a gcc.
    pub reference: String,
    /// Configurations whose output must equal the reference's (`clang -O0`).
    pub agree: Vec<String>,
    /// The clang whose warnings are checked and which builds the sanitized binary (its
    /// runtime, `libclang-rt-N-dev`, must be installed). Not gcc's sanitizers: gcc's UBSan
    /// leaves float-cast-overflow out, and its compile time grows exponentially with the
    /// nesting of divisions and shifts (long Orange expressions).
    pub clang: String,
    pub compile_timeout: u64,
    pub run_timeout: u64,
}

/// A symptom of one configuration, with the guard that keeps reductions free of UB.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Check {
    pub configuration: String,
    pub symptom: Symptom,
    pub guard: Guard,
    /// The unreduced program passes arguments only to functions declared with a prototype (as
    /// csmith's programs do), so every candidate must: see [`passes_arguments_by_prototype`].
    pub prototypes: bool,
}

/// Whether `file` calls with arguments only functions declared with a prototype, and declares
/// none without one that a definition with parameters follows: clang's (15 and later)
/// `-Wdeprecated-non-prototype` finds nothing. A reduction turns prototypes into `()`
/// declarations, behind which a call may pass a wrong number of arguments, undefined behaviour
/// that no compiler reports when the callee's definition comes later (pcc's wrong-code finding
/// of csmith seed 6836011121380198697 was twice reduced to such a call, each time behind a
/// `()` declaration the C23 count below could not see through). A program with K&R functions
/// fails this and keeps only that count.
pub fn passes_arguments_by_prototype(guard: &Guard, file: &Path) -> Result<bool> {
    // Limited as the script limits the guard's compilers: a clang that hangs must not hang
    // the triage.
    let script = format!(
        "{}\nlimited \"$1\" \"$2\" -fsyntax-only -Werror=deprecated-non-prototype \"$3\"",
        limited_function()
    );
    let status = Command::new("sh")
        .args(["-c", &script, "sh", &guard.compile_timeout.to_string(), &guard.clang])
        .arg(file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot run {}", guard.clang))?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        _ => bail!(
            "{} does not finish checking the prototypes of {} within {} s ({status})",
            guard.clang,
            file.display(),
            guard.compile_timeout
        ),
    }
}

/// The shell function `limited SECONDS COMMAND...`: the command with that many CPU seconds,
/// killed after [`WALL_CLOCK_FACTOR`] times as many on the wall clock.
/// How many times the reference's run time a binary may run, under `CCFUZZ_QUICK_HANG`, before
/// it counts as not terminating.
pub const QUICK_HANG_FACTOR: u64 = 10;

fn limited_function() -> String {
    format!(
        "limited() {{ lim=$1; shift; (ulimit -t \"$lim\"; exec timeout -s KILL $((lim * {WALL_CLOCK_FACTOR})) \"$@\"); }}"
    )
}

/// Quotes a word for `sh` when it needs it.
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=+:,@%".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

fn quoted_line(configuration: &str) -> String {
    configuration
        .split_whitespace()
        .map(quote)
        .collect::<Vec<_>>()
        .join(" ")
}

fn compiler_of(configuration: &str) -> &str {
    configuration.split_whitespace().next().unwrap_or("cc")
}

/// awk over clang's C23 errors: prints a function some call passes the wrong number of
/// arguments to and exits 0, unless an error other than argument counts and conflicting types
/// shows, or every miscounted function's types conflict (then its count is the declaration's).
const COUNTED_CALLEES: &str = "/ error: / { if ($0 ~ /arguments to function call/) { pending = 1 } \
else if (match($0, /conflicting types for \\047[^\\047]*\\047/)) { conflict[substr($0, RSTART + 23, RLENGTH - 24)] = 1 } \
else { other = 1 }; next } \
/ note: \\047[^\\047]*\\047 declared here/ { if (pending && match($0, /\\047[^\\047]*\\047/)) { counted[substr($0, RSTART + 1, RLENGTH - 2)] = 1 }; pending = 0; next } \
END { if (other) exit 1; for (name in counted) if (!(name in conflict)) { print name; exit 0 }; exit 1 }";

/// Options for one run of the script.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Added to the tested configuration's flags (pass bisection).
    pub extra_flags: Vec<String>,
    /// Skip the UB guard (the program is known to pass it; only flags change).
    pub without_guard: bool,
    /// Keep the outputs (`ref.out`, `bad.out`, `bad.err`, `bad-cc.err`, `*.status`) here.
    pub keep: Option<PathBuf>,
    /// Tell a binary that does not terminate by the reference's run time (`CCFUZZ_QUICK_HANG`).
    pub quick_hang: bool,
}

impl Check {
    /// The script; it tests the file named by its first argument, `test.c` by default (cvise
    /// runs it without arguments in a copy of the directory).
    pub fn script(&self) -> String {
        let g = &self.guard;
        let mut s = format!(
            "#!/bin/sh\n\
             # Interestingness test by `ccfuzz triage`: exits 0 when the file shows the symptom\n\
             # ({symptom}) of `{conf}` and the UB guard finds nothing.\n\
             # CCFUZZ_EXTRA: flags added to `{conf}`; CCFUZZ_NO_GUARD=1: skip the UB guard;\n\
             # CCFUZZ_KEEP=DIR: keep the outputs there; CCFUZZ_QUICK_HANG=1: a binary that runs\n\
             # {hang_factor} times as long as the reference's (1 s at least) counts as not terminating.\n\
             f=\"${{1:-test.c}}\"\n\
             t=$(mktemp -d) || exit 2\n\
             trap 'if [ -n \"$CCFUZZ_KEEP\" ]; then cp \"$t\"/*.out \"$t\"/*.err \"$t\"/*.status \"$CCFUZZ_KEEP\"/ 2>/dev/null; fi; rm -rf \"$t\"' EXIT\n\
             # The compilers' temporary files go with it.\n\
             export TMPDIR=\"$t\"\n\
             ct={ct}; rt={rt}\n\
             # Limits are CPU seconds: the background triage runs at nice 19 beside a campaign that\n\
             # keeps every core busy, where a wall-clock limit killed half-second compiles. The\n\
             # wall clock only stops what waits without running, at {wall_factor} times the limit.\n\
             {limited}\n\
             reject() {{ echo \"$1\" > \"$t/reason.err\"; exit 1; }}\n\
             # A guard compiler killed (its timeout, a signal) decides nothing: exit 3, undecided.\n\
             failed() {{ if [ \"$1\" -gt 128 ]; then echo \"$2 (killed by signal $(($1 - 128)))\" > \"$t/reason.err\"; exit 3; fi; reject \"$2\"; }}\n\
             run() {{ (cd \"$t\" && ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=1 limited \"${{2:-$rt}}\" \"./$1\" > \"$1.out\" 2> \"$1.err\"); echo $? > \"$t/$1.status\"; }}\n",
            symptom = self.describe(),
            conf = self.configuration,
            ct = g.compile_timeout,
            rt = g.run_timeout,
            wall_factor = WALL_CLOCK_FACTOR,
            hang_factor = QUICK_HANG_FACTOR,
            limited = limited_function(),
        );
        let tested = format!("{} $CCFUZZ_EXTRA", quoted_line(&self.configuration));
        let reference = quoted_line(&g.reference);
        match &self.symptom {
            Symptom::Mismatch(misbehaviour) => {
                // A reduction step of a binary that does not terminate would wait the whole run
                // limit; the reference's run time bounds a terminating one well below it.
                let bad_limit = if *misbehaviour == Misbehaviour::Timeout {
                    format!(
                        "bl=$rt; if [ -n \"$CCFUZZ_QUICK_HANG\" ]; then bl=$((($(date +%s%N) - started) * {QUICK_HANG_FACTOR} / 1000000000 + 1)); [ \"$bl\" -le \"$rt\" ] || bl=$rt; fi\n"
                    )
                } else {
                    "bl=$rt\n".to_string()
                };
                s += &format!(
                    "# The symptom first: it is the cheap part and rules out most candidates.\n\
                     limited $ct {tested} -w \"$f\" -o \"$t/bad\" -lm 2> \"$t/bad-cc.err\" || exit 1\n\
                     limited $ct {reference} -w \"$f\" -o \"$t/ref\" -lm 2> \"$t/ref.err\" || exit 1\n\
                     started=$(date +%s%N); run ref; rs=$(cat \"$t/ref.status\")\n\
                     [ \"$rs\" -lt 128 ] || exit 1\n\
                     {bad_limit}\
                     run bad $bl; bs=$(cat \"$t/bad.status\")\n\
                     if [ \"$bs\" -eq \"$rs\" ] && cmp -s \"$t/ref.out\" \"$t/bad.out\"; then exit 1; fi\n"
                );
                s += &match misbehaviour {
                    // sh reports death by signal N as 128 + N (N < 65); 193 to 255 are exit codes.
                    Misbehaviour::WrongOutput => "[ \"$bs\" -le 128 ] || [ \"$bs\" -gt 192 ] || exit 1\n\
                         cmp -s \"$t/ref.out\" \"$t/bad.out\" && exit 1\n"
                        .to_string(),
                    Misbehaviour::WrongStatus => "[ \"$bs\" -ne \"$rs\" ] || exit 1\n\
                         [ \"$bs\" -le 128 ] || [ \"$bs\" -gt 192 ] || exit 1\n"
                        .to_string(),
                    Misbehaviour::Signal(signal) => format!("[ \"$bs\" -eq {} ] || exit 1\n", 128 + signal),
                    Misbehaviour::Timeout => "[ \"$bs\" -eq 137 ] || exit 1\n".to_string(),
                };
                s += "[ -n \"$CCFUZZ_NO_GUARD\" ] && exit 0\n";
                s += &self.static_guard();
                s += &self.argument_count_guard();
                s += &format!(
                    "# UBSan and ASan at -O0 must stay silent and print the reference output.\n\
                     limited $ct {clang} -O0 -fsanitize=undefined,float-divide-by-zero,address -fno-sanitize-recover=all -w \"$f\" -o \"$t/san\" -lm 2> \"$t/san-cc.err\" || failed $? \"the sanitizer build fails\"\n\
                     run san\n\
                     [ \"$(cat \"$t/san.status\")\" -eq \"$rs\" ] && cmp -s \"$t/ref.out\" \"$t/san.out\" || reject \"UBSan or ASan reports an error\"\n",
                    clang = quote(&g.clang),
                );
                for (i, agree) in g.agree.iter().enumerate() {
                    s += &format!(
                        "# `{agree}` must agree with the reference.\n\
                         limited $ct {line} -w \"$f\" -o \"$t/agree{i}\" -lm 2> \"$t/agree{i}-cc.err\" || failed $? \"{agree} rejects the program\"\n\
                         run agree{i}\n\
                         [ \"$(cat \"$t/agree{i}.status\")\" -eq \"$rs\" ] && cmp -s \"$t/ref.out\" \"$t/agree{i}.out\" || reject \"{agree} disagrees with the reference\"\n",
                        line = quoted_line(agree),
                    );
                }
            }
            Symptom::Crash { signal, markers } => {
                s += &format!(
                    "limited $ct {tested} -w \"$f\" -o \"$t/bad\" -lm 2> \"$t/bad.err\"\n\
                     bs=$?; echo $bs > \"$t/bad.status\"\n"
                );
                match signal {
                    Some(signal) => s += &format!("[ \"$bs\" -eq {} ] || exit 1\n", 128 + signal),
                    None => s += "[ \"$bs\" -ne 0 ] && [ \"$bs\" -ne 137 ] || exit 1\n",
                }
                for marker in markers {
                    s += &format!("grep -qF -- {} \"$t/bad.err\" || exit 1\n", quote(marker));
                }
                s += "[ -n \"$CCFUZZ_NO_GUARD\" ] && exit 0\n";
                s += &self.static_guard();
            }
            Symptom::Hang => {
                s += &format!(
                    "limited $ct {tested} -w \"$f\" -o \"$t/bad\" -lm 2> \"$t/bad.err\"\n\
                     bs=$?; echo $bs > \"$t/bad.status\"\n\
                     [ \"$bs\" -eq 137 ] || exit 1\n\
                     [ -n \"$CCFUZZ_NO_GUARD\" ] && exit 0\n"
                );
                s += &self.static_guard();
            }
        }
        s += "exit 0\n";
        s
    }

    /// Warnings-as-errors: the part of the guard that needs no run, so crashes get it too.
    fn static_guard(&self) -> String {
        let (gcc_flags, mut clang_flags) = (gcc_warning_flags(), clang_warning_flags());
        if self.prototypes {
            clang_flags.push("-Werror=deprecated-non-prototype".to_string());
        }
        format!(
            "# Warnings that signal undefined behaviour or uninitialized reads are errors.\n\
             limited $ct {gcc} {gcc_flags} \"$f\" -o \"$t/guard.o\" 2> \"$t/gcc-warnings.err\" || failed $? \"gcc: $(grep -m1 error: \"$t/gcc-warnings.err\")\"\n\
             limited $ct {clang} {clang_flags} \"$f\" 2> \"$t/clang-warnings.err\" || failed $? \"clang: $(grep -m1 error: \"$t/clang-warnings.err\")\"\n",
            gcc = quote(compiler_of(&self.guard.reference)),
            clang = quote(&self.guard.clang),
            gcc_flags = gcc_flags.join(" "),
            clang_flags = clang_flags.join(" "),
        )
    }

    /// A call passing more or fewer arguments than its callee's definition has parameters is
    /// undefined behaviour that neither compiler warns about when the callee was declared
    /// without a prototype (`int f();`, which reducers make of csmith's prototypes): a pcc
    /// wrong-code finding reduced that way printed what gcc prints once the call was fixed.
    /// In C23 `()` declares no parameters, so clang (15 and later) then counts the arguments.
    /// A count decides for a function whose types do not conflict in C23 (a `()` declaration
    /// before a definition with parameters is valid before C23, and its calls are counted
    /// against the declaration), in a file whose other C23 errors are such conflicts; any other
    /// error (K&R definitions, C23's new keywords used as names) decides nothing.
    fn argument_count_guard(&self) -> String {
        format!(
            "# Calls must pass as many arguments as their callees take (counted as C23 counts them).\n\
             limited $ct {clang} -std=c2x -fsyntax-only -w \"$f\" 2> \"$t/c23.err\"; c23=$?\n\
             [ \"$c23\" -gt 128 ] && failed $c23 \"clang -std=c2x\"\n\
             if [ \"$c23\" -ne 0 ] && miscounted=$(awk '{counted_callees}' \"$t/c23.err\"); then\n\
             \treject \"a call passes a wrong number of arguments to $miscounted\"\n\
             fi\n",
            clang = quote(&self.guard.clang),
            counted_callees = COUNTED_CALLEES,
        )
    }

    pub fn describe(&self) -> String {
        match &self.symptom {
            Symptom::Mismatch(m) => format!("{} against `{}`", m.describe(), self.guard.reference),
            Symptom::Crash {
                signal: Some(signal), ..
            } => format!("compiler killed by signal {signal}"),
            Symptom::Crash { markers, .. } => format!("compiler crash: {}", markers.join(" / ")),
            Symptom::Hang => format!("compiler runs longer than {} s", self.guard.compile_timeout),
        }
    }

    /// Writes the script as `dir/interesting.sh` (executable) and returns its path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let path = dir.join("interesting.sh");
        fs::write(&path, self.script()).with_context(|| format!("cannot write {}", path.display()))?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }
}

/// How many times its CPU-time limit a command of the script may take on the wall clock.
const WALL_CLOCK_FACTOR: u64 = 100;

/// The script's exit status when a guard compiler was killed: neither clean nor rejected (a
/// stalled machine once made a campaign's guard reject, as undefined behaviour, a seed its
/// sanitizers had vetted).
const UNDECIDED: i32 = 3;

/// Runs an interestingness script on `file`: true when the file shows the symptom; an error
/// when the guard could not judge it.
pub fn run_script(script: &Path, file: &Path, options: &RunOptions) -> Result<bool> {
    // The script runs in the file's directory: relative paths would not resolve there.
    let script = script
        .canonicalize()
        .with_context(|| format!("no script {}", script.display()))?;
    let file = file
        .canonicalize()
        .with_context(|| format!("no file {}", file.display()))?;
    let mut command = Command::new("sh");
    command.arg(&script).arg(&file);
    if let Some(dir) = file.parent() {
        command.current_dir(dir);
    }
    if !options.extra_flags.is_empty() {
        command.env("CCFUZZ_EXTRA", options.extra_flags.join(" "));
    }
    if options.without_guard {
        command.env("CCFUZZ_NO_GUARD", "1");
    }
    if let Some(keep) = &options.keep {
        fs::create_dir_all(keep)?;
        command.env("CCFUZZ_KEEP", keep.canonicalize()?);
    }
    if options.quick_hang {
        command.env("CCFUZZ_QUICK_HANG", "1");
    }
    let status = command
        .status()
        .with_context(|| format!("cannot run {}", script.display()))?;
    match status.code() {
        Some(0) => Ok(true),
        Some(1) => Ok(false),
        Some(UNDECIDED) => bail!(
            "the UB guard could not judge {}: one of its compilers was killed (its timeout, or a signal); tried again next time",
            file.display()
        ),
        other => bail!("{} failed on {} ({other:?})", script.display(), file.display()),
    }
}

/// The tests' guard: gcc -O0 the reference, clang -O0 must agree.
#[cfg(test)]
pub(crate) fn test_guard() -> Guard {
    Guard {
        reference: "gcc -O0".into(),
        agree: vec!["clang -O0".into()],
        clang: "clang".into(),
        compile_timeout: 60,
        run_timeout: 10,
    }
}

/// The tests' wrong-output check of `configuration` under [`test_guard`].
#[cfg(test)]
pub(crate) fn wrong_output_check(configuration: &str) -> Check {
    Check {
        configuration: configuration.into(),
        symptom: Symptom::Mismatch(Misbehaviour::WrongOutput),
        guard: test_guard(),
        prototypes: false,
    }
}

#[cfg(test)]
mod tests;
