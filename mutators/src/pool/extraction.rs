//! A pool entry taken out of its seed: the statement's text, the outside variables it uses
//! (its holes), the names it needs declared alike, and whether it needs an enclosing loop or
//! switch; `None` for what cannot be transplanted.

use super::*;

/// Types that mean the same in every program: integers, floating types, pointers and arrays
/// of them. Records and typedef'd unknowns differ between seeds.
fn portable(ty: &CType) -> bool {
    match ty {
        CType::Int(_) | CType::Float | CType::Double | CType::LongDouble => true,
        CType::Pointer(inner) | CType::Array(inner, _) => portable(inner) || **inner == CType::Void,
        _ => false,
    }
}

/// The pool entry for a statement, or `None` when it cannot be transplanted: labels, `goto`,
/// `return`, inline assembly, function bodies, empty statements, long statements, and blocks
/// whose inner declarations shadow a variable they also use from outside.
pub(super) fn extract(
    program: &Program,
    donor: &mut Donor,
    kinds: &mut HoleKinds,
    stmt: &Statement,
    text_hash: u64,
) -> Option<Fragment> {
    if stmt.function_body || stmt.contains_label {
        return None;
    }
    let text = program.source_of(stmt.id);
    if text.len() > MAX_ENTRY_BYTES || text.trim() == ";" {
        return None;
    }
    let subtree = descendants(program, stmt.id);
    let mut needs_loop = false;
    let mut needs_break_target = false;
    for &id in &subtree {
        let s = program.statement(id);
        match s.kind {
            StmtKind::Labeled | StmtKind::Goto | StmtKind::Return | StmtKind::Asm => return None,
            StmtKind::Continue => needs_loop |= !enclosed(program, id, stmt.id, false),
            StmtKind::Break => needs_break_target |= !enclosed(program, id, stmt.id, true),
            _ => {}
        }
    }
    let mut inner_names: Vec<Box<str>> = stmt
        .inner_scopes
        .clone()
        .flat_map(|scope| program.scopes[scope].vars.iter().map(|v| v.name.as_str().into()))
        .collect();
    inner_names.sort();
    inner_names.dedup();
    let mut outside = HashMap::new();
    for var in program.vars_in_scope(stmt.id) {
        outside.entry(var.name.as_str()).or_insert(var);
    }
    if inner_names.iter().any(|n| outside.contains_key(&**n)) {
        return None;
    }

    let mut hole_uses = Vec::new();
    let mut holes: Vec<&Variable> = Vec::new();
    let mut hole_of: HashMap<&str, usize> = HashMap::new();
    let mut free_names = Vec::new();
    let mut uses_tags = false;
    for (range, role) in identifiers(text) {
        let name = &text[range.clone()];
        match role {
            IdentRole::Member => continue,
            IdentRole::Tag => {
                uses_tags = true;
                continue;
            }
            IdentRole::Ordinary => {}
        }
        if KEYWORDS.contains(&name) || inner_names.iter().any(|n| &**n == name) {
            continue;
        }
        if let Some(var) = outside.get(name) {
            let hole = *hole_of.entry(name).or_insert_with(|| {
                holes.push(var);
                holes.len() - 1
            });
            hole_uses.push(HoleUse {
                start: range.start as u32,
                end: range.end as u32,
                hole: hole as u16,
            });
        } else {
            let index = donor.name_index(program, name);
            if !free_names.contains(&index) {
                free_names.push(index);
            }
        }
    }
    Some(Fragment {
        text: text.into(),
        hole_uses: hole_uses.into(),
        portable_holes: holes.iter().all(|h| portable(&h.ty)),
        hole_kinds: holes.iter().map(|v| kinds.number(&v.ty, &v.qualifiers)).collect(),
        free_names: free_names.into(),
        tags_in_scope_from: uses_tags.then(|| function_body_start(program, stmt.id)),
        inner_names: inner_names.into(),
        needs_loop,
        needs_break_target,
        shape: Shape::of(program, stmt.id),
        text_hash,
    })
}

/// Where the body of the function holding a statement starts.
fn function_body_start(program: &Program, mut id: StmtId) -> usize {
    while let Some(parent) = program.statement(id).parent {
        id = parent;
    }
    program.statement(id).span.start
}

/// The statement and every statement nested in it.
fn descendants(program: &Program, id: StmtId) -> Vec<StmtId> {
    let mut out = vec![id];
    let mut i = 0;
    while i < out.len() {
        out.extend(&program.statement(out[i]).children);
        i += 1;
    }
    out
}

/// Whether a `break` (or a `continue`) at `id` binds to a statement inside `root`.
fn enclosed(program: &Program, id: StmtId, root: StmtId, is_break: bool) -> bool {
    if id == root {
        return false;
    }
    let mut cursor = program.statement(id).parent;
    while let Some(p) = cursor {
        let kind = program.statement(p).kind;
        if matches!(kind, StmtKind::While | StmtKind::DoWhile | StmtKind::For) || (is_break && kind == StmtKind::Switch)
        {
            return true;
        }
        if p == root {
            return false;
        }
        cursor = program.statement(p).parent;
    }
    false
}
