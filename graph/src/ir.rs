//! The graph IR (DESIGN.md §13.1): a flat list of [`Node`]s in execution order, each
//! with a unique non-zero [`NodeId`], reading outputs of earlier nodes through
//! [`Ref`]s; super nodes hold sub-functions as [`Interface`]s over ordinary nodes of
//! the same list. The nesting of definitions is derived (`hierarchy`), never stored.
//!
//! [`Graph`] owns the list and two indexes kept exact by every mutation: the
//! position of each id, and the consumers of each node (Hexagon NN's `noderefhash`,
//! here an exact map). The verifier checks that they agree with the list.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::Registry;
use uop_codegen::uop::{DType, Program};

/// A node's identity: unique within a graph and never 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "%{}", self.0)
    }
}

/// One output of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ref {
    /// The node.
    pub node: NodeId,
    /// Which of its outputs, from 0.
    pub output: usize,
}

impl Ref {
    /// Output `output` of `node`.
    pub fn new(node: NodeId, output: usize) -> Self {
        Ref { node, output }
    }
}

impl fmt::Display for Ref {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.output == 0 {
            write!(f, "{}", self.node)
        } else {
            write!(f, "{}.{}", self.node, self.output)
        }
    }
}

/// The type of a value: element type and symbolic shape (index expressions over
/// input dimension names, `$params` and integers, as in programs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ValueType {
    /// Element type.
    pub dtype: DType,
    /// One size expression per axis; empty for rank 0.
    pub shape: Vec<Expr>,
}

impl ValueType {
    /// A type from a dtype and shape.
    pub fn new(dtype: DType, shape: Vec<Expr>) -> Self {
        ValueType { dtype, shape }
    }

    /// A rank-0 value.
    pub fn scalar(dtype: DType) -> Self {
        ValueType::new(dtype, Vec::new())
    }

    /// True for one value: rank 0, or every axis of size 1 (as a kept-rank reduction
    /// gives). Conditions and selectors must be single values.
    pub fn is_single(&self) -> bool {
        self.shape.iter().all(|d| *d == Expr::Int(1))
    }
}

impl fmt::Display for ValueType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype.name())?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// What an interface returns: an output of a node, or a rank-0 constant of the
/// graph's float type.
#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    /// An output of a node.
    Ref(Ref),
    /// A rank-0 constant.
    Scalar(f64),
}

impl Source {
    /// The reference, if this is one.
    pub fn as_ref(&self) -> Option<Ref> {
        match self {
            Source::Ref(r) => Some(*r),
            Source::Scalar(_) => None,
        }
    }
}

impl From<Ref> for Source {
    fn from(r: Ref) -> Self {
        Source::Ref(r)
    }
}

/// A (sub-)function: the Input node holding its parameters, and what it returns.
///
/// The body is every node that depends on `input` (and is placed inside by the
/// hierarchy); it lives in the graph's flat list like any other node.
#[derive(Clone, Debug, PartialEq)]
pub struct Interface {
    /// The [`Op::Input`] node whose outputs are the parameters.
    pub input: NodeId,
    /// The results.
    pub outputs: Vec<Source>,
}

/// An argument of a [`Call`]: a tensor (an input of the node) or a literal.
#[derive(Clone, Debug, PartialEq)]
pub enum CallValue {
    /// The node's input `k`.
    Input(usize),
    /// An integer literal.
    Int(i64),
    /// A number with a fraction or exponent, or `inf` / `nan`.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A `"string"`.
    Str(String),
    /// A `$param`.
    Param(String),
    /// A `[list]` of index expressions or tensors (`sources=[a, b]`).
    List(Vec<ListItem>),
}

/// One item of a [`CallValue::List`].
#[derive(Clone, Debug, PartialEq)]
pub enum ListItem {
    /// An index expression.
    Expr(Expr),
    /// The node's input `k`.
    Input(usize),
}

/// Where a `scan` takes the slices of a scanned input or puts the rows of a stacked
/// output: an axis, walked forwards (iteration `t` at position `t`) or in reverse
/// (position `count - 1 - t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScanAxis {
    /// The axis of the scanned input (of the stacked output).
    pub axis: usize,
    /// Walked from the last position to the first.
    pub reverse: bool,
}

