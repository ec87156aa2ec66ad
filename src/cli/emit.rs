//! `uop emit`: generates code for a backend target. Each target is one arm of the
//! match in [`emit`]:
//!
//! - `rust`: Rust source (the build-time backend): a kernel function and its shapes
//!   function, calling the crate `uop-runtime` (`use uop_runtime as rt;`), or with
//!   `--standalone` a copy of it (`mod rt`), depending on nothing but core and std.
//! - `object`: a relocatable object file for this machine (Cranelift) defining the C
//!   functions `NAME` and `NAME_shapes` (link with `-lm`); needs `-o`.
//! - `header`: the C header declaring them, with the argument layout.
//! - `clif`: the Cranelift IR of both functions, as generated.
//!
//! `NAME` defaults to the program file's stem in snake_case (`_grad` appended with
//! `--grad`, which emits the gradient kernel for any target: the kernel of the
//! program `uop print --stage grad` writes, see `uop_codegen::build::gradient_doc`).
//! Either way it is checked against the kernel name rule of
//! `uop_codegen::backend::names` (docs/kernel-names.md): refused, never renamed.
//!
//! A graph file (or any file with `--graph`) becomes one Rust module with its
//! kernels and a function running the whole graph ([`super::emit_graph`]).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use uop_codegen::backend::names::{Language, check_kernel_name};
use uop_codegen::backend::rust::{self, Checks, RustModule, RustOptions};
use uop_codegen::build::{full_gradient_spec, gradient_doc};
use uop_codegen::grad::gradient;
use uop_cranelift::{self as cranelift, Options};

use uop_graph::grad::TapeMode;

use super::emit_graph::{GraphRequest, emit_graph_file};
use super::grad::TapeArg;
use super::output::OutputFiles;
use super::{CliError, fail, load_program};

/// What `uop emit` generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TargetArg {
    /// Rust source: a kernel function and its shapes function, calling the crate
    /// `uop-runtime` (or, with `--standalone`, a copy of it in the file).
    Rust,
    /// A relocatable object file (Cranelift, this machine's ISA).
    Object,
    /// The Cranelift IR of the kernel, as text.
    Clif,
    /// The C header of the object file's functions.
    Header,
}

/// Arguments of `uop emit`.
#[derive(Args, Debug)]
pub struct EmitArgs {
    /// The program (`.uop` text).
    program: PathBuf,
    /// What to generate.
    #[arg(long, value_enum, default_value = "rust")]
    target: TargetArg,
    /// Write here instead of to standard output (required for `object`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// The kernel's name (default: the program file's name, in snake_case).
    ///
    /// Lowercase snake_case starting with a letter, and not `main`. For `rust`,
    /// not a Rust keyword; for `object`, `header` and `clif` (C symbols), not a C
    /// or C++ keyword, not a C library or common POSIX name (`free`, `exp`,
    /// `printf`, ...) and not ending in `_t`. A name that breaks the rule is
    /// refused, never renamed (see docs/kernel-names.md).
    #[arg(long, verbatim_doc_comment)]
    name: Option<String>,
    /// Emit only safe indexing, no `unsafe` (Rust target); the kernel is then
    /// unscheduled (no threads, tiles or per-CPU copies), which need `unsafe`.
    #[arg(long)]
    full_checks: bool,
    /// Copy the runtime's sources into the file as `mod rt` instead of importing
    /// the crate `uop-runtime`, so that it needs only core and std (Rust target).
    #[arg(long)]
    standalone: bool,
    /// Emit the gradient kernel instead (every target): with respect to every
    /// float input, every float output seeded; named `NAME_grad` by default. Its
    /// arguments are those of the program `uop print --stage grad` writes. For a
    /// graph: the gradient graph (`uop print --stage grad`) as one function
    /// `NAME_grad`.
    #[arg(long)]
    grad: bool,
    /// Emit the file as a whole graph: its kernels and one function `NAME` running
    /// them, with a workspace for the intermediates (Rust target). A file with
    /// `fn`, `while`, `case`, `if`, `parallel` or `call` is always emitted so.
    #[arg(long)]
    graph: bool,
    /// Graphs with `while`, with `--grad`: how the gradient gets the states of the
    /// forward iterations (as `uop grad --tape`). With `stack` (the default) the
    /// gradient function takes a `param_tape_N` per loop: the tape's rows, at least
    /// the loop's trip count.
    #[arg(long, value_enum, value_name = "HOW")]
    tape: Option<TapeArg>,
}

