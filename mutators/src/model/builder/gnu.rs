//! GNU C that lang-c 0.15 does not parse, made parseable without changing what the model
//! learns from it, and GNU C that it parses but the model must not take at face value.
//!
//! lang-c parses a copy of the seed text (its *parse text*); the seed text itself is never
//! changed. Two kinds of changes make that copy parseable:
//!
//! - [`rewrite`], before parsing, replaces constructs by text of the same length, so offsets
//!   are unchanged: `__int128` (and `__int128_t`, `__uint128_t`) by `_Float64`, a type the model
//!   treats as opaque ([`crate::ctype::CType::Other`]); `__real__` and `__imag__` by a unary
//!   `+`; `__alignof__` of an expression by `sizeof`; `__builtin_types_compatible_p (T1, T2)` by
//!   a constant expression that is not an integer literal (so no array takes it as a length);
//!   a label's address `&&l` by `0`, and the operand of a computed `goto *e;` by an identifier;
//!   `__label__` declarations and attributes between `struct`/`union`/`enum` and the body by
//!   blanks. The model reads nothing from any of these: expressions are opaque to it, and only
//!   `vector_size` and `mode` attributes change a type (they are never blanked; see
//!   [`changes_type`]). A statement that takes a label's address is kept whole (as if it held
//!   the label), and a computed `goto` has no label in the model.
//! - [`repair`], after a syntax error, inserts text where lang-c stopped or blanks a top-level
//!   `asm`, and the parse is tried again: `int ` before a C89 implicit-int declaration (`main()
//!   {`, `static x;`, `register i;`), `0` in an empty initializer `{}` (C23 and GNU) and in
//!   the conditional with an omitted operand (`a ?: b`). Insertions are recorded as
//!   [`Insertions`], which map parse-text offsets back to seed-text offsets.
//!
//! Not handled, so such seeds are still rejected: nested functions (clang has none either),
//! attributes inside abstract declarators, `$` and UCNs in identifiers.

use lang_c::ast::{Attribute, Declaration, Expression, ParameterDeclaration, Statement, StructField};
use lang_c::span::Span;
use lang_c::visit::{self, Visit};

static NO_SPAN: Span = Span { start: 0, end: 0 };

/// The most repairs tried on one seed (each one parses the text again).
pub(super) const MAX_REPAIRS: usize = 256;

/// Texts inserted into the parse text: (offset in the parse text, length), in text order.
#[derive(Clone, Debug, Default)]
pub(super) struct Insertions(Vec<(usize, usize)>);

impl Insertions {
    fn insert(&mut self, at: usize, len: usize) {
        let index = self.0.partition_point(|&(o, _)| o < at);
        for later in &mut self.0[index..] {
            later.0 += len;
        }
        self.0.insert(index, (at, len));
    }

    /// The offset in the text without the insertions of a parse-text offset (an offset inside an
    /// inserted text maps to where it was inserted).
    pub(super) fn original(&self, parse_offset: usize) -> usize {
        let mut removed = 0;
        for &(at, len) in &self.0 {
            if at >= parse_offset {
                break;
            }
            removed += len.min(parse_offset - at);
        }
        parse_offset - removed
    }
}

