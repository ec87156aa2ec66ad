//! The run order of a hierarchy's top level for a graph with chunk nodes (§20,
//! `docs/graph-looping.md`): a child of the hierarchy, so that building the hierarchy
//! does not reach up into the graph-looping analysis that is itself built on it.

use std::collections::HashMap;

use super::Entry;
use crate::ir::{Graph, NodeId, Op};

/// Orders the top-level definitions of a graph with chunk nodes for running: stably
/// by partition, a definition counting with everything its sub-functions use, and
/// Sinks last. Without chunk nodes nothing changes. (The hierarchy's top level lists
/// definitions by id; running a partition's nodes before the next chunk node is what
/// lets the loop go back to that chunk node.)
pub(crate) fn order_top(graph: &Graph, top: &mut Vec<Entry>) {
    if !graph
        .nodes()
        .iter()
        .any(|n| matches!(n.op, Op::Chunk { .. }))
    {
        return;
    }
    fn members(e: &Entry, out: &mut Vec<NodeId>) {
        out.push(e.node);
        for s in &e.subs {
            out.push(s.input);
            for c in &s.nodes {
                members(c, out);
            }
        }
    }
    let groups: Vec<Vec<NodeId>> = top
        .iter()
        .map(|e| {
            let mut m = Vec::new();
            members(e, &mut m);
            m
        })
        .collect();
    let mut owner: HashMap<NodeId, usize> = HashMap::new();
    for (i, g) in groups.iter().enumerate() {
        for id in g {
            owner.insert(*id, i);
        }
    }
    let mut key = vec![0usize; top.len()];
    for (i, g) in groups.iter().enumerate() {
        let node = graph.node(top[i].node);
        if node.is_some_and(|n| matches!(n.op, Op::Sink)) {
            key[i] = usize::MAX;
            continue;
        }
        let mut k = 0;
        for id in g {
            for r in graph.node(*id).map(|n| n.uses()).unwrap_or_default() {
                if let Some(&j) = owner.get(&r.node)
                    && j != i
                    && key[j] != usize::MAX
                {
                    k = k.max(key[j]);
                }
            }
        }
        if node.is_some_and(|n| matches!(n.op, Op::Chunk { .. })) {
            k += 1;
        }
        key[i] = k;
    }
    let mut order: Vec<usize> = (0..top.len()).collect();
    order.sort_by_key(|&i| key[i]);
    let mut old: Vec<Option<Entry>> = std::mem::take(top).into_iter().map(Some).collect();
    top.extend(order.into_iter().filter_map(|i| old[i].take()));
}
