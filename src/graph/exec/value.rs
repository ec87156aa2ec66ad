//! Run-time values: typed element buffers with a concrete shape, and the one function
//! that gives a value its storage ([`storage`]).
//!
//! A value's elements live behind an `Arc`, so passing a value through (a `chunk`, a
//! `case` pass-through, a sub-function's argument) shares it instead of copying.
//! A buffer is written only when nothing else holds it: [`storage`] reuses the buffer a
//! slot already has when it is the only holder and has the right type and length, and
//! allocates otherwise. Slots persist across the iterations of a `while` and across
//! runs of an [`Executable`](crate::graph::Executable), so a loop whose carried values
//! keep their shapes allocates in its first iteration only.

use std::sync::Arc;

use uop_codegen::backend::cranelift::{Input, Output};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

/// Elements of one value, row-major.
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
    fn zeros(dtype: DType, n: usize) -> Buf {
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

    /// Element `i` as f64 (conditions, selectors, indexes).
    pub(crate) fn get(&self, i: usize) -> Option<f64> {
        match self {
            Buf::F32(v) => v.get(i).map(|&x| f64::from(x)),
            Buf::F64(v) => v.get(i).copied(),
            Buf::I32(v) => v.get(i).map(|&x| f64::from(x)),
        }
    }

    /// The elements as a JIT kernel input.
    pub(crate) fn input(&self) -> Input<'_> {
        match self {
            Buf::F32(v) => Input::F32(v),
            Buf::F64(v) => Input::F64(v),
            Buf::I32(v) => Input::I32(v),
        }
    }

    /// The elements as a JIT kernel output (kernels write f32 and f64 only).
    pub(crate) fn output(&mut self) -> Option<Output<'_>> {
        match self {
            Buf::F32(v) => Some(Output::F32(v)),
            Buf::F64(v) => Some(Output::F64(v)),
            Buf::I32(_) => None,
        }
    }

    /// Copies `src` (of the same type) into `self` at element `at`.
    pub(crate) fn copy_from(&mut self, at: usize, src: &Buf) -> bool {
        fn put<T: Copy>(dst: &mut [T], at: usize, src: &[T]) -> bool {
            match dst.get_mut(at..at + src.len()) {
                Some(d) => {
                    d.copy_from_slice(src);
                    true
                }
                None => false,
            }
        }
        match (self, src) {
            (Buf::F32(d), Buf::F32(s)) => put(d, at, s),
            (Buf::F64(d), Buf::F64(s)) => put(d, at, s),
            (Buf::I32(d), Buf::I32(s)) => put(d, at, s),
            _ => false,
        }
    }

    /// Overwrites the elements with `data` (same length), rounding to the type.
    fn fill_from(&mut self, data: &[f64]) {
        match self {
            Buf::F32(v) => v.iter_mut().zip(data).for_each(|(d, &s)| *d = s as f32),
            Buf::F64(v) => v.copy_from_slice(data),
            Buf::I32(v) => v.iter_mut().zip(data).for_each(|(d, &s)| *d = s as i32),
        }
    }

    /// The elements as f64.
    fn to_f64(&self) -> Vec<f64> {
        match self {
            Buf::F32(v) => v.iter().map(|&x| f64::from(x)).collect(),
            Buf::F64(v) => v.clone(),
            Buf::I32(v) => v.iter().map(|&x| f64::from(x)).collect(),
        }
    }
}

/// A value: a shape and shared elements.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Value {
    /// The concrete shape.
    pub shape: Vec<usize>,
    /// The elements.
    pub data: Arc<Buf>,
}

impl Value {
    /// The element type.
    pub(crate) fn dtype(&self) -> DType {
        self.data.dtype()
    }

    /// A value holding a tensor's elements.
    pub(crate) fn from_tensor(t: &Tensor) -> Value {
        let mut buf = Buf::zeros(t.dtype, t.data.len());
        buf.fill_from(&t.data);
        Value {
            shape: t.shape.clone(),
            data: Arc::new(buf),
        }
    }

    /// The value as a tensor.
    pub(crate) fn to_tensor(&self) -> Tensor {
        Tensor {
            dtype: self.dtype(),
            shape: self.shape.clone(),
            data: self.data.to_f64(),
        }
    }
}

/// Storage for a value of `dtype` and `shape` in `slot`, ready to be written: the
/// buffer the slot holds when nothing else shares it and it has the type and length,
/// else a new one. Every buffer the executor writes comes from here.
pub(crate) fn storage<'s>(
    slot: &'s mut Option<Value>,
    dtype: DType,
    shape: &[usize],
) -> &'s mut Buf {
    let n: usize = shape.iter().product();
    let value = match slot.take() {
        Some(mut v)
            // No weak references exist: one strong count means unshared.
            if v.dtype() == dtype && v.data.len() == n && Arc::strong_count(&v.data) == 1 =>
        {
            if v.shape != shape {
                v.shape = shape.to_vec();
            }
            v
        }
        _ => Value {
            shape: shape.to_vec(),
            data: Arc::new(Buf::zeros(dtype, n)),
        },
    };
    // Unshared by construction, so this never copies.
    Arc::make_mut(&mut slot.insert(value).data)
}

/// Writes the elements of `t` into `slot` (reusing its buffer when it can).
pub(crate) fn store_tensor(slot: &mut Option<Value>, t: &Tensor) {
    storage(slot, t.dtype, &t.shape).fill_from(&t.data);
}
