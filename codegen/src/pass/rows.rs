//! Row groups: consecutive blocks whose outermost loops run over the same rows are
//! [joined](crate::loops::Schedule::joined), so a backend may run them as one loop —
//! all of row `i`'s work, then row `i + 1`'s — and temporaries that only carry a row
//! from one of them to the next are marked [row-local](crate::loops::TensorDecl::row_local),
//! so that backend keeps one row of them instead of the whole tensor.
//!
//! This is what a softmax or a layer norm needs to stream: its row reduction, the
//! element-wise pass that uses the reduced value and the normalization are separate
//! nests (the reduction must finish before its result is read, so `fuse` cannot
//! merge the inner loops), but each row only needs its own row of everything. Run
//! row by row, the input row is read from memory once and the intermediate row
//! lives in the first-level cache.
//!
//! # Rules
//!
//! A block joins the group of the block before it when
//! - both have an outermost loop, with equal ranges (under [`ShapeGroups`]) and the
//!   same `parallel` mark, and neither has block-level variables or statements (they
//!   would run after all rows);
//! - neither block's outermost loop is the row loop of a register tile or cache
//!   block (those schedules take the outermost loop with them);
//! - for every tensor written by one of them and touched by the other (or by any
//!   block already in the group), all accesses to it in the group and in the block
//!   subscript one axis — the same for all of them — with the bare variable of
//!   their own block's outermost loop.
//!
//! Then iteration `i` of every block touches only row `i` of what the others write,
//! so interleaving the iterations (`i` of the first block, `i` of the second, …,
//! then `i + 1`) only reorders accesses to different elements: every output is bit
//! for bit what the blocks compute one after another. The interpreters ignore the
//! mark and do just that.
//!
//! A temporary is row-local when every block touching it is in one group (of two
//! blocks or more), every access to it is unchecked and subscripts the same axis
//! with its block's outer loop variable as above, and its first block stores every
//! element of it before anything reads it (so a row buffer reused for the next row
//! never shows stale values where the whole tensor would show zeros).
//!
//! Cost: O(A_k · A_group) per join and O(T · A) for row-locality — quadratic, not
//! capped.

use crate::index::Expr;
use crate::loops::{Block, LoopProgram, Subscript, TensorId, TensorKind};

use super::shape_groups::ShapeGroups;
use super::walk::{AccessAt, block_accesses, fully_written_first};

/// Joins row groups and marks their row-local temporaries (see the module docs).
pub fn rows(p: &LoopProgram) -> LoopProgram {
    let groups = ShapeGroups::new(p);
    let mut out = p.clone();
    let accesses: Vec<Vec<AccessAt>> = p.blocks.iter().map(block_accesses).collect();
    let mut first = 0;
    for k in 1..p.blocks.len() {
        if joins(p, &groups, &accesses, first, k) {
            out.blocks[k].loops[0].schedule.joined = true;
        } else {
            first = k;
        }
    }
    for (t, decl) in p.tensors.iter().enumerate() {
        if decl.kind == TensorKind::Temp {
            out.tensors[t].row_local = row_local(&out, &accesses, TensorId(t));
        }
    }
    out
}

/// Whether block `k` may join the group of blocks `first..k`.
fn joins(
    p: &LoopProgram,
    groups: &ShapeGroups,
    accesses: &[Vec<AccessAt>],
    first: usize,
    k: usize,
) -> bool {
    let (lead, b) = (&p.blocks[first], &p.blocks[k]);
    if !row_nest(lead) || !row_nest(b) {
        return false;
    }
    let (l, m) = (&lead.loops[0], &b.loops[0]);
    if !groups.same(&l.start, &m.start)
        || !groups.same(&l.end, &m.end)
        || l.schedule.parallel != m.schedule.parallel
    {
        return false;
    }
    let members = first..=k;
    let shared: Vec<TensorId> = accesses[k]
        .iter()
        .map(|a| a.access.tensor)
        .filter(|&t| {
            let group_writes = accesses[first..k]
                .iter()
                .flatten()
                .any(|a| a.write && a.access.tensor == t);
            let group_touches = accesses[first..k]
                .iter()
                .flatten()
                .any(|a| a.access.tensor == t);
            let block_writes = accesses[k].iter().any(|a| a.write && a.access.tensor == t);
            group_writes || (block_writes && group_touches)
        })
        .collect();
    shared
        .into_iter()
        .all(|t| row_axis(p, accesses, members.clone(), t, false).is_some())
}

