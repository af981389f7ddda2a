//! A study command: how much of the compilers' own execution tests (`make seeds`: GCC's
//! gcc.c-torture/execute and TinyCC's tests2) the program model parses, and why the rest does
//! not. It prints counts and causes; what is a good count is for its reader to judge.
//!
//!   cargo run -p ccfuzz-tests --example gnu_c_parsing -- build/seeds [PER_FILE_TSV]
//!
//! (or `tests/studies/gnu_c_parsing.sh`). Every `.c` file is preprocessed and parsed exactly as
//! `SeedMaker` does before profiling: `gcc -E` with csmith's include directory, normalized
//! (system headers kept as `#include` lines), the include block expanded by `gcc -E -P`, then
//! `Program::parse_parts`. Each failure is put down to a cause: the GNU C construct found on the
//! line where lang-c stopped (or the line before), else "other". A panic of the model builder
//! is counted apart from lang-c's syntax errors. With PER_FILE_TSV, one line per file (set,
//! file, result, cause, message, failing line) is written there.

use anyhow::Context;
use ccfuzz::config::Config;
use ccfuzz::process::runner::{run, Limits};
use ccfuzz::seeds::normalize::{normalize, system_include_dirs};
use ccfuzz_mutators::model::{Program, StmtId, StmtKind};
use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const SETS: [&str; 2] = ["gcc-torture", "tcc-tests2"];

enum Outcome {
    /// With the statements whose text in the seed does not start as their kind's does (a
    /// wrong span), which must be none.
    Parsed {
        statements: usize,
        misplaced: usize,
    },
    Preprocess(String),
    Syntax {
        message: String,
        line: String,
        cause: &'static str,
    },
    BuilderPanic(String),
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args_os().skip(1);
    let (Some(root), per_file_out) = (args.next().map(PathBuf::from), args.next()) else {
        anyhow::bail!("usage: gnu_c_parsing SEEDS_DIR [PER_FILE_TSV]   (SEEDS_DIR: `make seeds` fills build/seeds)");
    };
    let dir = tempfile::tempdir()?;
    let config_path = dir.path().join("configuration.toml");
    std::fs::write(
        &config_path,
        "reference = \"gcc -O0\"\nub_check = [\"clang -O0\"]\nconfigurations = [\"gcc -O0\"]\n\
         compile_timeout = 60.0\nseed_timeout = 5.0\nrun_timeout = 10.0\ncsmith_include = \"/usr/include/csmith\"\ncsmith_args = []\n",
    )?;
    let config = Config::load(&config_path)?;
    let system_dirs = system_include_dirs(&config)?;
    let mut headers_cache: HashMap<String, String> = HashMap::new();
    let mut report = String::new();
    let mut per_file = String::new();
    for set in SETS {
        let mut files: Vec<PathBuf> = std::fs::read_dir(root.join(set))
            .with_context(|| format!("cannot read {} (run `make seeds`)", root.join(set).display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "c"))
            .collect();
        files.sort();
        let mut parsed = 0;
        let mut statements = 0;
        let mut misplaced_spans = 0;
        let mut causes: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for file in &files {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            let outcome = study_file(&config, &system_dirs, &mut headers_cache, file, dir.path());
            let (result, cause, message, line) = match &outcome {
                Outcome::Parsed {
                    statements: n,
                    misplaced,
                } => {
                    parsed += 1;
                    statements += n;
                    misplaced_spans += misplaced;
                    ("parsed", "", String::new(), String::new())
                }
                Outcome::Preprocess(m) => ("failed", "preprocessing fails", m.clone(), String::new()),
                Outcome::Syntax { message, line, cause } => ("failed", *cause, message.clone(), line.clone()),
                Outcome::BuilderPanic(m) => ("failed", "model builder panics", m.clone(), String::new()),
            };
            if result == "failed" {
                causes.entry(cause.to_string()).or_default().push(name.clone());
            }
            writeln!(per_file, "{set}\t{name}\t{result}\t{cause}\t{message}\t{}", line.trim()).unwrap();
        }
        writeln!(
            report,
            "{set}: found {}, parsed {parsed} ({statements} statements, {misplaced_spans} misplaced), failed {}",
            files.len(),
            files.len() - parsed
        )
        .unwrap();
        let mut by_count: Vec<_> = causes.into_iter().collect();
        by_count.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        for (cause, names) in by_count {
            let examples: Vec<_> = names.iter().take(4).cloned().collect();
            writeln!(report, "  {:5}  {cause}  (e.g. {})", names.len(), examples.join(" ")).unwrap();
        }
    }
    println!("{report}");
    if let Some(out) = per_file_out {
        std::fs::write(out, per_file)?;
    }
    Ok(())
}

