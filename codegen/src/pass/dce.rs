//! Dead-code elimination: from the outputs backwards, removes every statement whose
//! effect no output depends on, then blocks left without statements, carried
//! variables nothing reads, and temporaries nothing accesses.
//!
//! Guarantee: the outputs are unchanged; a temporary that no remaining statement
//! reads or writes is removed from [`LoopProgram::tensors`] (never allocated), with
//! the remaining tensors renumbered so every `TensorId` in the program — accesses,
//! `inputs`, `outputs` — stays consistent for printers and interpreters. Inputs and
//! outputs are never removed: they are the calling convention.
//!
//! Liveness is by tensor, not by element: a write is live when any later live
//! statement (or, inside one block, any live statement at all, since loops carry
//! values between iterations) reads its tensor, or when the tensor is an output.
//!
//! Cost: O(Σ S_b²) worst case — each fixpoint round rescans a block's statements;
//! linear in B.

use std::collections::HashSet;

use crate::loops::{Block, LoopProgram, Stmt, TensorId, VarId};

use super::walk::{drop_unused_temps, levels, stmt_accesses, stmt_reads_var, stmts_at_mut};

/// Removes dead statements, blocks, carried variables and temporaries (see the module docs).
pub fn dce(p: &LoopProgram) -> LoopProgram {
    let mut live: HashSet<TensorId> = p.outputs.iter().copied().collect();
    let mut blocks = Vec::with_capacity(p.blocks.len());
    for block in p.blocks.iter().rev() {
        if let Some(kept) = live_part(block, &mut live) {
            blocks.push(kept);
        }
    }
    blocks.reverse();
    let mut out = LoopProgram {
        blocks,
        ..p.clone()
    };
    drop_unused_temps(&mut out);
    out
}

/// The live statements of `block` given the tensors read after it (`live`), which it
/// extends with what those statements read; `None` when nothing in it is live.
fn live_part(block: &Block, live: &mut HashSet<TensorId>) -> Option<Block> {
    let lists = levels(block);
    let mut keep: Vec<Vec<bool>> = lists.iter().map(|(_, s)| vec![false; s.len()]).collect();
    let mut local_reads: HashSet<TensorId> = HashSet::new();
    let mut live_vars: HashSet<VarId> = HashSet::new();
    let all_vars: Vec<VarId> = block
        .carried
        .iter()
        .chain(block.loops.iter().flat_map(|l| &l.carried))
        .map(|c| c.var)
        .collect();
    // A fixpoint: a statement made live can make earlier or later ones live.
    let mut changed = true;
    while changed {
        changed = false;
        for (li, (_, stmts)) in lists.iter().enumerate() {
            for (k, s) in stmts.iter().enumerate() {
                if keep[li][k] {
                    continue;
                }
                let needed = match s {
                    Stmt::Store { access, .. } | Stmt::Accumulate { access, .. } => {
                        live.contains(&access.tensor) || local_reads.contains(&access.tensor)
                    }
                    Stmt::Update { var, .. } => live_vars.contains(var),
                };
                if needed {
                    keep[li][k] = true;
                    changed = true;
                    stmt_accesses(s, &mut |a, write| {
                        if !write {
                            local_reads.insert(a.tensor);
                        }
                    });
                    live_vars.extend(all_vars.iter().filter(|&&v| stmt_reads_var(s, v)));
                }
            }
        }
    }
    if keep.iter().all(|k| k.iter().all(|&x| !x)) {
        return None;
    }
    live.extend(local_reads);
    let mut out = block.clone();
    for (li, flags) in keep.iter().enumerate() {
        let level = lists[li].0;
        let stmts = stmts_at_mut(&mut out, level);
        let mut it = flags.iter();
        stmts.retain(|_| it.next().copied().unwrap_or(true));
    }
    out.carried.retain(|c| live_vars.contains(&c.var));
    for l in &mut out.loops {
        l.carried.retain(|c| live_vars.contains(&c.var));
    }
    Some(out)
}
