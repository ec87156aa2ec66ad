//! Rewrite utilities (DESIGN.md §15, after seed 001's prepare guide): what the
//! prepare passes use to change a graph while every invariant of [`crate::verify()`]
//! keeps holding.
//!
//! # How a pass rewrites: \[A\] match, \[B\] build, \[C\] apply
//!
//! - **\[A\] match** — find the pattern and extract everything the change needs,
//!   with the graph borrowed read-only (`&Graph`): [`node_must_be`], [`const_of`],
//!   [`unique_consumer`], [`single_consumer_all`]. Nothing has changed yet, so a node
//!   that does not fit is simply skipped. Before removing nodes, make sure they do not
//!   feed anything outside the pattern (the consumer searches say so).
//! - **\[B\] build** — make the new nodes, wired to existing outputs (or to each
//!   other): fresh ids from [`Graph::fresh_id`](crate::Graph::fresh_id), or the id of
//!   a node the pattern removes, which the new node then stands in for. Scalar
//!   constants come from a [`ConstCache`] (prepended, shared, dropped after prepare).
//!   Building does not touch the list.
//! - **\[C\] apply** — change the graph in one step with a utility that keeps the
//!   position and consumer indexes exact: rewire readers with
//!   [`change_output_refs`] / [`change_multi_output_refs`] (a *bypass*: the node left
//!   without readers is removed later by `dead`), or splice with [`replace_nodes`],
//!   [`replace_node_with`], [`insert_nodes`] (a *pattern replacement*), or move
//!   nodes with [`move_nodes`]. Insert new
//!   nodes before rewiring readers to them. Each utility checks its arguments and
//!   returns a [`RewriteError`] instead of breaking the graph.
//!
//! A bypass, `mul(x, 1)` → `x`:
//!
//! ```
//! use uop_codegen::uop::DType;
//! use uop_graph::rewrite::{change_multi_output_refs, const_of};
//! use uop_graph::{verify, CallValue, Checks, GraphBuilder, NodeId, Op, Ref};
//!
//! let mut b = GraphBuilder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N"])?;
//! let one = b.scalar(1.0);
//! let m = b.op("mul", &[x, one])?;
//! let y = b.op("exp", &[m])?;
//! b.output(y);
//! let mut graph = b.finish();
//!
//! // [A] match: every mul(a, 1) whose result has a's type, and its `a`.
//! let is_one = |r: Ref| const_of(&graph, r).is_some_and(|t| t.data == [1.0]);
//! let found: Vec<(NodeId, Ref)> = graph
//!     .nodes()
//!     .iter()
//!     .filter_map(|n| {
//!         let Op::Call(c) = &n.op else { return None };
//!         let plain = c.args == [CallValue::Input(0), CallValue::Input(1)] && c.attrs.is_empty();
//!         if c.op != "mul" || !plain || n.inputs.len() != 2 {
//!             return None;
//!         }
//!         let a = match (is_one(n.inputs[0]), is_one(n.inputs[1])) {
//!             (_, true) => n.inputs[0],
//!             (true, false) => n.inputs[1],
//!             _ => return None,
//!         };
//!         (graph.type_of(a) == Some(&n.outputs[0])).then_some((n.id, a))
//!     })
//!     .collect();
//! // [B] build: a bypass builds nothing.
//! // [C] apply: the mul's readers read `a`; the mul is left for `dead`.
//! for (mul, a) in found {
//!     change_multi_output_refs(&mut graph, None, mul, &[Some(a)])?;
//! }
//! verify(&graph, Checks::NONE)?;
//! assert_eq!(graph.node(y.node).map(|n| n.inputs.clone()), Some(vec![x]));
//! assert!(graph.consumers(m.node).is_empty());
//! let dead = verify(&graph, Checks::DEAD).unwrap_err();
//! assert_eq!(dead.to_string(), format!("{}: dead call node (no node reads it, it is not a graph output and not RETAIN)", m.node));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use thiserror::Error;

use crate::ir::{NodeId, Ref};

mod consts;
mod lookup;
mod rewire;
mod splice;

pub use consts::{CACHE_SIZE, ConstCache, prepend_const};
pub use lookup::{
    ConsumerFlags, KindFilter, const_of, node_must_be, single_consumer_all, unique_consumer,
};
pub use rewire::{OutputMap, OutputTarget, change_multi_output_refs, change_output_refs};
pub use splice::{append_nodes, insert_nodes, move_nodes, replace_node_with, replace_nodes};

/// Something that reads a value: a node, or one of the graph's outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reader {
    /// A node (through an input or a sub-function result).
    Node(NodeId),
    /// Graph output `k`.
    GraphOutput(usize),
}

impl fmt::Display for Reader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reader::Node(id) => write!(f, "{id}"),
            Reader::GraphOutput(k) => write!(f, "graph output {k}"),
        }
    }
}

/// A reference a rewiring left as it was, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unrewired {
    /// Who reads it.
    pub reader: Reader,
    /// The reference, unchanged.
    pub read: Ref,
    /// Why it was not rewired.
    pub reason: String,
}

impl fmt::Display for Unrewired {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} reads {} ({})", self.reader, self.read, self.reason)
    }
}

/// A rewrite utility used wrongly. Splices change nothing when they fail; rewirings
/// still do every valid replacement ([`RewriteError::Unrewired`]).
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RewriteError {
    /// A node the call names is not in the graph.
    #[error("{0} is not in the graph")]
    Missing(NodeId),
    /// The first node to remove comes before the anchor.
    #[error("{node} comes before the anchor {anchor}")]
    BeforeAnchor {
        /// The node to remove.
        node: NodeId,
        /// The anchor.
        anchor: NodeId,
    },
    /// The nodes to remove are not listed in list order (or one is listed twice).
    #[error("{node} does not come after {previous} (nodes to remove are listed in list order)")]
    OutOfOrder {
        /// The node out of order.
        node: NodeId,
        /// The node listed before it.
        previous: NodeId,
    },
    /// `move_nodes` was asked to move nodes before one of the nodes it moves.
    #[error("{0} is both a node to move and the node to move before")]
    MovedAnchor(NodeId),
    /// `replace_nodes` with nothing to remove.
    #[error("no node to remove")]
    NothingToRemove,
    /// A new node has id 0.
    #[error("a new node has id %0")]
    ZeroId,
    /// A new node's id is taken by a node that stays, or by another new node.
    #[error("new node {0}: the id is taken by a node that stays or by another new node")]
    IdTaken(NodeId),
    /// A new node reads something that is not an output of a node before it.
    #[error("new node {node} reads {read}, which is not an output of a node before it")]
    BadReference {
        /// The new node.
        node: NodeId,
        /// What it reads.
        read: Ref,
    },
    /// A node that stays (or a graph output) reads a removed output no new node
    /// provides.
    #[error("{reader} reads {read}, which the splice removes")]
    StillRead {
        /// The reader.
        reader: Reader,
        /// What it reads.
        read: Ref,
    },
    /// A removed Input node is still the input of an interface.
    #[error("{node} cannot be removed: {by} names it as its Input node")]
    InputStillNamed {
        /// The Input node.
        node: NodeId,
        /// The super node (kind and id) or the graph's interface.
        by: String,
    },
    /// A rewiring could not change some references; all others were changed.
    #[error("{done} references to {old} rewired, {} not: {}", .left.len(), list(.left))]
    Unrewired {
        /// The node whose readers were rewired.
        old: NodeId,
        /// How many references were changed.
        done: usize,
        /// The references left as they were.
        left: Vec<Unrewired>,
    },
}

fn list(left: &[Unrewired]) -> String {
    left.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}
