//! Parallel loops: a block's outermost loop whose iterations touch disjoint parts
//! of everything the block writes is marked [`Schedule::parallel`], so a backend
//! may run ranges of it on different threads.
//!
//! The rule: the block carries nothing across its outermost loop (no block-level
//! variables or statements), and every tensor the block writes is written and read
//! only through accesses with one common subscript, affine in the outermost loop
//! variable with a non-zero coefficient and free of the other loops: two iterations
//! of that loop then never touch the same element of it. Loads of tensors the block
//! does not write are free. Which iteration runs first no longer matters, so results
//! are bit for bit the same on any number of threads.

use crate::loops::{Block, LoopProgram, Subscript};

use super::stride::coefficient;
use super::walk::block_accesses;

/// Marks the outermost loop of every block that matches (see the module docs).
pub fn parallel(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if independent(b)
            && let Some(l) = b.loops.first_mut()
        {
            l.schedule.parallel = true;
        }
    }
    out
}

fn independent(b: &Block) -> bool {
    let Some(outer) = b.loops.first() else {
        return false;
    };
    if !b.carried.is_empty() || !b.stmts.is_empty() {
        return false;
    }
    let n = outer.id.0;
    let others: Vec<usize> = b.loops[1..].iter().map(|l| l.id.0).collect();
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
    fn a_column_sum_accumulating_across_rows_is_not_parallel_over_rows() {
        let p = optimized("input x: f32[M, N]\ny = reduce_sum(x, [0])\noutput y\n");
        let text = p.to_string();
        assert!(
            text.contains("for i1 in 0..M {"),
            "the accumulation over rows stays serial: {text}"
        );
    }
}
