//! Cache-blocked transposes: an element-wise nest `… R C` (statements only in `C`,
//! nothing carried) that writes distinct elements it never reads, with a load that
//! is unit-stride along `R` but not along `C` and an access unit-stride along `C`,
//! reads across the rows it writes along, as a transpose does. Its innermost loop
//! is marked [`[blocked]`](crate::loops::Schedule::blocked): a backend may run `R`
//! and `C` in square blocks that keep the cache lines of both sides in the cache.
//! The transposed copies of the [`channels`](super::channels) pass are such nests.
//!
//! Cost: O(A_b² + A_b · e_a) per block (each access against every write): linear in
//! the number of blocks.

use crate::loops::{Block, LoopProgram};

use super::stride::{Stride, injective, stride};
use super::walk::{block_accesses, range_mentions};

/// Marks the innermost loop of every [`blockable`] nest `[blocked]`.
pub fn transpose(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if blockable(b)
            && let Some(c) = b.loops.last_mut()
        {
            c.schedule.blocked = true;
        }
    }
    out
}

/// An element-wise nest `… R C` (statements only in `C`, nothing carried) writing
/// distinct elements it never reads, with a load that is unit-stride along `R` but
/// not along `C` and an access unit-stride along `C`: a transpose. Running it in
/// square blocks keeps the lines of both sides in the cache.
fn blockable(b: &Block) -> bool {
    let [.., rl, cl] = b.loops.as_slice() else {
        return false;
    };
    if !b.carried.is_empty()
        || !b.stmts.is_empty()
        || b.loops.iter().any(|l| !l.carried.is_empty())
        || b.loops[..b.loops.len() - 1]
            .iter()
            .any(|l| !l.stmts.is_empty())
        || range_mentions(cl, rl.id.0)
    {
        return false;
    }
    let (r, c) = (rl.id.0, cl.id.0);
    let accesses = block_accesses(b);
    let writes: Vec<_> = accesses.iter().filter(|a| a.write).collect();
    if writes.iter().any(|w| !injective(&w.access, &[r, c]))
        || accesses
            .iter()
            .any(|a| !a.write && writes.iter().any(|w| w.access.tensor == a.access.tensor))
    {
        return false;
    }
    let across = accesses.iter().any(|a| {
        !a.write && stride(&a.access, r) == Stride::Unit && stride(&a.access, c) != Stride::Unit
    });
    let along = accesses
        .iter()
        .any(|a| stride(&a.access, c) == Stride::Unit);
    across && along
}
