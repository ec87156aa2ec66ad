//! Channels as columns: a convolution's register tile along its output channels.
//!
//! A reduction nest `… P … C K…` whose loads that are unit-stride along `C` are all
//! sliding windows (their `C` subscript also moves with the reduction: a
//! convolution's `x[c, h + kh, w + kw]` along `w`), with a parallel loop `P`
//! outside that indexes another input on one axis and the reduction loops on the
//! others (the output channel `o` of `k[o, c, kh, kw]`), is tiled along `P`
//! instead of `C`: that input is read from a copy with `P`'s axis moved last
//! (`k_t[c, kh, kw, o]`, filled by a nest placed before every other block), `P`
//! becomes the column loop, `C` the row loop, and the column loop is marked
//! [`[tile]`](crate::loops::Schedule::tile) without blocking the reduction. The
//! window value is then broadcast and the copy read in vectors.
//!
//! Channel counts are usually multiples of the vector width where image widths are
//! not (56 columns take four 16-lane vectors, 64 computed for 56), so the tile wastes
//! fewer multiply-adds; see `docs/decisions.md`. The copy is already laid out in the
//! order the reduction runs, so the tile does not block the reduction (which would
//! make a backend repack it per column tile inside the loops outside). The rewrite
//! is made only where the turned nest is a register tile by the rules of the
//! [`tile`](super::tile) pass; elsewhere that pass tiles the nest along `C`.
//!
//! Copies go first: they read inputs only (which nothing writes), and placed there
//! they do not split the row groups the `rows` pass forms later (a padded image and
//! the convolution reading it).
//!
//! Cost: O(L · A_b · e_a) per candidate block, against the set of written tensors
//! collected once per program (O(E)) and fresh names from one set (O(T) once, O(1)
//! per copy): linear in the number of blocks.

use crate::index::Expr;
use crate::loops::{
    Access, Block, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind, Value,
};

use crate::loops::analysis::sliding;

use super::stride::{Stride, access_mentions, stride};
use super::tile::tiled;
use super::walk::{
    FreshNames, block_accesses, first_free_loop, for_each_stmt_mut, fresh_loops, levels,
    map_stmt_accesses, quiet, range_mentions, stmt_accesses,
};

/// Turns every nest that matches to read its weights from a transposed copy along
/// its output channels, and marks it [`[tile]`](crate::loops::Schedule::tile) there
/// (see the module docs); the copies' nests go before all other blocks.
pub fn channels(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    let mut next_loop = first_free_loop(p);
    let written = written_tensors(p);
    let mut names = FreshNames::new(&p.tensors);
    let mut copies = Vec::new();
    let mut blocks = Vec::with_capacity(p.blocks.len());
    for b in &p.blocks {
        if let Some((mut decl, copy, turned)) = channels_first(&out, &written, b, &mut next_loop)
            && let Some(tiled) = tiled(&turned, false)
        {
            decl.name = names.fresh(&decl.name);
            out.tensors.push(decl);
            copies.push(copy);
            blocks.push(tiled);
        } else {
            blocks.push(b.clone());
        }
    }
    copies.extend(blocks);
    out.blocks = copies;
    out
}

/// The channels-as-columns rewrite (see the module docs): the transposed copy to
/// declare next in `p` (named by its base name, made fresh when the rewrite is
/// kept), the nest that fills it and the nest reading it with the channel loop last.
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
    let vector: Vec<&Access> = loads
        .iter()
        .filter(|a| stride(a, cl.id.0) == Stride::Unit)
        .collect();
    if vector.is_empty() || !vector.iter().all(|a| sliding(a, cl, reduce)) {
        return None;
    }
    // The channel loop and the load it indexes, on one axis, not the last.
    let (pl, axis, load) = outer.iter().find_map(|pl| {
        if b.loops.iter().any(|m| range_mentions(m, pl.id.0))
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
    let copy_id = TensorId(p.tensors.len());
    let decl = TensorDecl {
        name: format!("{}_t", source.name),
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
