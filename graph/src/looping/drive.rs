//! Running a node list with chunk nodes (DESIGN.md §20): the one driver the graph
//! interpreter and the executor share. It walks the top-level steps; a chunk step
//! reads its level's counts, pushes its level and gives the chunk; at the end of the
//! list the outputs' chunk is written at the offset of the level below the top, and
//! every level's loop-end function is called from the top — one that asks for
//! another iteration sends the walk back to its chunk step.

use std::collections::HashMap;

use uop_codegen::sizes::element_count;
use uop_codegen::tensor::Tensor;

use super::partition::Partitions;
use super::stack::{LoopControl, LoopEnd, LoopStack, default_loop_end};
use crate::ir::{Graph, NodeId, Op};
use crate::run_error::GraphRunError;

/// Custom loop-end functions, by chunk node; a chunk node without one uses
/// [`default_loop_end`].
pub type LoopHooks<'h> = HashMap<NodeId, Box<dyn LoopEnd + 'h>>;

/// What the driver needs to know of each top-level step.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopSteps {
    /// The chunk node of each step that is one.
    pub chunks: Vec<Option<NodeId>>,
    /// The partition of each step.
    pub partitions: Vec<usize>,
    /// Per step and output: true for a value that need not keep the looped rows
    /// ([`Partitions::rowless`]).
    pub rowless: Vec<Vec<bool>>,
}

impl LoopSteps {
    /// The steps of the top-level `nodes` of `graph` (partitions `p`), given which
    /// of them are chunk nodes.
    pub fn new(
        graph: &Graph,
        nodes: &[NodeId],
        chunks: Vec<Option<NodeId>>,
        p: &Partitions,
    ) -> Self {
        let rowless = |n: &NodeId| {
            let outputs = graph.node(*n).map_or(0, |n| n.outputs.len());
            (0..outputs)
                .map(|k| p.rowless.contains(&crate::ir::Ref::new(*n, k)))
                .collect()
        };
        LoopSteps {
            chunks,
            partitions: nodes.iter().map(|n| p.partition(*n)).collect(),
            rowless: nodes.iter().map(rowless).collect(),
        }
    }
}

/// How a graph output of a looped run is assembled from the iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// Each chunk written at its row offset.
    Rows,
    /// `sum_chunks` in a loop: every iteration's value added.
    Sum,
    /// `sum_chunks` in partition 0: computed once, taken once.
    Once,
}

/// The kind of each output of `graph` (partitions `p`).
pub fn output_kinds(graph: &Graph, p: &Partitions) -> Vec<OutputKind> {
    graph
        .interface
        .outputs
        .iter()
        .map(|s| match s.as_ref().and_then(|r| graph.node(r.node)) {
            Some(n) if matches!(n.op, Op::SumChunks) => {
                if p.partition(n.id) == 0 {
                    OutputKind::Once
                } else {
                    OutputKind::Sum
                }
            }
            _ => OutputKind::Rows,
        })
        .collect()
}

/// A machine the driver runs: the interpreter or the executor.
pub trait Looped {
    /// Runs step `k`, which is not a chunk node.
    fn step(&mut self, k: usize) -> Result<(), GraphRunError>;
    /// The rows of chunk step `k`'s input (its axis 0) and the chunk size.
    fn chunk_extent(&mut self, k: usize) -> Result<(u64, u64), GraphRunError>;
    /// Gives chunk step `k` its value: rows `start..start + rows` of its input.
    fn chunk(&mut self, k: usize, start: u64, rows: u64) -> Result<(), GraphRunError>;
    /// Checks that every value step `k` gave (in a loop) has `rows` rows, but the
    /// outputs `skip` marks.
    fn check_rows(&mut self, k: usize, rows: u64, skip: &[bool]) -> Result<(), GraphRunError>;
    /// Writes the graph outputs' chunk: `rows` rows at row `offset` of outputs of
    /// `total` rows.
    fn outputs(&mut self, offset: u64, rows: u64, total: u64) -> Result<(), GraphRunError>;
}

