//! The graph interpreter: the oracle every later path (prepare passes, executor,
//! generated Rust) is tested against (DESIGN.md §22).
//!
//! It runs a graph node by node in the order of its definition [`hierarchy`] — so a
//! loop invariant hoisted out of a body is computed once — every Call through the
//! uop reference interpreter ([`uop_codegen::interp::run`]) on the one-call program
//! [`call_program`](crate::infer::call_program) builds from the call's *concrete* input types, with the control
//! flow of DESIGN.md §13.2 and §19:
//!
//! - `while`: the condition runs before each iteration; the body's results replace the
//!   state; the trip count is recorded in the [`Trace`];
//! - `case`: branch `floor(sel)`; a negative selector passes the arguments through when
//!   their types equal the outputs', and is an error otherwise; a selector at or past
//!   the number of branches is an error; `if`: `c != 0` takes `then`;
//! - `parallel`: the body runs for `$i` in `0..N`; output k stacks the iterations'
//!   k-th results on a new axis 0;
//! - `scan`: the body runs for `t` in `0..N` in order on the state and a slice of
//!   each scanned input; the state results replace the state, the others are stacked
//!   (`crate::scan`); the trip count is recorded in the [`Trace`];
//! - `call` runs its body; Const gives its tensor; Kernel runs its program; Sink
//!   does nothing;
//! - `chunk` (DESIGN.md §20): a graph with chunk nodes runs its top level through the
//!   loop stack (`crate::looping`, `docs/graph-looping.md`): every node downstream of
//!   a chunk node runs once per chunk of its rows, and the outputs are written chunk
//!   by chunk; [`run_with_hooks`] takes custom loop-end functions.
//!
//! Every error names the node (`%7: ...`) or the graph input.

use std::collections::HashMap;
use std::sync::Arc;

use uop_codegen::index::{Bindings, Expr};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{BindError, DType, InputDecl, Program, bind_inputs, concrete_shape};

use crate::hierarchy::{Entry, SubFunction, hierarchy};
use crate::infer::{call_program_in, list};
use crate::ir::{Call, Graph, Interface, Node, NodeId, Op, Ref, Source, ValueType};
use crate::looping::LoopHooks;
pub use crate::run_error::GraphRunError;

#[path = "interp_looped.rs"]
mod looped;
#[path = "interp_scan.rs"]
mod scan;

fn node_error(node: NodeId, message: impl Into<String>) -> GraphRunError {
    GraphRunError::Node {
        node,
        message: message.into(),
    }
}

/// A node's error naming the value as the user wrote it (`in `w``, `in `w` of
/// function `f`` for a value an inlined function made), when `graph` (the graph as
/// written, or one whose passes kept its node ids) names it. The interpreter and the
/// graph executor report errors by node; a caller that has the user's graph (the
/// command line) names them with this. A one-call program's inputs (`_in0`) are
/// named after the values the node reads.
pub fn name_run_error(graph: &Graph, e: GraphRunError) -> GraphRunError {
    let GraphRunError::Node { node, message } = e else {
        return e;
    };
    let message = name_call_inputs(graph, node, message);
    let named = graph.node(node).and_then(|n| n.name(0));
    let message = match named.map(|n| n.rsplit_once('.')) {
        Some(Some((function, value))) => {
            format!("in `{value}` of function `{function}`: {message}")
        }
        Some(None) => format!("in `{}`: {message}", named.unwrap_or_default()),
        None => message,
    };
    GraphRunError::Node { node, message }
}

/// `message` of `node`'s one-call program with the program's input names
/// (`_in0`, `_in1`, ...) replaced by the names of the values the node reads (the
/// last part of a callee's `f.w`), or `argument k` for an unnamed one.
fn name_call_inputs(graph: &Graph, node: NodeId, message: String) -> String {
    let Some(n) = graph.node(node) else {
        return message;
    };
    let mut message = message;
    for (k, r) in n.inputs.iter().enumerate().rev() {
        let scratch = format!("`_in{k}`");
        if !message.contains(&scratch) {
            continue;
        }
        let user = graph
            .node(r.node)
            .and_then(|m| m.name(r.output))
            .map_or_else(
                || format!("argument {}", k + 1),
                |name| format!("`{}`", name.rsplit('.').next().unwrap_or(name)),
            );
        message = message.replace(&scratch, &user);
    }
    message
}

