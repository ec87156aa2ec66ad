//! Loop fusion: merges two blocks into one loop nest when their loops match one to
//! one by range, reordering loops between pivots where needed.
//!
//! Guarantee: every output is bit-identical to the unfused program's. No float
//! operation is reordered: each tensor element and each carried variable sees the
//! same sequence of stores, accumulations and updates, and every load reads the same
//! value it read before.
//!
//! # Rules
//!
//! - **Merge left**: block `j` joins an earlier block `i` (at `i`'s place) when
//!   nothing between them conflicts with `j` (writes what `j` reads, or touches what
//!   `j` writes). **Merge right**: otherwise `i` joins `j` (at `j`'s place) when
//!   nothing between them conflicts with `i` — this moves a zero-reset block or an
//!   unrelated producer out of the way. In the merged nest, at every level, `i`'s
//!   carried variables and statements come before `j`'s.
//! - **Matching**: both nests have the same depth and their loops pair up with equal
//!   ranges (start and end equal under [`ShapeGroups`]). The pairing follows the
//!   conflicting accesses (a producer's `t[i0, i1, i2]` read as `t[i9, i11, i10]`
//!   pairs `i9` with `i0`, `i11` with `i1`, `i10` with `i2`); loops not pinned that way
//!   pair by range, preferring the same position.
//! - **Pivots**: a loop holding statements or carried variables is a pivot. Loops
//!   are reordered only within a *segment* — the loops after one pivot up to and
//!   including the next — so every statement and every carried variable keeps the
//!   same set of enclosing loops (statements and carried variables stay at their
//!   depth; only the loop headers move). A segment between a carried variable's loop
//!   and the statements updating or reading it is never reordered (that would change
//!   the order of a reduction), and inside one block two accesses to the same
//!   element must keep their order: within every reordered segment enclosing both,
//!   at most one loop may be left free by the subscripts they share.
//! - **Dependences across the pair**: for every access of `i` and access of `j` to
//!   the same tensor, one of them a write, the subscripts must be identical after the
//!   pairing, every loop enclosing `j`'s access must appear in them as a bare loop
//!   variable, and `i`'s access must sit at least as deep as `j`'s. Then both touch an
//!   element only in the same iteration of the shared loops, with `i`'s access first:
//!   a shifted, transposed or reduced read of a tensor the other block writes forbids
//!   the fusion.
//!
//! Blocks are merged greedily — the first legal pair with `j` smallest, then `i`
//! nearest — until no pair can be merged.

use std::collections::{HashMap, HashSet, VecDeque};

use crate::index::Expr;
use crate::loops::{Block, Loop, LoopProgram, Stmt, Subscript};

use super::deps::BlockDeps;
use super::shape_groups::ShapeGroups;
use super::walk::{AccessAt, block_accesses, levels, rename_loops, stmt_reads_var};

/// Fuses blocks as long as a legal merge exists (see the module docs).
pub fn fuse(p: &LoopProgram) -> LoopProgram {
    let groups = ShapeGroups::new(p);
    let mut blocks = p.blocks.clone();
    while let Some((at, removed, fused)) = find_merge(&blocks, &groups) {
        blocks[at] = fused;
        blocks.remove(removed);
    }
    LoopProgram {
        blocks,
        ..p.clone()
    }
}

/// The first legal merge: where the fused block goes, which block disappears, and the
/// fused block.
fn find_merge(blocks: &[Block], groups: &ShapeGroups) -> Option<(usize, usize, Block)> {
    let deps: Vec<BlockDeps> = blocks.iter().map(BlockDeps::of).collect();
    for j in 1..blocks.len() {
        for i in (0..j).rev() {
            let between = &deps[i + 1..j];
            let left = between.iter().all(|k| !deps[j].conflicts(k));
            let right = between.iter().all(|k| !deps[i].conflicts(k));
            if !left && !right {
                continue;
            }
            if let Some(fused) = fuse_pair(&blocks[i], &blocks[j], groups) {
                return Some(if left { (i, j, fused) } else { (j, i, fused) });
            }
        }
    }
    None
}

/// The segment of each loop position: a pivot closes its segment.
fn segments(block: &Block) -> Vec<usize> {
    let mut seg = 0;
    block
        .loops
        .iter()
        .map(|l| {
            let s = seg;
            if !l.stmts.is_empty() || !l.carried.is_empty() {
                seg += 1;
            }
            s
        })
        .collect()
}

fn same_range(a: &Loop, b: &Loop, groups: &ShapeGroups) -> bool {
    groups.same(&a.start, &b.start) && groups.same(&a.end, &b.end)
}

/// Pairs of accesses, one from each list, to the same tensor with at least one write.
fn conflicting<'a>(xs: &'a [AccessAt], ys: &'a [AccessAt]) -> Vec<(&'a AccessAt, &'a AccessAt)> {
    let mut out = Vec::new();
    for x in xs {
        for y in ys {
            if x.access.tensor == y.access.tensor && (x.write || y.write) {
                out.push((x, y));
            }
        }
    }
    out
}