/// A change of the parse text after a syntax error.
enum Repair {
    Insert(usize, &'static str),
    Blank(std::ops::Range<usize>),
}

/// Changes `parse_text` so that lang-c gets past the syntax error at `offset` (where it
/// expected one of `expected`), if the error is one of the GNU C or C89 forms that [`repair`]
/// knows; `body_start` is where the seed's own code starts (the headers are never changed).
pub(super) fn repair(
    parse_text: &mut String,
    insertions: &mut Insertions,
    offset: usize,
    expected: &[&str],
    body_start: usize,
) -> bool {
    if offset < body_start || offset > parse_text.len() {
        return false;
    }
    let Some(repair) = find_repair(parse_text, offset, expected) else {
        return false;
    };
    match repair {
        Repair::Insert(at, text) => {
            parse_text.insert_str(at, text);
            insertions.insert(at, text.len());
        }
        Repair::Blank(range) => blank(parse_text, range),
    }
    true
}

fn find_repair(text: &str, offset: usize, expected: &[&str]) -> Option<Repair> {
    let bytes = text.as_bytes();
    let before = text[..offset].trim_end();
    let previous = before.bytes().last();
    let word = word_at(text, offset);
    if word.is_empty() {
        return match (bytes.get(offset), previous) {
            // `(struct S){}`, `= {}`: an empty initializer.
            (Some(b'}'), Some(b'{')) => Some(Repair::Insert(offset, "0")),
            // `a ?: b`: the omitted operand is the condition (the copy is never evaluated).
            (Some(b':'), Some(b'?')) => Some(Repair::Insert(offset, "0")),
            _ => None,
        };
    }
    if matches!(word, "asm" | "__asm" | "__asm__") && brace_depth(before) == 0 {
        // A top-level `asm ("...");` defines nothing the program's C code declares.
        let open = offset + word.len() + text[offset + word.len()..].find('(')?;
        let close = matching_paren(text, open)?;
        let semicolon = close + 1 + text[close + 1..].find(|c: char| !c.is_whitespace())?;
        return (bytes[semicolon] == b';').then(|| Repair::Blank(offset..semicolon + 1));
    }
    // C89's implicit int: `main () {`, `static x;`, `register i;`, where lang-c wanted a type.
    let after = text[offset + word.len()..].trim_start();
    if expected.contains(&"<typedef_name>") && !is_keyword(word) && after.starts_with(['(', ';', ',', '=', '[', ':']) {
        return Some(Repair::Insert(offset, "int "));
    }
    None
}

/// Same-length rewrites of the seed's own code (from `body_start` on) that lang-c cannot parse;
/// returns where labels are taken as values (`&&label`), as offsets from `body_start`.
pub(super) fn rewrite(parse_text: &mut String, body_start: usize) -> Vec<usize> {
    let mut changes: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
    let mut label_addresses = Vec::new();
    let text = &parse_text[body_start..];
    let bytes = text.as_bytes();
    let tokens = tokens(text);
    // Where a `struct`, `union` or `enum` head takes attributes: after the keyword, after its tag.
    #[derive(PartialEq)]
    enum Head {
        None,
        Keyword,
        Tag,
    }
    let mut head = Head::None;
    // Tokens inside a replaced attribute or call are passed over.
    let mut skip_until = 0;
    for (index, (range, token)) in tokens.iter().cloned().enumerate() {
        if range.start < skip_until {
            continue;
        }
        let word = &text[range.clone()];
        if token == Token::Word && head != Head::None {
            if matches!(word, "__attribute__" | "__attribute") {
                if let Some(open) = text[range.end..].find('(').map(|o| o + range.end) {
                    if let Some(close) = matching_paren(text, open) {
                        if !changes_type_text(&text[open..close]) {
                            changes.push((range.start..close + 1, ""));
                        }
                        skip_until = close + 1;
                    }
                }
                continue;
            }
            if head == Head::Keyword {
                head = Head::Tag;
                continue;
            }
        }
        head = Head::None;
        if token == Token::Punct && bytes[range.start] == b'&' && index > 0 {
            // `&&label` where an operand is expected (after an operator, a `(`, `=`, `,`, `{`
            // or `return`; `a && b` follows an operand) is the label's address: an integer
            // constant stands for it, so lang-c parses the expression.
            let (before, before_token) = &tokens[index - 1];
            let operand_before = match before_token {
                Token::Word => text[before.clone()] != *"return",
                Token::Literal => true,
                Token::Punct => matches!(bytes[before.start], b')' | b']'),
            };
            let label = tokens.get(index + 2).filter(|(_, t)| *t == Token::Word);
            let second = tokens
                .get(index + 1)
                .filter(|(r, _)| r.start == range.end && bytes[r.start] == b'&');
            if let (false, Some(_), Some((label, _))) = (operand_before, second, label) {
                if bytes[before.start] != b'&' || before.end != range.start {
                    changes.push((range.start..label.end, "0"));
                    label_addresses.push(range.start);
                    skip_until = label.end;
                }
            }
            continue;
        }
        if token != Token::Word {
            continue;
        }
        match word {
            // `goto *expression;`: an identifier stands for the expression, so lang-c parses a
            // `goto` (the model gives it no target label).
            "goto" => {
                let star = tokens
                    .get(index + 1)
                    .filter(|(r, t)| *t == Token::Punct && bytes[r.start] == b'*');
                if let Some((star, _)) = star {
                    if let Some(end) = statement_end(text, star.start) {
                        changes.push((star.start..end, "_"));
                        skip_until = end;
                    }
                }
            }
            // `__label__ a, b;` declares labels local to a block: the labels themselves are
            // statements of the model, and it has no scopes for labels.
            "__label__" => {
                if let Some(end) = statement_end(text, range.end) {
                    changes.push((range.start..end + 1, ""));
                    skip_until = end + 1;
                }
            }
            "__int128" | "__int128_t" | "__uint128_t" => changes.push((range, "_Float64")),
            "__real__" | "__imag__" | "__real" | "__imag" => changes.push((range, "+")),
            "__alignof__" | "__alignof" => changes.push((range, "sizeof")),
            "__builtin_types_compatible_p" => {
                if let Some(open) = text[range.end..].find('(').map(|o| o + range.end) {
                    if text[range.end..open].trim().is_empty() {
                        if let Some(close) = matching_paren(text, open) {
                            changes.push((range.start..close + 1, "+1"));
                            skip_until = close + 1;
                        }
                    }
                }
            }
            "struct" | "union" | "enum" => head = Head::Keyword,
            _ => {}
        }
    }
    for (range, replacement) in changes {
        let range = range.start + body_start..range.end + body_start;
        let len = range.len();
        debug_assert!(replacement.len() <= len);
        let mut new = String::with_capacity(len);
        new.push_str(replacement);
        // Line breaks stay where they were, so that lang-c's positions stay right.
        for c in parse_text[range.clone()].chars().skip(replacement.len()) {
            new.push(if c == '\n' { '\n' } else { ' ' });
        }
        if new.len() == len {
            parse_text.replace_range(range, &new);
        }
    }
    label_addresses
}

/// The offset of the `;` that ends the statement going on at `from` (outside parentheses).
fn statement_end(text: &str, from: usize) -> Option<usize> {
    let mut depth = 0i64;
    for (range, token) in tokens(&text[from..]) {
        if token != Token::Punct {
            continue;
        }
        match text.as_bytes()[from + range.start] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b';' if depth == 0 => return Some(from + range.start),
            _ => {}
        }
        if depth < 0 {
            return None;
        }
    }
    None
}

