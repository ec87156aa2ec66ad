//! `uop run`: runs a program on .npy inputs or seeded random data.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use clap::Args;
use uop_codegen::compile::{BackendKind, CompileOptions, compile};
use uop_codegen::index::{Bindings, Expr};
use uop_codegen::pass::PassOptions;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{Node, Program};
use uop_codegen::{interp, sizes};
use uop_cranelift as cranelift;

use uop_graph::Graph;

use super::onnx::OnnxModel;
use super::output::OutputFiles;
use super::run_graph::GraphFlags;
use super::source::{self, Source};
use super::{
    BackendArg, CliError, fail, int_assignments, limits, pass_options, path_assignments, show,
};
use crate::npy::{read_npy_as, write_npy_bytes};
use uop_onnx::ElemType;

/// Arguments of `uop run`.
#[derive(Args, Debug)]
pub struct RunArgs {
    /// The program (`.uop` text).
    program: PathBuf,
    #[command(flatten)]
    source: InputArgs,
    /// Write an output to NAME=FILE.npy; outputs without one are printed.
    #[arg(long = "output", value_name = "NAME=FILE")]
    outputs: Vec<String>,
    /// The engine that executes the program: `cranelift` (the default) JIT-compiles it
    /// to machine code; `loops` interprets the optimized loop IR; `interp` is the
    /// reference interpreter (the oracle, 100 to 300 times slower). Graphs (files with
    /// `fn`, `while`, `case`, ...) run on the graph executor: `cranelift` JIT-compiles
    /// the prepared graph's kernels, `loops` runs the same prepared graph on the
    /// loop-IR interpreter, and `interp` is the graph interpreter (the oracle).
    #[arg(long, value_enum)]
    backend: Option<BackendArg>,
    /// Skip this optimizer pass (repeatable; for the `cranelift` and `loops` backends).
    /// On a graph: a graph pass (or decision) of the prepare pipeline, or a loop-IR
    /// pass, skipped in every kernel.
    #[arg(long = "disable-pass", value_name = "NAME")]
    disable_pass: Vec<String>,
    /// Graphs on the executor: at most N streams run independent nodes at once
    /// (default: one per core, as far as the graph has independent work; 1 runs the
    /// nodes in order). A program runs on the executor with it, as a graph of one
    /// kernel node. Results are the same for every N.
    #[arg(long, value_name = "N", value_parser = super::run_graph::stream_count)]
    streams: Option<usize>,
    /// Print on stderr how long each pass took: the graph passes (wall time, nodes
    /// and kernels before and after), then the loop-IR passes summed over the
    /// kernels. A program runs on the executor with it, as a graph of one kernel node.
    #[arg(long)]
    time_passes: bool,
    /// Graphs: stop the graph passes after N rewrites in total (to bisect a rewrite;
    /// the numbers stay the same, only less is simplified and fused).
    #[arg(long, value_name = "N")]
    rewrite_limit: Option<usize>,
    /// Graphs: stop with an error naming the loop when any one `while` would make
    /// more than N trips (every backend; default: no limit). A program has no loops.
    #[arg(long, value_name = "N")]
    max_iterations: Option<u64>,
}

/// Where a program's inputs and parameters come from (shared by `uop run` and `uop grad`).
#[derive(Args, Debug)]
pub struct InputArgs {
    /// An input as NAME=FILE.npy (float32, float64 or int32, C order; int64 for an
    /// i32 input when every value fits).
    #[arg(long = "input", value_name = "NAME=FILE")]
    inputs: Vec<String>,
    /// The value of a $param, as NAME=INT.
    #[arg(long = "param", value_name = "NAME=INT")]
    params: Vec<String>,
    /// The size of a named dimension for random inputs, as NAME=INT.
    #[arg(long = "dim", value_name = "NAME=INT")]
    dims: Vec<String>,
    /// Fill every input not given with seeded random data.
    #[arg(long, value_name = "SEED")]
    random: Option<u64>,
    /// Write every random input to DIR/NAME.npy (DIR is created if missing), to
    /// check a result elsewhere, e.g. with numpy; written together with the outputs.
    #[arg(long, value_name = "DIR", requires = "random")]
    save_inputs: Option<PathBuf>,
    /// The most memory the run may take (inputs, outputs and temporaries), e.g. `4G`;
    /// the default is the memory the machine has available.
    #[arg(long = "max-memory", value_name = "BYTES")]
    max_memory: Option<String>,
}

