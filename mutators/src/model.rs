//! The C program model: a seed parsed with lang-c into a table of statements (byte spans in the
//! seed text, nesting, whether the profile saw them run) and the variables in scope at each.

use crate::ctype::CType;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

mod builder;

/// Index of a statement in [`Program::statements`]; stable for a given seed text.
/// C's keywords and the GNU ones seeds use: never a variable's name, never renamed.
pub const KEYWORDS: &[&str] = &[
    "auto",
    "break",
    "case",
    "char",
    "const",
    "continue",
    "default",
    "do",
    "double",
    "else",
    "enum",
    "extern",
    "float",
    "for",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "register",
    "restrict",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "struct",
    "switch",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "while",
    "_Bool",
    "_Complex",
    "_Alignof",
    "_Alignas",
    "_Atomic",
    "_Generic",
    "_Noreturn",
    "_Static_assert",
    "_Thread_local",
    "__extension__",
    "__inline__",
    "__restrict",
    "__restrict__",
    "__const",
    "__volatile__",
    "__typeof__",
    "typeof",
    "asm",
    "__alignof__",
];

pub type StmtId = u32;
pub type ScopeId = usize;

/// What the profile says about a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Execution {
    /// Some line of the statement ran.
    Executed,
    /// gcov instrumented lines of the statement and none of them ran.
    NotExecuted,
    /// gcov instrumented none of its lines: nothing is known.
    Unknown,
}

