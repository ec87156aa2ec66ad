//! The executor's errors in the user's words: a node's error names the value the
//! node computes (as the graph interpreter's do, `in `y`: ...`), and a kernel's
//! names the ops it fuses instead of its generated name (`kernel k0`).

use uop_graph::interp::name_run_error;
use uop_graph::{Graph, GraphRunError, NodeId, Op};

use crate::GraphError;

/// `e` with its node named after the user's value and ops, from the prepared
/// `graph` (a Kernel node keeps the names of the values it gives).
pub(crate) fn name_error(graph: &Graph, e: GraphError) -> GraphError {
    match e {
        GraphError::Run(GraphRunError::Node { node, message }) => {
            GraphError::Run(GraphRunError::Node {
                node,
                message: in_words(graph, node, message),
            })
        }
        GraphError::Compile { node, message } => GraphError::Compile {
            node,
            message: in_words(graph, node, message),
        },
        e => e,
    }
}

/// `message` of `node`'s error, prefixed with the value (and ops) it is about.
fn in_words(graph: &Graph, node: NodeId, message: String) -> String {
    let named = |message: String| match name_run_error(graph, GraphRunError::Node { node, message })
    {
        GraphRunError::Node { message, .. } => message,
        other => other.to_string(),
    };
    let Some(Op::Kernel(k)) = graph.node(node).map(|n| &n.op) else {
        return named(message);
    };
    let message = message
        .strip_prefix(&format!("kernel {}: ", k.name))
        .unwrap_or(&message);
    let mut ops: Vec<&str> = Vec::new();
    for op in &k.ops {
        if !ops.contains(&op.as_str()) {
            ops.push(op);
        }
    }
    let fused = format!("{} fused", ops.join(", "));
    let at = named(String::new());
    if at.is_empty() {
        format!("in a kernel ({fused}): {message}")
    } else {
        // `in `y`: ` becomes `in `y` (exp, add fused): `.
        let at = at.trim_end().trim_end_matches(':');
        format!("{at} ({fused}): {message}")
    }
}