fn study_file(
    config: &Config,
    system_dirs: &[PathBuf],
    headers_cache: &mut HashMap<String, String>,
    file: &Path,
    scratch: &Path,
) -> Outcome {
    let limits = Limits::compiler(Duration::from_secs(60));
    let mut command = Command::new(&config.reference.argv()[0]);
    command.arg("-E").arg("-I").arg(&config.csmith_include).arg(file);
    let out = run(command, &limits).unwrap();
    if !out.success() {
        let stderr = out.stderr_text();
        let first = stderr.lines().find(|l| l.contains("error")).unwrap_or("failed");
        return Outcome::Preprocess(first.to_string());
    }
    let normalized = normalize(&String::from_utf8_lossy(&out.stdout), system_dirs);
    let headers = match headers_cache.get(&normalized.includes) {
        Some(h) => h.clone(),
        None => {
            let path = scratch.join("includes.c");
            std::fs::write(&path, &normalized.includes).unwrap();
            let mut command = Command::new(&config.reference.argv()[0]);
            command.arg("-E").arg("-P").arg(&path);
            let out = run(command, &limits).unwrap();
            if !out.success() {
                return Outcome::Preprocess(out.stderr_text().lines().next().unwrap_or("").to_string());
            }
            let expanded = String::from_utf8_lossy(&out.stdout).into_owned();
            headers_cache.insert(normalized.includes.clone(), expanded.clone());
            expanded
        }
    };
    let text = format!("{}{}", normalized.includes, normalized.body);
    let include_block_len = normalized.includes.len();
    let parsed = std::panic::catch_unwind(|| {
        Program::parse_parts(&text, &headers, include_block_len, &BTreeMap::new()).map(|p| {
            (
                p.statements.len(),
                p.statements.iter().filter(|s| !starts_as_its_kind(&p, s.id)).count(),
            )
        })
    });
    match parsed {
        Ok(Ok((statements, misplaced))) => Outcome::Parsed { statements, misplaced },
        Ok(Err(e)) => {
            let message = e.to_string();
            let line_no: usize = message
                .strip_prefix("syntax error at line ")
                .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            let lines: Vec<&str> = text.lines().collect();
            let line = lines.get(line_no.wrapping_sub(1)).copied().unwrap_or("").to_string();
            let previous = lines.get(line_no.wrapping_sub(2)).copied().unwrap_or("");
            let depth = brace_depth(&lines[..line_no.saturating_sub(1).min(lines.len())]);
            let cause = if message.contains("(in the system headers)") {
                "system headers"
            } else {
                classify(&line, previous, depth, &normalized.body, &message)
            };
            Outcome::Syntax { message, line, cause }
        }
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Outcome::BuilderPanic(message)
        }
    }
}

/// Whether a statement's text starts with its keyword (`{` for a block, a label's name and `:`
/// for a labeled statement): a check that spans are right after the parser's repairs.
fn starts_as_its_kind(program: &Program, id: StmtId) -> bool {
    let stmt = program.statement(id);
    let text = program.source_of(id);
    let word = |w: &str| {
        text.strip_prefix(w)
            .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
    };
    let complete = text.ends_with([';', '}', ')']) || stmt.kind == StmtKind::Labeled;
    complete
        && match stmt.kind {
            StmtKind::Compound => text.starts_with('{') && text.ends_with('}'),
            StmtKind::If => word("if"),
            StmtKind::Switch => word("switch"),
            StmtKind::While => word("while"),
            StmtKind::DoWhile => word("do"),
            StmtKind::For => word("for"),
            StmtKind::Goto => word("goto"),
            StmtKind::Continue => word("continue"),
            StmtKind::Break => word("break"),
            StmtKind::Return => word("return"),
            StmtKind::Asm => word("asm") || word("__asm__") || word("__asm"),
            StmtKind::Labeled => {
                word("case") || word("default") || stmt.label.as_ref().is_some_and(|l| text.starts_with(l.as_str()))
            }
            StmtKind::Expression => !text.is_empty(),
        }
}

/// Braces open before the failing line (strings and comments are rare enough in these tests
/// to be ignored): above 0, the line is inside a function.
fn brace_depth(lines: &[&str]) -> i64 {
    lines
        .iter()
        .flat_map(|l| l.chars())
        .map(|c| match c {
            '{' => 1,
            '}' => -1,
            _ => 0,
        })
        .sum()
}