fn node_error(node: NodeId, message: impl Into<String>) -> GraphRunError {
    GraphRunError::Node {
        node,
        message: message.into(),
    }
}

/// Runs `steps` on `m` with the loop stack; `max_iterations` bounds the iterations
/// of all loops together (a custom loop-end function might never end).
pub fn drive(
    steps: &LoopSteps,
    hooks: &mut LoopHooks<'_>,
    max_iterations: Option<u64>,
    m: &mut dyn Looped,
) -> Result<LoopStack, GraphRunError> {
    let mut stack = LoopStack::new();
    let mut pc = 0;
    let mut iterations = 0u64;
    loop {
        while pc < steps.chunks.len() {
            match steps.chunks[pc] {
                Some(node) => {
                    let (total, size) = m.chunk_extent(pc)?;
                    let prev = stack.counts_for(node).prev_batches;
                    if prev > total || (prev == total && total > 0) {
                        return Err(node_error(
                            node,
                            format!(
                                "the loop went on past the end of the input ({total} rows, row {prev} asked for): its loop-end function asked for another iteration"
                            ),
                        ));
                    }
                    let current = size.min(total - prev);
                    stack
                        .push(node, pc, current, total)
                        .map_err(|m| node_error(node, m))?;
                    m.chunk(pc, prev, current)?;
                }
                None => {
                    m.step(pc)?;
                    let p = steps.partitions.get(pc).copied().unwrap_or(0);
                    if p > 0
                        && let Some(c) = stack.counts(p - 1)
                    {
                        let skip = steps.rowless.get(pc).map_or(&[][..], Vec::as_slice);
                        m.check_rows(pc, c.current_batches, skip)?;
                    }
                }
            }
            pc += 1;
        }
        if let Some((offset, rows)) = stack.output_offset() {
            let total = stack.counts(0).map_or(0, |c| c.total_batches);
            m.outputs(offset, rows, total)?;
        }
        let mut again = None;
        while let Some((level, counts)) = stack.pop() {
            let control = match hooks.get_mut(&level.node) {
                Some(h) => h
                    .loop_end(level.node, counts)
                    .map_err(|e| node_error(level.node, format!("loop-end function: {e}")))?,
                None => default_loop_end(counts),
            };
            if control == LoopControl::Again {
                again = Some(level);
                break;
            }
        }
        let Some(level) = again else {
            return Ok(stack);
        };
        iterations += 1;
        if let Some(max) = max_iterations
            && iterations >= max
        {
            return Err(node_error(
                level.node,
                format!("the loop did not end within {max} iterations"),
            ));
        }
        pc = level.step;
    }
}

/// Rows `start..start + rows` of `t` (axis 0).
pub fn rows_of(t: &Tensor, start: u64, rows: u64) -> Result<Tensor, String> {
    let Some((&n, rest)) = t.shape.split_first() else {
        return Err("a chunk needs a value with an axis 0, got a rank-0 value".into());
    };
    let end = start
        .checked_add(rows)
        .filter(|&e| e <= n as u64)
        .ok_or_else(|| format!("rows {start}..{start}+{rows} are not within its {n} rows"))?;
    let row = element_count(rest).ok_or("a row has too many elements")?;
    let (a, b) = (start as usize * row, end as usize * row);
    let mut shape = t.shape.clone();
    shape[0] = rows as usize;
    Tensor::new(t.dtype, shape, t.data[a..b].to_vec()).map_err(|e| e.to_string())
}

/// The graph outputs of a looped run, assembled chunk by chunk (or summed over the
/// chunks: [`OutputKind`]). Rows no iteration wrote (a loop-end function that ended
/// early) stay zero.
#[derive(Clone, Debug, Default)]
pub struct OutputRows {
    full: Vec<Option<Tensor>>,
    kinds: Vec<OutputKind>,
}

