//! `uop print`: shows a program at a stage of the compiler, or the loop IR after
//! every optimizer pass.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use uop_codegen::compile::{CompileOptions, compile};
use uop_codegen::{loops, pass, text::print_program};

use std::collections::HashMap;

use uop_graph::infer::graph_dims;
use uop_graph::memory::{MemoryError, plan_memory, print_memory};
use uop_graph::pass::{DECISIONS, PrepareOptions, PrintAfter, pass_names, pipeline, prepare};
use uop_graph::print_kernels;
use uop_graph::schedule::{ScheduleOptions, print_schedule, schedule, schedule_dot};
use uop_graph::text::print_graph;
use uop_graph::{Graph, hierarchy, print_hierarchy};

use super::source::{self, Source};
use super::{CliError, Stage, fail, grad, int_assignments, pass_options};

/// Arguments of `uop print`.
#[derive(Args, Clone, Debug)]
pub struct PrintArgs {
    /// The program (`.uop` text), or a loop program as `--stage loops` prints it
    /// (a `.loops` file: printed with `--stage loops`, optimized with `--stage opt` or
    /// `--after-each-pass`).
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
    /// Verify the IR and report what breaks its invariants as an error naming the
    /// stage: with `--stage loops`, `opt` or `--after-each-pass`, the loop IR after
    /// lowering and after every optimizer pass (`loops::verify`: declarations, scopes,
    /// what each schedule mark guarantees); with `--stage prepared`, `kernels` or
    /// `memory`, the graph before the passes and after every pass that changed it.
    #[arg(long)]
    verify: bool,
    /// With `--stage memory`: the size of a named dimension, as NAME=INT (repeatable).
    #[arg(long = "dim", value_name = "NAME=INT")]
    dims: Vec<String>,
    /// With `--stage memory`: the value of a `$param`, as NAME=INT (repeatable).
    #[arg(long = "param", value_name = "NAME=INT")]
    params: Vec<String>,
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
    if args.program.extension().is_some_and(|e| e == "loops") {
        return print_loop_text(args);
    }
    let program = match source::load(&args.program)? {
        Source::Graph(g) => return print_graph_stage(args, &g),
        Source::Onnx(m) => {
            // `--dim` speaks the model's names.
            let args = PrintArgs {
                dims: m.uop_assignments(&args.dims),
                ..args.clone()
            };
            return print_graph_stage(&args, &m.imported.graph);
        }
        Source::Program(p) => p,
    };
    // `--stage schedule` schedules the prepared graph: its flags are the graph passes'.
    let graph_passes = matches!(
        args.stage,
        Stage::Prepared | Stage::Kernels | Stage::Memory | Stage::Schedule | Stage::Partitions
    );
    let loop_stages = args.after_each_pass || matches!(args.stage, Stage::Loops | Stage::Opt);
    if !graph_passes {
        prepare_flags_unused(args, loop_stages)?;
    }
    if args.stage != Stage::Memory {
        memory_flags_unused(args)?;
    }
    let pass_opts = if graph_passes {
        pass::PassOptions::default()
    } else {
        pass_options(&args.disable_pass)?.verified(args.verify)
    };
    if args.after_each_pass {
        return print_each_pass(&loops::lower(&program), &pass_opts);
    }
    match args.stage {
        Stage::Uops => print!("{}", print_program(&program)),
        Stage::Loops => {
            let lowered = loops::lower(&program);
            verified(args, &lowered, "after lowering")?;
            print!("{lowered}");
        }
        Stage::Opt => {
            let options = CompileOptions {
                passes: pass_opts,
                ..CompileOptions::default()
            };
            let optimized = compile(&program, &options).map_err(|e| verify_error(args, e))?;
            print!("{optimized}");
        }
        Stage::Grad => print!("{}", grad::print_stage(&program)?),
        Stage::Graph
        | Stage::Hierarchy
        | Stage::Prepared
        | Stage::Kernels
        | Stage::Memory
        | Stage::Schedule
        | Stage::Partitions => {
            // The file itself as a graph: its macro-op calls stay calls (the `kernels`
            // pass groups them by what they compute).
            let graph = source::load_graph(&args.program)?;
            return print_graph_stage(args, &graph);
        }
    }
    Ok(())
}

