//! Math-heaviness: whether a value calls a function that every backend computes
//! as a long chain of dependent operations or a call, one definition for the
//! `chunk` pass (which loops pay for computing a chunk of values before storing
//! them) and Cranelift's vector plan (which loops are not unrolled: four copies
//! of such a body only spill registers).

use crate::loops::Value;
use crate::uop::{BinaryOp, UnaryOp};

/// True when `v` calls a *math function*: `exp log tanh sigmoid sin cos erf`, or
/// `pow`. Every target computes these in tens of instructions per element: the
/// f32 ones as `vmath` polynomials (the Rust copies' `exp_f32`, …, Cranelift's
/// inline math; the same constants), the rest (f64, `sin cos pow` in Cranelift)
/// as calls, which also clobber every vector register. The answer does not depend
/// on the target's vector width, so this takes no [`Target`](crate::target::Target).
///
/// Not math-heavy: the operations with a short instruction sequence on every
/// target (`neg abs sqrt rsqrt recip floor ceil sign`, arithmetic, comparisons,
/// index values), even where a backend computes them lane by lane (Cranelift's
/// `rsqrt floor ceil sign` and a vector loop's index values: a few scalar
/// instructions per lane, no call).
pub fn math_heavy(v: &Value) -> bool {
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
            ) || math_heavy(x)
        }
        Value::Binary(op, a, b) => *op == BinaryOp::Pow || math_heavy(a) || math_heavy(b),
        Value::Where(c, a, b) => math_heavy(c) || math_heavy(a) || math_heavy(b),
        Value::Load { .. }
        | Value::Var(_)
        | Value::Const(_)
        | Value::Param(_)
        | Value::Index(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::loops::parse_program;

    /// Whether the value stored by the one statement of `text`'s loop is math-heavy.
    fn heavy(value: &str) -> bool {
        let text = format!(
            "input  x: f32[N]\noutput y: f32[N]\nblock 0 {{\n  for i0 in 0..N {{\n    y[i0] = {value}\n  }}\n}}\n"
        );
        let p = parse_program(&text).unwrap_or_else(|e| panic!("{e}"));
        match &p.blocks[0].loops[0].stmts[0] {
            crate::loops::Stmt::Store { value, .. } => math_heavy(value),
            s => panic!("not a store: {s:?}"),
        }
    }

    #[test]
    fn the_long_math_functions_are_heavy_wherever_they_are() {
        for f in ["exp", "log", "tanh", "sigmoid", "sin", "cos", "erf"] {
            assert!(heavy(&format!("{f}(x[i0])")), "{f}");
            assert!(
                heavy(&format!("where(x[i0] > 0.0, 1.0, {f}(x[i0]) * 2.0)")),
                "{f}"
            );
        }
        assert!(heavy("pow(x[i0], 2.0)"));
    }

    #[test]
    fn short_operations_and_index_values_are_not_heavy() {
        for v in [
            "-x[i0]",
            "abs(x[i0])",
            "sqrt(x[i0])",
            "rsqrt(x[i0])",
            "recip(x[i0])",
            "floor(x[i0]) + ceil(x[i0])",
            "sign(x[i0])",
            "x[i0] * 2.0 + i0",
            "maximum(x[i0], (N - 1))",
        ] {
            assert!(!heavy(v), "{v}");
        }
    }
}
