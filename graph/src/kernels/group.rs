//! Phase \[A\] of kernel formation: which calls of one scope go into which kernel.
//! The graph is only read.
//!
//! The rules (DESIGN.md §17, after TVM's `FuseOps`; `docs/graph-kernels.md`):
//!
//! 1. **Scopes.** Only calls placed in the same sub-function (or all at the top
//!    level) by the [hierarchy](crate::hierarchy()) form a group. Everything else a
//!    call reads is a kernel input: Inputs, Consts, super nodes' results, values of
//!    enclosing scopes, kernels already formed, and the calls that stay calls
//!    (opaque calls — those binding a `parallel` index —, dead calls, RETAIN calls).
//! 2. **Recomputation of cheap values.** An element-wise or reindex-only call whose
//!    inputs all come from outside the scope's calls (rule 1), or from other such
//!    calls, is a *cheap* value: it is not a kernel of its own but is recomputed inside
//!    every kernel that reads it. If something other than a kernel of its scope reads
//!    it (a super node, a graph output, a call of an inner scope, a call that stays a
//!    call), it also gets a kernel of its own, which that reader reads.
//! 3. **Fusion.** The other calls are taken in list order; each joins the groups of
//!    its producers (in input order) that it may join, merging them, or starts a new
//!    group. A group holds at most one contraction, and never a contraction and a
//!    reduction together, so:
//!    - element-wise and reindex-only calls fuse with anything;
//!    - a reduction joins producer groups without a contraction (its producers, and
//!      other reductions: layer norm is one kernel) and takes element-wise consumers;
//!    - a contraction joins only element-wise / reindex-only producer groups (its
//!      prologues) and takes element-wise / reindex-only consumers (its epilogue).
//! 4. **A value read outside its group ends the group before the reader.** A call
//!    may join a group only if every reader of the group's values that comes before
//!    the call in the list is in the group too. The kernel then takes the place of its
//!    last member and the list needs no reordering; and a value with readers in two
//!    groups is an output of its kernel, never recomputed (unless rule 2 made it
//!    cheap).
//!
//! 5. **Split joins** ([`super::joins`], on unless `KernelOptions::split_joins` is
//!    off): an element-wise or reindex call reading two independent producer groups
//!    that each hold a contraction joins neither of them.
//!
//! The values a kernel gives are the members' values read outside it (by other
//! nodes, sub-function results or graph outputs), in list order.

use std::collections::{HashMap, HashSet};

use crate::hierarchy::{Entry, Hierarchy, SubId};
use crate::ir::{Flags, Graph, NodeId, Op};

use super::classify::{OpClass, classify};
use super::joins::{Producer, cross_branch_join};
use super::{KernelError, KernelOptions};

/// One kernel to form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GroupPlan {
    /// Where its members are placed.
    pub scope: Option<SubId>,
    /// Every call built into the kernel (recomputed cheap values included), in list
    /// order.
    pub members: Vec<NodeId>,
    /// The members the kernel replaces: removed when it is formed (cheap values are
    /// removed at the end, once nothing reads them).
    pub replaced: Vec<NodeId>,
    /// The members whose values are read outside the kernel, in list order.
    pub outputs: Vec<NodeId>,
    /// The kernel goes right after this node (its last replaced member, or the cheap
    /// value it gives).
    pub anchor: NodeId,
    /// The class of the group: the largest class of its members.
    pub class: OpClass,
    /// The decisions that shaped it (`split-joins: ...`), for printing.
    pub notes: Vec<String>,
}

/// Everything \[A\] found.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plan {
    /// The kernels, in the order of their anchors in the list.
    pub groups: Vec<GroupPlan>,
    /// Cheap values (rule 2): removed at the end when nothing reads them any more.
    pub cheap: Vec<NodeId>,
    /// The class of every call considered.
    pub classes: HashMap<NodeId, OpClass>,
}

