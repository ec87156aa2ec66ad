//! The memory plan under a multi-stream schedule (DESIGN.md §18): two nodes on
//! different streams may run at the same time, so a buffer's bytes may be reused
//! only by a node the schedule orders after every node that touched the old value.
//!
//! The steps stay the definition hierarchy's sequential order; what changes is how
//! long a value is live. A value is touched at its *access steps* (the step it is
//! written and every step it is read at, reads from inside a sub-function counting
//! at its super node's end, as for the lifetimes). Its lifetime is extended to the
//! last step that is **not ordered after** all of its access steps ([`extend`]), so
//! a later value placed on its bytes is written by a node that waits (through the
//! schedule's streams and signals) for every access of the old one; an in-place
//! kernel or a `while` taking over a dying value's slot must likewise be ordered
//! after every other access of it ([`Timeline::done_before`]).
//!
//! Step `p` is ordered before step `q` when, in the deepest scope holding both,
//! their enclosing nodes are the same super node (its start, its sub-functions one
//! after another, its end: one stream runs it), or one is a sub-function's return
//! (after everything in it), or the scope's schedule orders the first node before
//! the second. Input and Const nodes are not scheduled: ready when the scope begins.
//!
//! [`StepOrder`] answers both questions in time independent of the graph's size: it
//! computes each step's nesting once, and for each step the last step not ordered
//! after it. A step `q` is not ordered after `p` exactly when, at some level of
//! `p`'s nesting where a node `u` holds `p`, `q` lies in the region of another node
//! `v` of that scope that the schedule runs and does not order after `u`; in one
//! stream's run order the nodes not ordered after `u` are a prefix (the streams'
//! vector clocks only grow), so the latest such region ends at a prefix maximum,
//! found by binary search.

use std::collections::HashMap;

use super::lifetime::Value;
use super::timeline::{Owner, Timeline};
use crate::hierarchy::SubId;
use crate::ir::NodeId;
use crate::schedule::StreamOrder;
use crate::schedule::order::Simulation;

/// One level of a step's nesting: the scope and what in it holds the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// The node of the scope holding the step (the step's own node, or the super
    /// node whose sub-function holds it).
    Node(NodeId),
    /// The scope's return.
    End,
}

/// A schedule's order on the steps of a timeline, computed once.
#[derive(Clone, Debug, Default)]
pub(crate) struct StepOrder {
    order: StreamOrder,
    /// The scopes around each step, outermost first, each with what holds the
    /// step in it.
    nesting: Vec<Vec<(Option<SubId>, Held)>>,
    /// For each step, the last step not ordered after it (the step itself when
    /// every later step is).
    last_unordered: Vec<usize>,
}

/// One stream of a scope's simulation, for the nodes not ordered after a node:
/// its runs in order, each with its vector clock and the latest end step of the
/// runs up to it.
struct StreamRuns {
    /// (index on the stream, clock after it, prefix maximum of the end steps).
    runs: Vec<(usize, Vec<usize>, usize)>,
}

impl StepOrder {
    /// The order `order` puts on the steps of `t` (whose `order` is not read).
    pub(crate) fn new(t: &Timeline, order: StreamOrder) -> StepOrder {
        let nesting: Vec<_> = (0..t.len).map(|p| nesting(t, p)).collect();
        let tables: HashMap<Option<SubId>, Vec<StreamRuns>> = order
            .simulations()
            .map(|(scope, sim)| (scope, stream_runs(t, sim)))
            .collect();
        let mut latest: HashMap<NodeId, usize> = HashMap::new();
        let mut last_unordered = Vec::with_capacity(t.len);
        for (p, levels) in nesting.iter().enumerate() {
            let mut last = p;
            for &(scope, held) in levels {
                let Held::Node(u) = held else { continue };
                let l = *latest.entry(u).or_insert_with(|| {
                    match (order.simulation(scope), tables.get(&scope)) {
                        (Some(sim), Some(streams)) => latest_unordered(sim, streams, u),
                        _ => 0,
                    }
                });
                last = last.max(l);
            }
            last_unordered.push(last);
        }
        StepOrder {
            order,
            nesting,
            last_unordered,
        }
    }

    /// True when everything step `p` does is done before step `q` (a later step)
    /// begins, in every run of the schedule.
    fn ordered(&self, p: usize, q: usize) -> bool {
        if p == q {
            return true;
        }
        let (Some(a), Some(b)) = (self.nesting.get(p), self.nesting.get(q)) else {
            return true;
        };
        for (&(sa, ha), &(sb, hb)) in a.iter().zip(b) {
            if sa != sb {
                // Two sub-functions of one super node: one after the other.
                return true;
            }
            match (ha, hb) {
                (Held::Node(u), Held::Node(v)) if u == v => continue,
                (Held::Node(u), Held::Node(v)) => {
                    let o = &self.order;
                    return !o.runs(sa, u) || !o.runs(sa, v) || o.before(sa, u, v);
                }
                // A scope's return waits for all of it.
                _ => return true,
            }
        }
        // One holds the other (a super node's start or end and its body).
        true
    }
}

/// The scopes around step `p` of `t`, outermost first, each with what holds `p`
/// in it.
fn nesting(t: &Timeline, p: usize) -> Vec<(Option<SubId>, Held)> {
    let (mut scope, held) = match t.owner.get(p) {
        Some(Owner::Node(n)) => (t.placement.get(n).copied().flatten(), Held::Node(*n)),
        Some(Owner::Exit(sub)) => (Some(*sub), Held::End),
        Some(Owner::Return) | None => (None, Held::End),
    };
    let mut out = vec![(scope, held)];
    // The nesting is finite (the hierarchy is a tree); the bound keeps a broken
    // placement from looping.
    for _ in 0..t.len {
        let Some(sub) = scope else { break };
        scope = t.placement.get(&sub.super_node).copied().flatten();
        out.push((scope, Held::Node(sub.super_node)));
    }
    out.reverse();
    out
}

