//! Valuation profiling (Hermes §4.1 and §4.5.1): which values each in-scope integer variable
//! held at sampled program points. A seed is instrumented with probes before a random subset
//! of its executed statements (probability P_profile), run once, and the probes' output is read
//! back into a [`Valuation`]: point → readable lvalue → set of observed values.
//!
//! Hot loops are bounded: a point records at most [`HITS_PER_POINT`] hits and the whole run at
//! most [`MAX_BYTES`]; a point that saw more is marked capped, and mutators do not use it,
//! because its value sets may miss values that later hits had.

use crate::ctype::{CType, IntKind};
use crate::edit::{apply_edits, Edit};
use crate::model::{Execution, Program, StmtId, StmtKind};
use libafl_bolts::rands::Rand;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// Hits of one point that are recorded before it counts as capped.
pub const HITS_PER_POINT: u32 = 64;
/// Bytes of probe output after which every further hit caps its point.
pub const MAX_BYTES: u64 = 32 << 20;
/// Readable lvalues recorded at one point at most.
pub const READABLES_PER_POINT: usize = 48;
/// The file the probes write, in the working directory of the run.
pub const OUTPUT_FILE: &str = "valuation.txt";
/// Points a sample takes on average at least, when the program has that many.
pub const MIN_SAMPLED_POINTS: usize = 16;

/// An integer lvalue that can be read safely at a point.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Readable {
    /// C expression: `x`, `g_5.f0`, `l_3[1][0]`. Shared: the same names are readable at most
    /// points of a profile.
    pub expr: Arc<str>,
    pub kind: IntKind,
    /// It may be assigned (not const).
    pub assignable: bool,
}

/// The values one readable held at a point: ascending, each once. A profile holds thousands
/// of sets of one or two values each, for as long as its seed is cached; as a `BTreeSet` each
/// took a node of eleven (about 200 bytes), together most of a parsed seed's heap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ValueSet(Box<[i128]>);

impl ValueSet {
    pub fn insert(&mut self, value: i128) {
        if let Err(at) = self.0.binary_search(&value) {
            let mut values = std::mem::take(&mut self.0).into_vec();
            values.insert(at, value);
            self.0 = values.into_boxed_slice();
        }
    }

    /// Adds every value of `other`.
    pub fn extend(&mut self, other: ValueSet) {
        if !other.is_empty() {
            *self = self.0.iter().copied().chain(other.0.into_vec()).collect();
        }
    }
}

impl std::ops::Deref for ValueSet {
    type Target = [i128];
    fn deref(&self) -> &[i128] {
        &self.0
    }
}

impl FromIterator<i128> for ValueSet {
    fn from_iter<T: IntoIterator<Item = i128>>(values: T) -> Self {
        let mut values: Vec<i128> = values.into_iter().collect();
        values.sort_unstable();
        values.dedup();
        ValueSet(values.into_boxed_slice())
    }
}

impl<const N: usize> From<[i128; N]> for ValueSet {
    fn from(values: [i128; N]) -> Self {
        values.into_iter().collect()
    }
}

/// A sequence of numbers, as a set was: stored profiles read back unchanged.
impl Serialize for ValueSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ValueSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Vec::<i128>::deserialize(deserializer)?.into_iter().collect())
    }
}

/// What the profile knows about one point.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PointValues {
    pub readables: Vec<Readable>,
    /// Observed values of each readable, in the order of `readables`.
    pub values: Vec<ValueSet>,
    pub hits: u32,
    /// More hits happened than were recorded: the value sets may be incomplete.
    pub capped: bool,
}

impl PointValues {
    /// Complete value sets of at least one readable: Hermes may mutate here.
    pub fn is_usable(&self) -> bool {
        self.hits > 0 && !self.capped && !self.readables.is_empty()
    }
}

/// The valuation profile of a seed: points that ran, by statement.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Valuation {
    pub points: BTreeMap<StmtId, PointValues>,
}

