//! Cleanup: folds index expressions, removes loops that do nothing and blocks with
//! no statements.
//!
//! Guarantee: results are unchanged. Concretely:
//! - every index expression (loop ranges, subscripts, index values) is replaced by
//!   its [`Expr::simplify`](crate::index::Expr::simplify) form, which has the same value wherever it is defined;
//! - a loop running exactly once (`for i in c..c + 1`, literals) is removed: its
//!   variable becomes the literal `c`, its carried variables move to the enclosing
//!   level (they were reset once per enclosing iteration anyway) and its statements
//!   run just before the enclosing level's own statements, which is when they ran;
//! - innermost loops holding no statements and no carried variables are removed
//!   (running them had no effect);
//! - blocks left without any statement are removed.
//!
//! Cost: O(E · simplify + L · E_b) per block — two folds of every index expression,
//! one rename per loop removed.

use crate::loops::{Block, LoopProgram};

use super::walk::{levels, map_block_exprs, rename_loops_to};

/// Simplifies and prunes every block (see the module docs).
pub fn cleanup(p: &LoopProgram) -> LoopProgram {
    let blocks = p
        .blocks
        .iter()
        .filter_map(|b| {
            let b = clean_block(b.clone());
            let has_stmts = levels(&b).iter().any(|(_, s)| !s.is_empty());
            has_stmts.then_some(b)
        })
        .collect();
    LoopProgram {
        blocks,
        ..p.clone()
    }
}

fn clean_block(mut b: Block) -> Block {
    map_block_exprs(&mut b, &mut |e| e.simplify());
    remove_loops_running_once(&mut b);
    map_block_exprs(&mut b, &mut |e| e.simplify());
    while b
        .loops
        .last()
        .is_some_and(|l| l.stmts.is_empty() && l.carried.is_empty())
    {
        b.loops.pop();
    }
    b
}

/// Removes every loop of `b` whose range is literally one iteration (see the module
/// docs): also used by fusion, so that a size-1 axis does not keep two nests apart.
pub(super) fn remove_loops_running_once(b: &mut Block) {
    let mut d = 0;
    while d < b.loops.len() {
        let l = &b.loops[d];
        let once = match (l.start.simplify().as_int(), l.end.simplify().as_int()) {
            (Some(s), Some(e)) => e.checked_sub(s) == Some(1),
            _ => false,
        };
        if !once {
            d += 1;
            continue;
        }
        let removed = b.loops.remove(d);
        let (id, value) = (removed.id.0, removed.start.clone());
        let (carried, stmts) = match d {
            0 => (&mut b.carried, &mut b.stmts),
            _ => {
                let parent = &mut b.loops[d - 1];
                (&mut parent.carried, &mut parent.stmts)
            }
        };
        carried.extend(removed.carried);
        let after = std::mem::take(stmts);
        stmts.extend(removed.stmts);
        stmts.extend(after);
        // After the move, so the moved statements see the literal too.
        rename_loops_to(b, id, &value);
    }
}