/// Groups the calls of every scope of `graph`.
pub(crate) fn plan(
    graph: &Graph,
    h: &Hierarchy,
    options: &KernelOptions,
) -> Result<Plan, KernelError> {
    let mut plan = Plan::default();
    let mut scopes: Vec<(Option<SubId>, Vec<NodeId>)> = Vec::new();
    collect_scopes(None, &h.top, &mut scopes);
    for (scope, ids) in scopes {
        plan_scope(graph, scope, &ids, options, &mut plan)?;
    }
    plan.groups.sort_by_key(|g| graph.position(g.anchor));
    Ok(plan)
}

/// Every scope's node ids, in execution order.
fn collect_scopes(
    scope: Option<SubId>,
    entries: &[Entry],
    out: &mut Vec<(Option<SubId>, Vec<NodeId>)>,
) {
    out.push((scope, entries.iter().map(|e| e.node).collect()));
    for e in entries {
        for sub in &e.subs {
            collect_scopes(Some(sub.id()), &sub.nodes, out);
        }
    }
}

/// A group being formed.
#[derive(Clone, Debug, Default)]
struct Forming {
    members: Vec<NodeId>,
    contractions: usize,
    reductions: bool,
    notes: Vec<String>,
}

impl Forming {
    /// Holds a contraction: a branch worth a stream of its own (rule 5; a reduction
    /// alone is not, `docs/graph-kernels.md`).
    fn heavy(&self) -> bool {
        self.contractions > 0
    }
}

