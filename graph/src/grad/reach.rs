//! Which forward values a gradient can reach: float values that depend on a wanted
//! input. Only their gradients are built.
//!
//! In one pass in list order (every reference points to an earlier node): a call's
//! output depends when one of its inputs does; a super node's outputs depend when an
//! input does or a value its sub-functions read from enclosing scopes does; a
//! sub-function's parameters are taken to depend (they come before the super node
//! that feeds them), which only costs gradients the owner never asks for.

use std::collections::HashSet;

use crate::hierarchy::{Entry, Hierarchy, SubFunction};
use crate::ir::{Graph, NodeId, Op, Ref};

/// The forward refs a gradient can reach.
#[derive(Clone, Debug, Default)]
pub(crate) struct Reach(HashSet<Ref>);

impl Reach {
    /// The refs of `graph` that depend on one of `wrt`.
    pub fn of(graph: &Graph, h: &Hierarchy, wrt: &[Ref]) -> Self {
        let mut set: HashSet<Ref> = wrt.iter().copied().collect();
        let mut free: std::collections::HashMap<NodeId, Vec<Ref>> = Default::default();
        collect_free(graph, &h.top, &mut free);
        for node in graph.nodes() {
            let float = |k: usize| node.outputs[k].dtype.is_float();
            let depends = match &node.op {
                Op::Input { .. } => node.id != graph.interface.input,
                _ => {
                    node.inputs.iter().any(|r| set.contains(r))
                        || free
                            .get(&node.id)
                            .is_some_and(|f| f.iter().any(|r| set.contains(r)))
                }
            };
            if depends {
                for k in 0..node.outputs.len() {
                    if float(k) {
                        set.insert(node.output(k));
                    }
                }
            }
        }
        Reach(set)
    }

    /// True when a gradient can reach `r`.
    pub fn has(&self, r: Ref) -> bool {
        self.0.contains(&r)
    }
}

/// For every super node below `entries`, the refs its sub-functions read from
/// outside them.
fn collect_free(
    graph: &Graph,
    entries: &[Entry],
    out: &mut std::collections::HashMap<NodeId, Vec<Ref>>,
) {
    for e in entries {
        if e.subs.is_empty() {
            continue;
        }
        let mut refs = Vec::new();
        for s in &e.subs {
            refs.extend(free_refs(graph, s));
            collect_free(graph, &s.nodes, out);
        }
        out.insert(e.node, refs);
    }
}

/// The refs `sub` reads (its nodes, nested sub-functions and results) that are
/// defined outside it, each once, in order of first use.
pub(crate) fn free_refs(graph: &Graph, sub: &SubFunction) -> Vec<Ref> {
    let mut inside: HashSet<NodeId> = HashSet::new();
    inside.insert(sub.input);
    let mut uses: Vec<Ref> = Vec::new();
    walk(graph, &sub.nodes, &mut inside, &mut uses);
    if let Some(owner) = graph.node(sub.super_node)
        && let Some(i) = owner.op.interfaces().get(sub.branch)
    {
        uses.extend(i.outputs.iter().filter_map(|s| s.as_ref()));
    }
    let mut out: Vec<Ref> = Vec::new();
    for r in uses {
        if !inside.contains(&r.node) && !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

fn walk(graph: &Graph, entries: &[Entry], inside: &mut HashSet<NodeId>, uses: &mut Vec<Ref>) {
    for e in entries {
        inside.insert(e.node);
        let Some(node) = graph.node(e.node) else {
            continue;
        };
        uses.extend(node.uses());
        for s in &e.subs {
            inside.insert(s.input);
            walk(graph, &s.nodes, inside, uses);
        }
    }
}
