//! The build-time API: what a crate's `build.rs` calls to turn micro-op programs into
//! Rust kernels in `OUT_DIR` (DESIGN.md §8). The crate then `include!`s the file;
//! nothing of the compiler is linked into it: the generated code needs the small
//! crate `uop-runtime` (a dependency of the crate, imported as `rt`), or with
//! [`Kernels::standalone`] only `core` and `std`.
//!
//! ```no_run
//! // build.rs (with uop-codegen as a build-dependency)
//! use uop_codegen::build::Kernels;
//! use uop_codegen::uop::DType;
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut kernels = Kernels::new();
//!     kernels.add_file("scale_shift", "ops/scale_shift.uop")?; // float type from the file
//!     kernels.add_file_as("scale_shift_f64", "ops/scale_shift.uop", DType::F64)?;
//!     kernels.write("kernels.rs")?; // OUT_DIR/kernels.rs, plus cargo:rerun-if-changed lines
//!     Ok(())
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
//! Programs come from the [`Builder`](crate::uop::Builder) ([`Kernels::add`]) or from
//! `.uop` files parsed with a macro-op [`Registry`] ([`Kernels::with_registry`]; the
//! `uop` crate passes `uop_ops::registry()`). A program carries its float type;
//! the `_as` methods convert a program to f32 or f64 so one source gives both.

