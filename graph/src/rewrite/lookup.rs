//! Look-ups for phase \[A\] (match): a node of a given kind, a Const's tensor, and the
//! consumer searches of seed 001 (`find_unique_consumer`, `check_single_consumer_all`).
//!
//! "Reads" means through [`Node::uses`]: a node's inputs and its interfaces' results,
//! as the consumer index records them. A graph output reading the producer counts as
//! another reader (a rewrite must not drop a graph output).

use uop_codegen::tensor::Tensor;

use crate::ir::{Graph, Kind, Node, NodeId, Op, Ref};

/// The node `id` if it exists and is of kind `kind` (seed 001's `find_node_must_be`).
pub fn node_must_be(graph: &Graph, id: NodeId, kind: Kind) -> Option<&Node> {
    graph.node(id).filter(|n| n.op.class() == kind)
}

/// The tensor of a Const read through `r`: `None` unless `r` is output 0 of a Const
/// node (seed 001's `find_node_must_be_Const_from_ref`).
pub fn const_of(graph: &Graph, r: Ref) -> Option<&Tensor> {
    if r.output != 0 {
        return None;
    }
    match &graph.node(r.node)?.op {
        Op::Const(t) => Some(t),
        _ => None,
    }
}

/// Which node kinds a consumer search accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KindFilter<'a> {
    /// Any kind (`find_unique_consumer_anytype`).
    Any,
    /// One kind (`find_unique_consumer_mustbe`).
    One(Kind),
    /// Any kind of a set (`find_unique_consumer` with a type array).
    Set(&'a [Kind]),
}

impl KindFilter<'_> {
    /// True when `kind` passes the filter.
    pub fn accepts(&self, kind: Kind) -> bool {
        match self {
            KindFilter::Any => true,
            KindFilter::One(k) => *k == kind,
            KindFilter::Set(ks) => ks.contains(&kind),
        }
    }
}

impl From<Kind> for KindFilter<'_> {
    fn from(k: Kind) -> Self {
        KindFilter::One(k)
    }
}

/// Flags of [`unique_consumer`], combinable with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ConsumerFlags(u8);

impl ConsumerFlags {
    /// Every condition is checked.
    pub const NONE: ConsumerFlags = ConsumerFlags(0);
    /// The consumer may read outputs of nodes other than the producer and Consts
    /// (seed 001's `CONSUMER_NOINCHECK`).
    pub const NO_INPUT_CHECK: ConsumerFlags = ConsumerFlags(1);

    /// True when every flag of `other` is set.
    pub fn contains(self, other: ConsumerFlags) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for ConsumerFlags {
    type Output = ConsumerFlags;
    fn bitor(self, rhs: ConsumerFlags) -> ConsumerFlags {
        ConsumerFlags(self.0 | rhs.0)
    }
}

/// True when a graph output reads some output of `id`.
fn is_graph_output(graph: &Graph, id: NodeId) -> bool {
    graph
        .interface
        .outputs
        .iter()
        .any(|s| s.as_ref().is_some_and(|r| r.node == id))
}

/// The unique consumer of `producer`: the one node `dst` such that
/// 1. no node other than `dst` (and no graph output) reads any output of `producer`;
/// 2. unless `flags` has [`ConsumerFlags::NO_INPUT_CHECK`], everything `dst` reads
///    is an output of `producer` or of a Const node;
///
/// and whose kind passes `kinds`. `None` when there is no such node (or `producer`
/// does not exist).
pub fn unique_consumer(
    graph: &Graph,
    producer: NodeId,
    kinds: KindFilter<'_>,
    flags: ConsumerFlags,
) -> Option<NodeId> {
    graph.node(producer)?;
    if is_graph_output(graph, producer) {
        return None;
    }
    let [dst] = graph.consumers(producer)[..] else {
        return None;
    };
    let node = graph.node(dst)?;
    if !kinds.accepts(node.op.class()) {
        return None;
    }
    if !flags.contains(ConsumerFlags::NO_INPUT_CHECK)
        && !node
            .uses()
            .iter()
            .all(|r| r.node == producer || node_must_be(graph, r.node, Kind::Const).is_some())
    {
        return None;
    }
    Some(dst)
}

/// True iff `consumer` reads some output of `producer` and no other node (and no
/// graph output) reads any (seed 001's `check_single_consumer_all`).
pub fn single_consumer_all(graph: &Graph, producer: NodeId, consumer: NodeId) -> bool {
    graph.consumers(producer) == [consumer] && !is_graph_output(graph, producer)
}
