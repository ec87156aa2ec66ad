//! The build-time API for whole graphs (DESIGN.md §21): what a crate's `build.rs`
//! calls to turn graph files into one Rust module in `OUT_DIR` — per graph, its
//! kernels and one function running it with its control flow ([`GraphModule`]).
//! It mirrors `uop_codegen::build::Kernels` (which does the same for single
//! kernels): sources are files, texts or graphs built in Rust, a build script calls
//! [`Graphs::run`], and an error fails the build with one readable `error: ...`
//! line. Nothing of the compiler is linked into the crate: the module needs
//! `uop-runtime` (or, with [`Graphs::standalone`], only `core` and `std`).
//!
//! A plain program file is a graph too (one node per op, formed into kernels), and
//! [`GraphSource::with_gradient`] adds the gradient graph (`uop_graph::grad`) as a
//! second function `NAME_grad`.
//!
//! ```no_run
//! // build.rs (with uop-graph as a build-dependency)
//! use uop_graph::build::{GraphSource, Graphs};
//! use uop_graph::grad::TapeMode;
//!
//! fn main() -> std::process::ExitCode {
//!     Graphs::new().run("model.rs", |graphs| {
//!         // `fn rnn(ws, x, x_shape, ..., h_out)` and `fn rnn_grad(...)`.
//!         graphs.add(GraphSource::file("model/rnn.uop").with_gradient(TapeMode::Stack))?;
//!         Ok(())
//!     })
//! }
//! ```
//!
//! ```ignore
//! // src/lib.rs
//! mod model {
//!     include!(concat!(env!("OUT_DIR"), "/model.rs"));
//! }
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use thiserror::Error;
use uop_codegen::backend::rust::Checks;
use uop_codegen::build::{exit_code, out_dir_path, rerun_if_changed, write_if_changed};

use super::{GraphEmitError, GraphEmitOptions, GraphModule};
use crate::default_registry;
use crate::grad::{GradError, GraphGradSpec, TapeMode, gradient};
use crate::ir::Graph;
use crate::text::parse_graph;

