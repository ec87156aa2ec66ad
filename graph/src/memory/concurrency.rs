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

use super::lifetime::Value;
use super::timeline::{Owner, Timeline};
use crate::hierarchy::SubId;
use crate::ir::NodeId;

/// One level of a step's nesting: the scope and what in it holds the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Held {
    /// The node of the scope holding the step (the step's own node, or the super
    /// node whose sub-function holds it).
    Node(NodeId),
    /// The scope's return.
    End,
}

impl Timeline {
    /// The scopes around step `p`, outermost first, each with what holds `p` in it.
    fn nesting(&self, p: usize) -> Vec<(Option<SubId>, Held)> {
        let (mut scope, held) = match self.owner.get(p) {
            Some(Owner::Node(n)) => (self.placement.get(n).copied().flatten(), Held::Node(*n)),
            Some(Owner::Exit(sub)) => (Some(*sub), Held::End),
            Some(Owner::Return) | None => (None, Held::End),
        };
        let mut out = vec![(scope, held)];
        // The nesting is finite (the hierarchy is a tree); the bound keeps a broken
        // placement from looping.
        for _ in 0..self.len {
            let Some(sub) = scope else { break };
            scope = self.placement.get(&sub.super_node).copied().flatten();
            out.push((scope, Held::Node(sub.super_node)));
        }
        out.reverse();
        out
    }

    /// True when everything step `p` does is done before step `q` (a later step)
    /// begins, in every run of the schedule (always, without one).
    pub(crate) fn ordered(&self, p: usize, q: usize) -> bool {
        let Some(order) = &self.order else {
            return true;
        };
        if p == q {
            return true;
        }
        let (a, b) = (self.nesting(p), self.nesting(q));
        for (&(sa, ha), &(sb, hb)) in a.iter().zip(&b) {
            if sa != sb {
                // Two sub-functions of one super node: one after the other.
                return true;
            }
            match (ha, hb) {
                (Held::Node(u), Held::Node(v)) if u == v => continue,
                (Held::Node(u), Held::Node(v)) => {
                    return !order.runs(sa, u) || !order.runs(sa, v) || order.before(sa, u, v);
                }
                // A scope's return waits for all of it.
                _ => return true,
            }
        }
        // One holds the other (a super node's start or end and its body).
        true
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
    if t.order.is_none() {
        return end;
    }
    (end + 1..t.len)
        .rev()
        .find(|&s| accesses.iter().any(|&a| !t.ordered(a, s)))
        .unwrap_or(end)
}
