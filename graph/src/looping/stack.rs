//! The loop stack of graph looping (DESIGN.md §20, seed 000): up to [`MAX_LOOPS`]
//! levels, one per loop-control (chunk) node being looped, plus one more set of
//! counts on top — zero until a loop-control node is pushed there.
//!
//! Following the seed's design note (not Hexagon NN's code):
//!
//! - the counts are cleared when a run starts ([`LoopStack::new`]) and never on a
//!   push: a level's loop-end function resets them for the next time that level is
//!   pushed, so an inner loop's counts carry across the iterations of an outer loop
//!   (its `prev_outer_batches` keeps growing);
//! - a loop-control node reads the counts at the top ([`LoopStack::counts_for`]: the
//!   level it is about to push, or its own level when it is already on top) and pushes
//!   its level only when it is not already on top ([`LoopStack::push`]);
//! - at the end of the node list every level is popped from the top and its loop-end
//!   function called ([`LoopStack::pop`]); one that asks for another iteration sends
//!   execution back to its node;
//! - an output chunk goes at `prev_batches + prev_outer_batches` of the level below
//!   the top ([`LoopStack::output_offset`]).

use crate::ir::NodeId;

/// The most loop-control nodes a graph may have (Hexagon NN's `NN_MAX_LOOPSTACK`).
pub const MAX_LOOPS: usize = 4;

// The counts of one level (Hexagon NN's `nn_loopcounts`), a loop end's decision
// and the standard loop end (`nn_loopend_default`) are the runtime's: graph code
// generated ahead of time runs the same loops (`uop_runtime::graph`).
pub use uop_runtime::graph::{LoopControl, LoopCounts, default_loop_end};

/// A loop-end function (Hexagon NN's `nn_loopend_fp`), called at the end of the node
/// list with the loop-control node and its level's counts. It may keep state of its
/// own (the seed's `opaque`). An error stops the run and is reported naming the node.
pub trait LoopEnd {
    /// Decides whether the loop of `node` runs again, updating `counts` for the next
    /// iteration (or resetting them for the next time the level is pushed).
    fn loop_end(&mut self, node: NodeId, counts: &mut LoopCounts) -> Result<LoopControl, String>;
}

impl<F> LoopEnd for F
where
    F: FnMut(NodeId, &mut LoopCounts) -> Result<LoopControl, String>,
{
    fn loop_end(&mut self, node: NodeId, counts: &mut LoopCounts) -> Result<LoopControl, String> {
        self(node, counts)
    }
}

/// [`default_loop_end`] as a [`LoopEnd`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultLoopEnd;

impl LoopEnd for DefaultLoopEnd {
    fn loop_end(&mut self, _: NodeId, counts: &mut LoopCounts) -> Result<LoopControl, String> {
        Ok(default_loop_end(counts))
    }
}

/// One pushed level: its loop-control node and where execution goes back to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Level {
    /// The loop-control node.
    pub node: NodeId,
    /// The position of its step in the run's node list.
    pub step: usize,
}

/// The loop stack: `levels` pushed levels, and `levels + 1` sets of counts, the
/// topmost of which belongs to no pushed level yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopStack {
    levels: Vec<Level>,
    counts: [LoopCounts; MAX_LOOPS + 1],
}

impl LoopStack {
    /// An empty stack with every count zero (the start of a run).
    pub fn new() -> Self {
        LoopStack::default()
    }

    /// Pushed levels.
    pub fn depth(&self) -> usize {
        self.levels.len()
    }

