//! Interpreters: the tensor-level reference interpreter of micro-op programs
//! (the oracle every other path is tested against) and the loop-IR interpreter.

mod loops;
mod uops;

pub use loops::run_loops;
pub use uops::{RunError, run};
