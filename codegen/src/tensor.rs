//! Dense row-major tensors with concrete shapes, as the interpreters see them.
//!
//! Values are held as `f64` whatever the element type; an f32 or i32 tensor only
//! ever holds values its type can represent (see [`DType::round`]).

use rand::{Rng, SeedableRng, rngs::StdRng};
use thiserror::Error;
use uop_runtime::{MemoryError, try_filled};

use crate::sizes::element_count;

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

/// Row-major strides of a shape, in elements (saturating: a shape with an empty
/// axis may have strides no index reaches).
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1usize; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1].saturating_mul(shape[k + 1]);
    }
    s
}

/// The row-major multi-index of the flat position `flat` in `shape` (an empty
/// axis takes index 0).
pub fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (k, &n) in shape.iter().enumerate().rev() {
        if n > 0 {
            index[k] = flat % n;
            flat /= n;
        }
    }
    index
}

impl Tensor {
    /// A tensor from data, rounded to `dtype`; the length must match the shape.
    pub fn new(dtype: DType, shape: Vec<usize>, data: Vec<f64>) -> Result<Self, ShapeError> {
        // A shape with too many elements matches no data.
        let expected = element_count(&shape).unwrap_or(usize::MAX);
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
    ///
    /// # Panics
    ///
    /// If the memory cannot be had: for sizes that come from a user, use
    /// [`Tensor::try_filled`].
    pub fn filled(dtype: DType, shape: Vec<usize>, value: f64) -> Self {
        Tensor::try_filled("tensor", dtype, shape, value).unwrap_or_else(|e| panic!("{e}"))
    }

    /// A tensor of zeros (panics as [`Tensor::filled`] does).
    pub fn zeros(dtype: DType, shape: Vec<usize>) -> Self {
        Tensor::filled(dtype, shape, 0.0)
    }

    /// A tensor named `name` (for messages) with every element `value`; a shape
    /// with too many elements or memory the system refuses is an error, never an
    /// abort. Callers account for the bytes first ([`crate::sizes::account`]).
    pub fn try_filled(
        name: &str,
        dtype: DType,
        shape: Vec<usize>,
        value: f64,
    ) -> Result<Self, MemoryError> {
        let n = element_count(&shape).ok_or_else(|| MemoryError::TooLarge {
            what: name.to_string(),
            elements: shape
                .iter()
                .try_fold(1u64, |n, &d| n.checked_mul(d as u64))
                .unwrap_or(u64::MAX),
            element_size: std::mem::size_of::<f64>() as u64,
        })?;
        let data = try_filled(name, n, dtype.round(value))?;
        Ok(Tensor { dtype, shape, data })
    }

    /// Seeded random data: floats uniform in [-2, 2), i32 uniform in [0, 4)
    /// (panics as [`Tensor::filled`] does).
    pub fn random(dtype: DType, shape: Vec<usize>, seed: u64) -> Self {
        Tensor::try_random("tensor", dtype, shape, seed).unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Tensor::random`] for a tensor named `name`, an error rather than an abort
    /// when the memory cannot be had.
    pub fn try_random(
        name: &str,
        dtype: DType,
        shape: Vec<usize>,
        seed: u64,
    ) -> Result<Self, MemoryError> {
        let mut t = Tensor::try_filled(name, dtype, shape, 0.0)?;
        let mut rng = StdRng::seed_from_u64(seed);
        for v in &mut t.data {
            *v = match dtype {
                DType::I32 => rng.random_range(0..4) as f64,
                _ => dtype.round(rng.random_range(-2.0..2.0)),
            };
        }
        Ok(t)
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
///
/// # Panics
///
/// If `shape` has more elements than [`element_count`] allows: shapes are checked
/// when they are made concrete ([`crate::sizes::concrete_shape`]).
pub fn indices(shape: &[usize]) -> impl Iterator<Item = Vec<i64>> + '_ {
    let total = element_count(shape).expect("shapes are checked when they become concrete");
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
