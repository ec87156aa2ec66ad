//! Backends: turning an optimized loop program into something that runs outside the
//! interpreters (DESIGN.md §8).
//!
//! - [`rust`]: Rust source, one function per program, for build scripts and `uop emit`.

pub mod rust;
