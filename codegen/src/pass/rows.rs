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
//! Cost: near-linear. Every block's accesses are collected once; a block's join is
//! decided against a summary of its group kept per tensor (what the group writes,
//! and on which axes every access so far has the bare outer loop variable), in
//! O(A_k · R) for the block's A_k accesses of rank R; a temporary's row-locality
//! looks only at the blocks that touch it, found through a per-tensor index, plus
//! [`fully_written_first`] over its first block alone. In all O(A · R + T + B),
//! with A the program's accesses, T its tensors and B its blocks, plus hashing.

use std::collections::HashMap;

use crate::index::Expr;
use crate::loops::{Block, LoopProgram, Subscript, TensorId, TensorKind};

use super::shape_groups::ShapeGroups;
use super::walk::{AccessAt, block_accesses, fully_written_first_in};

/// Joins row groups and marks their row-local temporaries (see the module docs).
pub fn rows(p: &LoopProgram) -> LoopProgram {
    let groups = ShapeGroups::new(p);
    let mut out = p.clone();
    let accesses: Vec<Vec<AccessAt>> = p.blocks.iter().map(block_accesses).collect();
    // The first block of the group each block belongs to.
    let mut lead = Vec::with_capacity(p.blocks.len());
    let mut group: Option<Group> = None;
    for k in 0..p.blocks.len() {
        let summary = Group::of(p, &accesses, k);
        let joined = match group.take() {
            Some(g) => g.join(p, &groups, summary, k),
            None => Err(summary),
        };
        group = Some(match joined {
            Ok(g) => {
                out.blocks[k].loops[0].schedule.joined = true;
                lead.push(g.first);
                g
            }
            Err(alone) => {
                lead.push(k);
                alone
            }
        });
    }
    // Every access to each tensor, as (block, access), in program order.
    let mut touching: Vec<Vec<(usize, usize)>> = vec![Vec::new(); p.tensors.len()];
    for (k, list) in accesses.iter().enumerate() {
        for (i, a) in list.iter().enumerate() {
            if let Some(at) = touching.get_mut(a.access.tensor.0) {
                at.push((k, i));
            }
        }
    }
    for (t, decl) in p.tensors.iter().enumerate() {
        if decl.kind == TensorKind::Temp {
            out.tensors[t].row_local = row_local(&out, &accesses, &lead, &touching[t], TensorId(t));
        }
    }
    out
}

/// What the join rule needs of a row group (blocks `first..=last`), per tensor.
struct Group {
    /// Its first block.
    first: usize,
    /// Every tensor the group touches: whether a block of it writes the tensor, and
    /// the axes on which every access to it has its block's bare outer loop variable
    /// (`None` when a block of the group is no [`row_nest`]).
    tensors: HashMap<TensorId, Touch>,
    /// False when the group cannot take another block.
    open: bool,
}

/// How a group touches one tensor.
#[derive(Clone)]
struct Touch {
    writes: bool,
    /// `row_axes[axis]`: every access so far has the bare outer variable there.
    row_axes: Vec<bool>,
}

impl Group {
    /// The group of block `k` alone.
    fn of(p: &LoopProgram, accesses: &[Vec<AccessAt>], k: usize) -> Group {
        let b = &p.blocks[k];
        let mut tensors: HashMap<TensorId, Touch> = HashMap::new();
        let outer = b.loops.first().map(|l| l.id.0);
        for a in &accesses[k] {
            let t = a.access.tensor;
            let touch = tensors.entry(t).or_insert_with(|| Touch {
                writes: false,
                row_axes: vec![true; a.access.index.len()],
            });
            touch.writes |= a.write;
            for (axis, s) in a.access.index.iter().enumerate() {
                let bare = outer.is_some_and(|n| *s == Subscript::Expr(Expr::Index(n)));
                if let Some(r) = touch.row_axes.get_mut(axis) {
                    *r &= bare;
                }
            }
        }
        Group {
            first: k,
            tensors,
            open: row_nest(b),
        }
    }

    /// This group with block `k` (summarized by `block`) added, or `block` back
    /// when `k` may not join (see the module docs).
    fn join(
        mut self,
        p: &LoopProgram,
        groups: &ShapeGroups,
        block: Group,
        k: usize,
    ) -> Result<Group, Group> {
        let (lead, b) = (&p.blocks[self.first], &p.blocks[k]);
        if !self.open || !block.open {
            return Err(block);
        }
        let (l, m) = (&lead.loops[0], &b.loops[0]);
        if !groups.same(&l.start, &m.start)
            || !groups.same(&l.end, &m.end)
            || l.schedule.parallel != m.schedule.parallel
        {
            return Err(block);
        }
        // Every tensor written by the group and touched by the block, or written by
        // the block and touched by the group, has a row axis common to all.
        let shared_has_row_axis = block.tensors.iter().all(|(t, mine)| {
            let Some(theirs) = self.tensors.get(t) else {
                return true;
            };
            if !theirs.writes && !mine.writes {
                return true;
            }
            theirs
                .row_axes
                .iter()
                .zip(&mine.row_axes)
                .any(|(a, b)| *a && *b)
        });
        if !shared_has_row_axis {
            return Err(block);
        }
        for (t, mine) in block.tensors {
            match self.tensors.get_mut(&t) {
                Some(theirs) => {
                    theirs.writes |= mine.writes;
                    for (a, b) in theirs.row_axes.iter_mut().zip(&mine.row_axes) {
                        *a &= *b;
                    }
                }
                None => {
                    self.tensors.insert(t, mine);
                }
            }
        }
        Ok(self)
    }
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

/// The row axis of temporary `t`, whose accesses are `touching` (block, access; in
/// program order), when it can be kept one row at a time: every block touching it
/// is in one group of two blocks or more, every access to it is unchecked and has
/// its block's bare outer variable on that axis, and its first block stores all of
/// it before reading it.
fn row_local(
    p: &LoopProgram,
    accesses: &[Vec<AccessAt>],
    lead: &[usize],
    touching: &[(usize, usize)],
    t: TensorId,
) -> Option<usize> {
    let (&(first, _), &(last, _)) = (touching.first()?, touching.last()?);
    // One group: every block after the first up to the last is joined.
    if first == last || lead[last] > first {
        return None;
    }
    if fully_written_first_in(p, first, t) != Some(true) {
        return None;
    }
    let rank = p.tensors[t.0].shape.len();
    (0..rank).find(|&axis| {
        touching.iter().all(|&(k, i)| {
            let outer = p.blocks[k].loops[0].id.0;
            let a = &accesses[k][i].access;
            !a.checked && a.index[axis] == Subscript::Expr(Expr::Index(outer))
        })
    })
}