impl ScanAxis {
    /// Axis `axis`, forwards.
    pub fn new(axis: usize) -> Self {
        ScanAxis {
            axis,
            reverse: false,
        }
    }

    /// The position iteration `t` (below `count`) touches.
    pub fn position(&self, t: usize, count: usize) -> usize {
        if self.reverse {
            count.saturating_sub(t.saturating_add(1))
        } else {
            t
        }
    }
}

/// A micro or macro op of the registry, not yet expanded into uops.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// The op's name.
    pub op: String,
    /// Positional arguments.
    pub args: Vec<CallValue>,
    /// Named attributes, in the order written.
    pub attrs: Vec<(String, CallValue)>,
    /// `$name`s bound to an input of the node (a `parallel` index): `$name` takes the
    /// integer value of input `k`, a rank-0 i32 value.
    pub bind: Vec<(String, usize)>,
}

impl Call {
    /// A call of `op` with positional arguments only.
    pub fn new(op: impl Into<String>, args: Vec<CallValue>) -> Self {
        Call {
            op: op.into(),
            args,
            attrs: Vec::new(),
            bind: Vec::new(),
        }
    }
}

/// A fused kernel formed by the `kernels` pass: one uop program whose inputs are the
/// node's inputs and whose outputs are the node's outputs, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    /// A name for printing and generated code.
    pub name: String,
    /// The program.
    pub program: Program,
    /// The nodes it was formed from (ids of the removed calls).
    pub members: Vec<NodeId>,
    /// The op of each member, in the order of `members` (for printing).
    pub ops: Vec<String>,
    /// The decisions of the `kernels` pass that shaped it (`split-joins: ...`), for
    /// printing.
    pub notes: Vec<String>,
}

/// What a node computes.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// The parameters of the graph or of one sub-function; one output per parameter.
    Input {
        /// Parameter names, one per output.
        names: Vec<String>,
    },
    /// A constant tensor.
    Const(Tensor),
    /// An op of the registry.
    Call(Call),
    /// A fused kernel.
    Kernel(Box<Kernel>),
    /// `while(cond, body, init...)`: inputs are the initial state.
    While {
        /// Sub-function 0: the state to one value; looping goes on while it is not 0.
        cond: Interface,
        /// Sub-function 1: the state to the next state.
        body: Interface,
    },
    /// `case(sel, [branches], args...)`: inputs are the selector, then the args.
    Case {
        /// Sub-function k: branch k.
        branches: Vec<Interface>,
    },
    /// `if(c, then, else, args...)`: inputs are the condition, then the args.
    If {
        /// Sub-function 0, taken when the condition is not 0.
        then: Interface,
        /// Sub-function 1.
        else_: Interface,
    },
    /// `parallel(count, body, args...)`: inputs are the args; the body's first
    /// parameter is the iteration index (`$name`, rank-0 i32); output k stacks the
    /// iterations' k-th results on a new axis 0.
    Parallel {
        /// Number of iterations.
        count: Expr,
        /// The index parameter's name (without `$`).
        index: String,
        /// Sub-function 0.
        body: Interface,
    },
    /// `scan(N, body, init..., xs..., carried=C)`: a sequential loop of `count`
    /// iterations. Inputs are the `carried` initial states, then the scanned inputs
    /// (one [`ScanAxis`] each in `scanned`). The body's parameters are the iteration
    /// index (`$name`, rank-0 i32), the state, then one slice of each scanned input
    /// (its axis removed); it returns the next state, then one value per stacked
    /// output (one [`ScanAxis`] each in `stacked`). The outputs are the final state,
    /// then the stacked values (the iterations' values along a new axis).
    Scan {
        /// Number of iterations.
        count: Expr,
        /// The index parameter's name (without `$`).
        index: String,
        /// How many of the inputs (and outputs) are carried state.
        carried: usize,
        /// The axis and direction of each scanned input.
        scanned: Vec<ScanAxis>,
        /// The axis and direction of each stacked output.
        stacked: Vec<ScanAxis>,
        /// Sub-function 0.
        body: Interface,
    },
    /// `call(F, args...)`: a function that stays a unit of its own.
    NoInline {
        /// The function's name.
        name: String,
        /// Sub-function 0.
        body: Interface,
    },
    /// `chunk(x, size=C)`: a loop-control node; downstream nodes run once per chunk of
    /// `size` rows of `x`'s axis `axis`. Its output has `x`'s type. With several
    /// inputs (`chunk(x, g, size=C)`, all with the same rows) it gives one output per
    /// input, each the same rows of its input.
    Chunk {
        /// The chunked axis (0).
        axis: usize,
        /// Rows per chunk.
        size: Expr,
    },
    /// Keeps the tensors a later partition reads alive across chunk iterations.
    Sink,
    /// `sum_chunks(v)`: a graph output summed over the iterations of the chunk loop
    /// (a weight's gradient); over the whole batch (no chunk loop) it is `v`.
    SumChunks,
}