fn plan_scope(
    graph: &Graph,
    scope: Option<SubId>,
    ids: &[NodeId],
    options: &KernelOptions,
    plan: &mut Plan,
) -> Result<(), KernelError> {
    let pos = |id: NodeId| graph.position(id).unwrap_or(usize::MAX);
    let graph_outputs: HashSet<NodeId> = graph.output_nodes();
    // The calls that may go into kernels, with their classes.
    let mut eligible: HashMap<NodeId, OpClass> = HashMap::new();
    for &id in ids {
        let Some(node) = graph.node(id) else { continue };
        if !matches!(node.op, Op::Call(_)) || node.flags.contains(Flags::RETAIN) {
            continue;
        }
        if graph.consumers(id).is_empty() && !graph_outputs.contains(&id) {
            continue; // dead: left for `dead`
        }
        let class = classify(graph, node)?;
        plan.classes.insert(id, class);
        if class != OpClass::Opaque {
            eligible.insert(id, class);
        }
    }
    // Rule 2: cheap values.
    let mut cheap: HashSet<NodeId> = HashSet::new();
    if options.recompute {
        for &id in ids {
            let (Some(class), Some(node)) = (eligible.get(&id), graph.node(id)) else {
                continue;
            };
            if class.is_injective()
                && node
                    .inputs
                    .iter()
                    .all(|r| !eligible.contains_key(&r.node) || cheap.contains(&r.node))
            {
                cheap.insert(id);
            }
        }
    }
    // Rule 3 and 4: fusion in list order.
    let mut groups: Vec<Option<Forming>> = Vec::new();
    let mut group_of: HashMap<NodeId, usize> = HashMap::new();
    for &id in ids {
        let Some(&class) = eligible.get(&id) else {
            continue;
        };
        if cheap.contains(&id) {
            continue;
        }
        let Some(node) = graph.node(id) else { continue };
        let mut contractions = usize::from(class == OpClass::Contraction);
        let mut reductions = class == OpClass::Reduction;
        let mut merged: Vec<usize> = Vec::new();
        let mut set: HashSet<NodeId> = HashSet::from([id]);
        // Rule 5: a join of independent heavy branches joins neither.
        let mut producer_groups: Vec<usize> = Vec::new();
        for r in &node.inputs {
            if let Some(&g) = group_of.get(&r.node)
                && !producer_groups.contains(&g)
            {
                producer_groups.push(g);
            }
        }
        let split = if options.split_joins && class.is_injective() {
            let producers: Vec<Producer<'_>> = producer_groups
                .iter()
                .filter_map(|g| groups[*g].as_ref())
                .map(|f| Producer {
                    members: &f.members,
                    heavy: f.heavy(),
                })
                .collect();
            let op = match &node.op {
                Op::Call(c) => c.op.as_str(),
                _ => "",
            };
            cross_branch_join(graph, node, op, &producers)
        } else {
            None
        };
        for g in producer_groups {
            if merged.contains(&g) {
                continue;
            }
            let Some(forming) = groups[g].as_ref() else {
                continue;
            };
            if split.is_some() && forming.heavy() {
                continue;
            }
            let c = contractions + forming.contractions;
            let red = reductions || forming.reductions;
            if c > 1 || (c == 1 && red) {
                continue;
            }
            let mut candidate = set.clone();
            candidate.extend(forming.members.iter().copied());
            let here = pos(id);
            let readers_inside = candidate.iter().all(|m| {
                *m == id
                    || graph
                        .consumers(*m)
                        .iter()
                        .all(|reader| pos(*reader) > here || candidate.contains(reader))
            });
            if readers_inside {
                merged.push(g);
                set = candidate;
                contractions = c;
                reductions = red;
            }
        }
        let mut forming = Forming {
            members: Vec::new(),
            contractions,
            reductions,
            notes: Vec::new(),
        };
        for g in merged {
            if let Some(f) = groups[g].take() {
                forming.members.extend(f.members);
                forming.notes.extend(f.notes);
            }
        }
        forming.notes.extend(split);
        forming.members.push(id);
        forming.members.sort_by_key(|m| pos(*m));
        let index = groups.len();
        for m in &forming.members {
            group_of.insert(*m, index);
        }
        groups.push(Some(forming));
    }
    // The groups, with the cheap values they recompute.
    let closure = |start: &[NodeId]| -> Vec<NodeId> {
        let mut seen: HashSet<NodeId> = HashSet::new();
        let mut stack: Vec<NodeId> = start.to_vec();
        while let Some(n) = stack.pop() {
            let Some(node) = graph.node(n) else { continue };
            for r in &node.inputs {
                if cheap.contains(&r.node) && seen.insert(r.node) {
                    stack.push(r.node);
                }
            }
        }
        seen.into_iter().collect()
    };
    for forming in groups.into_iter().flatten() {
        let own: HashSet<NodeId> = forming.members.iter().copied().collect();
        let outputs: Vec<NodeId> = forming
            .members
            .iter()
            .copied()
            .filter(|m| {
                graph_outputs.contains(m) || graph.consumers(*m).iter().any(|r| !own.contains(r))
            })
            .collect();
        let mut members = forming.members.clone();
        members.extend(closure(&forming.members));
        members.sort_by_key(|m| pos(*m));
        let class = members
            .iter()
            .filter_map(|m| eligible.get(m))
            .copied()
            .max()
            .unwrap_or(OpClass::ElementWise);
        let anchor = *forming.members.last().expect("a group has a member");
        plan.groups.push(GroupPlan {
            scope,
            members,
            replaced: forming.members,
            outputs,
            anchor,
            class,
            notes: forming.notes,
        });
    }
    // Cheap values read by something other than a group of this scope get a kernel.
    let mut cheap_in_order: Vec<NodeId> =
        ids.iter().copied().filter(|i| cheap.contains(i)).collect();
    cheap_in_order.sort_by_key(|m| pos(*m));
    for &c in &cheap_in_order {
        let read_elsewhere = graph_outputs.contains(&c)
            || graph
                .consumers(c)
                .iter()
                .any(|r| !cheap.contains(r) && !group_of.contains_key(r));
        if !read_elsewhere {
            continue;
        }
        let mut members = closure(&[c]);
        members.push(c);
        members.sort_by_key(|m| pos(*m));
        let class = members
            .iter()
            .filter_map(|m| eligible.get(m))
            .copied()
            .max()
            .unwrap_or(OpClass::ElementWise);
        plan.groups.push(GroupPlan {
            scope,
            members,
            replaced: Vec::new(),
            outputs: vec![c],
            anchor: c,
            class,
            notes: Vec::new(),
        });
    }
    plan.cheap.extend(cheap_in_order);
    Ok(())
}
