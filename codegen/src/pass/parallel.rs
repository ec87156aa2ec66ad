//! Loops that may run on several threads.
//!
//! A block's loop whose iterations touch disjoint parts of everything the block
//! writes is marked [`Schedule::parallel`](crate::loops::Schedule::parallel), so a backend may share out its range
//! among threads. The outermost loop qualifies when the block carries nothing
//! across it (no block-level variables or statements). An inner loop qualifies
//! when the loops outside it carry nothing and run no statements, and its range
//! does not depend on them: every thread then runs all of their iterations and its
//! share of this one (a column sum, `for r { for c { y[c] += x[r, c] } }`, has its
//! columns shared out while each thread walks every row).
//!
//! The rule for the marked loop `L`: every tensor the block writes is written and
//! read only through accesses with one common subscript, affine in `L`'s variable
//! with a non-zero coefficient and free of the other loops: two iterations of `L`
//! then never touch the same element of it. Loads of tensors the block does not
//! write are free. Each element keeps its own sequence of updates, so results are
//! bit for bit the same on any number of threads.
//!
//! A block that instead reduces everything into its own carried variables (a full
//! sum, `v = 0; for i [split] { v += x[i] }; y[0] = v`) has its outermost loop
//! marked [`Schedule::pieces`](crate::loops::Schedule::pieces): a backend may fold fixed-size pieces of the range
//! apart (on any thread) and combine them in order. That applies when every
//! statement inside the loops updates a block variable in the innermost loop, which
//! is [split](crate::loops::Schedule::split) (so the updates may be reassociated and read none of
//! the variables).
//!
//! Cost: O(L · A_b · (R · e_a + 1)) per block: per candidate loop, the block's
//! accesses grouped by tensor once, then each access of a written tensor compared
//! on each axis with the first. (It compared every written tensor against every
//! access, quadratic in one block's accesses: 20,000 outputs fused into one nest
//! took 2.0 s here.)

use std::collections::{HashMap, HashSet};

use crate::loops::{Block, LoopProgram, Stmt, Subscript, TensorId};

use super::stride::coefficient;
use super::walk::{AccessAt, block_accesses, stmt_reads_var};

/// Marks, in every block that matches, the loop whose iterations may run on
/// several threads, or the loop a reduction may fold in pieces (see the module
/// docs).
pub fn parallel(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if let Some(d) = (0..b.loops.len()).find(|&d| independent(b, d)) {
            b.loops[d].schedule.parallel = true;
        } else if in_pieces(b) {
            b.loops[0].schedule.pieces = true;
        }
    }
    out
}

/// Whether loop `d` of `b` may share out its range among threads.
fn independent(b: &Block, d: usize) -> bool {
    let (outside, rest) = b.loops.split_at(d);
    let Some(l) = rest.first() else {
        return false;
    };
    if !b.carried.is_empty() || !b.stmts.is_empty() {
        return false;
    }
    if outside
        .iter()
        .any(|o| !o.carried.is_empty() || !o.stmts.is_empty())
    {
        return false;
    }
    // Every thread must share out the same range in every outer iteration.
    let outer_ids: Vec<usize> = outside.iter().map(|o| o.id.0).collect();
    if [&l.start, &l.end]
        .iter()
        .any(|e| e.indices().iter().any(|n| outer_ids.contains(n)))
    {
        return false;
    }
    let n = l.id.0;
    let others: Vec<usize> = b.loops.iter().map(|o| o.id.0).filter(|&m| m != n).collect();
    let accesses = block_accesses(b);
    // Each tensor's accesses, in block order, and the written tensors once each.
    let mut by_tensor: HashMap<TensorId, Vec<&AccessAt>> = HashMap::new();
    let mut written: Vec<TensorId> = Vec::new();
    let mut seen: HashSet<TensorId> = HashSet::new();
    for a in &accesses {
        if a.write && seen.insert(a.access.tensor) {
            written.push(a.access.tensor);
        }
        by_tensor.entry(a.access.tensor).or_default().push(a);
    }
    for t in &written {
        let touching = &by_tensor[t];
        // An axis every access of `t` subscripts with the same expression that
        // separates the iterations.
        let rank = touching[0].access.index.len();
        let separates = |axis: usize| {
            let Subscript::Expr(e) = &touching[0].access.index[axis] else {
                return false;
            };
            coefficient(e, n).is_some_and(|c| c != 0)
                && others.iter().all(|m| !e.indices().contains(m))
                && touching
                    .iter()
                    .all(|a| matches!(&a.access.index[axis], Subscript::Expr(x) if x == e))
        };
        if !(0..rank).any(separates) {
            return false;
        }
    }
    // Loads of tensors the block does not write may depend on the loop freely.
    true
}

/// Whether `b` is a reduction into its own carried variables whose outermost loop
/// may fold in pieces: nothing inside the loops but updates of those variables in
/// the innermost loop, which is split, and each of them updated there.
fn in_pieces(b: &Block) -> bool {
    let Some((innermost, outer)) = b.loops.split_last() else {
        return false;
    };
    if b.carried.is_empty() || !innermost.schedule.split {
        return false;
    }
    if outer.iter().any(|l| !l.stmts.is_empty()) {
        return false;
    }
    let updates = |v| {
        innermost
            .stmts
            .iter()
            .any(|s| matches!(s, Stmt::Update { var, .. } if *var == v))
    };
    b.carried.iter().all(|c| updates(c.var))
        && innermost.stmts.iter().all(|s| match s {
            Stmt::Update { var, .. } => {
                b.carried.iter().any(|c| c.var == *var)
                    && b.carried.iter().all(|c| !stmt_reads_var(s, c.var))
            }
            _ => false,
        })
}
