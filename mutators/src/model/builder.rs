//! Building a [`Program`] from lang-c's syntax tree: statements with their spans, nesting
//! and profile counts; scopes and their variables; records, functions and typedefs.

use super::{Field, FunctionDecl, FunctionDefinition, ParseError, Program, Scope, ScopeId, Statement, StmtId};
use crate::ctype::CType;
use lang_c::ast::{DerivedDeclarator, ExternalDeclaration};
use lang_c::driver::{parse_preprocessed, Config, Flavor};
use lang_c::span::Node;
use std::collections::{BTreeMap, HashMap, HashSet};

mod declarations;
mod gnu;
mod statements;

/// Parses `text` (see [`Program::parse_parts`]); what each statement's execution was is left
/// to [`Program::with_line_counts`].
pub(super) fn parse(text: &str, headers: &str, include_block_len: usize) -> Result<Program, ParseError> {
    let body = text.get(include_block_len..).ok_or_else(|| ParseError {
        message: "include block is longer than the seed".into(),
    })?;
    let mut parse_text = format!("{headers}{body}");
    let label_addresses = gnu::rewrite(&mut parse_text, headers.len())
        .into_iter()
        .map(|offset| offset + include_block_len)
        .collect();
    let config = Config {
        flavor: Flavor::GnuC11,
        ..Config::default()
    };
    let mut insertions = gnu::Insertions::default();
    let mut repairs = 0;
    let parse = loop {
        match parse_preprocessed(&config, parse_text.clone()) {
            Ok(parse) => break parse,
            Err(e) => {
                let mut expected: Vec<_> = e.expected.iter().copied().collect();
                expected.sort();
                if repairs < gnu::MAX_REPAIRS
                    && gnu::repair(&mut parse_text, &mut insertions, e.offset, &expected, headers.len())
                {
                    repairs += 1;
                    continue;
                }
                let seed_offset = (insertions.original(e.offset) + include_block_len).saturating_sub(headers.len());
                let line = text[..seed_offset.min(text.len())].matches('\n').count() + 1;
                let in_headers = if e.offset < headers.len() {
                    " (in the system headers)"
                } else {
                    ""
                };
                return Err(ParseError {
                    message: format!(
                        "syntax error at line {line}{in_headers}, expected one of {}",
                        expected.join(" ")
                    ),
                });
            }
        }
    };
    let mut builder = Builder {
        text,
        parse_text: &parse_text,
        functions: BTreeMap::new(),
        definitions: Vec::new(),
        static_functions: HashSet::new(),
        shift: include_block_len as isize - headers.len() as isize,
        header_len: headers.len(),
        insertions,
        statement_expressions: gnu::may_hold_statement_expressions(body),
        label_addresses,
        line_starts: std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect(),
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
        text: text.into(),
        statements: builder.statements,
        scopes: builder.scopes,
        roots: builder.roots,
        records: builder.records,
        functions: builder.functions,
        definitions: builder.definitions,
        typedefs: builder.typedefs.into_iter().collect(),
    })
}

struct Builder<'a> {
    text: &'a str,
    parse_text: &'a str,
    functions: BTreeMap<String, FunctionDecl>,
    definitions: Vec<FunctionDefinition>,
    /// Functions the program declares `static`: internal even where a later definition does
    /// not say so (C11 6.2.2p5).
    static_functions: HashSet<String>,
    /// Added to a parse-text offset to get a seed-text offset.
    shift: isize,
    header_len: usize,
    /// What [`gnu::repair`] inserted into the parse text.
    insertions: gnu::Insertions,
    /// The seed may hold statement expressions (see [`gnu::hides_jumps`]).
    statement_expressions: bool,
    /// Seed-text offsets of the labels taken as values (`&&label`), in order.
    label_addresses: Vec<usize>,
    line_starts: Vec<usize>,
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
                let text = self.source(decl.span.start, decl.span.end);
                let decl_of = FunctionDecl {
                    signature: normalize_space(text.trim_end().trim_end_matches(';')),
                    offset: self.seed_offset(decl.span.start),
                };
                for init in &decl.node.declarators {
                    if let (Some(name), CType::Function) =
                        self.declarator_type(CType::Other, &init.node.declarator.node)
                    {
                        if decl.span.start >= self.header_len && declarations::is_static(&decl.node.specifiers) {
                            self.static_functions.insert(name.clone());
                        }
                        self.functions.entry(name).or_insert_with(|| decl_of.clone());
                    }
                }
            }
            ExternalDeclaration::StaticAssert(_) => {}
            ExternalDeclaration::FunctionDefinition(node) => {
                let def = &node.node;
                if let (Some(name), _) = self.declarator_type(CType::Other, &def.declarator.node) {
                    let decl_of = FunctionDecl {
                        signature: normalize_space(self.source(node.span.start, def.statement.span.start)),
                        offset: self.seed_offset(node.span.start),
                    };
                    if node.span.start >= self.header_len {
                        self.definitions.push(FunctionDefinition {
                            name: name.clone(),
                            external: !declarations::is_static(&def.specifiers)
                                && !self.static_functions.contains(&name),
                            // The headers come first, so their declaration is the one kept.
                            declared_by_headers: self.header_len > 0
                                && self.functions.get(&name).is_some_and(|d| d.offset == 0),
                        });
                    }
                    self.functions.entry(name).or_insert(decl_of);
                }
                let params = self.new_scope_at(0, self.scopes[0].vars.len());
                let parameters = def.declarator.node.derived.iter().find_map(|d| match &d.node {
                    DerivedDeclarator::Function(f) => Some(&f.node.parameters),
                    _ => None,
                });
                for param in parameters.into_iter().flatten() {
                    self.parameter(params, &param.node);
                }
                let kr_names = def.declarator.node.derived.iter().find_map(|d| match &d.node {
                    DerivedDeclarator::KRFunction(names) => Some(names),
                    _ => None,
                });
                if let Some(names) = kr_names {
                    self.kr_parameters(params, names, &def.declarations);
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

    /// The seed-text offset of a parse-text offset (0 inside the header expansion).
    fn seed_offset(&self, parse_offset: usize) -> usize {
        if parse_offset < self.header_len {
            0
        } else {
            (self.insertions.original(parse_offset) as isize + self.shift) as usize
        }
    }

    /// The text between two parse-text offsets as the seed has it (the header expansion's, in
    /// the header expansion).
    fn source(&self, start: usize, end: usize) -> &'a str {
        if start < self.header_len {
            &self.parse_text[start..end]
        } else {
            &self.text[self.seed_offset(start)..self.seed_offset(end)]
        }
    }

    fn line_of(&self, offset: usize) -> u32 {
        match self.line_starts.binary_search(&offset) {
            Ok(i) => i as u32 + 1,
            Err(i) => i as u32,
        }
    }
}

fn normalize_space(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
