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
//! Cost: O(L · W_b · A_b) per block — quadratic in one block's accesses, per
//! candidate loop.

use crate::loops::{Block, LoopProgram, Stmt, Subscript};

use super::stride::coefficient;
use super::walk::{block_accesses, stmt_reads_var};

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
    let written: Vec<_> = accesses
        .iter()
        .filter(|a| a.write)
        .map(|a| a.access.tensor)
        .collect();
    for t in &written {
        let touching: Vec<_> = accesses.iter().filter(|a| a.access.tensor == *t).collect();
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

#[cfg(test)]
mod tests {
    use crate::pass::optimized_text as optimized;

    #[test]
    fn row_reductions_and_elementwise_nests_run_their_rows_in_parallel() {
        let p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [1])\noutput y\n");
        assert!(p.to_string().contains("for i0 in 0..M [parallel] {"), "{p}");
        let p = optimized("input x: f32[M, N]\ny = exp(x)\noutput y\n");
        assert!(p.to_string().contains("[parallel]"), "{p}");
    }

    #[test]
    fn a_full_sum_is_not_parallel() {
        let p = optimized("input x: f32[N]\ny = reduce_sum(x, [0])\noutput y\n");
        assert!(!p.to_string().contains("parallel"), "{p}");
    }

    #[test]
    fn a_full_sum_folds_its_loop_in_pieces() {
        let p = optimized("input x: f32[N]\ny = reduce_sum(x, [0])\noutput y\n");
        assert!(
            p.to_string().contains("for i0 in 0..N [pieces, split] {"),
            "{p}"
        );
        let p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [0, 1])\noutput y\n");
        let text = p.to_string();
        assert!(text.contains("for i0 in 0..M [pieces] {"), "{text}");
        assert!(text.contains("for i1 in 0..N [split] {"), "{text}");
    }

    #[test]
    fn a_reduction_written_out_inside_its_loops_is_not_folded_in_pieces() {
        // Row sums store inside the loops: their rows are parallel instead.
        let p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [1])\noutput y\n");
        assert!(!p.to_string().contains("pieces"), "{p}");
    }

    #[test]
    fn a_column_sum_shares_out_its_columns_while_every_thread_walks_the_rows() {
        let p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [0])\noutput y\n");
        let text = p.to_string();
        assert!(
            text.contains("for i1 in 0..M {\n    for i0 in 0..N [parallel] {"),
            "{text}"
        );
    }

    #[test]
    fn an_inner_loop_whose_range_follows_the_rows_is_not_shared_out() {
        // Column sums over a triangle, `for r { for c in 0..r { y[c] += x[r, c] } }`:
        // the threads' shares of the columns would differ from row to row.
        let mut p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [0])\noutput y\n");
        let b = p.blocks.last_mut().expect("the accumulating block");
        b.loops[1].end = crate::index::Expr::Index(b.loops[0].id.0);
        b.loops[1].schedule.parallel = false;
        let p = super::parallel(&p);
        let b = p.blocks.last().expect("the accumulating block");
        assert!(b.loops.iter().all(|l| !l.schedule.parallel), "{p}");
    }

    #[test]
    fn a_column_sum_accumulating_across_rows_is_not_parallel_over_rows() {
        let p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [0])\noutput y\n");
        let text = p.to_string();
        assert!(
            text.contains("for i1 in 0..M {"),
            "the accumulation over rows stays serial: {text}"
        );
    }
}