use std::path::{Path, PathBuf};

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
    /// No kernels yet; `.uop` files may use micro ops only.
    pub fn new() -> Self {
        Self::with_registry(Registry::new())
    }

    /// No kernels yet; `.uop` files may call the macro ops of `registry`.
    pub fn with_registry(registry: Registry) -> Self {
        Kernels {
            registry,
            module: RustModule::new(RustOptions::default()),
            inputs: Vec::new(),
        }
    }

    /// Sets how generated accesses are checked (see [`Checks`]); default
    /// [`Checks::Proven`].
    pub fn checks(mut self, checks: Checks) -> Self {
        self.module.set_checks(checks);
        self
    }

    /// Standalone mode: the file holds a copy of the runtime (`mod rt`) instead
    /// of importing the crate `uop-runtime`, so the crate needs no dependency.
    pub fn standalone(mut self, standalone: bool) -> Self {
        self.module.set_standalone(standalone);
        self
    }

    /// Adds `program` as the kernel `name` (a snake_case identifier), in the
    /// program's own float type.
    pub fn add(&mut self, name: &str, program: &Program) -> Result<&mut Self, BuildError> {
        self.module.add(name, program)?;
        Ok(self)
    }

    /// Adds the gradient of `program` for `spec` as the kernel `name`. Its
    /// arguments are the gradient program's inputs (forward inputs it reads, then
    /// seeds `g_<output>`, then supplied forward values) and its outputs are
    /// `g_<input>` for each entry of `spec.wrt`; the doc comment lists them in
    /// order (see [`crate::grad`] for the naming).
    pub fn add_gradient(
        &mut self,
        name: &str,
        program: &Program,
        spec: &GradSpec,
    ) -> Result<&mut Self, BuildError> {
        let grad = gradient(program, spec).map_err(|source| BuildError::Grad {
            name: name.into(),
            source: Box::new(source),
        })?;
        let note = gradient_doc(program, &grad);
        self.module.add_with_note(name, &grad.program, &note)?;
        Ok(self)
    }

    /// Adds `program` as the kernel `name` and its gradient as `{name}_grad`, with
    /// respect to every float input, every float output seeded and nothing
    /// supplied (see [`full_gradient_spec`]).
    pub fn add_with_gradient(
        &mut self,
        name: &str,
        program: &Program,
    ) -> Result<&mut Self, BuildError> {
        self.add(name, program)?;
        self.add_gradient(
            &format!("{name}_grad"),
            program,
            &full_gradient_spec(program),
        )
    }

    /// Adds `program` converted to the float type `dtype` (f32 or f64).
    pub fn add_as(
        &mut self,
        name: &str,
        program: &Program,
        dtype: DType,
    ) -> Result<&mut Self, BuildError> {
        let converted = with_float_type(program, dtype).ok_or(BuildError::NotFloat {
            name: name.into(),
            dtype,
        })?;
        self.add(name, &converted)
    }

    /// Parses `.uop` text and adds it as the kernel `name`.
    pub fn add_text(&mut self, name: &str, src: &str) -> Result<&mut Self, BuildError> {
        let program = self.parse(&format!("<text of {name}>"), src)?;
        self.add(name, &program)
    }

    /// Reads and adds a `.uop` file in its own float type; the file is reported to
    /// cargo by [`Kernels::write`] so the build reruns when it changes.
    pub fn add_file(
        &mut self,
        name: &str,
        path: impl AsRef<Path>,
    ) -> Result<&mut Self, BuildError> {
        let program = self.read(path.as_ref())?;
        self.add(name, &program)
    }

    /// Like [`Kernels::add_file`], converting the program to the float type `dtype`.
    pub fn add_file_as(
        &mut self,
        name: &str,
        path: impl AsRef<Path>,
        dtype: DType,
    ) -> Result<&mut Self, BuildError> {
        let program = self.read(path.as_ref())?;
        self.add_as(name, &program, dtype)
    }

    /// Adds every `*.uop` file of `dir` (sorted by name) once per float type in
    /// `dtypes`, as the kernel `{file stem}_{dtype}` (`softmax_f32`). The directory
    /// is watched too, so an added file reruns the build. Returns the kernel names.
    pub fn add_dir(
        &mut self,
        dir: impl AsRef<Path>,
        dtypes: &[DType],
    ) -> Result<Vec<String>, BuildError> {
        self.add_dir_with_gradients(dir, dtypes, None)
    }

    /// Like [`Kernels::add_dir`], adding for each kernel `{stem}_{dtype}` its
    /// gradient `{stem}_{dtype}_grad` as well ([`Kernels::add_with_gradient`]),
    /// unless the file stem is in `Some(no_gradient)` (programs whose gradient is
    /// zero or undefined, such as an argmax); `None` adds no gradient at all.
    /// Returns the kernel names, each forward kernel followed by its gradient.
    pub fn add_dir_with_gradients(
        &mut self,
        dir: impl AsRef<Path>,
        dtypes: &[DType],
        no_gradient: Option<&[&str]>,
    ) -> Result<Vec<String>, BuildError> {
        let dir = dir.as_ref();
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
        let mut names = Vec::new();
        for file in files {
            let stem = file
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            let program = self.read(&file)?;
            let with_gradient = no_gradient.is_some_and(|skip| !skip.contains(&stem.as_str()));
            for &dtype in dtypes {
                let name = format!("{stem}_{dtype}");
                self.add_as(&name, &program, dtype)?;
                names.push(name.clone());
                if with_gradient {
                    let grad_name = format!("{name}_grad");
                    let converted =
                        with_float_type(&program, dtype).ok_or(BuildError::NotFloat {
                            name: grad_name.clone(),
                            dtype,
                        })?;
                    self.add_gradient(&grad_name, &converted, &full_gradient_spec(&converted))?;
                    names.push(grad_name);
                }
            }
        }
        Ok(names)
    }

    /// The kernel names added so far, in order.
    pub fn names(&self) -> Vec<String> {
        self.module.names().map(str::to_string).collect()
    }

    /// The generated Rust source.
    pub fn source(&self) -> Result<String, BuildError> {
        Ok(self.module.source()?)
    }

    /// Writes the source to `$OUT_DIR/{file_name}` and prints
    /// `cargo:rerun-if-changed` for every file and directory read. Returns the path.
    pub fn write(&self, file_name: &str) -> Result<PathBuf, BuildError> {
        let out_dir = std::env::var_os("OUT_DIR").ok_or(BuildError::NoOutDir)?;
        let path = Path::new(&out_dir).join(file_name);
        self.write_to(&path)?;
        for input in &self.inputs {
            println!("cargo:rerun-if-changed={}", input.display());
        }
        Ok(path)
    }

    /// Writes the source to `path`, leaving the file untouched when it is
    /// already up to date (so dependents are not rebuilt for nothing).
    pub fn write_to(&self, path: &Path) -> Result<(), BuildError> {
        let source = self.source()?;
        if std::fs::read_to_string(path).is_ok_and(|old| old == source) {
            return Ok(());
        }
        std::fs::write(path, source).map_err(|source| BuildError::Write {
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

/// The gradient request [`Kernels::add_with_gradient`] makes: with respect to every
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
