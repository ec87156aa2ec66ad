//! Run-time values: a concrete shape and elements that live either in the run's arena
//! (at the memory plan's offset: every intermediate) or in an owned buffer (the graph's
//! inputs, Consts, the graph's outputs, a `parallel` index).
//!
//! A value is only a shape and a location, so passing it through (a `case`
//! pass-through, a sub-function's argument) shares its elements instead of copying.
//! Where the elements of a value the executor writes come from is decided in one place,
//! [`Memory::place`](crate::memory::Memory::place).

use std::sync::Arc;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

/// The elements of an owned value, row-major.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Buf {
    /// f32 elements.
    F32(Vec<f32>),
    /// f64 elements.
    F64(Vec<f64>),
    /// i32 elements (a `parallel` index).
    I32(Vec<i32>),
}

impl Buf {
    /// `n` zeros of `dtype`.
    pub(crate) fn zeros(dtype: DType, n: usize) -> Buf {
        match dtype {
            DType::F32 => Buf::F32(vec![0.0; n]),
            DType::F64 => Buf::F64(vec![0.0; n]),
            DType::I32 => Buf::I32(vec![0; n]),
        }
    }

    /// The element type.
    pub(crate) fn dtype(&self) -> DType {
        match self {
            Buf::F32(_) => DType::F32,
            Buf::F64(_) => DType::F64,
            Buf::I32(_) => DType::I32,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match self {
            Buf::F32(v) => v.len(),
            Buf::F64(v) => v.len(),
            Buf::I32(v) => v.len(),
        }
    }

    /// The first element's address (for reads).
    pub(crate) fn ptr(&self) -> *const u8 {
        match self {
            Buf::F32(v) => v.as_ptr().cast(),
            Buf::F64(v) => v.as_ptr().cast(),
            Buf::I32(v) => v.as_ptr().cast(),
        }
    }

    /// The first element's address (for writes).
    pub(crate) fn ptr_mut(&mut self) -> *mut u8 {
        match self {
            Buf::F32(v) => v.as_mut_ptr().cast(),
            Buf::F64(v) => v.as_mut_ptr().cast(),
            Buf::I32(v) => v.as_mut_ptr().cast(),
        }
    }

    /// The elements of `t`, rounded to its type.
    pub(crate) fn from_tensor(t: &Tensor) -> Buf {
        match t.dtype {
            DType::F32 => Buf::F32(t.data.iter().map(|&v| v as f32).collect()),
            DType::F64 => Buf::F64(t.data.clone()),
            DType::I32 => Buf::I32(t.data.iter().map(|&v| v as i32).collect()),
        }
    }

    /// Overwrites the elements with `data` (same length), rounding to the type.
    pub(crate) fn fill_from(&mut self, data: &[f64]) {
        match self {
            Buf::F32(v) => v.iter_mut().zip(data).for_each(|(d, &s)| *d = s as f32),
            Buf::F64(v) => v.iter_mut().zip(data).for_each(|(d, &s)| *d = s),
            Buf::I32(v) => v.iter_mut().zip(data).for_each(|(d, &s)| *d = s as i32),
        }
    }
}

/// Where a value's elements are.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Data {
    /// In a buffer of its own, shared by reference counting.
    Owned(Arc<Buf>),
    /// In the run's arena: `len` elements of `dtype` from byte `offset`.
    Arena {
        /// The element type.
        dtype: DType,
        /// The first byte.
        offset: usize,
        /// Number of elements.
        len: usize,
    },
}

/// The most axes a [`Shape`] holds without a heap allocation.
const INLINE_RANK: usize = 6;

/// A value's concrete shape: up to [`INLINE_RANK`] axes held inline, so that making,
/// copying and passing values around (every kernel call, every `while` trip) allocates
/// nothing; a higher rank is shared by reference counting. Reads as a `[usize]`.
#[derive(Clone)]
pub(crate) enum Shape {
    /// `rank` axes in the first entries.
    Inline {
        /// The number of axes.
        rank: u8,
        /// The axes, then zeros.
        dims: [usize; INLINE_RANK],
    },
    /// More axes than fit inline.
    Shared(Arc<[usize]>),
}

impl Shape {
    /// The shape with these axes.
    pub(crate) fn new(dims: &[usize]) -> Shape {
        if dims.len() <= INLINE_RANK {
            let mut inline = [0; INLINE_RANK];
            inline[..dims.len()].copy_from_slice(dims);
            Shape::Inline {
                rank: dims.len() as u8,
                dims: inline,
            }
        } else {
            Shape::Shared(dims.into())
        }
    }
}

impl std::ops::Deref for Shape {
    type Target = [usize];
    fn deref(&self) -> &[usize] {
        match self {
            Shape::Inline { rank, dims } => &dims[..usize::from(*rank)],
            Shape::Shared(dims) => dims,
        }
    }
}

impl PartialEq for Shape {
    fn eq(&self, other: &Shape) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// A value: a concrete shape and where its elements are.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Value {
    /// The concrete shape.
    pub shape: Shape,
    /// The elements.
    pub data: Data,
}

impl Value {
    /// An owned value holding a tensor's elements.
    pub(crate) fn from_tensor(t: &Tensor) -> Value {
        Value {
            shape: Shape::new(&t.shape),
            data: Data::Owned(Arc::new(Buf::from_tensor(t))),
        }
    }

    /// The element type.
    pub(crate) fn dtype(&self) -> DType {
        match &self.data {
            Data::Owned(b) => b.dtype(),
            Data::Arena { dtype, .. } => *dtype,
        }
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        match &self.data {
            Data::Owned(b) => b.len(),
            Data::Arena { len, .. } => *len,
        }
    }

    /// The arena offset, for a value in the arena.
    pub(crate) fn offset(&self) -> Option<usize> {
        match self.data {
            Data::Arena { offset, .. } => Some(offset),
            Data::Owned(_) => None,
        }
    }
}