/// The lowered program, then the program after every pass that runs, each under a
/// `# after pass NAME: WHAT IT DOES` line (verified when `opts` asks).
fn print_each_pass(lowered: &loops::LoopProgram, opts: &pass::PassOptions) -> Result<(), CliError> {
    let trace = pass::optimize_traced(lowered, opts).map_err(|e| {
        let flag = if opts.verify_each_pass {
            "--verify: "
        } else {
            ""
        };
        CliError(format!("{flag}{e}"))
    })?;
    println!("# lowered");
    print!("{lowered}");
    for name in &opts.disabled {
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
    Ok(())
}

/// With `--verify`: `p` (the lowered program, or the one a file gives: `what`)
/// breaks no invariant.
fn verified(args: &PrintArgs, p: &loops::LoopProgram, what: &str) -> Result<(), CliError> {
    if args.verify {
        loops::verify(p).map_err(|e| CliError(format!("--verify: {what}: {e}")))?;
    }
    Ok(())
}

/// A compile error, marked as the verifier's when `--verify` found it.
fn verify_error(args: &PrintArgs, e: impl std::fmt::Display) -> CliError {
    let flag = if args.verify { "--verify: " } else { "" };
    CliError(format!("{flag}{e}"))
}

/// `uop print FILE.loops`: a loop program as `--stage loops` prints it, printed
/// back (`--stage loops`), optimized (`--stage opt`) or traced through the passes
/// (`--after-each-pass`); `--verify` verifies it, and the program after every pass.
fn print_loop_text(args: &PrintArgs) -> Result<(), CliError> {
    let loop_stages = args.after_each_pass || matches!(args.stage, Stage::Loops | Stage::Opt);
    if !loop_stages {
        return fail(format!(
            "{}: a loop program (`.loops`) has the stages `loops` and `opt` (and --after-each-pass)",
            args.program.display()
        ));
    }
    prepare_flags_unused(args, true)?;
    memory_flags_unused(args)?;
    let src = source::read_source(&args.program)?;
    let p = loops::parse_program(&src)
        .map_err(|e| CliError(format!("{}: {e}", args.program.display())))?;
    let opts = pass_options(&args.disable_pass)?.verified(args.verify);
    verified(args, &p, &args.program.display().to_string())?;
    if args.after_each_pass {
        return print_each_pass(&p, &opts);
    }
    if args.stage == Stage::Loops {
        if !args.disable_pass.is_empty() {
            return fail("--disable-pass applies to --stage opt and --after-each-pass");
        }
        print!("{p}");
        return Ok(());
    }
    let optimized = pass::optimize(&p, &opts).map_err(|e| verify_error(args, e))?;
    print!("{optimized}");
    Ok(())
}

/// `uop print` of a graph: the stages a graph has so far.
fn print_graph_stage(args: &PrintArgs, graph: &Graph) -> Result<(), CliError> {
    if args.after_each_pass {
        return fail(
            "--after-each-pass traces a program's loop-IR passes; a graph's passes print with \
             --stage prepared --print-after all",
        );
    }
    if args.stage != Stage::Memory {
        memory_flags_unused(args)?;
    }
    if matches!(
        args.stage,
        Stage::Prepared | Stage::Kernels | Stage::Memory | Stage::Schedule | Stage::Partitions
    ) {
        return print_prepared(args, graph);
    }
    prepare_flags_unused(args, false)?;
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
        Stage::Grad => print!("{}", super::grad_graph::print_stage(graph)?),
        other => {
            return fail(format!(
                "--stage {}: a graph has the stages `graph`, `hierarchy`, `grad`, `prepared`, `kernels`, `memory`, `schedule` and `partitions` (this \
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

/// An error when a flag of `--stage prepared` is given at another stage
/// (`--verify` also applies to the loop stages, when `loop_stages`).
fn prepare_flags_unused(args: &PrintArgs, loop_stages: bool) -> Result<(), CliError> {
    let given = [
        (!args.print_after.is_empty(), "--print-after"),
        (args.time_passes, "--time-passes"),
        (args.rewrite_limit.is_some(), "--rewrite-limit"),
    ];
    if let Some((_, flag)) = given.iter().find(|(on, _)| *on) {
        return fail(format!(
            "{flag} applies to --stage prepared, kernels or memory"
        ));
    }
    if args.verify && !loop_stages {
        return fail(
            "--verify applies to --stage loops, opt (or --after-each-pass), prepared, kernels or memory",
        );
    }
    Ok(())
}

/// An error when `--dim` or `--param` is given at a stage other than `memory`.
fn memory_flags_unused(args: &PrintArgs) -> Result<(), CliError> {
    if !args.dims.is_empty() {
        return fail("--dim applies to --stage memory");
    }
    if !args.params.is_empty() {
        return fail("--param applies to --stage memory");
    }
    Ok(())
}

/// The sizes `--dim` and `--param` give, checked against the graph's dims and
/// `$params` (an unknown name or a negative size is an error).
fn memory_sizes(args: &PrintArgs, graph: &Graph) -> Result<HashMap<String, i64>, CliError> {
    let known: Vec<String> = graph_dims(graph).into_iter().map(|(n, _)| n).collect();
    let mut sizes = HashMap::new();
    for (name, v) in int_assignments("--dim", &args.dims)? {
        if !known.contains(&name) {
            return fail(format!(
                "--dim {name}: the graph has no dimension `{name}` (it has: {})",
                if known.is_empty() {
                    "none".into()
                } else {
                    known.join(", ")
                }
            ));
        }
        if v < 0 {
            return fail(format!("--dim {name}={v}: a size cannot be negative"));
        }
        sizes.insert(name, v);
    }
    for (name, v) in int_assignments("--param", &args.params)? {
        if !graph.params.contains(&name) {
            return fail(format!(
                "--param {name}: the graph has no parameter `${name}`"
            ));
        }
        sizes.insert(name, v);
    }
    Ok(sizes)
}

/// `uop print --stage memory`: the plan of the prepared graph.
fn print_memory_stage(
    args: &PrintArgs,
    prepared: &Graph,
    original: &Graph,
) -> Result<(), CliError> {
    let sizes = memory_sizes(args, original)?;
    let plan = plan_memory(prepared, &sizes).map_err(|e| match &e {
        MemoryError::MissingDim { dim, .. } => {
            let flag = if dim.starts_with('$') {
                "--param"
            } else {
                "--dim"
            };
            CliError(format!(
                "--stage memory: {e}: pass {flag} {}=SIZE",
                dim.trim_start_matches('$')
            ))
        }
        _ => CliError(format!("--stage memory: {e}")),
    })?;
    print!("{}", print_memory(prepared, &plan));
    Ok(())
}

/// `uop print --stage prepared` (or `kernels`): the graph (or its kernels) after the prepare passes, with the graphs
/// after the passes `--print-after` names before it, and the `--time-passes` table on
/// stderr.
fn print_prepared(args: &PrintArgs, graph: &Graph) -> Result<(), CliError> {
    let graph_passes = || pass_names().join(", ");
    for name in &args.disable_pass {
        if !pass_names().contains(&name.as_str()) && !DECISIONS.contains(&name.as_str()) {
            return fail(format!(
                "--disable-pass {name}: there is no graph pass `{name}` (graph passes: {}; \
                 decisions: {})",
                graph_passes(),
                DECISIONS.join(", ")
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
        Stage::Memory => print_memory_stage(args, &prepared, graph)?,
        Stage::Schedule => print!("{}", schedule_text(args, &prepared)?),
        Stage::Partitions => print!("{}", uop_graph::looping::print_partitions(&prepared)),
        _ => print!("{}", print_graph(&prepared)),
    }
    if args.time_passes {
        eprint!("{}", report.table());
    }
    Ok(())
}
