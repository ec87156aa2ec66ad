//! Packed panels: in every [`[tile]`](crate::loops::Schedule::tile) nest, the loads
//! of the reduction that every tile of rows reads alike (matmul's `b[k, j]`: moving
//! with the columns, not with the rows) are named in the tile's argument,
//! `[tile(packed b[i2, i1])]` ([`Tile::packed`](crate::loops::Tile::packed)). A
//! backend may then copy them, per tile of columns, into a contiguous panel that
//! every tile of rows reads in order, instead of reading rows far apart in memory
//! (which share a few cache sets). Which loads may be named is
//! [`packable`](crate::loops::analysis::packable) (its one definition, which the
//! verifier checks too); of several loads of one element the first is named.
//! Sliding windows are not ([`sliding`](crate::loops::analysis::sliding)): their
//! panel would hold each value several times, and measured no faster than reading
//! the rows in place.
//!
//! How long a panel may be is the backend's limit (the target's panel bytes, a
//! blocked reduction, a single reduction loop): see `docs/planning-layer.md`.
//!
//! Cost: O(A_c² + A_b) per tile, `A_c` the loads of the tile's body.

use crate::loops::analysis::{body_accesses, packable};
use crate::loops::{Block, LoadSet, LoopProgram};

/// Names the packable loads of every `[tile]` nest (see the module docs).
pub fn pack(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for (k, b) in p.blocks.iter().enumerate() {
        for (d, l) in b.loops.iter().enumerate() {
            let Some(mut tile) = l.schedule.tile else {
                continue;
            };
            tile.packed = first_of_each(b, d, packable(p, b, d));
            out.blocks[k].loops[d].schedule.tile = Some(tile);
        }
    }
    out
}

/// Of the loads of the body of `b.loops[d]` in `allowed`, the first position of
/// each distinct access (a mark names a load by its text, which reads back as its
/// first position).
pub(super) fn first_of_each(b: &Block, d: usize, allowed: LoadSet) -> LoadSet {
    let loads = body_accesses(&b.loops[d..], false);
    let mut named = LoadSet::default();
    for (j, a) in loads.iter().enumerate() {
        if allowed.contains(j) && !loads[..j].contains(a) {
            named.insert(j);
        }
    }
    named
}
