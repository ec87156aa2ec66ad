//! The loop IR (DESIGN.md §5): its data structures, lowering from micro ops,
//! binding to concrete sizes, and a printer. The interpreter is
//! [`interp::run_loops`](crate::interp::run_loops).

mod bind;
mod ir;
mod lower;
mod print;

pub use ir::{
    Access, Block, Carried, Loop, LoopId, LoopProgram, Schedule, Stmt, Subscript, TensorDecl,
    TensorId, TensorKind, Tile, Value, VarId,
};
pub use lower::lower;
