//! The graph executor (DESIGN.md §13, §17, §19): a graph prepared by the pass pipeline,
//! every Kernel node's fused program compiled once, run on tensors.
//!
//! [`compile`] prepares the graph ([`uop_graph::pass::prepare`]), derives its
//! definition hierarchy (where each node runs: loop invariants hoisted) and compiles
//! every Kernel node's program through the JIT and its process-wide cache (identical
//! kernels share machine code). [`Executable::run`] then checks every input's type and
//! shape against the graph's interface **before anything runs** (an error names the
//! input), and runs the nodes in hierarchy order:
//!
//! - kernels through their machine code, on the runtime's worker pool (the JIT kernels
//!   use it); an op left unfused (a call binding a `parallel` index) through the JIT
//!   too: its one-call program ([`uop_graph::infer::call_program_in`]) is built and
//!   compiled the first time its concrete input types are seen, then cached;
//! - `while`: the condition before each iteration; the carried values are moved, not
//!   copied, from the body's results into its parameters, and the buffers they leave
//!   go back to the body's slots, so an iteration writes into the buffers of the one
//!   before the last (two buffers per carried value used alternately; no allocation
//!   after the first iteration);
//! - `if` / `case` (a negative selector passes the arguments through) / `parallel`
//!   (iterations in order, each result copied into its row of the stacked output;
//!   the kernels inside use the pool) / `call` as in §19; `chunk` passes its input
//!   through, as the graph interpreter does today;
//! - the run-time errors are the graph interpreter's, word for word (a selector out
//!   of range, a loop past [`ExecOptions::max_iterations`], a body changing a state's
//!   shape), each naming the node.
//!
//! Values live in slots, one per node output; a slot's buffer is reused whenever
//! nothing else holds it, and the slots of one run are kept for the next, so running
//! an executable again allocates nothing but its outputs.
//!
//! [`Backend::Loops`] runs the same prepared graph with every program on the loop-IR
//! interpreter instead (the backends' differential tests compare both with the graph
//! interpreter, the oracle: [`uop_graph::run`]).
//!
//! ```
//! use uop::codegen::tensor::Tensor;
//! use uop_graph::text::parse_graph;
//!
//! let graph = parse_graph(
//!     "input x: f32[]\nfn more(v) { return lt(v, 100) }\nfn step(v) { return mul(v, 3) }\ny = while(more, step, x)\noutput y\n",
//!     uop_graph::default_registry(),
//! )?;
//! let exe = uop::graph::compile(&graph)?;
//! let y = exe.run(&[Tensor::new(uop::codegen::uop::DType::F32, vec![], vec![2.0])?])?;
//! assert_eq!(y[0].data, vec![162.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod exec;

use std::collections::HashMap;
use std::sync::Mutex;

use thiserror::Error;
use uop_codegen::tensor::Tensor;
use uop_graph::pass::{PrepareError, PrepareOptions, Report, prepare};
use uop_graph::{Graph, HierarchyError, NodeId, RunError, bind_graph_inputs, hierarchy};

use exec::build::{Steps, build};
use exec::run::{CallCache, Machine};
use exec::value::{Value, store_tensor};

/// What runs the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Backend {
    /// Machine code JIT-compiled by Cranelift (the default).
    #[default]
    Cranelift,
    /// The optimized loop IR on the loop-IR interpreter (slow; for testing).
    Loops,
}

/// How [`compile_with`] prepares and runs a graph.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExecOptions {
    /// What runs the kernels.
    pub backend: Backend,
    /// The prepare pipeline's options.
    pub prepare: PrepareOptions,
    /// The most iterations any one `while` may run before the run is an error (none
    /// by default).
    pub max_iterations: Option<u64>,
}

/// Why a graph could not be compiled or run.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GraphError {
    /// The prepare pipeline failed.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The prepared graph has no definition hierarchy.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// A node could not be compiled.
    #[error("{node}: {message}")]
    Compile {
        /// The node.
        node: NodeId,
        /// What went wrong.
        message: String,
    },
    /// A run failed: an input that does not fit the graph (named), or a node's
    /// run-time error (named), as the graph interpreter reports them.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// A prepared, compiled graph. `Send + Sync`: one executable may run on several
/// threads at once (each run has its own values).
#[derive(Debug)]
pub struct Executable {
    graph: Graph,
    report: Report,
    nodes_before: usize,
    steps: Steps,
    options: ExecOptions,
    calls: CallCache,
    /// Slots of earlier runs, reused by later ones.
    spare: Mutex<Vec<Vec<Option<Value>>>>,
}

/// Prepares `graph` with the default pipeline and compiles it for Cranelift.
pub fn compile(graph: &Graph) -> Result<Executable, GraphError> {
    compile_with(graph, &ExecOptions::default())
}

/// Prepares `graph` as `options.prepare` says and compiles every Kernel node's program
/// once for `options.backend`.
pub fn compile_with(graph: &Graph, options: &ExecOptions) -> Result<Executable, GraphError> {
    let nodes_before = graph.len();
    let (prepared, report) = prepare(graph.clone(), &options.prepare)?;
    let h = hierarchy(&prepared)?;
    let steps = build(&prepared, &h, options.backend)?;
    Ok(Executable {
        graph: prepared,
        report,
        nodes_before,
        steps,
        options: options.clone(),
        calls: Mutex::new(HashMap::new()),
        spare: Mutex::new(Vec::new()),
    })
}

impl Executable {
    /// Runs on `inputs` (in the graph's declaration order); the graph declares no
    /// `$params`.
    pub fn run(&self, inputs: &[Tensor]) -> Result<Vec<Tensor>, GraphError> {
        self.run_with_params(inputs, &HashMap::new())
    }

    /// Runs on `inputs` with the values of the graph's `$params`. Every input's type
    /// and shape is checked before anything runs.
    pub fn run_with_params(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<Vec<Tensor>, GraphError> {
        let bindings = bind_graph_inputs(&self.graph, inputs, params)?;
        let mut store = self
            .spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop()
            .unwrap_or_else(|| vec![None; self.steps.slots]);
        let top = &self.steps.top;
        for (slot, t) in top.params.iter().zip(inputs) {
            store_tensor(&mut store[*slot], t);
        }
        let mut machine = Machine {
            graph: &self.graph,
            backend: self.options.backend,
            max_iterations: self.options.max_iterations,
            calls: &self.calls,
            store: &mut store,
            params: params.clone(),
            bindings,
        };
        let result = machine
            .steps(&top.steps)
            .and_then(|()| {
                top.results
                    .iter()
                    .map(|r| match r {
                        exec::build::Src::Slot(s) => machine
                            .store
                            .get(*s)
                            .and_then(Option::as_ref)
                            .map(Value::to_tensor)
                            .ok_or_else(|| RunError::Node {
                                node: self.graph.interface.input,
                                message: format!("output slot {s} has no value"),
                            }),
                        exec::build::Src::Value(v) => Ok(v.to_tensor()),
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(GraphError::from);
        self.spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(store);
        result
    }

    /// The prepared graph it runs.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// What the prepare pipeline did.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// Number of nodes of the graph before prepare.
    pub fn nodes_before(&self) -> usize {
        self.nodes_before
    }

    /// Number of Kernel nodes compiled.
    pub fn kernel_count(&self) -> usize {
        self.steps.kernels
    }

    /// The backend its kernels run on.
    pub fn backend(&self) -> Backend {
        self.options.backend
    }
}
