//! The graph executor (DESIGN.md §13, §17, §19): a graph prepared by the pass pipeline,
//! every Kernel node's fused program compiled once, run on tensors.
//!
//! [`compile`] prepares the graph ([`uop_graph::pass::prepare`]), derives its
//! definition hierarchy (where each node runs: loop invariants hoisted) and compiles
//! every Kernel node's program through the compile driver
//! ([`uop_codegen::compile::compile`], under [`ExecOptions::compile`]) and the JIT
//! with its process-wide cache (identical kernels share machine code). A program is a
//! graph of one Kernel node ([`program_graph`]). [`Executable::run`] then checks every input's type and
//! shape against the graph's interface **before anything runs** (an error names the
//! input), and runs the nodes in hierarchy order:
//!
//! - kernels through their machine code, on the runtime's worker pool (the JIT kernels
//!   use it); an op left unfused (a call binding a `parallel` index) through the JIT
//!   too: its one-call program ([`uop_graph::infer::call_program_in`]) is built and
//!   compiled the first time its concrete input types are seen, then cached;
//! - `while`: the condition before each iteration; the state is carried in the arena as
//!   the memory plan says — in place in one slot, or in two slots used alternately —
//!   the body's kernels writing the next state straight into its slot (no allocation,
//!   no copy, per iteration);
//! - `if` / `case` (a negative selector passes the arguments through) / `parallel`
//!   (iterations in order, each result copied into its row of the stacked output;
//!   the kernels inside use the pool) / `call` as in §19; `chunk` passes its input
//!   through, as the graph interpreter does today;
//! - the run-time errors are the graph interpreter's, word for word (a selector out
//!   of range, a loop past [`ExecOptions::max_iterations`], a body changing a state's
//!   shape), each naming the node.
//!
//! Memory: the first run on a set of dims (the inputs' dims and the params) makes the
//! memory plan of the prepared graph for them ([`uop_graph::memory::plan_memory`],
//! cached per set of dims); every intermediate value of a run is then a view into ONE
//! arena at the plan's offset, honouring the plan's sharing (element-wise kernels
//! writing over an input that dies there, a `while`'s state carried in place or in
//! alternating slots, sub-function results written into the super node's output).
//! The graph's inputs (converted once to their element type) and Consts are read
//! where they are; the graph's outputs are returned as owned tensors. Each run takes
//! an arena from a pool (a new one only when no spare one is free or big enough), so
//! concurrent runs never share one, and a run allocates no element buffer per loop
//! iteration ([`Executable::buffer_allocations`]).
//!
//! [`KernelBackend::Loops`] runs the same prepared graph with every program on the loop-IR
//! interpreter instead (the backends' differential tests compare both with the graph
//! interpreter, the oracle: [`uop_graph::run`]).
//!
//! ```
//! use uop_codegen::tensor::Tensor;
//! use uop_graph::text::parse_graph;
//!
//! let graph = parse_graph(
//!     "input x: f32[]\nfn more(v) { return lt(v, 100) }\nfn step(v) { return mul(v, 3) }\ny = while(more, step, x)\noutput y\n",
//!     uop_graph::default_registry(),
//! )?;
//! let exe = uop_exec::compile(&graph)?;
//! let y = exe.run(&[Tensor::new(uop_codegen::uop::DType::F32, vec![], vec![2.0])?])?;
//! assert_eq!(y[0].data, vec![162.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The executor's parts: values and their storage (`value`, `store`, `memory`: the
// arena), compiled programs (`kernel`), the step tree built from a prepared graph
// (`build`), the machine that runs it (`run`), its streams (`streams`), the loop
// stack's driver when the graph has chunk nodes (`looped`), a program as a graph
// (`program`), the loop-IR passes' times (`times`) and errors in the user's words
// (`names`).
mod build;
mod kernel;
mod looped;
mod memory;
mod names;
mod pool;
mod program;
mod run;
mod store;
mod streams;
mod times;
mod value;

pub use program::program_graph;
pub use times::PassTimes;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use thiserror::Error;
use uop_codegen::compile::{CompileError, CompileOptions};
use uop_codegen::index::Bindings;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::looping::LoopHooks;
use uop_graph::memory::{
    MemoryError, MemoryPlan, SizeCheckError, SizeLimit, check_arena, check_sizes, plan_memory,
    plan_memory_scheduled,
};
use uop_graph::pass::{PrepareError, PrepareOptions, Report, prepare};
use uop_graph::schedule::{Schedule, ScheduleError, ScheduleOptions, schedule};
use uop_graph::{Graph, GraphRunError, HierarchyError, NodeId, Op, bind_graph_inputs, hierarchy};

