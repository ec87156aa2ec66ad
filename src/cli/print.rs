//! `uop print`: shows a program at a stage of the compiler, or the loop IR after
//! every optimizer pass.

use std::path::PathBuf;

use clap::Args;
use uop_codegen::{loops, pass, text::print_program};

use super::{CliError, Stage, grad, load_program, pass_options};

/// Arguments of `uop print`.
#[derive(Args, Debug)]
pub struct PrintArgs {
    /// The program (`.uop` text).
    program: PathBuf,
    /// The stage to print.
    #[arg(long, value_enum, default_value = "uops")]
    stage: Stage,
    /// Print the lowered loop IR, then the IR after every pass, each under a
    /// `# after pass NAME: WHAT IT DOES` header line.
    #[arg(long, conflicts_with = "stage")]
    after_each_pass: bool,
    /// Skip this optimizer pass (repeatable).
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
}

/// Runs `uop print`.
pub fn print(args: &PrintArgs) -> Result<(), CliError> {
    let pass_opts = pass_options(&args.disable_pass)?;
    let program = load_program(&args.program)?;
    if args.after_each_pass {
        let lowered = loops::lower(&program);
        let trace =
            pass::optimize_traced(&lowered, &pass_opts).map_err(|e| CliError(e.to_string()))?;
        println!("# lowered");
        print!("{lowered}");
        for name in &pass_opts.disabled {
            println!("\n# pass {name} is disabled");
        }
        for (name, after) in &trace {
            let doc = pass::pipeline()
                .iter()
                .find(|p| p.name == *name)
                .map_or("", |p| p.doc);
            println!("\n# after pass {name}: {doc}");
            print!("{after}");
        }
        return Ok(());
    }
    match args.stage {
        Stage::Uops => print!("{}", print_program(&program)),
        Stage::Loops => print!("{}", loops::lower(&program)),
        Stage::Opt => {
            let optimized = pass::optimize(&loops::lower(&program), &pass_opts)
                .map_err(|e| CliError(e.to_string()))?;
            print!("{optimized}");
        }
        Stage::Grad => print!("{}", grad::print_stage(&program)?),
    }
    Ok(())
}
