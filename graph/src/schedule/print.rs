//! A schedule as text (per stream: run, signal, wait, with every node's rank) and as
//! Graphviz DOT (nodes coloured by stream, signal edges dashed).

use std::fmt::Write as _;

use super::{Schedule, Step};
use crate::ir::{Graph, NodeId, Op};
use crate::scope::sub_function_name;

/// What a node is, for printing: a call's op, `kernel NAME`, or a super node's kind.
fn what(graph: &Graph, n: NodeId) -> String {
    match graph.node(n).map(|node| &node.op) {
        Some(Op::Call(c)) => c.op.clone(),
        Some(Op::Kernel(k)) => format!("kernel {}", k.name),
        Some(op) => op.kind().to_string(),
        None => "?".to_string(),
    }
}

/// The schedule as text: a header line, then per stream its steps (a run step with
/// the node's op and rank), then the nested schedules, indented.
pub fn print_schedule(graph: &Graph, schedule: &Schedule) -> String {
    let mut out = String::new();
    write_schedule(graph, schedule, 0, &mut out);
    out
}

fn write_schedule(graph: &Graph, s: &Schedule, depth: usize, out: &mut String) {
    let pad = "  ".repeat(depth);
    let plural = |n: usize, one: &str| format!("{n} {one}{}", if n == 1 { "" } else { "s" });
    let _ = writeln!(
        out,
        "{pad}schedule: {}, {}",
        plural(s.streams.len(), "stream"),
        plural(s.signal_count, "signal")
    );
    for (t, steps) in s.streams.iter().enumerate() {
        let _ = writeln!(out, "{pad}stream {t}:");
        for step in steps {
            match step {
                Step::Run(n) => {
                    let rank = s.rank.get(n).copied().unwrap_or(0);
                    let _ = writeln!(out, "{pad}  run {n} {}  rank {rank}", what(graph, *n));
                }
                other => {
                    let _ = writeln!(out, "{pad}  {other}");
                }
            }
        }
    }
    for (id, nested) in &s.nested {
        let name = graph
            .node(id.super_node)
            .map(|n| sub_function_name(n, id.branch))
            .unwrap_or_else(|| id.to_string());
        let stream = s.stream_of.get(&id.super_node).copied().unwrap_or(0);
        let _ = writeln!(out, "{pad}{name}, on stream {stream}:");
        write_schedule(graph, nested, depth + 1, out);
    }
}

/// Colours for streams, cycled.
const COLOURS: [&str; 8] = [
    "lightblue",
    "lightsalmon",
    "palegreen",
    "khaki",
    "plum",
    "lightgrey",
    "aquamarine",
    "pink",
];

/// The top-level schedule as a Graphviz digraph: one box per scheduled node, filled
/// with its stream's colour and labelled with its op and rank; the reduced dependency
/// edges, solid within a stream and dashed (labelled with the signal) across streams.
pub fn schedule_dot(graph: &Graph, schedule: &Schedule) -> String {
    let mut out = String::from("digraph schedule {\n  node [shape=box, style=filled];\n");
    // The signal each node reaches, if any.
    let mut signal_of = std::collections::HashMap::new();
    for steps in &schedule.streams {
        for w in steps.windows(2) {
            if let (Step::Run(n), Step::Signal(g)) = (w[0], w[1]) {
                signal_of.insert(n, g);
            }
        }
    }
    for (t, steps) in schedule.streams.iter().enumerate() {
        for step in steps {
            if let Step::Run(n) = step {
                let rank = schedule.rank.get(n).copied().unwrap_or(0);
                let _ = writeln!(
                    out,
                    "  n{} [label=\"{n} {}\\nstream {t}, rank {rank}\", fillcolor={}];",
                    n.0,
                    what(graph, *n),
                    COLOURS[t % COLOURS.len()]
                );
            }
        }
    }
    for (u, v) in &schedule.edges {
        if schedule.stream_of.get(u) == schedule.stream_of.get(v) {
            let _ = writeln!(out, "  n{} -> n{};", u.0, v.0);
        } else {
            let label = signal_of
                .get(u)
                .map(|g| format!(", label=\"{g}\""))
                .unwrap_or_default();
            let _ = writeln!(out, "  n{} -> n{} [style=dashed{label}];", u.0, v.0);
        }
    }
    out.push_str("}\n");
    out
}
