//! Statement-level control-flow graphs of seeds and variants, and Athena's program distance
//! Δ(Q; P) = α·d(V_Q, V_P) + β·d(E_Q, E_P) − γ·|size(Q) − size(P)|, with d the Jaccard distance.
//!
//! A variant's graph is built from its seed's statement table and its edits, without parsing
//! the variant: a deleted statement becomes a placeholder vertex, a transplanted pool entry
//! brings the vertices of its shape, a live-code snippet is one vertex and a guard wraps its
//! statement in a conditional vertex. Vertices keep the identity of the seed statement they come
//! from, so the graphs of a seed and its variant share exactly what the edits left alone.

use crate::edit::Edit;
use crate::model::{Program, StmtId, StmtKind};
use crate::pool::Shape;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Vertex {
    Entry(u32),
    Exit(u32),
    Stmt(StmtId),
    Placeholder(StmtId),
    /// The `index`-th statement (pre-order) of the snippet added by edit `edit`.
    Added {
        edit: u32,
        index: u32,
    },
    /// The conditional a guard edit puts around its statement.
    Guard {
        edit: u32,
    },
}

#[derive(Debug, Default)]
pub struct Cfg {
    pub vertices: HashSet<Vertex>,
    pub edges: HashSet<(Vertex, Vertex)>,
}

impl Cfg {
    /// Statements in the graph (function entry and exit vertices excluded).
    pub fn size(&self) -> usize {
        self.vertices
            .iter()
            .filter(|v| !matches!(v, Vertex::Entry(_) | Vertex::Exit(_)))
            .count()
    }

    pub fn of_seed(program: &Program) -> Cfg {
        Cfg::of_variant(program, &[])
    }

    pub fn of_variant(program: &Program, edits: &[Edit]) -> Cfg {
        let tree = Tree::build(program, edits);
        let mut builder = FlowBuilder {
            cfg: Cfg::default(),
            labels: HashMap::new(),
        };
        for (index, root) in tree.iter().enumerate() {
            let (entry, exit) = (Vertex::Entry(index as u32), Vertex::Exit(index as u32));
            builder.cfg.vertices.extend([entry, exit]);
            builder.labels.clear();
            root.collect_labels(&mut builder.labels);
            let first = builder.flow(root, exit, Jumps::default(), exit);
            builder.cfg.edges.insert((entry, first));
        }
        builder.cfg
    }
}

/// Athena's weights; σ scales the energy in the acceptance ratio.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct DistanceWeights {
    pub alpha: f64,
    pub beta: f64,
    pub gamma: f64,
}

impl Default for DistanceWeights {
    fn default() -> Self {
        DistanceWeights {
            alpha: 1.0,
            beta: 1.0,
            gamma: 0.001,
        }
    }
}

fn jaccard_distance<T: Eq + std::hash::Hash>(a: &HashSet<T>, b: &HashSet<T>) -> f64 {
    let union = a.len() + b.len() - a.intersection(b).count();
    if union == 0 {
        return 0.0;
    }
    1.0 - a.intersection(b).count() as f64 / union as f64
}

/// Δ(Q; P) of a variant's graph `q` from its seed's graph `p`.
pub fn distance(q: &Cfg, p: &Cfg, w: DistanceWeights) -> f64 {
    w.alpha * jaccard_distance(&q.vertices, &p.vertices) + w.beta * jaccard_distance(&q.edges, &p.edges)
        - w.gamma * (q.size() as f64 - p.size() as f64).abs()
}

/// A statement of the variant, with its control-flow role.
#[derive(Debug)]
struct Tree {
    vertex: Vertex,
    kind: StmtKind,
    label: Option<String>,
    children: Vec<Tree>,
}

