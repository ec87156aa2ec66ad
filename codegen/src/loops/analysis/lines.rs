//! Which write an inner `[parallel]` loop's shares may be aligned to: the one
//! definition of what the `share` pass names and the verifier checks of
//! [`Schedule::lines`](crate::loops::Schedule::lines).

use crate::loops::{Block, LoopProgram, Subscript, TensorKind};

use super::body::body_accesses;
use super::stride::{Stride, stride};
use super::walk::block_accesses;

/// Whether write `k` of the body of `b.loops[d]` ([`body_accesses`]) is one the
/// threads sharing that loop out may align their shares to: the loop is an inner
/// one (`d > 0`); the write is unit-stride along it, at an offset free of every
/// other loop (its subscripts use no loop variable but this one's, and no data);
/// every write of the block is to the same tensor; and that tensor is not a
/// temporary kept one row at a time (a row buffer is each thread's own). Where the
/// first element a share writes lies relative to a cache line is then the same in
/// every iteration of the loops outside.
pub fn line_aligned(p: &LoopProgram, b: &Block, d: usize, k: usize) -> bool {
    let Some(l) = b.loops.get(d).filter(|_| d > 0) else {
        return false;
    };
    let n = l.id.0;
    let Some(w) = body_accesses(&b.loops[d..], true).into_iter().nth(k) else {
        return false;
    };
    let only_l = w.index.iter().all(|s| match s {
        Subscript::Expr(e) => e.indices().iter().all(|&m| m == n),
        Subscript::Value(_) => false,
    });
    let row_buffer = p
        .tensors
        .get(w.tensor.0)
        .is_none_or(|t| t.kind == TensorKind::Temp && t.row_local.is_some());
    only_l
        && !row_buffer
        && stride(&w, n) == Stride::Unit
        && block_accesses(b)
            .iter()
            .all(|a| !a.write || a.access.tensor == w.tensor)
}

/// The write the `share` pass names for the inner loop `b.loops[d]`: the block's
/// first write (in [`block_accesses`] order), by its first position in the loop's
/// body ([`body_accesses`]), when it is in that body and [`line_aligned`].
pub fn line_write(p: &LoopProgram, b: &Block, d: usize) -> Option<usize> {
    let first = block_accesses(b).into_iter().find(|a| a.write)?;
    if first.level <= d {
        return None;
    }
    let k = body_accesses(b.loops.get(d..)?, true)
        .iter()
        .position(|w| *w == first.access)?;
    line_aligned(p, b, d, k).then_some(k)
}