/// How to run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// The most iterations any one `while` may run before it is an error (none by
    /// default; tests and fuzzing set one so that nothing hangs).
    pub max_iterations: Option<u64>,
}

/// The error of the `while` `node` (its outputs named `names` where the source
/// named them) that made `max` trips without ending ([`RunOptions::max_iterations`]):
/// it names the loop by its values. The graph interpreter's and the executor's.
pub fn too_many_iterations(node: NodeId, names: &[Option<String>], max: u64) -> GraphRunError {
    let named: Vec<String> = names.iter().flatten().map(|n| format!("`{n}`")).collect();
    let what = if named.is_empty() {
        "the `while`".to_string()
    } else {
        format!("the `while` giving {}", named.join(", "))
    };
    node_error(
        node,
        format!("{what} did not end within {max} iterations (--max-iterations {max})"),
    )
}

/// What happened during a run, for tests and later gradient work.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// How many times each node was evaluated (super nodes count once per run of the
    /// whole construct).
    pub evaluations: HashMap<NodeId, u64>,
    /// For each `while` and `scan`: the trip count of each time it ran, in order.
    pub trips: HashMap<NodeId, Vec<u64>>,
    /// For each `case` / `if`: the branch taken each time it ran (`-1`: the arguments
    /// passed through).
    pub branches: HashMap<NodeId, Vec<i64>>,
    /// For each chunk node: the rows of each chunk it gave (first row, rows).
    pub chunks: HashMap<NodeId, Vec<(u64, u64)>>,
    /// In a graph with chunk nodes: where each chunk of the outputs went (first row,
    /// rows).
    pub output_chunks: Vec<(u64, u64)>,
}

/// The outputs of a run and its [`Trace`].
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The graph's outputs, in order.
    pub outputs: Vec<Tensor>,
    /// What happened.
    pub trace: Trace,
}

/// Runs `graph` on `inputs` (in declaration order) with integer `params`.
pub fn run(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
) -> Result<Vec<Tensor>, GraphRunError> {
    run_with(graph, inputs, params, &RunOptions::default()).map(|r| r.outputs)
}

/// Runs `graph` with `options`, returning the outputs and the [`Trace`].
pub fn run_with(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &RunOptions,
) -> Result<Run, GraphRunError> {
    run_with_hooks(graph, inputs, params, options, &mut LoopHooks::new())
}

/// [`run_with`] with custom loop-end functions for chunk nodes (a chunk node without
/// one uses [`crate::looping::default_loop_end`]).
pub fn run_with_hooks(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    options: &RunOptions,
    hooks: &mut LoopHooks<'_>,
) -> Result<Run, GraphRunError> {
    let h = hierarchy(graph)?;
    let input = graph
        .node(h.input)
        .ok_or_else(|| node_error(h.input, "the graph's Input node is missing"))?;
    let bindings = bind(graph, input, inputs, params)?;
    crate::memory::check_sizes(graph, &bindings, crate::memory::SizeLimit::process())
        .map_err(|e| GraphRunError::Sizes(e.message))?;
    let mut m = Machine {
        graph,
        options,
        bindings,
        params: params.clone(),
        values: HashMap::new(),
        programs: HashMap::new(),
        trace: Trace::default(),
    };
    m.values.insert(h.input, inputs.to_vec());
    let chunked = graph
        .nodes()
        .iter()
        .any(|n| matches!(n.op, Op::Chunk { .. }));
    let outputs = if chunked {
        looped::run_top(&mut m, &h.top, h.input, hooks)
    } else {
        m.entries(&h.top).and_then(|()| {
            graph
                .interface
                .outputs
                .iter()
                .map(|s| m.source(h.input, s))
                .collect::<Result<Vec<_>, _>>()
        })
    }?;
    Ok(Run {
        outputs,
        trace: m.trace,
    })
}

