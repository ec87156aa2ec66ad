//! The executor's run of a graph with chunk nodes (DESIGN.md §20,
//! `docs/graph-looping.md`): the top-level steps (ordered by partition by the
//! hierarchy) through `uop_graph::looping::drive`, the driver the graph interpreter
//! uses too. A chunk step copies its rows of the input into its slot, which the
//! memory plan sized for one chunk; the outputs are assembled chunk by chunk.

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_graph::looping::{
    LoopHooks, LoopSteps, Looped, OutputRows, drive, output_kinds, partitions,
};
use uop_graph::{Graph, GraphRunError, NodeId, Op};

use crate::build::{Body, Step, StepKind};
use crate::run::Machine;

fn node_error(node: NodeId, message: impl Into<String>) -> GraphRunError {
    GraphRunError::Node {
        node,
        message: message.into(),
    }
}

/// Runs the top level `top` of the prepared `graph`, which has chunk nodes; returns
/// the outputs.
pub(crate) fn run_top(
    machine: &mut Machine<'_>,
    graph: &Graph,
    top: &Body,
    input: NodeId,
    hooks: &mut LoopHooks<'_>,
) -> Result<Vec<Tensor>, GraphRunError> {
    let p = partitions(graph)?;
    let chunks = top
        .steps
        .iter()
        .map(|s| matches!(s.kind, StepKind::Chunk).then_some(s.node))
        .collect();
    let nodes: Vec<NodeId> = top.steps.iter().map(|s| s.node).collect();
    let steps = LoopSteps::new(graph, &nodes, chunks, &p);
    let max = machine.max_iterations;
    let mut l = Exec {
        m: machine,
        graph,
        top,
        input,
        out: OutputRows::with_kinds(output_kinds(graph, &p)),
        batch: match &p.batch {
            Some(Expr::Name(n)) => Some(n.clone()),
            _ => None,
        },
    };
    drive(&steps, hooks, max, &mut l)?;
    l.out.finish(input)
}

struct Exec<'r, 'a> {
    m: &'r mut Machine<'a>,
    graph: &'r Graph,
    top: &'r Body,
    input: NodeId,
    out: OutputRows,
    /// The looped rows' dimension name.
    batch: Option<String>,
}

impl Exec<'_, '_> {
    fn step_of(&self, k: usize) -> &Step {
        &self.top.steps[k]
    }

    /// The rows and the elements per row of chunk step `k`'s input `i`.
    fn input_rows(&self, step: &Step, i: usize) -> Result<(usize, usize), GraphRunError> {
        let x = step
            .inputs
            .get(i)
            .and_then(|s| self.m.store.get(*s))
            .ok_or_else(|| node_error(step.node, "reads a value that has none"))?;
        let rows = *x.shape.first().ok_or_else(|| {
            node_error(
                step.node,
                "a chunk needs a value with an axis 0, got a rank-0 value",
            )
        })?;
        Ok((rows, x.shape[1..].iter().product()))
    }
    /// Gives chunk step `step`'s output `i`: rows `start..start + rows` of its input
    /// `i`, copied into its slot.
    fn chunk_one(
        &mut self,
        step: &Step,
        i: usize,
        start: u64,
        rows: u64,
    ) -> Result<(), GraphRunError> {
        let (all, row) = self.input_rows(step, i)?;
        let err = |m: String| node_error(step.node, m);
        let (start, rows) = (start as usize, rows as usize);
        if start + rows > all {
            return Err(err(format!(
                "rows {start}..{} are not within its {all} rows",
                start + rows
            )));
        }
        let x = self
            .m
            .store
            .get(step.inputs[i])
            .ok_or_else(|| err("reads a value that has none".into()))?;
        let mut shape = x.shape.to_vec();
        shape[0] = rows;
        let slot = step.outputs[i];
        let previous = self.m.store.take(slot);
        let mut dst = self
            .m
            .mem
            .place(slot, previous, x.dtype(), &shape)
            .map_err(err)?;
        let s = self.m.mem.read(&x);
        let d = self.m.mem.write(&mut dst).map_err(err)?;
        let size = s.dtype.size();
        let (from, n) = (start * row, rows * row);
        if s.dtype != d.dtype || from + n > s.len || n > d.len {
            return Err(err(format!(
                "{n} elements from {from} of {} do not fit its slot of {}",
                s.len, d.len
            )));
        }
        let src = s.ptr.wrapping_add(from * size);
        let (a, b, bytes) = (src as usize, d.ptr as usize, n * size);
        if a < b + bytes && b < a + bytes {
            return Err(err("the memory plan overlaps a chunk with its input".into()));
        }
        // SAFETY: both ranges are valid for `bytes` bytes (checked views, bounds
        // checked above) and do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.cast_const(), d.ptr, bytes) };
        self.m.store.set(slot, Some(dst));
        Ok(())
    }
}

