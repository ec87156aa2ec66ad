//! Gradients through `chunk` (DESIGN.md §20, `docs/graph-gradients.md`): the
//! backward of a chunked graph is itself a chunk loop over the same rows.
//!
//! The gradient graph recomputes partition 0 once; its first chunk node chunks the
//! forward chunk's values together with the seeds and the supplied outputs (all
//! have the looped rows), so each iteration recomputes the loop's forward values
//! for its rows and runs their backward pass seeded with its rows of the seeds.
//! The gradient of a value chunked at the loop's start is written chunk by chunk
//! (rows); the gradient of a value read whole by every chunk (a weight) is each
//! chunk's contribution, summed over the chunks by `sum_chunks`. Chunk nodes inside
//! the loop (loops in loops) run on the whole outer chunk: their values are their
//! inputs.
//!
//! What the loop reads from partition 0 must be a graph input (or need no
//! gradient): the gradient of a value computed before the loop is complete only
//! after the last chunk, and a chunk loop has nothing after its last chunk.

use super::clone::Frame;
use super::{Adj, Ctx, GradError};
use crate::hierarchy::Entry;
use crate::ir::{NodeId, Op, Ref};
use crate::looping::Partitions;

/// The forward values of a chunked graph in the gradient graph, and what the loop
/// gives: the chunked seeds and supplied outputs.
pub(crate) struct Chunked {
    /// The forward's first chunk node.
    pub chunk: NodeId,
    /// The top-level entries of the loop (the first chunk node and partitions 1
    /// and above), in run order.
    pub looped: Vec<Entry>,
    /// Each seed's rows in the current chunk.
    pub seeds: Vec<Ref>,
    /// Each supplied output's rows in the current chunk.
    pub supplied: Vec<Ref>,
}

impl Ctx<'_> {
    /// Recomputes the forward values of a chunked graph's top level `top`:
    /// partition 0 once, then the first chunk node over its values, `seeds` and
    /// `supplied` (gradient-graph refs, whole batch), then the loop's nodes.
    pub(crate) fn emit_chunked(
        &mut self,
        top: &[Entry],
        p: &Partitions,
        frame: &mut Frame,
        seeds: &[Ref],
        supplied: &[Ref],
    ) -> Result<Chunked, GradError> {
        let &chunk = p
            .chunks
            .first()
            .ok_or_else(|| GradError::Graph("the graph has no chunk node".into()))?;
        let (before, looped): (Vec<Entry>, Vec<Entry>) =
            top.iter().cloned().partition(|e| p.partition(e.node) == 0);
        self.emit_entries(&before, frame, true)?;
        let node = self.node(chunk)?;
        let Op::Chunk { size, .. } = &node.op else {
            return Err(GradError::Graph(format!("{chunk} is not a chunk node")));
        };
        let mut values: Vec<Ref> = node
            .inputs
            .iter()
            .map(|r| frame.get(*r))
            .collect::<Result<_, _>>()?;
        let own = values.len();
        values.extend(seeds);
        values.extend(supplied);
        let rows = self
            .b
            .chunk_many(&values, size.clone())
            .map_err(GradError::build)?;
        if let (Some(batch), Some(first)) = (&p.batch, rows.first()) {
            self.looping = Some((batch.clone(), first.node));
        }
        for (k, r) in rows.iter().take(own).enumerate() {
            frame.env.insert(node.output(k), *r);
            if let Some(name) = node.name(k) {
                self.b.name(*r, name).map_err(GradError::build)?;
            }
        }
        let rest: Vec<Entry> = looped.iter().filter(|e| e.node != chunk).cloned().collect();
        self.emit_entries(&rest, frame, true)?;
        Ok(Chunked {
            chunk,
            looped,
            seeds: rows[own..own + seeds.len()].to_vec(),
            supplied: rows[own + seeds.len()..].to_vec(),
        })
    }

    /// After the loop's backward pass: a gradient that reached a value computed in
    /// partition 0 cannot be completed (see the module doc).
    pub(crate) fn check_loop_inputs(
        &self,
        adj: &Adj,
        p: &Partitions,
        input: NodeId,
        chunk: NodeId,
    ) -> Result<(), GradError> {
        let mut before: Vec<Ref> = adj
            .keys()
            .filter(|r| r.node != input && p.partition(r.node) == 0)
            .copied()
            .collect();
        before.sort();
        match before.first() {
            None => Ok(()),
            Some(r) => Err(GradError::unsupported(
                r.node,
                format!(
                    "{r} is computed before the loop of chunk {chunk} from inputs whose gradients are wanted, and read by the loop: its gradient would be complete only after the last chunk, which a chunk loop cannot express; make it a graph input, or compute it inside the loop (docs/graph-gradients.md)"
                ),
            )),
        }
    }

    /// The gradient output for forward input `w` of a chunked graph: its rows when
    /// the first chunk node chunks it, else the chunks' contributions summed.
    pub(crate) fn chunked_result(
        &mut self,
        g: Ref,
        w: Ref,
        chunk: NodeId,
    ) -> Result<Ref, GradError> {
        let node = self.node(chunk)?;
        if node.inputs.contains(&w) {
            return Ok(g);
        }
        self.b.sum_chunks(g).map_err(GradError::build)
    }
}
