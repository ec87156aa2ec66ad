//! Register tiles: a reduction nest `… R C K…` in which one load is unit-stride along
//! `C` and shared by every `R`, and another is shared by every `C` (matmul's `b[k, j]`
//! and `a[i, k]`), is marked [`Schedule::tile`](crate::loops::Schedule::tile) on `C`. A backend then computes a
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
//!
//! **Channels as columns.** When every load that is unit-stride along `C` is a
//! sliding window (its `C` subscript also moves with the reduction: a
//! convolution's `x[c, h + kh, w + kw]` along `w`), and a parallel loop `P` outside
//! indexes another input on one axis with the reduction loops on the others (the
//! output channel `o` of `k[o, c, kh, kw]`), the nest is tiled along `P` instead:
//! that input is read from a copy with `P`'s axis moved last (`k_t[c, kh, kw, o]`,
//! filled by a nest placed before), `P` becomes the column loop and `C` the row loop.
//! The window value is then broadcast and the copy read in vectors. Channel counts
//! are usually multiples of the vector width where image widths are not (56 columns
//! take four 16-lane vectors, 64 computed for 56), so the tile wastes fewer
//! multiply-adds; see `docs/decisions.md`. The copy is already laid out in the
//! order the reduction runs, so the tile does not block the reduction (which would
//! make a backend repack it per column tile inside the loops outside).
//!
//! Cost: O(A_b²) per block (each access against every write); `channels_first`
//! is O(L · A_b · e_a) per candidate block, the tensors some nest writes being
//! collected once for the whole program (O(E)): linear in the number of blocks.

use crate::index::Expr;
use crate::loops::{
    Access, Block, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind, Tile,
    Value,
};
use crate::uop::Accum;

use super::stride::{Stride, access_mentions, injective, stride};
use super::walk::{
    block_accesses, for_each_stmt_mut, fresh_loops, fresh_name, levels, map_stmt_accesses,
    stmt_accesses, value_reads_var,
};

/// Marks (and, for the row loop, reorders) every block that matches, and marks
/// element-wise nests that read across the rows they write for cache blocking.
pub fn tile(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    let mut next_loop = p
        .blocks
        .iter()
        .flat_map(|b| b.loops.iter().map(|l| l.id.0 + 1))
        .max()
        .unwrap_or(0);
    // Transposed copies go first: they read inputs only (which nothing writes), and
    // placed there they do not split the row groups the `rows` pass forms later (a
    // padded image and the convolution reading it).
    let written = written_tensors(p);
    let mut copies = Vec::new();
    let mut blocks = Vec::with_capacity(p.blocks.len());
    for b in &p.blocks {
        if let Some((decl, copy, turned)) = channels_first(&out, &written, b, &mut next_loop)
            && let Some(tiled) = tiled(&turned, false)
        {
            out.tensors.push(decl);
            copies.push(marked(copy));
            blocks.push(tiled);
        } else if let Some(tiled) = tiled(b, true) {
            blocks.push(tiled);
        } else {
            blocks.push(marked(b.clone()));
        }
    }
    copies.extend(blocks);
    out.blocks = copies;
    out
}

/// `b`, its innermost loop marked for cache blocking when it is [`blockable`].
fn marked(mut b: Block) -> Block {
    if blockable(&b)
        && let Some(c) = b.loops.last_mut()
    {
        c.schedule.blocked = true;
    }
    b
}

