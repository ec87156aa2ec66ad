//! The shrinker: reduces a graph a predicate fails on, and prints the result as a
//! `.uop` reproducer.

use std::collections::HashSet;

use crate::hierarchy::{definition, hierarchy};
use crate::ir::{Graph, NodeId, Op, Source};
use crate::scope::{ScopeError, scopes};
use crate::text::print_graph;

/// Reduces `graph`, on which `fails` holds, to a smaller graph on which it still
/// holds, for as long as one step keeps the failure (steps that would leave a
/// reference or an interface dangling are skipped). The steps, largest first:
/// remove every node no output needs; drop an output; redirect an output to an
/// input of the node producing it (each of these two followed by removing what no
/// output needs, when that keeps the failure); remove one node nothing reads (a
/// super node with its sub-functions' Input nodes and what depends on them), so a
/// failure caused by a dead value shrinks too.
pub fn shrink(graph: &Graph, fails: &dyn Fn(&Graph) -> bool) -> Graph {
    let mut best = graph.clone();
    loop {
        let mut progress = false;
        for candidate in smaller(&best).into_iter().filter(well_formed) {
            let smaller = candidate.len() < best.len()
                || candidate.interface.outputs.len() < best.interface.outputs.len();
            if smaller && fails(&candidate) {
                best = candidate;
                progress = true;
                break;
            }
        }
        if !progress {
            return best;
        }
    }
}

/// True when every reference and interface of `g` can be traced (a step that breaks
/// this would trade the failure for another one).
fn well_formed(g: &Graph) -> bool {
    !matches!(scopes(g), Err(ScopeError::Malformed(_)))
}

/// A `.uop` reproducer of a failure: `what` as `#` comment lines, then the shrunk
/// graph's text. A graph the text cannot express (one without a hierarchy) is
/// listed node by node in comments instead, followed by a stub graph with its
/// inputs (returning the first), so the file always parses.
pub fn reproducer(graph: &Graph, fails: &dyn Fn(&Graph) -> bool, what: &str) -> String {
    let small = shrink(graph, fails);
    let mut out = comment(what);
    if hierarchy(&small).is_ok() {
        out.push_str(&print_graph(&small));
    } else {
        out.push_str(&comment(&print_graph(&small)));
        out.push_str("# its nodes, in list order:\n");
        for n in small.nodes() {
            out.push_str(&comment(&flat(&small, n.id)));
        }
        let outputs: Vec<String> = small
            .interface
            .outputs
            .iter()
            .map(|s| match s {
                Source::Ref(r) => r.to_string(),
                Source::Scalar(v) => v.to_string(),
            })
            .collect();
        out.push_str(&comment(&format!("output {}", outputs.join(", "))));
        out.push_str("# (a stub with the graph's inputs, so that the file parses:)\n");
        out.push_str(&print_graph(&stub(&small)));
    }
    out
}

/// A graph with `graph`'s inputs that returns its first input (or 0.0).
fn stub(graph: &Graph) -> Graph {
    let input = graph.interface.input;
    let nodes: Vec<crate::ir::Node> = graph.input_node().into_iter().cloned().collect();
    let output = match nodes.first() {
        Some(n) if !n.outputs.is_empty() => Source::Ref(n.output(0)),
        _ => Source::Scalar(0.0),
    };
    let interface = crate::ir::Interface {
        input,
        outputs: vec![output],
    };
    let mut g = Graph::from_nodes(graph.dtype, interface, nodes);
    g.params = graph.params.clone();
    g.assertions = graph.assertions.clone();
    g.registry = graph.registry.clone();
    g
}

/// Every line of `text` as a `#` comment line (`#` alone for an empty line).
fn comment(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.starts_with('#') {
                format!("{l}\n")
            } else if l.is_empty() {
                "#\n".to_string()
            } else {
                format!("# {l}\n")
            }
        })
        .collect()
}

