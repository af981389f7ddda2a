//! Edits of a seed, positioned by statement ids, and their application to the seed text.

use crate::model::{Program, StmtId};
use crate::pool::Shape;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// One change to a seed. Edits compose: a variant is a seed plus a list of them. Their texts
/// and shapes are shared, not copied: a chain state's edits are cloned and dropped several
/// times per execution (proposal, parent, corpus entry), which with owned strings was a sixth
/// of the client's CPU against tcc. They serialize as owned ones do.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Edit {
    /// Replace the statement by an empty statement `;`.
    Delete { stmt: StmtId },
    /// Insert code right before the statement (it stays in the statement's scope).
    InsertBefore { stmt: StmtId, code: Arc<str> },
    /// Put code around the statement, such as `if (p) {` and `}`.
    Wrap {
        stmt: StmtId,
        before: Arc<str>,
        after: Arc<str>,
    },
    /// Insert a statement from Athena's pool before a statement that never ran. It carries its
    /// control-flow shape (for program distance) and the number of equally likely choices the
    /// proposal had when it picked it (for the reverse move's probability).
    Transplant {
        stmt: StmtId,
        code: Arc<str>,
        shape: Arc<Shape>,
        choices: u64,
    },
}

impl Edit {
    pub fn stmt(&self) -> StmtId {
        match self {
            Edit::Delete { stmt }
            | Edit::InsertBefore { stmt, .. }
            | Edit::Wrap { stmt, .. }
            | Edit::Transplant { stmt, .. } => *stmt,
        }
    }
}

/// Applies edits to the program's text in one pass. An edit inside a deleted statement is
/// absorbed by the deletion; edits naming statements the program does not have are ignored.
pub fn apply_edits(program: &Program, edits: &[Edit]) -> String {
    let mut out = String::new();
    apply_edits_into(program, edits, &mut out);
    out
}

/// [`apply_edits`] into `out`, whose earlier text goes and whose allocation is reused: a
/// variant of a large seed is a fresh mapping of its own, and touching its pages for the
/// first time was half the cost of printing it.
pub fn apply_edits_into(program: &Program, edits: &[Edit], out: &mut String) {
    let count = program.statements.len() as StmtId;
    // By statement: a long chain's edits hold hundreds of deletions, and each edit asks about
    // every ancestor of its statement.
    let mut deleted = vec![false; count as usize];
    for edit in edits {
        if let Edit::Delete { stmt } = edit {
            if *stmt < count {
                deleted[*stmt as usize] = true;
            }
        }
    }
    let inside_deleted = |stmt: StmtId| {
        let mut cursor = program.statement(stmt).parent;
        while let Some(p) = cursor {
            if deleted[p as usize] {
                return true;
            }
            cursor = program.statement(p).parent;
        }
        false
    };
    // At one position: closing wraps (innermost first), then insertions (in edit order), then
    // opening wraps (outermost first), then a deletion.
    #[derive(Clone, Copy)]
    struct Patch<'e> {
        pos: usize,
        order: (u8, u32),
        replaced: usize,
        text: &'e str,
    }
    let mut patches: Vec<Patch> = Vec::new();
    for (index, edit) in edits.iter().enumerate() {
        let stmt = edit.stmt();
        if stmt >= count || inside_deleted(stmt) {
            continue;
        }
        let statement = program.statement(stmt);
        let (start, end, depth) = (statement.span.start, statement.span.end, statement.depth);
        match edit {
            Edit::Delete { .. } => patches.push(Patch {
                pos: start,
                order: (3, 0),
                replaced: end - start,
                text: ";",
            }),
            Edit::InsertBefore { code, .. } | Edit::Transplant { code, .. } => patches.push(Patch {
                pos: start,
                order: (1, index as u32),
                replaced: 0,
                text: code,
            }),
            Edit::Wrap { before, after, .. } => {
                patches.push(Patch {
                    pos: start,
                    order: (2, depth),
                    replaced: 0,
                    text: before,
                });
                patches.push(Patch {
                    pos: end,
                    order: (0, u32::MAX - depth),
                    replaced: 0,
                    text: after,
                });
            }
        }
    }
    // By position and order, ties in the order the patches came: one integer per patch, which
    // an unstable sort orders faster than the stable sort ordered the tuples (the sort was
    // two thirds of materializing a long chain's state).
    let key = |(seq, p): (usize, &Patch)| {
        ((p.pos as u128) << 80) | (u128::from(p.order.0) << 72) | (u128::from(p.order.1) << 40) | seq as u128
    };
    let mut keyed: Vec<(u128, usize)> = patches.iter().enumerate().map(|e| (key(e), e.0)).collect();
    keyed.sort_unstable_by_key(|&(key, _)| key);
    let mut patches: Vec<Patch> = keyed.into_iter().map(|(_, at)| patches[at]).collect();
    // The same deletion twice deletes once.
    patches.dedup_by(|a, b| a.order.0 == 3 && b.order.0 == 3 && a.pos == b.pos);
    let text = &program.text;
    out.clear();
    out.reserve(text.len() + patches.iter().map(|p| p.text.len()).sum::<usize>());
    let mut cursor = 0;
    for patch in patches {
        if patch.pos < cursor {
            continue;
        }
        out.push_str(&text[cursor..patch.pos]);
        out.push_str(patch.text);
        cursor = patch.pos + patch.replaced;
    }
    out.push_str(&text[cursor..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn program(text: &str) -> Program {
        Program::parse_parts(text, "", 0, &BTreeMap::new()).unwrap()
    }

    #[test]
    fn no_edits_reproduce_the_text() {
        let text = "int f(int a) {\n  if (a) { a++; }\n  return a;\n}\n";
        assert_eq!(apply_edits(&program(text), &[]), text);
    }

    #[test]
    fn deletions_nest_and_inserts_precede() {
        let text = "int f(int a) { if (a) { a++; a--; } return a; }";
        let p = program(text);
        let body = p.statement(p.roots[0]);
        let if_stmt = body.children[0];
        let block = p.statement(if_stmt).children[0];
        let inc = p.statement(block).children[0];
        let ret = body.children[1];
        let edits = [
            Edit::Delete { stmt: inc },
            Edit::Delete { stmt: block },
            Edit::InsertBefore {
                stmt: ret,
                code: "a = 3;".into(),
            },
        ];
        assert_eq!(apply_edits(&p, &edits), "int f(int a) { if (a) ; a = 3;return a; }");
        assert_eq!(
            apply_edits(&p, &edits[..1]),
            "int f(int a) { if (a) { ; a--; } return a; }"
        );
    }

    #[test]
    fn wraps_nest_around_insertions() {
        let text = "int f(int a) { if (a) a++; return a; }";
        let p = program(text);
        let body = p.statement(p.roots[0]);
        let if_stmt = body.children[0];
        let inc = p.statement(if_stmt).children[0];
        let edits = [
            Edit::Wrap {
                stmt: inc,
                before: "{".into(),
                after: "}".into(),
            },
            Edit::Wrap {
                stmt: if_stmt,
                before: "if (1) {".into(),
                after: "}".into(),
            },
            Edit::InsertBefore {
                stmt: if_stmt,
                code: "x;".into(),
            },
            Edit::InsertBefore {
                stmt: if_stmt,
                code: "y;".into(),
            },
        ];
        assert_eq!(
            apply_edits(&p, &edits),
            "int f(int a) { x;y;if (1) {if (a) {a++;}} return a; }"
        );
    }
}
