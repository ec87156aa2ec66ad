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
use crate::ir::{Flags, Graph, Node, NodeId, Op};

use super::classify::{OpClass, classify};
use super::joins::{Producer, cross_branch_join};
use super::{KernelFormError, KernelOptions};

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
) -> Result<Plan, KernelFormError> {
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

/// Groups the calls `ids` of one scope into `plan`, rule by rule: the calls that may
/// go into kernels (rule 1), the cheap values (rule 2), fusion in list order (rules 3
/// to 5), then the plans of the groups and of the cheap values read elsewhere.
fn plan_scope(
    graph: &Graph,
    scope: Option<SubId>,
    ids: &[NodeId],
    options: &KernelOptions,
    plan: &mut Plan,
) -> Result<(), KernelFormError> {
    let graph_outputs: HashSet<NodeId> = graph.output_nodes();
    let eligible = eligible_calls(graph, ids, &graph_outputs, &mut plan.classes)?;
    let cheap = if options.recompute {
        cheap_values(graph, ids, &eligible)
    } else {
        HashSet::new()
    };
    let fusion = fuse(graph, ids, &eligible, &cheap, options);
    let facts = ScopeFacts {
        graph,
        scope,
        eligible: &eligible,
        cheap: &cheap,
        graph_outputs: &graph_outputs,
    };
    for forming in fusion.groups.into_iter().flatten() {
        plan.groups.push(facts.group_plan(forming));
    }
    // Cheap values read by something other than a group of this scope get a kernel.
    let mut cheap_in_order: Vec<NodeId> =
        ids.iter().copied().filter(|i| cheap.contains(i)).collect();
    cheap_in_order.sort_by_key(|m| pos(graph, *m));
    for &c in &cheap_in_order {
        let read_elsewhere = graph_outputs.contains(&c)
            || graph
                .consumers(c)
                .iter()
                .any(|r| !cheap.contains(r) && !fusion.group_of.contains_key(r));
        if read_elsewhere {
            plan.groups.push(facts.cheap_plan(c));
        }
    }
    plan.cheap.extend(cheap_in_order);
    Ok(())
}

/// A node's position in the list (`usize::MAX` for a node not in it).
fn pos(graph: &Graph, id: NodeId) -> usize {
    graph.position(id).unwrap_or(usize::MAX)
}

/// Rule 1: the calls of `ids` that may go into kernels, with their classes (every
/// call considered is classified into `classes`): not RETAIN, not dead (left for
/// `dead`), not opaque.
fn eligible_calls(
    graph: &Graph,
    ids: &[NodeId],
    graph_outputs: &HashSet<NodeId>,
    classes: &mut HashMap<NodeId, OpClass>,
) -> Result<HashMap<NodeId, OpClass>, KernelFormError> {
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
        classes.insert(id, class);
        if class != OpClass::Opaque {
            eligible.insert(id, class);
        }
    }
    Ok(eligible)
}

/// Rule 2: the eligible element-wise or reindex-only calls whose inputs all come
/// from outside the scope's calls, or from other cheap values.
fn cheap_values(
    graph: &Graph,
    ids: &[NodeId],
    eligible: &HashMap<NodeId, OpClass>,
) -> HashSet<NodeId> {
    let mut cheap: HashSet<NodeId> = HashSet::new();
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
    cheap
}

/// The groups fusion formed: each a group, or `None` where it merged into a later
/// one; and the group of every member.
struct Fusion {
    groups: Vec<Option<Forming>>,
    group_of: HashMap<NodeId, usize>,
}

/// Rules 3 to 5: fusion of the eligible calls that are not cheap, in list order.
fn fuse(
    graph: &Graph,
    ids: &[NodeId],
    eligible: &HashMap<NodeId, OpClass>,
    cheap: &HashSet<NodeId>,
    options: &KernelOptions,
) -> Fusion {
    let mut fusion = Fusion {
        groups: Vec::new(),
        group_of: HashMap::new(),
    };
    for &id in ids {
        let Some(&class) = eligible.get(&id) else {
            continue;
        };
        if cheap.contains(&id) {
            continue;
        }
        let Some(node) = graph.node(id) else { continue };
        let forming = fusion.join(graph, node, class, options);
        let index = fusion.groups.len();
        for m in &forming.members {
            fusion.group_of.insert(*m, index);
        }
        fusion.groups.push(Some(forming));
    }
    fusion
}

