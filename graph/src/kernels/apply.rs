//! \[C\] of [`form_kernels`](super::form_kernels): the kernels put into the list in
//! one pass over it.
//!
//! Formed one by one with the rewrite utilities, each kernel moved the list's tail
//! twice and once per member it replaced (O(n) each), so a graph of thousands of
//! kernels took time quadratic in its size (nested loops' gradients). The result of
//! that sequence is known in advance, and this builds it directly:
//!
//! - each kernel goes right after its anchor; kernels of one anchor in the reverse
//!   of their order (each was inserted right after the anchor);
//! - the replaced members leave the list;
//! - every node that stays and every graph output reads, instead of a member's
//!   value, the output of the first kernel giving it (after that kernel's rewiring
//!   nothing read the member any more); the kernels' own inputs are already final.
//!
//! The result is checked as the utilities checked each step: every reference names
//! an output of a node before its reader.

use std::collections::{HashMap, HashSet};

use super::KernelFormError;
use crate::ir::{Graph, Node, NodeId, Ref, Source};

/// One kernel to put in: where it goes, what it replaces, what it gives.
pub(crate) struct Placed {
    /// The kernel goes right after this node.
    pub anchor: NodeId,
    /// The members it removes.
    pub replaced: Vec<NodeId>,
    /// For each member whose value it gives, the kernel output giving it.
    pub gives: Vec<(NodeId, usize)>,
    /// The Kernel node.
    pub node: Node,
}

/// `graph` with `kernels` put in, in order.
pub(crate) fn apply(graph: &Graph, kernels: Vec<Placed>) -> Result<Graph, KernelFormError> {
    let mut removed: HashSet<NodeId> = HashSet::new();
    let mut redirect: HashMap<NodeId, Ref> = HashMap::new();
    let mut after: HashMap<NodeId, Vec<Node>> = HashMap::new();
    for k in kernels {
        for &(m, out) in &k.gives {
            redirect.entry(m).or_insert(Ref::new(k.node.id, out));
        }
        removed.extend(k.replaced.iter().copied());
        after.entry(k.anchor).or_default().push(k.node);
    }
    let map = |r: &mut Ref| {
        if r.output == 0
            && let Some(to) = redirect.get(&r.node)
        {
            *r = *to;
        }
    };
    let mut nodes = Vec::with_capacity(graph.len() + after.values().map(Vec::len).sum::<usize>());
    for n in graph.nodes() {
        if !removed.contains(&n.id) {
            let mut n = n.clone();
            n.inputs.iter_mut().for_each(map);
            for i in n.op.interfaces_mut() {
                for s in &mut i.outputs {
                    if let Source::Ref(r) = s {
                        map(r);
                    }
                }
            }
            nodes.push(n);
        }
        if let Some(placed) = after.remove(&n.id) {
            nodes.extend(placed.into_iter().rev());
        }
    }
    if let Some(anchor) = after.keys().next() {
        return Err(KernelFormError::Node {
            node: *anchor,
            message: "applying the kernels: the anchor is not in the graph".into(),
        });
    }
    let mut g = graph.clone();
    for s in &mut g.interface.outputs {
        if let Source::Ref(r) = s {
            map(r);
        }
    }
    g.nodes = nodes;
    g.reindex();
    check_order(&g)?;
    Ok(g)
}

/// Every reference names an output of a node before its reader (graph outputs:
/// of a node in the graph).
fn check_order(g: &Graph) -> Result<(), KernelFormError> {
    let reads_ahead = |reader: usize, r: &Ref| {
        g.position(r.node)
            .is_none_or(|p| p >= reader || r.output >= g.nodes[p].outputs.len())
    };
    for (p, n) in g.nodes().iter().enumerate() {
        if let Some(r) = n.uses().iter().find(|r| reads_ahead(p, r)) {
            return Err(KernelFormError::Node {
                node: n.id,
                message: format!(
                    "applying the kernels: reads {r}, not an output of a node before it"
                ),
            });
        }
    }
    match g
        .interface
        .outputs
        .iter()
        .filter_map(Source::as_ref)
        .find(|r| reads_ahead(g.len(), r))
    {
        Some(r) => Err(KernelFormError::Node {
            node: r.node,
            message: "applying the kernels: a graph output reads a removed value".into(),
        }),
        None => Ok(()),
    }
}
