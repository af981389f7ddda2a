//! The C program model: a seed parsed with lang-c into a table of statements (byte spans in the
//! seed text, nesting, whether the profile saw them run) and the variables in scope at each.

use crate::ctype::{CType, IntKind, IntSpecifiers};
use lang_c::ast::{
    ArraySize, BlockItem, Constant, DeclarationSpecifier, Declarator, DeclaratorKind, DerivedDeclarator, Expression,
    ExternalDeclaration, ForInitializer, Label, PointerQualifier, SpecifierQualifier, Statement as AstStatement,
    StorageClassSpecifier, StructDeclaration, TypeQualifier, TypeSpecifier,
};
use lang_c::driver::{parse_preprocessed, Config, Flavor};
use lang_c::span::Node;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

/// Index of a statement in [`Program::statements`]; stable for a given seed text.
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

#[derive(Clone, Debug)]
pub struct Program {
    pub text: String,
    pub statements: Vec<Statement>,
    pub scopes: Vec<Scope>,
    /// Function bodies, in source order.
    pub roots: Vec<StmtId>,
    /// Fields of every struct and union, by tag.
    pub records: BTreeMap<String, Vec<Field>>,
    /// Declared functions, by name (the header expansion included).
    pub functions: BTreeMap<String, FunctionDecl>,
    pub typedefs: BTreeMap<String, CType>,
}

impl Program {
    /// Parses `text`, whose first `include_block_len` bytes are `#include` lines that expand to
    /// `headers`; `line_counts` are gcov's counts for the lines of `text`.
    pub fn parse_parts(
        text: &str,
        headers: &str,
        include_block_len: usize,
        line_counts: &BTreeMap<u32, u64>,
    ) -> Result<Program, ParseError> {
        let body = text.get(include_block_len..).ok_or_else(|| ParseError {
            message: "include block is longer than the seed".into(),
        })?;
        let parse_text = format!("{headers}{body}");
        let config = Config {
            flavor: Flavor::GnuC11,
            ..Config::default()
        };
        let parse = parse_preprocessed(&config, parse_text.clone()).map_err(|e| {
            let seed_offset = (e.offset + include_block_len).saturating_sub(headers.len());
            let line = text[..seed_offset.min(text.len())].matches('\n').count() + 1;
            let in_headers = if e.offset < headers.len() {
                " (in the system headers)"
            } else {
                ""
            };
            let mut expected: Vec<_> = e.expected.iter().copied().collect();
            expected.sort();
            ParseError {
                message: format!(
                    "syntax error at line {line}{in_headers}, expected one of {}",
                    expected.join(" ")
                ),
            }
        })?;
        let mut builder = Builder {
            text,
            parse_text: &parse_text,
            functions: BTreeMap::new(),
            shift: include_block_len as isize - headers.len() as isize,
            header_len: headers.len(),
            line_starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
            line_counts,
            statements: Vec::new(),
            scopes: vec![Scope::default()],
            roots: Vec::new(),
            records: BTreeMap::new(),
            typedefs: HashMap::new(),
            anonymous_records: 0,
        };
        for external in &parse.unit.0 {
            builder.external(external);
        }
        Ok(Program {
            text: text.to_string(),
            statements: builder.statements,
            scopes: builder.scopes,
            roots: builder.roots,
            records: builder.records,
            functions: builder.functions,
            typedefs: builder.typedefs.into_iter().collect(),
        })
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

struct Builder<'a> {
    text: &'a str,
    parse_text: &'a str,
    functions: BTreeMap<String, FunctionDecl>,
    /// Added to a parse-text offset to get a seed-text offset.
    shift: isize,
    header_len: usize,
    line_starts: Vec<usize>,
    line_counts: &'a BTreeMap<u32, u64>,
    statements: Vec<Statement>,
    scopes: Vec<Scope>,
    roots: Vec<StmtId>,
    records: BTreeMap<String, Vec<Field>>,
    typedefs: HashMap<String, CType>,
    anonymous_records: usize,
}

#[derive(Clone, Copy)]
struct Context {
    parent: Option<StmtId>,
    depth: u32,
    in_loop: bool,
    in_switch: bool,
    scope: ScopeId,
}

/// Type information gathered from declaration specifiers.
struct BaseType {
    ty: CType,
    is_const: bool,
    is_volatile: bool,
    is_typedef: bool,
}

impl<'a> Builder<'a> {
    fn external(&mut self, external: &Node<ExternalDeclaration>) {
        match &external.node {
            ExternalDeclaration::Declaration(decl) => {
                // The system headers' variables (`signgam`, `stdin`) may need libraries that
                // the program does not link: only its own variables are in scope.
                let scope = if decl.span.start < self.header_len {
                    None
                } else {
                    Some(0)
                };
                self.declaration(&decl.node, scope, true);
                let text = &self.parse_text[decl.span.start..decl.span.end];
                let decl_of = FunctionDecl {
                    signature: normalize_space(text.trim_end().trim_end_matches(';')),
                    offset: self.seed_offset(decl.span.start),
                };
                for init in &decl.node.declarators {
                    if let (Some(name), CType::Function) =
                        self.declarator_type(CType::Other, &init.node.declarator.node)
                    {
                        self.functions.entry(name).or_insert_with(|| decl_of.clone());
                    }
                }
            }
            ExternalDeclaration::StaticAssert(_) => {}
            ExternalDeclaration::FunctionDefinition(node) => {
                let def = &node.node;
                if let (Some(name), _) = self.declarator_type(CType::Other, &def.declarator.node) {
                    let decl_of = FunctionDecl {
                        signature: normalize_space(&self.parse_text[node.span.start..def.statement.span.start]),
                        offset: self.seed_offset(node.span.start),
                    };
                    self.functions.entry(name).or_insert(decl_of);
                }
                let params = self.new_scope_at(0, self.scopes[0].vars.len());
                let parameters = def.declarator.node.derived.iter().find_map(|d| match &d.node {
                    DerivedDeclarator::Function(f) => Some(&f.node.parameters),
                    _ => None,
                });
                for param in parameters.into_iter().flatten() {
                    let base = self.base_type(param.node.specifiers.iter().filter_map(decl_spec));
                    if let Some(declarator) = &param.node.declarator {
                        self.add_variable(params, &base, &declarator.node, false);
                    }
                }
                if def.statement.span.start < self.header_len {
                    return;
                }
                let ctx = Context {
                    parent: None,
                    depth: 0,
                    in_loop: false,
                    in_switch: false,
                    scope: params,
                };
                let visible = self.scopes[params].vars.len();
                let body = self.statement(&def.statement, ctx, visible);
                self.statements[body as usize].function_body = true;
                self.mark_final_returns(body);
                self.roots.push(body);
            }
        }
    }

