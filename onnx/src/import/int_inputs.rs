//! Which integer graph inputs the graph holds as i32 and which in its float type.
//!
//! uop's i32 tensors are indices (`select`, `gather`, `one_hot`); element-wise ops
//! take floats. So an integer graph input stays i32 when its values can reach an
//! index operand (Gather's and GatherElements' indices, OneHot's), and is held in
//! the float type otherwise, as data: Silero VAD compares its `sr` input with 16000
//! (`Reshape → Gather → Equal → If`). An integer held as a float is exact while its
//! values are (|x| ≤ 2^24 in f32; [`crate::HostTensor::to_graph_as`] checks them),
//! and integer arithmetic on run-time values stays an error (`Im::arith`), so no
//! value is ever rounded.

use std::collections::HashSet;

use crate::proto::{GraphProto, NodeProto};

/// Names whose values may reach an index operand, in `graph` and its subgraphs.
///
/// Conservative: a node whose outputs (or, for Loop and Scan, whose bodies' inputs,
/// which the node's inputs and the bodies' outputs bind) include such a name adds
/// all its inputs and its subgraphs' outputs, until nothing changes. Names a
/// subgraph reads from outer scopes are met by the walk over the subgraph's nodes.
pub(crate) fn index_feeders(graph: &GraphProto) -> HashSet<String> {
    let mut nodes = Vec::new();
    flatten(graph, &mut nodes);
    let mut feeders: HashSet<String> = HashSet::new();
    for n in &nodes {
        let slot = match n.op_type.as_deref() {
            Some("Gather" | "GatherElements") => 1,
            Some("OneHot") => 0,
            _ => continue,
        };
        if let Some(name) = n.input.get(slot).filter(|s| !s.is_empty()) {
            feeders.insert(name.clone());
        }
    }
    let links: Vec<(Vec<String>, Vec<String>)> = nodes.iter().map(|n| links(n)).collect();
    loop {
        let before = feeders.len();
        for (triggers, adds) in &links {
            if triggers.iter().any(|o| feeders.contains(o)) {
                feeders.extend(adds.iter().cloned());
            }
        }
        if feeders.len() == before {
            return feeders;
        }
    }
}

/// Every node of `graph` and of its subgraphs.
fn flatten<'g>(graph: &'g GraphProto, out: &mut Vec<&'g NodeProto>) {
    for n in &graph.node {
        out.push(n);
        for a in &n.attribute {
            for sub in a.g.iter().chain(&a.graphs) {
                flatten(sub, out);
            }
        }
    }
}

/// What a node's values flow from and to: (the names that, being feeders, make the
/// node's sources feeders: its outputs and its subgraphs' inputs; those sources: its
/// inputs and its subgraphs' outputs).
fn links(n: &NodeProto) -> (Vec<String>, Vec<String>) {
    let named = |v: &[String]| {
        v.iter()
            .filter(|s| !s.is_empty())
            .cloned()
            .collect::<Vec<_>>()
    };
    let (mut triggers, mut adds) = (named(&n.output), named(&n.input));
    for a in &n.attribute {
        for sub in a.g.iter().chain(&a.graphs) {
            triggers.extend(sub.input.iter().filter_map(|v| v.name.clone()));
            adds.extend(sub.output.iter().filter_map(|v| v.name.clone()));
        }
    }
    (triggers, adds)
}
