//! `uop run` on a graph: the graph executor (`--backend cranelift`, the default for
//! graphs, or `loops`) or the graph interpreter (`--backend interp`, the oracle).

use std::collections::HashMap;

use uop_codegen::compile::CompileOptions;
use uop_codegen::pass::{PassOptions, pipeline};
use uop_codegen::tensor::Tensor;
use uop_exec::{self as exec, ExecOptions};
use uop_graph::Graph;
use uop_graph::interp::name_run_error;
use uop_graph::pass::{DECISIONS, PrepareOptions, pass_names};

use super::{BackendArg, CliError, fail};

/// The flags of `uop run` that say how a graph runs.
#[derive(Clone, Debug, Default)]
pub(crate) struct GraphFlags {
    /// `--backend` (the executor on Cranelift when `None`).
    pub backend: Option<BackendArg>,
    /// `--streams`.
    pub streams: Option<usize>,
    /// `--disable-pass`: graph passes and loop-IR passes.
    pub disable_pass: Vec<String>,
    /// `--time-passes`.
    pub time_passes: bool,
    /// `--rewrite-limit`.
    pub rewrite_limit: Option<usize>,
    /// `--max-iterations`: the most trips any one `while` may make (every backend).
    pub max_iterations: Option<u64>,
}

impl GraphFlags {
    /// Every flag at its default but the backend.
    pub(crate) fn backend(backend: BackendArg) -> Self {
        GraphFlags {
            backend: Some(backend),
            ..GraphFlags::default()
        }
    }
}

/// Runs `graph` on `inputs` with the engine `--backend` names (the executor on
/// Cranelift when none is given), under the executor's flags of `args`
/// (`--streams`, `--disable-pass`, `--time-passes`, `--rewrite-limit`); with
/// `--time-passes`, the passes' tables go to stderr after the run.
pub(crate) fn execute(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    args: &GraphFlags,
) -> Result<Vec<Tensor>, CliError> {
    // Every size of the whole graph, and what is surely held against the memory
    // limit, before any backend allocates anything.
    let env =
        uop_graph::bind_graph_inputs(graph, inputs, params).map_err(|e| CliError(e.to_string()))?;
    uop_graph::memory::check_sizes(graph, &env, uop_graph::memory::SizeLimit::process())
        .map_err(|e| CliError(e.to_string()))?;
    let backend = match args.backend.unwrap_or(BackendArg::Cranelift) {
        BackendArg::Interp => {
            interpreter_flags_unused(args)?;
            let options = uop_graph::RunOptions {
                max_iterations: args.max_iterations,
            };
            return uop_graph::run_with(graph, inputs, params, &options)
                .map(|r| r.outputs)
                .map_err(|e| CliError(name_run_error(graph, e).to_string()));
        }
        BackendArg::Loops => exec::KernelBackend::Loops,
        BackendArg::Cranelift => exec::KernelBackend::Cranelift,
    };
    let (graph_passes, loop_passes) = disabled_passes(&args.disable_pass)?;
    let options = ExecOptions {
        backend,
        streams: args.streams.map_or(exec::Streams::Auto, exec::Streams::Max),
        prepare: PrepareOptions {
            disabled: graph_passes,
            time_passes: args.time_passes,
            rewrite_limit: args.rewrite_limit,
            ..PrepareOptions::default()
        },
        compile: CompileOptions {
            passes: loop_passes,
            ..CompileOptions::default()
        },
        max_iterations: args.max_iterations,
    };
    let exe = exec::compile_with(graph, &options).map_err(|e| CliError(e.to_string()))?;
    // The executor names its errors after the user's values itself.
    let outputs = exe
        .run_with_params(inputs, params)
        .map_err(|e| CliError(e.to_string()))?;
    if args.time_passes {
        eprint!("{}", exe.report().table());
        if let Some(times) = exe.kernel_pass_times() {
            eprint!("{}", times.table());
        }
    }
    Ok(outputs)
}

/// The graph interpreter runs the graph as written, every node in order: the
/// executor's flags are an error with it.
fn interpreter_flags_unused(args: &GraphFlags) -> Result<(), CliError> {
    let flag = [
        (
            args.streams.is_some(),
            "--streams",
            "runs every node in order",
        ),
        (
            !args.disable_pass.is_empty(),
            "--disable-pass",
            "runs no passes",
        ),
        (args.time_passes, "--time-passes", "runs no passes"),
        (
            args.rewrite_limit.is_some(),
            "--rewrite-limit",
            "runs no passes",
        ),
    ]
    .into_iter()
    .find(|(given, _, _)| *given);
    match flag {
        Some((_, flag, why)) => fail(format!(
            "{flag}: the graph interpreter (--backend interp) {why}"
        )),
        None => Ok(()),
    }
}

/// `--disable-pass` on a graph: each name is a graph pass or decision (for the
/// prepare pipeline) or a loop-IR pass (skipped in every kernel); any other name is
/// an error listing all three.
fn disabled_passes(names: &[String]) -> Result<(Vec<String>, PassOptions), CliError> {
    let graph_passes = pass_names();
    let mut loop_passes: Vec<&str> = Vec::new();
    for p in pipeline() {
        if !loop_passes.contains(&p.name) {
            loop_passes.push(p.name);
        }
    }
    let mut graph = Vec::new();
    let mut loops = PassOptions::default();
    for name in names {
        if graph_passes.contains(&name.as_str()) || DECISIONS.contains(&name.as_str()) {
            graph.push(name.clone());
        } else if loop_passes.contains(&name.as_str()) {
            loops.disabled.push(name.clone());
        } else {
            return fail(format!(
                "--disable-pass {name}: there is no pass `{name}` (graph passes: {}; \
                 decisions: {}; loop passes: {})",
                graph_passes.join(", "),
                DECISIONS.join(", "),
                loop_passes.join(", ")
            ));
        }
    }
    Ok((graph, loops))
}

/// `--streams N`: a stream count, at least 1.
pub(crate) fn stream_count(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("a graph needs at least one stream".into()),
        Ok(n) => Ok(n),
        Err(_) => Err("expected a number of streams, at least 1".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_pass_name_is_both_a_graph_pass_and_a_loop_pass() {
        let loop_passes: Vec<&str> = pipeline().iter().map(|p| p.name).collect();
        for name in pass_names().iter().chain(DECISIONS) {
            assert!(
                !loop_passes.contains(name),
                "`{name}` names a graph pass and a loop-IR pass: --disable-pass would be ambiguous"
            );
        }
    }

    #[test]
    fn disabled_names_go_to_the_graph_or_the_kernels() {
        let names = ["cse", "fuse", "split-joins", "tile"].map(String::from);
        let (graph, loops) = disabled_passes(&names).unwrap();
        assert_eq!(graph, ["cse", "split-joins"]);
        assert_eq!(loops.disabled, ["fuse", "tile"]);
        let err = disabled_passes(&["nope".to_string()]).unwrap_err();
        assert!(
            err.0.starts_with(
                "--disable-pass nope: there is no pass `nope` (graph passes: simplify"
            ),
            "{}",
            err.0
        );
        assert!(
            err.0.contains("; loop passes: dce, fuse, subst, bounds,"),
            "{}",
            err.0
        );
    }
}
