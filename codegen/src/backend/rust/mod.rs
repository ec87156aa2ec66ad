//! The Rust backend: optimized loop programs as plain Rust source that depends on
//! the small std-only crate `uop-runtime` (DESIGN.md §8, §12), or with
//! [`RustOptions::standalone`] on nothing but `core` and `std`.
//!
//! A [`RustModule`] collects named kernels and writes one file. For each kernel
//! `NAME` the file has:
//!
//! - `pub fn NAME(x: &[f32], x_shape: [usize; R], ..., $params: i64, ..., y: &mut [f32], ...)
//!   -> Result<(), KernelError>`: inputs (each a buffer and its shape), then the
//!   program's `$params`, then the output buffers. It checks every length,
//!   dimension, parameter-dependent size and size assertion before touching data,
//!   takes its temporaries from a fresh scratch, and runs the loops;
//! - when the loops need memory of their own (temporaries, per-thread rows, packed
//!   panels, partial results): `pub fn NAME_with_scratch(scratch: &rt::Scratch, ...)`
//!   with the same arguments after the scratch, which lends that memory and keeps it
//!   for the next call ([`RustModule::takes_scratch`]);
//! - `pub fn NAME_shapes(x_shape, ..., $params) -> Result<NameShapes, KernelError>`
//!   and `pub struct NameShapes { pub y: [usize; R], ... }` (with `y_len()`), so a
//!   caller can allocate the outputs;
//!
//! and the file has, once, `use uop_runtime as rt;` and `pub use rt::KernelError;`:
//! everything else the kernels call (checks, the worker pool, floor division,
//! NaN-propagating max, `erf`, ...) is the runtime's `rt::...`. In standalone mode
//! the runtime's own source files follow the kernels as `mod rt { ... }`.
//!
//! The code reads like the printed loop IR: one `for` per loop with the IR's index
//! names (`i0`, `i1`, ...), carried variables as `let mut v0`, index arithmetic in
//! `i64` with floor division and modulo (DESIGN.md §3), and a doc comment with the
//! source program and its shape contract.
//!
//! # Bounds checks and `unsafe`
//!
//! An access the bounds pass could not prove in range keeps the program's meaning:
//! a read gives the fill value and a write is skipped (`offset(..)` returns `None`).
//! An access the pass proved in range has no check of its own. With
//! [`Checks::Proven`] (the default) such accesses use `get_unchecked`: the proof
//! holds for every size the kernel accepts, and the kernel has verified every buffer
//! length against its shape before its loops, so the code is safe by construction —
//! provided the bounds pass is right. [`Checks::Full`] emits only safe indexing
//! (`x[at]`), which panics rather than misbehaves if a proof were ever wrong, at
//! some cost in speed. Both are tested against the interpreter.
//!
//! # Arithmetic
//!
//! Values are the program's float type. `+ - * /`, `sqrt`, comparisons, `floor`,
//! `ceil`, `abs`, `max`/`min` and `rsqrt` (evaluated in f64 for f32 programs) give
//! exactly the interpreter's results.
//!
//! In f64 programs `exp`, `ln`, `tanh`, `sin`, `cos`, `powf` and `sigmoid` call
//! std's f64 functions, the interpreter's own (exact results); `erf` is emitted
//! (std has none) and agrees with the interpreter's to a few ulps.
//!
//! In f32 programs `exp`, `log`, `tanh`, `sigmoid`, `erf`, `sin`, `cos` and `pow`
//! call the branch-free functions of [`vmath`] (the runtime's, `rt::vmath::exp_f32`):
//! polynomials after range reduction, no libm call, so loops over them vectorize.
//! Their distance to the interpreter's correctly rounded value, measured over the
//! whole f32 range (`runtime/tests/vmath_ulp.rs`):
//!
//! | function  | max ulp | domain                                       |
//! |-----------|---------|----------------------------------------------|
//! | `exp`     | 1       | all f32                                      |
//! | `log`     | 1       | all f32                                      |
//! | `tanh`    | 1       | all f32                                      |
//! | `sigmoid` | 2       | all f32                                      |
//! | `erf`     | 1       | all f32                                      |
//! | `sin`     | 1       | `\|x\| < 2^30` (beyond: in `[-1, 1]`, not accurate) |
//! | `cos`     | 1       | `\|x\| < 2^30` (beyond: in `[-1, 1]`, not accurate) |
//! | `pow`     | 1       | all f32 `x`, `y` (sampled)                    |
//!
//! Special values (NaN, ±inf, ±0, overflow, underflow into the subnormals, `log 0`,
//! `pow`'s special cases) are the interpreter's. Index arithmetic does not check
//! for overflow inside loops; every size the kernel computes before its loops is
//! checked.
//!
//! ```
//! use uop_codegen::backend::rust::{RustModule, RustOptions};
//! use uop_codegen::uop::{Builder, DType, UnaryOp};
//!
//! let mut b = Builder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N"])?;
//! let y = b.unary(UnaryOp::Exp, x)?;
//! let program = b.combine(&[x], &[y])?;
//!
//! let mut module = RustModule::new(RustOptions::default());
//! module.add("exp_f32", &program)?;
//! let source = module.source()?;
//! assert!(source.contains("pub fn exp_f32(\n    x: &[f32],\n    x_shape: [usize; 1],\n    t1: &mut [f32],\n)"));
//! assert!(source.contains("pub fn exp_f32_shapes(x_shape: [usize; 1])"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod kernel;
mod names;
pub use names::kernel_items;
mod runtime;

