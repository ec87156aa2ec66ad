//! `uop print`: shows a program at a stage of the compiler.

use std::path::PathBuf;

use clap::Args;
use uop_codegen::{loops, text::print_program};

use super::{CliError, Stage, grad, load_program};

/// Arguments of `uop print`.
#[derive(Args, Debug)]
pub struct PrintArgs {
    /// The program (`.uop` text).
    program: PathBuf,
    /// The stage to print.
    #[arg(long, value_enum, default_value = "uops")]
    stage: Stage,
}

/// Runs `uop print`.
pub fn print(args: &PrintArgs) -> Result<(), CliError> {
    let program = load_program(&args.program)?;
    match args.stage {
        Stage::Uops => print!("{}", print_program(&program)),
        Stage::Loops => print!("{}", loops::lower(&program)),
        Stage::Grad => print!("{}", grad::print_stage(&program)?),
    }
    Ok(())
}
