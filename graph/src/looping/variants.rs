//! The same graph with other chunk sizes, or without its loops: what the tests (and a
//! user comparing runs) need to check that a chunked graph gives the unchunked
//! results.

use uop_codegen::index::Expr;

use crate::ir::{Call, CallValue, Graph, Node, Op};

/// `graph` with every chunk node's size set to `size`.
pub fn with_chunk_size(graph: &Graph, size: &Expr) -> Graph {
    rebuilt(graph, |op| match op {
        Op::Chunk { axis, .. } => Some(Op::Chunk {
            axis: *axis,
            size: size.clone(),
        }),
        _ => None,
    })
}

/// `graph` without its loops: every chunk node of one value, and every
/// `sum_chunks`, becomes `mul(x, 1)` (its input, exactly: same type, same values,
/// bit for bit), so nothing loops. (A chunk of several values, which has several
/// outputs, is left as it is.)
pub fn unchunked(graph: &Graph) -> Graph {
    rebuilt(graph, |op| match op {
        Op::Chunk { .. } | Op::SumChunks => Some(Op::Call(Call::new(
            "mul",
            vec![CallValue::Input(0), CallValue::Int(1)],
        ))),
        _ => None,
    })
}

/// `graph` with the ops `change` gives in place of the old ones (same ids, inputs,
/// outputs, names and flags).
fn rebuilt(graph: &Graph, change: impl Fn(&Op) -> Option<Op>) -> Graph {
    let nodes: Vec<Node> = graph
        .nodes()
        .iter()
        .map(|n| match change(&n.op) {
            Some(op) if n.inputs.len() == 1 => Node { op, ..n.clone() },
            _ => n.clone(),
        })
        .collect();
    let mut g = Graph::from_nodes(graph.dtype, graph.interface.clone(), nodes);
    g.params = graph.params.clone();
    g.assertions = graph.assertions.clone();
    g.registry = graph.registry.clone();
    g
}
