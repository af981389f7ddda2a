//! Statement-level control-flow graphs of seeds and variants, and Athena's program distance
//! Δ(Q; P) = α·d(V_Q, V_P) + β·d(E_Q, E_P) − γ·|size(Q) − size(P)|, with d the Jaccard distance.
//!
//! A variant's graph is built from its seed's statement table and its edits, without parsing
//! the variant: a deleted statement becomes a placeholder vertex, a transplanted pool entry
//! brings the vertices of its shape, a live-code snippet is one vertex and a guard wraps its
//! statement in a conditional vertex. Vertices keep the identity of the seed statement they come
//! from, so the graphs of a seed and its variant share exactly what the edits left alone.
//!
//! Every vertex and edge belongs to one function, so a variant's graph differs from its seed's
//! only in the functions its edits touch: [`SeedGraph`] keeps the seed's graph by function and
//! rebuilds only those to measure a variant's distance.

use crate::edit::Edit;
use crate::model::{Program, StmtId, StmtKind};
use crate::pool::Shape;
use serde::{Deserialize, Serialize};
// Graphs are rebuilt at every proposal, from thousands of small keys: SipHash was a third of
// building them.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::Mutex;

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

/// The control-flow graph of one function, or of a whole program.
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

    /// The whole program's graph: what [`SeedGraph::distance`] must agree with.
    #[cfg(test)]
    fn of_variant(program: &Program, edits: &[Edit]) -> Cfg {
        let context = BuildContext::new(program, edits, |_| true);
        let mut whole = Cfg::default();
        for function in 0..program.roots.len() {
            let cfg = context.function(function, Cfg::default());
            whole.vertices.extend(cfg.vertices);
            whole.edges.extend(cfg.edges);
        }
        whole
    }

    fn counts(&self) -> Counts {
        Counts {
            vertices: self.vertices.len(),
            edges: self.edges.len(),
            statements: self.size(),
        }
    }
}

/// Where a flow's vertices and edges go: a whole graph, or only the counts a distance needs.
trait FlowSink {
    fn vertex(&mut self, v: Vertex);
    fn edge(&mut self, from: Vertex, to: Vertex);
}

impl FlowSink for Cfg {
    fn vertex(&mut self, v: Vertex) {
        self.vertices.insert(v);
    }

    fn edge(&mut self, from: Vertex, to: Vertex) {
        self.edges.insert((from, to));
    }
}

/// An edited function's graph measured against its seed's without being built: building its
/// sets and intersecting them was most of a distance's cost. A flow names each vertex once and
/// leaves a vertex at most once for each successor, so counting what it emits is counting sets.
/// Only seed statements and the function's ends can be in the seed's graph.
struct Measure<'a> {
    seed: &'a Cfg,
    edited: EditedFunction,
}

impl Measure<'_> {
    fn from_seed(v: Vertex) -> bool {
        matches!(v, Vertex::Stmt(_) | Vertex::Entry(_) | Vertex::Exit(_))
    }
}

impl FlowSink for Measure<'_> {
    fn vertex(&mut self, v: Vertex) {
        self.edited.counts.vertices += 1;
        if !matches!(v, Vertex::Entry(_) | Vertex::Exit(_)) {
            self.edited.counts.statements += 1;
        }
        if Self::from_seed(v) && self.seed.vertices.contains(&v) {
            self.edited.shared.vertices += 1;
        }
    }

    fn edge(&mut self, from: Vertex, to: Vertex) {
        self.edited.counts.edges += 1;
        if Self::from_seed(from) && Self::from_seed(to) && self.seed.edges.contains(&(from, to)) {
            self.edited.shared.edges += 1;
        }
    }
}

/// Vertices, edges and statements of a graph, or those two graphs share.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    vertices: usize,
    edges: usize,
    statements: usize,
}

