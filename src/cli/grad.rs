//! `uop grad`: gradients of a program's outputs with respect to its inputs, and the
//! gradient program `uop print --stage grad` writes as `.uop` text.
//!
//! The gradient computed is that of `sum over outputs y of sum(seed_y * y)`; a
//! missing seed is all ones, i.e. the gradient of the plain sum of the outputs.
//! `--check` compares the gradient program with finite differences instead
//! (`grad_check`).

use std::collections::HashMap;
use std::path::PathBuf;

use clap::Args;
use uop_codegen::grad::{GradRole, GradSpec, Gradient, gradient};
use uop_codegen::pass::PassOptions;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::print_program;
use uop_codegen::uop::{NodeId, Program};
use uop_graph::grad::TapeMode;

use super::output::OutputFiles;
use super::run::{InputArgs, execute, listing};
use super::{BackendArg, CliError, fail, path_assignments, show, source, split_assignment};
use crate::npy::{read_npy, write_npy_bytes};

/// Arguments of `uop grad`.
#[derive(Args, Debug)]
pub struct GradArgs {
    /// The program (`.uop` text).
    program: PathBuf,
    #[command(flatten)]
    source: InputArgs,
    /// The gradient flowing into an output, as OUTPUT=FILE.npy (default: ones).
    #[arg(long = "seed", value_name = "OUTPUT=FILE")]
    seeds: Vec<String>,
    /// An input to differentiate with respect to: NAME=FILE.npy writes the gradient,
    /// NAME alone prints it. Without any, every float input's gradient is printed.
    #[arg(long = "grad", value_name = "NAME[=FILE]")]
    grads: Vec<String>,
    /// The engine that executes the forward and the gradient program: `cranelift`
    /// (the default) JIT-compiles them; `interp` is the reference interpreter (the
    /// oracle, 100 to 300 times slower).
    #[arg(long, value_enum, default_value = "cranelift")]
    backend: BackendArg,
    /// Graphs with `while`: how the gradient gets the states of the forward
    /// iterations. `stack` (the default) keeps every iteration's float state in a
    /// tape (memory: trips × state); `recompute` recomputes them from the initial
    /// state (memory: one state, N·(N−1)/2 extra body runs).
    #[arg(long, value_enum, value_name = "HOW")]
    tape: Option<TapeArg>,
    /// Check the gradient program against central finite differences in f64 (both on
    /// the reference interpreter) at the inputs, instead of printing gradients: prints
    /// the worst error of each input (every input of `--grad`, or every float input)
    /// and fails past the tolerance. Graphs: by the graph interpreter, elements whose
    /// perturbation changes a branch or trip count skipped.
    #[arg(long, conflicts_with = "seeds")]
    check: bool,
    /// With `--check`: the relative tolerance (default 1e-5).
    #[arg(long, value_name = "REL", requires = "check")]
    rel: Option<f64>,
    /// With `--check`: the absolute tolerance (default 1e-6); an element passes when
    /// `|analytic - numeric| <= abs + rel * max(|analytic|, |numeric|)`.
    #[arg(long, value_name = "ABS", requires = "check")]
    abs: Option<f64>,
    /// With `--check`: the finite-difference step (default 1e-6).
    #[arg(long, value_name = "H", requires = "check")]
    step: Option<f64>,
    /// Graphs: stop with an error naming the loop when any one `while` (of the
    /// forward graph or of its gradient) would make more than N trips (default: no
    /// limit). A program has no loops.
    #[arg(long, value_name = "N")]
    max_iterations: Option<u64>,
}

/// The values of `--tape`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TapeArg {
    /// A tape of every iteration's state.
    Stack,
    /// Recomputation from the initial state.
    Recompute,
}

/// `uop grad MODEL.onnx`: gradients with respect to the model's inputs and its float
/// initializers (the weights, graph inputs holding the model's values: those an op
/// needs when the graph is built stay constants), by ONNX name.
fn grad_onnx(args: &GradArgs) -> Result<(), CliError> {
    use super::onnx::{Constants, Weights, load_weights};
    let model = load_weights(
        &args.program,
        &args.source.files()?,
        Constants::Input,
        Weights::Inputs,
    )?;
    let declared = model.declarations();
    let params = args.source.params(&declared)?;
    let inputs = args
        .source
        .gather_onnx(&model, &model.given_declarations())?;
    let tape = match args.tape {
        Some(TapeArg::Recompute) => TapeMode::Recompute,
        _ => TapeMode::Stack,
    };
    if args.check {
        return super::grad_check::check_graph_on(
            &model.imported.graph,
            &declared,
            &inputs,
            &params,
            &args.grads,
            &check_settings(args),
            tape,
        );
    }
    let names = super::grad_graph::Names {
        outputs: model.output_names(),
        by_input: true,
    };
    let (files, run) = graph_settings(args, tape);
    super::grad_graph::grad_of(
        &model.imported.graph,
        &declared,
        &inputs,
        &params,
        &names,
        &args.source,
        &files,
        &run,
    )
}

