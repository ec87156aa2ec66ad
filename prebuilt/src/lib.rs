//! `uop-kernels`: prebuilt kernels, generated at build time from the programs in
//! `kernels/*.uop` by uop's Rust backend (the same path a user's `build.rs` takes, see
//! [`uop_codegen::build::Kernels`]). Each program gives an f32 and an f64 kernel:
//!
//! | kernel | computes |
//! |---|---|
//! | `gelu_chain_f32` | `gelu(x * 0.8 + 0.1)`, tanh form, element-wise over `x[N]` |
//! | `softmax_f32` | softmax over the rows of `x[B, N]` |
//! | `layernorm_f32` | layer normalization of `x[B, N]` with `gamma[N]`, `beta[N]`, eps 1e-5 |
//! | `sum_f32` | the sum of `x[N]`, in order, as `y[1]` |
//! | `column_sum_f32` | column sums of `x[R, C]` as `y[1, C]` |
//! | `matmul_f32` | `a[M, K] · b[K, N]` |
//! | `conv2d_f32` | 3×3 convolution, NCHW, stride 1, zero padding 1: `x[N, C, H, W]`, `k[O, C, 3, 3]` → `y[N, O, H, W]` |
//! | `transpose_f32` | `x[R, C]` → `y[C, R]` |
//! | `relu_f32`, `axpy_f32`, `row_argmax_f32` | `max(x, 0)`; `a[0] * x + y`; first maximum position per row |
//!
//! and the same names ending in `_f64`. The programs call the macro ops of
//! `uop-ops` by name. Every kernel but `row_argmax` has a backward kernel
//! `NAME_grad` (`softmax_f32_grad`), generated from its gradient program w.r.t.
//! every float input: its arguments are the forward inputs it reads, then the seed
//! `g_<output>` (the loss gradient w.r.t. each output), and its outputs are
//! `g_<input>` in input order; each doc comment lists them. Every kernel takes its inputs as slices with
//! their shapes, then its output slices, checks all lengths and dimensions, and
//! returns a [`KernelError`] instead of panicking; `NAME_shapes` gives the output
//! shapes to allocate. A kernel whose loops need memory of their own (softmax's
//! rows, layernorm's and sum's partial results, matmul's packed panel, conv2d's
//! padded rows, some gradients) also has `NAME_with_scratch`, which takes that
//! memory from a [`Scratch`] kept between calls: a call with the shapes of an
//! earlier one on the same scratch allocates nothing.
//!
//! The crate is apart from `uop` so that neither the `uop` command nor a user of
//! `uop::jit` compiles these kernels: `uop` re-exports it as `uop::kernels` with its
//! feature `prebuilt`.
//!
//! ```
//! use uop_kernels::{softmax_f32, softmax_f32_shapes};
//!
//! let x = [1.0f32, 2.0, 3.0, 0.0, 0.0, 0.0];
//! let shapes = softmax_f32_shapes([2, 3])?;
//! let mut y = vec![0.0; shapes.y_len()];
//! softmax_f32(&x, [2, 3], &mut y)?;
//! assert!((y[0] + y[1] + y[2] - 1.0).abs() < 1e-6);
//! assert_eq!(y[3], 1.0 / 3.0);
//! # Ok::<(), uop_kernels::KernelError>(())
//! ```
//!
//! In a loop, keep the scratch:
//!
//! ```
//! use uop_kernels::{Scratch, matmul_f32_with_scratch};
//!
//! let (a, b) = ([1.0f32, 2.0, 3.0, 4.0], [1.0f32, 0.0, 0.0, 1.0]);
//! let mut c = [0.0f32; 4];
//! let scratch = Scratch::new();
//! for _ in 0..3 {
//!     matmul_f32_with_scratch(&scratch, &a, [2, 2], &b, [2, 2], &mut c)?;
//! }
//! assert_eq!(c, a);
//! # Ok::<(), uop_kernels::KernelError>(())
//! ```

include!(concat!(env!("OUT_DIR"), "/kernels.rs"));

/// The thread count of every kernel (the runtime's, shared by all kernel files of
/// the process): see [`uop_runtime::set_threads`].
pub use uop_runtime::{set_threads, threads};

/// The memory the `NAME_with_scratch` kernels take their loops' buffers from (the
/// runtime's, see [`uop_runtime::Scratch`]).
pub use uop_runtime::Scratch;
