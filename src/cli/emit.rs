//! `uop emit`: writes a program as source for a backend target. Each target is one
//! arm of the match in [`emit`]; `rust` is the build-time Rust backend.

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use uop_codegen::backend::rust::{self, Checks, RustOptions};

use super::{CliError, load_program};

/// What `uop emit` generates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Target {
    /// Rust source: a kernel function, its shapes function and `KernelError`,
    /// depending on nothing but core and std.
    Rust,
}

/// Arguments of `uop emit`.
#[derive(Args, Debug)]
pub struct EmitArgs {
    /// The program (`.uop` text).
    program: PathBuf,
    /// What to generate.
    #[arg(long, value_enum, default_value = "rust")]
    target: Target,
    /// Write here instead of to standard output.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// The kernel's name (default: the program file's name, in snake_case).
    #[arg(long)]
    name: Option<String>,
    /// Emit only safe indexing, no `unsafe` (Rust target).
    #[arg(long)]
    full_checks: bool,
}

/// Runs `uop emit`.
pub fn emit(args: &EmitArgs) -> Result<(), CliError> {
    let program = load_program(&args.program)?;
    let name = match &args.name {
        Some(n) => n.clone(),
        None => default_name(&args.program),
    };
    let source = match args.target {
        Target::Rust => {
            let checks = if args.full_checks {
                Checks::Full
            } else {
                Checks::Proven
            };
            rust::emit(&name, &program, &RustOptions::default().checks(checks))
                .map_err(|e| CliError(format!("{}: {e}", args.program.display())))?
        }
    };
    match &args.output {
        Some(path) => std::fs::write(path, source)
            .map_err(|e| CliError(format!("cannot write {}: {e}", path.display()))),
        None => {
            print!("{source}");
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