    /// The pushed levels, the outermost first.
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The counts of level `k` (`k == depth()` is the top's).
    pub fn counts(&self, k: usize) -> Option<&LoopCounts> {
        self.counts.get(k)
    }

    /// True when `node`'s level is the topmost pushed one.
    pub fn on_top(&self, node: NodeId) -> bool {
        self.levels.last().is_some_and(|l| l.node == node)
    }

    /// The counts a loop-control node reads when it runs: its own level's when it is
    /// already on top, else the top's (the level it will push).
    pub fn counts_for(&self, node: NodeId) -> &LoopCounts {
        let k = if self.on_top(node) {
            self.levels.len() - 1
        } else {
            self.levels.len()
        };
        &self.counts[k]
    }

    /// A loop-control node at `step` starts an iteration of `current` batches out of
    /// `total`: its level is pushed unless it is already on top, and its counts get
    /// `current` and `total` (the others are left as they are). An error when
    /// [`MAX_LOOPS`] levels are pushed already.
    pub fn push(
        &mut self,
        node: NodeId,
        step: usize,
        current: u64,
        total: u64,
    ) -> Result<(), String> {
        if !self.on_top(node) {
            if self.levels.len() == MAX_LOOPS {
                return Err(format!(
                    "the loop stack holds {MAX_LOOPS} levels already, at most {MAX_LOOPS} loop-control nodes are allowed"
                ));
            }
            self.levels.push(Level { node, step });
        }
        let c = &mut self.counts[self.levels.len() - 1];
        c.current_batches = current;
        c.total_batches = total;
        Ok(())
    }

    /// Pops the topmost level: the seed's "drop the dummy count, read the function
    /// pointer". Returns the level and its counts, for its loop-end function.
    pub fn pop(&mut self) -> Option<(Level, &mut LoopCounts)> {
        let level = self.levels.pop()?;
        Some((level, &mut self.counts[self.levels.len()]))
    }

    /// Where an output chunk goes: `prev_batches + prev_outer_batches` of the level
    /// below the top, and its rows (`current_batches`). `None` when no level is
    /// pushed.
    pub fn output_offset(&self) -> Option<(u64, u64)> {
        let k = self.levels.len().checked_sub(1)?;
        let c = &self.counts[k];
        Some((
            c.prev_batches.saturating_add(c.prev_outer_batches),
            c.current_batches,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: NodeId = NodeId(3);
    const B: NodeId = NodeId(5);

    #[test]
    fn the_default_loop_end_runs_total_5_chunk_1_five_times_then_adds_5_to_prev_outer() {
        let mut c = LoopCounts {
            current_batches: 1,
            total_batches: 5,
            ..LoopCounts::default()
        };
        let mut seen = Vec::new();
        loop {
            seen.push((c.itercount, c.prev_batches));
            if default_loop_end(&mut c) == LoopControl::Done {
                break;
            }
        }
        assert_eq!(seen, [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4)]);
        assert_eq!(
            c,
            LoopCounts {
                itercount: 0,
                prev_batches: 0,
                current_batches: 1,
                total_batches: 5,
                prev_outer_batches: 5,
            }
        );
    }

    #[test]
    fn a_ragged_last_chunk_ends_the_loop() {
        let mut c = LoopCounts {
            current_batches: 4,
            total_batches: 10,
            ..LoopCounts::default()
        };
        assert_eq!(default_loop_end(&mut c), LoopControl::Again);
        assert_eq!(default_loop_end(&mut c), LoopControl::Again);
        assert_eq!(c.prev_batches, 8);
        c.current_batches = 2;
        assert_eq!(default_loop_end(&mut c), LoopControl::Done);
        assert_eq!(c.prev_outer_batches, 10);
    }

    #[test]
    fn a_node_already_on_top_does_not_push_again() {
        let mut s = LoopStack::new();
        s.push(A, 1, 2, 8).unwrap();
        s.push(A, 1, 3, 8).unwrap();
        assert_eq!(s.depth(), 1);
        assert_eq!(s.counts(0).map(|c| c.current_batches), Some(3));
        assert_eq!(s.counts_for(A).current_batches, 3);
        // Another node pushes a level of its own and reads the zero top.
        assert_eq!(s.counts_for(B), &LoopCounts::default());
        s.push(B, 4, 1, 2).unwrap();
        assert_eq!(s.depth(), 2);
        assert_eq!(s.levels()[1], Level { node: B, step: 4 });
    }

    #[test]
    fn at_most_four_levels_and_the_output_offset_is_the_level_below_the_top() {
        let mut s = LoopStack::new();
        assert_eq!(s.output_offset(), None);
        for k in 0..4u32 {
            s.push(NodeId(k + 1), k as usize, 1, 1).unwrap();
        }
        let err = s.push(NodeId(9), 9, 1, 1).unwrap_err();
        assert!(err.contains("at most 4 loop-control nodes"), "{err}");
        let (level, c) = s.pop().unwrap();
        assert_eq!(level.node, NodeId(4));
        c.prev_batches = 2;
        c.prev_outer_batches = 3;
        c.current_batches = 1;
        s.push(NodeId(4), 3, 1, 9).unwrap();
        assert_eq!(s.output_offset(), Some((5, 1)));
    }

    #[test]
    fn inner_counts_carry_across_outer_iterations() {
        // Outer: 8 rows in chunks of 4; inner: each outer chunk in chunks of 2. The
        // inner level's offset runs 0, 2, 4, 6 across both outer iterations.
        let (outer, inner) = (A, B);
        let mut s = LoopStack::new();
        let mut offsets = Vec::new();
        loop {
            let prev = s.counts_for(outer).prev_batches;
            s.push(outer, 0, 4.min(8 - prev), 8).unwrap();
            loop {
                let prev = s.counts_for(inner).prev_batches;
                s.push(inner, 1, 2.min(4 - prev), 4).unwrap();
                offsets.push(s.output_offset().unwrap());
                let (_, c) = s.pop().unwrap();
                if default_loop_end(c) == LoopControl::Done {
                    break;
                }
            }
            let (_, c) = s.pop().unwrap();
            if default_loop_end(c) == LoopControl::Done {
                break;
            }
        }
        assert_eq!(offsets, [(0, 2), (2, 2), (4, 2), (6, 2)]);
        assert_eq!(s.counts(0).map(|c| c.prev_outer_batches), Some(8));
        assert_eq!(s.counts(1).map(|c| c.prev_outer_batches), Some(8));
    }

    #[test]
    fn a_closure_with_state_is_a_loop_end() {
        let mut calls = 0;
        let mut stop_after_two = |_: NodeId, c: &mut LoopCounts| {
            calls += 1;
            c.itercount += 1;
            Ok(if calls < 2 {
                LoopControl::Again
            } else {
                LoopControl::Done
            })
        };
        let mut c = LoopCounts::default();
        assert_eq!(stop_after_two.loop_end(A, &mut c), Ok(LoopControl::Again));
        assert_eq!(stop_after_two.loop_end(A, &mut c), Ok(LoopControl::Done));
        assert_eq!(c.itercount, 2);
    }
}