impl Valuation {
    /// Adds the values another run of the same plan observed (under another compiler, whose
    /// order of evaluation may leave other values at a point): a snippet must hold for both.
    pub fn merge(&mut self, other: Valuation) {
        for (stmt, theirs) in other.points {
            match self.points.get_mut(&stmt) {
                None => {
                    self.points.insert(stmt, theirs);
                }
                Some(ours) => {
                    for (set, values) in ours.values.iter_mut().zip(theirs.values) {
                        set.extend(values);
                    }
                    ours.hits += theirs.hits;
                    ours.capped |= theirs.capped;
                }
            }
        }
        self.share_names();
    }

    /// Makes equal names of readables one allocation: a profile names the same few hundred
    /// lvalues at each of its points, and a cached seed keeps its profile.
    pub fn share_names(&mut self) {
        let mut names: HashSet<Arc<str>> = HashSet::new();
        for readable in self.points.values_mut().flat_map(|point| &mut point.readables) {
            match names.get(&readable.expr) {
                Some(name) => readable.expr = name.clone(),
                None => {
                    names.insert(readable.expr.clone());
                }
            }
        }
    }
}

impl Program {
    /// Whether code may be inserted right before the statement without changing what the
    /// program means: it is an item of a block or follows a label, it is not itself labelled
    /// (code before a label runs only on fall-through), and it is not a function body.
    pub fn accepts_insertion_before(&self, id: StmtId) -> bool {
        let stmt = self.statement(id);
        let Some(parent) = stmt.parent else { return false };
        stmt.kind != StmtKind::Labeled && matches!(self.statement(parent).kind, StmtKind::Compound | StmtKind::Labeled)
    }

    /// Integer lvalues with determinate values at a statement: initialized, non-volatile
    /// scalars, struct fields that are not bit-fields, and the first and last elements of
    /// integer arrays; innermost declarations first, shadowed names left out.
    pub fn readables(&self, id: StmtId) -> Vec<Readable> {
        let mut seen = HashSet::new();
        let mut readables = Vec::new();
        for var in self.vars_in_scope(id) {
            if !seen.insert(var.name.clone()) || !var.initialized || var.is_volatile {
                continue;
            }
            self.expand(&var.name, &var.ty, !var.is_const, 0, &mut readables);
            if readables.len() >= READABLES_PER_POINT {
                readables.truncate(READABLES_PER_POINT);
                break;
            }
        }
        readables
    }

    fn expand(&self, expr: &str, ty: &CType, assignable: bool, depth: u32, out: &mut Vec<Readable>) {
        match ty {
            CType::Int(kind) => out.push(Readable {
                expr: expr.into(),
                kind: *kind,
                assignable,
            }),
            CType::Array(element, Some(len)) if *len > 0 && depth < 3 => {
                let mut indices = vec![0, len - 1];
                indices.dedup();
                for index in indices {
                    self.expand(&format!("{expr}[{index}]"), element, assignable, depth + 1, out);
                }
            }
            CType::Record { union: false, tag } if depth < 3 => {
                for field in self.records.get(tag).into_iter().flatten() {
                    if field.bit_width.is_none() && !field.is_volatile {
                        let assignable = assignable && !field.is_const;
                        self.expand(&format!("{expr}.{}", field.name), &field.ty, assignable, depth + 1, out);
                    }
                }
            }
            _ => {}
        }
    }
}

/// The points chosen for profiling and what each records.
#[derive(Clone, Debug, PartialEq)]
pub struct ValuationPlan {
    pub points: Vec<(StmtId, Vec<Readable>)>,
}

impl ValuationPlan {
    /// Samples executed statements that accept insertion and can read a variable, each with
    /// probability `p_profile`, or more in a program with few of them: on average at least
    /// [`MIN_SAMPLED_POINTS`].
    pub fn sample<R: Rand>(program: &Program, p_profile: f64, rand: &mut R) -> Self {
        let candidates: Vec<_> = program
            .statements
            .iter()
            .filter(|s| s.execution == Execution::Executed && program.accepts_insertion_before(s.id))
            .map(|s| (s.id, program.readables(s.id)))
            .filter(|(_, readables)| !readables.is_empty())
            .collect();
        // A small program (a torture test has a dozen points) sampled at a csmith-sized rate
        // would often have none left for Hermes.
        let p = p_profile.max((MIN_SAMPLED_POINTS as f64 / candidates.len().max(1) as f64).min(1.0));
        let points = candidates.into_iter().filter(|_| rand.coinflip(p)).collect();
        ValuationPlan { points }
    }

