//! `uop grad` on a graph: the gradient graph (`uop_graph::grad`) run on the graph
//! executor (or the graph interpreter with `--backend interp`), and the gradient
//! graph `uop print --stage grad` writes as graph text.
//!
//! The forward graph runs first, for the outputs (the seeds' shapes and the
//! supplied values) and, when the gradient keeps `while` states on a tape, the
//! trip counts that size the tapes: that forward run is the graph interpreter's
//! (it records them).

use std::collections::HashMap;
use std::path::PathBuf;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::Program;
use uop_graph::grad::{GraphGradRole, GraphGradSpec, GraphGradient, TapeMode, gradient};
use uop_graph::text::print_graph;
use uop_graph::{Graph, RunOptions, Trace, run_with};

use super::output::OutputFiles;
use super::run::{InputArgs, listing};
use super::run_graph::GraphFlags;
use super::{BackendArg, CliError, fail, path_assignments, show, source};
use crate::npy::{read_npy, write_npy_bytes};

/// The `--seed` and `--grad` arguments.
pub(crate) struct GradFiles<'a> {
    /// `OUTPUT=FILE.npy`.
    pub seeds: &'a [String],
    /// `NAME[=FILE.npy]`.
    pub grads: &'a [String],
}

/// How the forward and the gradient graph run.
pub(crate) struct GradRun {
    /// `--backend`.
    pub backend: BackendArg,
    /// `--tape`.
    pub tape: TapeMode,
    /// `--max-iterations`: the most trips of any one `while`, forward or gradient.
    pub max_iterations: Option<u64>,
}

impl GradRun {
    /// The executor's flags for this run.
    fn flags(&self) -> GraphFlags {
        GraphFlags {
            max_iterations: self.max_iterations,
            ..GraphFlags::backend(self.backend)
        }
    }
}

/// Runs `uop grad` on `graph`.
pub(crate) fn grad(
    graph: &Graph,
    source_args: &InputArgs,
    files: &GradFiles<'_>,
    run: &GradRun,
) -> Result<(), CliError> {
    let declared = source::declarations(graph);
    let params = source_args.params(&declared)?;
    let inputs = source_args.gather(&declared)?;
    let names = Names {
        outputs: source::output_names(graph),
        by_input: false,
    };
    grad_of(
        graph,
        &declared,
        &inputs,
        &params,
        &names,
        source_args,
        files,
        run,
    )
}

/// What `uop grad` calls a graph's outputs and gradients.
pub(crate) struct Names {
    /// The forward outputs (`--seed` names them).
    pub outputs: Vec<String>,
    /// The gradient of input `NAME` is printed as `g_NAME` when set (an ONNX model's
    /// names, which the gradient graph's do not keep); else under the gradient
    /// graph's output names.
    pub by_input: bool,
}

/// `uop grad` of `graph` on `inputs` (its inputs as `declared` names them).
#[allow(clippy::too_many_arguments)]
pub(crate) fn grad_of(
    graph: &Graph,
    declared: &Program,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    names: &Names,
    source_args: &InputArgs,
    files: &GradFiles<'_>,
    run: &GradRun,
) -> Result<(), CliError> {
    let wanted = super::grad::wanted_gradients(declared, files.grads)?;
    let seeded = uop_graph::grad::float_outputs(graph);
    let spec = GraphGradSpec {
        seeds: seeded.clone(),
        wrt: wanted.iter().map(|(id, _)| id.0).collect(),
        supplied: seeded.clone(),
        tape: run.tape,
    };
    let g = gradient(graph, &spec).map_err(|e| CliError(e.to_string()))?;
    let (outputs, trace) = forward(graph, inputs, params, run, &g)?;
    let seeds = seed_tensors(&names.outputs, &seeded, &outputs, files.seeds)?;
    let args = g
        .arguments(inputs, &seeds, &outputs)
        .map_err(|e| CliError(e.to_string()))?;
    let grad_params = g.params(&trace, params);
    let result = super::run_graph::execute(&g.graph, &args, &grad_params, &run.flags())?;
    let mut writer = OutputFiles::default();
    source_args.save_inputs(declared, inputs, &mut writer)?;
    let names = if names.by_input {
        wanted
            .iter()
            .map(|(id, _)| format!("g_{}", declared.node(*id).name))
            .collect()
    } else {
        source::output_names(&g.graph)
    };
    let mut printed = String::new();
    for (((input, file), tensor), name) in wanted.iter().zip(&result).zip(&names) {
        match file {
            Some(path) => writer.add(
                format!("--grad {}", declared.node(*input).name),
                path,
                write_npy_bytes(&path.display().to_string(), tensor)
                    .map_err(|e| CliError(e.to_string()))?,
            ),
            None => printed.push_str(&show::render(name, tensor)),
        }
    }
    writer.commit()?;
    print!("{printed}");
    Ok(())
}

