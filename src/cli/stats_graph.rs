//! `uop stats` on a graph: node counts before and after the prepare pipeline, and the
//! kernels per graph and per sub-function body (where the hierarchy places them).

use std::fmt::Write as _;

use uop_graph::hierarchy::{Entry, SubFunction, hierarchy};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::{Graph, Op};

use super::CliError;

/// The table `uop stats` prints for `graph` prepared without the passes `disabled`.
pub(crate) fn graph_stats(graph: &Graph, disabled: &[String]) -> Result<String, CliError> {
    let options = PrepareOptions {
        disabled: disabled.to_vec(),
        ..PrepareOptions::default()
    };
    let (prepared, _) = prepare(graph.clone(), &options).map_err(|e| CliError(e.to_string()))?;
    let h = hierarchy(&prepared).map_err(|e| CliError(e.to_string()))?;
    let mut rows: Vec<(String, String)> = vec![
        ("nodes before prepare".into(), graph.len().to_string()),
        ("nodes after prepare".into(), prepared.len().to_string()),
        (
            "kernels".into(),
            prepared
                .nodes()
                .iter()
                .filter(|n| matches!(n.op, Op::Kernel(_)))
                .count()
                .to_string(),
        ),
        (
            "  top level".into(),
            kernels_in(&prepared, &h.top).to_string(),
        ),
    ];
    bodies(&prepared, &h.top, &mut rows);
    let width = rows.iter().map(|(l, _)| l.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (label, value) in rows {
        let _ = writeln!(out, "{label:<width$}  {value}");
    }
    Ok(out)
}

/// Kernel nodes placed directly in `entries`.
fn kernels_in(graph: &Graph, entries: &[Entry]) -> usize {
    entries
        .iter()
        .filter(|e| matches!(graph.node(e.node).map(|n| &n.op), Some(Op::Kernel(_))))
        .count()
}

/// One row per sub-function body under `entries` (depth first), with its kernels.
fn bodies(graph: &Graph, entries: &[Entry], rows: &mut Vec<(String, String)>) {
    for e in entries {
        for sub in &e.subs {
            rows.push((
                format!("  {}", label(graph, sub)),
                kernels_in(graph, &sub.nodes).to_string(),
            ));
            bodies(graph, &sub.nodes, rows);
        }
    }
}

/// `%7 while body`, `%9 case branch 1`, `%4 call unit0`, ...
fn label(graph: &Graph, sub: &SubFunction) -> String {
    let role = match graph.node(sub.super_node).map(|n| &n.op) {
        Some(Op::While { .. }) => ["while cond", "while body"][sub.branch.min(1)].to_string(),
        Some(Op::If { .. }) => ["if then", "if else"][sub.branch.min(1)].to_string(),
        Some(Op::Case { .. }) => format!("case branch {}", sub.branch),
        Some(Op::Parallel { .. }) => "parallel body".into(),
        Some(Op::Scan { .. }) => "scan body".into(),
        Some(Op::NoInline { name, .. }) => format!("call {name}"),
        _ => format!("sub-function {}", sub.branch),
    };
    format!("{} {role}", sub.super_node)
}