impl Tree {
    fn build(program: &Program, edits: &[Edit]) -> Vec<Tree> {
        let mut deleted = HashSet::new();
        let mut before: HashMap<StmtId, Vec<(u32, &Edit)>> = HashMap::new();
        let mut wraps: HashMap<StmtId, Vec<u32>> = HashMap::new();
        for (index, edit) in edits.iter().enumerate() {
            let index = index as u32;
            match edit {
                Edit::Delete { stmt } => {
                    deleted.insert(*stmt);
                }
                Edit::InsertBefore { stmt, .. } | Edit::Transplant { stmt, .. } => {
                    before.entry(*stmt).or_default().push((index, edit))
                }
                Edit::Wrap { stmt, .. } => wraps.entry(*stmt).or_default().push(index),
            }
        }
        let context = BuildContext {
            program,
            deleted,
            before,
            wraps,
        };
        program.roots.iter().map(|&root| context.statement(root)).collect()
    }

    fn collect_labels(&self, labels: &mut HashMap<String, Vertex>) {
        if self.kind == StmtKind::Labeled {
            if let Some(name) = &self.label {
                labels.insert(name.clone(), self.vertex);
            }
        }
        for child in &self.children {
            child.collect_labels(labels);
        }
    }

    fn from_shape(shape: &Shape, edit: u32, next_index: &mut u32) -> Tree {
        let index = *next_index;
        *next_index += 1;
        Tree {
            vertex: Vertex::Added { edit, index },
            kind: shape.kind,
            label: None,
            children: shape
                .children
                .iter()
                .map(|c| Tree::from_shape(c, edit, next_index))
                .collect(),
        }
    }
}

struct BuildContext<'a> {
    program: &'a Program,
    deleted: HashSet<StmtId>,
    before: HashMap<StmtId, Vec<(u32, &'a Edit)>>,
    wraps: HashMap<StmtId, Vec<u32>>,
}

impl BuildContext<'_> {
    /// The trees standing where statement `id` stood: insertions, then the statement itself
    /// (wrapped by its guards), or its placeholder.
    fn sequence(&self, id: StmtId) -> Vec<Tree> {
        let mut out: Vec<Tree> = self
            .before
            .get(&id)
            .into_iter()
            .flatten()
            .map(|&(index, edit)| match edit {
                Edit::Transplant { shape, .. } => Tree::from_shape(shape, index, &mut 0),
                _ => Tree {
                    vertex: Vertex::Added { edit: index, index: 0 },
                    kind: StmtKind::Expression,
                    label: None,
                    children: Vec::new(),
                },
            })
            .collect();
        out.push(self.statement(id));
        out
    }

    fn statement(&self, id: StmtId) -> Tree {
        let stmt = self.program.statement(id);
        if self.deleted.contains(&id) {
            return Tree {
                vertex: Vertex::Placeholder(id),
                kind: StmtKind::Expression,
                label: None,
                children: Vec::new(),
            };
        }
        let children = if stmt.kind == StmtKind::Compound {
            stmt.children.iter().flat_map(|&c| self.sequence(c)).collect()
        } else {
            // Insertions before a non-block statement never happen (edits go before block
            // items), so a child stands alone.
            stmt.children.iter().map(|&c| self.statement(c)).collect()
        };
        let mut tree = Tree {
            vertex: Vertex::Stmt(id),
            kind: stmt.kind,
            label: stmt.label.clone(),
            children,
        };
        for &edit in self.wraps.get(&id).into_iter().flatten() {
            tree = Tree {
                vertex: Vertex::Guard { edit },
                kind: StmtKind::If,
                label: None,
                children: vec![tree],
            };
        }
        tree
    }
}

/// Where `break` and `continue` go.
#[derive(Clone, Copy, Default)]
struct Jumps {
    break_to: Option<Vertex>,
    continue_to: Option<Vertex>,
}

struct FlowBuilder {
    cfg: Cfg,
    labels: HashMap<String, Vertex>,
}