    /// The seed text with the probe runtime after its include block and a probe before
    /// every planned point.
    pub fn instrument(&self, program: &Program, include_block_len: usize) -> String {
        let mut runtime = String::new();
        write!(
            runtime,
            "#include <stdio.h>\n\
             static FILE *ccfuzz_vp_out;\n\
             static unsigned ccfuzz_vp_hits[{points}];\n\
             static unsigned long long ccfuzz_vp_bytes;\n\
             static int ccfuzz_vp_begin(unsigned point) {{\n\
             \x20 if (ccfuzz_vp_hits[point] > {cap}u) return 0;\n\
             \x20 if (!ccfuzz_vp_out && !(ccfuzz_vp_out = fopen(\"{file}\", \"w\"))) return 0;\n\
             \x20 if (ccfuzz_vp_hits[point] == {cap}u || ccfuzz_vp_bytes > {bytes}ull) {{\n\
             \x20   ccfuzz_vp_hits[point] = {cap}u + 1u;\n\
             \x20   fprintf(ccfuzz_vp_out, \"C %u\\n\", point);\n\
             \x20   return 0;\n\
             \x20 }}\n\
             \x20 ccfuzz_vp_hits[point]++;\n\
             \x20 ccfuzz_vp_bytes += fprintf(ccfuzz_vp_out, \"P %u\\n\", point);\n\
             \x20 return 1;\n\
             }}\n\
             static void ccfuzz_vp_s(unsigned var, long long value) {{ ccfuzz_vp_bytes += fprintf(ccfuzz_vp_out, \"%u %lld\\n\", var, value); }}\n\
             static void ccfuzz_vp_u(unsigned var, unsigned long long value) {{ ccfuzz_vp_bytes += fprintf(ccfuzz_vp_out, \"%u %llu\\n\", var, value); }}\n",
            points = self.points.len().max(1),
            cap = HITS_PER_POINT,
            bytes = MAX_BYTES,
            file = OUTPUT_FILE,
        )
        .expect("writing to a String");
        let edits: Vec<Edit> = self
            .points
            .iter()
            .enumerate()
            .map(|(index, (stmt, readables))| {
                let mut probe = format!("{{ if (ccfuzz_vp_begin({index}u)) {{");
                for (var, readable) in readables.iter().enumerate() {
                    if readable.kind.is_signed() {
                        write!(probe, " ccfuzz_vp_s({var}u, (long long)({}));", readable.expr)
                    } else {
                        write!(probe, " ccfuzz_vp_u({var}u, (unsigned long long)({}));", readable.expr)
                    }
                    .expect("writing to a String");
                }
                probe.push_str(" } }\n");
                Edit::InsertBefore {
                    stmt: *stmt,
                    code: probe.into(),
                }
            })
            .collect();
        let probed = apply_edits(program, &edits);
        format!(
            "{}{runtime}{}",
            &probed[..include_block_len],
            &probed[include_block_len..]
        )
    }

