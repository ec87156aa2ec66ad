//! The graph interpreter's run of a graph with chunk nodes (DESIGN.md §20,
//! `docs/graph-looping.md`): the top level, ordered by partition by the hierarchy,
//! through the shared [`drive`]r and its loop stack.

use super::{GraphRunError, Machine, node_error};
use crate::hierarchy::Entry;
use crate::ir::{NodeId, Op};
use crate::looping::{
    LoopHooks, LoopSteps, Looped, OutputRows, drive, output_kinds, partitions, rows_of,
};
use uop_codegen::tensor::Tensor;

/// Runs the top level `top` of a graph with chunk nodes; returns the outputs, each
/// assembled from its chunks.
pub(super) fn run_top(
    m: &mut Machine<'_>,
    top: &[Entry],
    input: NodeId,
    hooks: &mut LoopHooks<'_>,
) -> Result<Vec<Tensor>, GraphRunError> {
    let p = partitions(m.graph)?;
    let chunks = top
        .iter()
        .map(|e| {
            m.graph
                .node(e.node)
                .filter(|n| matches!(n.op, Op::Chunk { .. }))
                .map(|n| n.id)
        })
        .collect();
    let nodes: Vec<NodeId> = top.iter().map(|e| e.node).collect();
    let steps = LoopSteps::new(m.graph, &nodes, chunks, &p);
    let max = m.options.max_iterations;
    let batch = match &p.batch {
        Some(uop_codegen::index::Expr::Name(n)) => Some(n.clone()),
        _ => None,
    };
    let mut l = Interp {
        out: OutputRows::with_kinds(output_kinds(m.graph, &p)),
        batch,
        m,
        top,
        input,
    };
    drive(&steps, hooks, max, &mut l)?;
    l.out.finish(input)
}

struct Interp<'r, 'a> {
    m: &'r mut Machine<'a>,
    top: &'r [Entry],
    input: NodeId,
    out: OutputRows,
    /// The looped rows' dimension name, which inside the loop is the chunk's rows.
    batch: Option<String>,
}

impl Interp<'_, '_> {
    /// Chunk step `k`'s node, its size expression and its first input.
    fn chunk_node(
        &self,
        k: usize,
    ) -> Result<(NodeId, &uop_codegen::index::Expr, &Tensor), GraphRunError> {
        let id = self.top[k].node;
        let node = self.m.node(id)?;
        let Op::Chunk { size, .. } = &node.op else {
            return Err(node_error(id, "is not a chunk node"));
        };
        let r = *node
            .inputs
            .first()
            .ok_or_else(|| node_error(id, "a chunk needs an input"))?;
        Ok((id, size, self.m.value(id, r)?))
    }
}

impl Looped for Interp<'_, '_> {
    fn step(&mut self, k: usize) -> Result<(), GraphRunError> {
        self.m.entry(&self.top[k])
    }

    fn chunk_extent(&mut self, k: usize) -> Result<(u64, u64), GraphRunError> {
        let (id, size, x) = self.chunk_node(k)?;
        let rows = *x.shape.first().ok_or_else(|| {
            node_error(
                id,
                "a chunk needs a value with an axis 0, got a rank-0 value",
            )
        })?;
        let mut b = self.m.bindings.clone();
        b.params
            .extend(self.m.params.iter().map(|(k, v)| (k.clone(), *v)));
        let c = size
            .eval(&b)
            .map_err(|e| node_error(id, format!("the chunk size `{size}`: {e}")))?;
        if c < 1 {
            return Err(node_error(
                id,
                format!("the chunk size `{size}` is {c}: a chunk has at least 1 row"),
            ));
        }
        Ok((rows as u64, c as u64))
    }

    fn chunk(&mut self, k: usize, start: u64, rows: u64) -> Result<(), GraphRunError> {
        let (id, _, _) = self.chunk_node(k)?;
        let node = self.m.node(id)?;
        let mut values = Vec::new();
        for r in &node.inputs {
            let x = self.m.value(id, *r)?;
            values.push(rows_of(x, start, rows).map_err(|e| node_error(id, e))?);
        }
        *self.m.trace.evaluations.entry(id).or_default() += 1;
        self.m
            .trace
            .chunks
            .entry(id)
            .or_default()
            .push((start, rows));
        self.m.values.insert(id, values);
        // Inside the loop the batch's name is the chunk's rows (`reindex(v, [N, 3],
        // ...)` gives one chunk's rows); the cached programs were typed for the old.
        if let Some(n) = &self.batch {
            let rows = rows as i64;
            if self.m.bindings.names.get(n) != Some(&rows) {
                self.m.bindings.names.insert(n.clone(), rows);
                self.m.programs.clear();
            }
        }
        Ok(())
    }

    fn check_rows(&mut self, k: usize, rows: u64, skip: &[bool]) -> Result<(), GraphRunError> {
        let id = self.top[k].node;
        for (i, t) in self.m.values.get(&id).into_iter().flatten().enumerate() {
            if skip.get(i).copied().unwrap_or(false) {
                continue;
            }
            if t.shape.first().map(|&n| n as u64) != Some(rows) {
                return Err(node_error(
                    id,
                    format!(
                        "output {i} has shape {:?} in a loop whose chunk has {rows} rows: every value inside a chunk loop keeps its rows (docs/graph-looping.md)",
                        t.shape
                    ),
                ));
            }
        }
        Ok(())
    }

    fn outputs(&mut self, offset: u64, rows: u64, total: u64) -> Result<(), GraphRunError> {
        let graph = self.m.graph;
        for (k, s) in graph.interface.outputs.iter().enumerate() {
            let t = self.m.source(self.input, s)?;
            let node = s.as_ref().map_or(self.input, |r| r.node);
            self.out.write(k, node, &t, offset, rows, total)?;
        }
        self.m.trace.output_chunks.push((offset, rows));
        Ok(())
    }
}
