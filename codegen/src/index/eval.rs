//! Evaluating index expressions under concrete bindings.

use std::collections::HashMap;

use thiserror::Error;

use super::ast::{DimRef, Expr, IndexOp};

/// Why an index expression could not be evaluated.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EvalError {
    /// A variable had no value.
    #[error("`{0}` has no value")]
    Unbound(String),
    /// `/` or `%` by zero.
    #[error("division by zero in `{0}`")]
    DivisionByZero(String),
    /// The result does not fit in 64 bits.
    #[error("integer overflow in `{0}`")]
    Overflow(String),
}

/// Values for the variables of an index expression.
pub trait Env {
    /// Value of loop index `i{n}`.
    fn index(&self, n: usize) -> Option<i64>;
    /// Value of a named dimension.
    fn name(&self, name: &str) -> Option<i64>;
    /// Value of a `$param`.
    fn param(&self, name: &str) -> Option<i64>;
    /// Value of a shape-source reference `dA0` (only meaningful before resolution).
    fn dim(&self, _d: DimRef) -> Option<i64> {
        None
    }
}

/// A plain map-backed [`Env`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Bindings {
    /// Loop index values, `i0`, `i1`, ... by position.
    pub indices: Vec<i64>,
    /// Named dimensions.
    pub names: HashMap<String, i64>,
    /// `$params`.
    pub params: HashMap<String, i64>,
    /// Shape-source dimensions: `dims[source][axis]`.
    pub dims: Vec<Vec<i64>>,
}

impl Env for Bindings {
    fn index(&self, n: usize) -> Option<i64> {
        self.indices.get(n).copied()
    }
    fn name(&self, name: &str) -> Option<i64> {
        self.names.get(name).copied()
    }
    fn param(&self, name: &str) -> Option<i64> {
        self.params.get(name).copied()
    }
    fn dim(&self, d: DimRef) -> Option<i64> {
        self.dims.get(d.source)?.get(d.axis).copied()
    }
}

/// Floor division (rounds towards negative infinity), `None` on division by zero or overflow.
pub fn floor_div(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// The modulo matching [`floor_div`]: the result has the sign of `b` (non-negative for `b > 0`).
pub fn floor_mod(a: i64, b: i64) -> Option<i64> {
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        Some(r + b)
    } else {
        Some(r)
    }
}

impl Expr {
    /// Evaluates under `env`; `[=]` assertions are not checked here (see the uop layer).
    pub fn eval(&self, env: &impl Env) -> Result<i64, EvalError> {
        let unbound = || EvalError::Unbound(self.to_string());
        match self {
            Expr::Int(v) => Ok(*v),
            Expr::Index(n) => env.index(*n).ok_or_else(unbound),
            Expr::Dim(d, _) => env.dim(*d).ok_or_else(unbound),
            Expr::Param(p) => env.param(p).ok_or_else(unbound),
            Expr::Name(n) => env.name(n).ok_or_else(unbound),
            Expr::Neg(a) => a
                .eval(env)?
                .checked_neg()
                .ok_or_else(|| EvalError::Overflow(self.to_string())),
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.eval(env)?, b.eval(env)?);
                let overflow = || EvalError::Overflow(self.to_string());
                match op {
                    IndexOp::Add => a.checked_add(b).ok_or_else(overflow),
                    IndexOp::Sub => a.checked_sub(b).ok_or_else(overflow),
                    IndexOp::Mul => a.checked_mul(b).ok_or_else(overflow),
                    IndexOp::Div | IndexOp::Mod if b == 0 => {
                        Err(EvalError::DivisionByZero(self.to_string()))
                    }
                    IndexOp::Div => floor_div(a, b).ok_or_else(overflow),
                    IndexOp::Mod => floor_mod(a, b).ok_or_else(overflow),
                    IndexOp::Min => Ok(a.min(b)),
                    IndexOp::Max => Ok(a.max(b)),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_semantics_match_python() {
        assert_eq!(floor_div(7, 2), Some(3));
        assert_eq!(floor_div(-7, 2), Some(-4));
        assert_eq!(floor_div(7, -2), Some(-4));
        assert_eq!(floor_div(-7, -2), Some(3));
        assert_eq!(floor_mod(-7, 2), Some(1));
        assert_eq!(floor_mod(7, -2), Some(-1));
        assert_eq!(floor_mod(-6, 3), Some(0));
        assert_eq!(floor_div(i64::MIN, -1), None);
    }
}
