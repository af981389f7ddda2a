//! Statements: the statement table (spans, lines, nesting, the profile's execution counts,
//! loops and switches around each), the block scopes they open, and the returns that end a
//! function.

use super::{gnu, Builder, Context};
use crate::model::{Execution, Scope, ScopeId, Statement, StmtId, StmtKind};
use lang_c::ast::{BlockItem, ForInitializer, Label, Statement as AstStatement};
use lang_c::span::Node;

impl Builder<'_> {
    pub(super) fn statement(&mut self, node: &Node<AstStatement>, ctx: Context, visible: usize) -> StmtId {
        let start = self.seed_offset(node.span.start);
        let end = self.seed_offset(node.span.end);
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
            // A computed `goto *p;` has no label (lang-c saw a stand-in identifier).
            AstStatement::Goto(_) if self.text[start + "goto".len()..end].trim_start().starts_with('*') => None,
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
            execution: Execution::Unknown,
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
        let contains_label = children.iter().any(|&c| self.statements[c as usize].contains_label)
            || (self.statement_expressions && gnu::hides_jumps(&node.node))
            || self.takes_label_address(start..end);
        let scopes_end = self.scopes.len();
        let stmt = &mut self.statements[id as usize];
        stmt.contains_label |= contains_label;
        stmt.children = children;
        stmt.inner_scopes.end = scopes_end;
        id
    }

    /// Whether a label's address (`&&label`) is taken in the text at `span`: the statement is
    /// kept whole, as if it held the label, and out of the transplant pool (the label is its
    /// function's only).
    fn takes_label_address(&self, span: std::ops::Range<usize>) -> bool {
        let first = self.label_addresses.partition_point(|&o| o < span.start);
        self.label_addresses.get(first).is_some_and(|&o| o < span.end)
    }

    /// Marks the `return`s on the last path through `id` (the last statement of a block, both
    /// branches of an `if`), and the statements around them up to the function body.
    pub(super) fn mark_final_returns(&mut self, id: StmtId) {
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

    pub(super) fn new_scope_at(&mut self, parent: ScopeId, visible: usize) -> ScopeId {
        self.scopes.push(Scope {
            parent: Some((parent, visible)),
            vars: Vec::new(),
        });
        self.scopes.len() - 1
    }
}