/// The forward outputs, and the trip counts when the gradient graph has tapes (from
/// the graph interpreter, which records them).
fn forward(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    run: &GradRun,
    g: &GraphGradient,
) -> Result<(Vec<Tensor>, Trace), CliError> {
    if g.tapes.is_empty() {
        let outputs = super::run_graph::execute(graph, inputs, params, &run.flags())?;
        return Ok((outputs, Trace::default()));
    }
    let options = RunOptions {
        max_iterations: run.max_iterations,
    };
    let r = run_with(graph, inputs, params, &options).map_err(|e| CliError(e.to_string()))?;
    Ok((r.outputs, r.trace))
}

/// One seed per seeded output: from its `--seed` file, else ones of the output's shape.
fn seed_tensors(
    names: &[String],
    seeded: &[usize],
    outputs: &[Tensor],
    args: &[String],
) -> Result<Vec<Tensor>, CliError> {
    let files: HashMap<String, PathBuf> = path_assignments("--seed", args)?.into_iter().collect();
    for name in files.keys() {
        if !seeded.iter().any(|&o| names[o] == *name) {
            return fail(format!(
                "--seed {name}: the graph has no float output `{name}` (its outputs are: {})",
                listing(names.iter())
            ));
        }
    }
    seeded
        .iter()
        .map(|&o| {
            let value = &outputs[o];
            let Some(path) = files.get(&names[o]) else {
                return Tensor::try_filled(&names[o], value.dtype, value.shape.clone(), 1.0)
                    .map_err(|e| CliError(e.to_string()));
            };
            let seed = read_npy(path).map_err(|e| CliError(e.to_string()))?;
            if seed.dtype != value.dtype || seed.shape != value.shape {
                return fail(format!(
                    "--seed {}: {} holds {}{:?}, but output `{}` is {}{:?}",
                    names[o],
                    path.display(),
                    seed.dtype,
                    seed.shape,
                    names[o],
                    value.dtype,
                    value.shape
                ));
            }
            Ok(seed)
        })
        .collect()
}

/// `uop print --stage grad` of a graph: the gradient graph (every float input,
/// every float output seeded, the stack tape) as graph text, its inputs and
/// `$params` explained in `#` comments.
pub(crate) fn print_stage(graph: &Graph) -> Result<String, CliError> {
    let g = gradient(graph, &GraphGradSpec::all(graph)).map_err(|e| CliError(e.to_string()))?;
    let mut out = String::from(
        "# gradient graph: d/d(every float input) of sum(g_y * y) over the outputs y\n",
    );
    let names = source::output_names(graph);
    let input_names: Vec<String> = g
        .graph
        .input_node()
        .map(|n| {
            (0..n.outputs.len())
                .map(|k| n.name(k).unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    for (name, i) in input_names.iter().zip(&g.inputs) {
        let what = match i.role {
            GraphGradRole::Input => "forward input".to_string(),
            GraphGradRole::Seed => format!(
                "seed: the gradient flowing into output `{}`",
                names[i.index]
            ),
            GraphGradRole::Supplied => format!("forward value of output `{}`", names[i.index]),
        };
        out.push_str(&format!("#   {name}: {what}\n"));
    }
    for t in &g.tapes {
        out.push_str(&format!(
            "#   ${}: rows of the tape of the while at {} (its most iterations)\n",
            t.param, t.node
        ));
    }
    out.push_str(&print_graph(&g.graph));
    Ok(out)
}
