//! The build-time API: what a crate's `build.rs` calls to turn micro-op programs into
//! Rust kernels in `OUT_DIR` (DESIGN.md §8). The crate then `include!`s the file;
//! nothing of the compiler is linked into it: the generated code needs the small
//! crate `uop-runtime` (a dependency of the crate, imported as `rt`), or with
//! [`Kernels::standalone`] only `core` and `std`.
//!
//! There is one way to add kernels, [`Kernels::add`], taking a [`Source`]: a
//! [`Program`], a `.uop` text, a file or a folder of files, with modifiers for the
//! float types to generate and for gradient kernels. A build script calls
//! [`Kernels::run`], which writes the file and prints any error as one readable
//! line (and fails the build).
//!
//! With the macro ops (`linear`, `softmax`, ...), start from `uop_ops::build::kernels()`
//! instead of [`Kernels::new`]: the crate `uop-ops` re-exports this module with its
//! registry in place, so a build script needs that one build-dependency.
//!
//! ```no_run
//! // build.rs (with uop-codegen as a build-dependency)
//! use uop_codegen::build::{Kernels, Source};
//! use uop_codegen::uop::DType::{F32, F64};
//!
//! fn main() -> std::process::ExitCode {
//!     Kernels::new().run("kernels.rs", |kernels| {
//!         // `scale_shift_f32` and `scale_shift_f64`, and the gradient of each.
//!         kernels.add(Source::file("ops/scale_shift.uop").dtypes(&[F32, F64]).with_gradient())?;
//!         Ok(())
//!     })
//! }
//! ```
//!
//! ```ignore
//! // src/lib.rs
//! mod kernels {
//!     include!(concat!(env!("OUT_DIR"), "/kernels.rs"));
//! }
//! ```
//!
//! Kernel names: a file's or folder entry's is its stem (or [`Source::named`]);
//! [`Source::dtypes`] makes one kernel per float type, `{name}_{dtype}`; a gradient
//! kernel is `{kernel}_grad`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use thiserror::Error;

use crate::backend::rust::{Checks, EmitError, RustModule, RustOptions};
use crate::grad::{GradError, GradRole, GradSpec, Gradient, gradient};
use crate::text::{Registry, parse_program};
use crate::uop::{DType, Program};