/// The vectorizable f32 math generated kernels call, now in the runtime.
pub use uop_runtime::vmath;

use std::collections::HashSet;

use quote::quote;
use thiserror::Error;

use crate::backend::names::{Language, NameError, check_kernel_name};
pub use crate::compile::Checks;
use crate::compile::{self, BackendKind, CompileError, CompileOptions};
use crate::loops::LoopProgram;
use crate::text::print_program;
use crate::uop::Program;

use kernel::KernelSource;

/// Options of the Rust backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RustOptions {
    /// How programs added with [`RustModule::add`] compile (checks, schedule,
    /// passes); the target is Rust.
    pub compile: CompileOptions,
    /// Copy the runtime's sources into the file as `mod rt` (standalone mode),
    /// instead of importing the crate `uop-runtime`: the file then needs only
    /// core and std.
    pub standalone: bool,
    /// Also emit, for each kernel `NAME`, the oracle's entry to it: `NAME_program`
    /// (its program as `.uop` text) and `NAME_dyn` (a call on row-major f64 data of
    /// any shape), which `uop::testing::check_kernel` takes.
    pub oracle: bool,
}

impl Default for RustOptions {
    fn default() -> Self {
        RustOptions {
            compile: CompileOptions::for_backend(BackendKind::Rust),
            standalone: false,
            oracle: false,
        }
    }
}

impl RustOptions {
    /// Full checks and no schedule: generated code without any `unsafe`
    /// ([`CompileOptions::safe`]).
    pub fn safe() -> Self {
        RustOptions {
            compile: CompileOptions::safe(),
            standalone: false,
            oracle: false,
        }
    }

    /// These options with `checks` (full checks need [`RustOptions::schedule`]`(false)`).
    pub fn checks(mut self, checks: Checks) -> Self {
        self.compile.checks = checks;
        self
    }

    /// These options with the schedule passes on (the default) or off.
    pub fn schedule(mut self, schedule: bool) -> Self {
        self.compile.schedule = schedule;
        self
    }

    /// These options with standalone mode on or off (see [`RustOptions::standalone`]).
    pub fn standalone(mut self, standalone: bool) -> Self {
        self.standalone = standalone;
        self
    }