use build::{Steps, build};
use kernel::Compiler;
use memory::{Arena, Layout, Memory};
use pool::Pool;
use run::{CallCache, Machine};
use store::Store;

/// What runs the kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KernelBackend {
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
    pub backend: KernelBackend,
    /// The prepare pipeline's options (graph passes). With
    /// [`PrepareOptions::time_passes`], the loop-IR passes of every program compiled
    /// are timed too ([`Executable::kernel_pass_times`]).
    pub prepare: PrepareOptions,
    /// The options every kernel compiles with ([`uop_codegen::compile::compile`]):
    /// the loop-IR passes to skip, the schedule. Their target must be
    /// [`Any`](uop_codegen::compile::BackendKind::Any) or the backend's.
    pub compile: CompileOptions,
    /// The most iterations any one `while` may run before the run is an error (none
    /// by default).
    pub max_iterations: Option<u64>,
    /// How many streams run independent nodes at once.
    pub streams: Streams,
}

/// How many streams run a graph's independent nodes at once (DESIGN.md §18): the
/// static schedule ([`uop_graph::schedule`]) spreads each scope's nodes over streams
/// that run as tasks of the runtime's pool, synchronized by events. Results are the
/// same for every choice.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Streams {
    /// As many as the runtime's thread count ([`uop_runtime::threads`]: `UOP_THREADS`,
    /// else every core), as far as the graph has independent work
    /// (`docs/graph-executor.md` says why); a body whose values are all small and
    /// of static size runs in order (streams would cost more than its work: a
    /// `while` over scalars would pay on every trip).
    #[default]
    Auto,
    /// At most this many streams per scope (1: every node in order, on the calling
    /// thread; 0 is an error).
    Max(usize),
    /// The test mode: each node on one of at most `streams` streams drawn from
    /// `seed`, respecting only the dependencies, to shake out missing waits.
    Random {
        /// The most streams per scope.
        streams: usize,
        /// The draw.
        seed: u64,
    },
}

