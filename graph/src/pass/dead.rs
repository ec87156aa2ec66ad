//! `dead`: every node nothing needs is removed, found in ONE reverse sweep and removed
//! in one splice.
//!
//! \[A\] match: walking the list backwards, a node is live when it is the graph's
//! Input node, a Sink, flagged RETAIN, a graph output, or read (through an input or a
//! sub-function result) by a live node; a live super node keeps its sub-functions'
//! Input nodes. Readers come after what they read, so one sweep decides every node.
//! A dead super node's sub-functions die with it: its Input nodes and every node local
//! to them are dead too, since only the super node or other local nodes read them.
//!
//! Each removal unit is one rewrite: a dead node, or a dead super node together with
//! everything inside it (its Input nodes and the nodes depending on them, nested dead
//! super nodes included). With a rewrite budget the units are taken from the end of
//! the list backwards, so whatever reads a removed node is removed too.
//!
//! \[C\] apply: [`replace_nodes`] removes the dead nodes in one step (it checks that
//! nothing that stays reads them).

use std::collections::{HashMap, HashSet};

use super::{Budget, PassFailure, PrepareOptions};
use crate::ir::{Flags, Graph, NodeId, Op};
use crate::rewrite::replace_nodes;

/// The pass (module docs).
pub fn dead(graph: &mut Graph, budget: &mut Budget, _: &PrepareOptions) -> Result<(), PassFailure> {
    let nodes = graph.nodes();
    let n = nodes.len();
    let pos = |id: NodeId| graph.position(id);
    let outputs: HashSet<NodeId> = graph
        .interface
        .outputs
        .iter()
        .filter_map(|s| s.as_ref().map(|r| r.node))
        .collect();
    // [A] the reverse sweep.
    let mut live = vec![false; n];
    for p in (0..n).rev() {
        let node = &nodes[p];
        let keep = live[p]
            || node.id == graph.interface.input
            || matches!(node.op, Op::Sink)
            || node.flags.contains(Flags::RETAIN)
            || outputs.contains(&node.id);
        if !keep {
            continue;
        }
        live[p] = true;
        let reads = node.uses().into_iter().map(|r| r.node);
        let inputs = node.op.interfaces().into_iter().map(|i| i.input);
        for id in reads.chain(inputs) {
            let q = pos(id).ok_or_else(|| {
                PassFailure::Graph(format!("{}: reads {id}, which is missing", node.id))
            })?;
            live[q] = true;
        }
    }
    if live.iter().all(|&l| l) {
        return Ok(());
    }
    // Removal units: `root[p]` is the position of the outermost dead super node whose
    // sub-functions `p` lives in (through its Input nodes), or `p` itself.
    let mut owner: HashMap<NodeId, usize> = HashMap::new();
    for (p, node) in nodes.iter().enumerate() {
        if !live[p] {
            for i in node.op.interfaces() {
                owner.insert(i.input, p);
            }
        }
    }
    let mut root: Vec<usize> = (0..n).collect();
    for p in 0..n {
        if live[p] {
            continue;
        }
        let mut r = owner.get(&nodes[p].id).copied().unwrap_or(p).max(p);
        for u in nodes[p].uses() {
            if let Some(q) = pos(u.node)
                && !live[q]
            {
                r = r.max(root[q]);
            }
        }
        root[p] = r;
    }
    // Follow the roots outwards: a root's own root is later in the list.
    for p in (0..n).rev() {
        if !live[p] && root[p] != p {
            root[p] = root[root[p]];
        }
    }
    let mut units: Vec<usize> = (0..n).filter(|&p| !live[p] && root[p] == p).collect();
    units.reverse();
    let mut taken: HashSet<usize> = HashSet::new();
    for u in units {
        if !budget.spend() {
            break;
        }
        taken.insert(u);
    }
    let removed: Vec<NodeId> = (0..n)
        .filter(|&p| !live[p] && taken.contains(&root[p]))
        .map(|p| nodes[p].id)
        .collect();
    if removed.is_empty() {
        return Ok(());
    }
    // [C] apply.
    replace_nodes(graph, None, None, &removed)
        .map_err(|e| PassFailure::rewrite("removing dead nodes", e))
}
