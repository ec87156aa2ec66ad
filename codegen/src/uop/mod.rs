//! Micro ops (DESIGN.md §4): the operator sets and their scalar semantics, the
//! graph, the checked builder, `combine` into a [`Program`], and binding a program
//! to concrete sizes.

mod bind;
mod broadcast;
mod builder;
mod error;
mod graph;
mod ops;

pub use crate::sizes::concrete_shape;
pub use bind::{InputDecl, bind_inputs};
pub use builder::Builder;
pub use error::{BindError, UopError};
pub use graph::{Node, NodeId, Operand, Program, Uop};
pub use ops::{Accum, BinaryOp, DType, ReduceOp, UnaryOp, maximum, minimum};
