//! Calling a JIT kernel: on tensors ([`Kernel::run`]), on slices
//! ([`Kernel::run_slices`]) or on buffers given by address ([`Kernel::run_ptrs`]).
//!
//! Every call binds the kernel's [`Signature`] to its input shapes and `$params` once
//! ([`Signature::bind`]: ranks, sizes, shared dims, assertions, every element and byte
//! count checked) and accounts its memory once ([`Bound::check_run`]); then each
//! buffer's type and length is checked against the bound extents and the machine
//! code runs. [`Kernel::check`] does the binding and accounting alone and gives a
//! [`Checked`] call that runs any number of times on buffers of those shapes
//! ([`Checked::run_ptrs`]) without binding again: the graph executor binds each
//! kernel once per input shapes so.

use std::collections::HashMap;
use std::sync::Arc;

use crate::buffers::Buffer;
use crate::run::RunError;
use crate::signature::{Bound, Extent, RunBuffers};
use crate::tensor::Tensor;
use crate::uop::DType;
use crate::{Compiled, Kernel, Status};

/// An input of [`Kernel::run_slices`]: elements, row-major.
#[derive(Clone, Copy, Debug)]
pub enum Input<'a> {
    /// f32 elements.
    F32(&'a [f32]),
    /// f64 elements.
    F64(&'a [f64]),
    /// i32 elements (index tensors).
    I32(&'a [i32]),
}

/// An output of [`Kernel::run_slices`]: room for the elements, row-major.
#[derive(Debug)]
pub enum Output<'a> {
    /// f32 elements.
    F32(&'a mut [f32]),
    /// f64 elements.
    F64(&'a mut [f64]),
    /// i32 elements (an index output, such as `argmax`'s of an i32 program).
    I32(&'a mut [i32]),
}

impl Input<'_> {
    fn dtype(&self) -> DType {
        match self {
            Input::F32(_) => DType::F32,
            Input::F64(_) => DType::F64,
            Input::I32(_) => DType::I32,
        }
    }
    fn len(&self) -> usize {
        match self {
            Input::F32(s) => s.len(),
            Input::F64(s) => s.len(),
            Input::I32(s) => s.len(),
        }
    }
    fn ptr(&self) -> *const u8 {
        match self {
            Input::F32(s) => s.as_ptr().cast(),
            Input::F64(s) => s.as_ptr().cast(),
            Input::I32(s) => s.as_ptr().cast(),
        }
    }
}

impl Output<'_> {
    fn dtype(&self) -> DType {
        match self {
            Output::F32(_) => DType::F32,
            Output::F64(_) => DType::F64,
            Output::I32(_) => DType::I32,
        }
    }
    fn len(&self) -> usize {
        match self {
            Output::F32(s) => s.len(),
            Output::F64(s) => s.len(),
            Output::I32(s) => s.len(),
        }
    }
    fn ptr(&mut self) -> *mut u8 {
        match self {
            Output::F32(s) => s.as_mut_ptr().cast(),
            Output::F64(s) => s.as_mut_ptr().cast(),
            Output::I32(s) => s.as_mut_ptr().cast(),
        }
    }
}

/// A buffer of [`Kernel::run_ptrs`] given by address: `len` elements of `dtype` at
/// `ptr`. Unlike [`Input`] and [`Output`] it borrows nothing, so an output may alias an
/// input (an element-wise kernel writing in place).
#[derive(Clone, Copy, Debug)]
pub struct RawBuffer {
    /// The element type.
    pub dtype: DType,
    /// The first element (aligned for `dtype`).
    pub ptr: *mut u8,
    /// Number of elements.
    pub len: usize,
}

/// A call of one kernel bound to concrete input shapes and `$params`, every check
/// that does not depend on the buffers passed: the signature bound
/// ([`Signature::bind`](crate::signature::Signature::bind)) and the memory of its
/// temporaries accounted ([`Bound::check_run`]). Made by [`Kernel::check`]; runs
/// with [`Checked::run_ptrs`] on any buffers of those shapes, as often as wanted.
#[derive(Clone)]
pub struct Checked {
    compiled: Arc<Compiled>,
    bound: Bound,
    /// The `$params`' values in the signature's order.
    params: Vec<i64>,
    /// Every input's dims, in order, as the machine code takes them.
    input_dims: Vec<i64>,
    /// Every output's dims, in order.
    output_dims: Vec<i64>,
}

/// The most buffers on each side of a call whose addresses [`Checked::run_ptrs`]
/// passes from the stack (a call with more allocates their list).
const STACK_BUFFERS: usize = 16;

impl std::fmt::Debug for Checked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checked")
            .field("bound", &self.bound)
            .field("params", &self.params)
            .finish_non_exhaustive()
    }
}