/// The channels-as-columns rewrite (see the module docs): the transposed copy to
/// declare next in `p`, the nest that fills it and the nest reading it with the
/// channel loop last.
fn channels_first(
    p: &LoopProgram,
    written: &[bool],
    b: &Block,
    next_loop: &mut usize,
) -> Option<(TensorDecl, Block, Block)> {
    if !b.carried.is_empty() || !b.stmts.is_empty() {
        return None;
    }
    let c = b.loops.iter().position(|l| !l.carried.is_empty())?;
    let (outer, rest) = b.loops.split_at(c);
    let (cl, reduce) = rest.split_first()?;
    if reduce.is_empty() || !outer.iter().all(quiet) {
        return None;
    }
    let reduce_ids: Vec<usize> = reduce.iter().map(|l| l.id.0).collect();
    let loads: Vec<Access> = block_accesses(b)
        .into_iter()
        .filter(|a| !a.write && a.level == b.loops.len())
        .map(|a| a.access)
        .collect();
    let sliding = |a: &Access| {
        a.index.iter().any(|s| match s {
            Subscript::Expr(e) => {
                let ids = e.indices();
                ids.contains(&cl.id.0) && reduce_ids.iter().any(|n| ids.contains(n))
            }
            Subscript::Value(_) => false,
        })
    };
    let vector: Vec<&Access> = loads
        .iter()
        .filter(|a| stride(a, cl.id.0) == Stride::Unit)
        .collect();
    if vector.is_empty() || !vector.iter().all(|a| sliding(a)) {
        return None;
    }
    // The channel loop and the load it indexes, on one axis, not the last.
    let (pl, axis, load) = outer.iter().find_map(|pl| {
        if b.loops.iter().any(|m| mentions_range(m, pl.id.0))
            || !pl.start.indices().is_empty()
            || !pl.end.indices().is_empty()
        {
            return None;
        }
        loads.iter().find_map(|a| {
            let axis = channel_axis(p, written, a, pl.id.0, &reduce_ids)?;
            Some((pl, axis, a.clone()))
        })
    })?;
    // The copy: `t[.., j_P] = x[.., j_P, ..]`, `P`'s axis moved last.
    let source = &p.tensors[load.tensor.0];
    let mut shape = source.shape.clone();
    let size = shape.remove(axis);
    shape.push(size);
    let name = fresh_name(&p.tensors, &format!("{}_t", source.name));
    let copy_id = TensorId(p.tensors.len());
    let decl = TensorDecl {
        name,
        shape: shape.clone(),
        dtype: source.dtype,
        kind: TensorKind::Temp,
        row_local: None,
    };
    let mut loops = fresh_loops(&shape, next_loop);
    let at: Vec<Subscript> = loops
        .iter()
        .map(|l| Subscript::Expr(Expr::Index(l.id.0)))
        .collect();
    let store = Stmt::Store {
        access: Access {
            tensor: copy_id,
            index: at.clone(),
            checked: false,
        },
        value: Value::Load {
            access: Access {
                tensor: load.tensor,
                index: moved_back(&at, axis),
                checked: false,
            },
            fill: 0.0,
        },
    };
    loops.last_mut()?.stmts.push(store);
    let copy = Block {
        loops,
        carried: Vec::new(),
        stmts: Vec::new(),
    };
    // The nest: the load reads the copy; `C` gives up its variables to `P`, which
    // goes last among the parallel loops.
    let mut turned = b.clone();
    for_each_stmt_mut(&mut turned, &mut |s| {
        map_stmt_accesses(s, &mut |a| {
            if *a == load {
                let mut index = a.index.clone();
                let moved = index.remove(axis);
                index.push(moved);
                *a = Access {
                    tensor: copy_id,
                    index,
                    checked: false,
                };
            }
        });
    });
    let mut row = turned.loops[c].clone();
    let mut column = pl.clone();
    column.carried = std::mem::take(&mut row.carried);
    column.stmts = std::mem::take(&mut row.stmts);
    let mut nest: Vec<Loop> = turned.loops[..c]
        .iter()
        .filter(|l| l.id != pl.id)
        .cloned()
        .collect();
    nest.push(row);
    nest.push(column);
    nest.extend(turned.loops[c + 1..].iter().cloned());
    turned.loops = nest;
    Some((decl, copy, turned))
}

/// The axis of `a` that holds the bare index of channel loop `n`, when it is not
/// the last, every other axis holds the bare index of a distinct reduction loop,
/// and `a` reads an input unchecked that no nest writes: a weight tensor such as
/// `k[o, c, kh, kw]` (`written[t]`: some nest writes tensor `t`).
fn channel_axis(
    p: &LoopProgram,
    written: &[bool],
    a: &Access,
    n: usize,
    reduce: &[usize],
) -> Option<usize> {
    let decl = p.tensors.get(a.tensor.0)?;
    let written = written.get(a.tensor.0).copied().unwrap_or(false);
    if a.checked || decl.kind != TensorKind::Input || decl.dtype != p.dtype || written {
        return None;
    }
    let mut axis = None;
    let mut seen = Vec::new();
    for (i, s) in a.index.iter().enumerate() {
        let Subscript::Expr(Expr::Index(m)) = s else {
            return None;
        };
        if *m == n {
            axis = Some(i);
        } else if reduce.contains(m) && !seen.contains(m) {
            seen.push(*m);
        } else {
            return None;
        }
    }
    axis.filter(|&i| i + 1 < a.index.len() && access_mentions(a, n))
}

/// `written[t]`: some block of `p` writes tensor `t`.
fn written_tensors(p: &LoopProgram) -> Vec<bool> {
    let mut written = vec![false; p.tensors.len()];
    for b in &p.blocks {
        for (_, stmts) in levels(b) {
            for s in stmts {
                stmt_accesses(s, &mut |a, write| {
                    if write && let Some(w) = written.get_mut(a.tensor.0) {
                        *w = true;
                    }
                });
            }
        }
    }
    written
}

/// `at` (the copy's loop indices, channel last) as the source's subscripts: the
/// last one moved back to `axis`.
fn moved_back(at: &[Subscript], axis: usize) -> Vec<Subscript> {
    let mut index = at.to_vec();
    if let Some(last) = index.pop() {
        index.insert(axis, last);
    }
    index
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

/// The tiled nest, its row loop moved next to the column loop; `may_block`: whether
/// the reduction may be blocked (not for a channels-as-columns nest, see the module
/// docs).
fn tiled(b: &Block, may_block: bool) -> Option<Block> {
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