impl InputArgs {
    /// Seeded random data for every input, with the sizes of `dims` and the `$param`
    /// values of `params` (both `NAME=INT` texts, as on the command line).
    pub(crate) fn random(dims: &[String], params: &[String], seed: u64) -> Self {
        InputArgs {
            inputs: Vec::new(),
            params: params.to_vec(),
            dims: dims.to_vec(),
            random: Some(seed),
            save_inputs: None,
            max_memory: None,
        }
    }

    /// The `--param` values, each checked to be declared by `program`.
    pub fn params(&self, program: &Program) -> Result<HashMap<String, i64>, CliError> {
        let params: HashMap<String, i64> = int_assignments("--param", &self.params)?
            .into_iter()
            .collect();
        for name in params.keys() {
            if !program.params.contains(name) {
                return fail(format!(
                    "--param {name}: the program declares no parameter `${name}` (it has: {})",
                    listing(program.params.iter().map(|p| format!("${p}")))
                ));
            }
        }
        Ok(params)
    }

    /// The program's inputs in order, from files or seeded random data. Sets the
    /// memory limit of `--max-memory` first, so the inputs are accounted against it.
    pub fn gather(&self, program: &Program) -> Result<Vec<Tensor>, CliError> {
        limits::apply(self.max_memory.as_deref())?;
        gather_inputs(program, self, &read_declared)
    }

    /// The inputs of an ONNX model, declared under their ONNX names
    /// ([`OnnxModel::declarations`]), as the graph takes them: files read with the
    /// model's types (int64, bool), random data for the rest; the inputs the model
    /// bound at import are not inputs of the graph and are skipped.
    pub(crate) fn gather_onnx(
        &self,
        model: &OnnxModel,
        declared: &Program,
    ) -> Result<Vec<Tensor>, CliError> {
        limits::apply(self.max_memory.as_deref())?;
        let mut own = InputArgs {
            inputs: Vec::new(),
            params: self.params.clone(),
            dims: self.dims.clone(),
            random: self.random,
            save_inputs: self.save_inputs.clone(),
            max_memory: None,
        };
        for (name, file) in path_assignments("--input", &self.inputs)? {
            if !model.bound.contains(&name) {
                own.inputs.push(format!("{name}={}", file.display()));
            }
        }
        let read = |path: &Path, node: &Node| model.read_input(path, &node.name);
        let gathered = gather_inputs(declared, &own, &read)?;
        model.graph_inputs(&gathered)
    }

    /// The `--input` files, by name.
    pub(crate) fn files(&self) -> Result<Vec<(String, PathBuf)>, CliError> {
        path_assignments("--input", &self.inputs)
    }

    /// With `--save-inputs DIR`, adds `DIR/NAME.npy` to `writer` for every input of
    /// `program` that is not read from a file (the random ones); `DIR` is created.
    pub(crate) fn save_inputs(
        &self,
        program: &Program,
        inputs: &[Tensor],
        writer: &mut OutputFiles,
    ) -> Result<(), CliError> {
        let Some(dir) = &self.save_inputs else {
            return Ok(());
        };
        let given: Vec<String> = path_assignments("--input", &self.inputs)?
            .into_iter()
            .map(|(name, _)| name)
            .collect();
        std::fs::create_dir_all(dir).map_err(|e| {
            CliError(format!(
                "--save-inputs: cannot create the directory {}: {e}",
                dir.display()
            ))
        })?;
        for (id, tensor) in program.inputs.iter().zip(inputs) {
            let name = &program.node(*id).name;
            if given.contains(name) {
                continue;
            }
            let path = dir.join(format!("{name}.npy"));
            let bytes = write_npy_bytes(&path.display().to_string(), tensor)
                .map_err(|e| CliError(e.to_string()))?;
            writer.add(format!("--save-inputs ({name})"), &path, bytes);
        }
        Ok(())
    }
}