fn blank(text: &mut String, range: std::ops::Range<usize>) {
    let new: String = text[range.clone()]
        .chars()
        .map(|c| if c == '\n' { '\n' } else { ' ' })
        .collect();
    if new.len() == range.len() {
        text.replace_range(range, &new);
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Token {
    Word,
    /// A number or a string or character literal (its last byte).
    Literal,
    Punct,
}

/// Identifiers and keywords, and other non-blank characters one by one, skipping string and
/// character literals (preprocessed text has no comments).
fn tokens(text: &str) -> Vec<(std::ops::Range<usize>, Token)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b.is_ascii_alphabetic() || b == b'_' {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            out.push((start..i, Token::Word));
        } else if b.is_ascii_digit() {
            // A number with its suffix (`1.0i`, `0x1p3f`): no identifier starts inside it.
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] == b'.') {
                i += 1;
            }
            out.push((i - 1..i, Token::Literal));
        } else if b == b'"' || b == b'\'' {
            i += 1;
            while i < bytes.len() && bytes[i] != b {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
            out.push((i.min(bytes.len()) - 1..i.min(bytes.len()), Token::Literal));
        } else {
            if !b.is_ascii_whitespace() {
                out.push((i..i + 1, Token::Punct));
            }
            i += 1;
        }
    }
    out
}

/// The offset of the parenthesis that closes the one at `open`, skipping literals.
fn matching_paren(text: &str, open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (range, token) in tokens(&text[open..]) {
        if token != Token::Punct {
            continue;
        }
        match text.as_bytes()[open + range.start] {
            b'(' => depth += 1,
            b')' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(open + range.start);
                }
            }
            _ => {}
        }
    }
    None
}

