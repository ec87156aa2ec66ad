//! Chunked math loops: an element-wise innermost loop storing a value that calls a
//! vectorizable math function (`exp`, `tanh`, `pow`, ...) spends its time in long
//! dependency chains; computing a chunk of iterations before storing them lets
//! several chains overlap. Its innermost loop is marked
//! [`[chunked]`](crate::loops::Schedule::chunked) where it is
//! [`chunkable`](crate::loops::analysis::chunkable) (the structural half, which the
//! verifier checks too) and math-heavy ([`math`], this pass's own rule). The
//! chunk's size is the target's (the Rust copies' `LANES`).
//!
//! Cost: O(e) per block, `e` the size of the innermost loop's statement.

use crate::loops::analysis::chunkable;
use crate::loops::{LoopProgram, Stmt, Value};
use crate::uop::{BinaryOp, UnaryOp};

/// Marks the innermost loop of every block that is [`chunkable`] and stores a
/// [`math`] value `[chunked]`.
pub fn chunk(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if let Some(l) = b.loops.last_mut()
            && let [Stmt::Store { value, .. }] = l.stmts.as_slice()
            && math(value)
            && chunkable(l)
        {
            l.schedule.chunked = true;
        }
    }
    out
}

/// Whether `v` calls a math function a backend computes in a long chain of
/// operations (`exp log tanh sigmoid sin cos erf pow`).
fn math(v: &Value) -> bool {
    match v {
        Value::Unary(op, x) => {
            matches!(
                op,
                UnaryOp::Exp
                    | UnaryOp::Log
                    | UnaryOp::Tanh
                    | UnaryOp::Sigmoid
                    | UnaryOp::Sin
                    | UnaryOp::Cos
                    | UnaryOp::Erf
            ) || math(x)
        }
        Value::Binary(op, a, b) => *op == BinaryOp::Pow || math(a) || math(b),
        Value::Where(c, a, b) => math(c) || math(a) || math(b),
        Value::Load { .. }
        | Value::Var(_)
        | Value::Const(_)
        | Value::Param(_)
        | Value::Index(_) => false,
    }
}
