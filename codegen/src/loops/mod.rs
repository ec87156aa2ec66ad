//! The loop IR (DESIGN.md §5): its data structures, lowering from micro ops,
//! binding to concrete sizes, a printer and its parser, and the verifier of its
//! invariants. The interpreter is
//! [`interp::run_loops`](crate::interp::run_loops).

pub mod analysis;
mod bind;
mod ir;
mod lower;
mod parse;
mod print;
mod verify;

pub use analysis::ShapeGroups;
pub use ir::{
    Access, Block, Carried, LoadSet, Loop, LoopId, LoopProgram, Schedule, Stmt, Subscript,
    TensorDecl, TensorId, TensorKind, Tile, Value, VarId,
};
pub use lower::lower;
pub use parse::parse_program;
pub use verify::{VerifyError, Violation, verify};
