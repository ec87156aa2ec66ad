//! The `uop` command line: argument parsing (clap) and one module per subcommand.
//!
//! One error convention for every failure (see `docs/cli.md`): the first line on
//! stderr is `error: WHAT WENT WRONG`. A command line that does not parse (an
//! unknown command or flag, a missing or invalid value: clap's errors) exits with
//! code 2, clap's usage hint following the first line; every other failure is one
//! [`CliError`] and exits with code 1 (source errors add the caret rendering of
//! [`uop_codegen::diag::Diagnostic`] after the first line).

mod bench;
mod bench_graph;
mod emit;
mod emit_graph;
mod fuzz;
mod grad;
mod grad_check;
mod grad_graph;
mod import;
mod limits;
mod onnx;
mod ops;
mod output;
mod print;
mod run;
mod run_graph;
mod show;
mod source;
mod stats;
mod stats_graph;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use uop_codegen::pass::{PassOptions, pipeline};
use uop_codegen::text::Registry;
use uop_codegen::uop::Program;

/// A command failed; the message says why and what to do.
#[derive(Debug)]
pub struct CliError(pub String);

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CliError {}

/// Shorthand for building a [`CliError`].
pub(crate) fn fail<T>(message: impl Into<String>) -> Result<T, CliError> {
    Err(CliError(message.into()))
}

#[derive(Parser, Debug)]
#[command(
    name = "uop",
    version,
    about = "uop: a micro-op tensor compiler",
    after_help = "Examples:\n  \
        uop run examples/programs/matmul.uop --random 1 --dim M=2 --dim K=3 --dim N=2\n  \
        uop grad examples/programs/softmax.uop --random 1 --dim B=2 --dim N=3\n\n\
        Exit codes: 0 success, 1 the command failed, 2 the command line does not parse; \
        the first line on stderr is `error: ...`."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Which engine executes a program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendArg {
    /// The reference interpreter of micro ops: the oracle every other engine is
    /// tested against; 100 to 300 times slower than `cranelift`.
    Interp,
    /// The loop-IR interpreter, on the lowered program after the optimizer's passes.
    Loops,
    /// Machine code JIT-compiled with Cranelift from the optimized loop IR (the
    /// default for programs).
    Cranelift,
}

/// Which stage of the compiler `uop print` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Stage {
    /// The micro-op program, in the `.uop` text format.
    Uops,
    /// The loop IR after lowering.
    Loops,
    /// The loop IR after the optimizer's pass pipeline.
    Opt,
    /// The gradient program (w.r.t. every float input, every output seeded), as
    /// `.uop` text that parses again (to run, emit or differentiate it).
    Grad,
    /// A graph as parsed, in the `.uop` text format (a program prints as a graph of calls).
    Graph,
    /// The definition hierarchy of a graph: each definition inside the innermost
    /// function it must be in, loop invariants hoisted.
    Hierarchy,
    /// A graph after the prepare passes (simplify, fold, cse, dead, kernels, consts, loops,
    /// memory).
    Prepared,
    /// The kernels the prepare passes form: each kernel's members, what it reads and
    /// gives, and its program in the `.uop` text format.
    Kernels,
    /// The memory plan of the prepared graph for the sizes `--dim` (and `--param`)
    /// give: every buffer's offset, size and live steps, the while state, and the sum
    /// of intermediates, the planned arena and the lower bound.
    Memory,
    /// The static schedule of the prepared graph: per stream its steps (run, signal,
    /// wait) with every node's rank; `--streams N` caps the streams, `--dot` draws it.
    Schedule,
    /// The graph-looping partitions of the prepared graph: each node's partition (a
    /// `chunk` opens the next) and the tensors the Sink holds.
    Partitions,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run a program on .npy inputs (or seeded random data) and write or print its outputs.
    #[command(
        after_help = "Examples:\n  uop run examples/programs/matmul.uop --random 1 --dim M=2 --dim K=3 --dim N=2\n  uop run examples/programs/softmax.uop --random 7 --dim B=2 --dim N=3 --backend interp"
    )]
    Run(run::RunArgs),
    /// Print a program at a stage of the compiler.
    #[command(
        after_help = "Examples:\n  uop print examples/programs/softmax.uop --stage opt --verify\n  uop print examples/programs/softmax.uop --stage grad"
    )]
    Print(print::PrintArgs),
    /// List the ops a `.uop` program can call, with their signatures (`--onnx`: the
    /// ONNX ops a model may use).
    #[command(after_help = "Examples:\n  uop ops soft\n  uop ops --onnx norm")]
    Ops(ops::OpsArgs),
    /// Write an ONNX model as graph text (`.uop`), which every command takes.
    #[command(after_help = "Examples:\n  uop import examples/onnx/mlp.onnx\n\n\
            With -o FILE the text goes to FILE; --input NAME=FILE.npy binds an input the model \
            needs at import (a Reshape's shape, a Slice's starts).")]
    Import(import::ImportArgs),
    /// Check random programs on every execution path against the reference interpreter.
    #[command(
        after_help = "Examples:\n  uop fuzz --cases 20 --seed 1\n  uop fuzz --backend cranelift --cases 10"
    )]
    Fuzz(fuzz::FuzzArgs),
    /// Count blocks, loops and temporaries before and after optimization.
    #[command(
        after_help = "Examples:\n  uop stats examples/programs/matmul.uop --dim M=64 --dim K=64 --dim N=64"
    )]
    Stats(stats::StatsArgs),
    /// Gradients of the outputs (seeded by .npy files, or ones) with respect to inputs.
    #[command(
        after_help = "Examples:\n  uop grad examples/programs/softmax.uop --random 1 --dim B=2 --dim N=3\n  uop grad examples/programs/layer_norm.uop --random 1 --dim B=2 --dim N=4 --grad gamma"
    )]
    Grad(grad::GradArgs),
    /// Generate code for a backend target: Rust source, an object file, its C header, or Cranelift IR.
    #[command(
        after_help = "Examples:\n  uop emit examples/programs/softmax.uop --target rust\n  uop emit examples/programs/matmul.uop --grad --target clif"
    )]
    Emit(emit::EmitArgs),
    /// Time the speed workloads (Rust and Cranelift kernels) against a naive Rust loop,
    /// or a whole graph on the graph executor (`--graph`).
    #[command(
        after_help = "Examples:\n  uop bench --quick --reps 1 --workload matmul_512\n  uop bench --graph examples/graphs/transformer_block.uop --dim T=64 --dim D=64 --dim F=256 --json"
    )]
    Bench(bench::BenchArgs),
}