/// The seed and gradient files and the run settings of `uop grad` on a graph.
fn graph_settings(
    args: &GradArgs,
    tape: TapeMode,
) -> (super::grad_graph::GradFiles<'_>, super::grad_graph::GradRun) {
    let files = super::grad_graph::GradFiles {
        seeds: &args.seeds,
        grads: &args.grads,
    };
    let run = super::grad_graph::GradRun {
        backend: args.backend,
        tape,
        max_iterations: args.max_iterations,
    };
    (files, run)
}

/// Runs `uop grad`.
pub fn grad(args: &GradArgs) -> Result<(), CliError> {
    if super::onnx::is_onnx(&args.program) {
        return grad_onnx(args);
    }
    let program = match source::load(&args.program)? {
        source::Source::Graph(g) => {
            let tape = match args.tape {
                Some(TapeArg::Recompute) => TapeMode::Recompute,
                _ => TapeMode::Stack,
            };
            if args.check {
                return super::grad_check::check_graph(
                    &g,
                    &args.source,
                    &args.grads,
                    &check_settings(args),
                    tape,
                );
            }
            let (files, run) = graph_settings(args, tape);
            return super::grad_graph::grad(&g, &args.source, &files, &run);
        }
        source::Source::Program(p) => p,
        source::Source::Onnx(_) => return grad_onnx(args),
    };
    if args.tape.is_some() {
        return fail("--tape applies to graphs with `while` loops; this file is a program");
    }
    let params = args.source.params(&program)?;
    let inputs = args.source.gather(&program)?;
    let wanted = wanted_gradients(&program, &args.grads)?;
    if args.check {
        return super::grad_check::check(
            &program,
            &inputs,
            &params,
            &wanted,
            &check_settings(args),
        );
    }
    let outputs = execute(
        &program,
        &inputs,
        &params,
        args.backend,
        &PassOptions::default(),
    )?;
    let seeded = float_outputs(&program);
    let seeds = seed_tensors(&program, &seeded, &outputs, &args.seeds)?;

    let spec = GradSpec {
        seeds: seeded.clone(),
        wrt: wanted.iter().map(|(id, _)| *id).collect(),
        supplied: seeded.clone(),
    };
    let g = gradient(&program, &spec).map_err(|e| CliError(e.to_string()))?;
    let position = |list: &[NodeId], id: NodeId| list.iter().position(|n| *n == id).unwrap_or(0);
    let grad_args: Vec<Tensor> = g
        .inputs
        .iter()
        .map(|i| match i.role {
            GradRole::Input => inputs[position(&program.inputs, i.forward)].clone(),
            GradRole::Seed => seeds[position(&seeded, i.forward)].clone(),
            GradRole::Supplied => outputs[position(&program.outputs, i.forward)].clone(),
        })
        .collect();
    let result = execute(
        &g.program,
        &grad_args,
        &params,
        args.backend,
        &PassOptions::default(),
    )?;
    let mut writer = OutputFiles::default();
    args.source.save_inputs(&program, &inputs, &mut writer)?;
    let mut printed = String::new();
    for ((input, file), (tensor, out)) in wanted.iter().zip(result.iter().zip(&g.program.outputs)) {
        match file {
            Some(path) => writer.add(
                format!("--grad {}", program.node(*input).name),
                path,
                write_npy_bytes(&path.display().to_string(), tensor)
                    .map_err(|e| CliError(e.to_string()))?,
            ),
            None => printed.push_str(&show::render(&g.program.node(*out).name, tensor)),
        }
    }
    writer.commit()?;
    print!("{printed}");
    Ok(())
}

/// `--rel`, `--abs` and `--step` of `--check`.
fn check_settings(args: &GradArgs) -> super::grad_check::Settings {
    super::grad_check::Settings {
        rel: args.rel,
        abs: args.abs,
        step: args.step,
    }
}