/// Checks `inputs` against the graph's Input node (count, dtypes, every shape, the
/// shared dims and the size assertions) and binds its dimension names, before anything
/// runs; the error names the input. The executor checks its inputs with this too.
pub fn bind_graph_inputs(
    graph: &Graph,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
) -> Result<Bindings, GraphRunError> {
    let input = graph
        .input_node()
        .ok_or_else(|| node_error(graph.interface.input, "the graph's Input node is missing"))?;
    bind(graph, input, inputs, params)
}

/// Checks the inputs against the graph's Input node and binds its dims.
fn bind(
    graph: &Graph,
    input: &Node,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
) -> Result<Bindings, GraphRunError> {
    let names: Vec<String> = (0..input.outputs.len())
        .map(|k| {
            input
                .name(k)
                .map_or_else(|| format!("#{k}"), str::to_string)
        })
        .collect();
    if inputs.len() != input.outputs.len() {
        return Err(GraphRunError::InputCount {
            expected: input.outputs.len(),
            found: inputs.len(),
        });
    }
    for ((t, ty), name) in inputs.iter().zip(&input.outputs).zip(&names) {
        if t.dtype != ty.dtype {
            return Err(GraphRunError::Input {
                input: name.clone(),
                message: format!("expected {ty}, got {}{:?}", t.dtype.name(), t.shape),
            });
        }
    }
    let decls: Vec<InputDecl> = names
        .iter()
        .zip(&input.outputs)
        .map(|(name, ty)| InputDecl {
            name,
            shape: &ty.shape,
        })
        .collect();
    let shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
    bind_inputs(&decls, &graph.params, &graph.assertions, &shapes, params).map_err(|e| match e {
        BindError::Input { input, message } => GraphRunError::Input { input, message },
        BindError::DimConflict {
            ref second_input, ..
        } => GraphRunError::Input {
            input: second_input.clone(),
            message: e.to_string(),
        },
        BindError::MissingParam(p) => GraphRunError::MissingParam(p),
        BindError::Assertion {
            ref left,
            ref right,
            ..
        } => {
            // Name the inputs whose dims the assertion mentions.
            let mentioned: Vec<String> = names
                .iter()
                .zip(&input.outputs)
                .filter(|(_, ty)| {
                    ty.shape.iter().any(|d| {
                        let d = d.to_string();
                        !d.is_empty() && (mentions(left, &d) || mentions(right, &d))
                    })
                })
                .map(|(n, _)| n.clone())
                .collect();
            GraphRunError::Input {
                input: if mentioned.is_empty() {
                    names.join("`, `")
                } else {
                    mentioned.join("`, `")
                },
                message: e.to_string(),
            }
        }
        other => GraphRunError::Input {
            input: names.join("`, `"),
            message: other.to_string(),
        },
    })
}

/// True when the expression text `expr` mentions the dimension `dim` as a word.
fn mentions(expr: &str, dim: &str) -> bool {
    if dim.parse::<i64>().is_ok() {
        return false;
    }
    expr.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == dim)
}

/// A call's node and the concrete types of its inputs.
type ProgramKey = (NodeId, Vec<(DType, Vec<usize>)>);

/// The state of one run.
struct Machine<'a> {
    graph: &'a Graph,
    options: &'a RunOptions,
    /// The graph inputs' dims and the params.
    bindings: Bindings,
    params: HashMap<String, i64>,
    /// The outputs of every node evaluated so far (inner scopes overwrite theirs on
    /// every run).
    values: HashMap<NodeId, Vec<Tensor>>,
    /// Programs of calls, by node and concrete input types.
    programs: HashMap<ProgramKey, Arc<Program>>,
    trace: Trace,
}