/// Entry point of the binary: parses arguments, runs the subcommand, reports errors
/// (see the module docs for the convention).
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage(&e),
    };
    let result = match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Print(args) => print::print(&args),
        Command::Ops(args) => ops::ops(&args),
        Command::Import(args) => import::import(&args),
        Command::Fuzz(args) => fuzz::fuzz(&args),
        Command::Stats(args) => stats::stats(&args),
        Command::Grad(args) => grad::grad(&args),
        Command::Emit(args) => emit::emit(&args),
        Command::Bench(args) => bench::bench(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// What a command line clap does not accept gives: help and the version go to
/// stdout with exit code 0; anything else is a usage error, exit code 2, whose
/// first line on stderr is `error: ...`.
fn usage(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            // Printing to a closed stdout is not worth a second error.
            let _ = e.print();
            ExitCode::SUCCESS
        }
        kind => {
            if kind == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                // clap prints the help alone here; the convention wants the error first.
                eprintln!("error: a command is required\n");
            }
            let _ = e.print();
            ExitCode::from(2)
        }
    }
}

/// The macro ops a `.uop` file may call by name.
pub(crate) fn registry() -> Registry {
    uop_ops::registry()
}

/// Reads and parses a `.uop` file that must be a program (not a graph) for
/// `command`; errors name the file and show the caret.
pub(crate) fn load_program(path: &Path, command: &str) -> Result<Program, CliError> {
    source::load_program_only(path, command)
}

/// Splits a `NAME=VALUE` argument.
pub(crate) fn split_assignment<'a>(
    flag: &str,
    arg: &'a str,
) -> Result<(&'a str, &'a str), CliError> {
    match arg.split_once('=') {
        Some((name, value)) if !name.is_empty() && !value.is_empty() => Ok((name, value)),
        _ => fail(format!("{flag} expects NAME=VALUE, got `{arg}`")),
    }
}

/// An error when a name is given twice to one flag (`--param p=2 --param p=3`):
/// which value was meant is not for uop to guess.
fn once_each<T>(flag: &str, list: Vec<(String, T)>) -> Result<Vec<(String, T)>, CliError> {
    let mut seen = std::collections::HashSet::new();
    for (name, _) in &list {
        if !seen.insert(name.as_str()) {
            return fail(format!(
                "{flag} {name} is given more than once: give each name once"
            ));
        }
    }
    Ok(list)
}

/// Parses `NAME=INT` arguments (for `--param` and `--dim`); a name given twice is an
/// error.
pub(crate) fn int_assignments(flag: &str, args: &[String]) -> Result<Vec<(String, i64)>, CliError> {
    let list = args
        .iter()
        .map(|a| {
            let (name, value) = split_assignment(flag, a)?;
            let v = value
                .parse::<i64>()
                .map_err(|_| CliError(format!("{flag} {name}: `{value}` is not an integer")))?;
            Ok((name.trim_start_matches('$').to_string(), v))
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    once_each(flag, list)
}

/// Parses `NAME=FILE` arguments (for `--input` and `--output`); a name given twice is
/// an error.
pub(crate) fn path_assignments(
    flag: &str,
    args: &[String],
) -> Result<Vec<(String, PathBuf)>, CliError> {
    let list = args
        .iter()
        .map(|a| {
            let (name, value) = split_assignment(flag, a)?;
            Ok((name.to_string(), PathBuf::from(value)))
        })
        .collect::<Result<Vec<_>, CliError>>()?;
    once_each(flag, list)
}

/// The pass options of `--disable-pass` arguments; an unknown name is an error
/// listing the passes there are.
pub(crate) fn pass_options(disabled: &[String]) -> Result<PassOptions, CliError> {
    let names: Vec<&str> = pipeline().iter().map(|p| p.name).collect();
    for name in disabled {
        if !names.contains(&name.as_str()) {
            let valid = if names.is_empty() {
                "the pipeline has no passes".to_string()
            } else {
                format!("passes: {}", names.join(", "))
            };
            return fail(format!(
                "--disable-pass {name}: there is no pass `{name}` ({valid})"
            ));
        }
    }
    Ok(PassOptions {
        disabled: disabled.to_vec(),
        ..PassOptions::default()
    })
}