impl Op {
    /// The kind's name, as printed and in messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Op::Input { .. } => "input",
            Op::Const(_) => "const",
            Op::Call(_) => "call",
            Op::Kernel(_) => "kernel",
            Op::While { .. } => "while",
            Op::Case { .. } => "case",
            Op::If { .. } => "if",
            Op::Parallel { .. } => "parallel",
            Op::Scan { .. } => "scan",
            Op::NoInline { .. } => "noinline",
            Op::Chunk { .. } => "chunk",
            Op::Sink => "sink",
            Op::SumChunks => "sum_chunks",
        }
    }

    /// The kind as a filterable value.
    pub fn class(&self) -> Kind {
        match self {
            Op::Input { .. } => Kind::Input,
            Op::Const(_) => Kind::Const,
            Op::Call(_) => Kind::Call,
            Op::Kernel(_) => Kind::Kernel,
            Op::While { .. } => Kind::While,
            Op::Case { .. } => Kind::Case,
            Op::If { .. } => Kind::If,
            Op::Parallel { .. } => Kind::Parallel,
            Op::Scan { .. } => Kind::Scan,
            Op::NoInline { .. } => Kind::NoInline,
            Op::Chunk { .. } => Kind::Chunk,
            Op::Sink => Kind::Sink,
            Op::SumChunks => Kind::SumChunks,
        }
    }

    /// The sub-functions of a super node, numbered as DESIGN.md §16 says (`while`:
    /// condition 0, body 1; `if`: then 0, else 1; `case`: branch k is k); empty for
    /// other nodes.
    pub fn interfaces(&self) -> Vec<&Interface> {
        match self {
            Op::While { cond, body } => vec![cond, body],
            Op::Case { branches } => branches.iter().collect(),
            Op::If { then, else_ } => vec![then, else_],
            Op::Parallel { body, .. } | Op::Scan { body, .. } | Op::NoInline { body, .. } => {
                vec![body]
            }
            _ => Vec::new(),
        }
    }

    /// The sub-functions, mutable, in the same order as [`Op::interfaces`].
    pub fn interfaces_mut(&mut self) -> Vec<&mut Interface> {
        match self {
            Op::While { cond, body } => vec![cond, body],
            Op::Case { branches } => branches.iter_mut().collect(),
            Op::If { then, else_ } => vec![then, else_],
            Op::Parallel { body, .. } | Op::Scan { body, .. } | Op::NoInline { body, .. } => {
                vec![body]
            }
            _ => Vec::new(),
        }
    }

    /// The name of the iteration index of a `parallel` or `scan` body (parameter 0
    /// of its sub-function), without `$`.
    pub fn index_name(&self) -> Option<&str> {
        match self {
            Op::Parallel { index, .. } | Op::Scan { index, .. } => Some(index),
            _ => None,
        }
    }

    /// True for nodes with sub-functions.
    pub fn is_super(&self) -> bool {
        !self.interfaces().is_empty()
    }
}

/// Node kinds, for filters (`unique_consumer`) and pass class flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// [`Op::Input`]
    Input,
    /// [`Op::Const`]
    Const,
    /// [`Op::Call`]
    Call,
    /// [`Op::Kernel`]
    Kernel,
    /// [`Op::While`]
    While,
    /// [`Op::Case`]
    Case,
    /// [`Op::If`]
    If,
    /// [`Op::Parallel`]
    Parallel,
    /// [`Op::Scan`]
    Scan,
    /// [`Op::NoInline`]
    NoInline,
    /// [`Op::Chunk`]
    Chunk,
    /// [`Op::Sink`]
    Sink,
    /// [`Op::SumChunks`]
    SumChunks,
}

