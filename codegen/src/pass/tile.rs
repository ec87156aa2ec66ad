//! Register tiles: a reduction nest `… R C K…` in which one load is unit-stride along
//! `C` and shared by every `R`, and another is shared by every `C` (matmul's `b[k, j]`
//! and `a[i, k]`), is marked [`Schedule::tile`] on `C`. A backend then computes a
//! block of rows × columns at once, its partial results in registers, so each load
//! of the reduction feeds many multiply-adds instead of one.
//!
//! The pass may move the row loop: of the parallel loops outside `C` it takes the
//! one whose iterations share the most unit-stride loads (for a convolution
//! `y[n, o, h, w] = Σ x[n, c, h+i, w+j]·k[o, c, i, j]` that is the output channel
//! `o`, not the row `h`) and puts it just outside `C`. Parallel loops hold no
//! statements and the block writes distinct elements it never reads, so their order
//! is free. When every statement after the reduction stores a sum plainly
//! (`y[..] = v`), the tile also allows blocking the reduction for the cache
//! ([`Tile::block_reduction`], which reassociates the sum).

use crate::loops::{Block, Loop, LoopProgram, Stmt, Tile, Value};
use crate::uop::Accum;

use super::stride::{Stride, injective, stride};
use super::walk::{block_accesses, value_reads_var};

/// Marks (and, for the row loop, reorders) every block that matches, and marks
/// element-wise nests that read across the rows they write for cache blocking.
pub fn tile(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if let Some(tiled) = tiled(b) {
            *b = tiled;
        } else if blockable(b)
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
        || mentions_range(cl, rl.id.0)
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

fn quiet(l: &Loop) -> bool {
    l.carried.is_empty() && l.stmts.is_empty()
}

fn mentions_range(l: &Loop, n: usize) -> bool {
    l.start.indices().contains(&n) || l.end.indices().contains(&n)
}

fn tiled(b: &Block) -> Option<Block> {
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
        .any(|l| parallel.iter().any(|&n| mentions_range(l, n)))
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
        .filter(|(_, l)| b.loops.iter().all(|m| !mentions_range(m, l.id.0)))
        .map(|(i, l)| (i, shared(l)))
        .max_by_key(|&(i, n)| (n, i))?;
    if best == 0 {
        return None;
    }
    let block_reduction = cl.stmts.len() == cl.carried.len()
        && cl.carried.iter().all(|carried| {
            carried.op == Accum::Add
                && cl.stmts.iter().any(
                    |s| matches!(s, Stmt::Store { value: Value::Var(v), .. } if *v == carried.var),
                )
        });
    let mut out = b.clone();
    let row = out.loops.remove(r);
    out.loops.insert(c - 1, row);
    out.loops[c].schedule.tile = Some(Tile { block_reduction });
    Some(out)
}

fn update_value(s: &Stmt) -> &Value {
    match s {
        Stmt::Store { value, .. } | Stmt::Accumulate { value, .. } | Stmt::Update { value, .. } => {
            value
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::pass::optimized_text as optimized;

    #[test]
    fn a_matmul_is_tiled_with_a_blocked_reduction() {
        let p = optimized(
            "input a: f32[M, K]\ninput b: f32[K, N]\n\
             aa = reindex(a, [M, K, N], [i0, i1])\n\
             bb = reindex(b, [M, K, N], [i1, i2])\n\
             s = reduce_sum(mul(aa, bb), [1])\n\
             c = reindex(s, [M, N], [i0, 0, i1])\noutput c\n",
        );
        assert!(p.to_string().contains("[tile, block reduction]"), "{p}");
    }

    #[test]
    fn a_transpose_runs_in_blocks() {
        let p = optimized("input x: f32[R, C]\ny = reindex(x, [C, R], [i1, i0])\noutput y\n");
        assert!(p.to_string().contains("[blocked]"), "{p}");
        let p = optimized("input x: f32[R, C]\ny = exp(x)\noutput y\n");
        assert!(!p.to_string().contains("[blocked]"), "{p}");
    }

    #[test]
    fn an_elementwise_nest_is_not_tiled() {
        let p = optimized("input x: f32[M, N]\ny = exp(x)\noutput y\n");
        assert!(!p.to_string().contains("tile"), "{p}");
    }
}