/// `a` (earlier) and `b` (later) as one block, if that is legal.
fn fuse_pair(a: &Block, b: &Block, groups: &ShapeGroups) -> Option<Block> {
    let n = a.loops.len();
    if b.loops.len() != n {
        return None;
    }
    let pairing = pair_loops(a, b, groups)?;
    let (seg_a, seg_b) = (segments(a), segments(b));
    // Try keeping `a`'s relative loop order within each reordered stretch, then `b`'s.
    for by_b in [false, true] {
        let Some((order_a, order_b)) = place(&pairing, &seg_a, &seg_b, by_b) else {
            continue;
        };
        let identity: Vec<usize> = (0..n).collect();
        if (order_a != identity && !reorder_ok(a, &order_a))
            || (order_b != identity && !reorder_ok(b, &order_b))
        {
            continue;
        }
        let a2 = permute(a, &order_a);
        let mut b2 = permute(b, &order_b);
        let rename: HashMap<usize, usize> = pairing
            .iter()
            .map(|&(pa, pb)| (b.loops[pb].id.0, a.loops[pa].id.0))
            .collect();
        rename_loops(&mut b2, &|id| rename.get(&id).copied());
        if cross_ok(&a2, &b2) {
            return Some(merge(a2, b2));
        }
    }
    None
}

/// Pairs `(position in a, position in b)` of loops with equal ranges, pinned by the
/// conflicting accesses first.
fn pair_loops(a: &Block, b: &Block, groups: &ShapeGroups) -> Option<Vec<(usize, usize)>> {
    let n = a.loops.len();
    let pos_a: HashMap<usize, usize> = a
        .loops
        .iter()
        .enumerate()
        .map(|(d, l)| (l.id.0, d))
        .collect();
    let pos_b: HashMap<usize, usize> = b
        .loops
        .iter()
        .enumerate()
        .map(|(d, l)| (l.id.0, d))
        .collect();
    let mut of_b: Vec<Option<usize>> = vec![None; n];
    let mut used_a = vec![false; n];
    let (acc_a, acc_b) = (block_accesses(a), block_accesses(b));
    for (x, y) in conflicting(&acc_a, &acc_b) {
        if x.access.index.len() != y.access.index.len() {
            continue;
        }
        for (sx, sy) in x.access.index.iter().zip(&y.access.index) {
            let (Subscript::Expr(Expr::Index(ia)), Subscript::Expr(Expr::Index(ib))) = (sx, sy)
            else {
                continue;
            };
            let (Some(&pa), Some(&pb)) = (pos_a.get(ia), pos_b.get(ib)) else {
                continue;
            };
            match of_b[pb] {
                Some(q) if q == pa => {}
                // Contradicting evidence: some pair of accesses cannot become identical.
                Some(_) => return None,
                None if used_a[pa] => return None,
                None => {
                    if !same_range(&a.loops[pa], &b.loops[pb], groups) {
                        return None;
                    }
                    of_b[pb] = Some(pa);
                    used_a[pa] = true;
                }
            }
        }
    }
    for (pb, slot) in of_b.iter_mut().enumerate() {
        if slot.is_some() {
            continue;
        }
        let fits = |pa: usize| !used_a[pa] && same_range(&a.loops[pa], &b.loops[pb], groups);
        let pa = if fits(pb) {
            pb
        } else {
            (0..n).find(|&pa| fits(pa))?
        };
        *slot = Some(pa);
        used_a[pa] = true;
    }
    of_b.iter()
        .enumerate()
        .map(|(pb, pa)| pa.map(|pa| (pa, pb)))
        .collect()
}

/// Positions for the pairs such that each loop stays within its segment in both
/// blocks: `(order_a, order_b)` with `order_x[d]` the old position of the loop now at
/// `d`. Within a stretch, pairs keep `a`'s relative order (or `b`'s if `by_b`).
fn place(
    pairing: &[(usize, usize)],
    seg_a: &[usize],
    seg_b: &[usize],
    by_b: bool,
) -> Option<(Vec<usize>, Vec<usize>)> {
    let mut pairs = pairing.to_vec();
    if by_b {
        pairs.sort_by_key(|&(pa, pb)| (pb, pa));
    } else {
        pairs.sort();
    }
    let mut queues: HashMap<(usize, usize), VecDeque<(usize, usize)>> = HashMap::new();
    for (pa, pb) in pairs {
        queues
            .entry((seg_a[pa], seg_b[pb]))
            .or_default()
            .push_back((pa, pb));
    }
    let mut order_a = Vec::with_capacity(seg_a.len());
    let mut order_b = Vec::with_capacity(seg_a.len());
    for d in 0..seg_a.len() {
        let (pa, pb) = queues.get_mut(&(seg_a[d], seg_b[d]))?.pop_front()?;
        order_a.push(pa);
        order_b.push(pb);
    }
    Some((order_a, order_b))
}

