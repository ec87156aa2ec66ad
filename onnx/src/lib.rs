//! `uop-onnx`: ONNX models into uop's graph layer.
//!
//! [`import`] decodes an `.onnx` file and translates its graph into a
//! [`uop_graph::Graph`] through the graph builder, so every stage of the graph layer
//! (printing, preparing, kernels, memory, the interpreter and executor, gradients,
//! AOT) works on it. What is supported is one table, [`registry::OPS`]; the
//! decisions (opsets, name mapping, integer policy) are in `docs/onnx.md`.
//!
//! ```no_run
//! use std::collections::HashMap;
//! use uop_onnx::{ImportOptions, import};
//!
//! let bytes = std::fs::read("model.onnx")?;
//! let model = import(&bytes, &ImportOptions::default())?;
//! println!("{}", uop_graph::text::print_graph(&model.graph));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## The generated protobuf module
//!
//! `src/proto/onnx.rs` is generated from `proto/onnx.proto` (onnx 1.23.2, Apache-2.0,
//! its licence in `proto/LICENSE`) by prost-build 0.14 with protox 0.10 — no
//! `protoc`, no build script: the file is checked in and only the `prost` runtime is
//! a dependency. `sh onnx/proto/regenerate.sh` regenerates it in a throwaway crate
//! outside the workspace; to move to a newer onnx, replace `proto/onnx.proto` with
//! that release's `onnx/onnx.proto` and run the script.

pub mod data;
pub mod decode;
pub mod import;
pub mod names;
mod ops;
pub mod proto;
pub mod registry;

pub use data::{ElemType, HostData, HostTensor};
pub use decode::{DecodeError, decode_model, decode_tensor};
pub use import::{ImportError, ImportOptions, Imported, MAX_OPSET, Port, import, import_model};
pub use names::NameMap;
