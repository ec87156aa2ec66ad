//! Partition numbers by seed 000's method (DESIGN.md §20), and the rules a chunked
//! graph must keep (`docs/graph-looping.md`).
//!
//! One pass over the node list: Consts, Input nodes and Sinks are in partition 0
//! (Consts count for nothing: they are never sunk); a node's partition is the largest among the nodes it uses (inputs and
//! sub-function results); a chunk node (loop-control node) must read the current
//! partition and opens the next one, whose first node it is. Every tensor used in a
//! higher partition than its producer's — and every input of a chunk node — is
//! collected (deduplicated, sorted) for the Sink.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use uop_codegen::index::{Bindings, Expr};

use super::rows::mixing_uop;
use super::stack::MAX_LOOPS;
use crate::hierarchy::hierarchy;
use crate::infer::call_program_of;
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source};
use crate::vocab::Violation;

/// A broken graph-looping rule; the message names the nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopError {
    /// The nodes involved, the one the message is about first.
    pub nodes: Vec<NodeId>,
    /// The whole message.
    pub message: String,
}

impl fmt::Display for LoopError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LoopError {}

impl From<LoopError> for Violation {
    fn from(e: LoopError) -> Self {
        Violation {
            nodes: e.nodes,
            message: e.message,
        }
    }
}

fn error(nodes: Vec<NodeId>, message: String) -> LoopError {
    LoopError { nodes, message }
}

/// The partitions of a graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Partitions {
    /// Every node's partition (Consts, Input nodes and Sinks: 0).
    pub of: HashMap<NodeId, usize>,
    /// The chunk nodes in list order: `chunks[k]` opens partition `k + 1`.
    pub chunks: Vec<NodeId>,
    /// Every tensor read in a higher partition than its producer's, and every chunk
    /// node's input: what the Sink holds (sorted, each once).
    pub sink: Vec<Ref>,
    /// True when a node stands after a node of a higher partition (the list needs
    /// the stable sort).
    pub needs_sort: bool,
    /// The looped rows: axis 0 of the first chunk node's input (`None` without
    /// chunks).
    pub batch: Option<Expr>,
    /// Values of a loop that need not keep the looped rows: those of `sum_chunks`
    /// nodes and the values only `sum_chunks` reads (through other such values): a
    /// weight's per-chunk gradient.
    pub rowless: BTreeSet<Ref>,
}

impl Partitions {
    /// The partition of `node` (0 for a node not in the graph).
    pub fn partition(&self, node: NodeId) -> usize {
        self.of.get(&node).copied().unwrap_or(0)
    }

    /// The last partition (the number of chunk nodes).
    pub fn last(&self) -> usize {
        self.chunks.len()
    }
}

/// The partitions of `graph` and every broken rule, in the order found.
pub fn analyze(graph: &Graph) -> (Partitions, Vec<LoopError>) {
    let mut errors = Vec::new();
    let mut p = Partitions::default();
    let mut sink = BTreeSet::new();
    let nodes = graph.nodes();
    let counts = |r: &Ref| {
        graph
            .node(r.node)
            .is_some_and(|n| !matches!(n.op, Op::Const(_) | Op::Sink))
    };
    let mut previous = 0usize;
    for n in nodes {
        if matches!(n.op, Op::Const(_) | Op::Input { .. } | Op::Sink) {
            p.of.insert(n.id, 0);
            continue;
        }
        let uses: Vec<(Ref, usize)> = n
            .uses()
            .into_iter()
            .filter(|r| counts(r))
            .map(|r| (r, p.partition(r.node)))
            .collect();
        let max = uses.iter().map(|u| u.1).max().unwrap_or(0);
        let min = uses.iter().map(|u| u.1).min().unwrap_or(0);
        let here = if let Op::Chunk { axis, .. } = n.op {
            let current = p.chunks.len();
            if max != current {
                let prev = p.chunks.last().copied().unwrap_or(n.id);
                errors.push(error(
                    vec![n.id, prev],
                    format!(
                        "{}: chunk not downstream of the previous loop-control node {prev}",
                        n.id
                    ),
                ));
            }
            if axis != 0 {
                errors.push(error(
                    vec![n.id],
                    format!("{}: chunk axis {axis}: only axis 0 is looped", n.id),
                ));
            }
            if p.chunks.is_empty() {
                p.batch = n
                    .inputs
                    .first()
                    .and_then(|r| graph.type_of(*r))
                    .and_then(|t| t.shape.first().cloned());
            }
            p.chunks.push(n.id);
            sink.extend(uses.iter().map(|u| u.0));
            current + 1
        } else {
            if min < max {
                sink.extend(uses.iter().filter(|u| u.1 < max).map(|u| u.0));
            }
            max
        };
        if here < previous {
            p.needs_sort = true;
        }
        previous = here;
        p.of.insert(n.id, here);
    }
    if p.chunks.len() > MAX_LOOPS {
        errors.push(error(
            p.chunks.clone(),
            format!(
                "{} chunk nodes ({}), at most {MAX_LOOPS} loop-control nodes are allowed",
                p.chunks.len(),
                join(&p.chunks)
            ),
        ));
    }
    p.sink = sink.into_iter().collect();
    if let Some(&last) = p.chunks.last() {
        p.rowless = rowless(graph, &p);
        outputs_in_last(graph, &p, last, &mut errors);
        sums(graph, &p, &mut errors);
        placement_and_rows(graph, &p, &mut errors);
    }
    (p, errors)
}