impl Counts {
    /// These counts with one function's `before` replaced by its `after`.
    fn replacing(self, before: Counts, after: Counts) -> Counts {
        Counts {
            vertices: self.vertices - before.vertices + after.vertices,
            edges: self.edges - before.edges + after.edges,
            statements: self.statements - before.statements + after.statements,
        }
    }
}

/// A seed's control-flow graph, function by function.
#[derive(Debug)]
pub struct SeedGraph {
    functions: Vec<Cfg>,
    function_counts: Vec<Counts>,
    /// The function (index in the program's roots) each statement belongs to.
    function_of: Vec<Option<u32>>,
    total: Counts,
    /// Edited functions measured so far, by the structure of their edits: a chain's proposal
    /// changes one edit of its state, so of the functions its edits touch all but one or two
    /// were measured before, and with long chains the edits touch most of a seed.
    measured: Mutex<HashMap<u64, EditedFunction>>,
}

/// Edited functions a seed graph remembers (about 50 bytes each); all are forgotten when full.
const MEASURED_KEPT: usize = 512;

/// The counts of an edited function's graph, and what it shares with the seed's (statements
/// left uncounted: the distance needs only the sizes of the two graphs).
#[derive(Clone, Copy, Debug, Default)]
struct EditedFunction {
    counts: Counts,
    shared: Counts,
}

impl SeedGraph {
    pub fn of(program: &Program) -> SeedGraph {
        let context = BuildContext::new(program, &[], |_| true);
        let functions: Vec<Cfg> = (0..program.roots.len())
            .map(|f| context.function(f, Cfg::default()))
            .collect();
        let function_counts: Vec<Counts> = functions.iter().map(Cfg::counts).collect();
        let mut function_of = vec![None; program.statements.len()];
        for (function, &root) in program.roots.iter().enumerate() {
            let mut pending = vec![root];
            while let Some(id) = pending.pop() {
                function_of[id as usize] = Some(function as u32);
                pending.extend(&program.statement(id).children);
            }
        }
        let total = function_counts.iter().fold(Counts::default(), |sum, &counts| {
            sum.replacing(Counts::default(), counts)
        });
        SeedGraph {
            functions,
            function_counts,
            function_of,
            total,
            measured: Mutex::new(HashMap::new()),
        }
    }

    /// Statements in the seed's graph.
    pub fn size(&self) -> usize {
        self.total.statements
    }

    /// Δ(Q; P) of the variant `edits` make of the seed `program`, whose graph this is.
    pub fn distance(&self, program: &Program, edits: &[Edit], w: DistanceWeights) -> f64 {
        // A function's graph depends on what its edits are and in which order, not on where
        // they stand in the whole list: that only names the vertices they add, which no
        // count sees. An edit naming a statement outside every function changes no graph, as
        // it changes no text. A key per function, folded edit by edit (a long chain's state
        // has hundreds of edits, and a general-purpose hasher per function cost more than
        // building the graphs).
        let mut keys: Vec<Option<u64>> = vec![None; self.functions.len()];
        for edit in edits {
            let Some(Some(function)) = self.function_of.get(edit.stmt() as usize) else {
                continue;
            };
            let key = keys[*function as usize].get_or_insert_with(|| fold_key(0, u64::from(*function)));
            let (kind, shape) = match edit {
                Edit::Delete { .. } => (0, None),
                Edit::InsertBefore { .. } => (1, None),
                Edit::Wrap { .. } => (2, None),
                Edit::Transplant { shape, .. } => (3, Some(shape)),
            };
            *key = fold_key(*key, (kind << 32) | u64::from(edit.stmt()));
            if let Some(shape) = shape {
                *key = fold_key(*key, shape_hash(shape));
            }
        }
        let mut measured = self.measured.lock().expect("measured functions lock");
        // Looked up before any is measured: a measurement may clear what was remembered.
        let touched: Vec<(usize, u64, Option<EditedFunction>)> = keys
            .into_iter()
            .enumerate()
            .filter_map(|(f, key)| Some((f, key?, measured.get(&key?).copied())))
            .collect();
        // The graphs to build need only their own functions' edits (a long chain holds hundreds).
        let unmeasured: Vec<u32> = touched
            .iter()
            .filter(|(_, _, known)| known.is_none())
            .map(|(f, _, _)| *f as u32)
            .collect();
        let in_unmeasured =
            |stmt: StmtId| matches!(self.function_of.get(stmt as usize), Some(Some(f)) if unmeasured.contains(f));
        let mut context = None;
        let (mut variant, mut shared) = (self.total, self.total);
        for (function, key, known) in touched {
            let edited = match known {
                Some(edited) => edited,
                None => {
                    let context = context.get_or_insert_with(|| BuildContext::new(program, edits, in_unmeasured));
                    let measure = Measure {
                        seed: &self.functions[function],
                        edited: EditedFunction::default(),
                    };
                    let edited = context.function(function, measure).edited;
                    if measured.len() >= MEASURED_KEPT {
                        measured.clear();
                    }
                    measured.insert(key, edited);
                    edited
                }
            };
            let seed = self.function_counts[function];
            variant = variant.replacing(seed, edited.counts);
            shared = shared.replacing(seed, edited.shared);
        }
        w.alpha * jaccard_distance(shared.vertices, variant.vertices, self.total.vertices)
            + w.beta * jaccard_distance(shared.edges, variant.edges, self.total.edges)
            - w.gamma * (variant.statements as f64 - self.total.statements as f64).abs()
    }
}

