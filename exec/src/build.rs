//! From a prepared graph and its definition hierarchy to the tree of [`Step`]s the
//! executor runs: every value gets a dense slot number (its place in the arena comes
//! from the memory plan, per set of dims), every Kernel node's program is
//! compiled once, Consts become values, and each super node holds its sub-functions as
//! [`Body`]s (parameter slots, steps, results).

use std::collections::HashMap;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_graph::hierarchy::{Entry, Hierarchy, SubFunction};
use uop_graph::infer::list;
use uop_graph::schedule::Schedule;
use uop_graph::{Call, Graph, Node, NodeId, Op, Ref, ScanAxis, Source, ValueType};

use crate::GraphError;
use crate::kernel::{Compiled, Compiler};
use crate::streams::StreamPlan;
use crate::value::Value;

/// What a body returns: a value's slot, or a constant.
#[derive(Clone, Debug)]
pub(crate) enum Src {
    /// The value in this slot.
    Slot(usize),
    /// A rank-0 constant of the graph's float type.
    Value(Value),
}

/// A (sub-)function: where its parameters go, what it runs, what it returns.
#[derive(Clone, Debug)]
pub(crate) struct Body {
    /// The slot of each parameter (its Input node's outputs).
    pub params: Vec<usize>,
    /// The definitions placed in it, in execution order.
    pub steps: Vec<Step>,
    /// Its results.
    pub results: Vec<Src>,
    /// Its streams, when its schedule uses more than one (else the steps run in
    /// order).
    pub plan: Option<StreamPlan>,
}

impl Body {
    /// How many bodies, this one and those of its super nodes, have a stream plan.
    pub(crate) fn bodies_on_streams(&self) -> usize {
        let nested: usize = self
            .steps
            .iter()
            .map(|s| match &s.kind {
                StepKind::While { cond, body, .. } => {
                    cond.bodies_on_streams() + body.bodies_on_streams()
                }
                StepKind::If { then, else_ } => {
                    then.bodies_on_streams() + else_.bodies_on_streams()
                }
                StepKind::Case { branches, .. } => {
                    branches.iter().map(Body::bodies_on_streams).sum()
                }
                StepKind::Parallel { body, .. }
                | StepKind::Scan { body, .. }
                | StepKind::NoInline(body) => body.bodies_on_streams(),
                _ => 0,
            })
            .sum();
        nested + usize::from(self.plan.is_some())
    }
}

/// One node to run.
#[derive(Clone, Debug)]
pub(crate) struct Step {
    /// The node (errors name it).
    pub node: NodeId,
    /// The slots it reads.
    pub inputs: Vec<usize>,
    /// The slots it writes, one per output.
    pub outputs: Vec<usize>,
    /// What it does.
    pub kind: StepKind,
}

/// What a step does.
#[derive(Clone, Debug)]
pub(crate) enum StepKind {
    /// Gives a constant.
    Const(Value),
    /// Runs a fused kernel.
    Kernel {
        /// The kernel's name.
        name: String,
        /// Its compiled program.
        compiled: Compiled,
    },
    /// Runs an op left unfused: its one-call program is built and compiled for the
    /// concrete input types the first time they are seen.
    Call(Box<Call>),
    /// `while`: sub-functions condition and body.
    While {
        /// The condition.
        cond: Body,
        /// The body.
        body: Body,
        /// The names of its outputs, where the source gave them (for the error of
        /// a loop past `--max-iterations`).
        names: Vec<Option<String>>,
    },
    /// `if`: input 0 is the condition.
    If {
        /// Taken when the condition is not 0.
        then: Body,
        /// Taken otherwise.
        else_: Body,
    },
    /// `case`: input 0 is the selector.
    Case {
        /// Branch k.
        branches: Vec<Body>,
        /// `None` when a negative selector may pass the arguments through; else the
        /// argument and output types, for the error.
        mismatch: Option<(String, String)>,
    },
    /// `parallel`: the body runs for `$i` in `0..count`.
    Parallel {
        /// The iteration count.
        count: Expr,
        /// The body; parameter 0 is the index.
        body: Box<Body>,
        /// The output types (for the shapes of zero iterations).
        types: Vec<ValueType>,
    },
    /// `scan`: the body runs for `$t` in `0..count`, in order.
    Scan {
        /// The iteration count.
        count: Expr,
        /// How many inputs and outputs are state.
        carried: usize,
        /// The axis of each scanned input.
        scanned: Vec<ScanAxis>,
        /// The axis of each stacked output.
        stacked: Vec<ScanAxis>,
        /// The body; parameter 0 is the index.
        body: Box<Body>,
        /// The output types (for the shapes of the stacked outputs).
        types: Vec<ValueType>,
    },
    /// `call(F, ...)`: runs its body.
    NoInline(Box<Body>),
    /// A loop-control node: passes its input through (as the interpreter does).
    Chunk,
    /// `sum_chunks`: its input (the looped driver sums the iterations' values).
    SumChunks,
    /// Keeps values alive; does nothing.
    Sink,
}

