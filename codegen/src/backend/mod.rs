//! Backends: the optimized loop IR turned into something that runs outside the
//! interpreters (DESIGN.md §8).
//!
//! - [`rust`]: Rust source, one function per program, for build scripts and `uop emit`.
//! - Cranelift (machine code, in memory or as an object file) is the crate
//!   `uop-cranelift`, beside this one so that the two build at the same time.
//! - [`names`]: the rule every kernel name is checked against, per target language.

pub mod names;
pub mod rust;