/// The inputs named by `--grad`, each with the file to write (none: print), in the
/// order given; every float input, printed, when there is no `--grad`.
pub(crate) fn wanted_gradients(
    program: &Program,
    grads: &[String],
) -> Result<Vec<(NodeId, Option<PathBuf>)>, CliError> {
    let input_names = || listing(program.inputs.iter().map(|i| &program.node(*i).name));
    if grads.is_empty() {
        let all: Vec<(NodeId, Option<PathBuf>)> = program
            .inputs
            .iter()
            .filter(|i| program.node(**i).dtype.is_float())
            .map(|i| (*i, None))
            .collect();
        if all.is_empty() {
            return fail("the program has no float input to differentiate with respect to");
        }
        return Ok(all);
    }
    let mut wanted: Vec<(NodeId, Option<PathBuf>)> = Vec::new();
    for arg in grads {
        let (name, file) = if arg.contains('=') {
            let (name, file) = split_assignment("--grad", arg)?;
            (name, Some(PathBuf::from(file)))
        } else {
            (arg.as_str(), None)
        };
        let Some(id) = program.find(name) else {
            return fail(format!(
                "--grad {name}: the program has no tensor `{name}` (its inputs are: {})",
                input_names()
            ));
        };
        if !program.inputs.contains(&id) {
            return fail(format!(
                "--grad {name}: `{name}` is not an input of the program; gradients are taken \
                 with respect to inputs (its inputs are: {})",
                input_names()
            ));
        }
        let dtype = program.node(id).dtype;
        if !dtype.is_float() {
            return fail(format!(
                "--grad {name}: `{name}` is {dtype}, and only float inputs have gradients"
            ));
        }
        if wanted.iter().any(|(w, _)| *w == id) {
            return fail(format!("--grad {name} is given twice"));
        }
        wanted.push((id, file));
    }
    Ok(wanted)
}

/// The outputs that can carry a gradient (an i32 input passed straight out cannot).
fn float_outputs(program: &Program) -> Vec<NodeId> {
    let mut out: Vec<NodeId> = Vec::new();
    for o in &program.outputs {
        if program.node(*o).dtype.is_float() && !out.contains(o) {
            out.push(*o);
        }
    }
    out
}

/// One seed per entry of `seeded`: from its `--seed` file, else ones of the output's shape.
fn seed_tensors(
    program: &Program,
    seeded: &[NodeId],
    outputs: &[Tensor],
    args: &[String],
) -> Result<Vec<Tensor>, CliError> {
    let files: HashMap<String, PathBuf> = path_assignments("--seed", args)?.into_iter().collect();
    let output_names = || listing(program.outputs.iter().map(|o| &program.node(*o).name));
    for name in files.keys() {
        let is_seeded = seeded.iter().any(|o| program.node(*o).name == *name);
        if !is_seeded {
            return fail(format!(
                "--seed {name}: the program has no float output `{name}` (its outputs are: {})",
                output_names()
            ));
        }
    }
    seeded
        .iter()
        .map(|o| {
            let node = program.node(*o);
            let value = &outputs[program.outputs.iter().position(|x| x == o).unwrap_or(0)];
            let Some(path) = files.get(&node.name) else {
                return Tensor::try_filled(&node.name, node.dtype, value.shape.clone(), 1.0)
                    .map_err(|e| CliError(e.to_string()));
            };
            let seed = read_npy(path).map_err(|e| CliError(e.to_string()))?;
            if seed.dtype != node.dtype || seed.shape != value.shape {
                return fail(format!(
                    "--seed {}: {} holds {}{:?}, but output `{}` is {}{:?}",
                    node.name,
                    path.display(),
                    seed.dtype,
                    seed.shape,
                    node.name,
                    node.dtype,
                    value.shape
                ));
            }
            Ok(seed)
        })
        .collect()
}

/// The gradient with respect to every float input, every float output seeded and
/// nothing supplied: what `uop print --stage grad` shows.
pub fn full_gradient(program: &Program) -> Result<Gradient, CliError> {
    let wrt: Vec<NodeId> = wanted_gradients(program, &[])?
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let spec = GradSpec {
        seeds: float_outputs(program),
        wrt,
        supplied: vec![],
    };
    gradient(program, &spec).map_err(|e| CliError(e.to_string()))
}

/// `uop print --stage grad`: the gradient program as `.uop` text, its inputs
/// explained in `#` comments. The text parses as a program, so it can be run,
/// emitted or differentiated again (`uop grad` on it gives second derivatives);
/// `uop print --stage opt` on it shows its loop IR.
pub fn print_stage(program: &Program) -> Result<String, CliError> {
    let g = full_gradient(program)?;
    let mut out = String::from(
        "# gradient program: d/d(every float input) of sum(g_y * y) over the outputs y\n",
    );
    for (id, input) in g.program.inputs.iter().zip(&g.inputs) {
        let name = &g.program.node(*id).name;
        let forward = &program.node(input.forward).name;
        let what = match (input.role, input.reads_data) {
            (GradRole::Seed, _) => format!("seed: the gradient flowing into output `{forward}`"),
            (_, false) => "forward input, only its shape is used".to_string(),
            (GradRole::Input, true) => "forward input".to_string(),
            (GradRole::Supplied, true) => "supplied forward value".to_string(),
        };
        out.push_str(&format!("#   {name}: {what}\n"));
    }
    out.push_str(&print_program(&g.program));
    Ok(out)
}
