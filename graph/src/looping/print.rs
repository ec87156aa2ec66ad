//! `uop print --stage partitions`: each node's partition, and what the Sink holds.

use std::fmt::Write;

use super::partition::analyze;
use crate::ir::{Graph, Op, Ref};

/// One line per node in list order (`partition  node  kind  name`), then one per Sink
/// with the tensors it holds, then any broken rule.
pub fn print_partitions(graph: &Graph) -> String {
    let (p, errors) = analyze(graph);
    let name = |r: Ref| {
        graph
            .node(r.node)
            .and_then(|n| n.name(r.output))
            .map_or_else(|| r.to_string(), |n| format!("{r} {n}"))
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# {} chunk node(s), partitions 0..={}",
        p.chunks.len(),
        p.last()
    );
    let _ = writeln!(out, "{:<10} {:<6} {:<9} name", "partition", "node", "kind");
    for n in graph.nodes() {
        if matches!(n.op, Op::Sink) {
            continue;
        }
        let kind = match &n.op {
            Op::Chunk { size, .. } => format!("chunk({size})"),
            op => op.kind().to_string(),
        };
        let _ = writeln!(
            out,
            "{:<10} {:<6} {:<9} {}",
            p.partition(n.id),
            n.id.to_string(),
            kind,
            n.name(0).unwrap_or("")
        );
    }
    for n in graph.nodes().iter().filter(|n| matches!(n.op, Op::Sink)) {
        let held: Vec<String> = n.inputs.iter().map(|r| name(*r)).collect();
        let _ = writeln!(out, "sink {}: {}", n.id, held.join(", "));
    }
    for e in errors {
        let _ = writeln!(out, "error: {e}");
    }
    out
}