impl Execution {
    /// What gcov's counts by line say about the statement on `lines` (first and last).
    pub fn of_lines(lines: (u32, u32), line_counts: &BTreeMap<u32, u64>) -> Execution {
        let mut seen = false;
        for (_, &count) in line_counts.range(lines.0..=lines.1) {
            if count > 0 {
                return Execution::Executed;
            }
            seen = true;
        }
        if seen {
            Execution::NotExecuted
        } else {
            Execution::Unknown
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum StmtKind {
    Compound,
    Expression,
    If,
    Switch,
    While,
    DoWhile,
    For,
    Goto,
    Continue,
    Break,
    Return,
    Labeled,
    Asm,
}

#[derive(Clone, Debug)]
pub struct Statement {
    pub id: StmtId,
    pub kind: StmtKind,
    /// Byte range in the seed text.
    pub span: Range<usize>,
    /// First and last line (1-based) of the span.
    pub lines: (u32, u32),
    pub parent: Option<StmtId>,
    pub children: Vec<StmtId>,
    pub depth: u32,
    pub execution: Execution,
    /// The body of a function definition.
    pub function_body: bool,
    /// The statement is or contains a goto label, so deleting it could break a `goto`.
    pub contains_label: bool,
    /// The statement is or contains a `return` that ends its function's last path: deleting it
    /// would let control reach the end of a function that returns a value, which compilers
    /// diagnose (`-Wreturn-type`) and the triage guard rejects.
    pub ends_function: bool,
    /// Inside a loop (so `break`/`continue` are legal there).
    pub in_loop: bool,
    /// Inside a switch (so `break` is legal there).
    pub in_switch: bool,
    pub scope: ScopeId,
    /// How many of the scope's variables are declared before this statement.
    pub visible: usize,
    /// The scopes opened inside the statement (the builder numbers scopes in source order).
    pub inner_scopes: Range<ScopeId>,
    /// The name of an identifier label, or the target of a `goto`.
    pub label: Option<String>,
}

impl Statement {
    /// Orion may delete it: it never ran, and removing it cannot break the program's syntax.
    pub fn is_deletable(&self) -> bool {
        self.execution == Execution::NotExecuted && !self.function_body && !self.contains_label && !self.ends_function
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Variable {
    pub name: String,
    pub ty: CType,
    pub is_const: bool,
    pub is_volatile: bool,
    pub global: bool,
    /// The qualifiers of the declared type, outermost pointer level last (`c` const, `v`
    /// volatile, `*` a pointer): two variables of equal type and qualifiers can stand for each
    /// other anywhere, including through pointers.
    pub qualifiers: String,
    /// Holds a determinate value wherever it is in scope: static storage (zero-initialized),
    /// a parameter, or a local with an initializer.
    pub initialized: bool,
}

/// A member of a struct or union.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: CType,
    /// Width of a bit-field: its values and promotions differ from its declared type's.
    pub bit_width: Option<u64>,
    pub is_const: bool,
    pub is_volatile: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    /// The enclosing scope and how many of its variables were visible when this one opened.
    pub parent: Option<(ScopeId, usize)>,
    pub vars: Vec<Variable>,
}

/// The stack of the thread a program is parsed on.
const PARSE_STACK_BYTES: usize = 8 << 20;

/// A parse failure, with the line in the seed text where it happened.
#[derive(Debug)]
pub struct ParseError {
    pub message: String,
}

impl std::fmt::Display for ParseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

/// The first declaration of a function.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionDecl {
    /// Its text, whitespace-normalized: a call means the same in two programs whose
    /// signatures are equal.
    pub signature: String,
    /// Offset in the seed text where it starts (0 for the system headers): code before it cannot
    /// call the function.
    pub offset: usize,
}

/// A function the program defines: what decides whether its name is one that C reserves to
/// the library (C11 7.1.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionDefinition {
    pub name: String,
    /// Not `static`.
    pub external: bool,
    /// The system headers' expansion declares it: the name is the library's (or POSIX's, or
    /// GNU's: gcc knows some of those as builtins too).
    pub declared_by_headers: bool,
}

#[derive(Clone, Debug)]
pub struct Program {
    pub text: Arc<str>,
    pub statements: Vec<Statement>,
    pub scopes: Vec<Scope>,
    /// Function bodies, in source order.
    pub roots: Vec<StmtId>,
    /// Fields of every struct and union, by tag.
    pub records: BTreeMap<String, Vec<Field>>,
    /// Declared functions, by name (the header expansion included).
    pub functions: BTreeMap<String, FunctionDecl>,
    /// The functions the program itself defines, in source order.
    pub definitions: Vec<FunctionDefinition>,
    pub typedefs: BTreeMap<String, CType>,
}

impl Program {
    /// Parses `text`, whose first `include_block_len` bytes are `#include` lines that expand to
    /// `headers`; `line_counts` are gcov's counts for the lines of `text`.
    ///
    /// The parse runs on a thread of its own and its program is copied out. lang-c's tree takes
    /// tens of megabytes for a moment, interleaved with the model built from it; in the
    /// caller's heap the model's allocations kept those pages resident after the tree was freed
    /// (a campaign client's RSS stepped up with each large seed and stayed). On its own thread
    /// the parse gets a glibc arena of its own, which is free whole once the copy is made.
    pub fn parse_parts(
        text: &str,
        headers: &str,
        include_block_len: usize,
        line_counts: &BTreeMap<u32, u64>,
    ) -> Result<Program, ParseError> {
        let parsed = std::thread::scope(|scope| {
            std::thread::Builder::new()
                .name("parse".into())
                // lang-c recurses once per nesting level: the main thread's stack, not 2 MiB.
                .stack_size(PARSE_STACK_BYTES)
                .spawn_scoped(scope, || builder::parse(text, headers, include_block_len))
                .map_err(|e| ParseError {
                    message: format!("cannot start the parse: {e}"),
                })?
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })?;
        Ok(parsed.clone().with_line_counts(line_counts))
    }

    /// The same program holding `text`, the same text as its own, instead: the seed it was
    /// parsed from and the program then hold it once.
    pub fn sharing_text(mut self, text: &Arc<str>) -> Program {
        assert!(self.text == *text, "a program shares only its own text");
        self.text = text.clone();
        self
    }

    /// The same program under another profile: what ran is all that gcov's counts change, so a
    /// program parsed before its counts were read need not be parsed again.
    pub fn with_line_counts(mut self, line_counts: &BTreeMap<u32, u64>) -> Program {
        for statement in &mut self.statements {
            statement.execution = Execution::of_lines(statement.lines, line_counts);
        }
        self
    }

    pub fn statement(&self, id: StmtId) -> &Statement {
        &self.statements[id as usize]
    }

    pub fn source_of(&self, id: StmtId) -> &str {
        &self.text[self.statement(id).span.clone()]
    }

    /// The variables visible at a statement, innermost first.
    pub fn vars_in_scope(&self, id: StmtId) -> Vec<&Variable> {
        let stmt = self.statement(id);
        let mut vars = Vec::new();
        let mut cursor = Some((stmt.scope, stmt.visible));
        while let Some((scope, visible)) = cursor {
            let scope_ref = &self.scopes[scope];
            vars.extend(scope_ref.vars[..visible].iter().rev());
            cursor = scope_ref.parent;
        }
        vars
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ctype::IntKind;

    fn parse(text: &str, counts: &[(u32, u64)]) -> Program {
        Program::parse_parts(text, "", 0, &counts.iter().copied().collect()).unwrap()
    }

    #[test]
    fn declarator_types_follow_c_precedence() {
        let p = parse(
            "int *a[3]; int (*b)[4]; unsigned long c; typedef short s16; const s16 d; int e[5][2];",
            &[],
        );
        let vars = &p.scopes[0].vars;
        let ty = |n: &str| vars.iter().find(|v| v.name == n).unwrap().clone();
        let int = CType::Int(IntKind::Int);
        assert_eq!(
            ty("a").ty,
            CType::Array(Box::new(CType::Pointer(Box::new(int.clone()))), Some(3))
        );
        assert_eq!(
            ty("b").ty,
            CType::Pointer(Box::new(CType::Array(Box::new(int), Some(4))))
        );
        assert_eq!(ty("c").ty, CType::Int(IntKind::ULong));
        let row = CType::Array(Box::new(CType::Int(IntKind::Int)), Some(2));
        assert_eq!(ty("e").ty, CType::Array(Box::new(row), Some(5)));
        assert_eq!(ty("d").ty, CType::Int(IntKind::Short));
        assert!(ty("d").is_const);
    }

    #[test]
    fn another_profile_changes_what_ran_and_nothing_else() {
        let text = "int f(int p) {\n  int x = 1;\n  if (p)\n  {\n    x = 2;\n  }\n  return x;\n}\n";
        let first = parse(text, &[(2, 1), (3, 1), (5, 0), (7, 1)]);
        let execution_of = |p: &Program, source: &str| {
            let id = (0..p.statements.len() as StmtId)
                .find(|&id| p.source_of(id) == source)
                .unwrap();
            p.statement(id).execution
        };
        assert_eq!(execution_of(&first, "x = 2;"), Execution::NotExecuted);
        assert_eq!(execution_of(&first, "return x;"), Execution::Executed);
        let second = first
            .clone()
            .with_line_counts(&[(3, 1), (5, 4), (7, 0)].into_iter().collect());
        assert_eq!(execution_of(&second, "x = 2;"), Execution::Executed);
        assert_eq!(execution_of(&second, "return x;"), Execution::NotExecuted);
        assert_eq!(second.statements.len(), first.statements.len());
        assert_eq!(second.text, first.text);
    }

    #[test]
    fn definitions_say_their_linkage_and_whether_the_system_headers_declare_them() {
        let include = "#include <stdlib.h>\n";
        let headers = "long long llabs(long long);\nvoid abort(void);\n";
        let body = "static int twice(int x);\nlong long llabs(long long x) { return x < 0 ? -x : x; }\n\
                    int twice(int x) { return 2 * x; }\nint main(void) { return twice(llabs(-1)) - 2; }\n";
        let text = format!("{include}{body}");
        let p = Program::parse_parts(&text, headers, include.len(), &BTreeMap::new()).unwrap();
        let definition = |name: &str, external, declared_by_headers| FunctionDefinition {
            name: name.to_string(),
            external,
            declared_by_headers,
        };
        assert_eq!(
            p.definitions,
            [
                definition("llabs", true, true),
                definition("twice", false, false),
                definition("main", true, false)
            ]
        );
        // Without the header the program declares llabs itself.
        let p = parse(&format!("long long llabs(long long);\n{body}"), &[]);
        assert_eq!(p.definitions[0], definition("llabs", true, false));
    }

    #[test]
    fn a_seed_after_its_headers_knows_their_type_names_records_and_functions() {
        let include = "#include <h.h>\n";
        // A record, typedefs of a record, of a function pointer and of an integer, a function,
        // and a static function with a body whose own typedef stays in it.
        let typedefs = "struct pair { int a; long b; };\ntypedef struct pair pair_t;\n\
                        typedef void (*handler)(int);\ntypedef unsigned short u16;\nint puts(const char *);\n\
                        static int id(int x) { typedef int local; local y = x; return y; }\n";
        let body = "u16 g;\nint main(void) {\n  pair_t p;\n  handler h = 0;\n  int local = 2;\n  \
                    u16 * q = &g;\n  p.a = (u16)local;\n  return id(p.a) - 2 + !q + !h;\n}\n";
        let text = format!("{include}{body}");
        let p = Program::parse_parts(&text, typedefs, include.len(), &BTreeMap::new()).unwrap();
        assert_eq!(p.typedefs["u16"], CType::Int(IntKind::UShort));
        assert_eq!(p.records["pair"].len(), 2);
        assert_eq!(p.functions["puts"].offset, 0);
        assert!(!p.typedefs.contains_key("local"));
        let main = p.roots[0];
        let stmts: Vec<_> = p.statement(main).children.iter().map(|&s| p.source_of(s)).collect();
        assert_eq!(stmts, ["p.a = (u16)local;", "return id(p.a) - 2 + !q + !h;"]);
        let vars: Vec<_> = p
            .vars_in_scope(p.statement(main).children[0])
            .iter()
            .map(|v| (v.name.clone(), v.ty.clone()))
            .collect();
        let ushort = CType::Int(IntKind::UShort);
        assert_eq!(vars[0], ("q".into(), CType::Pointer(Box::new(ushort.clone()))));
        assert_eq!(
            vars[3],
            (
                "p".into(),
                CType::Record {
                    union: false,
                    tag: "pair".into()
                }
            )
        );
        assert_eq!(vars[4], ("g".into(), ushort));
        // Other headers in which `u16` is a variable: `u16 * q;` is a multiplication.
        let variables = "int u16, q;\n";
        let body = "int main(void) {\n  u16 * q;\n  return 0;\n}\n";
        let p = Program::parse_parts(&format!("{include}{body}"), variables, include.len(), &BTreeMap::new()).unwrap();
        let first = p.statement(p.roots[0]).children[0];
        assert_eq!(
            (p.statement(first).kind, p.source_of(first)),
            (StmtKind::Expression, "u16 * q;")
        );
        // A syntax error is reported at the seed's line.
        let broken = format!("{include}int main(void) {{\n  u16 x = ;\n}}\n");
        let message = Program::parse_parts(&broken, typedefs, include.len(), &BTreeMap::new())
            .unwrap_err()
            .message;
        assert!(message.starts_with("syntax error at line 3,"), "{message}");
        let message = Program::parse_parts(&text, "int f(;\n", include.len(), &BTreeMap::new())
            .unwrap_err()
            .message;
        assert!(message.contains("(in the system headers)"), "{message}");
    }

    #[test]
    fn statements_have_spans_nesting_scopes_and_execution() {
        let text =
            "int g;\nint f(int p) {\n  int x = 1;\n  if (p)\n  {\n    x = 2;\n  }\n  lbl: x++;\n  return x;\n}\n";
        // Lines 3, 4, 8, 9 ran; line 6 was instrumented and never ran.
        let p = parse(text, &[(3, 1), (4, 1), (6, 0), (8, 1), (9, 1)]);
        let body = p.roots[0];
        assert!(p.statement(body).function_body);
        let if_stmt = p.statement(body).children[0];
        assert_eq!(p.source_of(if_stmt), "if (p)\n  {\n    x = 2;\n  }");
        let block = p.statement(if_stmt).children[0];
        assert_eq!(p.statement(block).execution, Execution::NotExecuted);
        assert!(p.statement(block).is_deletable());
        assert_eq!(p.statement(if_stmt).execution, Execution::Executed);
        let assign = p.statement(block).children[0];
        assert_eq!(p.source_of(assign), "x = 2;");
        assert_eq!(p.statement(assign).depth, 3);
        let names: Vec<_> = p.vars_in_scope(assign).iter().map(|v| v.name.clone()).collect();
        assert_eq!(names, ["x", "p", "g"]);
        let labeled = p.statement(body).children[1];
        assert!(p.statement(labeled).contains_label && p.statement(body).contains_label);
    }

    #[test]
    fn returns_on_the_last_path_are_kept() {
        let text = "int f(int p) {\n  if (p)\n  {\n    return 1;\n  }\n  if (p > 1)\n    return 2;\n  else\n    { p++; return 3; }\n}\n";
        // Only the function's first line ran: every statement is dead.
        let p = parse(text, &[(1, 1), (2, 0), (4, 0), (6, 0), (7, 0), (9, 0)]);
        let body = p.statement(p.roots[0]);
        let early = p.statement(body.children[0]);
        assert!(early.is_deletable(), "a return before the end may go");
        assert!(p.statement(early.children[0]).is_deletable());
        let last = p.statement(body.children[1]);
        assert!(last.ends_function && !last.is_deletable());
        let [then, otherwise] = last.children[..] else { panic!() };
        assert!(!p.statement(then).is_deletable());
        assert!(!p.statement(otherwise).is_deletable());
        let increment = p.statement(otherwise).children[0];
        assert!(p.statement(increment).is_deletable(), "only the return ends the path");
    }

    #[test]
    fn variables_declared_later_are_not_in_scope() {
        let p = parse("void f(void) { int a; a = 1; { int b; b = a; } int c; c = 2; }", &[]);
        let body = p.statement(p.roots[0]);
        let names = |id| p.vars_in_scope(id).iter().map(|v| v.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(body.children[0]), ["a"]);
        let inner = p.statement(body.children[1]).children[0];
        assert_eq!(names(inner), ["b", "a"]);
        assert_eq!(names(body.children[2]), ["c", "a"]);
    }
}
