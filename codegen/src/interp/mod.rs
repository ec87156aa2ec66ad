//! Interpreters: the tensor-level reference interpreter of micro-op programs
//! (the oracle every other path is tested against) and the loop-IR interpreter.

mod uops;

pub use uops::{RunError, run};
