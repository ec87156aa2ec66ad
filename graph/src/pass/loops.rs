//! `loops`: graph-looping partitions and the Sink (DESIGN.md §20, seed 000;
//! `docs/graph-looping.md`). Afterwards the graph passes
//! [`Checks::PARTITIONS`](crate::Checks::PARTITIONS).
//!
//! \[A\] match: [`partitions`] numbers the partitions by the seed's method and checks
//! the rules (a chunk node not downstream of the previous one, more than four, a
//! graph output outside the last partition, and uop's own: chunks at the top level,
//! no control flow in a loop, every looped value keeping the looped rows) — a broken
//! rule is the pass's error, naming the nodes. \[C\] apply: when a node stands after
//! a node of a higher partition, the list is sorted stably by partition
//! ([`move_nodes`]: the nodes of partitions `0..=p` standing after the chunk node
//! opening `p + 1` move, in order, to just before it; each node moved is one
//! rewrite); then every tensor read in a higher partition than its producer's, and
//! every chunk node's input, that no Sink holds yet goes into one new Sink at the end
//! (one rewrite), which keeps them alive across the iterations in the memory plan.

use super::{Budget, PassFailure, PrepareOptions};
use crate::ir::{Graph, Node, NodeId, Op, Ref};
use crate::looping::partition::held_by_sinks;
use crate::looping::partitions;
use crate::rewrite::{append_nodes, move_nodes};

/// The pass (module docs).
pub fn loops(
    graph: &mut Graph,
    budget: &mut Budget,
    _: &PrepareOptions,
) -> Result<(), PassFailure> {
    let p = partitions(graph)?;
    if p.chunks.is_empty() {
        return Ok(());
    }
    if p.needs_sort {
        for (k, &chunk) in p.chunks.iter().enumerate() {
            let Some(at) = graph.position(chunk) else {
                continue;
            };
            let mut moved: Vec<NodeId> = Vec::new();
            for n in &graph.nodes()[at + 1..] {
                let lower = p.partition(n.id) <= k && !matches!(n.op, Op::Sink);
                if lower {
                    if !budget.spend() {
                        break;
                    }
                    moved.push(n.id);
                }
            }
            if moved.is_empty() {
                continue;
            }
            move_nodes(graph, Some(chunk), &moved).map_err(|e| {
                PassFailure::rewrite(format!("sorting the nodes by partition before {chunk}"), e)
            })?;
        }
    }
    let held = held_by_sinks(graph);
    let missing: Vec<Ref> = p.sink.into_iter().filter(|r| !held.contains(r)).collect();
    if missing.is_empty() || !budget.spend() {
        return Ok(());
    }
    let id = graph.fresh_id();
    append_nodes(graph, vec![Node::new(id, Op::Sink, missing, Vec::new())])
        .map_err(|e| PassFailure::rewrite(format!("appending the Sink {id}"), e))?;
    Ok(())
}