/// Why a graph could not be compiled or run.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GraphError {
    /// The prepare pipeline failed.
    #[error(transparent)]
    Prepare(#[from] PrepareError),
    /// The kernels' compile options are invalid (an unknown pass, a target of
    /// another backend).
    #[error(transparent)]
    Options(#[from] CompileError),
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
    Run(#[from] GraphRunError),
    /// The graph has no memory plan for the run's dims.
    #[error(transparent)]
    Memory(#[from] MemoryError),
    /// The graph cannot be scheduled on the streams asked for.
    #[error("streams: {0}")]
    Schedule(#[from] ScheduleError),
    /// A size of the run overflows, or what it needs exceeds the memory limit
    /// (`uop_runtime::memory_limit`): found before anything is allocated.
    #[error(transparent)]
    Size(#[from] SizeCheckError),
}

/// A run's dims (input dims and params), sorted: the key of the layout cache.
type Dims = Vec<(String, i64)>;

/// What one run leaves for the next (taken by one run at a time): its arena, the
/// slots' values, the spare lists and the `while` swaps' list.
#[derive(Debug)]
struct RunState {
    arena: Arena,
    store: Store,
    pool: Pool,
    swaps: Vec<(usize, usize)>,
}

impl RunState {
    /// A state for `slots` slots and no arena yet.
    fn new(slots: usize) -> RunState {
        RunState {
            arena: Arena::default(),
            store: Store::new(slots),
            pool: Pool::default(),
            swaps: Vec::new(),
        }
    }
}

/// The last call's input types and `$params` and what they bound to.
#[derive(Debug)]
struct LastCall {
    types: Vec<(DType, Vec<usize>)>,
    params: HashMap<String, i64>,
    bindings: Arc<Bindings>,
    layout: Arc<Layout>,
}

impl LastCall {
    /// Whether `inputs` and `params` are the ones bound.
    fn is_for(&self, inputs: &[Tensor], params: &HashMap<String, i64>) -> bool {
        self.types.len() == inputs.len()
            && self
                .types
                .iter()
                .zip(inputs)
                .all(|((d, s), t)| *d == t.dtype && *s == t.shape)
            && self.params == *params
    }
}

/// One run's arguments and their binding.
struct Run<'r> {
    layout: &'r Layout,
    inputs: &'r [Tensor],
    params: &'r HashMap<String, i64>,
    bindings: &'r Bindings,
}

/// A prepared, compiled graph. `Send + Sync`: one executable may run on several
/// threads at once (each run takes an arena of its own from a pool).
#[derive(Debug)]
pub struct Executable {
    graph: Graph,
    /// The graph as given (before the passes), whose sizes every run checks: a
    /// value a kernel fuses away may still overflow.
    source: Graph,
    report: Report,
    nodes_before: usize,
    steps: Steps,
    /// The static schedule, when it uses more than one stream somewhere.
    schedule: Option<Schedule>,
    options: ExecOptions,
    /// What compiled the kernels and compiles unfused calls.
    compiler: Compiler,
    calls: CallCache,
    /// The memory layout per set of dims, made once.
    layouts: Mutex<HashMap<Dims, Arc<Layout>>>,
    /// What earlier runs leave for later ones (arenas, slots, lists).
    spare: Mutex<Vec<RunState>>,
    /// The last call's binding of its inputs.
    last: Mutex<Option<LastCall>>,
    /// Element buffers allocated (arenas and owned buffers).
    allocations: AtomicU64,
    /// The graph has chunk nodes: runs go through the loop stack.
    looped: bool,
}

/// Prepares `graph` with the default pipeline and compiles it for Cranelift.
pub fn compile(graph: &Graph) -> Result<Executable, GraphError> {
    compile_with(graph, &ExecOptions::default())
}

/// Prepares `graph` as `options.prepare` says and compiles every Kernel node's program
/// once for `options.backend`, under `options.compile`.
pub fn compile_with(graph: &Graph, options: &ExecOptions) -> Result<Executable, GraphError> {
    let compiler = Compiler::new(
        options.backend,
        &options.compile,
        options.prepare.time_passes,
    )?;
    let nodes_before = graph.len();
    let (prepared, report) = prepare(graph.clone(), &options.prepare)?;
    let h = hierarchy(&prepared)?;
    let looped = prepared
        .nodes()
        .iter()
        .any(|n| matches!(n.op, Op::Chunk { .. }));
    // A graph with chunk nodes runs its partitions through the loop stack on one
    // stream (docs/graph-executor.md).
    let schedule = if looped {
        None
    } else {
        stream_schedule(&prepared, options.streams)?
    };
    // Only the default leaves small bodies in order: `Max` and `Random` run the
    // schedule as drawn (measuring and testing the streams).
    let small_in_order = options.streams == Streams::Auto;
    let steps = build(
        &prepared,
        &h,
        &compiler,
        schedule.as_ref().map(|s| (s, small_in_order)),
    )
    .map_err(|e| names::name_error(&prepared, e))?;
    // When every body runs in order, so does the graph: no schedule, and the memory
    // plan needs no ordering between streams (planning with one costs time
    // quadratic in the steps: nested loops' gradients).
    let schedule = schedule.filter(|_| steps.top.bodies_on_streams() > 0);
    Ok(Executable {
        report,
        nodes_before,
        steps,
        schedule,
        options: options.clone(),
        compiler,
        calls: Mutex::new(HashMap::new()),
        layouts: Mutex::new(HashMap::new()),
        spare: Mutex::new(Vec::new()),
        last: Mutex::new(None),
        allocations: AtomicU64::new(0),
        looped,
        graph: prepared,
        source: graph.clone(),
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
        self.run_with_hooks(inputs, params, &mut LoopHooks::new())
    }

    /// [`Executable::run_with_params`] with custom loop-end functions for chunk nodes
    /// (DESIGN.md §20; a chunk node without one uses the default).
    pub fn run_with_hooks(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
        hooks: &mut LoopHooks<'_>,
    ) -> Result<Vec<Tensor>, GraphError> {
        let mut outputs = Vec::new();
        self.run_into_with_hooks(inputs, params, hooks, &mut outputs)?;
        Ok(outputs)
    }

    /// [`Executable::run_with_params`], writing the outputs into `outputs` (its
    /// tensors' buffers reused, one tensor per output, in order). A later call on
    /// inputs of the same types and shapes, with the same `$params`, allocates
    /// nothing when `outputs` holds the earlier call's results: the inputs' binding
    /// and the memory plan are the last call's, every kernel is bound already, the
    /// arena and every list the run needs are the earlier run's (a graph with chunk
    /// nodes, a `parallel` or an unfused call still allocates, as do bodies run on
    /// several streams).
    pub fn run_into(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), GraphError> {
        self.run_into_with_hooks(inputs, params, &mut LoopHooks::new(), outputs)
    }

    /// [`Executable::run_into`] with custom loop-end functions for chunk nodes.
    pub fn run_into_with_hooks(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
        hooks: &mut LoopHooks<'_>,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), GraphError> {
        self.run_pooled(inputs, params, hooks, outputs)
            .map_err(|e| names::name_error(&self.graph, e))
    }

    /// [`Executable::run_into_with_hooks`] in an arena of the pool.
    fn run_pooled(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
        hooks: &mut LoopHooks<'_>,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), GraphError> {
        let (bindings, layout) = self.bind(inputs, params)?;
        let spare = self.spare.lock().unwrap_or_else(|e| e.into_inner()).pop();
        let mut state = spare.unwrap_or_else(|| RunState::new(self.steps.refs.len()));
        if state.arena.bytes() < layout.plan.arena_bytes {
            state.arena = Arena::new(layout.plan.arena_bytes);
            self.allocations.fetch_add(1, Ordering::Relaxed);
        }
        // Views into another run's arena mean nothing in this one.
        for v in state.store.values_mut() {
            if v.as_ref().is_some_and(|v| v.offset().is_some()) {
                *v = None;
            }
        }
        let run = Run {
            layout: &layout,
            inputs,
            params,
            bindings: &bindings,
        };
        let result = self.run_on(&mut state, &run, hooks, outputs);
        self.spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(state);
        result
    }

    /// The binding of `inputs` and `params` and its memory layout: the last call's
    /// when the inputs have its types and shapes and the params are its own
    /// (compared without allocating), else checked and bound now.
    fn bind(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<(Arc<Bindings>, Arc<Layout>), GraphError> {
        if let Some(last) = self
            .last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .filter(|l| l.is_for(inputs, params))
        {
            return Ok((last.bindings.clone(), last.layout.clone()));
        }
        let bindings = Arc::new(bind_graph_inputs(&self.graph, inputs, params)?);
        let layout = self.layout(&bindings, params)?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(LastCall {
            types: inputs.iter().map(|t| (t.dtype, t.shape.clone())).collect(),
            params: params.clone(),
            bindings: bindings.clone(),
            layout: layout.clone(),
        });
        Ok((bindings, layout))
    }

    /// One run in `state` (the arena, the slots' values, the spare lists), the
    /// outputs written into `outputs`.
    fn run_on(
        &self,
        state: &mut RunState,
        run: &Run<'_>,
        hooks: &mut LoopHooks<'_>,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), GraphError> {
        let RunState {
            arena,
            store,
            pool,
            swaps,
        } = state;
        let mem = Memory::new(arena, run.layout, &self.allocations, std::mem::take(swaps));
        let mut machine = Machine {
            graph: &self.graph,
            compiler: &self.compiler,
            max_iterations: self.options.max_iterations,
            calls: &self.calls,
            store,
            mem,
            params: Cow::Borrowed(run.params),
            bindings: Cow::Borrowed(run.bindings),
            pool: std::mem::take(pool),
        };
        let result = self.run_machine(&mut machine, run.inputs, hooks, outputs);
        *pool = machine.pool;
        *swaps = machine.mem.into_swaps();
        result
    }

    /// Places the inputs, runs the top level on `machine`, writes the outputs.
    fn run_machine(
        &self,
        machine: &mut Machine<'_>,
        inputs: &[Tensor],
        hooks: &mut LoopHooks<'_>,
        outputs: &mut Vec<Tensor>,
    ) -> Result<(), GraphError> {
        let top = &self.steps.top;
        let input_node = self.graph.interface.input;
        for (slot, t) in top.params.iter().zip(inputs) {
            let previous = machine.store.take(*slot);
            let v = machine
                .mem
                .place(*slot, previous, t.dtype, &t.shape)
                .and_then(|mut v| machine.mem.fill(&mut v, &t.data).map(|()| v))
                .map_err(|m| GraphRunError::Node {
                    node: input_node,
                    message: m,
                })?;
            machine.store.set(*slot, Some(v));
        }
        if self.looped {
            *outputs = looped::run_top(machine, &self.graph, top, input_node, hooks)?;
            return Ok(());
        }
        machine.run_body(top)?;
        outputs.truncate(top.results.len());
        for (k, r) in top.results.iter().enumerate() {
            if k == outputs.len() {
                outputs.push(Tensor {
                    dtype: self.graph.dtype,
                    shape: Vec::new(),
                    data: Vec::new(),
                });
            }
            machine.output_into(input_node, r, &mut outputs[k])?;
        }
        Ok(())
    }

    /// The memory layout for the run's dims (the input dims and the params): planned
    /// the first time these dims are seen, then cached.
    fn layout(
        &self,
        bindings: &Bindings,
        params: &HashMap<String, i64>,
    ) -> Result<Arc<Layout>, GraphError> {
        let mut dims: Dims = bindings
            .names
            .iter()
            .chain(params)
            .map(|(n, v)| (n.clone(), *v))
            .collect();
        dims.sort();
        dims.dedup();
        if let Some(l) = self
            .layouts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&dims)
        {
            return Ok(l.clone());
        }
        // Every size of the run, and its arena, against the memory limit before
        // anything is allocated (once per set of dims, as the plan).
        check_sizes(&self.source, bindings, SizeLimit::process())?;
        let map: HashMap<String, i64> = dims.iter().cloned().collect();
        let plan = match &self.schedule {
            Some(s) => plan_memory_scheduled(&self.graph, &map, s)?,
            None => plan_memory(&self.graph, &map)?,
        };
        let in_order = if self.steps.small_in_order {
            let env = Bindings {
                names: map.clone(),
                params: map.clone(),
                ..Bindings::default()
            };
            streams::bodies_in_order(&self.graph, &self.steps.top, self.steps.plans, &env)
        } else {
            vec![false; self.steps.plans]
        };
        check_arena(&plan, SizeLimit::process())?;
        let layout = Arc::new(Layout::new(plan, &self.steps.refs, in_order));
        self.layouts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(dims, layout.clone());
        Ok(layout)
    }

    /// The memory plan the executable runs `inputs` (and `params`) on: made by
    /// [`plan_memory`] for their dims the first time they are seen, then cached. Every
    /// intermediate of such a run is a view into one arena of `arena_bytes` bytes at
    /// the plan's offsets.
    pub fn memory_plan(
        &self,
        inputs: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<Arc<MemoryPlan>, GraphError> {
        let bindings = bind_graph_inputs(&self.graph, inputs, params)?;
        Ok(self.layout(&bindings, params)?.plan.clone())
    }

    /// The bytes of the largest arena kept for reuse (the largest planned arena of the
    /// runs so far, when no two ran at once; each concurrent run has its own arena).
    pub fn arena_bytes(&self) -> usize {
        self.spare
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .map(|s| s.arena.bytes())
            .max()
            .unwrap_or(0)
    }

    /// How many element buffers the executable has allocated so far: arenas, and
    /// owned buffers for what the plan does not place (the inputs' typed copies and the
    /// graph's outputs, reused by later runs when their sizes repeat; a `parallel`
    /// index). Intermediates are views into the arena, so this does not grow with a
    /// loop's trip count.
    pub fn buffer_allocations(&self) -> u64 {
        self.allocations.load(Ordering::Relaxed)
    }

    /// The prepared graph it runs.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// What the prepare pipeline did.
    pub fn report(&self) -> &Report {
        &self.report
    }

    /// The loop-IR passes' times over every program compiled so far (the kernels,
    /// and unfused calls compiled by runs), when [`ExecOptions::prepare`] asked for
    /// [`time_passes`](PrepareOptions::time_passes); `None` otherwise.
    pub fn kernel_pass_times(&self) -> Option<PassTimes> {
        self.compiler.times()
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
    pub fn backend(&self) -> KernelBackend {
        self.options.backend
    }

    /// How many bodies (the top level and the sub-functions of `while`, `if`,
    /// `case`, ...) run on several streams; the others run their nodes in order.
    pub fn bodies_on_streams(&self) -> usize {
        self.steps.top.bodies_on_streams()
    }

    /// The static schedule it runs on several streams; `None` when every scope runs
    /// on one stream (its nodes in order).
    pub fn schedule(&self) -> Option<&Schedule> {
        self.schedule.as_ref()
    }
}

/// The schedule `streams` asks for, when it uses more than one stream somewhere.
fn stream_schedule(graph: &Graph, streams: Streams) -> Result<Option<Schedule>, GraphError> {
    let options = match streams {
        Streams::Auto => ScheduleOptions {
            max_streams: Some(uop_runtime::threads()),
            ..ScheduleOptions::default()
        },
        Streams::Max(n) => ScheduleOptions {
            max_streams: Some(n),
            ..ScheduleOptions::default()
        },
        Streams::Random { streams, seed } => ScheduleOptions {
            max_streams: Some(streams),
            random: Some(seed),
            ..ScheduleOptions::default()
        },
    };
    if options.max_streams == Some(1) {
        return Ok(None);
    }
    let s = schedule(graph, &options)?;
    Ok((s.max_stream_count() > 1).then_some(s))
}
