//! `uop`: the micro-op tensor compiler. This crate re-exports the compiler
//! ([`uop_codegen`]), its Cranelift backend ([`uop_cranelift`]), the macro-op library ([`uop_ops`]) and the runtime generated
//! kernels call ([`uop_runtime`]), and holds the `uop` command-line tool.
//!
//! With the feature `prebuilt` (off by default: a long compile), `uop::kernels`
//! re-exports the prebuilt kernels of the crate `uop-kernels`.

pub use uop_codegen as codegen;
pub use uop_cranelift as cranelift;
pub use uop_exec as exec;
pub use uop_graph as graph;
pub use uop_ops as ops;
pub use uop_runtime as runtime;

/// Buffers that start on a 64-byte cache line, for the slices kernels take
/// (the runtime's, see [`uop_runtime::AlignedVec`]):
///
/// ```
/// use uop::AlignedVec;
///
/// let x = AlignedVec::from_slice(&[1.0f32, 2.0, 3.0]);
/// assert_eq!(x.iter().sum::<f32>(), 6.0);
/// assert_eq!(x.as_ptr() as usize % 64, 0);
/// ```
pub use uop_runtime::AlignedVec;

pub mod bench;
pub mod cli;
pub mod jit;
pub mod npy;

/// The prebuilt kernels (the crate `uop-kernels`), with the feature `prebuilt`.
#[cfg(feature = "prebuilt")]
pub use uop_kernels as kernels;

/// The README's Rust examples, compiled and run as doc tests (`tests/suite/readme.rs` runs
/// its commands).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
