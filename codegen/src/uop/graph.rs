//! The micro-op graph: nodes, operands and the combined [`Program`].

use crate::index::Expr;

use super::ops::{Accum, BinaryOp, DType, ReduceOp, UnaryOp};

/// A node of a graph or program, by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub usize);

/// An element-wise operand: a tensor, or a scalar broadcast to the other operands' shape.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A tensor node.
    Node(NodeId),
    /// A `constant` uop: a scalar literal.
    Const(f64),
    /// An integer `$param`, used as a float value.
    Param(String),
}

impl From<NodeId> for Operand {
    fn from(n: NodeId) -> Self {
        Operand::Node(n)
    }
}

impl From<f64> for Operand {
    fn from(v: f64) -> Self {
        Operand::Const(v)
    }
}

impl Operand {
    /// The tensor node, if this operand is one.
    pub fn node(&self) -> Option<NodeId> {
        match self {
            Operand::Node(n) => Some(*n),
            _ => None,
        }
    }
}

/// A micro op (DESIGN.md §4). The output shape lives in the [`Node`].
///
/// Index expressions stored here are *resolved*: they mention only literals,
/// output indices `iN`, named input dimensions and `$params` (no `dA0` references).
#[derive(Clone, Debug, PartialEq)]
pub enum Uop {
    /// A program input.
    Input,
    /// `out[i] = x[index(i)]`; an index outside `x` reads `fill`.
    Reindex {
        /// The tensor read.
        x: NodeId,
        /// One expression per axis of `x`, over the output indices.
        index: Vec<Expr>,
        /// The value of out-of-range reads.
        fill: f64,
    },
    /// Scatter: `out[index(i)] op= x[i]` over all `i` of `x`; out starts at the identity.
    /// Targets outside `out` are dropped.
    ReindexReduce {
        /// The tensor scattered.
        x: NodeId,
        /// One expression per axis of the output, over the indices of `x`.
        index: Vec<Expr>,
        /// How colliding values combine.
        op: Accum,
    },
    /// `op(x)` element-wise.
    Unary {
        /// The function.
        op: UnaryOp,
        /// The operand.
        x: NodeId,
    },
    /// `op(a, b)` element-wise; tensor operands have equal shapes.
    Binary {
        /// The function.
        op: BinaryOp,
        /// Left operand.
        a: Operand,
        /// Right operand.
        b: Operand,
    },
    /// `c != 0 ? a : b` element-wise.
    Where {
        /// Condition.
        c: Operand,
        /// Value where the condition holds.
        a: Operand,
        /// Value elsewhere.
        b: Operand,
    },
    /// Reduction over `axes`; the rank is kept and reduced axes have size 1.
    Reduce {
        /// The reduction.
        op: ReduceOp,
        /// Reduced axes, ascending, no repeats.
        axes: Vec<usize>,
        /// The operand.
        x: NodeId,
    },
    /// Gather along `axis`: `out[i] = x[i with i[axis] = index[i]]`; out-of-range reads 0.
    Select {
        /// The gathered axis.
        axis: usize,
        /// The tensor read.
        x: NodeId,
        /// Index tensor (i32, or float holding integers), same rank as `x`.
        index: NodeId,
    },
    /// The output index along `axis`, as a value.
    Iota {
        /// The axis whose index is produced.
        axis: usize,
    },
    /// `x` converted to the node's element type: i32 to the float type exactly (f32
    /// rounds beyond 2^24), a float to i32 truncated toward zero (saturating, NaN to 0:
    /// [`DType::round`](super::ops::DType::round)).
    Cast {
        /// The operand.
        x: NodeId,
    },
}