/// Per-node flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u8);

impl Flags {
    /// Kept by `dead` even without consumers (Sink; graph outputs are kept anyway).
    pub const RETAIN: Flags = Flags(1);

    /// True when every flag of `other` is set.
    pub fn contains(self, other: Flags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, rhs: Flags) -> Flags {
        Flags(self.0 | rhs.0)
    }
}

/// One node of the flat list.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Unique, non-zero.
    pub id: NodeId,
    /// What it computes.
    pub op: Op,
    /// The values it reads (for super nodes: the initial state / selector / args).
    pub inputs: Vec<Ref>,
    /// The type of each output.
    pub outputs: Vec<ValueType>,
    /// A name per output where the source gave one (for printing).
    pub names: Vec<Option<String>>,
    /// Flags.
    pub flags: Flags,
}

impl Node {
    /// A node with unnamed outputs and no flags.
    pub fn new(id: NodeId, op: Op, inputs: Vec<Ref>, outputs: Vec<ValueType>) -> Self {
        let names = vec![None; outputs.len()];
        Node {
            id,
            op,
            inputs,
            outputs,
            names,
            flags: Flags::default(),
        }
    }

    /// The name of output `k`, if it has one.
    pub fn name(&self, k: usize) -> Option<&str> {
        self.names.get(k).and_then(|n| n.as_deref())
    }

    /// Every reference the node reads: its inputs, then its interfaces' outputs.
    pub fn uses(&self) -> Vec<Ref> {
        let mut refs = self.inputs.clone();
        for i in self.op.interfaces() {
            refs.extend(i.outputs.iter().filter_map(Source::as_ref));
        }
        refs
    }

    /// Output `k` as a reference.
    pub fn output(&self, k: usize) -> Ref {
        Ref::new(self.id, k)
    }
}

/// A graph: the flat node list, its top-level interface and what the whole
/// program declares (float type, `$params`, size assertions).
#[derive(Clone, Debug)]
pub struct Graph {
    /// The float type of every float value.
    pub dtype: DType,
    /// Declared `$params`.
    pub params: Vec<String>,
    /// Size equalities checked at run time.
    pub assertions: Vec<(Expr, Expr)>,
    /// The ops `Call` nodes name (the macro-op library by default).
    pub registry: Arc<Registry>,
    /// The graph's own interface: its Input node and its outputs.
    pub interface: Interface,
    /// The name the source gave each output (`output y` names it `y`, even when `y`
    /// is another name of a value named otherwise), by position in
    /// `interface.outputs`; a missing or `None` entry falls back to the value's
    /// name ([`Graph::output_name`]).
    pub output_names: Vec<Option<String>>,
    pub(crate) nodes: Vec<Node>,
    /// Position of each id in `nodes`.
    pub(crate) position: HashMap<NodeId, usize>,
    /// The nodes reading each node (through inputs or interface outputs).
    pub(crate) consumers: HashMap<NodeId, BTreeSet<NodeId>>,
    pub(crate) next_id: u32,
}

impl Graph {
    /// An empty graph of float type `dtype` calling the ops of the macro-op library,
    /// with a top-level Input node of no parameters.
    pub fn new(dtype: DType) -> Self {
        Graph::with_registry(dtype, crate::default_registry())
    }

    /// An empty graph whose calls name ops of `registry`.
    pub fn with_registry(dtype: DType, registry: Arc<Registry>) -> Self {
        let input = NodeId(1);
        let mut g = Graph {
            dtype,
            params: Vec::new(),
            assertions: Vec::new(),
            registry,
            interface: Interface {
                input,
                outputs: Vec::new(),
            },
            output_names: Vec::new(),
            nodes: Vec::new(),
            position: HashMap::new(),
            consumers: HashMap::new(),
            next_id: 2,
        };
        g.push(Node::new(
            input,
            Op::Input { names: Vec::new() },
            Vec::new(),
            Vec::new(),
        ));
        g
    }

