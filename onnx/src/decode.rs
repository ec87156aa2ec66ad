//! Bytes to ONNX messages: a model file and a `.pb` tensor file, with the errors a
//! truncated, corrupt or non-ONNX file gets (prost never panics on bad input; the
//! checks here add what protobuf itself cannot see).

use prost::Message;
use thiserror::Error;

use crate::proto::{ModelProto, TensorProto};

/// Why bytes are not a usable ONNX model or tensor.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// No bytes at all.
    #[error("the file is empty")]
    Empty,
    /// Not valid protobuf (truncated or corrupt, or another format).
    #[error("not a valid ONNX protobuf (truncated or corrupt?): {0}")]
    Protobuf(String),
    /// Valid protobuf, but not an ONNX model.
    #[error("not an ONNX model: {0}")]
    NotOnnx(String),
}

/// Decodes an `.onnx` file's bytes.
///
/// A model must say which IR version it is in and hold a graph; anything else that
/// happens to parse as protobuf (a tensor file, random bytes) is [`DecodeError::NotOnnx`].
pub fn decode_model(bytes: &[u8]) -> Result<ModelProto, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    let model = ModelProto::decode(bytes).map_err(|e| DecodeError::Protobuf(e.to_string()))?;
    if model.ir_version.is_none() {
        return Err(DecodeError::NotOnnx("it has no ir_version".into()));
    }
    if model.graph.is_none() {
        return Err(DecodeError::NotOnnx("it has no graph".into()));
    }
    Ok(model)
}

/// Decodes a serialized `TensorProto` (a node test's `input_0.pb`).
pub fn decode_tensor(bytes: &[u8]) -> Result<TensorProto, DecodeError> {
    let t = TensorProto::decode(bytes).map_err(|e| DecodeError::Protobuf(e.to_string()))?;
    if t.data_type.is_none() {
        return Err(DecodeError::NotOnnx("a tensor without a data_type".into()));
    }
    Ok(t)
}