/// `block` with the loop headers (id and range) reordered: the loop at old position
/// `order[d]` moves to `d`. Carried variables and statements stay at their depth.
fn permute(block: &Block, order: &[usize]) -> Block {
    let mut out = block.clone();
    for (d, &from) in order.iter().enumerate() {
        let src = &block.loops[from];
        out.loops[d].id = src.id;
        out.loops[d].start = src.start.clone();
        out.loops[d].end = src.end.clone();
    }
    out
}

/// Whether reordering `block`'s loops by `order` (within segments) keeps its meaning.
fn reorder_ok(block: &Block, order: &[usize]) -> bool {
    let seg = segments(block);
    if order
        .iter()
        .enumerate()
        .any(|(d, &from)| seg[d] != seg[from])
    {
        return false;
    }
    let moved: HashSet<usize> = order
        .iter()
        .enumerate()
        .filter(|&(d, &from)| d != from)
        .map(|(d, _)| seg[d])
        .collect();
    if moved.is_empty() {
        return true;
    }
    // A range over another loop's variable (a triangle) cannot move past that loop;
    // lowering never makes one, so such a block is simply not reordered.
    let mentions_loop = |e: &Expr| e.any(&mut |x| matches!(x, Expr::Index(_)));
    if block
        .loops
        .iter()
        .any(|l| mentions_loop(&l.start) || mentions_loop(&l.end))
    {
        return false;
    }
    // A reduction's update order: no reordered loop between a carried variable's
    // loop and the deepest statement using it.
    let lists = levels(block);
    let declared = block.carried.iter().map(|c| (0, c.var)).chain(
        block
            .loops
            .iter()
            .enumerate()
            .flat_map(|(d, l)| l.carried.iter().map(move |c| (d + 1, c.var))),
    );
    for (level, var) in declared {
        let deepest = lists
            .iter()
            .filter(|(_, stmts)| {
                stmts.iter().any(|s| {
                    matches!(s, Stmt::Update { var: v, .. } if *v == var) || stmt_reads_var(s, var)
                })
            })
            .map(|(l, _)| *l)
            .max()
            .unwrap_or(level);
        if (level..deepest).any(|p| moved.contains(&seg[p])) {
            return false;
        }
    }
    // Accesses to one element keep their order: within each reordered segment
    // enclosing both, at most one loop is not pinned by a shared bare subscript.
    let accesses = block_accesses(block);
    for (k, x) in accesses.iter().enumerate() {
        for y in &accesses[k..] {
            if x.access.tensor != y.access.tensor || !(x.write || y.write) {
                continue;
            }
            let m = x.level.min(y.level);
            let pinned = pinned_loops(x, y);
            for &s in &moved {
                let positions: Vec<usize> = (0..seg.len()).filter(|&p| seg[p] == s).collect();
                if positions.iter().any(|&p| p >= m) {
                    continue;
                }
                let free = positions
                    .iter()
                    .filter(|&&p| !pinned.contains(&block.loops[p].id.0))
                    .count();
                if free > 1 {
                    return false;
                }
            }
        }
    }
    true
}

/// Loops whose variable is the subscript of the same axis in both accesses: two
/// instances touching the same element agree on them.
fn pinned_loops(x: &AccessAt, y: &AccessAt) -> HashSet<usize> {
    x.access
        .index
        .iter()
        .zip(&y.access.index)
        .filter_map(|(sx, sy)| match (sx, sy) {
            (Subscript::Expr(Expr::Index(i)), Subscript::Expr(Expr::Index(j))) if i == j => {
                Some(*i)
            }
            _ => None,
        })
        .collect()
}

/// The cross-dependence rule between the (reordered, renamed) blocks `a` then `b`.
fn cross_ok(a: &Block, b: &Block) -> bool {
    let (acc_a, acc_b) = (block_accesses(a), block_accesses(b));
    for (x, y) in conflicting(&acc_a, &acc_b) {
        if x.level < y.level || !identical(&x.access.index, &y.access.index) {
            return false;
        }
        let pinned = pinned_loops(x, y);
        if a.loops[..y.level].iter().any(|l| !pinned.contains(&l.id.0)) {
            return false;
        }
    }
    true
}

fn identical(x: &[Subscript], y: &[Subscript]) -> bool {
    x.len() == y.len()
        && x.iter().zip(y).all(|(sx, sy)| match (sx, sy) {
            (Subscript::Expr(ex), Subscript::Expr(ey)) => ex.simplify() == ey.simplify(),
            _ => false,
        })
}

/// One nest with `a`'s loop headers; at each depth `a`'s part runs before `b`'s.
fn merge(mut a: Block, b: Block) -> Block {
    for (la, lb) in a.loops.iter_mut().zip(b.loops) {
        la.carried.extend(lb.carried);
        la.stmts.extend(lb.stmts);
    }
    a.carried.extend(b.carried);
    a.stmts.extend(b.stmts);
    a
}