impl Kernel {
    /// The output shapes for the given input shapes and params (checks them all,
    /// every element and byte count included).
    pub fn output_shapes(
        &self,
        input_shapes: &[&[usize]],
        params: &HashMap<String, i64>,
    ) -> Result<Vec<Vec<usize>>, RunError> {
        Ok(self
            .compiled
            .signature
            .bind(input_shapes, params)?
            .output_shapes())
    }

    /// Binds this kernel to `input_shapes` and `params` and accounts the memory of
    /// its temporaries: a call ready to run on buffers of those shapes.
    ///
    /// # Errors
    ///
    /// As [`Signature::bind`](crate::signature::Signature::bind) and
    /// [`Bound::check_run`].
    pub fn check(
        &self,
        input_shapes: &[&[usize]],
        params: &HashMap<String, i64>,
    ) -> Result<Checked, RunError> {
        let bound = self.compiled.signature.bind(input_shapes, params)?;
        bound.check_run(&self.compiled.program, RunBuffers::Borrowed)?;
        Ok(self.checked(bound, params))
    }

    /// `bound` (checked) as a call of this kernel.
    fn checked(&self, bound: Bound, params: &HashMap<String, i64>) -> Checked {
        // `bind` checked that every `$param` has a value.
        let params = self
            .compiled
            .signature
            .params
            .iter()
            .map(|n| params.get(n).copied().unwrap_or(0))
            .collect();
        // Every size is at most `i64::MAX` (checked by `bind`): the casts are exact.
        let dims = |extents: &[Extent]| -> Vec<i64> {
            extents
                .iter()
                .flat_map(|e| e.shape.iter().map(|&d| d as i64))
                .collect()
        };
        Checked {
            compiled: Arc::clone(&self.compiled),
            input_dims: dims(&bound.inputs),
            output_dims: dims(&bound.outputs),
            bound,
            params,
        }
    }

