//! Why a build-time module could not be generated.

use std::path::PathBuf;

use thiserror::Error;
use uop_codegen::grad::GradError;
use uop_codegen::uop::DType;
use uop_graph::emit::GraphEmitError;
use uop_graph::grad::GradError as GraphGradError;
use uop_onnx::ImportError;

/// Why a module could not be generated: every variant names the file, kernel or
/// graph at fault, so a build script's one `error: ...` line says what to fix.
#[derive(Debug, Error)]
pub enum BuildError {
    /// A file or folder could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A program or graph text does not parse; the message shows the position.
    #[error("{origin}: {message}")]
    Parse {
        /// The file (or `<text of NAME>`).
        origin: String,
        /// The parse error with its caret rendering.
        message: String,
    },
    /// An ONNX model could not be decoded or imported.
    #[error("{}: {message}", path.display())]
    Onnx {
        /// The model file.
        path: PathBuf,
        /// What the decoder or the importer said.
        message: String,
    },
    /// A source without a name, or given a modifier it cannot take.
    #[error("{0}")]
    Source(String),
    /// A float type other than f32 / f64 was asked for.
    #[error("kernel `{name}`: a program's float type is f32 or f64, not {dtype}")]
    NotFloat {
        /// The kernel.
        name: String,
        /// The type asked for.
        dtype: DType,
    },
    /// The gradient program of a kernel could not be built.
    #[error("kernel `{name}`: no gradient: {source}")]
    Grad {
        /// The gradient kernel.
        name: String,
        /// Why (boxed: gradient errors carry whole programs' names and shapes).
        source: Box<GradError>,
    },
    /// The gradient graph of a graph could not be built (a `chunk`, an integer
    /// loop state with a stack tape, ...).
    #[error("graph `{name}`: no gradient: {source}")]
    GraphGrad {
        /// The gradient function.
        name: String,
        /// Why.
        source: Box<GraphGradError>,
    },
    /// The emitter refused a program or a graph (it does not prepare, a name
    /// clashes, ...).
    #[error(transparent)]
    Emit(#[from] GraphEmitError),
    /// `OUT_DIR` is not set: [`crate::Build::write`] runs inside a build script only.
    #[error("OUT_DIR is not set; call Build::write from a build script, or use write_to")]
    NoOutDir,
    /// The generated file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl From<uop_codegen::backend::rust::EmitError> for BuildError {
    fn from(e: uop_codegen::backend::rust::EmitError) -> Self {
        BuildError::Emit(GraphEmitError::Emit(e))
    }
}

impl BuildError {
    /// The importer's error for the model at `path`.
    pub(crate) fn onnx(path: &std::path::Path, e: &ImportError) -> Self {
        BuildError::Onnx {
            path: path.to_path_buf(),
            message: e.to_string(),
        }
    }
}
