//! The transpose plan: which `[blocked]` nests are copies run as
//! `lanes × lanes` tiles transposed in registers, in
//! [`cache_block`](crate::target::Target::cache_block)-square blocks. One
//! decision for both backends: Cranelift transposes in its 128-bit registers, the
//! Rust copies call the runtime's transposing helper, which adds its own limit:
//! whole tensors, not a temporary kept one row at a time.

use crate::loops::{Access, Loop, LoopProgram};

/// The two accesses of a nest `for r { for c [blocked] { dst[..] = src[..] } }` that
/// can run as `lanes × lanes` tiles transposed in registers: a
/// [`transpose_copy`](crate::loops::analysis::transpose_copy) marked `[blocked]`.
pub fn transpose_plan<'p>(
    p: &LoopProgram,
    r: &Loop,
    c: &'p Loop,
) -> Option<(&'p Access, &'p Access)> {
    if !c.schedule.blocked {
        return None;
    }
    crate::loops::analysis::transpose_copy(p, r, c)
}
