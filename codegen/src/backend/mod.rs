//! Backends: the optimized loop IR turned into something that runs outside the
//! interpreters (DESIGN.md §8).
//!
//! - [`rust`]: Rust source, one function per program, for build scripts and `uop emit`.
//! - [`cranelift`]: machine code, in memory (JIT) or as a relocatable object file with
//!   a C header. Behind the `cranelift` feature (on by default).
//! - [`names`]: the rule every kernel name is checked against, per target language.

#[cfg(feature = "cranelift")]
pub mod cranelift;
pub mod names;
pub mod rust;
