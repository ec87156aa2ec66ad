//! The owned, typed buffers [`Kernel::run`](super::Kernel::run) copies its tensors
//! into and its outputs out of, allocated with `try_reserve` (an allocation the
//! system refuses is an error, never an abort) after the run's memory was accounted
//! ([`Bound::check_run`](crate::signature::Bound::check_run) with
//! [`RunBuffers::Owned`](crate::signature::RunBuffers::Owned)).

use uop_runtime::{MemoryError, try_filled};

use crate::tensor::Tensor;
use crate::uop::DType;

use super::{Input, Output};

/// An owned, typed copy of a tensor's elements.
pub(super) enum Buffer {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
}

impl Buffer {
    /// `t`'s elements in its own type (`name`: the input, for errors).
    pub(super) fn copy_of(name: &str, t: &Tensor) -> Result<Buffer, MemoryError> {
        let n = t.data.len();
        Ok(match t.dtype {
            DType::F32 => Buffer::F32(filled_from(name, n, t.data.iter().map(|&v| v as f32))?),
            DType::F64 => Buffer::F64(filled_from(name, n, t.data.iter().copied())?),
            DType::I32 => Buffer::I32(filled_from(name, n, t.data.iter().map(|&v| v as i32))?),
        })
    }

    /// `elements` zeros of `dtype` (`name`: the output, for errors).
    pub(super) fn zeroed(name: &str, dtype: DType, elements: usize) -> Result<Buffer, MemoryError> {
        Ok(match dtype {
            DType::F32 => Buffer::F32(try_filled(name, elements, 0.0)?),
            DType::F64 => Buffer::F64(try_filled(name, elements, 0.0)?),
            DType::I32 => Buffer::I32(try_filled(name, elements, 0)?),
        })
    }

    pub(super) fn input(&self) -> Input<'_> {
        match self {
            Buffer::F32(v) => Input::F32(v),
            Buffer::F64(v) => Input::F64(v),
            Buffer::I32(v) => Input::I32(v),
        }
    }

    pub(super) fn output(&mut self) -> Output<'_> {
        match self {
            Buffer::F32(v) => Output::F32(v),
            Buffer::F64(v) => Output::F64(v),
            Buffer::I32(v) => Output::I32(v),
        }
    }

    /// The elements as `f64` (`name`: the output, for errors).
    pub(super) fn into_f64(self, name: &str) -> Result<Vec<f64>, MemoryError> {
        match self {
            Buffer::F32(v) => filled_from(name, v.len(), v.iter().map(|&x| f64::from(x))),
            Buffer::F64(v) => Ok(v),
            Buffer::I32(v) => filled_from(name, v.len(), v.iter().map(|&x| f64::from(x))),
        }
    }
}

/// The `len` values of `values` in a vector allocated with `try_reserve`.
fn filled_from<T>(
    name: &str,
    len: usize,
    values: impl Iterator<Item = T>,
) -> Result<Vec<T>, MemoryError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| MemoryError::AllocationFailed {
            what: name.to_string(),
            bytes: (len as u64).saturating_mul(std::mem::size_of::<T>() as u64),
        })?;
    v.extend(values);
    Ok(v)
}
