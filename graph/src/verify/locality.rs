//! The locality constraints of DESIGN.md §16, traced for the verifier (see the
//! verifier's module docs, "Locality"). A private helper: the `hierarchy` module
//! places nodes; this only checks that a placement exists.
//!
//! One forward pass gives each node the set of sub-functions it is local to: the
//! union over its uses of the used node's set, plus `f` when it reads `f`'s Input
//! node, minus the node's own sub-functions (a super node reads them from outside).
//! Since every use names an earlier node, this equals tracing each sub-function's
//! Input node forward through the consumers, stopping at its owner.

use std::collections::{BTreeSet, HashMap};

use super::{Violation, sub_function_name};
use crate::ir::{Graph, NodeId, Ref, Source};

/// One sub-function: its owner's position, its number there, its Input node.
struct Sub {
    owner: usize,
    k: usize,
    input: NodeId,
}

/// The violations of the locality rules. Requires unique ids, references to
/// earlier nodes only and interfaces naming existing Input nodes once each (the
/// verifier checks those first); `first` gives each id's position.
pub(super) fn check(graph: &Graph, first: &HashMap<NodeId, usize>) -> Vec<Violation> {
    let nodes = graph.nodes();
    let mut out = Vec::new();
    let mut subs: Vec<Sub> = Vec::new();
    // Position -> the indexes in `subs` of the node's own sub-functions.
    let mut owned: HashMap<usize, Vec<usize>> = HashMap::new();
    let mut of_input: HashMap<NodeId, usize> = HashMap::new();
    for (p, n) in nodes.iter().enumerate() {
        for (k, i) in n.op.interfaces().iter().enumerate() {
            of_input.insert(i.input, subs.len());
            owned.entry(p).or_default().push(subs.len());
            subs.push(Sub {
                owner: p,
                k,
                input: i.input,
            });
            if first[&i.input] > p {
                out.push(Violation {
                    nodes: vec![i.input, n.id],
                    message: format!(
                        "{}: the Input node of {} comes after it",
                        i.input,
                        sub_function_name(n, k)
                    ),
                });
            }
        }
    }
    let order_ok = out.is_empty();
    let name = |s: usize| sub_function_name(&nodes[subs[s].owner], subs[s].k);
    let describe = |r: Ref, s: usize| {
        if r.node == subs[s].input {
            format!("{r}, a parameter of {}", name(s))
        } else {
            format!("{r}, local to {}", name(s))
        }
    };
    let mut local: Vec<BTreeSet<usize>> = Vec::with_capacity(nodes.len());
    let reads = |local: &[BTreeSet<usize>], r: Ref| -> BTreeSet<usize> {
        let mut set = local[first[&r.node]].clone();
        set.extend(of_input.get(&r.node).copied());
        set
    };
    for (p, n) in nodes.iter().enumerate() {
        let own = owned.get(&p).map(Vec::as_slice).unwrap_or(&[]);
        let mut set = BTreeSet::new();
        // (use, the sub-function whose results it is, if it is one)
        let mut uses: Vec<(Ref, Option<usize>, String)> = n
            .inputs
            .iter()
            .enumerate()
            .map(|(k, r)| (*r, None, format!("input {k}")))
            .collect();
        for (j, i) in n.op.interfaces().iter().enumerate() {
            for (k, s) in i.outputs.iter().enumerate() {
                if let Source::Ref(r) = s {
                    uses.push((*r, Some(j), format!("sub-function {j}'s result {k}")));
                }
            }
        }
        let mut crossed: BTreeSet<usize> = BTreeSet::new();
        for (r, result_of, what) in uses {
            for s in reads(&local, r) {
                if let Some(pos) = own.iter().position(|&o| o == s) {
                    if result_of != Some(pos) {
                        out.push(Violation {
                            nodes: vec![n.id, r.node],
                            message: format!(
                                "{}: {what} reads {}, other than through that sub-function's results",
                                n.id,
                                describe(r, s)
                            ),
                        });
                    }
                    continue;
                }
                set.insert(s);
                let owner = subs[s].owner;
                let from_inside = r.node == subs[s].input || first[&r.node] < owner;
                if p > owner && from_inside && crossed.insert(s) {
                    out.push(Violation {
                        nodes: vec![n.id, r.node, nodes[owner].id],
                        message: format!(
                            "{}: {what} reads {}, but comes after {}, outside it",
                            n.id,
                            describe(r, s),
                            nodes[owner].id
                        ),
                    });
                }
            }
        }
        local.push(set);
    }
    for (k, s) in graph.interface.outputs.iter().enumerate() {
        if let Source::Ref(r) = s {
            for sub in reads(&local, *r) {
                out.push(Violation {
                    nodes: vec![r.node, nodes[subs[sub].owner].id],
                    message: format!("graph output {k} reads {}", describe(*r, sub)),
                });
            }
        }
    }
    if order_ok && out.is_empty() {
        nested(graph, &subs, &local, &mut out);
    }
    out
}

/// Every node's constraints must enclose its innermost one (the sub-function whose
/// owner comes first): the innermost's enclosing sub-functions are found through the
/// owners' own innermost constraints.
fn nested(graph: &Graph, subs: &[Sub], local: &[BTreeSet<usize>], out: &mut Vec<Violation>) {
    let nodes = graph.nodes();
    let innermost = |set: &BTreeSet<usize>| set.iter().copied().min_by_key(|&s| subs[s].owner);
    let parent: Vec<Option<usize>> = subs.iter().map(|s| innermost(&local[s.owner])).collect();
    for (p, set) in local.iter().enumerate() {
        let Some(inner) = innermost(set) else {
            continue;
        };
        let mut enclosing = BTreeSet::new();
        let mut cur = Some(inner);
        // Owners come strictly later at each step, so this ends; the bound is a guard.
        while let Some(s) = cur {
            if !enclosing.insert(s) || enclosing.len() > subs.len() {
                break;
            }
            cur = parent[s];
        }
        if let Some(&other) = set.iter().find(|s| !enclosing.contains(s)) {
            let (a, b) = (&subs[inner], &subs[other]);
            out.push(Violation {
                nodes: vec![nodes[p].id, nodes[a.owner].id, nodes[b.owner].id],
                message: format!(
                    "{}: depends on the parameters of {} and of {}, which are not nested",
                    nodes[p].id,
                    sub_function_name(&nodes[a.owner], a.k),
                    sub_function_name(&nodes[b.owner], b.k)
                ),
            });
        }
    }
}
