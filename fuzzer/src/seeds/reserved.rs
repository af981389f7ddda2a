//! Names C reserves to its library (C11 7.1.3): a seed that defines a function of the library
//! means one thing to a compiler that calls its builtin and another to one that calls the
//! seed's definition (GCC's torture test 20021127-1 defines an `llabs` that aborts and passes
//! only because gcc replaces the call).

use crate::process::runner::{run, Limits};
use anyhow::{bail, Context, Result};
use ccfuzz_mutators::model::Program;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, OnceLock};

/// ISO C's headers that declare functions.
const ISO_C_HEADERS: &[&str] = &[
    "assert.h",
    "complex.h",
    "ctype.h",
    "errno.h",
    "fenv.h",
    "inttypes.h",
    "locale.h",
    "math.h",
    "setjmp.h",
    "signal.h",
    "stdio.h",
    "stdlib.h",
    "string.h",
    "time.h",
    "uchar.h",
    "wchar.h",
    "wctype.h",
];

/// The functions of ISO C's library, as this machine's headers declare them.
#[derive(Clone, Default)]
pub struct ReservedNames {
    library: BTreeSet<String>,
}

/// The names read so far, by preprocessor: every seed maker of a process (a client's, after
/// each restart) would otherwise preprocess and parse ISO C's headers again.
static READ: OnceLock<Mutex<HashMap<String, ReservedNames>>> = OnceLock::new();

impl ReservedNames {
    /// Reads the names from `preprocessor -std=c11 -E` of ISO C's headers: strict C hides the
    /// POSIX and GNU functions, whose names a program may use when it does not include them.
    pub fn of_library(preprocessor: &str, dir: &Path, limits: &Limits) -> Result<Self> {
        let read = READ.get_or_init(Default::default);
        if let Some(names) = read.lock().expect("reserved names lock").get(preprocessor) {
            return Ok(names.clone());
        }
        let names = Self::read(preprocessor, dir, limits)?;
        read.lock()
            .expect("reserved names lock")
            .insert(preprocessor.to_string(), names.clone());
        Ok(names)
    }

    fn read(preprocessor: &str, dir: &Path, limits: &Limits) -> Result<Self> {
        let source = dir.join("iso-c-headers.c");
        let includes: String = ISO_C_HEADERS.iter().map(|h| format!("#include <{h}>\n")).collect();
        std::fs::write(&source, includes).with_context(|| format!("cannot write {}", source.display()))?;
        let mut command = Command::new(preprocessor);
        command.args(["-std=c11", "-E", "-P"]).arg(&source);
        let out = run(command, limits).with_context(|| format!("cannot run {preprocessor}"))?;
        if !out.success() {
            bail!(
                "{preprocessor} does not preprocess ISO C's headers: {}",
                out.stderr_text().lines().next().unwrap_or("")
            );
        }
        let headers = String::from_utf8_lossy(&out.stdout);
        let declared = Program::parse_parts("", &headers, 0, &Default::default())
            .map_err(|e| anyhow::anyhow!("ISO C's headers do not parse: {e}"))?;
        let library = declared
            .functions
            .into_keys()
            .filter(|name| !name.starts_with("__"))
            .collect();
        Ok(ReservedNames { library })
    }

    /// The functions `program` defines under a name reserved to the library: one its system
    /// headers declare, or one of ISO C's library with external linkage (reserved whether or
    /// not its header is included).
    pub fn defined_by(&self, program: &Program) -> Vec<String> {
        program
            .definitions
            .iter()
            .filter(|d| d.declared_by_headers || (d.external && self.library.contains(&d.name)))
            .map(|d| d.name.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_iso_c_and_a_program_may_define_other_names() {
        let dir = tempfile::tempdir().unwrap();
        let reserved =
            ReservedNames::of_library("gcc", dir.path(), &Limits::compiler(std::time::Duration::from_secs(60)))
                .unwrap();
        for name in ["llabs", "abort", "printf", "memcpy", "sqrt", "strtol"] {
            assert!(reserved.library.contains(name), "{name}");
        }
        // POSIX's and GNU's functions are not ISO C's.
        for name in ["index", "strdup", "fileno", "main"] {
            assert!(!reserved.library.contains(name), "{name}");
        }
        let text = "long long llabs(long long b) { return b; }\nstatic int abs(int x) { return x; }\n\
                    int index(int i) { return i; }\nint main(void) { return abs(index(0)) + (int)llabs(0); }\n";
        let program = Program::parse_parts(text, "", 0, &Default::default()).unwrap();
        // A static abs is the program's own when <stdlib.h> is not included.
        assert_eq!(reserved.defined_by(&program), ["llabs"]);
    }
}