impl Uop {
    /// The spelling of this uop kind in `.uop` text (for messages).
    pub fn kind(&self) -> &'static str {
        match self {
            Uop::Input => "input",
            Uop::Reindex { .. } => "reindex",
            Uop::ReindexReduce { .. } => "reindex_reduce",
            Uop::Unary { op, .. } => op.name(),
            Uop::Binary { op, .. } => op.name(),
            Uop::Where { .. } => "where",
            Uop::Reduce { op, .. } => match op {
                ReduceOp::Sum => "reduce_sum",
                ReduceOp::Prod => "reduce_prod",
                ReduceOp::Max => "reduce_max",
                ReduceOp::Min => "reduce_min",
                ReduceOp::Mean => "reduce_mean",
                ReduceOp::Argmax => "reduce_argmax",
                ReduceOp::Argmin => "reduce_argmin",
            },
            Uop::Select { .. } => "select",
            Uop::Iota { .. } => "iota",
            Uop::Cast { .. } => "cast",
        }
    }

    /// The operands of this uop, in order (scalars included).
    pub fn operands(&self) -> Vec<Operand> {
        match self {
            Uop::Input | Uop::Iota { .. } => vec![],
            Uop::Reindex { x, .. }
            | Uop::ReindexReduce { x, .. }
            | Uop::Unary { x, .. }
            | Uop::Reduce { x, .. }
            | Uop::Cast { x } => vec![Operand::Node(*x)],
            Uop::Binary { a, b, .. } => vec![a.clone(), b.clone()],
            Uop::Where { c, a, b } => vec![c.clone(), a.clone(), b.clone()],
            Uop::Select { x, index, .. } => vec![Operand::Node(*x), Operand::Node(*index)],
        }
    }

    /// The tensor nodes this uop reads.
    pub fn inputs(&self) -> Vec<NodeId> {
        self.operands().iter().filter_map(Operand::node).collect()
    }

    /// Rewrites every node reference through `f` (used when renumbering).
    pub fn map_nodes(&self, f: &impl Fn(NodeId) -> NodeId) -> Uop {
        let op = |o: &Operand| match o {
            Operand::Node(n) => Operand::Node(f(*n)),
            other => other.clone(),
        };
        match self {
            Uop::Input => Uop::Input,
            Uop::Iota { axis } => Uop::Iota { axis: *axis },
            Uop::Reindex { x, index, fill } => Uop::Reindex {
                x: f(*x),
                index: index.clone(),
                fill: *fill,
            },
            Uop::ReindexReduce { x, index, op } => Uop::ReindexReduce {
                x: f(*x),
                index: index.clone(),
                op: *op,
            },
            Uop::Unary { op, x } => Uop::Unary { op: *op, x: f(*x) },
            Uop::Binary { op: o, a, b } => Uop::Binary {
                op: *o,
                a: op(a),
                b: op(b),
            },
            Uop::Where { c, a, b } => Uop::Where {
                c: op(c),
                a: op(a),
                b: op(b),
            },
            Uop::Reduce { op, axes, x } => Uop::Reduce {
                op: *op,
                axes: axes.clone(),
                x: f(*x),
            },
            Uop::Select { axis, x, index } => Uop::Select {
                axis: *axis,
                x: f(*x),
                index: f(*index),
            },
            Uop::Cast { x } => Uop::Cast { x: f(*x) },
        }
    }
}

/// One value of the graph: a uop, its name, its symbolic shape and element type.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// Unique name (given in `.uop` text, or `tN` when generated).
    pub name: String,
    /// What computes it.
    pub op: Uop,
    /// Output shape, one size expression per axis (empty for rank 0).
    pub shape: Vec<Expr>,
    /// Element type.
    pub dtype: DType,
}

/// A complete micro-op program: declared parameters and inputs, the nodes the
/// outputs need (operands before users) and the outputs.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    /// The float type of every float tensor (f32 or f64).
    pub dtype: DType,
    /// Declared `$params`, in declaration order.
    pub params: Vec<String>,
    /// Nodes in topological order.
    pub nodes: Vec<Node>,
    /// Declared inputs, in order (each an [`Uop::Input`] node).
    pub inputs: Vec<NodeId>,
    /// Outputs, in order.
    pub outputs: Vec<NodeId>,
    /// Size equalities that must hold at run time (from `[=]` assertions).
    pub assertions: Vec<(Expr, Expr)>,
}

impl Program {
    /// The node behind an id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }

    /// Looks a node up by name.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name).map(NodeId)
    }

    /// Declared inputs that no output depends on.
    pub fn unused_inputs(&self) -> Vec<NodeId> {
        let mut live = vec![false; self.nodes.len()];
        for o in &self.outputs {
            live[o.0] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for n in self.nodes[i].op.inputs() {
                    live[n.0] = true;
                }
            }
        }
        self.inputs.iter().copied().filter(|i| !live[i.0]).collect()
    }

    /// The nodes that read `id`.
    pub fn users(&self, id: NodeId) -> Vec<NodeId> {
        (0..self.nodes.len())
            .map(NodeId)
            .filter(|n| self.node(*n).op.inputs().contains(&id))
            .collect()
    }
}