    /// These options with the oracle's entries on or off (see [`RustOptions::oracle`]).
    pub fn oracle(mut self, oracle: bool) -> Self {
        self.oracle = oracle;
        self
    }
}

/// Why Rust source could not be generated.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum EmitError {
    /// A kernel name breaks the rule of [`names`](crate::backend::names).
    #[error(transparent)]
    InvalidName(#[from] NameError),
    /// Two kernels, or a kernel and a generated item, would have the same name.
    #[error("the kernel name `{name}` clashes with `{item}`, another item of the generated file")]
    NameClash {
        /// The kernel name given.
        name: String,
        /// The item it clashes with.
        item: String,
    },
    /// The program uses something the backend cannot express.
    #[error("kernel `{kernel}`: {message}")]
    Unsupported {
        /// The kernel.
        kernel: String,
        /// What is unsupported.
        message: String,
    },
    /// The compile options are invalid.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The generated tokens did not parse as Rust (a bug in the backend).
    #[error("internal error: the generated code does not parse: {0}")]
    Syntax(String),
}

/// A set of named kernels that becomes one Rust source file.
#[derive(Clone, Debug)]
pub struct RustModule {
    options: RustOptions,
    kernels: Vec<KernelSource>,
    /// Every module-level name taken so far.
    taken: HashSet<String>,
}

