//! The loop IR (DESIGN.md §5): its data structures, lowering from micro ops,
//! a printer and an interpreter.

mod ir;

pub use ir::{
    Access, Block, Carried, Loop, LoopId, LoopProgram, Stmt, Subscript, TensorDecl, TensorId,
    TensorKind, Value, VarId,
};