/// Why a graph module could not be generated.
#[derive(Debug, Error)]
pub enum GraphBuildError {
    /// A graph file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A graph text does not parse; the message shows the position.
    #[error("{origin}: {message}")]
    Parse {
        /// The file (or `<text of NAME>`).
        origin: String,
        /// The parse error with its caret rendering.
        message: String,
    },
    /// A source without a name, or a name that is not an identifier.
    #[error("{0}")]
    Source(String),
    /// The gradient graph could not be built (a `chunk`, an integer loop state
    /// with a stack tape, ...).
    #[error("graph `{name}`: no gradient: {source}")]
    Grad {
        /// The gradient function.
        name: String,
        /// Why.
        source: Box<GradError>,
    },
    /// The emitter refused a graph (it does not prepare, a name clashes, ...).
    #[error(transparent)]
    Emit(#[from] GraphEmitError),
    /// `OUT_DIR` is not set: [`Graphs::write`] runs inside a build script only.
    #[error("OUT_DIR is not set; call Graphs::write from a build script, or use write_to")]
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

/// Where a graph comes from, its function's name and whether its gradient is
/// wanted too.
#[derive(Clone, Debug)]
pub struct GraphSource {
    origin: Origin,
    name: Option<String>,
    gradient: Option<TapeMode>,
}

#[derive(Clone, Debug)]
enum Origin {
    Graph(Box<Graph>),
    Text(String),
    File(PathBuf),
}

impl GraphSource {
    /// A graph built in Rust (`GraphBuilder`, `parse_graph`), as the function `name`.
    pub fn graph(name: &str, graph: &Graph) -> GraphSource {
        GraphSource {
            origin: Origin::Graph(Box::new(graph.clone())),
            name: Some(name.into()),
            gradient: None,
        }
    }

    /// A graph text, as the function `name`.
    pub fn text(name: &str, text: &str) -> GraphSource {
        GraphSource {
            origin: Origin::Text(text.into()),
            name: Some(name.into()),
            gradient: None,
        }
    }

    /// A `.uop` graph (or program) file, named after its stem unless
    /// [`GraphSource::named`]; relative paths are relative to the crate's folder
    /// (where cargo runs build scripts).
    pub fn file(path: impl AsRef<Path>) -> GraphSource {
        GraphSource {
            origin: Origin::File(path.as_ref().to_path_buf()),
            name: None,
            gradient: None,
        }
    }

    /// The function's name instead of the file's stem.
    pub fn named(mut self, name: &str) -> GraphSource {
        self.name = Some(name.into());
        self
    }

    /// Also the gradient graph (every float output seeded, every float input
    /// wanted: `uop_graph::grad::GraphGradSpec::all`) as the function `NAME_grad`.
    /// With [`TapeMode::Stack`] it takes a `param_tape_N` per `while`: the tape's
    /// rows, at least the loop's trip count (more is fine; fewer is a run-time
    /// error).
    pub fn with_gradient(mut self, tape: TapeMode) -> GraphSource {
        self.gradient = Some(tape);
        self
    }
}

/// Graphs to generate into one Rust file.
#[derive(Debug)]
pub struct Graphs {
    module: GraphModule,
    /// Files read, for `cargo:rerun-if-changed`.
    inputs: Vec<PathBuf>,
}

impl Default for Graphs {
    fn default() -> Self {
        Self::new()
    }
}

impl Graphs {
    /// No graphs yet; kernels with the default options (proven checks, scheduled).
    pub fn new() -> Self {
        Self::with_options(GraphEmitOptions::default())
    }

    /// No graphs yet; kernels generated with `options` (checks, schedule,
    /// standalone). [`Checks::Full`] needs `schedule(false)`.
    pub fn with_options(options: GraphEmitOptions) -> Self {
        Graphs {
            module: GraphModule::new(options),
            inputs: Vec::new(),
        }
    }

    /// Standalone mode: the file holds a copy of the runtime (`mod rt`) instead of
    /// importing the crate `uop-runtime`.
    pub fn standalone(mut self, standalone: bool) -> Self {
        self.module.kernels.module.set_standalone(standalone);
        self
    }

    /// Full checks (safe indexing, no `unsafe`, unscheduled kernels) or the
    /// default: proven checks, scheduled kernels.
    pub fn full_checks(mut self, full: bool) -> Self {
        let kernels = &mut self.module.kernels.module;
        kernels.set_checks(if full { Checks::Full } else { Checks::Proven });
        kernels.set_schedule(!full);
        self
    }

    /// Adds the function of `source` (and its gradient's when asked); returns
    /// their names, in order.
    ///
    /// # Errors
    ///
    /// [`GraphBuildError`] when a file cannot be read or parsed, the graph cannot
    /// be emitted, its gradient cannot be built, or a name clashes.
    pub fn add(&mut self, source: GraphSource) -> Result<Vec<String>, GraphBuildError> {
        let registry = default_registry();
        let parse = |origin: String, text: &str| {
            parse_graph(text, registry.clone()).map_err(|e| GraphBuildError::Parse {
                origin,
                message: e.to_string(),
            })
        };
        let (name, graph, text) = match &source.origin {
            Origin::Graph(g) => (required_name(&source)?, (**g).clone(), None),
            Origin::Text(text) => {
                let name = required_name(&source)?;
                let graph = parse(format!("<text of {name}>"), text)?;
                (name, graph, Some(text.clone()))
            }
            Origin::File(path) => {
                let text =
                    std::fs::read_to_string(path).map_err(|source| GraphBuildError::Read {
                        path: path.clone(),
                        source,
                    })?;
                self.inputs.push(path.clone());
                let graph = parse(path.display().to_string(), &text)?;
                let name = source.name.clone().unwrap_or_else(|| stem(path));
                (name, graph, Some(text))
            }
        };
        self.module.add(&name, &graph, text.as_deref())?;
        let mut names = vec![name.clone()];
        if let Some(tape) = source.gradient {
            let grad_name = format!("{name}_grad");
            let spec = GraphGradSpec {
                tape,
                ..GraphGradSpec::all(&graph)
            };
            let grad = gradient(&graph, &spec).map_err(|e| GraphBuildError::Grad {
                name: grad_name.clone(),
                source: Box::new(e),
            })?;
            self.module.add(&grad_name, &grad.graph, None)?;
            names.push(grad_name);
        }
        Ok(names)
    }

    /// The functions added so far, in order.
    pub fn names(&self) -> &[String] {
        self.module.names()
    }

    /// The generated Rust source.
    ///
    /// # Errors
    ///
    /// As [`GraphModule::source`].
    pub fn source(&self) -> Result<String, GraphBuildError> {
        Ok(self.module.source()?)
    }

    /// A build script's whole work: calls `add` to add the graphs, then writes them
    /// to `$OUT_DIR/{file_name}` ([`Graphs::write`]). On an error it prints
    /// `error: ...` (the message as text) to stderr and returns a failure, which
    /// fails the build with that message.
    pub fn run(
        mut self,
        file_name: &str,
        add: impl FnOnce(&mut Graphs) -> Result<(), GraphBuildError>,
    ) -> ExitCode {
        println!("cargo:rerun-if-changed=build.rs");
        exit_code(add(&mut self).and_then(|()| self.write(file_name).map(drop)))
    }

    /// Writes the source to `$OUT_DIR/{file_name}` and prints
    /// `cargo:rerun-if-changed` for every file read. Returns the path.
    ///
    /// # Errors
    ///
    /// [`GraphBuildError::NoOutDir`] outside a build script, or as
    /// [`Graphs::write_to`].
    pub fn write(&self, file_name: &str) -> Result<PathBuf, GraphBuildError> {
        let path = out_dir_path(file_name).ok_or(GraphBuildError::NoOutDir)?;
        self.write_to(&path)?;
        rerun_if_changed(&self.inputs);
        Ok(path)
    }

    /// Writes the source to `path`, leaving the file untouched when it is already
    /// up to date (so dependents are not rebuilt for nothing).
    ///
    /// # Errors
    ///
    /// As [`Graphs::source`], or [`GraphBuildError::Write`].
    pub fn write_to(&self, path: &Path) -> Result<(), GraphBuildError> {
        write_if_changed(path, &self.source()?).map_err(|source| GraphBuildError::Write {
            path: path.to_path_buf(),
            source,
        })
    }
}

/// A file's stem, as a function name.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The name a graph or text source was given.
fn required_name(source: &GraphSource) -> Result<String, GraphBuildError> {
    source
        .name
        .clone()
        .ok_or_else(|| GraphBuildError::Source("a graph or text source needs a name".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_source_becomes_a_function_and_its_gradient() {
        let text = "input x: f32[N]\ny = mul(x, x)\noutput y\n";
        let mut graphs = Graphs::new();
        let names = graphs
            .add(GraphSource::text("square", text).with_gradient(TapeMode::Stack))
            .expect("adds");
        assert_eq!(names, ["square", "square_grad"]);
        let rust = graphs.source().expect("source");
        assert!(rust.contains("pub fn square(\n"), "{rust}");
        assert!(rust.contains("pub fn square_grad(\n"), "{rust}");
    }

    #[test]
    fn errors_name_the_file_or_the_graph() {
        let mut graphs = Graphs::new();
        let missing = graphs.add(GraphSource::file("no/such/file.uop"));
        let e = missing.expect_err("no file").to_string();
        assert!(e.starts_with("cannot read no/such/file.uop: "), "{e}");
        let bad = graphs.add(GraphSource::text(
            "bad",
            "input x: f32[N]\ny = nosuchop(x)\n",
        ));
        let e = bad.expect_err("does not parse").to_string();
        assert!(e.starts_with("<text of bad>: "), "{e}");
        let e = graphs
            .add(GraphSource::text("fn", "input x: f32[N]\noutput x\n"))
            .expect_err("a keyword")
            .to_string();
        assert!(e.contains("graph `fn`"), "{e}");
    }
}