/// Why kernels could not be generated.
#[derive(Debug, Error)]
pub enum BuildError {
    /// A program file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A program text does not parse; the message shows the position.
    #[error("{origin}: {message}")]
    Parse {
        /// The file (or `<text of NAME>`).
        origin: String,
        /// The parse error with its caret rendering.
        message: String,
    },
    /// A source was given a modifier it cannot take.
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
    /// The Rust backend refused a program or a name.
    #[error(transparent)]
    Emit(#[from] EmitError),
    /// `OUT_DIR` is not set: [`Kernels::write`] runs inside a build script only.
    #[error("OUT_DIR is not set; call Kernels::write from a build script, or use write_to")]
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

/// Where a kernel's program comes from, and which kernels to make of it.
#[derive(Clone, Debug)]
pub struct Source {
    origin: Origin,
    name: Option<String>,
    dtypes: Vec<DType>,
    gradient: Gradients,
}

#[derive(Clone, Debug)]
enum Origin {
    Program(Program),
    Text(String),
    File(PathBuf),
    Dir(PathBuf),
}

#[derive(Clone, Debug, Default)]
enum Gradients {
    /// Forward kernels only.
    #[default]
    None,
    /// Each forward kernel and its gradient, except for the listed names (stems).
    Full { except: Vec<String> },
    /// Only the gradient kernel for this request (a program source).
    Only(GradSpec),
}

impl Source {
    /// A program built in Rust, as the kernel `name`.
    pub fn program(name: &str, program: &Program) -> Source {
        Source::new(Origin::Program(program.clone()), Some(name.into()))
    }

    /// A program in the `.uop` text format, as the kernel `name`.
    pub fn text(name: &str, text: &str) -> Source {
        Source::new(Origin::Text(text.into()), Some(name.into()))
    }

    /// A `.uop` file, as the kernel named after the file's stem; the build reruns
    /// when it changes.
    pub fn file(path: impl AsRef<Path>) -> Source {
        Source::new(Origin::File(path.as_ref().to_path_buf()), None)
    }

    /// Every `*.uop` file of a folder, sorted by name, each a kernel named after
    /// its stem; the build reruns when a file is added.
    pub fn dir(path: impl AsRef<Path>) -> Source {
        Source::new(Origin::Dir(path.as_ref().to_path_buf()), None)
    }

    fn new(origin: Origin, name: Option<String>) -> Source {
        Source {
            origin,
            name,
            dtypes: Vec::new(),
            gradient: Gradients::None,
        }
    }

    /// Names the kernel `name` instead of after its file (not for a folder).
    pub fn named(mut self, name: &str) -> Source {
        self.name = Some(name.into());
        self
    }

    /// One kernel per float type (f32, f64), each the program converted to it and
    /// named `{name}_{dtype}`; without this, one kernel in the program's own type.
    pub fn dtypes(mut self, dtypes: &[DType]) -> Source {
        self.dtypes = dtypes.to_vec();
        self
    }

    /// Adds after each kernel its gradient `{kernel}_grad`: with respect to every
    /// float input, every float output seeded, nothing supplied
    /// ([`full_gradient_spec`]).
    pub fn with_gradient(mut self) -> Source {
        self.gradient = Gradients::Full { except: Vec::new() };
        self
    }

    /// Like [`Source::with_gradient`], leaving out the gradients of the programs
    /// named here (folder stems: programs whose gradient is zero or undefined,
    /// such as an argmax).
    pub fn with_gradient_except(mut self, names: &[&str]) -> Source {
        self.gradient = Gradients::Full {
            except: names.iter().map(|s| s.to_string()).collect(),
        };
        self
    }

    /// Makes the kernel the gradient program for `spec` alone (see [`crate::grad`]
    /// for its arguments and their names), instead of the program. Only for
    /// [`Source::program`]: `spec` names the program's nodes.
    pub fn gradient_only(mut self, spec: GradSpec) -> Source {
        self.gradient = Gradients::Only(spec);
        self
    }
}

/// A set of kernels to generate into one Rust file.
#[derive(Debug)]
pub struct Kernels {
    registry: Registry,
    module: RustModule,
    /// Files and directories read, for `cargo:rerun-if-changed`.
    inputs: Vec<PathBuf>,
}

impl Default for Kernels {
    fn default() -> Self {
        Self::new()
    }
}

impl Kernels {
    /// No kernels yet; `.uop` sources may use micro ops only (for the macro ops, use
    /// `uop_ops::build::kernels()`).
    pub fn new() -> Self {
        Self::with_registry(Registry::new())
    }

    /// No kernels yet; `.uop` sources may call the macro ops of `registry`.
    pub fn with_registry(registry: Registry) -> Self {
        Kernels {
            registry,
            module: RustModule::new(RustOptions::default()),
            inputs: Vec::new(),
        }
    }

    /// Sets how generated accesses are checked (see [`Checks`]); default
    /// [`Checks::Proven`]. [`Checks::Full`] needs [`Kernels::schedule`]`(false)`.
    pub fn checks(mut self, checks: Checks) -> Self {
        self.module.set_checks(checks);
        self
    }

    /// Runs the schedule passes (threads, register tiles, per-CPU copies; the
    /// default) or not.
    pub fn schedule(mut self, schedule: bool) -> Self {
        self.module.set_schedule(schedule);
        self
    }

    /// Standalone mode: the file holds a copy of the runtime (`mod rt`) instead
    /// of importing the crate `uop-runtime`, so the crate needs no dependency.
    pub fn standalone(mut self, standalone: bool) -> Self {
        self.module.set_standalone(standalone);
        self
    }

    /// Also emits, for each kernel `NAME`, the oracle's entry to it: `NAME_program`
    /// (the program it computes, as `.uop` text) and `NAME_dyn` (a call on row-major
    /// f64 data of any shape). A test of the crate then checks the generated kernel
    /// against the reference interpreter on random cases:
    /// `uop::testing::check_kernel(kernels::NAME_program(), kernels::NAME_dyn, &opts)`.
    /// Off by default; the two functions are small and unused ones are not linked.
    pub fn oracle(mut self, oracle: bool) -> Self {
        self.module.set_oracle(oracle);
        self
    }

    /// Adds the kernels of `source`; returns their names, in order (each forward
    /// kernel followed by its gradient).
    ///
    /// # Errors
    ///
    /// [`BuildError`] when a file cannot be read or parsed, a program cannot become
    /// a kernel, a name clashes, or a modifier does not fit the source.
    pub fn add(&mut self, source: Source) -> Result<Vec<String>, BuildError> {
        let programs: Vec<(String, Program)> = match &source.origin {
            Origin::Program(p) => vec![(required_name(&source)?, p.clone())],
            Origin::Text(text) => {
                let name = required_name(&source)?;
                let program = self.parse(&format!("<text of {name}>"), text)?;
                vec![(name, program)]
            }
            Origin::File(path) => {
                let program = self.read(path)?;
                let name = match &source.name {
                    Some(n) => n.clone(),
                    None => stem(path),
                };
                vec![(name, program)]
            }
            Origin::Dir(dir) => {
                if source.name.is_some() {
                    return Err(BuildError::Source(format!(
                        "{}: a folder's kernels are named after its files; `named` is for one program",
                        dir.display()
                    )));
                }
                self.read_dir(dir)?
            }
        };
        if matches!(source.gradient, Gradients::Only(_))
            && !matches!(source.origin, Origin::Program(_))
        {
            return Err(BuildError::Source(
                "`gradient_only` takes a program source: its request names the program's nodes"
                    .into(),
            ));
        }
        let mut names = Vec::new();
        for (base, program) in programs {
            let variants: Vec<(String, Program)> = if source.dtypes.is_empty() {
                vec![(base.clone(), program)]
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
            for (name, program) in variants {
                match &source.gradient {
                    Gradients::Only(spec) => {
                        self.add_gradient(&name, &program, spec)?;
                        names.push(name);
                    }
                    Gradients::None => {
                        self.module.add(&name, &program)?;
                        names.push(name);
                    }
                    Gradients::Full { except } => {
                        self.module.add(&name, &program)?;
                        names.push(name.clone());
                        if !except.contains(&base) {
                            let grad_name = format!("{name}_grad");
                            self.add_gradient(&grad_name, &program, &full_gradient_spec(&program))?;
                            names.push(grad_name);
                        }
                    }
                }
            }
        }
        Ok(names)
    }

    /// Adds the gradient of `program` for `spec` as the kernel `name`.
    fn add_gradient(
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
        self.module.add_with_note(name, &grad.program, &note)?;
        Ok(())
    }

    /// The kernel names added so far, in order.
    pub fn names(&self) -> Vec<String> {
        self.module.names().map(str::to_string).collect()
    }

    /// The generated Rust source.
    pub fn source(&self) -> Result<String, BuildError> {
        Ok(self.module.source()?)
    }

    /// A build script's whole work: calls `add` to add the kernels, then writes
    /// them to `$OUT_DIR/{file_name}` ([`Kernels::write`]). On an error it prints
    /// `error: ...` (the message as text, not debug output) to stderr and returns a
    /// failure, which fails the build with that message.
    pub fn run(
        mut self,
        file_name: &str,
        add: impl FnOnce(&mut Kernels) -> Result<(), BuildError>,
    ) -> ExitCode {
        println!("cargo:rerun-if-changed=build.rs");
        exit_code(add(&mut self).and_then(|()| self.write(file_name).map(drop)))
    }

    /// Writes the source to `$OUT_DIR/{file_name}` and prints
    /// `cargo:rerun-if-changed` for every file and directory read. Returns the path.
    pub fn write(&self, file_name: &str) -> Result<PathBuf, BuildError> {
        let path = out_dir_path(file_name).ok_or(BuildError::NoOutDir)?;
        self.write_to(&path)?;
        rerun_if_changed(&self.inputs);
        Ok(path)
    }

    /// Writes the source to `path`, leaving the file untouched when it is
    /// already up to date (so dependents are not rebuilt for nothing).
    pub fn write_to(&self, path: &Path) -> Result<(), BuildError> {
        write_if_changed(path, &self.source()?).map_err(|source| BuildError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    fn parse(&self, origin: &str, src: &str) -> Result<Program, BuildError> {
        parse_program(src, &self.registry).map_err(|e| BuildError::Parse {
            origin: origin.into(),
            message: e.to_string(),
        })
    }

    fn read(&mut self, path: &Path) -> Result<Program, BuildError> {
        let src = std::fs::read_to_string(path).map_err(|source| BuildError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        self.inputs.push(path.to_path_buf());
        self.parse(&path.display().to_string(), &src)
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
            .map(|file| Ok((stem(file), self.read(file)?)))
            .collect()
    }
}

/// A build script's exit code for `result`: success, or `error: MESSAGE` (the
/// error as text, not debug output) on stderr and a failure, which fails the build
/// with that message. Shared by [`Kernels::run`] and the graph layer's builder.
pub fn exit_code<E: std::fmt::Display>(result: Result<(), E>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// `$OUT_DIR/{file_name}`; `None` outside a build script.
pub fn out_dir_path(file_name: &str) -> Option<PathBuf> {
    std::env::var_os("OUT_DIR").map(|dir| Path::new(&dir).join(file_name))
}

/// Prints `cargo:rerun-if-changed` for each of `paths`.
pub fn rerun_if_changed(paths: &[PathBuf]) {
    for p in paths {
        println!("cargo:rerun-if-changed={}", p.display());
    }
}

/// Writes `source` to `path`, leaving the file untouched when it already holds it
/// (so dependents are not rebuilt for nothing).
///
/// # Errors
///
/// The I/O error of writing.
pub fn write_if_changed(path: &Path, source: &str) -> std::io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == source) {
        return Ok(());
    }
    std::fs::write(path, source)
}

/// A file's stem, as a kernel name.
fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The name a program or text source was given.
fn required_name(source: &Source) -> Result<String, BuildError> {
    source
        .name
        .clone()
        .ok_or_else(|| BuildError::Source("a program or text source needs a name".into()))
}

/// `program` with every float tensor of type `dtype`, or `None` unless `dtype` is
/// f32 or f64. Constants are kept as written (they are rounded when the kernel
/// runs), so an f32 and an f64 kernel from one program differ only in precision.
pub fn with_float_type(program: &Program, dtype: DType) -> Option<Program> {
    if !dtype.is_float() {
        return None;
    }
    let mut p = program.clone();
    p.dtype = dtype;
    for node in &mut p.nodes {
        if node.dtype.is_float() {
            node.dtype = dtype;
        }
    }
    Some(p)
}

/// The gradient request [`Source::with_gradient`] makes: with respect to every
/// float input, every float output seeded, nothing supplied.
pub fn full_gradient_spec(program: &Program) -> GradSpec {
    let float = |id: &&crate::uop::NodeId| program.nodes[id.0].dtype.is_float();
    GradSpec {
        seeds: program.outputs.iter().filter(float).copied().collect(),
        wrt: program.inputs.iter().filter(float).copied().collect(),
        supplied: Vec::new(),
    }
}

/// The doc paragraph of a gradient kernel: what each argument and output is, in
/// order, in terms of the forward program.
pub fn gradient_doc(forward: &Program, grad: &Gradient) -> String {
    let name = |p: &Program, id: crate::uop::NodeId| p.nodes[id.0].name.clone();
    let mut d = String::from(
        "# Gradient\n\nThis kernel is the gradient of the forward program shown at the end: for seeds `g_y` \
         (the gradient of a loss with respect to each forward output `y`), it returns \
         `g_x = sum over y of (dy/dx)^T g_y` for each forward input `x`.\n\nArguments, in order:\n\n",
    );
    for (input, id) in grad.inputs.iter().zip(&grad.program.inputs) {
        let arg = name(&grad.program, *id);
        let fwd = name(forward, input.forward);
        let what = match input.role {
            GradRole::Input => format!("the forward input `{fwd}`"),
            GradRole::Seed => {
                format!("the gradient of the loss with respect to the forward output `{fwd}`")
            }
            GradRole::Supplied => format!("the forward value `{fwd}`"),
        };
        let shape_only = if input.reads_data {
            ""
        } else {
            " (only its shape is used; any data will do)"
        };
        d.push_str(&format!("- `{arg}`: {what}{shape_only}\n"));
    }
    d.push_str("\nOutputs, in order:\n\n");
    for (out, wrt) in grad.program.outputs.iter().zip(&grad.spec.wrt) {
        d.push_str(&format!(
            "- `{}`: the gradient with respect to the forward input `{}`\n",
            name(&grad.program, *out),
            name(forward, *wrt)
        ));
    }
    d.push_str("\nThe forward program:\n\n```text\n");
    d.push_str(&crate::text::print_program(forward));
    d.push_str("```");
    d
}