/// The values of a loop only `sum_chunks` reads (see [`Partitions::rowless`]),
/// with the values of the `sum_chunks` nodes themselves. A reader passes a value
/// on to `sum_chunks` when it is one or when all its own values are such.
fn rowless(graph: &Graph, p: &Partitions) -> BTreeSet<Ref> {
    let outputs: BTreeSet<Ref> = graph
        .interface
        .outputs
        .iter()
        .filter_map(|s| s.as_ref())
        .collect();
    let mut readers: HashMap<Ref, Vec<NodeId>> = HashMap::new();
    for n in graph.nodes() {
        for r in n.uses() {
            readers.entry(r).or_default().push(n.id);
        }
    }
    let mut out = BTreeSet::new();
    let mut passes: BTreeSet<NodeId> = BTreeSet::new();
    for n in graph.nodes().iter().rev() {
        if matches!(n.op, Op::SumChunks) {
            out.extend((0..n.outputs.len()).map(|k| n.output(k)));
            passes.insert(n.id);
            continue;
        }
        if p.partition(n.id) == 0 || !matches!(n.op, Op::Call(_) | Op::Kernel(_)) {
            continue;
        }
        let mut all = true;
        for k in 0..n.outputs.len() {
            let r = n.output(k);
            let by = readers.get(&r).map_or(&[][..], Vec::as_slice);
            if !outputs.contains(&r) && !by.is_empty() && by.iter().all(|c| passes.contains(c)) {
                out.insert(r);
            } else {
                all = false;
            }
        }
        if all {
            passes.insert(n.id);
        }
    }
    out
}

/// `sum_chunks` rules: only a graph output reads one, it stands in partition 0 (one
/// term) or in the last partition (one term per iteration of the innermost loop),
/// and in a loop its value has no looped rows (chunks of different sizes do not add).
fn sums(graph: &Graph, p: &Partitions, errors: &mut Vec<LoopError>) {
    for n in graph.nodes() {
        if !matches!(n.op, Op::SumChunks) {
            continue;
        }
        if let Some(c) = graph.consumers(n.id).first() {
            errors.push(error(
                vec![n.id, *c],
                format!(
                    "{} (sum_chunks) is read by {c}: a sum over the chunks is complete only after the loop, so only graph outputs may read it",
                    n.id
                ),
            ));
        }
        let part = p.partition(n.id);
        if part != 0 && part != p.last() {
            errors.push(error(
                vec![n.id],
                format!(
                    "{} (sum_chunks) stands in partition {part}: a sum over the chunks stands in partition 0 or in the last partition ({})",
                    n.id,
                    p.last()
                ),
            ));
        }
        if part > 0
            && let Some(batch) = &p.batch
            && n.outputs.first().and_then(|t| t.shape.first()) == Some(batch)
        {
            errors.push(error(
                vec![n.id],
                format!(
                    "{} (sum_chunks) sums a value with the looped rows `{batch}`: the chunks' values have different rows and do not add (a looped value is an output of its own)",
                    n.id
                ),
            ));
        }
    }
}

