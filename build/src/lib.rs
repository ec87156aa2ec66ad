//! `uop-build`: the build-time builder (DESIGN.md §8, §21). A crate's `build.rs`
//! turns micro-op programs, graphs and ONNX models into ONE Rust file in
//! `OUT_DIR`, which the crate `include!`s; nothing of the compiler is linked into
//! the crate: the generated code needs the small crate `uop-runtime` (imported as
//! `rt`), or with [`Build::standalone`] only `core` and `std`.
//!
//! There is one way to add items, [`Build::add`], taking a [`Source`]:
//!
//! - a program ([`Source::program`], [`Source::text`], [`Source::file`],
//!   [`Source::dir`]) becomes a kernel `pub fn NAME(x, x_shape, ..., y)` (macro ops
//!   allowed), with modifiers for the float types ([`Source::dtypes`]:
//!   `{name}_{dtype}`) and gradient kernels (`{kernel}_grad`);
//! - a graph ([`Source::graph`], [`Source::graph_text`], [`Source::graph_file`]:
//!   functions, `while`, `case`, `if`, `parallel`, `call`, `chunk`) becomes its
//!   kernels and one function running it, `pub fn NAME(ws, x, x_shape, ..., y_out)`
//!   with `NAME_sizes` and `NameWorkspace` (`uop_graph::emit`, docs/graph-aot.md);
//!   [`Source::with_gradient`] adds the gradient graph's function `NAME_grad`;
//! - an ONNX model ([`Source::onnx`]) is imported (`uop-onnx`) and becomes a graph
//!   function the same way: a whole model as Rust at build time.
//!
//! A build script calls [`Build::run`], which writes the file and prints any error
//! as one readable `error: ...` line (failing the build).
//!
//! ```no_run
//! // build.rs (with uop-build as a build-dependency)
//! use uop_build::{Build, DType::{F32, F64}, Source};
//!
//! fn main() -> std::process::ExitCode {
//!     Build::new().run("generated.rs", |b| {
//!         // Kernels `rms_norm_f32`, `rms_norm_f64` and the gradient of each.
//!         b.add(Source::file("ops/rms_norm.uop").dtypes(&[F32, F64]).with_gradient())?;
//!         // `fn rnn(ws, x, x_shape, ..., h_out)`, `RnnWorkspace`, `rnn_sizes`.
//!         b.add(Source::graph_file("model/rnn.uop"))?;
//!         // `fn classifier(...)`: the ONNX model, every node of it.
//!         b.add(Source::onnx("model/classifier.onnx"))?;
//!         Ok(())
//!     })
//! }
//! ```
//!
//! ```ignore
//! // src/lib.rs
//! mod generated {
//!     include!(concat!(env!("OUT_DIR"), "/generated.rs"));
//! }
//! ```

mod error;
mod source;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use uop_codegen::build::{
    exit_code, full_gradient_spec, gradient_doc, out_dir_path, rerun_if_changed, with_float_type,
    write_if_changed,
};
use uop_codegen::grad::gradient;
use uop_codegen::text::{Registry, parse_program};
use uop_graph::emit::{GraphEmitOptions, GraphModule};
use uop_graph::grad::{GraphGradSpec, gradient as graph_gradient};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, default_registry};

pub use error::BuildError;
pub use source::Source;
pub use uop_codegen::compile::Checks;
pub use uop_codegen::grad::GradSpec;
pub use uop_codegen::uop::{DType, Program};
pub use uop_graph::grad::TapeMode;

use source::{Gradients, Origin};

/// Programs, graphs and models to generate into one Rust file.
#[derive(Debug)]
pub struct Build {
    /// The macro ops program sources may call.
    registry: Registry,
    /// The kernels and graph functions (one module: one runtime import, one set of
    /// names).
    module: GraphModule,
    /// Files and folders read, for `cargo:rerun-if-changed`.
    inputs: Vec<PathBuf>,
}

impl Default for Build {
    fn default() -> Self {
        Self::new()
    }
}

impl Build {
    /// Nothing added yet; program sources may call every macro op of `uop-ops`;
    /// kernels with the default options (proven checks, scheduled).
    pub fn new() -> Self {
        Self::with_registry(uop_ops::registry())
    }