    /// Runs on tensors, returning the outputs (like [`interp::run_loops`](uop_codegen::interp::run_loops)).
    pub fn run(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<Vec<Tensor>, RunError> {
        let sig = &self.compiled.signature;
        let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
        // Bound before anything is allocated: a size that overflows is refused here.
        let bound = sig.bind(&shapes, params)?;
        for (t, spec) in inputs.iter().zip(&sig.inputs) {
            if t.dtype != spec.dtype {
                return Err(RunError::InputType {
                    input: spec.name.clone(),
                    expected: spec.dtype,
                    found: t.dtype,
                });
            }
        }
        // Every buffer of the run is accounted against the memory limit, and every
        // loop's iteration count checked, before anything is allocated.
        bound.check_run(&self.compiled.program, RunBuffers::Owned)?;
        let checked = self.checked(bound, params);
        let buffers: Vec<Buffer> = inputs
            .iter()
            .zip(&sig.inputs)
            .map(|(t, spec)| Buffer::copy_of(&spec.name, t))
            .collect::<Result<_, _>>()?;
        let mut outs: Vec<Buffer> = sig
            .outputs
            .iter()
            .zip(&checked.bound.outputs)
            .map(|(spec, extent)| Buffer::zeroed(&spec.name, spec.dtype, extent.elements))
            .collect::<Result<_, _>>()?;
        {
            let ins: Vec<Input<'_>> = buffers.iter().map(Buffer::input).collect();
            let mut slices: Vec<Output<'_>> = outs.iter_mut().map(Buffer::output).collect();
            checked.run_slices(&ins, &mut slices)?;
        }
        outs.into_iter()
            .zip(&sig.outputs)
            .zip(checked.bound.output_shapes())
            .map(|((buffer, spec), shape)| {
                Ok(Tensor {
                    dtype: spec.dtype,
                    shape,
                    data: buffer.into_f64(&spec.name)?,
                })
            })
            .collect()
    }

    /// The fast path: runs on borrowed slices, writing into `outputs` (sized by
    /// [`Kernel::output_shapes`]; they need no initialization). Every shape, type,
    /// length and size is checked before the machine code runs.
    pub fn run_slices(
        &self,
        inputs: &[(Input<'_>, &[usize])],
        params: &HashMap<String, i64>,
        outputs: &mut [Output<'_>],
    ) -> Result<(), RunError> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
        let ins: Vec<Input<'_>> = inputs.iter().map(|(i, _)| *i).collect();
        self.check(&shapes, params)?.run_slices(&ins, outputs)
    }

    /// Runs on buffers given by address, writing the outputs where `outputs` point.
    /// Every shape, type and length is checked exactly as [`Kernel::run_slices`]
    /// checks them, before the machine code runs; an error leaves every buffer as it
    /// was.
    ///
    /// # Safety
    ///
    /// - every input's `ptr` is valid for reads, and every output's `ptr` valid for
    ///   writes, of `len` elements of its `dtype`, aligned for that type, for the whole
    ///   call, and nothing else reads or writes those bytes during the call;
    /// - outputs do not overlap each other;
    /// - an output may overlap an input only when both are the **same** buffer (equal
    ///   `ptr` and `len`, same type) and the program is element-wise (output element
    ///   `i` is computed from element `i` of each input only, and each input element
    ///   is read before the output element over it is written) — as the memory plan's
    ///   in-place kernels are; any other overlap gives unspecified results.
    pub unsafe fn run_ptrs(
        &self,
        inputs: &[(RawBuffer, &[usize])],
        params: &HashMap<String, i64>,
        outputs: &[RawBuffer],
    ) -> Result<(), RunError> {
        let shapes: Vec<&[usize]> = inputs.iter().map(|(_, s)| *s).collect();
        let buffers: Vec<RawBuffer> = inputs.iter().map(|(b, _)| *b).collect();
        let checked = self.check(&shapes, params)?;
        // SAFETY: the caller's contract above.
        unsafe { checked.run_ptrs(&buffers, outputs) }
    }
}

impl Checked {
    /// The signature bound: every input's and output's extent.
    pub fn bound(&self) -> &Bound {
        &self.bound
    }

    /// The output shapes, in call order.
    pub fn output_shapes(&self) -> Vec<Vec<usize>> {
        self.bound.output_shapes()
    }

    /// Runs on borrowed slices of the bound shapes (see [`Kernel::run_slices`]).
    fn run_slices(&self, inputs: &[Input<'_>], outputs: &mut [Output<'_>]) -> Result<(), RunError> {
        let inputs: Vec<RawBuffer> = inputs
            .iter()
            .map(|i| RawBuffer {
                dtype: i.dtype(),
                ptr: i.ptr().cast_mut(),
                len: i.len(),
            })
            .collect();
        let outputs: Vec<RawBuffer> = outputs
            .iter_mut()
            .map(|o| RawBuffer {
                dtype: o.dtype(),
                len: o.len(),
                ptr: o.ptr(),
            })
            .collect();
        // SAFETY: shared input slices and exclusively borrowed output slices are
        // valid for their lengths and cannot overlap.
        unsafe { self.run_ptrs(&inputs, &outputs) }
    }

    /// Runs the kernel on buffers given by address, which must hold the bound shapes:
    /// every buffer's type and length is checked against the bound extents before
    /// the machine code runs; an error leaves every buffer as it was.
    ///
    /// # Safety
    ///
    /// The contract of [`Kernel::run_ptrs`].
    pub unsafe fn run_ptrs(
        &self,
        inputs: &[RawBuffer],
        outputs: &[RawBuffer],
    ) -> Result<(), RunError> {
        let sig = &self.compiled.signature;
        if inputs.len() != sig.inputs.len() {
            return Err(RunError::Bind(crate::uop::BindError::InputCount {
                expected: sig.inputs.len(),
                found: inputs.len(),
            }));
        }
        for (input, (spec, extent)) in inputs.iter().zip(sig.inputs.iter().zip(&self.bound.inputs))
        {
            if input.dtype != spec.dtype {
                return Err(RunError::InputType {
                    input: spec.name.clone(),
                    expected: spec.dtype,
                    found: input.dtype,
                });
            }
            if input.len != extent.elements {
                return Err(RunError::Length {
                    what: "input",
                    name: spec.name.clone(),
                    shape: extent.shape.clone(),
                    expected: extent.elements,
                    found: input.len,
                });
            }
        }
        if outputs.len() != sig.outputs.len() {
            return Err(RunError::OutputCount {
                expected: sig.outputs.len(),
                found: outputs.len(),
            });
        }
        for (out, (spec, extent)) in outputs
            .iter()
            .zip(sig.outputs.iter().zip(&self.bound.outputs))
        {
            if out.dtype != spec.dtype {
                return Err(RunError::OutputType {
                    output: spec.name.clone(),
                    expected: spec.dtype,
                    found: out.dtype,
                });
            }
            if out.len != extent.elements {
                return Err(RunError::Length {
                    what: "output",
                    name: spec.name.clone(),
                    shape: extent.shape.clone(),
                    expected: extent.elements,
                    found: out.len,
                });
            }
        }
        // The addresses from the stack (nothing allocated per call) up to
        // `STACK_BUFFERS` a side.
        let mut input_stack = [std::ptr::null::<u8>(); STACK_BUFFERS];
        let mut output_stack = [std::ptr::null_mut::<u8>(); STACK_BUFFERS];
        let input_heap: Vec<*const u8>;
        let output_heap: Vec<*mut u8>;
        let input_ptrs: &[*const u8] = if inputs.len() <= STACK_BUFFERS {
            for (p, i) in input_stack.iter_mut().zip(inputs) {
                *p = i.ptr.cast_const();
            }
            &input_stack[..inputs.len()]
        } else {
            input_heap = inputs.iter().map(|i| i.ptr.cast_const()).collect();
            &input_heap
        };
        let output_ptrs: &[*mut u8] = if outputs.len() <= STACK_BUFFERS {
            for (p, o) in output_stack.iter_mut().zip(outputs) {
                *p = o.ptr;
            }
            &output_stack[..outputs.len()]
        } else {
            output_heap = outputs.iter().map(|o| o.ptr).collect();
            &output_heap
        };
        // SAFETY: every pointer is valid for the element count its checked shape
        // gives and overlaps only as the caller's contract allows; `bind` checked
        // every element and byte count, and the kernel re-checks all sizes itself
        // before touching memory. The kernel writes only through the output
        // pointers, not into the lists.
        let code = unsafe {
            (self.compiled.entry)(
                input_ptrs.as_ptr(),
                self.input_dims.as_ptr(),
                self.params.as_ptr(),
                output_ptrs.as_ptr(),
                self.output_dims.as_ptr(),
            )
        };
        match Status::from_code(code) {
            Some(Status::Ok) => Ok(()),
            Some(s) => Err(RunError::Kernel(s)),
            None => Err(RunError::Kernel(Status::IndexArithmetic)),
        }
    }
}