/// `key` with `word` folded in: every step mixes the whole state (splitmix64's finalizer, a
/// bijection), so the order of the words and words that are zero change the key.
fn fold_key(key: u64, word: u64) -> u64 {
    let mut h = (key ^ word).wrapping_add(0x9E37_79B9_7F4A_7C15);
    h = (h ^ (h >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    h ^ (h >> 31)
}

/// A transplanted statement's shape, folded whole: its kind and its number of children, then
/// each child's (with SipHash this was a tenth of the distance's work).
fn shape_hash(shape: &Shape) -> u64 {
    let key = fold_key(shape.kind as u64, shape.children.len() as u64);
    shape
        .children
        .iter()
        .fold(key, |key, child| fold_key(key, shape_hash(child)))
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

/// The Jaccard distance of two sets of `a` and `b` elements that share `shared`.
fn jaccard_distance(shared: usize, a: usize, b: usize) -> f64 {
    let union = a + b - shared;
    if union == 0 {
        return 0.0;
    }
    1.0 - shared as f64 / union as f64
}

/// A statement of the variant, named without building the variant's tree: walking the seed's
/// statements and the edits in place allocates nothing, and a tree of the function's
/// statements for each proposal was half of a distance's cost.
#[derive(Clone, Copy, Debug)]
enum Node<'a> {
    /// A seed statement inside the innermost `guards` of the conditionals that guard edits put
    /// around it.
    Statement { id: StmtId, guards: u32 },
    /// A deleted statement.
    Placeholder(StmtId),
    /// The code an insertion edit puts before its statement.
    Inserted { edit: u32 },
    /// The `index`-th statement (pre-order) of the shape a transplant puts before its statement.
    Transplanted { shape: &'a Shape, edit: u32, index: u32 },
}

/// A node's vertex, its control-flow role and its label.
struct Expanded<'a> {
    vertex: Vertex,
    kind: StmtKind,
    label: Option<&'a str>,
}

struct BuildContext<'a> {
    program: &'a Program,
    deleted: HashSet<StmtId>,
    before: HashMap<StmtId, Vec<(u32, &'a Edit)>>,
    wraps: HashMap<StmtId, Vec<u32>>,
}

impl<'a> BuildContext<'a> {
    /// The context of the edits on the statements `kept` says; each keeps its index in `edits`,
    /// which names the vertices it adds.
    fn new(program: &'a Program, edits: &'a [Edit], kept: impl Fn(StmtId) -> bool) -> Self {
        let mut deleted = HashSet::new();
        let mut before: HashMap<StmtId, Vec<(u32, &Edit)>> = HashMap::new();
        let mut wraps: HashMap<StmtId, Vec<u32>> = HashMap::new();
        for (index, edit) in edits.iter().enumerate() {
            if !kept(edit.stmt()) {
                continue;
            }
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
        BuildContext {
            program,
            deleted,
            before,
            wraps,
        }
    }

    /// The graph of the `index`-th function, into `sink`.
    fn function<Sink: FlowSink>(&self, index: usize, sink: Sink) -> Sink {
        let root = self.node(self.program.roots[index]);
        let mut builder = FlowBuilder {
            context: self,
            sink,
            labels: None,
            root,
            nodes: Vec::new(),
        };
        let (entry, exit) = (Vertex::Entry(index as u32), Vertex::Exit(index as u32));
        builder.sink.vertex(entry);
        builder.sink.vertex(exit);
        let first = builder.flow(root, exit, Jumps::default(), exit);
        builder.sink.edge(entry, first);
        builder.sink
    }

    /// Statement `id` as the edits left it: deleted, or inside its guards.
    fn node(&self, id: StmtId) -> Node<'a> {
        if self.deleted.contains(&id) {
            return Node::Placeholder(id);
        }
        let guards = self.wraps.get(&id).map_or(0, Vec::len) as u32;
        Node::Statement { id, guards }
    }

    fn expand(&self, node: Node<'a>) -> Expanded<'a> {
        let (vertex, kind, label) = match node {
            Node::Statement { id, guards: 0 } => {
                let stmt = self.program.statement(id);
                (Vertex::Stmt(id), stmt.kind, stmt.label.as_deref())
            }
            Node::Statement { id, guards } => {
                // The last guard edit wraps the others: it is the outermost.
                let edit = self.wraps[&id][guards as usize - 1];
                (Vertex::Guard { edit }, StmtKind::If, None)
            }
            Node::Placeholder(id) => (Vertex::Placeholder(id), StmtKind::Expression, None),
            Node::Inserted { edit } => (Vertex::Added { edit, index: 0 }, StmtKind::Expression, None),
            Node::Transplanted { shape, edit, index } => (Vertex::Added { edit, index }, shape.kind, None),
        };
        Expanded { vertex, kind, label }
    }

    /// Appends `node`'s children to `out`, in order.
    fn push_children(&self, node: Node<'a>, out: &mut Vec<Node<'a>>) {
        match node {
            Node::Statement { id, guards: 0 } => {
                let stmt = self.program.statement(id);
                for &child in &stmt.children {
                    // Insertions go before block items only, so a child of any other statement
                    // stands alone.
                    if stmt.kind == StmtKind::Compound {
                        for &(edit, inserted) in self.before.get(&child).into_iter().flatten() {
                            out.push(match inserted {
                                Edit::Transplant { shape, .. } => Node::Transplanted { shape, edit, index: 0 },
                                _ => Node::Inserted { edit },
                            });
                        }
                    }
                    out.push(self.node(child));
                }
            }
            Node::Statement { id, guards } => out.push(Node::Statement { id, guards: guards - 1 }),
            Node::Placeholder(_) | Node::Inserted { .. } => {}
            Node::Transplanted { shape, edit, index } => {
                let mut next_index = index + 1;
                for child in &shape.children {
                    out.push(Node::Transplanted {
                        shape: child,
                        edit,
                        index: next_index,
                    });
                    next_index += shape_size(child);
                }
            }
        }
    }
}

/// Statements in a shape, itself included.
fn shape_size(shape: &Shape) -> u32 {
    1 + shape.children.iter().map(shape_size).sum::<u32>()
}

/// Where `break` and `continue` go.
#[derive(Clone, Copy, Default)]
struct Jumps {
    break_to: Option<Vertex>,
    continue_to: Option<Vertex>,
}

struct FlowBuilder<'c, 'a, Sink> {
    context: &'c BuildContext<'a>,
    sink: Sink,
    /// The function's labels, found at its first `goto`.
    labels: Option<HashMap<&'a str, Vertex>>,
    root: Node<'a>,
    /// The children of the nodes being walked, each node's after its parent's.
    nodes: Vec<Node<'a>>,
}

impl<'a, Sink: FlowSink> FlowBuilder<'_, 'a, Sink> {
    /// Adds the flow of `node`, which continues at `next`; returns the vertex control enters.
    fn flow(&mut self, node: Node<'a>, next: Vertex, jumps: Jumps, exit: Vertex) -> Vertex {
        let Expanded { vertex: v, kind, label } = self.context.expand(node);
        self.sink.vertex(v);
        let children = self.nodes.len();
        self.context.push_children(node, &mut self.nodes);
        let children = children..self.nodes.len();
        match kind {
            StmtKind::Compound => {
                let mut follow = next;
                for child in children.clone().rev() {
                    follow = self.flow(self.nodes[child], follow, jumps, exit);
                }
                self.sink.edge(v, follow);
            }
            StmtKind::If => {
                for child in children.clone() {
                    let first = self.flow(self.nodes[child], next, jumps, exit);
                    self.sink.edge(v, first);
                }
                if children.len() < 2 {
                    self.sink.edge(v, next);
                }
            }
            StmtKind::While | StmtKind::DoWhile | StmtKind::For => {
                let inner = Jumps {
                    break_to: Some(next),
                    continue_to: Some(v),
                };
                for child in children.clone() {
                    let first = self.flow(self.nodes[child], v, inner, exit);
                    self.sink.edge(v, first);
                }
                self.sink.edge(v, next);
            }
            StmtKind::Switch => {
                let inner = Jumps {
                    break_to: Some(next),
                    ..jumps
                };
                for child in children.clone() {
                    let child = self.nodes[child];
                    let first = self.flow(child, next, inner, exit);
                    self.sink.edge(v, first);
                    // Case labels are entered from the switch directly.
                    let grandchildren = self.nodes.len();
                    self.context.push_children(child, &mut self.nodes);
                    for grandchild in grandchildren..self.nodes.len() {
                        let case = self.context.expand(self.nodes[grandchild]);
                        if case.kind == StmtKind::Labeled {
                            self.sink.edge(v, case.vertex);
                        }
                    }
                    self.nodes.truncate(grandchildren);
                }
                self.sink.edge(v, next);
            }
            StmtKind::Labeled => {
                let follow = match children.clone().next() {
                    Some(child) => self.flow(self.nodes[child], next, jumps, exit),
                    None => next,
                };
                self.sink.edge(v, follow);
            }
            StmtKind::Break => self.sink.edge(v, jumps.break_to.unwrap_or(exit)),
            StmtKind::Continue => self.sink.edge(v, jumps.continue_to.unwrap_or(exit)),
            StmtKind::Return => self.sink.edge(v, exit),
            StmtKind::Goto => {
                let target = label.and_then(|l| self.labels().get(l)).copied();
                self.sink.edge(v, target.unwrap_or(exit));
            }
            StmtKind::Expression | StmtKind::Asm => self.sink.edge(v, next),
        }
        self.nodes.truncate(children.start);
        v
    }

    /// The function's labels and the vertices they stand at.
    fn labels(&mut self) -> &HashMap<&'a str, Vertex> {
        let (context, root) = (self.context, self.root);
        self.labels.get_or_insert_with(|| {
            let mut labels = HashMap::new();
            let mut pending = vec![root];
            while let Some(node) = pending.pop() {
                let expanded = context.expand(node);
                if let (StmtKind::Labeled, Some(name)) = (expanded.kind, expanded.label) {
                    labels.insert(name, expanded.vertex);
                }
                context.push_children(node, &mut pending);
            }
            labels
        })
    }
}

#[cfg(test)]
mod tests;