impl FlowBuilder {
    /// Adds the flow of `tree`, which continues at `next`; returns the vertex control enters.
    fn flow(&mut self, tree: &Tree, next: Vertex, jumps: Jumps, exit: Vertex) -> Vertex {
        let v = tree.vertex;
        self.cfg.vertices.insert(v);
        let edge = |cfg: &mut Cfg, to: Vertex| {
            cfg.edges.insert((v, to));
        };
        match tree.kind {
            StmtKind::Compound => {
                let mut follow = next;
                for child in tree.children.iter().rev() {
                    follow = self.flow(child, follow, jumps, exit);
                }
                edge(&mut self.cfg, follow);
            }
            StmtKind::If => {
                for child in &tree.children {
                    let first = self.flow(child, next, jumps, exit);
                    edge(&mut self.cfg, first);
                }
                if tree.children.len() < 2 {
                    edge(&mut self.cfg, next);
                }
            }
            StmtKind::While | StmtKind::DoWhile | StmtKind::For => {
                let inner = Jumps {
                    break_to: Some(next),
                    continue_to: Some(v),
                };
                for child in &tree.children {
                    let first = self.flow(child, v, inner, exit);
                    edge(&mut self.cfg, first);
                }
                edge(&mut self.cfg, next);
            }
            StmtKind::Switch => {
                let inner = Jumps {
                    break_to: Some(next),
                    ..jumps
                };
                for child in &tree.children {
                    let first = self.flow(child, next, inner, exit);
                    edge(&mut self.cfg, first);
                    // Case labels are entered from the switch directly.
                    for case in child.children.iter().filter(|c| c.kind == StmtKind::Labeled) {
                        edge(&mut self.cfg, case.vertex);
                    }
                }
                edge(&mut self.cfg, next);
            }
            StmtKind::Labeled => {
                let follow = match tree.children.first() {
                    Some(child) => self.flow(child, next, jumps, exit),
                    None => next,
                };
                edge(&mut self.cfg, follow);
            }
            StmtKind::Break => edge(&mut self.cfg, jumps.break_to.unwrap_or(exit)),
            StmtKind::Continue => edge(&mut self.cfg, jumps.continue_to.unwrap_or(exit)),
            StmtKind::Return => edge(&mut self.cfg, exit),
            StmtKind::Goto => {
                let target = tree.label.as_ref().and_then(|l| self.labels.get(l)).copied();
                edge(&mut self.cfg, target.unwrap_or(exit));
            }
            StmtKind::Expression | StmtKind::Asm => edge(&mut self.cfg, next),
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn program(text: &str) -> Program {
        Program::parse_parts(text, "", 0, &BTreeMap::new()).unwrap()
    }

    #[test]
    fn loops_branches_and_jumps_have_their_edges() {
        let p = program("int f(int a) { while (a) { if (a > 3) break; a--; } return a; }");
        let cfg = Cfg::of_seed(&p);
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

    #[test]
    fn distance_is_zero_for_the_seed_and_grows_with_edits() {
        let p = program("int f(int a) { if (a) { a++; a--; } a = 2; return a; }");
        let seed = Cfg::of_seed(&p);
        let w = DistanceWeights::default();
        assert_eq!(distance(&seed, &seed, w), 0.0);
        let body = p.statement(p.roots[0]);
        let if_id = body.children[0];
        let block = p.statement(if_id).children[0];
        let inc = p.statement(block).children[0];
        let one = Cfg::of_variant(&p, &[Edit::Delete { stmt: inc }]);
        let two = Cfg::of_variant(&p, &[Edit::Delete { stmt: inc }, Edit::Delete { stmt: block }]);
        let d1 = distance(&one, &seed, w);
        let d2 = distance(&two, &seed, w);
        assert!(d1 > 0.0 && d2 > d1, "{d1} {d2}");
        let shape = Shape::of(&p, if_id);
        let grown = Cfg::of_variant(
            &p,
            &[Edit::Transplant {
                stmt: inc,
                code: String::new(),
                shape,
                choices: 1,
            }],
        );
        assert_eq!(grown.size(), seed.size() + 4);
        assert!(distance(&grown, &seed, w) > 0.0);
    }
}