/// The partitions of `graph`, or the first broken rule.
pub fn partitions(graph: &Graph) -> Result<Partitions, LoopError> {
    let (p, errors) = analyze(graph);
    match errors.into_iter().next() {
        Some(e) => Err(e),
        None => Ok(p),
    }
}

/// Every graph output must be in the last partition.
fn outputs_in_last(graph: &Graph, p: &Partitions, last: NodeId, errors: &mut Vec<LoopError>) {
    for (k, s) in graph.interface.outputs.iter().enumerate() {
        let (text, node) = match s {
            Source::Ref(r) => (r.to_string(), Some(r.node)),
            Source::Scalar(v) => (v.to_string(), None),
        };
        let sum = node.is_some_and(|id| {
            graph
                .node(id)
                .is_some_and(|n| matches!(n.op, Op::SumChunks))
        });
        let inside = sum
            || node.is_some_and(|id| {
                p.partition(id) == p.last()
                    && graph
                        .node(id)
                        .is_some_and(|n| !matches!(n.op, Op::Const(_) | Op::Input { .. }))
            });
        if !inside {
            errors.push(error(
                node.into_iter().chain([last]).collect(),
                format!(
                    "output {k} ({text}) is not downstream of the last loop-control node {last}"
                ),
            ));
        }
    }
}

/// uop's rules where the seed is silent: chunks at the top level, no control flow
/// inside a loop, and every looped value keeps the looped rows on axis 0.
fn placement_and_rows(graph: &Graph, p: &Partitions, errors: &mut Vec<LoopError>) {
    let placement = hierarchy(graph).ok().map(|h| h.placement);
    for n in graph.nodes() {
        let part = p.partition(n.id);
        let nested = placement
            .as_ref()
            .and_then(|pl| pl.get(&n.id).copied().flatten());
        if let (Op::Chunk { .. }, Some(sub)) = (&n.op, nested) {
            errors.push(error(
                vec![n.id, sub.super_node],
                format!(
                    "{}: a chunk loops the whole graph and must stand at the top level, not in {sub}",
                    n.id
                ),
            ));
            continue;
        }
        if let Op::Chunk { .. } = &n.op {
            let rows: Vec<Option<&Expr>> = n
                .inputs
                .iter()
                .map(|r| graph.type_of(*r).and_then(|t| t.shape.first()))
                .collect();
            if rows.iter().any(|r| *r != rows[0]) {
                errors.push(error(
                    vec![n.id],
                    format!(
                        "{}: the values a chunk loops over together have the same rows on axis 0",
                        n.id
                    ),
                ));
            }
        }
        if part == 0 || matches!(n.op, Op::Chunk { .. } | Op::Sink) {
            continue;
        }
        let chunk = p.chunks[part - 1];
        if n.op.is_super() || nested.is_some() {
            errors.push(error(
                vec![n.id, chunk],
                format!(
                    "{} ({}) reads values looped by chunk {chunk}: control flow inside a chunk loop is not supported",
                    n.id,
                    n.op.kind()
                ),
            ));
            continue;
        }
        let Some(batch) = &p.batch else { continue };
        for (k, ty) in n.outputs.iter().enumerate() {
            if p.rowless.contains(&n.output(k)) {
                continue;
            }
            if ty.shape.first() != Some(batch) {
                errors.push(error(
                    vec![n.id, chunk],
                    format!(
                        "{} ({}) gives {ty} in the loop of chunk {chunk}: its axis 0 is not the looped rows `{batch}`, so the chunks' results would differ from the whole batch's (every value inside a chunk loop keeps its rows)",
                        Ref::new(n.id, k),
                        n.op.kind()
                    ),
                ));
            }
        }
        let all_rowless = (0..n.outputs.len()).all(|k| p.rowless.contains(&n.output(k)));
        if !all_rowless && let Some(what) = mixes_rows(graph, p, n, batch) {
            errors.push(error(
                vec![n.id, chunk],
                format!(
                    "{} ({}) mixes the rows of the loop of chunk {chunk}: {what}, so the chunks' results would differ from the whole batch's (an op inside a chunk loop computes each row from that row alone)",
                    n.id,
                    op_name(n)
                ),
            ));
        }
    }
}