impl Looped for Exec<'_, '_> {
    fn step(&mut self, k: usize) -> Result<(), GraphRunError> {
        let top = self.top;
        self.m.steps(std::slice::from_ref(&top.steps[k]))
    }

    fn chunk_extent(&mut self, k: usize) -> Result<(u64, u64), GraphRunError> {
        let step = self.step_of(k);
        let size: &Expr = match self.graph.node(step.node).map(|n| &n.op) {
            Some(Op::Chunk { size, .. }) => size,
            _ => return Err(node_error(step.node, "is not a chunk node")),
        };
        let (rows, _) = self.input_rows(step, 0)?;
        let mut b = self.m.bindings.clone().into_owned();
        b.params
            .extend(self.m.params.iter().map(|(k, v)| (k.clone(), *v)));
        let c = size
            .eval(&b)
            .map_err(|e| node_error(step.node, format!("the chunk size `{size}`: {e}")))?;
        if c < 1 {
            return Err(node_error(
                step.node,
                format!("the chunk size `{size}` is {c}: a chunk has at least 1 row"),
            ));
        }
        Ok((rows as u64, c as u64))
    }

    fn chunk(&mut self, k: usize, start: u64, rows: u64) -> Result<(), GraphRunError> {
        let step = &self.top.steps[k];
        for i in 0..step.inputs.len().min(step.outputs.len()) {
            self.chunk_one(step, i, start, rows)?;
        }
        // Inside the loop the batch's name is the chunk's rows, as on the
        // interpreter (calls compiled at first use key their programs by the dims).
        if let Some(n) = &self.batch {
            self.m
                .bindings
                .to_mut()
                .names
                .insert(n.clone(), rows as i64);
        }
        Ok(())
    }
    fn check_rows(&mut self, k: usize, rows: u64, skip: &[bool]) -> Result<(), GraphRunError> {
        let step = self.step_of(k);
        for (i, s) in step.outputs.iter().enumerate() {
            let Some(v) = self.m.store.get(*s) else {
                continue;
            };
            if skip.get(i).copied().unwrap_or(false) {
                continue;
            }
            if v.shape.first().map(|&n| n as u64) != Some(rows) {
                return Err(node_error(
                    step.node,
                    format!(
                        "output {i} has shape {:?} in a loop whose chunk has {rows} rows: every value inside a chunk loop keeps its rows (docs/graph-looping.md)",
                        v.shape
                    ),
                ));
            }
        }
        Ok(())
    }

    fn outputs(&mut self, offset: u64, rows: u64, total: u64) -> Result<(), GraphRunError> {
        let top = self.top;
        for (k, (r, src)) in top
            .results
            .iter()
            .zip(&self.graph.interface.outputs)
            .enumerate()
        {
            let t = self.m.output(self.input, r)?;
            let node = src.as_ref().map_or(self.input, |r| r.node);
            self.out.write(k, node, &t, offset, rows, total)?;
        }
        Ok(())
    }
}
