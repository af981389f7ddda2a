//! The compiler warnings that suggest undefined behaviour, as errors: the first check of the
//! UB guard that triage's interestingness test runs, and of seed vetting, which rejects a seed
//! the guard would reject (every finding of its variants would be thrown away). Both stages
//! take them from here so that they ask the same question.

/// gcc warnings that point at undefined behaviour or at reads of uninitialized memory.
/// `-Wmaybe-uninitialized` needs the optimizers' data flow, hence the guard compiles at -O1.
/// Not `-Woverflow`: it flags csmith's implementation-defined narrowing conversions; not
/// `-Wdangling-pointer`: csmith stores addresses of locals in globals without using them late
/// (ASan's `detect_stack_use_after_return` catches the real thing).
pub const GCC_UB_WARNINGS: &[&str] = &[
    "uninitialized",
    "maybe-uninitialized",
    "init-self",
    "return-type",
    "implicit-function-declaration",
    "implicit-int",
    "int-conversion",
    "incompatible-pointer-types",
    "int-to-pointer-cast",
    "div-by-zero",
    "array-bounds",
    "shift-count-overflow",
    "shift-count-negative",
    "shift-negative-value",
    "sequence-point",
    "aggressive-loop-optimizations",
    "return-local-addr",
    "nonnull",
    "format",
    "builtin-declaration-mismatch",
    "main",
    "stringop-overflow",
    "use-after-free",
];

/// The guard's gcc check before the file (and `-o OBJECT`): an object at -O1, whose data flow
/// `-Wmaybe-uninitialized` needs, with [`GCC_UB_WARNINGS`] as errors.
pub fn gcc_warning_flags() -> Vec<String> {
    let warnings = GCC_UB_WARNINGS.iter().map(|w| format!("-Werror={w}"));
    ["-O1", "-c"].into_iter().map(String::from).chain(warnings).collect()
}

/// The guard's clang check before the file: parsing only, with [`CLANG_UB_WARNINGS`] as errors.
pub fn clang_warning_flags() -> Vec<String> {
    let warnings = CLANG_UB_WARNINGS.iter().map(|w| format!("-Werror={w}"));
    std::iter::once("-fsyntax-only".to_string()).chain(warnings).collect()
}

/// clang warnings of the same kind; clang finds them without optimizing (`-fsyntax-only`).
/// Also the GNU extensions that reductions drift into and whose meaning is murky: a struct
/// without named members has size 0, so a null pointer to it is "dereferenced" without any
/// sanitizer noticing. (Not `-pedantic-errors`: csmith compares distinct pointer types.)
pub const CLANG_UB_WARNINGS: &[&str] = &[
    "uninitialized",
    "sometimes-uninitialized",
    "conditional-uninitialized",
    "integer-overflow",
    "array-bounds",
    "array-bounds-pointer-arithmetic",
    "return-type",
    "implicit-function-declaration",
    "implicit-int",
    "int-conversion",
    "incompatible-pointer-types",
    "int-to-pointer-cast",
    "division-by-zero",
    "shift-count-overflow",
    "shift-count-negative",
    "shift-negative-value",
    "shift-overflow",
    "unsequenced",
    "return-stack-address",
    "null-dereference",
    "format",
    "main-return-type",
    "incompatible-library-redeclaration",
    "excess-initializers",
    "gnu-empty-struct",
    "zero-length-array",
    "gnu-empty-initializer",
    "gnu-variable-sized-type-not-at-end",
];