fn brace_depth(text: &str) -> i64 {
    tokens(text)
        .into_iter()
        .filter(|(_, t)| *t == Token::Punct)
        .map(|(r, _)| match text.as_bytes()[r.start] {
            b'{' => 1,
            b'}' => -1,
            _ => 0,
        })
        .sum()
}

fn word_at(text: &str, offset: usize) -> &str {
    let rest = &text[offset..];
    if !rest.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
        return "";
    }
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..len]
}

fn is_keyword(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
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
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_Generic",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
        "asm",
        "typeof",
    ];
    KEYWORDS.contains(&word) || word.starts_with("__")
}

/// Attributes that change a type's values (`vector_size`, `mode`): the model cannot take
/// `int x __attribute__((mode (DI)))` for an int.
fn is_type_changing(name: &str) -> bool {
    matches!(name.trim_matches('_'), "vector_size" | "mode" | "ext_vector_type")
}

fn changes_type_text(attribute: &str) -> bool {
    tokens(attribute)
        .into_iter()
        .any(|(r, t)| t == Token::Word && is_type_changing(&attribute[r]))
}

/// Whether a declaration, parameter or field carries an attribute that changes its type
/// ([`is_type_changing`]): the model then takes its type for opaque.
pub(super) fn changes_type<N: Visitable>(node: &N) -> bool {
    let mut finder = TypeAttributes(false);
    node.visit(&mut finder);
    finder.0
}

struct TypeAttributes(bool);

impl<'ast> Visit<'ast> for TypeAttributes {
    fn visit_attribute(&mut self, attribute: &'ast Attribute, span: &'ast Span) {
        self.0 |= is_type_changing(&attribute.name.node);
        visit::visit_attribute(self, attribute, span);
    }
}

/// The lang-c nodes [`changes_type`] looks into.
pub(super) trait Visitable {
    fn visit<'ast>(&'ast self, visitor: &mut impl Visit<'ast>);
}

impl Visitable for Declaration {
    fn visit<'ast>(&'ast self, visitor: &mut impl Visit<'ast>) {
        visit::visit_declaration(visitor, self, &NO_SPAN);
    }
}

impl Visitable for ParameterDeclaration {
    fn visit<'ast>(&'ast self, visitor: &mut impl Visit<'ast>) {
        visit::visit_parameter_declaration(visitor, self, &NO_SPAN);
    }
}

impl Visitable for StructField {
    fn visit<'ast>(&'ast self, visitor: &mut impl Visit<'ast>) {
        visit::visit_struct_field(visitor, self, &NO_SPAN);
    }
}

/// Whether the text may hold a statement expression (`(` then `{`), outside literals.
pub(super) fn may_hold_statement_expressions(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut previous = None;
    tokens(text).into_iter().any(|(range, token)| {
        let this = (token == Token::Punct).then(|| bytes[range.start]);
        let found = previous == Some(b'(') && this == Some(b'{');
        previous = this;
        found
    })
}

/// Whether a statement's own expressions and declarations (not its child statements, which
/// the model has as statements of their own) hold a statement expression (`({ ... })`) with a
/// jump or a label inside: `goto`, `return`, `break`, `continue`, a label (`case` and `default`
/// included) or `asm`. The model has no statements inside expressions, so nothing edits inside
/// a statement expression; but the statement that holds such a jump must also be kept whole
/// and out of the transplant pool, which looks only at the statement table for jumps.
pub(super) fn hides_jumps(statement: &Statement) -> bool {
    let mut finder = HiddenJumps {
        in_expression: 0,
        at_root: true,
        found: false,
    };
    finder.visit_statement(statement, &NO_SPAN);
    finder.found
}

struct HiddenJumps {
    in_expression: usize,
    at_root: bool,
    found: bool,
}

impl<'ast> Visit<'ast> for HiddenJumps {
    fn visit_expression(&mut self, expression: &'ast Expression, span: &'ast Span) {
        if self.found {
            return;
        }
        let statement_expression = usize::from(matches!(expression, Expression::Statement(_)));
        self.in_expression += statement_expression;
        visit::visit_expression(self, expression, span);
        self.in_expression -= statement_expression;
    }

