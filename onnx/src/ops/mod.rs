//! The translations of ONNX ops into uop macro ops, one module per family; the
//! [registry](crate::registry) maps each op to its function.

pub(crate) mod control;
pub(crate) mod elementwise;
pub(crate) mod loops;
pub(crate) mod movement;
pub(crate) mod nn;
pub(crate) mod reduce;
pub(crate) mod shape;
