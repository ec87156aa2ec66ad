//! `uop print`: shows a program at a stage of the compiler, or the loop IR after
//! every optimizer pass.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use uop_codegen::{loops, pass, text::print_program};

use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, hierarchy, print_hierarchy};

use super::source::{self, Source};
use super::{CliError, Stage, fail, grad, pass_options};

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
    let program = match source::load(&args.program)? {
        Source::Graph(g) => return print_graph_stage(args, &g),
        Source::Program(p) => p,
    };
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
        Stage::Graph | Stage::Hierarchy => {
            let src = print_program(&program);
            let graph = parse_graph(&src, uop_graph::default_registry())
                .map_err(|e| CliError(format!("the program as a graph: {e}")))?;
            return print_graph_stage(args, &graph);
        }
    }
    Ok(())
}

/// `uop print` of a graph: the stages a graph has so far.
fn print_graph_stage(args: &PrintArgs, graph: &Graph) -> Result<(), CliError> {
    if args.after_each_pass {
        return fail("--after-each-pass: graphs have no optimizer passes yet");
    }
    match args.stage {
        Stage::Uops | Stage::Graph => {
            let text = print_graph(graph);
            print!("{text}");
            if !text.ends_with('\n') {
                println!();
            }
        }
        Stage::Hierarchy => {
            let h = hierarchy(graph).map_err(|e| CliError(e.to_string()))?;
            print!("{}", print_hierarchy(graph, &h));
        }
        other => {
            return fail(format!(
                "--stage {}: a graph has the stages `graph` and `hierarchy` (this file has \
                 control flow; the loop-IR stages are for programs)",
                other.to_possible_value().map_or("?".into(), |v| v.get_name().to_string())
            ));
        }
    }
    Ok(())
}
