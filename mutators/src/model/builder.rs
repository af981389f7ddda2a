//! Building a [`Program`] from lang-c's syntax tree: statements with their spans, nesting
//! and profile counts; scopes and their variables; records, functions and typedefs.

use super::{
    Execution, Field, FunctionDecl, ParseError, Program, Scope, ScopeId, Statement, StmtId, StmtKind, Variable,
};
use crate::ctype::{CType, IntKind, IntSpecifiers};
use lang_c::ast::{
    ArraySize, BlockItem, Constant, DeclarationSpecifier, Declarator, DeclaratorKind, DerivedDeclarator, Expression,
    ExternalDeclaration, ForInitializer, Label, PointerQualifier, SpecifierQualifier, Statement as AstStatement,
    StorageClassSpecifier, StructDeclaration, TypeQualifier, TypeSpecifier,
};
use lang_c::driver::{parse_preprocessed, Config, Flavor};
use lang_c::span::Node;
use std::collections::{BTreeMap, HashMap};

/// Parses `text` (see [`Program::parse_parts`]).
pub(super) fn parse(
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