/// Runs `uop run`.
pub fn run(args: &RunArgs) -> Result<(), CliError> {
    let program = match source::load_with(&args.program, &args.source.files()?)? {
        Source::Program(p) => p,
        Source::Graph(g) => return run_graph(args, &g),
        Source::Onnx(m) => return run_onnx(args, &m),
    };
    if args.rewrite_limit.is_some() {
        return fail(
            "--rewrite-limit applies to graphs (files with `fn`, `while`, `case`, ...): a program is one kernel, with no graph rewrites",
        );
    }
    if args.streams.is_some() || args.time_passes {
        // A program is a graph of one kernel node (the executor's flags).
        warn_unused_inputs(&program);
        return run_graph(args, &uop_exec::program_graph(&program));
    }
    let pass_opts = pass_options(&args.disable_pass)?;
    let backend = args.backend.unwrap_or(BackendArg::Cranelift);
    let params = args.source.params(&program)?;
    let inputs = args.source.gather(&program)?;
    warn_unused_inputs(&program);
    let outputs = execute(&program, &inputs, &params, backend, &pass_opts)?;

    let names: Vec<&str> = program
        .outputs
        .iter()
        .map(|o| program.node(*o).name.as_str())
        .collect();
    let mut writer = OutputFiles::default();
    args.source.save_inputs(&program, &inputs, &mut writer)?;
    write_outputs(writer, &args.outputs, &names, &outputs)
}

/// A warning on stderr for every input of `program` no output uses.
fn warn_unused_inputs(program: &Program) {
    for unused in program.unused_inputs() {
        eprintln!(
            "warning: input `{}` is not used by any output",
            program.node(unused).name
        );
    }
}

/// Runs a graph on the graph executor, or on the graph interpreter with
/// `--backend interp`.
fn run_graph(args: &RunArgs, graph: &Graph) -> Result<(), CliError> {
    let declared = source::declarations(graph);
    let params = args.source.params(&declared)?;
    let inputs = args.source.gather(&declared)?;
    let outputs = super::run_graph::execute(graph, &inputs, &params, &flags(args))?;
    let names = source::output_names(graph);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut writer = OutputFiles::default();
    args.source.save_inputs(&declared, &inputs, &mut writer)?;
    write_outputs(writer, &args.outputs, &names, &outputs)
}

/// Runs an ONNX model on the graph executor (or interpreter), speaking ONNX names
/// and types: inputs read as the model declares them, outputs written as `int64`
/// or `bool` `.npy` files where the model's are.
fn run_onnx(args: &RunArgs, model: &OnnxModel) -> Result<(), CliError> {
    let declared = model.declarations();
    let params = args.source.params(&declared)?;
    let inputs = args.source.gather_onnx(model, &declared)?;
    let outputs = super::run_graph::execute(&model.imported.graph, &inputs, &params, &flags(args))?;
    let names = model.output_names();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (outputs, elems): (Vec<Tensor>, Vec<_>) = model.outputs(&outputs).into_iter().unzip();
    let mut writer = OutputFiles::default();
    args.source.save_inputs(&declared, &inputs, &mut writer)?;
    write_typed_outputs(writer, &args.outputs, &names, &outputs, &elems)
}

/// The executor's flags of `uop run`.
fn flags(args: &RunArgs) -> GraphFlags {
    GraphFlags {
        backend: args.backend,
        streams: args.streams,
        disable_pass: args.disable_pass.clone(),
        time_passes: args.time_passes,
        rewrite_limit: args.rewrite_limit,
        max_iterations: args.max_iterations,
    }
}

/// Writes the outputs named in `--output` arguments (with the files already in
/// `writer`, all or nothing) and prints the others.
fn write_outputs(
    writer: OutputFiles,
    assignments: &[String],
    names: &[&str],
    outputs: &[Tensor],
) -> Result<(), CliError> {
    write_typed_outputs(writer, assignments, names, outputs, &[])
}

