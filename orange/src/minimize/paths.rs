//! Nodes of an expression tree by path (the child positions from the root, conditions first):
//! a node's operands and children, the node at a path, its pre-order index, and every path in
//! post-order.

use crate::program::Expr;

/// The operands of a node's root operator (a conditional's three).
pub(super) fn operands(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Var(_) | Expr::Const(..) => Vec::new(),
        Expr::Unary(_, a) | Expr::Cast(_, a) => vec![(**a).clone()],
        Expr::Binary(_, a, b) => vec![(**a).clone(), (**b).clone()],
        Expr::Ternary(c, a, b) => vec![(**a).clone(), (**b).clone(), (**c).clone()],
    }
}

fn children(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::Var(_) | Expr::Const(..) => Vec::new(),
        Expr::Unary(_, a) | Expr::Cast(_, a) => vec![a],
        Expr::Binary(_, a, b) => vec![a, b],
        Expr::Ternary(c, a, b) => vec![c, a, b],
    }
}

/// The node reached by following child positions from the root (in `children`' order).
pub(super) fn node_at<'e>(e: &'e Expr, path: &[usize]) -> Option<&'e Expr> {
    match path.split_first() {
        None => Some(e),
        Some((&first, rest)) => node_at(children(e).get(first)?, rest),
    }
}

pub(super) fn node_at_mut<'e>(e: &'e mut Expr, path: &[usize]) -> Option<&'e mut Expr> {
    let Some((&first, rest)) = path.split_first() else {
        return Some(e);
    };
    let child = match (e, first) {
        (Expr::Unary(_, a) | Expr::Cast(_, a), 0) => a,
        (Expr::Binary(_, a, _), 0) | (Expr::Ternary(_, a, _), 1) => a,
        (Expr::Binary(_, _, b), 1) | (Expr::Ternary(_, _, b), 2) => b,
        (Expr::Ternary(c, _, _), 0) => c,
        _ => return None,
    };
    node_at_mut(child, rest)
}

/// The pre-order index (as `Expr::visit` counts) of the node at `path`.
pub(super) fn pre_order_index(e: &Expr, path: &[usize]) -> usize {
    match path.split_first() {
        None => 0,
        Some((&first, rest)) => {
            let children = children(e);
            1 + children[..first].iter().map(|c| c.nodes()).sum::<usize>() + pre_order_index(children[first], rest)
        }
    }
}

pub(super) fn post_order_paths(e: &Expr, path: &mut Vec<usize>, out: &mut Vec<Vec<usize>>) {
    for (i, child) in children(e).into_iter().enumerate() {
        path.push(i);
        post_order_paths(child, path, out);
        path.pop();
    }
    out.push(path.clone());
}
