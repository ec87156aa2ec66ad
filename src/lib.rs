//! `uop`: the micro-op tensor compiler. This crate re-exports the compiler
//! ([`uop_codegen`]) and the macro-op library ([`uop_ops`]) and holds the `uop`
//! command-line tool.

pub use uop_codegen as codegen;
pub use uop_ops as ops;

pub use aligned::AlignedVec;

pub mod aligned;
pub mod bench;
pub mod cli;
pub mod jit;
pub mod kernels;
pub mod npy;
