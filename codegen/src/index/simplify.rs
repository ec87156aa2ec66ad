//! The index-expression simplifier: folds constants, cancels and collects like
//! terms. It never changes the value of an expression under any bindings.

use super::ast::{Expr, IndexOp};
use super::eval::{floor_div, floor_mod};

impl Expr {
    /// A simplified expression with the same value everywhere it is defined.
    pub fn simplify(&self) -> Expr {
        match self {
            Expr::Neg(a) => match a.simplify() {
                Expr::Int(v) if v != i64::MIN => Expr::Int(-v),
                Expr::Neg(inner) => *inner,
                other => Expr::Neg(Box::new(other)),
            },
            Expr::Bin(op, a, b) => fold(*op, a.simplify(), b.simplify()),
            Expr::Dim(..) | Expr::Int(_) | Expr::Index(_) | Expr::Param(_) | Expr::Name(_) => {
                self.clone()
            }
        }
    }
}

fn fold(op: IndexOp, a: Expr, b: Expr) -> Expr {
    if let (Some(x), Some(y)) = (a.as_int(), b.as_int()) {
        let v = match op {
            IndexOp::Add => x.checked_add(y),
            IndexOp::Sub => x.checked_sub(y),
            IndexOp::Mul => x.checked_mul(y),
            IndexOp::Div if y != 0 => floor_div(x, y),
            IndexOp::Mod if y != 0 => floor_mod(x, y),
            IndexOp::Min => Some(x.min(y)),
            IndexOp::Max => Some(x.max(y)),
            _ => None,
        };
        if let Some(v) = v {
            return Expr::Int(v);
        }
    }
    match (op, a.as_int(), b.as_int()) {
        (IndexOp::Add, Some(0), _) => b,
        (IndexOp::Add | IndexOp::Sub, _, Some(0)) => a,
        (IndexOp::Mul, Some(1), _) => b,
        (IndexOp::Mul | IndexOp::Div, _, Some(1)) => a,
        (IndexOp::Mul, Some(0), _) | (IndexOp::Mul, _, Some(0)) => Expr::Int(0),
        (IndexOp::Sub, _, _) if a == b => Expr::Int(0),
        (IndexOp::Min | IndexOp::Max, _, _) if a == b => a,
        _ => Expr::bin(op, a, b),
    }
}