    /// Records a declaration's typedefs, and its variables in `scope` if there is one.
    fn declaration(&mut self, decl: &lang_c::ast::Declaration, scope: Option<ScopeId>, global: bool) {
        let base = self.base_type(decl.specifiers.iter().filter_map(decl_spec));
        let is_static = decl.specifiers.iter().any(
            |s| matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Static),
        );
        for init in &decl.declarators {
            let (name, ty) = self.declarator_type(base.ty.clone(), &init.node.declarator.node);
            let Some(name) = name else { continue };
            if base.is_typedef {
                self.typedefs.insert(name, ty);
            } else if let (Some(scope), false) = (scope, ty == CType::Function) {
                self.scopes[scope].vars.push(Variable {
                    name,
                    ty,
                    is_const: base.is_const,
                    is_volatile: base.is_volatile,
                    global,
                    qualifiers: qualifiers(&base, &init.node.declarator.node),
                    initialized: global || is_static || init.node.initializer.is_some(),
                });
            }
        }
    }

    fn add_variable(&mut self, scope: ScopeId, base: &BaseType, declarator: &Declarator, global: bool) {
        let (name, ty) = self.declarator_type(base.ty.clone(), declarator);
        if let Some(name) = name {
            if ty != CType::Function {
                let var = Variable {
                    name,
                    ty,
                    is_const: base.is_const,
                    is_volatile: base.is_volatile,
                    global,
                    qualifiers: qualifiers(base, declarator),
                    initialized: true,
                };
                self.scopes[scope].vars.push(var);
            }
        }
    }