impl OutputRows {
    /// Room for `n` outputs, each written by rows.
    pub fn new(n: usize) -> Self {
        OutputRows::with_kinds(vec![OutputKind::Rows; n])
    }

    /// Room for outputs of `kinds`.
    pub fn with_kinds(kinds: Vec<OutputKind>) -> Self {
        OutputRows {
            full: vec![None; kinds.len()],
            kinds,
        }
    }

    /// Writes output `k`'s chunk `chunk` (given by `node`), which must have `rows`
    /// rows, at row `offset` of an output of `total` rows.
    pub fn write(
        &mut self,
        k: usize,
        node: NodeId,
        chunk: &Tensor,
        offset: u64,
        rows: u64,
        total: u64,
    ) -> Result<(), GraphRunError> {
        let err = |m: String| node_error(node, format!("graph output {k}: {m}"));
        match self.kinds.get(k).copied().unwrap_or(OutputKind::Rows) {
            OutputKind::Rows => {}
            OutputKind::Once if self.full.get(k).is_some_and(Option::is_some) => return Ok(()),
            OutputKind::Once | OutputKind::Sum => return self.add(k, chunk).map_err(err),
        }
        let Some((&n, rest)) = chunk.shape.split_first() else {
            return Err(err(
                "a looped output needs an axis 0, got a rank-0 value".into()
            ));
        };
        if n as u64 != rows {
            return Err(err(format!(
                "the chunk gave {n} rows for a chunk of {rows}: the chunks' results would differ from the whole batch's"
            )));
        }
        let slot = self
            .full
            .get_mut(k)
            .ok_or_else(|| err("no such output".into()))?;
        if slot.is_none() {
            let mut shape = vec![usize::try_from(total).map_err(|_| err("too many rows".into()))?];
            shape.extend_from_slice(rest);
            *slot = Some(
                Tensor::try_filled(&format!("output {k}"), chunk.dtype, shape, 0.0)
                    .map_err(|e| err(e.to_string()))?,
            );
        }
        let Some(out) = slot.as_mut() else {
            return Err(err("no buffer".into()));
        };
        if out.shape[1..] != *rest || out.dtype != chunk.dtype {
            return Err(err(format!(
                "a chunk of {}{:?} does not fit an output of {}{:?}",
                chunk.dtype.name(),
                chunk.shape,
                out.dtype.name(),
                out.shape
            )));
        }
        let row = element_count(rest).ok_or_else(|| err("a row has too many elements".into()))?;
        let start = usize::try_from(offset)
            .ok()
            .and_then(|o| o.checked_mul(row))
            .filter(|&s| s + chunk.data.len() <= out.data.len())
            .ok_or_else(|| {
                err(format!(
                    "rows {offset}..{} are past the output's {} rows",
                    offset + rows,
                    out.shape[0]
                ))
            })?;
        out.data[start..start + chunk.data.len()].copy_from_slice(&chunk.data);
        Ok(())
    }

    /// Adds `value` to output `k` (the first value is taken as it is).
    fn add(&mut self, k: usize, value: &Tensor) -> Result<(), String> {
        let slot = self.full.get_mut(k).ok_or("no such output")?;
        match slot {
            None => *slot = Some(value.clone()),
            Some(sum) => {
                if sum.shape != value.shape || sum.dtype != value.dtype {
                    return Err(format!(
                        "a sum over chunks of {}{:?} gets a chunk's value of {}{:?}",
                        sum.dtype.name(),
                        sum.shape,
                        value.dtype.name(),
                        value.shape
                    ));
                }
                for (s, v) in sum.data.iter_mut().zip(&value.data) {
                    *s += v;
                }
            }
        }
        Ok(())
    }

    /// The outputs; an error naming `node` for one never written.
    pub fn finish(self, node: NodeId) -> Result<Vec<Tensor>, GraphRunError> {
        self.full
            .into_iter()
            .enumerate()
            .map(|(k, t)| {
                t.ok_or_else(|| node_error(node, format!("graph output {k} was never written")))
            })
            .collect()
    }
}
