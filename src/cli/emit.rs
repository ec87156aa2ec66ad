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
//! `--grad`, which emits the gradient kernel, see `uop_codegen::build::gradient_doc`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use uop_codegen::backend::cranelift::{self, Options};
use uop_codegen::backend::rust::{self, Checks, RustModule, RustOptions};
use uop_codegen::build::{full_gradient_spec, gradient_doc};
use uop_codegen::grad::gradient;

use super::output::OutputFiles;
use super::{CliError, fail, load_program};

/// What `uop emit` generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
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
    target: Target,
    /// Write here instead of to standard output (required for `object`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// The kernel's name (default: the program file's name, in snake_case).
    #[arg(long)]
    name: Option<String>,
    /// Emit only safe indexing, no `unsafe` (Rust target); the kernel is then
    /// unscheduled (no threads, tiles or per-CPU copies), which need `unsafe`.
    #[arg(long)]
    full_checks: bool,
    /// Copy the runtime's sources into the file as `mod rt` instead of importing
    /// the crate `uop-runtime`, so that it needs only core and std (Rust target).
    #[arg(long)]
    standalone: bool,
    /// Emit the gradient kernel instead (Rust target): with respect to every
    /// float input, every float output seeded; named `NAME_grad` by default.
    #[arg(long)]
    grad: bool,
}

/// Runs `uop emit`.
pub fn emit(args: &EmitArgs) -> Result<(), CliError> {
    let program = load_program(&args.program, "emit")?;
    if args.grad && args.target != Target::Rust {
        return fail("--grad is supported for --target rust only");
    }
    if args.standalone && args.target != Target::Rust {
        return fail("--standalone is supported for --target rust only");
    }
    if args.full_checks && args.target != Target::Rust {
        return fail("--full-checks is supported for --target rust only");
    }
    let name = match &args.name {
        Some(n) => n.clone(),
        None if args.grad => format!("{}_grad", default_name(&args.program)),
        None => default_name(&args.program),
    };
    let jit_err = |e: cranelift::JitError| CliError(e.to_string());
    let bytes: Vec<u8> = match args.target {
        Target::Rust => {
            let checks = if args.full_checks {
                Checks::Full
            } else {
                Checks::Proven
            };
            let at =
                |e: &dyn std::fmt::Display| CliError(format!("{}: {e}", args.program.display()));
            // Full checks promise Rust without `unsafe`, which a schedule needs: the
            // flag asks for both (see `uop_codegen::compile`).
            let options = RustOptions::default()
                .checks(checks)
                .schedule(checks == Checks::Proven)
                .standalone(args.standalone);
            if args.grad {
                let grad = gradient(&program, &full_gradient_spec(&program)).map_err(|e| at(&e))?;
                let mut module = RustModule::new(options);
                module
                    .add_with_note(&name, &grad.program, &gradient_doc(&program, &grad))
                    .map_err(|e| at(&e))?;
                module.source().map_err(|e| at(&e))?.into_bytes()
            } else {
                rust::emit(&name, &program, &options)
                    .map_err(|e| at(&e))?
                    .into_bytes()
            }
        }
        Target::Object => {
            if args.output.is_none() {
                return fail("--target object writes a binary file: pass -o FILE.o");
            }
            let optimized = cranelift::optimized(&program).map_err(jit_err)?;
            cranelift::emit_object(&optimized, &name, &Options::default()).map_err(jit_err)?
        }
        Target::Clif => {
            let optimized = cranelift::optimized(&program).map_err(jit_err)?;
            cranelift::emit_clif(&optimized, &name, &Options::default())
                .map_err(jit_err)?
                .into_bytes()
        }
        Target::Header => {
            let optimized = cranelift::optimized(&program).map_err(jit_err)?;
            cranelift::c_header(&optimized, &name)
                .map_err(jit_err)?
                .into_bytes()
        }
    };
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

/// `examples/Layer-Norm.uop` -> `layer_norm`; a leading digit gets a `k_` prefix.
fn default_name(path: &Path) -> String {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert_str(0, "k_");
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_names_are_snake_case() {
        assert_eq!(default_name(Path::new("a/Layer-Norm.uop")), "layer_norm");
        assert_eq!(default_name(Path::new("2d.uop")), "k_2d");
    }
}