/// The steps of a prepared graph.
#[derive(Clone, Debug)]
pub(crate) struct Steps {
    /// The top level: parameters are the graph's inputs, results its outputs.
    pub top: Body,
    /// The value of each slot number.
    pub refs: Vec<Ref>,
    /// The number of Kernel nodes compiled.
    pub kernels: usize,
    /// The number of stream plans (numbered from 0).
    pub plans: usize,
    /// Bodies small for a run's sizes run in order ([`crate::streams::bodies_in_order`]).
    pub small_in_order: bool,
}

/// Builds the steps of `graph` (prepared) placed as `h` says, compiling every Kernel
/// node with `compiler`; with a `schedule` (of `graph`), every body that it puts on
/// several streams gets their plan — but a small one when the flag with it is set
/// ([`crate::streams::worth_streams`]).
pub(crate) fn build(
    graph: &Graph,
    h: &Hierarchy,
    compiler: &Compiler,
    schedule: Option<(&Schedule, bool)>,
) -> Result<Steps, GraphError> {
    let (schedule, small_in_order) = match schedule {
        Some((s, small)) => (Some(s), small),
        None => (None, false),
    };
    let mut slots = HashMap::new();
    let mut refs = Vec::new();
    for n in graph.nodes() {
        for k in 0..n.outputs.len() {
            slots.insert(Ref::new(n.id, k), refs.len());
            refs.push(Ref::new(n.id, k));
        }
    }
    let mut b = Builder {
        graph,
        compiler,
        slots,
        kernels: 0,
        plans: 0,
        small_in_order,
    };
    let input = b.node(h.input)?;
    let params = (0..input.outputs.len())
        .map(|k| b.slot(h.input, Ref::new(h.input, k)))
        .collect::<Result<_, _>>()?;
    let steps = b.entries(&h.top, schedule)?;
    let plan = b.stream_plan(&steps, schedule)?;
    let results = graph
        .interface
        .outputs
        .iter()
        .map(|s| b.source(h.input, s))
        .collect::<Result<_, _>>()?;
    Ok(Steps {
        top: Body {
            params,
            steps,
            results,
            plan,
        },
        refs,
        kernels: b.kernels,
        plans: b.plans,
        small_in_order: b.small_in_order,
    })
}

struct Builder<'g> {
    graph: &'g Graph,
    compiler: &'g Compiler,
    slots: HashMap<Ref, usize>,
    kernels: usize,
    /// The stream plans numbered so far.
    plans: usize,
    /// Small bodies run in order whatever the schedule.
    small_in_order: bool,
}

fn error(node: NodeId, message: impl Into<String>) -> GraphError {
    GraphError::Compile {
        node,
        message: message.into(),
    }
}

