//! Edits of a seed, positioned by statement ids, and their application to the seed text.

use crate::model::{Program, StmtId};
use serde::{Deserialize, Serialize};

/// One change to a seed. Edits compose: a variant is a seed plus a list of them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Edit {
    /// Replace the statement by an empty statement `;`.
    Delete { stmt: StmtId },
    /// Insert code right before the statement (it stays in the statement's scope).
    InsertBefore { stmt: StmtId, code: String },
}

impl Edit {
    pub fn stmt(&self) -> StmtId {
        match self {
            Edit::Delete { stmt } | Edit::InsertBefore { stmt, .. } => *stmt,
        }
    }
}

/// Applies edits to the program's text in one pass. An edit inside a deleted statement is
/// absorbed by the deletion; edits naming statements the program does not have are ignored.
pub fn apply_edits(program: &Program, edits: &[Edit]) -> String {
    let count = program.statements.len() as StmtId;
    let deleted: Vec<StmtId> = edits
        .iter()
        .filter_map(|e| match e {
            Edit::Delete { stmt } if *stmt < count => Some(*stmt),
            _ => None,
        })
        .collect();
    let inside_deleted = |stmt: StmtId| {
        let mut cursor = program.statement(stmt).parent;
        while let Some(p) = cursor {
            if deleted.contains(&p) {
                return true;
            }
            cursor = program.statement(p).parent;
        }
        false
    };
    // (position, order, replaced length, text): inserts go before a deletion at the same place.
    let mut patches: Vec<(usize, u8, usize, &str)> = Vec::new();
    for edit in edits {
        let stmt = edit.stmt();
        if stmt >= count || inside_deleted(stmt) {
            continue;
        }
        let span = &program.statement(stmt).span;
        match edit {
            Edit::Delete { .. } => patches.push((span.start, 1, span.len(), ";")),
            Edit::InsertBefore { code, .. } => patches.push((span.start, 0, 0, code.as_str())),
        }
    }
    patches.sort_by_key(|&(pos, order, _, text)| (pos, order, text));
    patches.dedup();
    let text = &program.text;
    let mut out = String::with_capacity(text.len() + 64);
    let mut cursor = 0;
    for (pos, _, len, replacement) in patches {
        if pos < cursor {
            continue;
        }
        out.push_str(&text[cursor..pos]);
        out.push_str(replacement);
        cursor = pos + len;
    }
    out.push_str(&text[cursor..]);
    out
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
}