impl RustModule {
    /// An empty module generated with `options`.
    pub fn new(options: RustOptions) -> Self {
        RustModule {
            options,
            kernels: Vec::new(),
            taken: runtime::RESERVED.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Changes how accesses are checked, for every kernel of the module.
    pub fn set_checks(&mut self, checks: Checks) {
        self.options.compile.checks = checks;
    }

    /// Turns the schedule on or off, for every kernel of the module.
    pub fn set_schedule(&mut self, schedule: bool) {
        self.options.compile.schedule = schedule;
    }

    /// Turns standalone mode on or off (see [`RustOptions::standalone`]).
    pub fn set_standalone(&mut self, standalone: bool) {
        self.options.standalone = standalone;
    }

    /// Turns the oracle's entries on or off (see [`RustOptions::oracle`]).
    pub fn set_oracle(&mut self, oracle: bool) {
        self.options.oracle = oracle;
    }

    /// Adds `program` as the kernel `name`: compiles it ([`compile::compile`]) with
    /// the module's options and keeps its `.uop` text for the doc comment.
    pub fn add(&mut self, name: &str, program: &Program) -> Result<&mut Self, EmitError> {
        let optimized = compile::compile(program, &self.compile_options()?)?;
        self.add_loops(name, &print_program(program), optimized)
    }

    /// The module's compile options, for the Rust target.
    fn compile_options(&self) -> Result<CompileOptions, CompileError> {
        let options = self.options.compile.narrow_to(BackendKind::Rust)?;
        options.validate()?;
        Ok(options)
    }

    /// Like [`RustModule::add`], with `note` (Markdown, one paragraph or more)
    /// added to the kernel's doc comment after the source program.
    pub fn add_with_note(
        &mut self,
        name: &str,
        program: &Program,
        note: &str,
    ) -> Result<&mut Self, EmitError> {
        self.add(name, program)?;
        if let Some(k) = self.kernels.last_mut() {
            k.note = note.into();
        }
        Ok(self)
    }

    /// Adds an already lowered (and possibly optimized) loop program as the kernel
    /// `name`; `source_text` is what its doc comment shows as the source program.
    pub fn add_loops(
        &mut self,
        name: &str,
        source_text: &str,
        program: LoopProgram,
    ) -> Result<&mut Self, EmitError> {
        check_kernel_name(name, Language::Rust)?;
        let items = names::kernel_items(name);
        for item in &items {
            if self.taken.contains(item) {
                return Err(EmitError::NameClash {
                    name: name.into(),
                    item: item.clone(),
                });
            }
        }
        self.taken.extend(items);
        self.kernels.push(KernelSource {
            name: name.into(),
            text: source_text.into(),
            note: String::new(),
            signature: program.signature(),
            loops: program,
        });
        Ok(self)
    }

    /// The kernel names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kernels.iter().map(|k| k.name.as_str())
    }

    /// The optimized loop program of the kernel `name`, as it is emitted.
    pub fn loops(&self, name: &str) -> Option<&LoopProgram> {
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .map(|k| &k.loops)
    }

    /// Whether the kernel `name` has a `{name}_with_scratch` variant taking its
    /// loops' memory from an `rt::Scratch` the caller keeps (it has one when its
    /// loops need memory besides its inputs and outputs); `None` for a kernel the
    /// module does not have.
    ///
    /// # Errors
    ///
    /// As [`RustModule::source`].
    pub fn takes_scratch(&self, name: &str) -> Result<Option<bool>, EmitError> {
        let options = self.compile_options()?;
        self.kernels
            .iter()
            .find(|k| k.name == name)
            .map(|k| kernel::takes_scratch(k, &options))
            .transpose()
    }

    /// The formatted source of the whole file.
    pub fn source(&self) -> Result<String, EmitError> {
        let options = self.compile_options()?;
        let mut items = Vec::new();
        for k in &self.kernels {
            items.push(kernel::emit(k, &options)?);
            if self.options.oracle {
                items.push(kernel::oracle(k, &options)?);
            }
        }
        let imports = runtime::imports(self.options.standalone);
        let tokens = quote! {
            #imports
            #(#items)*
        };
        let file: syn::File = syn::parse2(tokens).map_err(|e| EmitError::Syntax(e.to_string()))?;
        let mut out = String::from(if self.options.standalone {
            HEADER_STANDALONE
        } else {
            HEADER
        });
        out.push_str(&blank_lines_between_items(&prettyplease::unparse(&file)));
        if self.options.standalone {
            out.push('\n');
            out.push_str(&runtime::standalone_module());
        }
        Ok(out)
    }
}

/// The formatter puts top-level items right after each other; a blank line after
/// each item's closing brace, and after the imports, reads like hand-written code.
/// Inside an `impl`, a documented item after another one gets a blank line too.
fn blank_lines_between_items(src: &str) -> String {
    let mut out = String::with_capacity(src.len() + src.len() / 20);
    let mut previous_closed_item = false;
    let mut previous_nested_end = false;
    let mut previous_import = false;
    for line in src.lines() {
        let import = line.starts_with("use ") || line.starts_with("pub use ");
        if (previous_closed_item || (previous_import && !import))
            && !line.is_empty()
            && !line.starts_with([' ', '}', ')'])
        {
            out.push('\n');
        }
        if previous_nested_end && line.starts_with("    ///") {
            out.push('\n');
        }
        out.push_str(line);
        out.push('\n');
        previous_closed_item = line == "}";
        previous_import = import && line.ends_with(';');
        previous_nested_end = line == "    }"
            || (line.starts_with("    ") && !line.starts_with("     ") && line.ends_with(';'));
    }
    out
}

const HEADER: &str = "\
// @generated by uop-codegen from micro-op programs; do not edit (change the programs).
// Needs the crate `uop-runtime` (imported as `rt`). Include it in a module of its own, e.g.
//     mod kernels { include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\")); }

";

const HEADER_STANDALONE: &str = "\
// @generated by uop-codegen from micro-op programs; do not edit (change the programs).
// Standalone: needs only core and std; the runtime its kernels call is `mod rt`
// at the end. Include it in a module of its own, e.g.
//     mod kernels { include!(concat!(env!(\"OUT_DIR\"), \"/kernels.rs\")); }

";

/// The source of a file with the single kernel `name` computing `program`.
pub fn emit(name: &str, program: &Program, options: &RustOptions) -> Result<String, EmitError> {
    let mut module = RustModule::new(options.clone());
    module.add(name, program)?;
    module.source()
}