impl Builder<'_> {
    fn node(&self, id: NodeId) -> Result<&Node, GraphError> {
        self.graph
            .node(id)
            .ok_or_else(|| error(id, "the node is not in the graph"))
    }

    fn slot(&self, reader: NodeId, r: Ref) -> Result<usize, GraphError> {
        self.slots
            .get(&r)
            .copied()
            .ok_or_else(|| error(reader, format!("reads {r}, which does not exist")))
    }

    fn source(&self, reader: NodeId, s: &Source) -> Result<Src, GraphError> {
        match s {
            Source::Ref(r) => self.slot(reader, *r).map(Src::Slot),
            Source::Scalar(v) => {
                let dtype = self.graph.dtype;
                Ok(Src::Value(Value::from_tensor(&Tensor::filled(
                    dtype,
                    Vec::new(),
                    dtype.round(*v),
                ))))
            }
        }
    }

    /// The stream plan of a body's `steps` under its scope's `schedule`, if any:
    /// none for a small body when small bodies run in order
    /// ([`crate::streams::worth_streams`]).
    fn stream_plan(
        &mut self,
        steps: &[Step],
        schedule: Option<&Schedule>,
    ) -> Result<Option<StreamPlan>, GraphError> {
        let Some(s) = schedule else {
            return Ok(None);
        };
        let plan = StreamPlan::new(steps, s, self.plans)?
            .filter(|_| !self.small_in_order || crate::streams::worth_streams(self.graph, steps));
        if plan.is_some() {
            self.plans += 1;
        }
        Ok(plan)
    }

    fn entries(
        &mut self,
        entries: &[Entry],
        schedule: Option<&Schedule>,
    ) -> Result<Vec<Step>, GraphError> {
        entries.iter().map(|e| self.entry(e, schedule)).collect()
    }

    fn body(
        &mut self,
        owner: &Node,
        sub: &SubFunction,
        schedule: Option<&Schedule>,
    ) -> Result<Body, GraphError> {
        let schedule = schedule.and_then(|s| s.nested.get(&sub.id()));
        let interfaces = owner.op.interfaces();
        let interface = interfaces
            .get(sub.branch)
            .ok_or_else(|| error(owner.id, format!("has no sub-function {}", sub.branch)))?;
        let input = self.node(sub.input)?;
        let params = (0..input.outputs.len())
            .map(|k| self.slot(owner.id, Ref::new(sub.input, k)))
            .collect::<Result<_, _>>()?;
        let steps = self.entries(&sub.nodes, schedule)?;
        let plan = self.stream_plan(&steps, schedule)?;
        let results = interface
            .outputs
            .iter()
            .map(|s| self.source(owner.id, s))
            .collect::<Result<_, _>>()?;
        Ok(Body {
            params,
            steps,
            results,
            plan,
        })
    }

    fn sub(
        &mut self,
        owner: &Node,
        e: &Entry,
        k: usize,
        schedule: Option<&Schedule>,
    ) -> Result<Body, GraphError> {
        let sub = e
            .subs
            .get(k)
            .ok_or_else(|| error(owner.id, format!("has no sub-function {k}")))?;
        self.body(owner, sub, schedule)
    }

    fn entry(&mut self, e: &Entry, schedule: Option<&Schedule>) -> Result<Step, GraphError> {
        let graph = self.graph;
        let node = graph
            .node(e.node)
            .ok_or_else(|| error(e.node, "the node is not in the graph"))?;
        let inputs = node
            .inputs
            .iter()
            .map(|r| self.slot(node.id, *r))
            .collect::<Result<_, _>>()?;
        let outputs = (0..node.outputs.len())
            .map(|k| self.slot(node.id, node.output(k)))
            .collect::<Result<_, _>>()?;
        let kind = match &node.op {
            Op::Input { .. } => {
                return Err(error(
                    node.id,
                    "an Input node that is no interface's cannot run",
                ));
            }
            Op::Const(t) => StepKind::Const(Value::from_tensor(t)),
            Op::Call(call) => StepKind::Call(Box::new(call.clone())),
            Op::Kernel(k) => {
                let compiled = self
                    .compiler
                    .compile(&k.program)
                    .map_err(|m| error(node.id, format!("kernel {}: {m}", k.name)))?;
                self.kernels += 1;
                StepKind::Kernel {
                    name: k.name.clone(),
                    compiled,
                }
            }
            Op::While { .. } => StepKind::While {
                cond: self.sub(node, e, 0, schedule)?,
                body: self.sub(node, e, 1, schedule)?,
                names: node.names.clone(),
            },
            Op::If { .. } => StepKind::If {
                then: self.sub(node, e, 0, schedule)?,
                else_: self.sub(node, e, 1, schedule)?,
            },
            Op::Case { .. } => {
                let arg_types: Vec<ValueType> = node.inputs[1..]
                    .iter()
                    .filter_map(|r| graph.type_of(*r).cloned())
                    .collect();
                let mismatch =
                    (arg_types != node.outputs).then(|| (list(&arg_types), list(&node.outputs)));
                StepKind::Case {
                    branches: (0..e.subs.len())
                        .map(|k| self.sub(node, e, k, schedule))
                        .collect::<Result<_, _>>()?,
                    mismatch,
                }
            }
            Op::Parallel { count, .. } => StepKind::Parallel {
                count: count.clone(),
                body: Box::new(self.sub(node, e, 0, schedule)?),
                types: node.outputs.clone(),
            },
            Op::Scan {
                count,
                carried,
                scanned,
                stacked,
                ..
            } => StepKind::Scan {
                count: count.clone(),
                carried: *carried,
                scanned: scanned.clone(),
                stacked: stacked.clone(),
                body: Box::new(self.sub(node, e, 0, schedule)?),
                types: node.outputs.clone(),
            },
            Op::NoInline { .. } => StepKind::NoInline(Box::new(self.sub(node, e, 0, schedule)?)),
            Op::Chunk { .. } => StepKind::Chunk,
            Op::SumChunks => StepKind::SumChunks,
            Op::Sink => StepKind::Sink,
        };
        Ok(Step {
            node: node.id,
            inputs,
            outputs,
            kind,
        })
    }
}