/// One node as a line, with its sub-functions' Input nodes and results.
fn flat(graph: &Graph, id: NodeId) -> String {
    let Some(n) = graph.node(id) else {
        return format!("{id}: missing");
    };
    let mut line = definition(n);
    if let Op::Call(c) = &n.op {
        for (name, k) in &c.bind {
            if let Some(r) = n.inputs.get(*k) {
                line.push_str(&format!(" [${name} = {r}]"));
            }
        }
    }
    for (k, i) in n.op.interfaces().iter().enumerate() {
        let results: Vec<String> = i
            .outputs
            .iter()
            .map(|s| match s {
                Source::Ref(r) => r.to_string(),
                Source::Scalar(v) => v.to_string(),
            })
            .collect();
        line.push_str(&format!(
            " [sub-function {k}: {} -> {}]",
            i.input,
            results.join(", ")
        ));
    }
    line
}

/// One-step reductions of `graph`, largest first.
fn smaller(graph: &Graph) -> Vec<Graph> {
    let mut out = vec![without_dead(graph)];
    let outputs = &graph.interface.outputs;
    let mut edited = Vec::new();
    if outputs.len() > 1 {
        for k in 0..outputs.len() {
            let mut g = graph.clone();
            g.interface.outputs.remove(k);
            if k < g.output_names.len() {
                g.output_names.remove(k);
            }
            edited.push(g);
        }
    }
    for (k, output) in outputs.iter().enumerate() {
        let Source::Ref(r) = *output else {
            continue;
        };
        let Some(node) = graph.node(r.node) else {
            continue;
        };
        for input in node.inputs.clone() {
            let mut g = graph.clone();
            g.interface.outputs[k] = Source::Ref(input);
            edited.push(g);
        }
    }
    for g in edited {
        out.push(without_dead(&g));
        out.push(g);
    }
    out.extend(
        graph
            .nodes()
            .iter()
            .rev()
            .filter_map(|n| without_unread(graph, n.id)),
    );
    out
}

/// `graph` without node `id`, when nothing reads it and it is not an Input node: a
/// super node goes with its sub-functions' Input nodes and every node depending on
/// them (when nothing outside those reads them either).
fn without_unread(graph: &Graph, id: NodeId) -> Option<Graph> {
    let node = graph.node(id)?;
    if matches!(node.op, Op::Input { .. }) || !graph.consumers(id).is_empty() {
        return None;
    }
    let mut removed: HashSet<NodeId> = HashSet::from([id]);
    let mut work: Vec<NodeId> = node.op.interfaces().iter().map(|i| i.input).collect();
    while let Some(n) = work.pop() {
        if removed.insert(n) {
            work.extend(graph.consumers(n));
        }
    }
    let reads_removed = |s: &Source| s.as_ref().is_some_and(|r| removed.contains(&r.node));
    if graph.interface.outputs.iter().any(reads_removed) {
        return None;
    }
    let nodes: Vec<_> = graph
        .nodes()
        .iter()
        .filter(|n| !removed.contains(&n.id))
        .cloned()
        .collect();
    if nodes
        .iter()
        .any(|n| n.uses().iter().any(|r| removed.contains(&r.node)))
    {
        return None;
    }
    Some(rebuilt(graph, nodes))
}

/// A graph of `nodes` with `graph`'s interface, parameters, assertions and registry.
fn rebuilt(graph: &Graph, nodes: Vec<crate::ir::Node>) -> Graph {
    let mut g = Graph::from_nodes(graph.dtype, graph.interface.clone(), nodes);
    g.params = graph.params.clone();
    g.assertions = graph.assertions.clone();
    g.registry = graph.registry.clone();
    g
}

/// `graph` without the nodes no output needs (a kept super node keeps its
/// sub-functions' Input nodes and what its sub-functions return).
pub fn without_dead(graph: &Graph) -> Graph {
    let mut live: HashSet<NodeId> = HashSet::new();
    live.insert(graph.interface.input);
    let mut work: Vec<NodeId> = graph.output_nodes().into_iter().collect();
    while let Some(id) = work.pop() {
        if !live.insert(id) {
            continue;
        }
        let Some(n) = graph.node(id) else {
            continue;
        };
        work.extend(n.uses().iter().map(|r| r.node));
        work.extend(n.op.interfaces().iter().map(|i| i.input));
    }
    let nodes = graph
        .nodes()
        .iter()
        .filter(|n| live.contains(&n.id))
        .cloned()
        .collect();
    rebuilt(graph, nodes)
}
