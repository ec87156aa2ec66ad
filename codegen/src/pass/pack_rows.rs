//! Packed row panels: in every [`[tile]`](crate::loops::Schedule::tile) nest whose
//! reduction is blocked and whose columns pack a panel (`pack`), the loads of the
//! reduction that every tile of columns reads alike (matmul's `a[i, k]`: moving
//! with the rows, not with the columns) are named in a second argument,
//! `[tile(packed b[i1, i2]), rows(packed a[i0, i1])]`
//! ([`Tile::rows`](crate::loops::Tile::rows)). A backend may then copy them, per
//! block of rows and reduction block, into a contiguous row panel that every tile
//! of columns reads in order, instead of `MR` rows far apart in memory (a matmul's
//! rows `K` elements apart share a few cache sets, and each needs its own address).
//! Which loads may be named is [`row_packable`] (its one definition, which the
//! verifier checks too); of several loads of one element the first is named.
//! Sliding windows along the rows are not (a convolution's input along its output
//! width): their panel would hold each value several times.
//!
//! Only where the columns pack too: the row panel lives in the row blocks a column
//! panel's realization runs (the Rust copies), so without one there is nowhere to
//! keep it. Whether a target packs the rows it may is the target's fact
//! ([`Target::pack_rows`](crate::target::Target::pack_rows)); see
//! `docs/planning-layer.md`.
//!
//! Cost: O(A_c² + A_b) per tile, `A_c` the loads of the tile's body.

use super::pack::first_of_each;
use crate::loops::analysis::row_packable;
use crate::loops::{LoadSet, LoopProgram};

/// Names the row-packable loads of every `[tile]` nest that blocks its reduction
/// and packs a column panel (see the module docs).
pub fn pack_rows(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for (k, b) in p.blocks.iter().enumerate() {
        for (d, l) in b.loops.iter().enumerate() {
            let Some(mut tile) = l.schedule.tile else {
                continue;
            };
            tile.rows = if tile.block_reduction && !tile.packed.is_empty() {
                first_of_each(b, d, row_packable(p, b, d))
            } else {
                LoadSet::default()
            };
            out.blocks[k].loops[d].schedule.tile = Some(tile);
        }
    }
    out
}
