//! [`ImportError`]: why a model could not become a graph, naming the tensor, op, node
//! and opset concerned.

use thiserror::Error;

use crate::decode::DecodeError;

/// Why an ONNX model could not be imported.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ImportError {
    /// The bytes are not an ONNX model.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The model is malformed or uses something the importer does not handle (an
    /// opset domain, a graph-level construct).
    #[error("{0}")]
    Model(String),
    /// A tensor or value has a type uop cannot represent (f16, bf16, int8, strings,
    /// sequences, optionals, ...).
    #[error("`{tensor}`: {message}")]
    Type {
        /// The ONNX name of the tensor or value.
        tensor: String,
        /// What is wrong.
        message: String,
    },
    /// An op the importer does not support (at this opset), found before anything runs.
    #[error("unsupported op {op} (node `{node}`, opset {opset}){hint}")]
    UnsupportedOp {
        /// The op type (with its domain when not the default one).
        op: String,
        /// The node's name (or its first output when it has none).
        node: String,
        /// The opset of the op's domain the model imports.
        opset: i64,
        /// More on why, or empty.
        hint: String,
    },
    /// A graph input feeds an argument that must be known at import (a shape, axes,
    /// pads...): give its value in [`ImportOptions::constants`](super::ImportOptions).
    #[error(
        "input `{input}` must be known when the model is imported: it is the {slot} of {op} node `{node}` (give its value as a constant)"
    )]
    NeedsConstant {
        /// The graph input's ONNX name.
        input: String,
        /// The argument it feeds (`shape`, `axes`).
        slot: String,
        /// The op type.
        op: String,
        /// The node.
        node: String,
    },
    /// A node could not be translated.
    #[error("{op} node `{node}` (opset {opset}): {message}")]
    Node {
        /// The op type.
        op: String,
        /// The node.
        node: String,
        /// The opset.
        opset: i64,
        /// What went wrong.
        message: String,
    },
}