    fn visit_statement(&mut self, statement: &'ast Statement, span: &'ast Span) {
        if self.found {
            return;
        }
        if self.in_expression == 0 {
            if !self.at_root {
                return;
            }
            self.at_root = false;
        } else if matches!(
            statement,
            Statement::Goto(_)
                | Statement::Return(_)
                | Statement::Break
                | Statement::Continue
                | Statement::Labeled(_)
                | Statement::Asm(_)
        ) {
            self.found = true;
            return;
        }
        visit::visit_statement(self, statement, span);
    }
}

#[cfg(test)]
mod tests {
    use crate::ctype::{CType, IntKind};
    use crate::model::{Program, StmtKind};
    use crate::pool::Pool;
    use crate::seed::SeedId;

    fn parse(text: &str) -> Program {
        Program::parse_parts(text, "", 0, &Default::default()).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    fn var(p: &Program, scope: usize, name: &str) -> CType {
        p.scopes[scope].vars.iter().find(|v| v.name == name).unwrap().ty.clone()
    }

    /// The statements of the program, as their kinds and texts in the seed.
    fn statements(p: &Program) -> Vec<(StmtKind, &str)> {
        p.statements.iter().map(|s| (s.kind, p.source_of(s.id))).collect()
    }

    #[test]
    fn implicit_int_definitions_and_declarations_parse_with_exact_spans() {
        let text = "static count;\nmain ()\n{\n  register i;\n  i = count;\n  if (i)\n    i++;\n  return i;\n}\n";
        let p = parse(text);
        assert_eq!(p.text, text);
        assert_eq!(
            statements(&p),
            [
                (StmtKind::Compound, &text[text.find("{\n").unwrap()..text.len() - 1]),
                (StmtKind::Expression, "i = count;"),
                (StmtKind::If, "if (i)\n    i++;"),
                (StmtKind::Expression, "i++;"),
                (StmtKind::Return, "return i;"),
            ]
        );
        assert_eq!(p.statement(4).lines, (8, 8));
        assert!(p.statement(4).ends_function);
        assert_eq!(p.functions["main"].signature, "main ()");
        assert_eq!(p.functions["main"].offset, text.find("main").unwrap());
        assert_eq!(var(&p, 0, "count"), CType::Int(IntKind::Int));
        let names: Vec<_> = p.vars_in_scope(1).iter().map(|v| v.name.clone()).collect();
        assert_eq!(names, ["i", "count"]);
    }

    #[test]
    fn kr_parameters_are_in_scope_with_their_types() {
        let text = "double g;\nlong\nf (g, s)\n     char *s;\n{\n  return g + *s;\n}\n\nh (a) { return a; }\n";
        let p = parse(text);
        let ret = p
            .statements
            .iter()
            .find(|s| p.source_of(s.id) == "return g + *s;")
            .unwrap();
        let vars: Vec<_> = p.vars_in_scope(ret.id).into_iter().cloned().collect();
        let names: Vec<_> = vars.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["g", "s", "g"]);
        assert_eq!(
            vars[0].ty,
            CType::Int(IntKind::Int),
            "an undeclared K&R parameter is an int"
        );
        assert!(vars[0].initialized && !vars[0].global);
        assert_eq!(vars[1].ty, CType::Pointer(Box::new(CType::Int(IntKind::Char))));
        assert_eq!(vars[2].ty, CType::Double);
        assert_eq!(p.source_of(p.roots[1]), "{ return a; }");
    }

    #[test]
    fn attributes_of_struct_heads_are_passed_over() {
        let text = "struct __attribute__((packed)) S { unsigned short i : 1, k : 11; };\ntypedef struct __attribute ((scalar_storage_order (\"big-endian\"))) { int b; } B;\nstruct T __attribute__((aligned (8))) { int a; } t;\ntypedef struct __attribute((__may_alias__)) { short x; } U;\nstruct S s;\nint f (void) { s.k = 3; return s.k + t.a; }\n";
        let p = parse(text);
        let fields: Vec<_> = p.records["S"].iter().map(|f| (f.name.as_str(), f.bit_width)).collect();
        assert_eq!(fields, [("i", Some(1)), ("k", Some(11))]);
        assert_eq!(p.records["T"][0].ty, CType::Int(IntKind::Int));
        assert!(matches!(&p.typedefs["B"], CType::Record { .. }));
        assert!(matches!(&p.typedefs["U"], CType::Record { union: false, .. }));
        assert_eq!(statements(&p)[1], (StmtKind::Expression, "s.k = 3;"));
    }

