//! Loops split at a cache line: an innermost loop storing at unit stride runs in
//! two runs, the iterations before the element that starts a cache line, then the
//! rest, so that the second run's vector stores never straddle two lines (a column
//! sum's rows into a `Vec` went from 0.19 to 0.15 ms; `docs/decisions.md`). Its
//! innermost loop is marked [`[line split]`](crate::loops::Schedule::line_split)
//! where it has a [`line_store`] (the one definition, which the verifier and the
//! Rust emitter use too), and where the loop runs as a loop of its own: not a
//! `[split]` reduction or a `[blocked]` nest (which run it another way), and not
//! the one loop of a block in a group of `[joined]` blocks (the group runs that
//! loop, iteration by iteration of every block). It runs last, after `rows` has
//! joined the groups.
//!
//! Cost: O(e) per block, `e` the size of the innermost loop's statements.

use crate::loops::analysis::line_store;
use crate::loops::{Block, LoopProgram};

/// Marks the innermost loop of every block that stores at unit stride along it,
/// and runs it as a loop of its own, `[line split]`.
pub fn line(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    let joined = |b: Option<&Block>| {
        b.and_then(|b| b.loops.first())
            .is_some_and(|l| l.schedule.joined)
    };
    let grouped: Vec<bool> = (0..p.blocks.len())
        .map(|k| joined(p.blocks.get(k)) || joined(p.blocks.get(k + 1)))
        .collect();
    for (b, grouped) in out.blocks.iter_mut().zip(grouped) {
        let lone = b.loops.len() == 1;
        if let Some(l) = b.loops.last_mut()
            && !l.schedule.split
            && !l.schedule.blocked
            && !(lone && grouped)
            && line_store(l).is_some()
        {
            l.schedule.line_split = true;
        }
    }
    out
}
