//! Chunked math loops: an element-wise innermost loop storing a value that calls a
//! vectorizable math function (`exp`, `tanh`, `pow`, ...) spends its time in long
//! dependency chains; computing a chunk of iterations before storing them lets
//! several chains overlap. Its innermost loop is marked
//! [`[chunked]`](crate::loops::Schedule::chunked) where it is
//! [`chunkable`](crate::loops::analysis::chunkable) (the structural half, which the
//! verifier checks too) and math-heavy ([`math_heavy`], the rule Cranelift's
//! vector plan uses too). The chunk's size is the target's (the Rust copies'
//! `LANES`).
//!
//! Cost: O(e) per block, `e` the size of the innermost loop's statement.

use crate::loops::analysis::{chunkable, math_heavy};
use crate::loops::{LoopProgram, Stmt};

/// Marks the innermost loop of every block that is [`chunkable`] and stores a
/// [`math_heavy`] value `[chunked]`.
pub fn chunk(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if let Some(l) = b.loops.last_mut()
            && let [Stmt::Store { value, .. }] = l.stmts.as_slice()
            && math_heavy(value)
            && chunkable(l)
        {
            l.schedule.chunked = true;
        }
    }
    out
}
