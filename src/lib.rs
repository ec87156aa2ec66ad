//! `uop`: the micro-op tensor compiler. This crate re-exports the compiler
//! ([`uop_codegen`]), the macro-op library ([`uop_ops`]) and the runtime generated
//! kernels call ([`uop_runtime`]), and holds the `uop` command-line tool.

pub use uop_codegen as codegen;
pub use uop_ops as ops;
pub use uop_runtime as runtime;

/// Buffers that start on a 64-byte cache line, for the slices kernels take
/// (the runtime's, see [`uop_runtime::AlignedVec`]):
///
/// ```
/// use uop::AlignedVec;
///
/// let x = AlignedVec::from_slice(&[1.0f32, 2.0, 3.0]);
/// let mut y = AlignedVec::<f32>::zeroed(1);
/// uop::kernels::sum_f32(&x, [3], &mut y).unwrap();
/// assert_eq!(y[0], 6.0);
/// assert_eq!(x.as_ptr() as usize % 64, 0);
/// ```
pub use uop_runtime::AlignedVec;

pub mod bench;
pub mod cli;
pub mod graph;
pub mod jit;
pub mod kernels;
pub mod npy;
