//! `consts`: every Const is moved to the front of the list, right after the graph's
//! Input node, keeping the Consts' order and ids (seed 001: "const nodes are brought
//! to the front of the list so they don't need to be executed"). Afterwards the graph
//! passes [`Checks::CONSTS_FIRST`](crate::Checks::CONSTS_FIRST).
//!
//! \[A\] match: the first node after the graph's Input node that is not a Const, and
//! every Const after it. \[C\] apply: [`move_nodes`] moves them before it in one step
//! (a Const reads nothing, so it may stand anywhere before its readers). Each Const
//! moved is one rewrite.

use super::{Budget, PassFailure, PrepareOptions};
use crate::ir::{Graph, NodeId, Op};
use crate::rewrite::move_nodes;

/// The pass (module docs).
pub fn consts(
    graph: &mut Graph,
    budget: &mut Budget,
    _: &PrepareOptions,
) -> Result<(), PassFailure> {
    let nodes = graph.nodes();
    let is_const = |p: usize| matches!(nodes[p].op, Op::Const(_));
    let start = match nodes.first() {
        Some(n) if n.id == graph.interface.input => 1,
        _ => 0,
    };
    let Some(anchor) = (start..nodes.len()).find(|&p| !is_const(p)) else {
        return Ok(());
    };
    let mut moved: Vec<NodeId> = Vec::new();
    for n in &nodes[anchor + 1..] {
        if matches!(n.op, Op::Const(_)) {
            if !budget.spend() {
                break;
            }
            moved.push(n.id);
        }
    }
    if moved.is_empty() {
        return Ok(());
    }
    let anchor = nodes[anchor].id;
    move_nodes(graph, Some(anchor), &moved)
        .map_err(|e| PassFailure::rewrite(format!("moving Consts before {anchor}"), e))
}