/// [`write_outputs`], output `k` written as ONNX type `elems[k]` when given
/// ([`super::onnx::npy_bytes`]).
pub(crate) fn write_typed_outputs(
    mut writer: OutputFiles,
    assignments: &[String],
    names: &[&str],
    outputs: &[Tensor],
    elems: &[Option<ElemType>],
) -> Result<(), CliError> {
    let files: HashMap<String, PathBuf> = path_assignments("--output", assignments)?
        .into_iter()
        .collect();
    for name in files.keys() {
        if !names.contains(&name.as_str()) {
            return fail(format!(
                "--output {name}: the program has no output `{name}` (it has: {})",
                listing(names.iter())
            ));
        }
    }
    let mut printed = String::new();
    for (k, (name, tensor)) in names.iter().zip(outputs).enumerate() {
        match files.get(*name) {
            Some(path) => writer.add(
                format!("--output {name}"),
                path,
                super::onnx::npy_bytes(
                    &path.display().to_string(),
                    tensor,
                    elems.get(k).copied().flatten(),
                )?,
            ),
            None => printed.push_str(&show::render(name, tensor)),
        }
    }
    writer.commit()?;
    print!("{printed}");
    Ok(())
}

/// `program` compiled ([`compile`]) for `backend` with the passes of `pass_opts`.
fn compiled(
    program: &Program,
    pass_opts: &PassOptions,
    backend: BackendKind,
) -> Result<uop_codegen::loops::LoopProgram, CliError> {
    let options = CompileOptions {
        passes: pass_opts.clone(),
        ..CompileOptions::for_backend(backend)
    };
    compile(program, &options).map_err(|e| CliError(e.to_string()))
}

/// Runs `program` with the chosen engine.
pub(crate) fn execute(
    program: &Program,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    backend: BackendArg,
    pass_opts: &PassOptions,
) -> Result<Vec<Tensor>, CliError> {
    match backend {
        BackendArg::Interp => interp::run(program, inputs, params),
        BackendArg::Loops => {
            let optimized = compiled(program, pass_opts, BackendKind::Any)?;
            interp::run_loops(&optimized, inputs, params)
        }
        BackendArg::Cranelift => {
            let optimized = compiled(program, pass_opts, BackendKind::Cranelift)?;
            // The kernel binds the shapes and accounts the run's memory before it
            // allocates anything (`Kernel::run`).
            let kernel = cranelift::compile(&optimized, &cranelift::Options::default())
                .map_err(|e| CliError(e.to_string()))?;
            return kernel
                .run(inputs, params)
                .map_err(|e| CliError(e.to_string()));
        }
    }
    .map_err(|e| CliError(e.to_string()))
}

/// Comma-separated names, or "none".
pub(crate) fn listing(items: impl Iterator<Item = impl std::fmt::Display>) -> String {
    let all: Vec<String> = items.map(|i| format!("`{i}`")).collect();
    if all.is_empty() {
        "none".into()
    } else {
        all.join(", ")
    }
}

/// Reads `path` for the input `node` of a program or graph (a `.npy` of its dtype).
fn read_declared(path: &Path, node: &Node) -> Result<Tensor, CliError> {
    let tensor = read_npy_as(path, node.dtype).map_err(|e| CliError(e.to_string()))?;
    if tensor.dtype != node.dtype {
        return fail(format!(
            "{}: input `{}` is {}, but the file holds {}",
            path.display(),
            node.name,
            node.dtype,
            tensor.dtype
        ));
    }
    Ok(tensor)
}

/// How a command reads an input's file.
pub(crate) type ReadInput<'a> = &'a dyn Fn(&Path, &Node) -> Result<Tensor, CliError>;

