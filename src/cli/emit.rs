//! `uop emit`: compiles a program ahead of time.
//!
//! `uop emit PROG.uop --target object|clif|header [-o FILE] [--name NAME]`
//!
//! - `object`: a relocatable object file for this machine defining the C functions
//!   `NAME` and `NAME_shapes` (link with `-lm`); needs `-o`.
//! - `header`: the C header declaring them, with the argument layout.
//! - `clif`: the Cranelift IR of both functions, as generated.
//!
//! `NAME` defaults to the program file's stem.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use uop_codegen::backend::cranelift::{self as backend, Options};

use super::{CliError, fail, load_program};

/// What `uop emit` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
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
    /// What to produce.
    #[arg(long, value_enum)]
    target: Target,
    /// Write here instead of standard output (required for `object`).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<PathBuf>,
    /// The C name of the kernel (default: the program file's stem).
    #[arg(long)]
    name: Option<String>,
}

/// Runs `uop emit`.
pub fn emit(args: &EmitArgs) -> Result<(), CliError> {
    let program = load_program(&args.program)?;
    let name = match &args.name {
        Some(n) => n.clone(),
        None => args
            .program
            .file_stem()
            .map(|s| s.to_string_lossy().replace(['-', '.', ' '], "_"))
            .unwrap_or_else(|| "kernel".to_string()),
    };
    let err = |e: backend::JitError| CliError(e.to_string());
    let optimized = backend::optimized(&program).map_err(err)?;
    let bytes: Vec<u8> = match args.target {
        Target::Object => {
            if args.output.is_none() {
                return fail("--target object writes a binary file: pass -o FILE.o");
            }
            backend::emit_object(&optimized, &name, &Options::default()).map_err(err)?
        }
        Target::Clif => backend::emit_clif(&optimized, &name, &Options::default())
            .map_err(err)?
            .into_bytes(),
        Target::Header => backend::c_header(&optimized, &name)
            .map_err(err)?
            .into_bytes(),
    };
    match &args.output {
        Some(path) => std::fs::write(path, bytes)
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display()))),
        None => {
            print!("{}", String::from_utf8_lossy(&bytes));
            Ok(())
        }
    }
}