/// `call softmax`, `kernel k3`, or the node's kind.
fn op_name(n: &Node) -> String {
    match &n.op {
        Op::Call(c) => format!("call {}", c.op),
        Op::Kernel(k) => format!("kernel {}", k.name),
        other => other.kind().to_string(),
    }
}

/// What of `n`'s uops mixes the looped rows `batch` ([`super::rows`]), if anything.
/// A call whose program cannot be built is left to the errors that say so.
fn mixes_rows(graph: &Graph, p: &Partitions, n: &Node, batch: &Expr) -> Option<String> {
    let looped: Vec<bool> = n
        .inputs
        .iter()
        .map(|r| p.partition(r.node) > 0 && !p.rowless.contains(r))
        .collect();
    let checked: Vec<bool> = (0..n.outputs.len())
        .map(|k| !p.rowless.contains(&n.output(k)))
        .collect();
    match &n.op {
        Op::Kernel(k) => mixing_uop(&k.program, &looped, &checked, batch),
        Op::Call(call) => {
            let types: Vec<_> = n
                .inputs
                .iter()
                .map(|r| graph.type_of(*r).cloned())
                .collect::<Option<_>>()?;
            let (program, _) = call_program_of(graph, call, &types).ok()?;
            mixing_uop(&program, &looped, &checked, batch)
        }
        _ => None,
    }
}

/// The violations [`crate::Checks::PARTITIONS`] reports: every broken rule, a list not
/// sorted by partition, and a tensor read in a higher partition that no Sink holds.
pub(crate) fn violations(graph: &Graph) -> Vec<Violation> {
    let (p, errors) = analyze(graph);
    let mut out: Vec<Violation> = errors.into_iter().map(Violation::from).collect();
    if p.chunks.is_empty() {
        return out;
    }
    if p.needs_sort {
        let mut last: Option<(NodeId, usize)> = None;
        for n in graph.nodes() {
            if matches!(n.op, Op::Const(_) | Op::Input { .. } | Op::Sink) {
                continue;
            }
            let here = p.partition(n.id);
            if let Some((prev, q)) = last
                && here < q
            {
                out.push(Violation {
                    nodes: vec![n.id, prev],
                    message: format!(
                        "{} (partition {here}) stands after {prev} (partition {q}): the nodes are not sorted by partition",
                        n.id
                    ),
                });
                break;
            }
            last = Some((n.id, here));
        }
    }
    let held = held_by_sinks(graph);
    for r in &p.sink {
        if !held.contains(r) {
            out.push(Violation {
                nodes: vec![r.node],
                message: format!(
                    "{r} is read in a later partition than its own (or by a chunk), but no Sink holds it"
                ),
            });
        }
    }
    out
}

/// Every tensor a Sink of `graph` holds.
pub(crate) fn held_by_sinks(graph: &Graph) -> BTreeSet<Ref> {
    graph
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::Sink))
        .flat_map(|n| n.inputs.iter().copied())
        .collect()
}

/// Rows of the looped values for concrete dims: for each value in partition `p >= 1`
/// (but the [`Partitions::rowless`]),
/// the most rows one of its chunks has (`min(batch, size_1, ..., size_p)`). Empty
/// when the graph has no chunk nodes, breaks a rule or a size does not evaluate (the
/// memory plan then sizes every value for the whole batch).
pub fn looped_rows(graph: &Graph, env: &Bindings) -> HashMap<Ref, i64> {
    let mut out = HashMap::new();
    let (p, errors) = analyze(graph);
    let Some(batch) = p.batch.as_ref() else {
        return out;
    };
    if !errors.is_empty() {
        return out;
    }
    let Ok(mut rows) = batch.eval(env) else {
        return out;
    };
    let mut per_partition = vec![rows];
    for c in &p.chunks {
        let size = match graph.node(*c).map(|n| &n.op) {
            Some(Op::Chunk { size, .. }) => size.eval(env).ok(),
            _ => None,
        };
        let Some(size) = size else { return out };
        rows = rows.min(size.max(1));
        per_partition.push(rows);
    }
    for n in graph.nodes() {
        let part = p.partition(n.id);
        for k in 0..n.outputs.len() {
            if part > 0 && !p.rowless.contains(&n.output(k)) {
                out.insert(n.output(k), per_partition[part]);
            }
        }
    }
    out
}

/// The ids as `%a, %b`.
fn join(ids: &[NodeId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}