/// The program's inputs in order: from files (read by `read`), or random data where
/// `--random` is given.
fn gather_inputs(
    program: &Program,
    args: &InputArgs,
    read: ReadInput,
) -> Result<Vec<Tensor>, CliError> {
    let files: HashMap<String, PathBuf> = path_assignments("--input", &args.inputs)?
        .into_iter()
        .collect();
    let input_names: Vec<&str> = program
        .inputs
        .iter()
        .map(|i| program.node(*i).name.as_str())
        .collect();
    for name in files.keys() {
        if !input_names.contains(&name.as_str()) {
            return fail(format!(
                "--input {name}: the program has no input `{name}` (it has: {})",
                listing(input_names.iter())
            ));
        }
    }
    // Sizes of named dims: from --dim, then from the files given.
    let mut dims: HashMap<String, (i64, String)> = HashMap::new();
    let declared: Vec<&str> = program
        .inputs
        .iter()
        .flat_map(|i| &program.node(*i).shape)
        .filter_map(|d| match d {
            Expr::Name(n) => Some(n.as_str()),
            _ => None,
        })
        .collect();
    for (name, v) in int_assignments("--dim", &args.dims)? {
        if !declared.contains(&name.as_str()) {
            let mut all = declared.clone();
            all.sort_unstable();
            all.dedup();
            return fail(format!(
                "--dim {name}: the program has no dimension `{name}` (it has: {})",
                if all.is_empty() {
                    "none".to_string()
                } else {
                    all.join(", ")
                }
            ));
        }
        if v < 0 {
            return fail(format!("--dim {name}={v}: a size cannot be negative"));
        }
        dims.insert(name, (v, "--dim".to_string()));
    }
    let mut loaded: Vec<Option<Tensor>> = Vec::new();
    for id in &program.inputs {
        let node = program.node(*id);
        let Some(path) = files.get(&node.name) else {
            loaded.push(None);
            continue;
        };
        let tensor = read(path, node)?;
        if tensor.shape.len() == node.shape.len() {
            for (dim, &size) in node.shape.iter().zip(&tensor.shape) {
                if let Expr::Name(n) = dim {
                    let origin = format!("{} ({})", path.display(), node.name);
                    match dims.get(n) {
                        Some((v, from)) if *v != size as i64 => {
                            return fail(format!(
                                "dimension `{n}` is {v} from {from} but {size} in {origin}"
                            ));
                        }
                        Some(_) => {}
                        None => {
                            dims.insert(n.clone(), (size as i64, origin));
                        }
                    }
                }
            }
        }
        loaded.push(Some(tensor));
    }
    // The shapes of the random inputs, checked and accounted before any is made.
    let mut random_shapes = Vec::new();
    let mut ledger = uop_runtime::Ledger::new();
    for (id, tensor) in program.inputs.iter().zip(&loaded) {
        let node = program.node(*id);
        if tensor.is_some() {
            continue;
        }
        if args.random.is_none() {
            return fail(format!(
                "input `{}` is not given: pass --input {}=FILE.npy, or --random SEED for random data",
                node.name, node.name
            ));
        }
        for d in &node.shape {
            if let Expr::Name(n) = d
                && !dims.contains_key(n)
            {
                return fail(format!(
                    "the size of `{n}` (in input `{}`) is unknown: pass --dim {n}=SIZE",
                    node.name
                ));
            }
        }
        let names = Bindings {
            names: dims.iter().map(|(n, (v, _))| (n.clone(), *v)).collect(),
            ..Bindings::default()
        };
        let shape = sizes::concrete_shape(&node.name, &node.shape, &names)
            .map_err(|e| CliError(e.to_string()))?;
        sizes::account(&mut ledger, &node.name, &shape, std::mem::size_of::<f64>())
            .map_err(|e| CliError(e.to_string()))?;
        random_shapes.push(shape);
    }
    ledger.check().map_err(|e| CliError(e.to_string()))?;
    let mut random_shapes = random_shapes.into_iter();
    let mut inputs = Vec::new();
    for (k, (id, tensor)) in program.inputs.iter().zip(loaded).enumerate() {
        let node = program.node(*id);
        let tensor = match tensor {
            Some(t) => t,
            None => {
                // Every input without a file has a shape above, and --random was given.
                let (Some(seed), Some(shape)) = (args.random, random_shapes.next()) else {
                    return fail(format!("input `{}` has no data", node.name));
                };
                Tensor::try_random(&node.name, node.dtype, shape, seed.wrapping_add(k as u64))
                    .map_err(|e| CliError(e.to_string()))?
            }
        };
        inputs.push(tensor);
    }
    Ok(inputs)
}