impl Fusion {
    /// The group `node` (of `class`) forms: it joins the groups of its producers (in
    /// input order) that rules 3 to 5 let it join, which are taken out of `groups`.
    fn join(
        &mut self,
        graph: &Graph,
        node: &Node,
        class: OpClass,
        options: &KernelOptions,
    ) -> Forming {
        let id = node.id;
        let mut contractions = usize::from(class == OpClass::Contraction);
        let mut reductions = class == OpClass::Reduction;
        let mut merged: Vec<usize> = Vec::new();
        let mut set: HashSet<NodeId> = HashSet::from([id]);
        let mut producer_groups: Vec<usize> = Vec::new();
        for r in &node.inputs {
            if let Some(&g) = self.group_of.get(&r.node)
                && !producer_groups.contains(&g)
            {
                producer_groups.push(g);
            }
        }
        // Rule 5: a join of independent heavy branches joins neither.
        let split = if options.split_joins && class.is_injective() {
            let producers: Vec<Producer<'_>> = producer_groups
                .iter()
                .filter_map(|g| self.groups[*g].as_ref())
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
            let Some(forming) = self.groups[g].as_ref() else {
                continue;
            };
            if split.is_some() && forming.heavy() {
                continue;
            }
            // Rule 3: at most one contraction, never with a reduction.
            let c = contractions + forming.contractions;
            let red = reductions || forming.reductions;
            if c > 1 || (c == 1 && red) {
                continue;
            }
            // Rule 4: every reader before the call is in the group.
            let mut candidate = set.clone();
            candidate.extend(forming.members.iter().copied());
            let here = pos(graph, id);
            let readers_inside = candidate.iter().all(|m| {
                *m == id
                    || graph
                        .consumers(*m)
                        .iter()
                        .all(|reader| pos(graph, *reader) > here || candidate.contains(reader))
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
            if let Some(f) = self.groups[g].take() {
                forming.members.extend(f.members);
                forming.notes.extend(f.notes);
            }
        }
        forming.notes.extend(split);
        forming.members.push(id);
        forming.members.sort_by_key(|m| pos(graph, *m));
        forming
    }
}

/// What the plans of one scope's kernels are made from.
struct ScopeFacts<'a> {
    graph: &'a Graph,
    scope: Option<SubId>,
    eligible: &'a HashMap<NodeId, OpClass>,
    cheap: &'a HashSet<NodeId>,
    graph_outputs: &'a HashSet<NodeId>,
}

impl ScopeFacts<'_> {
    /// The plan of a group fusion formed, with the cheap values it recomputes.
    fn group_plan(&self, forming: Forming) -> GroupPlan {
        let own: HashSet<NodeId> = forming.members.iter().copied().collect();
        let outputs: Vec<NodeId> = forming
            .members
            .iter()
            .copied()
            .filter(|m| {
                self.graph_outputs.contains(m)
                    || self.graph.consumers(*m).iter().any(|r| !own.contains(r))
            })
            .collect();
        let mut members = forming.members.clone();
        members.extend(self.cheap_closure(&forming.members));
        members.sort_by_key(|m| pos(self.graph, *m));
        let anchor = *forming.members.last().expect("a group has a member");
        GroupPlan {
            scope: self.scope,
            class: self.class(&members),
            members,
            replaced: forming.members,
            outputs,
            anchor,
            notes: forming.notes,
        }
    }

    /// The plan of the kernel of the cheap value `c` (read outside the kernels of
    /// its scope), with the cheap values it recomputes.
    fn cheap_plan(&self, c: NodeId) -> GroupPlan {
        let mut members = self.cheap_closure(&[c]);
        members.push(c);
        members.sort_by_key(|m| pos(self.graph, *m));
        GroupPlan {
            scope: self.scope,
            class: self.class(&members),
            members,
            replaced: Vec::new(),
            outputs: vec![c],
            anchor: c,
            notes: Vec::new(),
        }
    }

    /// The cheap values `start` reads, directly or through other cheap values.
    fn cheap_closure(&self, start: &[NodeId]) -> Vec<NodeId> {
        let mut seen: HashSet<NodeId> = HashSet::new();
        let mut stack: Vec<NodeId> = start.to_vec();
        while let Some(n) = stack.pop() {
            let Some(node) = self.graph.node(n) else {
                continue;
            };
            for r in &node.inputs {
                if self.cheap.contains(&r.node) && seen.insert(r.node) {
                    stack.push(r.node);
                }
            }
        }
        seen.into_iter().collect()
    }

    /// The class of a group: the largest class of its members.
    fn class(&self, members: &[NodeId]) -> OpClass {
        members
            .iter()
            .filter_map(|m| self.eligible.get(m))
            .copied()
            .max()
            .unwrap_or(OpClass::ElementWise)
    }
}