    /// A graph from a node list, with the indexes built from it. The list is not
    /// checked: run [`crate::verify()`] on the result.
    pub fn from_nodes(dtype: DType, interface: Interface, nodes: Vec<Node>) -> Self {
        let next_id = nodes.iter().map(|n| n.id.0).max().unwrap_or(0) + 1;
        let mut g = Graph {
            dtype,
            params: Vec::new(),
            assertions: Vec::new(),
            registry: crate::default_registry(),
            interface,
            output_names: Vec::new(),
            nodes,
            position: HashMap::new(),
            consumers: HashMap::new(),
            next_id,
        };
        g.reindex();
        g
    }

    /// The name of output `k`: the name the source gave it, else the name of the
    /// value it returns, else `out<k>`.
    pub fn output_name(&self, k: usize) -> String {
        if let Some(Some(name)) = self.output_names.get(k) {
            return name.clone();
        }
        self.interface
            .outputs
            .get(k)
            .and_then(Source::as_ref)
            .and_then(|r| self.node(r.node).and_then(|n| n.name(r.output)))
            .map_or_else(|| format!("out{k}"), str::to_string)
    }

    /// The nodes in execution order.
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The node with id `id`.
    pub fn node(&self, id: NodeId) -> Option<&Node> {
        self.position.get(&id).map(|&p| &self.nodes[p])
    }

    /// The node with id `id`, mutable. Change its inputs only through the rewrite
    /// utilities, which keep the consumer index exact.
    pub(crate) fn node_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.position.get(&id).map(|&p| &mut self.nodes[p])
    }

    /// Where `id` is in the list.
    pub fn position(&self, id: NodeId) -> Option<usize> {
        self.position.get(&id).copied()
    }

    /// The nodes that read any output of `id` (through inputs or interface outputs),
    /// sorted by id.
    pub fn consumers(&self, id: NodeId) -> Vec<NodeId> {
        self.consumers
            .get(&id)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The type of a reference, if it names an existing output.
    pub fn type_of(&self, r: Ref) -> Option<&ValueType> {
        self.node(r.node).and_then(|n| n.outputs.get(r.output))
    }

    /// The type of an interface's source.
    pub fn source_type(&self, s: &Source) -> Option<ValueType> {
        match s {
            Source::Ref(r) => self.type_of(*r).cloned(),
            Source::Scalar(_) => Some(ValueType::scalar(self.dtype)),
        }
    }

    /// The nodes the graph's outputs read.
    pub fn output_nodes(&self) -> HashSet<NodeId> {
        self.interface
            .outputs
            .iter()
            .filter_map(Source::as_ref)
            .map(|r| r.node)
            .collect()
    }

    /// The graph's Input node.
    pub fn input_node(&self) -> Option<&Node> {
        self.node(self.interface.input)
    }

    /// A fresh id, never used in this graph before.
    pub fn fresh_id(&mut self) -> NodeId {
        let id = NodeId(self.next_id);
        self.next_id += 1;
        id
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// True when the graph has no nodes (not even its Input node).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// Appends a node, updating the indexes. References are not checked.
    pub(crate) fn push(&mut self, node: Node) {
        self.next_id = self.next_id.max(node.id.0 + 1);
        self.position.insert(node.id, self.nodes.len());
        for r in node.uses() {
            self.consumers.entry(r.node).or_default().insert(node.id);
        }
        self.nodes.push(node);
    }

    /// Rebuilds both indexes from the list (after a splice).
    pub(crate) fn reindex(&mut self) {
        self.position.clear();
        self.consumers.clear();
        for (p, n) in self.nodes.iter().enumerate() {
            self.next_id = self.next_id.max(n.id.0 + 1);
            self.position.insert(n.id, p);
            for r in n.uses() {
                self.consumers.entry(r.node).or_default().insert(n.id);
            }
        }
    }

    /// Recomputes the consumer entries that `node`'s uses contribute, after its
    /// inputs or interfaces changed from `old_uses`.
    pub(crate) fn update_uses(&mut self, node: NodeId, old_uses: &[Ref]) {
        for r in old_uses {
            if let Some(set) = self.consumers.get_mut(&r.node) {
                set.remove(&node);
                if set.is_empty() {
                    self.consumers.remove(&r.node);
                }
            }
        }
        let uses = self.node(node).map(Node::uses).unwrap_or_default();
        for r in uses {
            self.consumers.entry(r.node).or_default().insert(node);
        }
    }
}