/// Runs `uop emit`.
pub fn emit(args: &EmitArgs) -> Result<(), CliError> {
    let graph_name = args
        .name
        .clone()
        .unwrap_or_else(|| default_name(&args.program));
    if let Some(bytes) = emit_graph_file(&GraphRequest {
        path: &args.program,
        as_graph: args.graph,
        rust: args.target == TargetArg::Rust,
        name: &graph_name,
        standalone: args.standalone,
        full_checks: args.full_checks,
        grad: args.grad.then_some(match args.tape {
            Some(TapeArg::Recompute) => TapeMode::Recompute,
            _ => TapeMode::Stack,
        }),
        grad_name: args
            .name
            .clone()
            .unwrap_or_else(|| format!("{}_grad", default_name(&args.program))),
    })? {
        return write(args, bytes);
    }
    if args.tape.is_some() {
        return fail("--tape applies to the gradients of graphs with `while` loops");
    }
    let forward = load_program(&args.program, "emit")?;
    if args.standalone && args.target != TargetArg::Rust {
        return fail("--standalone is supported for --target rust only");
    }
    if args.full_checks && args.target != TargetArg::Rust {
        return fail("--full-checks is supported for --target rust only");
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None if args.grad => format!("{}_grad", default_name(&args.program)),
        None => default_name(&args.program),
    };
    let language = match args.target {
        TargetArg::Rust => Language::Rust,
        TargetArg::Object | TargetArg::Clif | TargetArg::Header => Language::C,
    };
    if let Err(e) = check_kernel_name(&name, language) {
        return Err(CliError(match &args.name {
            Some(_) => e.to_string(),
            None => format!(
                "{e} (the name comes from the file name {}: choose one with --name)",
                args.program.display()
            ),
        }));
    }
    let at = |e: &dyn std::fmt::Display| CliError(format!("{}: {e}", args.program.display()));
    // With --grad every target compiles the gradient program instead.
    let grad = if args.grad {
        Some(gradient(&forward, &full_gradient_spec(&forward)).map_err(|e| at(&e))?)
    } else {
        None
    };
    let program = grad.as_ref().map_or(&forward, |g| &g.program);
    let jit_err = |e: cranelift::JitError| CliError(e.to_string());
    let bytes: Vec<u8> = match args.target {
        TargetArg::Rust => {
            let options = rust_options(args.full_checks, args.standalone);
            match &grad {
                Some(grad) => {
                    let mut module = RustModule::new(options);
                    module
                        .add_with_note(&name, &grad.program, &gradient_doc(&forward, grad))
                        .map_err(|e| at(&e))?;
                    module.source().map_err(|e| at(&e))?.into_bytes()
                }
                None => rust::emit(&name, program, &options)
                    .map_err(|e| at(&e))?
                    .into_bytes(),
            }
        }
        TargetArg::Object => {
            if args.output.is_none() {
                return fail("--target object writes a binary file: pass -o FILE.o");
            }
            let optimized = cranelift::optimized(program).map_err(jit_err)?;
            cranelift::emit_object(&optimized, &name, &Options::default()).map_err(jit_err)?
        }
        TargetArg::Clif => {
            let optimized = cranelift::optimized(program).map_err(jit_err)?;
            cranelift::emit_clif(&optimized, &name, &Options::default())
                .map_err(jit_err)?
                .into_bytes()
        }
        TargetArg::Header => {
            let optimized = cranelift::optimized(program).map_err(jit_err)?;
            cranelift::c_header(&optimized, &name)
                .map_err(jit_err)?
                .into_bytes()
        }
    };
    write(args, bytes)
}

/// The Rust backend's options for `--full-checks` and `--standalone`. Full checks
/// promise Rust without `unsafe`, which a schedule needs: the flag asks for both
/// (see `uop_codegen::compile`).
pub(super) fn rust_options(full_checks: bool, standalone: bool) -> RustOptions {
    let checks = if full_checks {
        Checks::Full
    } else {
        Checks::Proven
    };
    RustOptions::default()
        .checks(checks)
        .schedule(checks == Checks::Proven)
        .standalone(standalone)
}

/// Writes the generated bytes to `-o FILE` or standard output.
fn write(args: &EmitArgs, bytes: Vec<u8>) -> Result<(), CliError> {
    match &args.output {
        Some(path) => {
            let mut writer = OutputFiles::default();
            writer.add("-o", path, bytes);
            writer.commit()
        }
        None => {
            print!("{}", String::from_utf8_lossy(&bytes));
            Ok(())
        }
    }
}

/// `examples/Layer-Norm.uop` -> `layer_norm`: snake_case of the file's name, every
/// run of other characters one `_` (`ñandú.uop` -> `and`, then `k_and`: a C++
/// keyword), with a `k_` prefix when
/// that does not start with a letter or is not a valid kernel name for every target
/// (`2d.uop` -> `k_2d`, `main.uop` -> `k_main`, `type.uop` -> `k_type`).
fn default_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = uop_codegen::backend::names::snake(&stem)
        .trim_start_matches('_')
        .to_string();
    let valid = |n: &str| {
        check_kernel_name(n, Language::Rust).is_ok() && check_kernel_name(n, Language::C).is_ok()
    };
    if valid(&name) {
        name
    } else if name.is_empty() {
        "k".into()
    } else {
        format!("k_{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_are_snake_case() {
        assert_eq!(default_name(Path::new("a/Layer-Norm.uop")), "layer_norm");
        assert_eq!(default_name(Path::new("2d.uop")), "k_2d");
        assert_eq!(default_name(Path::new("_x.uop")), "x");
        // `and` is a C++ keyword.
        assert_eq!(default_name(Path::new("ñandú.uop")), "k_and");
        assert_eq!(default_name(Path::new("Ñ.uop")), "k");
        assert_eq!(default_name(Path::new("main.uop")), "k_main");
        assert_eq!(default_name(Path::new("free.uop")), "k_free");
        assert_eq!(default_name(Path::new("x__y_.uop")), "x_y");
    }
}