/// Each stream's runs of `sim`, with their clocks and the prefix maxima of their
/// nodes' end steps in `t`.
fn stream_runs(t: &Timeline, sim: &Simulation) -> Vec<StreamRuns> {
    let mut per_stream: Vec<Vec<(usize, NodeId)>> = vec![Vec::new(); sim.clock.len()];
    for (&node, &(stream, index)) in &sim.run_at {
        if let Some(runs) = per_stream.get_mut(stream) {
            runs.push((index, node));
        }
    }
    per_stream
        .into_iter()
        .enumerate()
        .map(|(stream, mut runs)| {
            runs.sort_unstable();
            let mut max = 0;
            let runs = runs
                .into_iter()
                .map(|(index, node)| {
                    max = max.max(t.end_of(node));
                    let clock = sim.clock_at.get(&(stream, index)).cloned();
                    (index, clock.unwrap_or_default(), max)
                })
                .collect();
            StreamRuns { runs }
        })
        .collect()
}

/// The latest end step of a node of `sim`'s scope that the schedule does not order
/// after `u` (0 when `u` is not scheduled or every node is): on `u`'s stream the
/// runs before it, on another stream the runs whose clock has not seen `u`.
fn latest_unordered(sim: &Simulation, streams: &[StreamRuns], u: NodeId) -> usize {
    let Some(&(tu, iu)) = sim.run_at.get(&u) else {
        return 0;
    };
    let mut latest = 0;
    for (stream, s) in streams.iter().enumerate() {
        let count = if stream == tu {
            s.runs.partition_point(|(index, _, _)| *index < iu)
        } else {
            s.runs
                .partition_point(|(_, clock, _)| clock.get(tu).is_none_or(|&c| c <= iu))
        };
        if let Some(&(_, _, max)) = count.checked_sub(1).and_then(|k| s.runs.get(k)) {
            latest = latest.max(max);
        }
    }
    latest
}

impl Timeline {
    /// True when everything step `p` does is done before step `q` (a later step)
    /// begins, in every run of the schedule (always, without one).
    pub(crate) fn ordered(&self, p: usize, q: usize) -> bool {
        self.order.as_ref().is_none_or(|o| o.ordered(p, q))
    }

    /// True when every access of `v` other than at `step` is ordered before `step`:
    /// `step` may take over `v`'s bytes.
    pub(crate) fn done_before(&self, v: &Value, step: usize) -> bool {
        v.accesses()
            .all(|a| a == step || (a < step && self.ordered(a, step)))
    }
}

/// Extends each value's end to the last step not ordered after all of its
/// accesses (no change without a schedule).
pub(crate) fn extend<'a>(t: &Timeline, values: impl Iterator<Item = &'a mut Value>) {
    for v in values {
        let accesses: Vec<usize> = v.accesses().collect();
        v.end = extended_end(t, &accesses, v.end);
    }
}

/// The last step, from `end` on, that is not ordered after every step of
/// `accesses`: how long bytes touched at `accesses` must stay reserved (`end`
/// without a schedule).
pub(crate) fn extended_end(t: &Timeline, accesses: &[usize], end: usize) -> usize {
    let Some(order) = &t.order else {
        return end;
    };
    let last = accesses
        .iter()
        .filter_map(|&a| order.last_unordered.get(a).copied())
        .max()
        .unwrap_or(end);
    last.max(end)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hierarchy;
    use crate::pass::{PrepareOptions, prepare};
    use crate::random::{RandomOptions, random_graph};
    use crate::schedule::{ScheduleOptions, schedule};

    /// The definition: the last step after `end` some access is not ordered before.
    fn extended_end_by_scan(t: &Timeline, accesses: &[usize], end: usize) -> usize {
        (end + 1..t.len)
            .rev()
            .find(|&s| accesses.iter().any(|&a| !t.ordered(a, s)))
            .unwrap_or(end)
    }

    #[test]
    fn the_last_unordered_steps_agree_with_the_definition_on_random_schedules() {
        let (mut multi, mut extended) = (0, 0);
        for seed in 0..60 {
            let g = random_graph(seed, &RandomOptions::default()).expect("builds");
            if hierarchy(&g).is_err() {
                continue;
            }
            let (g, _) = prepare(g, &PrepareOptions::default()).expect("prepares");
            let h = hierarchy(&g).expect("a hierarchy");
            for streams in [2, 4] {
                let options = ScheduleOptions {
                    max_streams: Some(streams),
                    random: Some(seed),
                    ..ScheduleOptions::default()
                };
                let s = schedule(&g, &options).expect("schedules");
                multi += usize::from(s.max_stream_count() > 1);
                let mut t = Timeline::new(&g, &h);
                t.order = Some(StepOrder::new(&t, StreamOrder::new(&s)));
                for a in 0..t.len {
                    for end in [a, (a + 3).min(t.len - 1)] {
                        let fast = extended_end(&t, &[a], end);
                        let slow = extended_end_by_scan(&t, &[a], end);
                        assert_eq!(fast, slow, "seed {seed}, step {a}, end {end}");
                        extended += usize::from(fast > end);
                    }
                }
            }
        }
        assert!(multi > 20, "{multi} schedules on several streams");
        assert!(extended > 100, "{extended} lifetimes extended");
    }
}
