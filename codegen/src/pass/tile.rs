//! Register tiles: a reduction nest `… R C K…` in which one load is unit-stride along
//! `C` and shared by every `R`, and another is shared by every `C` (matmul's `b[k, j]`
//! and `a[i, k]`), is marked [`Schedule::tile`](crate::loops::Schedule::tile) on `C`. A backend then computes a
//! block of rows × columns at once, its partial results in registers, so each load
//! of the reduction feeds many multiply-adds instead of one.
//!
//! The pass may move the row loop: of the parallel loops outside `C` it takes the
//! one whose iterations share the most unit-stride loads and puts it just outside
//! `C`. Parallel loops hold no statements and the block writes distinct elements it
//! never reads, so their order is free. When every statement after the reduction
//! stores a sum plainly (`y[..] = v`), the tile also allows blocking the reduction
//! for the cache ([`Tile::block_reduction`], which reassociates the sum).
//!
//! A nest the [`channels`](super::channels) pass already tiled along its output
//! channels keeps that tile; that pass uses this one's rules ([`tiled`]) to decide
//! whether its rewrite gives a tile.
//!
//! Cost: O(A_b² + L · A_b · e_a) per block (each access against every write, the
//! strides of every load along every candidate loop): linear in the number of
//! blocks.

use crate::loops::{Block, LoadSet, Loop, LoopProgram, Stmt, Tile, Value};
use crate::uop::Accum;

use super::stride::{Stride, injective, stride};
use super::walk::{block_accesses, quiet, range_mentions, value_reads_var};

/// Marks (and, for the row loop, reorders) every block that matches and is not
/// tiled yet.
pub fn tile(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if b.loops.iter().all(|l| l.schedule.tile.is_none())
            && let Some(tiled) = tiled(b, true)
        {
            *b = tiled;
        }
    }
    out
}

/// The tiled nest, its row loop moved next to the column loop; `may_block`: whether
/// the reduction may be blocked (not for a channels-as-columns nest, see
/// [`channels`](super::channels)).
pub(super) fn tiled(b: &Block, may_block: bool) -> Option<Block> {
    if !b.carried.is_empty() || !b.stmts.is_empty() {
        return None;
    }
    let c = b.loops.iter().position(|l| !l.carried.is_empty())?;
    if c == 0 {
        return None;
    }
    let (outer, rest) = b.loops.split_at(c);
    let (cl, reduce) = rest.split_first()?;
    let (innermost, between) = reduce.split_last()?;
    if !outer.iter().all(quiet) || !between.iter().all(quiet) {
        return None;
    }
    // The reduction: updates of C's variables only, none read back.
    for s in &innermost.stmts {
        let Stmt::Update { var, .. } = s else {
            return None;
        };
        if !cl.carried.iter().any(|c| c.var == *var)
            || cl
                .carried
                .iter()
                .any(|c| value_reads_var(update_value(s), c.var))
        {
            return None;
        }
    }
    // Writes: distinct elements for every parallel iteration, never read here.
    let parallel: Vec<usize> = b.loops[..=c].iter().map(|l| l.id.0).collect();
    let accesses = block_accesses(b);
    let writes: Vec<_> = accesses.iter().filter(|a| a.write).collect();
    if writes.iter().any(|w| !injective(&w.access, &parallel))
        || accesses
            .iter()
            .any(|a| !a.write && writes.iter().any(|w| w.access.tensor == a.access.tensor))
    {
        return None;
    }
    // Ranges: C's and the reduction's may not depend on the parallel loops.
    let cn = cl.id.0;
    if rest
        .iter()
        .any(|l| parallel.iter().any(|&n| range_mentions(l, n)))
    {
        return None;
    }
    // Profitable: a unit-stride load along C and a load C shares.
    let loads: Vec<_> = accesses
        .iter()
        .filter(|a| !a.write && a.level == b.loops.len())
        .map(|a| &a.access)
        .collect();
    let vector: Vec<_> = loads
        .iter()
        .filter(|a| stride(a, cn) == Stride::Unit)
        .collect();
    if vector.is_empty() || !loads.iter().any(|a| stride(a, cn) == Stride::Zero) {
        return None;
    }
    // The row loop: the parallel loop whose iterations share the most vector loads,
    // the innermost on a tie; no other loop's range may depend on it.
    let shared = |l: &Loop| {
        vector
            .iter()
            .filter(|a| stride(a, l.id.0) == Stride::Zero)
            .count()
    };
    let (r, best) = outer
        .iter()
        .enumerate()
        .filter(|(_, l)| b.loops.iter().all(|m| !range_mentions(m, l.id.0)))
        .map(|(i, l)| (i, shared(l)))
        .max_by_key(|&(i, n)| (n, i))?;
    if best == 0 {
        return None;
    }
    let block_reduction = may_block
        && cl.stmts.len() == cl.carried.len()
        && cl.carried.iter().all(|carried| {
            carried.op == Accum::Add
                && cl.stmts.iter().any(
                    |s| matches!(s, Stmt::Store { value: Value::Var(v), .. } if *v == carried.var),
                )
        });
    let mut out = b.clone();
    let row = out.loops.remove(r);
    out.loops.insert(c - 1, row);
    out.loops[c].schedule.tile = Some(Tile {
        block_reduction,
        packed: LoadSet::default(),
        rows: LoadSet::default(),
    });
    Some(out)
}

fn update_value(s: &Stmt) -> &Value {
    match s {
        Stmt::Store { value, .. } | Stmt::Accumulate { value, .. } | Stmt::Update { value, .. } => {
            value
        }
    }
}