    fn base_type<'s>(&mut self, specs: impl Iterator<Item = SpecOrQual<'s>>) -> BaseType {
        let mut ints = IntSpecifiers::default();
        let mut ty = None;
        let mut base = BaseType {
            ty: CType::Other,
            is_const: false,
            is_volatile: false,
            is_typedef: false,
        };
        let mut long_double = false;
        for spec in specs {
            match spec {
                SpecOrQual::Typedef => base.is_typedef = true,
                SpecOrQual::Qualifier(TypeQualifier::Const) => base.is_const = true,
                SpecOrQual::Qualifier(TypeQualifier::Volatile) => base.is_volatile = true,
                SpecOrQual::Qualifier(_) => {}
                SpecOrQual::Type(t) => match t {
                    TypeSpecifier::Void => ty = Some(CType::Void),
                    TypeSpecifier::Char => ints.char = true,
                    TypeSpecifier::Short => ints.short = true,
                    TypeSpecifier::Int => ints.int = true,
                    TypeSpecifier::Long => ints.longs += 1,
                    TypeSpecifier::Signed => ints.signed = true,
                    TypeSpecifier::Unsigned => ints.unsigned = true,
                    TypeSpecifier::Bool => ints.bool = true,
                    TypeSpecifier::Float => ty = Some(CType::Float),
                    TypeSpecifier::Double => {
                        ty = Some(CType::Double);
                        long_double = ints.longs > 0;
                    }
                    TypeSpecifier::Enum(_) => ty = Some(CType::Int(IntKind::UInt)),
                    TypeSpecifier::Struct(s) => ty = Some(self.record(&s.node)),
                    TypeSpecifier::TypedefName(name) => {
                        ty = Some(self.typedefs.get(&name.node.name).cloned().unwrap_or(CType::Other))
                    }
                    TypeSpecifier::Complex
                    | TypeSpecifier::Atomic(_)
                    | TypeSpecifier::TypeOf(_)
                    | TypeSpecifier::TS18661Float(_) => ty = Some(CType::Other),
                },
            }
        }
        base.ty = match ty {
            Some(CType::Double) if long_double || ints.longs > 0 => CType::LongDouble,
            Some(CType::Other) if !ints.is_empty() => CType::Other,
            Some(t) => t,
            None if !ints.is_empty() => CType::Int(ints.kind()),
            None => CType::Other,
        };
        base
    }

    fn record(&mut self, s: &lang_c::ast::StructType) -> CType {
        let union = s.kind.node == lang_c::ast::StructKind::Union;
        let tag = match &s.identifier {
            Some(id) => id.node.name.clone(),
            None => {
                self.anonymous_records += 1;
                format!("<anon {}>", self.anonymous_records)
            }
        };
        if let Some(declarations) = &s.declarations {
            let mut fields = Vec::new();
            for declaration in declarations {
                let StructDeclaration::Field(field) = &declaration.node else {
                    continue;
                };
                let base = self.base_type(field.node.specifiers.iter().map(|s| match &s.node {
                    SpecifierQualifier::TypeSpecifier(t) => SpecOrQual::Type(&t.node),
                    SpecifierQualifier::TypeQualifier(q) => SpecOrQual::Qualifier(q.node.clone()),
                    SpecifierQualifier::Extension(_) => SpecOrQual::Qualifier(TypeQualifier::Nonnull),
                }));
                for d in &field.node.declarators {
                    if let Some(declarator) = &d.node.declarator {
                        let (name, ty) = self.declarator_type(base.ty.clone(), &declarator.node);
                        if let Some(name) = name {
                            let bit_width = d
                                .node
                                .bit_width
                                .as_ref()
                                .map(|w| integer_constant(&w.node).unwrap_or(0));
                            fields.push(Field {
                                name,
                                ty,
                                bit_width,
                                is_const: base.is_const,
                                is_volatile: base.is_volatile,
                            });
                        }
                    }
                }
            }
            self.records.insert(tag.clone(), fields);
        }
        CType::Record { union, tag }
    }

    fn declarator_type(&mut self, base: CType, declarator: &Declarator) -> (Option<String>, CType) {
        // `T *a[2][3]` is an array 2 of array 3 of pointer to T: prefix pointers bind first,
        // then the postfix declarators from the last one inwards.
        let (pointers, postfix): (Vec<_>, Vec<_>) = declarator
            .derived
            .iter()
            .partition(|d| matches!(d.node, DerivedDeclarator::Pointer(_)));
        let mut ty = base;
        for derived in pointers.into_iter().chain(postfix.into_iter().rev()) {
            ty = match &derived.node {
                DerivedDeclarator::Pointer(_) => CType::Pointer(Box::new(ty)),
                DerivedDeclarator::Array(array) => {
                    let len = match &array.node.size {
                        ArraySize::VariableExpression(e) | ArraySize::StaticExpression(e) => integer_constant(&e.node),
                        _ => None,
                    };
                    CType::Array(Box::new(ty), len)
                }
                DerivedDeclarator::Function(_) | DerivedDeclarator::KRFunction(_) => CType::Function,
                DerivedDeclarator::Block(_) => CType::Other,
            };
        }
        match &declarator.kind.node {
            DeclaratorKind::Identifier(id) => (Some(id.node.name.clone()), ty),
            DeclaratorKind::Declarator(inner) => self.declarator_type(ty, &inner.node),
            DeclaratorKind::Abstract => (None, ty),
        }
    }

    /// The seed-text offset of a parse-text offset (0 inside the header expansion).
    fn seed_offset(&self, parse_offset: usize) -> usize {
        if parse_offset < self.header_len {
            0
        } else {
            (parse_offset as isize + self.shift) as usize
        }
    }

    fn line_of(&self, offset: usize) -> u32 {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }

    fn execution(&self, lines: (u32, u32)) -> Execution {
        let mut seen = false;
        for (_, &count) in self.line_counts.range(lines.0..=lines.1) {
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

    fn statement(&mut self, node: &Node<AstStatement>, ctx: Context, visible: usize) -> StmtId {
        let start = (node.span.start as isize + self.shift) as usize;
        let end = (node.span.end as isize + self.shift) as usize;
        // lang-c's spans may take in the whitespace that follows a statement.
        let end = start + self.text[start..end].trim_end().len();
        let lines = (self.line_of(start), self.line_of(end.saturating_sub(1).max(start)));
        let id = self.statements.len() as StmtId;
        let first_inner_scope = self.scopes.len();
        let label = match &node.node {
            AstStatement::Labeled(l) => match &l.node.label.node {
                Label::Identifier(name) => Some(name.node.name.clone()),
                _ => None,
            },
            AstStatement::Goto(name) => Some(name.node.name.clone()),
            _ => None,
        };
        let kind = match &node.node {
            AstStatement::Labeled(_) => StmtKind::Labeled,
            AstStatement::Compound(_) => StmtKind::Compound,
            AstStatement::Expression(_) => StmtKind::Expression,
            AstStatement::If(_) => StmtKind::If,
            AstStatement::Switch(_) => StmtKind::Switch,
            AstStatement::While(_) => StmtKind::While,
            AstStatement::DoWhile(_) => StmtKind::DoWhile,
            AstStatement::For(_) => StmtKind::For,
            AstStatement::Goto(_) => StmtKind::Goto,
            AstStatement::Continue => StmtKind::Continue,
            AstStatement::Break => StmtKind::Break,
            AstStatement::Return(_) => StmtKind::Return,
            AstStatement::Asm(_) => StmtKind::Asm,
        };
        self.statements.push(Statement {
            id,
            kind,
            span: start..end,
            lines,
            parent: ctx.parent,
            children: Vec::new(),
            depth: ctx.depth,
            execution: self.execution(lines),
            function_body: false,
            contains_label: false,
            ends_function: false,
            in_loop: ctx.in_loop,
            in_switch: ctx.in_switch,
            scope: ctx.scope,
            visible,
            inner_scopes: first_inner_scope..first_inner_scope,
            label,
        });
        let child_ctx = Context {
            parent: Some(id),
            depth: ctx.depth + 1,
            ..ctx
        };
        let loop_ctx = Context {
            in_loop: true,
            ..child_ctx
        };
        let mut children = Vec::new();
        match &node.node {
            AstStatement::Labeled(labeled) => {
                if matches!(labeled.node.label.node, Label::Identifier(_)) {
                    self.statements[id as usize].contains_label = true;
                }
                children.push(self.statement(&labeled.node.statement, child_ctx, visible));
            }
            AstStatement::Compound(items) => {
                let scope = self.new_scope_at(ctx.scope, visible);
                let inner = Context { scope, ..child_ctx };
                for item in items {
                    match &item.node {
                        BlockItem::Declaration(decl) => self.declaration(&decl.node, Some(scope), false),
                        BlockItem::StaticAssert(_) => {}
                        BlockItem::Statement(s) => {
                            let visible = self.scopes[scope].vars.len();
                            children.push(self.statement(s, inner, visible));
                        }
                    }
                }
            }
            AstStatement::If(s) => {
                children.push(self.statement(&s.node.then_statement, child_ctx, visible));
                if let Some(e) = &s.node.else_statement {
                    children.push(self.statement(e, child_ctx, visible));
                }
            }
            AstStatement::Switch(s) => {
                let switch_ctx = Context {
                    in_switch: true,
                    ..child_ctx
                };
                children.push(self.statement(&s.node.statement, switch_ctx, visible));
            }
            AstStatement::While(s) => children.push(self.statement(&s.node.statement, loop_ctx, visible)),
            AstStatement::DoWhile(s) => children.push(self.statement(&s.node.statement, loop_ctx, visible)),
            AstStatement::For(s) => {
                let (body_ctx, body_visible) = match &s.node.initializer.node {
                    ForInitializer::Declaration(decl) => {
                        let scope = self.new_scope_at(ctx.scope, visible);
                        self.declaration(&decl.node, Some(scope), false);
                        (Context { scope, ..loop_ctx }, self.scopes[scope].vars.len())
                    }
                    _ => (loop_ctx, visible),
                };
                children.push(self.statement(&s.node.statement, body_ctx, body_visible));
            }
            AstStatement::Expression(_)
            | AstStatement::Goto(_)
            | AstStatement::Continue
            | AstStatement::Break
            | AstStatement::Return(_)
            | AstStatement::Asm(_) => {}
        }
        let contains_label = children.iter().any(|&c| self.statements[c as usize].contains_label);
        let scopes_end = self.scopes.len();
        let stmt = &mut self.statements[id as usize];
        stmt.contains_label |= contains_label;
        stmt.children = children;
        stmt.inner_scopes.end = scopes_end;
        id
    }

    /// Marks the `return`s on the last path through `id` (the last statement of a block, both
    /// branches of an `if`), and the statements around them up to the function body.
    fn mark_final_returns(&mut self, id: StmtId) {
        let stmt = &self.statements[id as usize];
        let last_paths: Vec<StmtId> = match stmt.kind {
            StmtKind::Return => {
                let mut at = Some(id);
                while let Some(marked) = at {
                    let stmt = &mut self.statements[marked as usize];
                    stmt.ends_function = true;
                    at = if stmt.function_body { None } else { stmt.parent };
                }
                return;
            }
            StmtKind::Compound => stmt.children.last().copied().into_iter().collect(),
            StmtKind::If | StmtKind::Labeled => stmt.children.clone(),
            _ => Vec::new(),
        };
        for child in last_paths {
            self.mark_final_returns(child);
        }
    }

    fn new_scope_at(&mut self, parent: ScopeId, visible: usize) -> ScopeId {
        self.scopes.push(Scope {
            parent: Some((parent, visible)),
            vars: Vec::new(),
        });
        self.scopes.len() - 1
    }
}

fn qualifiers(base: &BaseType, declarator: &Declarator) -> String {
    let mut out = String::new();
    if base.is_const {
        out.push('c');
    }
    if base.is_volatile {
        out.push('v');
    }
    pointer_qualifiers(declarator, &mut out);
    out
}

fn pointer_qualifiers(declarator: &Declarator, out: &mut String) {
    for derived in &declarator.derived {
        if let DerivedDeclarator::Pointer(quals) = &derived.node {
            out.push('*');
            for q in quals {
                match &q.node {
                    PointerQualifier::TypeQualifier(t) if t.node == TypeQualifier::Const => out.push('c'),
                    PointerQualifier::TypeQualifier(t) if t.node == TypeQualifier::Volatile => out.push('v'),
                    _ => {}
                }
            }
        }
    }
    if let DeclaratorKind::Declarator(inner) = &declarator.kind.node {
        pointer_qualifiers(&inner.node, out);
    }
}

fn normalize_space(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

enum SpecOrQual<'s> {
    Type(&'s TypeSpecifier),
    Qualifier(TypeQualifier),
    Typedef,
}

fn decl_spec(spec: &Node<DeclarationSpecifier>) -> Option<SpecOrQual<'_>> {
    match &spec.node {
        DeclarationSpecifier::TypeSpecifier(t) => Some(SpecOrQual::Type(&t.node)),
        DeclarationSpecifier::TypeQualifier(q) => Some(SpecOrQual::Qualifier(q.node.clone())),
        DeclarationSpecifier::StorageClass(s) if s.node == StorageClassSpecifier::Typedef => Some(SpecOrQual::Typedef),
        _ => None,
    }
}

fn integer_constant(expr: &Expression) -> Option<u64> {
    let Expression::Constant(c) = expr else { return None };
    let Constant::Integer(i) = &c.node else { return None };
    let radix = match i.base {
        lang_c::ast::IntegerBase::Decimal => 10,
        lang_c::ast::IntegerBase::Octal => 8,
        lang_c::ast::IntegerBase::Hexadecimal => 16,
        lang_c::ast::IntegerBase::Binary => 2,
    };
    u64::from_str_radix(&i.number, radix).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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
