//! What an ONNX value is during import: a value of the graph being built, or a
//! tensor known at import time ([`Known`]), whose integer elements are index
//! expressions, so that shape arithmetic (`Shape → Gather → Concat → Reshape`) folds
//! over symbolic sizes.

use uop_codegen::index::{Expr, IndexOp};
use uop_graph::Ref;

use crate::data::{ElemType, HostData, HostTensor};

/// An ONNX value.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Val {
    /// A value of the graph; `elem` is the ONNX type it stands for (its graph type is
    /// the float type for floats and bools, i32 for integers read from the outside,
    /// the float type for integers computed in the graph such as ArgMax's).
    Graph(Ref, ElemType),
    /// A tensor known at import time.
    Known(Known),
}

/// A tensor known at import time.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Known {
    /// The ONNX element type.
    pub elem: ElemType,
    /// The shape (always concrete).
    pub shape: Vec<usize>,
    /// The elements.
    pub data: KData,
}

/// The elements of a [`Known`].
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum KData {
    /// Floats.
    Float(Vec<f64>),
    /// Integers and bools, as (possibly symbolic) index expressions.
    Int(Vec<Expr>),
}

impl Known {
    /// A known tensor from a decoded one.
    pub fn from_host(t: &HostTensor) -> Known {
        let data = match &t.data {
            HostData::Float(v) => KData::Float(v.clone()),
            HostData::Int(v) => KData::Int(v.iter().map(|&x| Expr::Int(x)).collect()),
        };
        Known {
            elem: t.elem,
            shape: t.shape.clone(),
            data,
        }
    }

    /// A 1-D integer tensor.
    pub fn ints(elem: ElemType, v: Vec<Expr>) -> Known {
        Known {
            elem,
            shape: vec![v.len()],
            data: KData::Int(v),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match &self.data {
            KData::Float(v) => v.len(),
            KData::Int(v) => v.len(),
        }
    }

    /// The elements as index expressions (floats must be integral).
    pub fn exprs(&self) -> Result<Vec<Expr>, String> {
        match &self.data {
            KData::Int(v) => Ok(v.clone()),
            KData::Float(v) => v
                .iter()
                .map(|&x| {
                    if x.fract() == 0.0 && x.abs() < 9.0e15 {
                        Ok(Expr::Int(x as i64))
                    } else {
                        Err(format!("{x} is not an integer"))
                    }
                })
                .collect(),
        }
    }

    /// The elements as integers (symbolic ones are an error).
    pub fn int_values(&self) -> Result<Vec<i64>, String> {
        self.exprs()?
            .iter()
            .map(|e| {
                e.simplify()
                    .as_int()
                    .ok_or_else(|| format!("`{e}` is not a number known at import"))
            })
            .collect()
    }

    /// The elements as numbers (symbolic integers are an error).
    pub fn float_values(&self) -> Result<Vec<f64>, String> {
        match &self.data {
            KData::Float(v) => Ok(v.clone()),
            KData::Int(_) => Ok(self.int_values()?.iter().map(|&x| x as f64).collect()),
        }
    }
}

/// `a op b` simplified.
pub(crate) fn bin(op: IndexOp, a: &Expr, b: &Expr) -> Expr {
    Expr::bin(op, a.clone(), b.clone()).simplify()
}

/// The product of `dims`.
pub(crate) fn product(dims: &[Expr]) -> Expr {
    dims.iter()
        .fold(Expr::Int(1), |acc, d| bin(IndexOp::Mul, &acc, d))
}

/// Axis `axis` (negative counts from the end) of a rank-`rank` tensor.
pub(crate) fn norm_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = rank as i64;
    let a = if axis < 0 {
        axis.saturating_add(r)
    } else {
        axis
    };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(format!("axis {axis} is out of range for rank {rank}"))
    }
}

/// The most elements a tensor folded at import may have (Range, ConstantOfShape,
/// OneHot's classes): larger ones are errors, not allocations.
pub(crate) const MAX_FOLDED: usize = 1 << 24;

/// The element count of `shape`, or an error when it overflows or exceeds
/// [`MAX_FOLDED`].
pub(crate) fn folded_count(shape: &[usize]) -> Result<usize, String> {
    shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .filter(|&c| c <= MAX_FOLDED)
        .ok_or_else(|| format!("a tensor of shape {shape:?} is too large to fold at import"))
}

/// Row-major strides of `shape`.
pub(crate) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

/// Numpy broadcast of two shapes of index expressions.
pub(crate) fn broadcast(a: &[Expr], b: &[Expr]) -> Result<Vec<Expr>, String> {
    let r = a.len().max(b.len());
    let one = Expr::Int(1);
    (0..r)
        .map(|k| {
            let x = if k + a.len() >= r {
                &a[k + a.len() - r]
            } else {
                &one
            };
            let y = if k + b.len() >= r {
                &b[k + b.len() - r]
            } else {
                &one
            };
            if *x == one {
                Ok(y.clone())
            } else if *y == one || x == y {
                Ok(x.clone())
            } else if let (Some(p), Some(q)) = (x.as_int(), y.as_int()) {
                Err(format!("sizes {p} and {q} do not broadcast"))
            } else {
                Ok(x.clone())
            }
        })
        .collect()
}
