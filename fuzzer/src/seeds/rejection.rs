//! [`Rejection`]: why a candidate seed was not accepted, one line each, with the class its
//! counts are kept under.

use crate::seeds::vetting::SanitizerReport;
use std::fmt;

/// Why a seed was not accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejection {
    Unreadable(String),
    Preprocess(String),
    Parse(String),
    Compile(String),
    /// gcov cannot read the counts of the seed's profiling run.
    Profile(String),
    Timeout,
    Crash(String),
    /// The UB check configuration printed something else than the reference.
    Differs {
        config: String,
        detail: String,
    },
    /// A sanitizer reported undefined behaviour or an uninitialized read.
    Sanitizer(SanitizerReport),
    /// The reference and the UB checks do not print what the program must (its `.expect`
    /// file, or Orange's computed values).
    Unexpected(String),
    /// The triage guard's warnings reject the seed: every finding of it would be rejected.
    GuardWarnings(String),
    /// The program defines functions of the C library (names reserved to it).
    DefinesLibraryFunctions(Vec<String>),
}

impl Rejection {
    /// The kind of rejection, for counts.
    pub fn class(&self) -> &'static str {
        match self {
            Rejection::Unreadable(_) => "unreadable",
            Rejection::Preprocess(_) => "preprocess",
            Rejection::Parse(_) => "parse",
            Rejection::Compile(_) => "compile",
            Rejection::Profile(_) => "profile",
            Rejection::Timeout => "timeout",
            Rejection::Crash(_) => "crash",
            Rejection::Differs { .. } => "differs",
            Rejection::Sanitizer(report) => report.sanitizer,
            Rejection::Unexpected(_) => "unexpected output",
            Rejection::GuardWarnings(_) => "guard warnings",
            Rejection::DefinesLibraryFunctions(_) => "defines library functions",
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Unreadable(m) => write!(f, "unreadable: {m}"),
            Rejection::Preprocess(m) => write!(f, "does not preprocess: {m}"),
            Rejection::Parse(m) => write!(f, "does not parse: {m}"),
            Rejection::Compile(m) => write!(f, "does not compile: {m}"),
            Rejection::Profile(m) => write!(f, "cannot be profiled: {m}"),
            Rejection::Timeout => write!(f, "does not terminate within the seed timeout"),
            Rejection::Crash(m) => write!(f, "crashes: {m}"),
            Rejection::Differs { config, detail } => {
                write!(
                    f,
                    "prints something else under {config} (undefined behaviour?): {detail}"
                )
            }
            Rejection::Unexpected(detail) => write!(f, "does not print its expected output: {detail}"),
            Rejection::GuardWarnings(error) => {
                write!(f, "the triage guard would reject every finding of it: {error}")
            }
            Rejection::Sanitizer(report) => {
                write!(f, "{} ({}): {}", report.meaning, report.sanitizer, report.detail)
            }
            Rejection::DefinesLibraryFunctions(names) => write!(
                f,
                "defines {}, {} reserved to the C library (C11 7.1.3): a compiler may call its own",
                names.join(", "),
                if names.len() == 1 { "a name" } else { "names" }
            ),
        }
    }
}

/// The verdict on a candidate seed: a value, or the reason it was rejected.
pub type Vetted<T> = std::result::Result<T, Rejection>;