/// A block that can be part of a row group: an outermost loop, nothing at block
/// level, and no tile or cache block taking the outermost loop as its row loop.
fn row_nest(b: &Block) -> bool {
    b.carried.is_empty()
        && b.stmts.is_empty()
        && !b.loops.is_empty()
        && b.loops
            .get(1)
            .is_none_or(|c| c.schedule.tile.is_none() && !c.schedule.blocked)
}

/// The axis on which every access to `t` in `blocks` has the bare variable of its
/// block's outermost loop (all of them unchecked, when `unchecked`).
fn row_axis(
    p: &LoopProgram,
    accesses: &[Vec<AccessAt>],
    blocks: std::ops::RangeInclusive<usize>,
    t: TensorId,
    unchecked: bool,
) -> Option<usize> {
    let rank = p.tensors[t.0].shape.len();
    (0..rank).find(|&axis| {
        blocks.clone().all(|k| {
            let outer = p.blocks[k].loops[0].id.0;
            accesses[k]
                .iter()
                .filter(|a| a.access.tensor == t)
                .all(|a| {
                    (!unchecked || !a.access.checked)
                        && a.access.index[axis] == Subscript::Expr(Expr::Index(outer))
                })
        })
    })
}

/// The row axis of temporary `t` when it can be kept one row at a time.
fn row_local(p: &LoopProgram, accesses: &[Vec<AccessAt>], t: TensorId) -> Option<usize> {
    let touching: Vec<usize> = (0..p.blocks.len())
        .filter(|&k| accesses[k].iter().any(|a| a.access.tensor == t))
        .collect();
    let (&first, &last) = (touching.first()?, touching.last()?);
    // One group: every block after the first up to the last is joined.
    if first == last || !(first + 1..=last).all(|k| joined(&p.blocks[k])) {
        return None;
    }
    if !fully_written_first(p, t) {
        return None;
    }
    row_axis(p, accesses, first..=last, t, true)
}

fn joined(b: &Block) -> bool {
    b.loops.first().is_some_and(|l| l.schedule.joined)
}

#[cfg(test)]
mod tests {
    use crate::pass::optimized_text as optimized;

    #[test]
    fn a_softmax_runs_row_by_row_with_one_row_of_its_exponentials() {
        let p = optimized(
            "input x: f32[B, N]\nm = reduce_max(x, [1])\nmb = reindex(m, [B, N], [i0, 0])\n\
             e = exp(sub(x, mb))\ns = reduce_sum(e, [1])\nsb = reindex(s, [B, N], [i0, 0])\n\
             y = div(e, sb)\noutput y\n",
        );
        let text = p.to_string();
        assert_eq!(p.blocks.len(), 3, "{text}");
        assert_eq!(text.matches("[parallel, joined]").count(), 2, "{text}");
        for temp in ["m: f32[B, 1]", "e: f32[B, N]", "s: f32[B, 1]"] {
            assert!(
                text.contains(&format!("{temp} [one row of axis 0 at a time]")),
                "{temp} is row-local: {text}"
            );
        }
    }

    #[test]
    fn a_block_reading_other_rows_does_not_join() {
        // Row i of the second block reads row i + 1 of the first one's result.
        let p = optimized(
            "input x: f32[B, N]\ns = reduce_sum(x, [1])\n\
             t = reindex(s, [B, N], [i0 + 1, 0])\ny = mul(x, t)\noutput y\n",
        );
        let text = p.to_string();
        assert!(!text.contains("joined"), "{text}");
        assert!(!text.contains("row of axis"), "{text}");
    }

    #[test]
    fn a_temporary_read_after_the_group_stays_whole() {
        // `e` is also an output-side input of a column sum, outside the row group.
        let p = optimized(
            "input x: f32[B, N]\nm = reduce_max(x, [1])\nmb = reindex(m, [B, N], [i0, 0])\n\
             e = exp(sub(x, mb))\ns = reduce_sum(e, [1])\nc = reduce_sum(e, [0])\n\
             output s\noutput c\n",
        );
        let text = p.to_string();
        assert!(!text.contains("e: f32[B, N] [one row"), "{text}");
        assert!(
            text.contains("m: f32[B, 1] [one row of axis 0 at a time]"),
            "{text}"
        );
    }
}