    #[test]
    fn int128_is_opaque() {
        let text = "typedef unsigned __int128 u128;\n__int128_t g;\nu128 h;\nint f (__int128 x) { __uint128_t y = x; y++; return 0; }\n";
        let p = parse(text);
        assert_eq!(p.typedefs["u128"], CType::Other);
        assert_eq!(var(&p, 0, "g"), CType::Other);
        assert_eq!(var(&p, 0, "h"), CType::Other);
        let vars = p.vars_in_scope(2);
        assert!(vars.iter().all(|v| v.ty == CType::Other), "{vars:?}");
        assert_eq!(p.functions["f"].signature, "int f (__int128 x)");
        assert_eq!(statements(&p)[1], (StmtKind::Expression, "y++;"));
    }

    #[test]
    fn complex_parts_alignof_and_types_compatible_parse() {
        let text = "_Complex double z;\nfloat _Complex c;\n_Complex float d;\nint i;\nfloat r[__builtin_types_compatible_p (int, typeof (i))];\nint f (void)\n{\n  double *d = &(__real z);\n  __real__ z = 1.0;\n  __imag__ z = *d;\n  return __alignof__ (i) + __alignof (i);\n}\n";
        let p = parse(text);
        for complex in ["z", "c", "d"] {
            assert_eq!(var(&p, 0, complex), CType::Other);
        }
        assert_eq!(var(&p, 0, "r"), CType::Array(Box::new(CType::Float), None));
        let kinds: Vec<_> = statements(&p).into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            kinds,
            [
                StmtKind::Compound,
                StmtKind::Expression,
                StmtKind::Expression,
                StmtKind::Return
            ]
        );
        assert_eq!(p.source_of(1), "__real__ z = 1.0;");
    }

    #[test]
    fn empty_initializers_omitted_operands_and_top_level_asm_parse() {
        let text = "__asm__ (\"answer: movl $42, %eax\\n ret\");\nstruct P { int x; };\nint answer (void);\nint f (int a)\n{\n  struct P p = (struct P){};\n  a = a ?: p.x;\n  return a ? : answer ();\n}\n";
        let p = parse(text);
        assert_eq!(
            statements(&p)[1..],
            [
                (StmtKind::Expression, "a = a ?: p.x;"),
                (StmtKind::Return, "return a ? : answer ();")
            ]
        );
        assert!(p.functions.contains_key("answer"));
    }

    #[test]
    fn vector_and_mode_attributes_make_types_opaque() {
        let text = "typedef int V __attribute__ ((vector_size (16)));\nV v;\nint w __attribute__ ((mode (DI)));\nint plain __attribute__ ((aligned (16)));\nstruct R { int q __attribute__ ((__mode__ (__QI__))); int n; };\nint f (V p, int m __attribute__ ((mode (HI))), int k) { return k; }\n";
        let p = parse(text);
        assert_eq!(p.typedefs["V"], CType::Other);
        assert_eq!(var(&p, 0, "v"), CType::Other);
        assert_eq!(var(&p, 0, "w"), CType::Other);
        assert_eq!(var(&p, 0, "plain"), CType::Int(IntKind::Int));
        let fields: Vec<_> = p.records["R"].iter().map(|f| f.ty.clone()).collect();
        assert_eq!(fields, [CType::Other, CType::Int(IntKind::Int)]);
        let params: Vec<_> = p.vars_in_scope(1)[..3]
            .iter()
            .map(|v| (v.name.clone(), v.ty.clone()))
            .collect();
        assert_eq!(
            params,
            [
                ("k".to_string(), CType::Int(IntKind::Int)),
                ("m".to_string(), CType::Other),
                ("p".to_string(), CType::Other)
            ]
        );
    }

    #[test]
    fn statement_expressions_are_opaque_and_hidden_jumps_keep_statements_whole() {
        let text = "int f (int x)\n{\n  int y = ({ int t = x; t + 1; });\n  y = ({ int t = x; t * 2; });\n  for (;;)\n    y = ({ if (y > 3) break; y + 1; });\n  y += ({ int u = y; if (u) goto out; u; });\nout:\n  return y;\n}\n";
        // Every line but the function's first never ran.
        let counts = (3..=9).map(|l| (l, 0)).chain([(1, 1)]).collect();
        let p = Program::parse_parts(text, "", 0, &counts).unwrap();
        assert_eq!(
            statements(&p)[1..],
            [
                (StmtKind::Expression, "y = ({ int t = x; t * 2; });"),
                (StmtKind::For, "for (;;)\n    y = ({ if (y > 3) break; y + 1; });"),
                (StmtKind::Expression, "y = ({ if (y > 3) break; y + 1; });"),
                (StmtKind::Expression, "y += ({ int u = y; if (u) goto out; u; });"),
                (StmtKind::Labeled, "out:\n  return y;"),
                (StmtKind::Return, "return y;"),
            ],
            "no statement inside a statement expression is in the table"
        );
        let deletable: Vec<_> = p.statements.iter().map(|s| s.is_deletable()).collect();
        assert_eq!(deletable, [false, true, false, false, false, false, false]);
        // The variables of a statement expression are in no scope.
        let names: Vec<_> = p.vars_in_scope(1).iter().map(|v| v.name.clone()).collect();
        assert_eq!(names, ["y", "x"]);
        // Only the statement without a hidden jump can be transplanted.
        let mut pool = Pool::default();
        pool.add_seed(&SeedId::of_text(text), &p);
        assert_eq!(pool.entries.len(), 1);
        assert_eq!(pool.entries[0].shape.kind, StmtKind::Expression);
    }

    #[test]
    fn labels_as_values_and_computed_gotos_are_kept_whole() {
        let text = "int f (int i)\n{\n  __label__ out;\n  static const void *l[] = { &&a, &&b };\n  static int d[] = { &&b - &&a };\n  void *p = &&a;\n  if (i && d[0])\n    p = i > 1 ? &&b : &&a;\n  i = i & &d[0] != 0;\n  goto *l[i & 1];\na:\n  return 1;\nb:\n  goto *(p);\nout:\n  return 0;\n}\n";
        // Every line but the function's first never ran.
        let counts = (3..=16).map(|l| (l, 0)).chain([(1, 1)]).collect();
        let p = Program::parse_parts(text, "", 0, &counts).unwrap();
        let table: Vec<_> = statements(&p)
            .into_iter()
            .zip(&p.statements)
            .map(|((kind, text), s)| (kind, text, s.label.as_deref(), s.is_deletable()))
            .collect();
        assert_eq!(
            table[1..],
            [
                (StmtKind::If, "if (i && d[0])\n    p = i > 1 ? &&b : &&a;", None, false),
                (StmtKind::Expression, "p = i > 1 ? &&b : &&a;", None, false),
                (StmtKind::Expression, "i = i & &d[0] != 0;", None, true),
                (StmtKind::Goto, "goto *l[i & 1];", None, true),
                (StmtKind::Labeled, "a:\n  return 1;", Some("a"), false),
                (StmtKind::Return, "return 1;", None, true),
                (StmtKind::Labeled, "b:\n  goto *(p);", Some("b"), false),
                (StmtKind::Goto, "goto *(p);", None, true),
                (StmtKind::Labeled, "out:\n  return 0;", Some("out"), false),
                (StmtKind::Return, "return 0;", None, false),
            ]
        );
        let mut pool = Pool::default();
        pool.add_seed(&SeedId::of_text(text), &p);
        assert_eq!(pool.entries.len(), 1, "only `i = i & &d[0] != 0;` may be transplanted");
    }

    #[test]
    fn errors_after_repairs_name_the_seed_line() {
        let text = "main ()\n{\n  return 0;\n}\nint g (void *p)\n{\n  int h (void) { return 1; }\n}\n";
        let e = Program::parse_parts(text, "", 0, &Default::default()).unwrap_err();
        assert!(e.message.starts_with("syntax error at line 7,"), "{e}");
        let nested = "int f (void)\n{\n  int g (int a) { return a; }\n  return g (1);\n}\n";
        let e = Program::parse_parts(nested, "", 0, &Default::default()).unwrap_err();
        assert!(e.message.starts_with("syntax error at line 3,"), "{e}");
    }
}
