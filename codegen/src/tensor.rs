//! Dense row-major tensors with concrete shapes, as the interpreters see them.
//!
//! Values are held as `f64` whatever the element type; an f32 or i32 tensor only
//! ever holds values its type can represent (see [`DType::round`]).

use rand::{Rng, SeedableRng, rngs::StdRng};
use thiserror::Error;

use crate::uop::DType;

/// A tensor whose data does not match its shape.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("a tensor of shape {shape:?} needs {expected} values, got {found}")]
pub struct ShapeError {
    /// The shape.
    pub shape: Vec<usize>,
    /// Product of the shape.
    pub expected: usize,
    /// Length of the data.
    pub found: usize,
}

/// A dense, row-major tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Element type.
    pub dtype: DType,
    /// Size of each axis (empty for a scalar).
    pub shape: Vec<usize>,
    /// `shape.iter().product()` values, row-major.
    pub data: Vec<f64>,
}

/// Row-major strides of a shape, in elements.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}

impl Tensor {
    /// A tensor from data, rounded to `dtype`; the length must match the shape.
    pub fn new(dtype: DType, shape: Vec<usize>, data: Vec<f64>) -> Result<Self, ShapeError> {
        let expected: usize = shape.iter().product();
        if data.len() != expected {
            return Err(ShapeError {
                shape,
                expected,
                found: data.len(),
            });
        }
        let data = data.into_iter().map(|v| dtype.round(v)).collect();
        Ok(Tensor { dtype, shape, data })
    }

    /// A tensor with every element `value`.
    pub fn filled(dtype: DType, shape: Vec<usize>, value: f64) -> Self {
        let n = shape.iter().product();
        Tensor {
            dtype,
            shape,
            data: vec![dtype.round(value); n],
        }
    }

    /// A tensor of zeros.
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Self {
        Tensor::filled(dtype, shape, 0.0)
    }

    /// Seeded random data: floats uniform in [-2, 2), i32 uniform in [0, 4).
    pub fn random(dtype: DType, shape: Vec<usize>, seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let n: usize = shape.iter().product();
        let data = (0..n)
            .map(|_| match dtype {
                DType::I32 => rng.random_range(0..4) as f64,
                _ => dtype.round(rng.random_range(-2.0..2.0)),
            })
            .collect();
        Tensor { dtype, shape, data }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when the tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Row-major offset of a multi-index, or `None` if any coordinate is out of range.
    pub fn offset(&self, index: &[i64]) -> Option<usize> {
        debug_assert_eq!(index.len(), self.shape.len());
        let mut off = 0usize;
        for (&i, &n) in index.iter().zip(&self.shape) {
            if i < 0 || i as usize >= n {
                return None;
            }
            off = off * n + i as usize;
        }
        Some(off)
    }

    /// The element at a multi-index, `None` if out of range.
    pub fn get(&self, index: &[i64]) -> Option<f64> {
        self.offset(index).map(|o| self.data[o])
    }

    /// Largest absolute difference to `other` where both are finite; `None` if shapes differ
    /// or non-finite values (NaN, ±inf) are not in the same places.
    pub fn max_abs_diff(&self, other: &Tensor) -> Option<f64> {
        if self.shape != other.shape {
            return None;
        }
        let mut worst = 0.0f64;
        for (a, b) in self.data.iter().zip(&other.data) {
            if a.is_finite() && b.is_finite() {
                worst = worst.max((a - b).abs());
            } else if !(a.is_nan() && b.is_nan()) && a != b {
                return None;
            }
        }
        Some(worst)
    }
}

/// Every multi-index of `shape`, row-major (one empty index for rank 0).
pub fn indices(shape: &[usize]) -> impl Iterator<Item = Vec<i64>> + '_ {
    let total: usize = shape.iter().product();
    let st = strides(shape);
    (0..total).map(move |flat| {
        st.iter()
            .zip(shape)
            .map(|(&s, &n)| ((flat / s) % n.max(1)) as i64)
            .collect()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_row_major() {
        let all: Vec<_> = indices(&[2, 3]).collect();
        assert_eq!(all.len(), 6);
        assert_eq!(all[4], vec![1, 1]);
        assert_eq!(indices(&[]).collect::<Vec<_>>(), vec![Vec::<i64>::new()]);
        assert_eq!(indices(&[2, 0]).count(), 0);
    }

    #[test]
    fn out_of_range_is_none() {
        let t = Tensor::zeros(DType::F32, vec![2, 3]);
        assert_eq!(t.offset(&[1, 2]), Some(5));
        assert_eq!(t.offset(&[1, 3]), None);
        assert_eq!(t.offset(&[-1, 0]), None);
    }
}
