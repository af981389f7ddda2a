//! Tests of the control-flow graphs and the program distance on small programs and edits.

use super::*;
use std::collections::BTreeMap;
use std::sync::Arc;

fn program(text: &str) -> Program {
    Program::parse_parts(text, "", 0, &BTreeMap::new()).unwrap()
}

#[test]
fn loops_branches_and_jumps_have_their_edges() {
    let p = program("int f(int a) { while (a) { if (a > 3) break; a--; } return a; }");
    let cfg = Cfg::of_variant(&p, &[]);
    let body = p.statement(p.roots[0]);
    let (loop_id, ret) = (body.children[0], body.children[1]);
    let block = p.statement(loop_id).children[0];
    let if_id = p.statement(block).children[0];
    let brk = p.statement(if_id).children[0];
    let dec = p.statement(block).children[1];
    let has = |a: StmtId, b: Vertex| cfg.edges.contains(&(Vertex::Stmt(a), b));
    assert!(has(brk, Vertex::Stmt(ret)), "break leaves the loop");
    assert!(has(dec, Vertex::Stmt(loop_id)), "the body goes back to the loop");
    assert!(has(loop_id, Vertex::Stmt(ret)), "the loop exits");
    assert!(has(if_id, Vertex::Stmt(dec)), "an if without else falls through");
    assert!(has(ret, Vertex::Exit(0)));
    assert_eq!(cfg.size(), 7);
}

/// Δ from the two whole graphs, as the paper defines it.
fn whole_distance(q: &Cfg, p: &Cfg, w: DistanceWeights) -> f64 {
    let d = |shared: usize, a: usize, b: usize| jaccard_distance(shared, a, b);
    w.alpha
        * d(
            q.vertices.intersection(&p.vertices).count(),
            q.vertices.len(),
            p.vertices.len(),
        )
        + w.beta * d(q.edges.intersection(&p.edges).count(), q.edges.len(), p.edges.len())
        - w.gamma * (q.size() as f64 - p.size() as f64).abs()
}

#[test]
fn distance_is_zero_for_the_seed_and_grows_with_edits() {
    let p = program("int f(int a) { if (a) { a++; a--; } a = 2; return a; }");
    let seed = SeedGraph::of(&p);
    let w = DistanceWeights::default();
    assert_eq!(seed.distance(&p, &[], w), 0.0);
    let body = p.statement(p.roots[0]);
    let if_id = body.children[0];
    let block = p.statement(if_id).children[0];
    let inc = p.statement(block).children[0];
    let d1 = seed.distance(&p, &[Edit::Delete { stmt: inc }], w);
    let d2 = seed.distance(&p, &[Edit::Delete { stmt: inc }, Edit::Delete { stmt: block }], w);
    assert!(d1 > 0.0 && d2 > d1, "{d1} {d2}");
    let shape = Shape::of(&p, if_id);
    let transplant = Edit::Transplant {
        stmt: inc,
        code: "".into(),
        shape: Arc::new(shape),
        choices: 1,
    };
    let grown = Cfg::of_variant(&p, std::slice::from_ref(&transplant));
    assert_eq!(grown.size(), seed.size() + 4);
    assert!(seed.distance(&p, &[transplant], w) > 0.0);
}

#[test]
fn rebuilding_only_the_functions_edits_touch_gives_the_whole_graphs_distance() {
    let p = program(
        "int g;
         int f(int a) { while (a) { if (a > 3) break; a--; } lbl: a++; if (a < 9) goto lbl; return a; }
         void h(void) { g = 1; switch (g) { case 1: g++; break; default: g--; } }
         int main(void) { int i; for (i = 0; i < 3; i++) { h(); if (i) continue; g += f(i); } return g; }",
    );
    let seed = SeedGraph::of(&p);
    let whole_seed = Cfg::of_variant(&p, &[]);
    let w = DistanceWeights {
        alpha: 1.0,
        beta: 0.7,
        gamma: 0.01,
    };
    let statements = p.statements.len() as StmtId;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = |bound: u32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % bound as u64) as u32
    };
    let random_edit = |next: &mut dyn FnMut(u32) -> u32| {
        // One edit in twenty names a statement the program does not have.
        let stmt = next(statements + statements / 20 + 1);
        match next(4) {
            0 => Edit::Delete { stmt },
            1 => Edit::InsertBefore { stmt, code: "".into() },
            2 => Edit::Wrap {
                stmt,
                before: "".into(),
                after: "".into(),
            },
            _ => Edit::Transplant {
                stmt,
                code: "".into(),
                shape: Arc::new(Shape::of(&p, next(statements))),
                choices: 1,
            },
        }
    };
    let check = |edits: &[Edit]| {
        let expected = whole_distance(&Cfg::of_variant(&p, edits), &whole_seed, w);
        let got = seed.distance(&p, edits, w);
        assert!((expected - got).abs() < 1e-12, "{edits:?}: {got} instead of {expected}");
    };
    // Every kind of edit on every statement, one after the other: what the graph remembers
    // of one must never stand for another.
    for stmt in 0..statements {
        check(&[Edit::Delete { stmt }]);
        check(&[Edit::InsertBefore { stmt, code: "".into() }]);
        check(&[Edit::Wrap {
            stmt,
            before: "".into(),
            after: "".into(),
        }]);
        for shape_of in [stmt, (stmt + 1) % statements] {
            check(&[Edit::Transplant {
                stmt,
                code: "".into(),
                shape: Arc::new(Shape::of(&p, shape_of)),
                choices: 1,
            }]);
        }
    }
    // A chain's walk: each proposal adds an edit or takes one out of the current list,
    // which shifts the positions of the edits after it.
    let mut edits: Vec<Edit> = Vec::new();
    for _ in 0..600 {
        if edits.is_empty() || next(3) > 0 {
            edits.push(random_edit(&mut next));
        } else {
            edits.remove(next(edits.len() as u32) as usize);
        }
        check(&edits);
    }
}
