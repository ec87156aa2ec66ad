//! Kernels compiled ahead of time and linked like C code: `build.rs` turns uop
//! programs into machine code with Cranelift, archives the object files into a
//! static library and writes their `extern "C"` declarations, which [`ffi`]
//! includes. No compiler runs when this crate's code does.
//!
//! The functions at the top level are the safe way in: they check ranks and slice
//! lengths, let the kernel's own shapes function check and compute the sizes,
//! allocate the outputs and turn a kernel's return code into an [`Error`].
//!
//! ```
//! let c = uop_example_aot::matmul(&[1.0, 2.0], [1, 2], &[3.0, 4.0], [2, 1])?;
//! assert_eq!((c.shape, c.data), (vec![1, 1], vec![11.0]));
//! # Ok::<(), uop_example_aot::Error>(())
//! ```

use std::ffi::c_void;

pub mod ffi {
    //! The declarations `build.rs` generated: per kernel `NAME` the functions
    //! `NAME_shapes` and `NAME` (the C ABI of
    //! `uop_cranelift::abi`), the constants `NAME_INPUT_RANKS`,
    //! `NAME_NUM_PARAMS`, `NAME_OUTPUT_RANKS`, and the return codes `UOP_*`.
    include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
}

/// A row-major f32 array.
#[derive(Clone, Debug, PartialEq)]
pub struct Array {
    /// Sizes, outermost axis first.
    pub shape: Vec<usize>,
    /// The elements (as many as the product of `shape`).
    pub data: Vec<f32>,
}

/// Why a kernel did not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// An input has the wrong number of axes.
    Rank {
        /// Input position.
        input: usize,
        /// Declared rank.
        expected: usize,
        /// Rank of the given shape.
        found: usize,
    },
    /// An input slice's length differs from the product of its shape.
    Length {
        /// Input position.
        input: usize,
        /// Product of the shape.
        expected: usize,
        /// Slice length.
        found: usize,
    },
    /// Sizes too large for the kernel's 64-bit sizes or for memory.
    TooLarge,
    /// The kernel refused the sizes or params: one of the `UOP_ERR_*` codes of [`ffi`].
    Kernel(i32),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Rank {
                input,
                expected,
                found,
            } => write!(f, "input {input} must have {expected} axes, got {found}"),
            Error::Length {
                input,
                expected,
                found,
            } => write!(
                f,
                "input {input} has {expected} elements by its shape, but its slice has {found}"
            ),
            Error::TooLarge => write!(f, "the sizes are too large"),
            Error::Kernel(code) => write!(f, "the kernel returned error code {code}"),
        }
    }
}

impl std::error::Error for Error {}

type ShapesFn = unsafe extern "C" fn(*const i64, *const i64, *mut i64) -> i32;
type KernelFn = unsafe extern "C" fn(
    *const *const c_void,
    *const i64,
    *const i64,
    *const *mut c_void,
    *const i64,
) -> i32;

/// One linked kernel: its two entry points and the ranks they read and write.
struct Linked {
    shapes: ShapesFn,
    run: KernelFn,
    input_ranks: &'static [usize],
    num_params: usize,
    output_ranks: &'static [usize],
}

/// The number of elements of a shape, `None` beyond what the kernels' `i64`
/// index arithmetic takes.
fn elements(shape: &[usize]) -> Option<usize> {
    uop_runtime::elements(shape)
}

fn check(code: i32) -> Result<(), Error> {
    if code == ffi::UOP_OK {
        Ok(())
    } else {
        Err(Error::Kernel(code))
    }
}