    /// Reads the probes' output.
    pub fn parse_output(&self, output: &str) -> Valuation {
        let mut points: BTreeMap<StmtId, PointValues> = BTreeMap::new();
        let mut current: Option<StmtId> = None;
        for line in output.lines() {
            let Some((first, second)) = line.split_once(' ') else {
                continue;
            };
            match first {
                "P" | "C" => {
                    current = None;
                    let Some((stmt, readables)) = second.parse::<usize>().ok().and_then(|i| self.points.get(i)) else {
                        continue;
                    };
                    let point = points.entry(*stmt).or_insert_with(|| PointValues {
                        readables: readables.clone(),
                        values: vec![ValueSet::default(); readables.len()],
                        hits: 0,
                        capped: false,
                    });
                    if first == "P" {
                        point.hits += 1;
                        current = Some(*stmt);
                    } else {
                        point.capped = true;
                    }
                }
                var => {
                    let (Some(stmt), Ok(var), Ok(value)) = (current, var.parse::<usize>(), second.parse::<i128>())
                    else {
                        continue;
                    };
                    let Some(point) = points.get_mut(&stmt) else { continue };
                    match (point.readables.get(var), point.values.get_mut(var)) {
                        (Some(readable), Some(set)) if readable.kind.contains(value) => {
                            set.insert(value);
                        }
                        // A value out of its type's range: the output is corrupt here.
                        _ => point.capped = true,
                    }
                }
            }
        }
        let mut valuation = Valuation { points };
        valuation.share_names();
        valuation
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_set_is_ascending_and_distinct_and_reads_as_the_sets_stored_before() {
        let mut set = ValueSet::default();
        for value in [5, -1, 5, 3, i128::MIN] {
            set.insert(value);
        }
        assert_eq!(*set, [i128::MIN, -1, 3, 5]);
        set.extend([9, 3, 2].into());
        assert_eq!(*set, [i128::MIN, -1, 2, 3, 5, 9]);
        let stored = std::collections::BTreeSet::from([9, -4, 0]);
        let read: ValueSet = serde_json::from_str(&serde_json::to_string(&stored).unwrap()).unwrap();
        assert_eq!(*read, [-4, 0, 9]);
        assert_eq!(
            serde_json::to_string(&read).unwrap(),
            serde_json::to_string(&stored).unwrap()
        );
        // Whatever order a file has, the set is ascending and distinct.
        let unordered: ValueSet = serde_json::from_str("[7, 1, 7, -2]").unwrap();
        assert_eq!(*unordered, [-2, 1, 7]);
    }

    fn point(values: &[i128], hits: u32, capped: bool) -> PointValues {
        PointValues {
            readables: vec![Readable {
                expr: "g".into(),
                kind: IntKind::Int,
                assignable: true,
            }],
            values: vec![values.iter().copied().collect()],
            hits,
            capped,
        }
    }

    /// A torture-test-sized function: four points that can read a variable.
    #[test]
    fn a_small_program_is_sampled_whole_at_a_csmith_sized_rate() {
        let text = "int f (int x)\n{\n  int y = x;\n  y = y + 1;\n  y = y * 2;\n  x = y - 3;\n  return x;\n}\n";
        let counts = (1..=8).map(|l| (l, 1)).collect();
        let program = Program::parse_parts(text, "", 0, &counts).unwrap();
        let mut rand = libafl_bolts::rands::StdRand::with_seed(7);
        for _ in 0..20 {
            assert_eq!(ValuationPlan::sample(&program, 0.1, &mut rand).points.len(), 4);
        }
    }

    /// GCC's torture test 20020503-1: `buf`'s elements were never written, and Hermes built an
    /// always-true guard on `buf[0]` that clang 22 -O2 was free to make false.
    #[test]
    fn the_elements_an_array_parameter_points_to_are_not_readable() {
        let text = "char *f (long i, char buf[128])\n{\n  char *p = buf + 127;\n  *p = 0;\n  return p;\n}\n";
        let counts = (1..=6).map(|l| (l, 1)).collect();
        let program = Program::parse_parts(text, "", 0, &counts).unwrap();
        let at_return = program
            .statements
            .iter()
            .position(|s| s.kind == StmtKind::Return)
            .unwrap();
        let readables: Vec<String> = program
            .readables(at_return as StmtId)
            .into_iter()
            .map(|r| r.expr.to_string())
            .collect();
        assert_eq!(readables, ["i"]);
    }

    #[test]
    fn merged_profiles_hold_the_values_of_both_runs() {
        let mut gcc = Valuation {
            points: [(1, point(&[-1], 3, false)), (2, point(&[5], 1, false))].into(),
        };
        let clang = Valuation {
            points: [
                (1, point(&[-10, -1], 3, false)),
                (2, point(&[5], 70, true)),
                (3, point(&[0], 1, false)),
            ]
            .into(),
        };
        gcc.merge(clang);
        assert_eq!(gcc.points[&1].values[0], [-10, -1].into());
        assert_eq!(gcc.points[&1].hits, 6);
        assert!(gcc.points[&2].capped && !gcc.points[&2].is_usable());
        assert!(gcc.points.contains_key(&3));
    }
}
