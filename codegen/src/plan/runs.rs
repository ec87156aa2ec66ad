//! The math-run plan: which math calls of a vector loop a JIT computes over runs
//! of lanes by the runtime (`uop_runtime::math_runs`, one copy per CPU level)
//! instead of inline, four lanes at a time.
//!
//! A loop realized with runs is strip-mined: for each run of lanes, each planned
//! call's argument is computed for the whole run into a buffer (inner calls first,
//! their results read from their own buffers), the runtime applies the function to
//! the buffer in place, and then the loop's statements run over the run reading
//! the calls' values from the buffers. That reorders the loop's reads: every
//! argument of the run is read before any statement of the run writes, so the
//! plan takes a loop only when no argument reads a tensor the loop writes.

use crate::loops::analysis::walk::{stmt_accesses, value_loads};
use crate::loops::{Loop, Stmt, TensorId, Value};
use crate::uop::UnaryOp;

/// The functions the runtime applies over runs.
pub const RUN_FUNCTIONS: [UnaryOp; 5] = [
    UnaryOp::Exp,
    UnaryOp::Log,
    UnaryOp::Tanh,
    UnaryOp::Sigmoid,
    UnaryOp::Erf,
];

/// The distinct calls of [`RUN_FUNCTIONS`] in the statements of loop `l`, each
/// after the calls inside its argument (so each call's argument can read the
/// buffers of those computed before it); empty when there is none or when an
/// argument reads a tensor `l`'s statements write.
pub fn math_runs(l: &Loop) -> Vec<Value> {
    let mut calls = Vec::new();
    for s in &l.stmts {
        let v = match s {
            Stmt::Store { value, .. }
            | Stmt::Accumulate { value, .. }
            | Stmt::Update { value, .. } => value,
        };
        collect(v, &mut calls);
    }
    let mut written: Vec<TensorId> = Vec::new();
    for s in &l.stmts {
        stmt_accesses(s, &mut |a, write| {
            if write {
                written.push(a.tensor);
            }
        });
    }
    let mut reads_written = false;
    for call in &calls {
        value_loads(call, &mut |a, _| {
            reads_written |= written.contains(&a.tensor)
        });
    }
    if reads_written { Vec::new() } else { calls }
}

/// Appends the run calls of `v` not in `out` yet, innermost first.
fn collect(v: &Value, out: &mut Vec<Value>) {
    match v {
        Value::Load { .. }
        | Value::Var(_)
        | Value::Const(_)
        | Value::Param(_)
        | Value::Index(_) => {}
        Value::Unary(op, x) => {
            collect(x, out);
            if RUN_FUNCTIONS.contains(op) && !out.contains(v) {
                out.push(v.clone());
            }
        }
        Value::Binary(_, a, b) => {
            collect(a, out);
            collect(b, out);
        }
        Value::Where(c, a, b) => {
            collect(c, out);
            collect(a, out);
            collect(b, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::parse_program;

    fn innermost(text: &str) -> Loop {
        let p = parse_program(text).expect("the loop program parses");
        p.blocks[0].loops.last().expect("a loop").clone()
    }

    #[test]
    fn calls_are_listed_once_inner_first() {
        let l = innermost(
            "\
input  x: f32[N]
output y: f32[N]
block 0 {
  for i0 in 0..N {
    y[i0] = x[i0] * sigmoid(exp(x[i0]) + exp(x[i0])) + sqrt(x[i0])
  }
}
",
        );
        let calls = math_runs(&l);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert!(matches!(calls[0], Value::Unary(UnaryOp::Exp, _)));
        assert!(matches!(calls[1], Value::Unary(UnaryOp::Sigmoid, _)));
    }

    #[test]
    fn a_softmax_row_runs_its_exp_but_not_a_call_reading_what_the_loop_writes() {
        let softmax = "\
input  x: f32[N]
output e: f32[N]
block 0 {
  v0 = 0.0 (+)
  for i0 in 0..N {
    e[i0] = exp(x[i0])
    v0 += e[i0]
  }
}
";
        assert_eq!(math_runs(&innermost(softmax)).len(), 1);
        let rereads = softmax.replace("v0 += e[i0]", "v0 += tanh(e[i0])");
        assert!(math_runs(&innermost(&rereads)).is_empty());
        let plain = softmax.replace("exp(x[i0])", "x[i0] * 2.0");
        assert!(math_runs(&innermost(&plain)).is_empty());
    }
}