impl Linked {
    fn call(&self, inputs: &[(&[f32], &[usize])], params: &[i64]) -> Result<Vec<Array>, Error> {
        // The wrappers below fix the arity; a mismatch is a bug in this file.
        assert_eq!(inputs.len(), self.input_ranks.len(), "input count");
        assert_eq!(params.len(), self.num_params, "param count");
        let mut input_dims = Vec::new();
        for (k, ((data, shape), &rank)) in inputs.iter().zip(self.input_ranks).enumerate() {
            if shape.len() != rank {
                return Err(Error::Rank {
                    input: k,
                    expected: rank,
                    found: shape.len(),
                });
            }
            let expected = elements(shape).ok_or(Error::TooLarge)?;
            if data.len() != expected {
                return Err(Error::Length {
                    input: k,
                    expected,
                    found: data.len(),
                });
            }
            for &d in *shape {
                input_dims.push(i64::try_from(d).map_err(|_| Error::TooLarge)?);
            }
        }
        let mut output_dims = vec![0i64; self.output_ranks.iter().sum()];
        // SAFETY: `input_dims` holds every input's sizes for its declared rank,
        // `params` the declared number of params and `output_dims` room for every
        // output's sizes: exactly what the shapes function reads and writes.
        check(unsafe {
            (self.shapes)(
                input_dims.as_ptr(),
                params.as_ptr(),
                output_dims.as_mut_ptr(),
            )
        })?;
        let mut outputs = Vec::with_capacity(self.output_ranks.len());
        let mut at = 0;
        for &rank in self.output_ranks {
            let shape = output_dims[at..at + rank]
                .iter()
                .map(|&d| usize::try_from(d).map_err(|_| Error::TooLarge))
                .collect::<Result<Vec<usize>, Error>>()?;
            at += rank;
            let n = elements(&shape).ok_or(Error::TooLarge)?;
            outputs.push(Array {
                shape,
                data: vec![0.0; n],
            });
        }
        let input_ptrs: Vec<*const c_void> =
            inputs.iter().map(|(d, _)| d.as_ptr().cast()).collect();
        let output_ptrs: Vec<*mut c_void> = outputs
            .iter_mut()
            .map(|a| a.data.as_mut_ptr().cast())
            .collect();
        // SAFETY: every input slice holds the elements of its checked shape, every
        // output was sized by the kernel's own shapes function and is freshly
        // allocated (so nothing overlaps), and the kernel checks all sizes again
        // before touching memory.
        check(unsafe {
            (self.run)(
                input_ptrs.as_ptr(),
                input_dims.as_ptr(),
                params.as_ptr(),
                output_ptrs.as_ptr(),
                output_dims.as_ptr(),
            )
        })?;
        Ok(outputs)
    }

    fn call_one(&self, inputs: &[(&[f32], &[usize])], params: &[i64]) -> Result<Array, Error> {
        let mut outputs = self.call(inputs, params)?;
        // Every kernel of this crate has one output, so the shapes function wrote one.
        outputs
            .pop()
            .ok_or(Error::Kernel(ffi::UOP_ERR_OUTPUT_SHAPE))
    }
}

const MATMUL: Linked = Linked {
    shapes: ffi::matmul_shapes,
    run: ffi::matmul,
    input_ranks: &ffi::MATMUL_INPUT_RANKS,
    num_params: ffi::MATMUL_NUM_PARAMS,
    output_ranks: &ffi::MATMUL_OUTPUT_RANKS,
};

const SOFTMAX: Linked = Linked {
    shapes: ffi::softmax_shapes,
    run: ffi::softmax,
    input_ranks: &ffi::SOFTMAX_INPUT_RANKS,
    num_params: ffi::SOFTMAX_NUM_PARAMS,
    output_ranks: &ffi::SOFTMAX_OUTPUT_RANKS,
};

const LAYERNORM: Linked = Linked {
    shapes: ffi::layernorm_shapes,
    run: ffi::layernorm,
    input_ranks: &ffi::LAYERNORM_INPUT_RANKS,
    num_params: ffi::LAYERNORM_NUM_PARAMS,
    output_ranks: &ffi::LAYERNORM_OUTPUT_RANKS,
};

const PAD: Linked = Linked {
    shapes: ffi::pad_shapes,
    run: ffi::pad,
    input_ranks: &ffi::PAD_INPUT_RANKS,
    num_params: ffi::PAD_NUM_PARAMS,
    output_ranks: &ffi::PAD_OUTPUT_RANKS,
};

/// `c[M, N] = a[M, K] · b[K, N]` (`prebuilt/kernels/matmul.uop`).
pub fn matmul(
    a: &[f32],
    a_shape: [usize; 2],
    b: &[f32],
    b_shape: [usize; 2],
) -> Result<Array, Error> {
    MATMUL.call_one(&[(a, &a_shape), (b, &b_shape)], &[])
}

/// Softmax over the rows of `x[B, N]` (`prebuilt/kernels/softmax.uop`).
pub fn softmax(x: &[f32], shape: [usize; 2]) -> Result<Array, Error> {
    SOFTMAX.call_one(&[(x, &shape)], &[])
}

/// Layer normalization of the rows of `x[B, N]` with scale `gamma[N]` and shift
/// `beta[N]`, epsilon 1e-5 (`prebuilt/kernels/layernorm.uop`).
pub fn layernorm(
    x: &[f32],
    shape: [usize; 2],
    gamma: &[f32],
    beta: &[f32],
) -> Result<Array, Error> {
    let (g, b) = ([gamma.len()], [beta.len()]);
    LAYERNORM.call_one(&[(x, &shape), (gamma, &g), (beta, &b)], &[])
}

/// `x[N]` with `p` zeros added on both sides (`programs/pad.uop`); a negative `p`
/// crops, and cropping more than there is fails with `UOP_ERR_NEGATIVE_SIZE`.
pub fn pad(x: &[f32], p: i64) -> Result<Array, Error> {
    PAD.call_one(&[(x, &[x.len()])], &[p])
}