impl Machine<'_> {
    fn node(&self, id: NodeId) -> Result<&Node, GraphRunError> {
        self.graph
            .node(id)
            .ok_or_else(|| node_error(id, "the node is not in the graph"))
    }

    /// The value `r` names, as read by `reader`.
    fn value(&self, reader: NodeId, r: Ref) -> Result<&Tensor, GraphRunError> {
        self.values
            .get(&r.node)
            .and_then(|v| v.get(r.output))
            .ok_or_else(|| node_error(reader, format!("reads {r}, which has no value")))
    }

    fn source(&self, reader: NodeId, s: &Source) -> Result<Tensor, GraphRunError> {
        match s {
            Source::Ref(r) => self.value(reader, *r).cloned(),
            Source::Scalar(v) => {
                let dtype = self.graph.dtype;
                Ok(Tensor::filled(dtype, Vec::new(), dtype.round(*v)))
            }
        }
    }

    fn entries(&mut self, entries: &[Entry]) -> Result<(), GraphRunError> {
        for e in entries {
            self.entry(e)?;
        }
        Ok(())
    }

    /// Runs sub-function `sub` of `owner` on `args`, returning its results.
    fn sub_function(
        &mut self,
        owner: &Node,
        sub: &SubFunction,
        args: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, GraphRunError> {
        let interfaces = owner.op.interfaces();
        let interface: &Interface = interfaces
            .get(sub.branch)
            .ok_or_else(|| node_error(owner.id, format!("has no sub-function {}", sub.branch)))?;
        let n = self.node(sub.input)?.outputs.len();
        if args.len() != n {
            return Err(node_error(
                owner.id,
                format!(
                    "sub-function {} takes {n} values, {} were given",
                    sub.branch,
                    args.len()
                ),
            ));
        }
        self.values.insert(sub.input, args);
        self.entries(&sub.nodes)?;
        interface
            .outputs
            .iter()
            .map(|s| self.source(owner.id, s))
            .collect()
    }

    fn entry(&mut self, e: &Entry) -> Result<(), GraphRunError> {
        let graph = self.graph;
        let node = graph
            .node(e.node)
            .ok_or_else(|| node_error(e.node, "the node is not in the graph"))?;
        *self.trace.evaluations.entry(node.id).or_default() += 1;
        let inputs: Vec<Tensor> = node
            .inputs
            .iter()
            .map(|r| self.value(node.id, *r).cloned())
            .collect::<Result<_, _>>()?;
        let outputs = match &node.op {
            Op::Input { .. } => {
                return Err(node_error(
                    node.id,
                    "an Input node that is no interface's cannot run",
                ));
            }
            Op::Const(t) => vec![t.clone()],
            Op::Call(call) => vec![self.call(node, call, inputs)?],
            Op::Kernel(k) => {
                let out = uop_codegen::interp::run(&k.program, &inputs, &self.params)
                    .map_err(|err| node_error(node.id, format!("kernel {}: {err}", k.name)))?;
                if out.len() != node.outputs.len() {
                    return Err(node_error(
                        node.id,
                        format!(
                            "kernel {} gave {} outputs for {}",
                            k.name,
                            out.len(),
                            node.outputs.len()
                        ),
                    ));
                }
                out
            }
            Op::While { .. } => self.while_loop(node, e, inputs)?,
            Op::If { .. } => {
                let taken = if one_value(node.id, "condition", &inputs)? != 0.0 {
                    0
                } else {
                    1
                };
                self.trace
                    .branches
                    .entry(node.id)
                    .or_default()
                    .push(taken as i64);
                self.sub_function(node, sub(node, e, taken)?, inputs[1..].to_vec())?
            }
            Op::Case { .. } => self.case(node, e, inputs)?,
            Op::Parallel { count, .. } => self.parallel(node, e, count, inputs)?,
            Op::Scan { .. } => self.scan(node, e, inputs)?,
            Op::NoInline { .. } => self.sub_function(node, sub(node, e, 0)?, inputs)?,
            // Given by the loop driver; a chunk reached here runs on the whole input.
            Op::Chunk { .. } => inputs,
            // Per chunk its input; the driver sums the chunks' values.
            Op::SumChunks => inputs,
            Op::Sink => Vec::new(),
        };
        self.values.insert(node.id, outputs);
        Ok(())
    }

    fn call(
        &mut self,
        node: &Node,
        call: &Call,
        inputs: Vec<Tensor>,
    ) -> Result<Tensor, GraphRunError> {
        let key = (
            node.id,
            inputs
                .iter()
                .map(|t| (t.dtype, t.shape.clone()))
                .collect::<Vec<_>>(),
        );
        let program = match self.programs.get(&key) {
            Some(p) => p.clone(),
            None => {
                let types: Vec<ValueType> = inputs
                    .iter()
                    .map(|t| {
                        ValueType::new(
                            t.dtype,
                            t.shape.iter().map(|&d| Expr::Int(d as i64)).collect(),
                        )
                    })
                    .collect();
                // Graph dims the call's lists name (`reindex(m, [B, N], ...)`) take
                // their values.
                let dims: Vec<(String, Expr)> = self
                    .bindings
                    .names
                    .iter()
                    .map(|(n, v)| (n.clone(), Expr::Int(*v)))
                    .collect();
                let (program, _) = call_program_in(
                    self.graph.dtype,
                    &self.graph.params,
                    &self.graph.registry,
                    call,
                    &types,
                    &dims,
                )
                .map_err(|err| {
                    node_error(node.id, format!("{} on ({}): {err}", call.op, list(&types)))
                })?;
                let program = Arc::new(program);
                self.programs.insert(key, program.clone());
                program
            }
        };
        let mut params = self.params.clone();
        for (name, k) in &call.bind {
            let index = inputs.get(*k).ok_or_else(|| {
                node_error(
                    node.id,
                    format!("${name} is bound to input {k}, which does not exist"),
                )
            })?;
            let v = one_value(node.id, &format!("${name}"), std::slice::from_ref(index))?;
            params.insert(name.clone(), v as i64);
        }
        let mut out = uop_codegen::interp::run(&program, &inputs, &params)
            .map_err(|err| node_error(node.id, format!("{}: {err}", call.op)))?;
        out.pop()
            .ok_or_else(|| node_error(node.id, format!("{} gave no output", call.op)))
    }

    fn while_loop(
        &mut self,
        node: &Node,
        e: &Entry,
        mut state: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, GraphRunError> {
        let (cond, body) = match e.subs.as_slice() {
            [c, b] => (c, b),
            _ => return Err(node_error(node.id, "a while needs a condition and a body")),
        };
        let mut trips = 0u64;
        loop {
            let c = self.sub_function(node, cond, state.clone())?;
            if one_value(node.id, "condition", &c)? == 0.0 {
                break;
            }
            if let Some(max) = self.options.max_iterations
                && trips >= max
            {
                return Err(too_many_iterations(node.id, &node.names, max));
            }
            let next = self.sub_function(node, body, state.clone())?;
            for (k, (old, new)) in state.iter().zip(&next).enumerate() {
                if old.dtype != new.dtype || old.shape != new.shape {
                    return Err(node_error(
                        node.id,
                        format!(
                            "the body turned state {k} from {}{:?} into {}{:?}",
                            old.dtype.name(),
                            old.shape,
                            new.dtype.name(),
                            new.shape
                        ),
                    ));
                }
            }
            state = next;
            trips += 1;
        }
        self.trace.trips.entry(node.id).or_default().push(trips);
        Ok(state)
    }

    fn case(
        &mut self,
        node: &Node,
        e: &Entry,
        inputs: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, GraphRunError> {
        let sel = one_value(node.id, "selector", &inputs)?;
        if sel.is_nan() {
            return Err(node_error(node.id, "the selector is nan"));
        }
        let k = sel.floor();
        let args = inputs[1..].to_vec();
        if k < 0.0 {
            let arg_types: Vec<ValueType> = node.inputs[1..]
                .iter()
                .filter_map(|r| self.graph.type_of(*r).cloned())
                .collect();
            if arg_types != node.outputs {
                return Err(node_error(
                    node.id,
                    format!(
                        "the selector is {sel}, which passes the arguments through, but the arguments ({}) do not have the output types ({})",
                        list(&arg_types),
                        list(&node.outputs)
                    ),
                ));
            }
            self.trace.branches.entry(node.id).or_default().push(-1);
            return Ok(args);
        }
        if k >= e.subs.len() as f64 {
            return Err(node_error(
                node.id,
                format!(
                    "the selector is {sel}, but there are {} branches",
                    e.subs.len()
                ),
            ));
        }
        let k = k as usize;
        self.trace
            .branches
            .entry(node.id)
            .or_default()
            .push(k as i64);
        self.sub_function(node, sub(node, e, k)?, args)
    }

    fn parallel(
        &mut self,
        node: &Node,
        e: &Entry,
        count: &Expr,
        inputs: Vec<Tensor>,
    ) -> Result<Vec<Tensor>, GraphRunError> {
        let mut b = self.bindings.clone();
        b.params
            .extend(self.params.iter().map(|(k, v)| (k.clone(), *v)));
        let n = count
            .eval(&b)
            .map_err(|err| node_error(node.id, format!("the count `{count}`: {err}")))?;
        let n = usize::try_from(n)
            .map_err(|_| node_error(node.id, format!("the count `{count}` is {n}")))?;
        let body = e
            .subs
            .first()
            .ok_or_else(|| node_error(node.id, "a parallel needs a body"))?;
        let mut results: Vec<Vec<Tensor>> = Vec::new();
        results.try_reserve_exact(n).map_err(|_| {
            node_error(
                node.id,
                format!("the count `{count}` is {n}: more iterations than memory can hold"),
            )
        })?;
        for i in 0..n {
            let mut args = vec![Tensor::filled(DType::I32, Vec::new(), i as f64)];
            args.extend(inputs.iter().cloned());
            results.push(self.sub_function(node, body, args)?);
        }
        (0..node.outputs.len())
            .map(|k| {
                let Some(first) = results.first() else {
                    // No iteration: the shape from the type.
                    let ty = &node.outputs[k];
                    let shape = concrete_shape(&node.id.to_string(), &ty.shape, &b)
                        .map_err(|err| node_error(node.id, err.to_string()))?;
                    return Tensor::try_filled(&node.id.to_string(), ty.dtype, shape, 0.0)
                        .map_err(|err| node_error(node.id, err.to_string()));
                };
                let (dtype, inner) = (first[k].dtype, first[k].shape.clone());
                let mut shape = vec![n];
                shape.extend(inner.iter().copied());
                let total = uop_codegen::sizes::element_count(&shape).ok_or_else(|| {
                    node_error(
                        node.id,
                        format!("result {k} of shape {shape:?} has too many elements"),
                    )
                })?;
                let mut data = Vec::new();
                data.try_reserve_exact(total).map_err(|_| {
                    node_error(
                        node.id,
                        format!("cannot allocate result {k} of shape {shape:?}"),
                    )
                })?;
                for (i, r) in results.iter().enumerate() {
                    if r[k].dtype != dtype || r[k].shape != inner {
                        return Err(node_error(
                            node.id,
                            format!(
                                "iteration {i} gave result {k} of shape {:?}, iteration 0 of {inner:?}",
                                r[k].shape
                            ),
                        ));
                    }
                    data.extend_from_slice(&r[k].data);
                }
                Tensor::new(dtype, shape, data).map_err(|err| node_error(node.id, err.to_string()))
            })
            .collect()
    }
}

/// The one value of a condition, selector or index: `values[0]` must have one
/// element.
fn one_value(node: NodeId, what: &str, values: &[Tensor]) -> Result<f64, GraphRunError> {
    match values.first() {
        Some(t) if t.len() == 1 => Ok(t.data[0]),
        Some(t) => Err(node_error(
            node,
            format!("the {what} must be one value, got shape {:?}", t.shape),
        )),
        None => Err(node_error(node, format!("the {what} is missing"))),
    }
}

/// Sub-function `k` of the entry of `node`.
fn sub<'e>(node: &Node, e: &'e Entry, k: usize) -> Result<&'e SubFunction, GraphRunError> {
    e.subs
        .get(k)
        .ok_or_else(|| node_error(node.id, format!("has no sub-function {k}")))
}
