//! Cache lines: which store a loop split at a cache line aligns
//! ([`Schedule::line_split`](crate::loops::Schedule::line_split)) and which loads
//! a split loop's chunks may be aligned to
//! ([`Schedule::aligned`](crate::loops::Schedule::aligned)) — the one definition
//! the `line` and `align` passes mark with, the verifier checks and the emitters
//! read.

use crate::loops::{Access, Loop};

use super::body::body_accesses;
use super::stride::{Stride, stride};
use super::walk::stmt_accesses;

/// The loads of `l`'s statements, in the order a mark's argument counts them:
/// statement by statement, each statement's accesses as
/// [`stmt_accesses`] visits them (its target's data-dependent subscripts, then
/// its value left to right, a load before the loads in its own subscripts).
pub fn loads(l: &Loop) -> Vec<Access> {
    // The loop's own statements are its whole body's when it is innermost, where
    // `[split]` sits: the same positions `tile(packed ..)` and `parallel(lines ..)`
    // count.
    body_accesses(std::slice::from_ref(l), false)
}

/// The position among [`loads`] of the first load of `l` that is `a` (the same
/// tensor and subscripts; whether it is checked aside): how a mark's argument
/// names a load.
pub fn load_position(l: &Loop, a: &Access) -> Option<usize> {
    loads(l)
        .iter()
        .position(|x| x.tensor == a.tensor && x.index == a.index)
}

/// The store a loop split at a cache line aligns: the first store (or
/// accumulation) of `l`'s statements that is unchecked and moves by one element
/// per iteration of `l`. `None` when there is none (the loop cannot be marked).
pub fn line_store(l: &Loop) -> Option<Access> {
    let mut found = None;
    for s in &l.stmts {
        stmt_accesses(s, &mut |a, write| {
            if found.is_none() && write && !a.checked && stride(a, l.id.0) == Stride::Unit {
                found = Some(a.clone());
            }
        });
    }
    found
}

/// Whether load `a` of loop `l` may be the one `l`'s chunks are aligned to: it is
/// unchecked (its element's address exists) and moves by one element per
/// iteration of `l` (a line boundary of it is one iteration).
pub fn alignable(l: &Loop, a: &Access) -> bool {
    !a.checked && stride(a, l.id.0) == Stride::Unit
}

/// The load `l`'s [`aligned`](crate::loops::Schedule::aligned) argument names, if
/// it names one and that load is [`alignable`].
pub fn aligned_load(l: &Loop) -> Option<Access> {
    let a = loads(l).into_iter().nth(l.schedule.aligned?)?;
    alignable(l, &a).then_some(a)
}
