//! Statement expressions (`({ ... })`): whether a seed may hold any, and whether a statement
//! hides a jump or a label inside one (the statement must then be kept whole).

use lang_c::ast::{Expression, Statement};
use lang_c::span::Span;
use lang_c::visit::{self, Visit};

use super::tokens::{tokens, Token};
use super::NO_SPAN;

/// Whether the text may hold a statement expression (`(` then `{`), outside literals.
pub(crate) fn may_hold_statement_expressions(text: &str) -> bool {
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
pub(crate) fn hides_jumps(statement: &Statement) -> bool {
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
