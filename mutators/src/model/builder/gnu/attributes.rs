//! Attributes that change a type (`vector_size`, `mode`): found in the parse text (such
//! attributes are never blanked) and in lang-c's tree (the model then takes the type for opaque).

use lang_c::ast::{Attribute, Declaration, ParameterDeclaration, StructField};
use lang_c::span::Span;
use lang_c::visit::{self, Visit};

use super::tokens::{tokens, Token};
use super::NO_SPAN;

/// Attributes that change a type's values (`vector_size`, `mode`): the model cannot take
/// `int x __attribute__((mode (DI)))` for an int.
fn is_type_changing(name: &str) -> bool {
    matches!(name.trim_matches('_'), "vector_size" | "mode" | "ext_vector_type")
}

pub(super) fn changes_type_text(attribute: &str) -> bool {
    tokens(attribute)
        .into_iter()
        .any(|(r, t)| t == Token::Word && is_type_changing(&attribute[r]))
}

/// Whether a declaration, parameter or field carries an attribute that changes its type
/// ([`is_type_changing`]): the model then takes its type for opaque.
pub(crate) fn changes_type<N: Visitable>(node: &N) -> bool {
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
pub(crate) trait Visitable {
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
