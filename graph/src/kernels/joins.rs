//! The `split-joins` decision of kernel formation (`docs/graph-kernels.md`): an
//! element-wise or reindex call that joins two independent heavy branches is kept out
//! of both branches' kernels.
//!
//! Fusing such a join into one branch's kernel (rule 3 would take the first producer
//! group it may join) makes that kernel wait for the other branch: two equal towers
//! joined by `add` then have a critical path of one tower plus the other's last
//! kernel, and two streams cannot run them side by side (DESIGN.md §18). The join is
//! cheap; a kernel of its own costs one more launch and one more write of its
//! operands, which is why the rule applies only when both branches are heavy.
//!
//! **The rule.** A call of the element-wise or reindex class is a *cross-branch
//! join* when, among the groups of its producers, two are *heavy* — they hold a
//! contraction — and *independent*: no member of either reads,
//! directly or through other nodes, a member of the other. Such a call joins none of
//! its heavy producer groups (it may still join light ones, and its consumers may
//! join it). Kernel formation runs before the graph's dimensions are known, so
//! "heavy" is the class, not a count of operations: a contraction of either branch
//! is taken as comparable work. Reductions are not heavy: eight branches of
//! element-wise work and a `reduce_sum` on 4,096 elements, split, ran no faster on
//! two streams than fused into one kernel on one, and slower whenever the other core
//! was busy (`docs/graph-executor.md`, *Streams*).
//!
//! The decision is named [`NAME`]; `KernelOptions::split_joins = false` (the
//! prepare pipeline: `disabled` holding `split-joins`; `uop print --stage kernels
//! --disable-pass split-joins`) turns it off. Every kernel a split join starts says
//! so in its notes, which `print_kernels` prints.

use std::collections::HashSet;

use crate::ir::{Graph, Node, NodeId};

/// The decision's name, as `--disable-pass` and the kernels' notes give it.
pub const NAME: &str = "split-joins";

/// A producer group of the call under consideration.
pub(crate) struct Producer<'a> {
    /// The group's members.
    pub members: &'a [NodeId],
    /// It holds a contraction.
    pub heavy: bool,
}

/// When `call` joins two independent heavy producer groups (the module docs), the
/// note its kernel carries: `split-joins: %9 add joins %5 and %8, ...`; otherwise
/// `None`. `producers` are the call's producer groups in input order.
pub(crate) fn cross_branch_join(
    graph: &Graph,
    call: &Node,
    op: &str,
    producers: &[Producer<'_>],
) -> Option<String> {
    let heavy: Vec<&Producer<'_>> = producers.iter().filter(|p| p.heavy).collect();
    for (i, a) in heavy.iter().enumerate() {
        for b in &heavy[i + 1..] {
            if !reaches(graph, a.members, b.members) && !reaches(graph, b.members, a.members) {
                let read = |p: &Producer<'_>| {
                    call.inputs
                        .iter()
                        .find(|r| p.members.contains(&r.node))
                        .map_or_else(String::new, |r| r.node.to_string())
                };
                return Some(format!(
                    "{NAME}: {} {op} joins {} and {}, independent branches with a contraction \
                     each: kept out of their kernels",
                    call.id,
                    read(a),
                    read(b)
                ));
            }
        }
    }
    None
}

/// True when a member of `from` reads a member of `to`, directly or through other
/// nodes. Only nodes placed after `to`'s first member can lead there.
fn reaches(graph: &Graph, from: &[NodeId], to: &[NodeId]) -> bool {
    let targets: HashSet<NodeId> = to.iter().copied().collect();
    let pos = |id: NodeId| graph.position(id).unwrap_or(0);
    let floor = to.iter().map(|t| pos(*t)).min().unwrap_or(0);
    let mut seen: HashSet<NodeId> = HashSet::new();
    let mut stack: Vec<NodeId> = from.to_vec();
    while let Some(n) = stack.pop() {
        let Some(node) = graph.node(n) else { continue };
        for r in &node.inputs {
            if targets.contains(&r.node) {
                return true;
            }
            if pos(r.node) > floor && seen.insert(r.node) {
                stack.push(r.node);
            }
        }
    }
    false
}