/// The GNU C or C89 construct that most likely stopped lang-c on `line` (or on the line before
/// it, where an error at the start of a line often belongs).
fn classify(line: &str, previous: &str, depth: i64, body: &str, message: &str) -> &'static str {
    let window = format!("{previous}\n{line}");
    let has = |s: &str| window.contains(s);
    // lang-c read a declarator and met a body where a declaration ends.
    let body_after_declarator = message.ends_with("expected one of ( , ; = [ asm")
        && (line.trim() == "{" || line.contains(')'))
        && (depth > 0 || line.find('{').is_some_and(|brace| line[..brace].contains(')')))
        && !(has("__attribute") && (has("struct") || has("union")));
    if body_after_declarator || (depth > 0 && looks_like_function_definition(line, previous)) {
        return "nested function";
    }
    if has("goto *") || has("goto*") || label_address(&window) {
        return "computed goto / labels as values";
    }
    if has("__label__") {
        return "__label__ (local labels)";
    }
    if depth == 0 && (line.trim_start().starts_with("asm") || line.trim_start().starts_with("__asm")) {
        return "asm outside functions";
    }
    if has("$") || has("\\U") || !window.is_ascii() {
        return "$ or UCN in identifiers";
    }
    if message.contains("<typedef_name>") && implicit_int(line) {
        return "implicit int (C89)";
    }
    if record_head_attribute(body) && (has("__attribute") || message.contains("asm")) {
        return "__attribute__ in a struct/union head";
    }
    if has("__builtin_types_compatible_p")
        || has("__builtin_convertvector")
        || has("__builtin_has_attribute")
        || has("__builtin_shufflevector")
        || has("__builtin_tgmath")
        || has("__builtin_bit_cast")
    {
        return "__builtin_* with a type argument";
    }
    if has("__builtin_va_arg") || has("va_arg") {
        return "__builtin_va_arg";
    }
    if has("__real") || has("__imag") || has("_Complex") || has("__complex__") {
        return "_Complex / __real__ / __imag__";
    }
    if has("__int128") || has("128_t") {
        return "__int128";
    }
    if has("__alignof") {
        return "__alignof__ of an expression";
    }
    if has("{}") || has("{ }") {
        return "empty initializer {}";
    }
    if has("?:") || has("? :") {
        return "conditional with omitted operand (?:)";
    }
    if has("__auto_type") {
        return "__auto_type";
    }
    if has("typeof") {
        return "typeof";
    }
    if has("({") {
        return "statement expression";
    }
    if has("asm") {
        return "asm";
    }
    if has("vector_size") {
        return "vector types";
    }
    if has("__attribute") {
        return "__attribute__ (other position)";
    }
    if has(" ... ") || has("...]") || has("[...") {
        return "case range / range designator";
    }
    if has("__builtin_") {
        return "__builtin_* other";
    }
    if has("_Float") || has("_Decimal") || has("_Accum") || has("_Fract") || has("_Sat") {
        return "other floating or fixed-point types";
    }
    if has("__extension__") || has("__restrict") {
        return "other GNU keyword";
    }
    "other"
}

/// A declaration without a type: `main ()`, `static x;`, `register i;`, `foo (p)`.
fn implicit_int(line: &str) -> bool {
    let mut rest = line.trim_start();
    loop {
        let word_len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let word = &rest[..word_len];
        if matches!(
            word,
            "static" | "extern" | "register" | "auto" | "inline" | "__inline" | "__inline__" | "const" | "volatile"
        ) {
            rest = rest[word_len..].trim_start();
            continue;
        }
        if word.starts_with("__attribute") {
            return true;
        }
        let after = rest[word_len..].trim_start();
        let statement = ["if", "for", "while", "switch", "return", "sizeof", "do", "else", "goto"];
        return !word.is_empty() && !statement.contains(&word) && after.starts_with(['(', ';', ',', '=', '[']);
    }
}

/// `struct __attribute__ ((...)) S` or `struct S __attribute__ ((...)) {` somewhere in the file.
fn record_head_attribute(body: &str) -> bool {
    let words: Vec<&str> = body
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .collect();
    words.windows(3).any(|w| {
        matches!(w[0], "struct" | "union" | "enum")
            && (w[1].starts_with("__attribute") || w[2].starts_with("__attribute"))
    })
}

/// `&&label` used as a value: `&&` where an operand, not an operator, is expected.
fn label_address(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("&&").map(|a| a + i) {
        i = at + 2;
        let after = text[at + 2..].trim_start();
        if !after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            continue;
        }
        let before = text[..at].trim_end();
        let last = before.as_bytes().last().copied();
        let unary_context = matches!(
            last,
            None | Some(b'(' | b'=' | b',' | b'{' | b'?' | b':' | b'[' | b'\n')
        ) || before.ends_with("return")
            || (last == Some(b'&') && bytes.get(at.wrapping_sub(1)) == Some(&b'&'));
        if unary_context {
            return true;
        }
    }
    false
}

/// A declarator followed by a body: `int f (int x) {` or `{` on the next line.
fn looks_like_function_definition(line: &str, previous: &str) -> bool {
    let keywords = ["if", "for", "while", "switch", "return", "else", "do", "sizeof"];
    let is_header = |l: &str| {
        let l = l.trim();
        let Some(open) = l.find('(') else { return false };
        let head = l[..open].trim();
        let words: Vec<&str> = head.split_whitespace().collect();
        words.len() >= 2
            && !keywords.contains(&words[0])
            && !head.contains('=')
            && (l.ends_with(')') || l.ends_with('{') || l.contains(") {"))
    };
    is_header(line) || (line.trim_start().starts_with('{') && is_header(previous))
}
