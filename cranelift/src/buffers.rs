//! The memory of a JIT kernel's run, accounted before it is taken: the owned,
//! typed buffers [`Kernel::run`](super::Kernel::run) copies its tensors into and
//! its outputs out of, allocated with `try_reserve` (an allocation the system
//! refuses is an error, never an abort), and the checks every entry makes against
//! the process-wide memory limit ([`uop_runtime::memory_limit`]) before anything is
//! allocated.
//!
//! [`check_run`] is what `Kernel::run` accounts: a typed copy of every input, every
//! output twice (the kernel's typed buffer, then the `f64` tensor returned) and the
//! temporaries the machine code allocates. [`check_temporaries`] is what the
//! borrowing entries (`run_slices`, `run_ptrs`) account: their caller holds the
//! inputs and outputs, the kernel allocates only its temporaries.

use uop_runtime::{Ledger, MemoryError, try_filled};

use crate::index::Bindings;
use crate::loops::{LoopProgram, TensorKind};
use crate::run::RunError;
use crate::signature::{Bound, Signature};
use crate::sizes::{account, check_iterations, concrete_shape};
use crate::tensor::Tensor;
use crate::uop::DType;

use super::{Input, Output};

/// Bytes of an `f64`, the element type of every [`Tensor`].
const F64: usize = std::mem::size_of::<f64>();

/// Accounts every buffer `Kernel::run` holds for `program` (of signature `sig`)
/// bound as `bound` (see the
/// module docs) against the memory limit, and checks that no loop nest runs more
/// iterations than index arithmetic counts.
///
/// # Errors
///
/// [`RunError::Memory`] when the buffers need more than the limit, a size error
/// when a temporary's size cannot be had, and an iteration count that overflows.
pub(super) fn check_run(
    program: &LoopProgram,
    sig: &Signature,
    bound: &Bound,
) -> Result<(), RunError> {
    let mut ledger = Ledger::new();
    for (spec, extent) in sig.inputs.iter().zip(&bound.inputs) {
        account(&mut ledger, &spec.name, &extent.shape, spec.dtype.size())?;
    }
    for (spec, extent) in sig.outputs.iter().zip(&bound.outputs) {
        account(
            &mut ledger,
            &spec.name,
            &extent.shape,
            spec.dtype.size() + F64,
        )?;
    }
    add_temporaries(&mut ledger, program, &bound.bindings)?;
    ledger.check()?;
    check_iterations(program, &bound.bindings)?;
    Ok(())
}

/// Accounts the temporaries the machine code of `program` allocates under
/// `bindings` against the memory limit (nothing to do for a program without any).
///
/// # Errors
///
/// As [`check_run`], for the temporaries alone.
pub(super) fn check_temporaries(
    program: &LoopProgram,
    bindings: &Bindings,
) -> Result<(), RunError> {
    if program.tensors.iter().all(|t| t.kind != TensorKind::Temp) {
        return Ok(());
    }
    let mut ledger = Ledger::new();
    add_temporaries(&mut ledger, program, bindings)?;
    Ok(ledger.check()?)
}

/// Adds every temporary of `program` to `ledger` as the machine code stores it: a
/// row-local temporary keeps one row.
fn add_temporaries(
    ledger: &mut Ledger,
    program: &LoopProgram,
    bindings: &Bindings,
) -> Result<(), RunError> {
    for t in program
        .tensors
        .iter()
        .filter(|t| t.kind == TensorKind::Temp)
    {
        let mut shape = concrete_shape(&t.name, &t.shape, bindings)?;
        if let Some(size) = t.row_local.and_then(|axis| shape.get_mut(axis)) {
            *size = 1;
        }
        account(ledger, &t.name, &shape, t.dtype.size())?;
    }
    Ok(())
}

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
