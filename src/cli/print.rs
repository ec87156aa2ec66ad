//! `uop print`: shows a program at a stage of the compiler, or the loop IR after
//! every optimizer pass.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use uop_codegen::{loops, pass, text::print_program};

use uop_graph::pass::{PrepareOptions, PrintAfter, pass_names, pipeline, prepare};
use uop_graph::print_kernels;
use uop_graph::schedule::{ScheduleOptions, print_schedule, schedule, schedule_dot};
use uop_graph::text::print_graph;
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
    /// Skip this optimizer pass (repeatable); with `--stage prepared`, a graph pass.
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
    /// With `--stage prepared`: print the graph after this graph pass too, or after
    /// every pass with `all` (repeatable).
    #[arg(long = "print-after", value_name = "NAME|all")]
    print_after: Vec<String>,
    /// With `--stage prepared`: print a table of the graph passes (wall time, nodes
    /// and kernels before and after, changed or not) on stderr.
    #[arg(long)]
    time_passes: bool,
    /// With `--stage prepared`: stop after N rewrites in total (to bisect a rewrite).
    #[arg(long, value_name = "N")]
    rewrite_limit: Option<usize>,
    /// With `--stage prepared`: verify the graph before the passes and after every
    /// pass that changed it.
    #[arg(long)]
    verify: bool,
    /// With `--stage schedule`: at most N streams per scope (default: no limit).
    #[arg(long, value_name = "N")]
    streams: Option<usize>,
    /// With `--stage schedule`: write the schedule as a Graphviz graph (nodes coloured
    /// by stream, signal edges dashed) instead of text.
    #[arg(long)]
    dot: bool,
}

/// Runs `uop print`.
pub fn print(args: &PrintArgs) -> Result<(), CliError> {
    if args.stage != Stage::Schedule && (args.streams.is_some() || args.dot) {
        let flag = if args.dot { "--dot" } else { "--streams" };
        return fail(format!("{flag} applies to --stage schedule"));
    }
    let program = match source::load(&args.program)? {
        Source::Graph(g) => return print_graph_stage(args, &g),
        Source::Program(p) => p,
    };
    // `--stage schedule` schedules the prepared graph: its flags are the graph passes'.
    let graph_passes = matches!(args.stage, Stage::Prepared | Stage::Schedule);
    if !graph_passes {
        prepare_flags_unused(args)?;
    }
    let pass_opts = if graph_passes {
        pass::PassOptions::default()
    } else {
        pass_options(&args.disable_pass)?
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
        Stage::Graph | Stage::Hierarchy | Stage::Prepared | Stage::Kernels | Stage::Schedule => {
            // The file itself as a graph: its macro-op calls stay calls (the `kernels`
            // pass groups them by what they compute).
            let graph = source::load_graph(&args.program)?;
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
    if matches!(
        args.stage,
        Stage::Prepared | Stage::Kernels | Stage::Schedule
    ) {
        return print_prepared(args, graph);
    }
    prepare_flags_unused(args)?;
    if !args.disable_pass.is_empty() {
        return fail("--disable-pass: a graph has passes only at --stage prepared");
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
                "--stage {}: a graph has the stages `graph`, `hierarchy`, `prepared` and `kernels` (this \
                 file has control flow; the loop-IR stages are for programs)",
                other
                    .to_possible_value()
                    .map_or("?".into(), |v| v.get_name().to_string())
            ));
        }
    }
    Ok(())
}

/// `--stage schedule`: the static schedule of the prepared graph, as text or DOT.
fn schedule_text(args: &PrintArgs, prepared: &Graph) -> Result<String, CliError> {
    let options = ScheduleOptions {
        max_streams: args.streams,
        ..ScheduleOptions::default()
    };
    let s = schedule(prepared, &options).map_err(|e| CliError(format!("--streams: {e}")))?;
    Ok(if args.dot {
        schedule_dot(prepared, &s)
    } else {
        print_schedule(prepared, &s)
    })
}

/// An error when a flag of `--stage prepared` is given at another stage.
fn prepare_flags_unused(args: &PrintArgs) -> Result<(), CliError> {
    let given = [
        (!args.print_after.is_empty(), "--print-after"),
        (args.time_passes, "--time-passes"),
        (args.rewrite_limit.is_some(), "--rewrite-limit"),
        (args.verify, "--verify"),
    ];
    match given.iter().find(|(on, _)| *on) {
        Some((_, flag)) => fail(format!("{flag} applies to --stage prepared or kernels")),
        None => Ok(()),
    }
}

/// `uop print --stage prepared` (or `kernels`): the graph (or its kernels) after the prepare passes, with the graphs
/// after the passes `--print-after` names before it, and the `--time-passes` table on
/// stderr.
fn print_prepared(args: &PrintArgs, graph: &Graph) -> Result<(), CliError> {
    let graph_passes = || pass_names().join(", ");
    for name in &args.disable_pass {
        if !pass_names().contains(&name.as_str()) {
            return fail(format!(
                "--disable-pass {name}: there is no graph pass `{name}` (graph passes: {})",
                graph_passes()
            ));
        }
    }
    let print_after = if args.print_after.iter().any(|n| n == "all") {
        PrintAfter::All
    } else if args.print_after.is_empty() {
        PrintAfter::None
    } else {
        for name in &args.print_after {
            if !pass_names().contains(&name.as_str()) {
                return fail(format!(
                    "--print-after {name}: there is no graph pass `{name}` (graph passes: {}, \
                     or all)",
                    graph_passes()
                ));
            }
        }
        PrintAfter::Named(args.print_after.clone())
    };
    let options = PrepareOptions {
        disabled: args.disable_pass.clone(),
        print_after,
        time_passes: args.time_passes,
        rewrite_limit: args.rewrite_limit,
        verify: args.verify,
        ..PrepareOptions::default()
    };
    let (prepared, report) =
        prepare(graph.clone(), &options).map_err(|e| CliError(e.to_string()))?;
    for (name, text) in &report.printed {
        let doc = pipeline()
            .iter()
            .find(|p| p.name == *name)
            .map_or("", |p| p.doc);
        println!("# after pass {name}: {doc}");
        print!("{text}");
        println!();
    }
    if !report.printed.is_empty() {
        println!("# prepared");
    }
    match args.stage {
        Stage::Kernels => print!("{}", print_kernels(&prepared)),
        Stage::Schedule => print!("{}", schedule_text(args, &prepared)?),
        _ => print!("{}", print_graph(&prepared)),
    }
    if args.time_passes {
        eprint!("{}", report.table());
    }
    Ok(())
}
