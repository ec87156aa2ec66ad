//! Split reductions: an innermost loop that folds values into carried variables
//! declared outside it is marked [`Schedule::split`](crate::loops::Schedule::split), so a backend may keep several
//! independent partial results (one per vector lane and accumulator) and combine
//! them after the loop.
//!
//! A float `+` or `*` chain cannot be vectorized otherwise: every addition waits for
//! the one before. The marked loop's results are reassociated, which is the one
//! change of meaning the schedule allows (documented with the oracle tolerance);
//! `max` and `min` give the same value in any order. A loop whose statements read a
//! variable it updates (a running value) is never marked.
//!
//! Cost: O(S_K²) per block — innermost statements against the variables they update.

use crate::loops::{Block, LoopProgram, Stmt};

use super::walk::stmt_reads_var;

/// Marks every innermost loop that updates only variables carried by an enclosing
/// level, and reads none of them, as split; tiled blocks are left alone.
pub fn split(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if splittable(b)
            && let Some(l) = b.loops.last_mut()
        {
            l.schedule.split = true;
        }
    }
    out
}

fn splittable(b: &Block) -> bool {
    let Some((innermost, outer)) = b.loops.split_last() else {
        return false;
    };
    if b.loops.iter().any(|l| l.schedule.tile.is_some()) {
        return false;
    }
    let outer_vars: Vec<_> = b
        .carried
        .iter()
        .chain(outer.iter().flat_map(|l| &l.carried))
        .map(|c| c.var)
        .collect();
    let updated: Vec<_> = innermost
        .stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Update { var, .. } => Some(*var),
            _ => None,
        })
        .collect();
    !updated.is_empty()
        && updated.iter().all(|v| outer_vars.contains(v))
        && innermost
            .stmts
            .iter()
            .all(|s| updated.iter().all(|v| !stmt_reads_var(s, *v)))
}
