//! An Orange program: variables, and t-variables each assigned one expression once, in order.
//! [`OrangeProgram::settle`] (in [`crate::settle`]) makes its expected values exact.

use ccfuzz_semantics::{usual_arithmetic, BinaryOp, IntKind, UnaryOp, Value};
use serde::{Deserialize, Serialize};

/// Floating types, restricted to integer values that their mantissa holds exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum FloatKind {
    Float,
    Double,
    LongDouble,
}

impl FloatKind {
    pub const ALL: [FloatKind; 3] = [FloatKind::Float, FloatKind::Double, FloatKind::LongDouble];

    /// Values are kept within ±2^(m−2), m the mantissa width, so that an inserted constant
    /// (itself within the range) never rounds either.
    pub fn limit(self) -> i128 {
        1i128
            << match self {
                FloatKind::Float => 22,
                FloatKind::Double => 51,
                FloatKind::LongDouble => 62,
            }
    }

    pub fn spelling(self) -> &'static str {
        match self {
            FloatKind::Float => "float",
            FloatKind::Double => "double",
            FloatKind::LongDouble => "long double",
        }
    }

    pub fn literal(self, value: i128) -> String {
        let suffix = match self {
            FloatKind::Float => "f",
            FloatKind::Double => "",
            FloatKind::LongDouble => "L",
        };
        if value < 0 {
            format!("(-{}.0{suffix})", -value)
        } else {
            format!("{value}.0{suffix}")
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Ty {
    Int(IntKind),
    Float(FloatKind),
}

impl Ty {
    pub fn spelling(self) -> &'static str {
        match self {
            Ty::Int(k) => k.spelling(),
            Ty::Float(f) => f.spelling(),
        }
    }

    pub fn literal(self, value: i128) -> String {
        match self {
            Ty::Int(k) => k.literal(value),
            Ty::Float(f) => f.literal(value),
        }
    }

    /// The common type of an arithmetic operation on the two types.
    pub(crate) fn common(a: Ty, b: Ty) -> Ty {
        match (a, b) {
            (Ty::Int(a), Ty::Int(b)) => Ty::Int(usual_arithmetic(a, b)),
            (Ty::Float(a), Ty::Float(b)) => Ty::Float(a.max(b)),
            (Ty::Float(f), Ty::Int(_)) | (Ty::Int(_), Ty::Float(f)) => Ty::Float(f),
        }
    }
}

/// A value and its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Val {
    pub ty: Ty,
    pub v: i128,
}

impl Val {
    pub(crate) fn int(self) -> Option<Value> {
        match self.ty {
            Ty::Int(k) => Some(Value { kind: k, value: self.v }),
            Ty::Float(_) => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Var {
    pub name: String,
    pub ty: Ty,
    pub init: i128,
    pub global: bool,
    pub is_const: bool,
    pub is_volatile: bool,
    pub is_static: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Expr {
    Var(usize),
    Const(IntKind, i128),
    Unary(UnaryOp, Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    Ternary(Box<Expr>, Box<Expr>, Box<Expr>),
    /// A cast to an integer type, inserted where an integer-only operator meets a floating
    /// operand.
    Cast(IntKind, Box<Expr>),
}

impl Expr {
    /// Operators in the expression (casts included).
    pub fn size(&self) -> usize {
        match self {
            Expr::Var(_) | Expr::Const(..) => 0,
            Expr::Unary(_, a) | Expr::Cast(_, a) => 1 + a.size(),
            Expr::Binary(_, a, b) => 1 + a.size() + b.size(),
            Expr::Ternary(c, a, b) => 1 + c.size() + a.size() + b.size(),
        }
    }

    /// Calls `f` on every node, parents before children.
    pub fn visit<'e>(&'e self, f: &mut impl FnMut(&'e Expr)) {
        f(self);
        match self {
            Expr::Var(_) | Expr::Const(..) => {}
            Expr::Unary(_, a) | Expr::Cast(_, a) => a.visit(f),
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Ternary(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
        }
    }

    /// The `index`-th node in pre-order.
    pub fn node_mut(&mut self, index: usize) -> Option<&mut Expr> {
        fn walk<'e>(e: &'e mut Expr, index: &mut usize) -> Option<&'e mut Expr> {
            if *index == 0 {
                return Some(e);
            }
            *index -= 1;
            match e {
                Expr::Var(_) | Expr::Const(..) => None,
                Expr::Unary(_, a) | Expr::Cast(_, a) => walk(a, index),
                Expr::Binary(_, a, b) => walk(a, index).or_else(move || walk(b, index)),
                Expr::Ternary(c, a, b) => walk(c, index)
                    .or_else(|| walk(a, index))
                    .or_else(move || walk(b, index)),
            }
        }
        walk(self, &mut { index })
    }

    pub fn nodes(&self) -> usize {
        let mut n = 0;
        self.visit(&mut |_| n += 1);
        n
    }

    pub fn render(&self, vars: &[Var], out: &mut String) {
        match self {
            Expr::Var(i) => out.push_str(&vars[*i].name),
            Expr::Const(k, v) => out.push_str(&k.literal(*v)),
            Expr::Unary(op, a) => {
                out.push('(');
                out.push_str(op.symbol());
                a.render(vars, out);
                out.push(')');
            }
            Expr::Cast(k, a) => {
                out.push_str("((");
                out.push_str(k.spelling());
                out.push(')');
                a.render(vars, out);
                out.push(')');
            }
            Expr::Binary(op, a, b) => {
                out.push('(');
                a.render(vars, out);
                out.push(' ');
                out.push_str(op.symbol());
                out.push(' ');
                b.render(vars, out);
                out.push(')');
            }
            Expr::Ternary(c, a, b) => {
                out.push('(');
                c.render(vars, out);
                out.push_str(" ? ");
                a.render(vars, out);
                out.push_str(" : ");
                b.render(vars, out);
                out.push(')');
            }
        }
    }
}

/// `t = expr;` and the value `t` must hold afterwards.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Assignment {
    pub target: usize,
    pub expr: Expr,
    pub expected: i128,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OrangeProgram {
    pub vars: Vec<Var>,
    pub assignments: Vec<Assignment>,
    /// Operations inserted to remove undefined behaviour or rounding, and operations flipped.
    pub inserted: usize,
    pub flipped: usize,
}
impl OrangeProgram {
    /// Operators over all expressions.
    pub fn size(&self) -> usize {
        self.assignments.iter().map(|a| a.expr.size()).sum()
    }

    /// Assignments of something other than a constant.
    pub fn live_expressions(&self) -> usize {
        self.assignments
            .iter()
            .filter(|a| !matches!(a.expr, Expr::Const(..)))
            .count()
    }
}
