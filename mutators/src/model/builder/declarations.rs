//! Declarations: variables with their types and qualifiers in their scopes, typedefs, records
//! and their fields, from lang-c's declaration specifiers and declarators.

use super::{gnu, Builder};
use crate::ctype::{CType, IntKind, IntSpecifiers};
use crate::model::{Field, ScopeId, Variable};
use lang_c::ast::{
    ArraySize, Constant, Declaration, DeclarationSpecifier, Declarator, DeclaratorKind, DerivedDeclarator, Expression,
    Identifier, ParameterDeclaration, PointerQualifier, SpecifierQualifier, StorageClassSpecifier, StructDeclaration,
    TypeQualifier, TypeSpecifier,
};
use lang_c::span::Node;

/// Type information gathered from declaration specifiers.
pub(super) struct BaseType {
    ty: CType,
    is_const: bool,
    is_volatile: bool,
    is_typedef: bool,
}

/// Whether declaration specifiers say `static`.
pub(super) fn is_static(specifiers: &[Node<DeclarationSpecifier>]) -> bool {
    specifiers
        .iter()
        .any(|s| matches!(&s.node, DeclarationSpecifier::StorageClass(c) if c.node == StorageClassSpecifier::Static))
}

impl Builder<'_> {
    /// Records a declaration's typedefs, and its variables in `scope` if there is one.
    pub(super) fn declaration(&mut self, decl: &lang_c::ast::Declaration, scope: Option<ScopeId>, global: bool) {
        let base = self.base_type(decl.specifiers.iter().filter_map(decl_spec));
        let is_static = is_static(&decl.specifiers);
        let retyped = gnu::changes_type(decl);
        for init in &decl.declarators {
            let (name, mut ty) = self.declarator_type(base.ty.clone(), &init.node.declarator.node);
            let Some(name) = name else { continue };
            if retyped && ty != CType::Function {
                ty = CType::Other;
            }
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

    /// A function's parameter, in the function's parameter scope.
    pub(super) fn parameter(&mut self, scope: ScopeId, param: &ParameterDeclaration) {
        let mut base = self.base_type(param.specifiers.iter().filter_map(decl_spec));
        if gnu::changes_type(param) {
            base.ty = CType::Other;
        }
        if let Some(declarator) = &param.declarator {
            self.add_variable(scope, &base, &declarator.node, false);
        }
    }

    /// The parameters of a K&R definition (`f (a, b) char *a; { ... }`): those its declaration
    /// list declares, and the others as `int`.
    pub(super) fn kr_parameters(
        &mut self,
        scope: ScopeId,
        names: &[Node<Identifier>],
        declarations: &[Node<Declaration>],
    ) {
        for declaration in declarations {
            let decl = &declaration.node;
            let mut base = self.base_type(decl.specifiers.iter().filter_map(decl_spec));
            if gnu::changes_type(decl) {
                base.ty = CType::Other;
            }
            for init in &decl.declarators {
                self.add_variable(scope, &base, &init.node.declarator.node, false);
            }
        }
        for name in names {
            if !self.scopes[scope].vars.iter().any(|v| v.name == name.node.name) {
                self.scopes[scope].vars.push(Variable {
                    name: name.node.name.clone(),
                    ty: CType::Int(IntKind::Int),
                    is_const: false,
                    is_volatile: false,
                    global: false,
                    qualifiers: String::new(),
                    initialized: true,
                });
            }
        }
    }

    pub(super) fn add_variable(&mut self, scope: ScopeId, base: &BaseType, declarator: &Declarator, global: bool) {
        let (name, ty) = self.declarator_type(base.ty.clone(), declarator);
        // A parameter declared as an array is a pointer (C11 6.7.6.3p7): the elements it
        // points to need not be initialized, and its size is a pointer's.
        let ty = match ty {
            CType::Array(element, _) => CType::Pointer(element),
            ty => ty,
        };
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

    pub(super) fn base_type<'s>(&mut self, specs: impl Iterator<Item = SpecOrQual<'s>>) -> BaseType {
        let mut ints = IntSpecifiers::default();
        let mut ty = None;
        let mut base = BaseType {
            ty: CType::Other,
            is_const: false,
            is_volatile: false,
            is_typedef: false,
        };
        let mut long_double = false;
        let mut opaque = false;
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
                    | TypeSpecifier::TS18661Float(_) => opaque = true,
                },
            }
        }
        base.ty = match ty {
            // `_Complex double` is no double, whichever comes first.
            _ if opaque => CType::Other,
            Some(CType::Double) if long_double || ints.longs > 0 => CType::LongDouble,
            Some(CType::Other) if !ints.is_empty() => CType::Other,
            Some(t) => t,
            None if !ints.is_empty() => CType::Int(ints.kind()),
            None => CType::Other,
        };
        base
    }

    pub(super) fn record(&mut self, s: &lang_c::ast::StructType) -> CType {
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
                let retyped = gnu::changes_type(&field.node);
                for d in &field.node.declarators {
                    if let Some(declarator) = &d.node.declarator {
                        let (name, mut ty) = self.declarator_type(base.ty.clone(), &declarator.node);
                        if retyped {
                            ty = CType::Other;
                        }
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

    pub(super) fn declarator_type(&mut self, base: CType, declarator: &Declarator) -> (Option<String>, CType) {
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

pub(super) enum SpecOrQual<'s> {
    Type(&'s TypeSpecifier),
    Qualifier(TypeQualifier),
    Typedef,
}

pub(super) fn decl_spec(spec: &Node<DeclarationSpecifier>) -> Option<SpecOrQual<'_>> {
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