    /// Nothing added yet; program sources may call the macro ops of `registry`.
    pub fn with_registry(registry: Registry) -> Self {
        Build {
            registry,
            module: GraphModule::new(GraphEmitOptions::default()),
            inputs: Vec::new(),
        }
    }

    /// Sets how generated accesses are checked ([`Checks`], default
    /// [`Checks::Proven`]) for the items added from now on. [`Checks::Full`] needs
    /// [`Build::schedule`]`(false)`.
    pub fn checks(mut self, checks: Checks) -> Self {
        self.module.set_checks(checks);
        self
    }

    /// Runs the schedule passes (threads, register tiles, per-CPU copies; the
    /// default) or not, for the items added from now on.
    pub fn schedule(mut self, schedule: bool) -> Self {
        self.module.set_schedule(schedule);
        self
    }

    /// Full checks (safe indexing, no `unsafe`, unscheduled kernels), or the
    /// default: proven checks, scheduled kernels.
    pub fn full_checks(self, full: bool) -> Self {
        let checks = if full { Checks::Full } else { Checks::Proven };
        self.checks(checks).schedule(!full)
    }

    /// Standalone mode: the file holds a copy of the runtime (`mod rt`) instead of
    /// importing the crate `uop-runtime`, so the crate needs no dependency.
    pub fn standalone(mut self, standalone: bool) -> Self {
        self.module.set_standalone(standalone);
        self
    }

    /// Also emits, for each kernel `NAME` of a program source, the oracle's entry
    /// to it: `NAME_program` (the program it computes, as `.uop` text) and
    /// `NAME_dyn` (a call on row-major f64 data of any shape). A test of the crate
    /// then checks the generated kernel against the reference interpreter:
    /// `uop::testing::check_kernel(generated::NAME_program(), generated::NAME_dyn, &opts)`.
    pub fn oracle(mut self, oracle: bool) -> Self {
        self.module.set_oracle(oracle);
        self
    }

    /// Adds the items of `source`; returns their names, in order (each forward
    /// kernel or graph function followed by its gradient).
    ///
    /// # Errors
    ///
    /// [`BuildError`] when a file cannot be read, parsed or imported, a program
    /// or graph cannot be emitted, a gradient cannot be built, a name clashes, or
    /// a modifier does not fit the source.
    pub fn add(&mut self, source: Source) -> Result<Vec<String>, BuildError> {
        check_modifiers(&source)?;
        if source.origin.is_program() {
            let programs = self.programs(&source)?;
            let mut names = Vec::new();
            for (base, program) in programs {
                names.extend(self.add_program(&source, &base, program)?);
            }
            Ok(names)
        } else {
            let (name, graph, text) = self.graph(&source)?;
            self.add_graph(&source, &name, &graph, text.as_deref())
        }
    }

    /// The items added so far: the kernels of program sources, then the graph
    /// functions, each in order.
    pub fn names(&self) -> Vec<String> {
        let kernels = self.module.kernel_names().iter();
        kernels.chain(self.module.names()).cloned().collect()
    }

    /// The generated Rust source.
    ///
    /// # Errors
    ///
    /// [`BuildError::Emit`] when a kernel cannot be written.
    pub fn source(&self) -> Result<String, BuildError> {
        Ok(self.module.source()?)
    }

    /// A build script's whole work: calls `add` to add the items, then writes them
    /// to `$OUT_DIR/{file_name}` ([`Build::write`]). On an error it prints
    /// `error: ...` (the message as text, not debug output) to stderr and returns
    /// a failure, which fails the build with that message.
    pub fn run(
        mut self,
        file_name: &str,
        add: impl FnOnce(&mut Build) -> Result<(), BuildError>,
    ) -> ExitCode {
        println!("cargo:rerun-if-changed=build.rs");
        exit_code(add(&mut self).and_then(|()| self.write(file_name).map(drop)))
    }

    /// Writes the source to `$OUT_DIR/{file_name}` and prints
    /// `cargo:rerun-if-changed` for every file and folder read. Returns the path.
    ///
    /// # Errors
    ///
    /// [`BuildError::NoOutDir`] outside a build script, or as [`Build::write_to`].
    pub fn write(&self, file_name: &str) -> Result<PathBuf, BuildError> {
        let path = out_dir_path(file_name).ok_or(BuildError::NoOutDir)?;
        self.write_to(&path)?;
        rerun_if_changed(&self.inputs);
        Ok(path)
    }

    /// Writes the source to `path`, leaving the file untouched when it is already
    /// up to date (so dependents are not rebuilt for nothing).
    ///
    /// # Errors
    ///
    /// As [`Build::source`], or [`BuildError::Write`].
    pub fn write_to(&self, path: &Path) -> Result<(), BuildError> {
        write_if_changed(path, &self.source()?).map_err(|source| BuildError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    /// The programs of a program source, each with its kernel's base name.
    fn programs(&mut self, source: &Source) -> Result<Vec<(String, Program)>, BuildError> {
        Ok(match &source.origin {
            Origin::Program(p) => vec![(required_name(source)?, p.clone())],
            Origin::ProgramText(text) => {
                let name = required_name(source)?;
                let program = self.parse_program(&format!("<text of {name}>"), text)?;
                vec![(name, program)]
            }
            Origin::ProgramFile(path) => {
                let text = self.read(path)?;
                let program = self.parse_program(&path.display().to_string(), &text)?;
                let name = source.name.clone().unwrap_or_else(|| stem(path));
                vec![(name, program)]
            }
            Origin::ProgramDir(dir) => self.read_dir(dir)?,
            _ => return Err(BuildError::Source("not a program source".into())),
        })
    }

    /// A program's kernels: one per float type asked for (or one), each with its
    /// gradient when asked; or only the gradient kernel of a request.
    fn add_program(
        &mut self,
        source: &Source,
        base: &str,
        program: Program,
    ) -> Result<Vec<String>, BuildError> {
        let variants: Vec<(String, Program)> = if source.dtypes.is_empty() {
            vec![(base.to_string(), program)]
        } else {
            source
                .dtypes
                .iter()
                .map(|&dtype| {
                    let name = format!("{base}_{dtype}");
                    with_float_type(&program, dtype)
                        .map(|p| (name.clone(), p))
                        .ok_or(BuildError::NotFloat { name, dtype })
                })
                .collect::<Result<_, _>>()?
        };
        let mut names = Vec::new();
        for (name, program) in variants {
            match &source.gradient {
                Gradients::Only(spec) => self.add_kernel_gradient(&name, &program, spec)?,
                Gradients::None => self.module.add_kernel(&name, &program, None)?,
                Gradients::Full { except, .. } => {
                    self.module.add_kernel(&name, &program, None)?;
                    if !except.iter().any(|e| e == base) {
                        names.push(name.clone());
                        let grad_name = format!("{name}_grad");
                        let spec = full_gradient_spec(&program);
                        self.add_kernel_gradient(&grad_name, &program, &spec)?;
                        names.push(grad_name);
                        continue;
                    }
                }
            }
            names.push(name);
        }
        Ok(names)
    }

    /// The gradient of `program` for `spec` as the kernel `name`.
    fn add_kernel_gradient(
        &mut self,
        name: &str,
        program: &Program,
        spec: &GradSpec,
    ) -> Result<(), BuildError> {
        let grad = gradient(program, spec).map_err(|source| BuildError::Grad {
            name: name.into(),
            source: Box::new(source),
        })?;
        let note = gradient_doc(program, &grad);
        self.module.add_kernel(name, &grad.program, Some(&note))?;
        Ok(())
    }

    /// The graph of a graph or model source: its function's name, the graph and
    /// its text (shown in the function's doc).
    fn graph(&mut self, source: &Source) -> Result<(String, Graph, Option<String>), BuildError> {
        let named = |path: &Path| source.name.clone().unwrap_or_else(|| stem(path));
        Ok(match &source.origin {
            Origin::Graph(g) => (required_name(source)?, (**g).clone(), None),
            Origin::GraphText(text) => {
                let name = required_name(source)?;
                let graph = parse_graph_text(&format!("<text of {name}>"), text)?;
                (name, graph, Some(text.clone()))
            }
            Origin::GraphFile(path) => {
                let text = self.read(path)?;
                let graph = parse_graph_text(&path.display().to_string(), &text)?;
                (named(path), graph, Some(text))
            }
            Origin::Onnx(path) => {
                let bytes = std::fs::read(path).map_err(|source| BuildError::Read {
                    path: path.clone(),
                    source,
                })?;
                self.inputs.push(path.clone());
                let options = uop_onnx::ImportOptions::default();
                let model =
                    uop_onnx::import(&bytes, &options).map_err(|e| BuildError::onnx(path, &e))?;
                (named(path), model.graph, None)
            }
            _ => return Err(BuildError::Source("not a graph source".into())),
        })
    }

    /// A graph's function, and its gradient's when asked.
    fn add_graph(
        &mut self,
        source: &Source,
        name: &str,
        graph: &Graph,
        text: Option<&str>,
    ) -> Result<Vec<String>, BuildError> {
        self.module.add(name, graph, text)?;
        let mut names = vec![name.to_string()];
        if let Gradients::Full { tape, .. } = &source.gradient {
            let grad_name = format!("{name}_grad");
            let grad = graph_gradient_of(graph, *tape).map_err(|e| BuildError::GraphGrad {
                name: grad_name.clone(),
                source: Box::new(e),
            })?;
            self.module.add(&grad_name, &grad, None)?;
            names.push(grad_name);
        }
        Ok(names)
    }

    fn parse_program(&self, origin: &str, text: &str) -> Result<Program, BuildError> {
        parse_program(text, &self.registry).map_err(|e| BuildError::Parse {
            origin: origin.into(),
            message: e.to_string(),
        })
    }

    /// A file's text, recorded for `cargo:rerun-if-changed`.
    fn read(&mut self, path: &Path) -> Result<String, BuildError> {
        let text = std::fs::read_to_string(path).map_err(|source| BuildError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.inputs.push(path.to_path_buf());
        Ok(text)
    }

    /// The programs of every `*.uop` file of `dir`, sorted, named by stem.
    fn read_dir(&mut self, dir: &Path) -> Result<Vec<(String, Program)>, BuildError> {
        let read_error = |source| BuildError::Read {
            path: dir.to_path_buf(),
            source,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(read_error)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(read_error)?;
        files.retain(|p| p.extension().is_some_and(|e| e == "uop"));
        files.sort();
        self.inputs.push(dir.to_path_buf());
        files
            .iter()
            .map(|file| {
                let text = self.read(file)?;
                Ok((
                    stem(file),
                    self.parse_program(&file.display().to_string(), &text)?,
                ))
            })
            .collect()
    }
}

/// The gradient graph (every float output seeded, every float input wanted) with
/// the `while` states on a tape of mode `tape`.
fn graph_gradient_of(graph: &Graph, tape: TapeMode) -> Result<Graph, uop_graph::grad::GradError> {
    let spec = GraphGradSpec {
        tape,
        ..GraphGradSpec::all(graph)
    };
    Ok(graph_gradient(graph, &spec)?.graph)
}

fn parse_graph_text(origin: &str, text: &str) -> Result<Graph, BuildError> {
    parse_graph(text, default_registry()).map_err(|e| BuildError::Parse {
        origin: origin.into(),
        message: e.to_string(),
    })
}

/// Refuses a modifier the source cannot take.
fn check_modifiers(source: &Source) -> Result<(), BuildError> {
    let program = source.origin.is_program();
    let what = match &source.origin {
        Origin::ProgramDir(dir) if source.name.is_some() => Some(format!(
            "{}: a folder's kernels are named after its files; `named` is for one program",
            dir.display()
        )),
        Origin::Program(_) => None,
        _ if matches!(source.gradient, Gradients::Only(_)) => Some(
            "`gradient_only` takes a program source: its request names the program's nodes".into(),
        ),
        _ if !program && !source.dtypes.is_empty() => Some(
            "`dtypes` is for programs: a graph's function has the graph's own float type".into(),
        ),
        _ => None,
    };
    match what {
        Some(message) => Err(BuildError::Source(message)),
        None => Ok(()),
    }
}

/// A file's stem, as a kernel or function name.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The name a program, graph or text source was given.
fn required_name(source: &Source) -> Result<String, BuildError> {
    source
        .name
        .clone()
        .ok_or_else(|| BuildError::Source("a program, graph or text source needs a name".into()))
}
