//! `cse`: identical Calls — the same op, arguments, attributes and bindings, reading
//! the same values — placed in the same scope of the definition hierarchy are merged
//! into the first, and so are Consts with identical data (dtype, shape, every bit).
//!
//! \[A\] match: one sweep in list order keyed by (scope, call and inputs) finds, for
//! each node, an earlier identical one. \[B\] build: nothing. \[C\] apply:
//! [`change_output_refs`] makes every reader of the later node (graph outputs
//! included) read the earlier one, which comes before it and so before its readers;
//! the later node is left for `dead`. Because readers are rewired as the sweep goes,
//! merges cascade (`exp(a)` and `exp(b)` merge once `a` and `b` did).
//!
//! Only nodes of the same scope merge: a value defined in one sub-function is not
//! visible in a sibling, and a node of an outer scope is computed whenever that scope
//! runs, while one inside a branch is not. Consts have no inputs and always live at
//! the top level. Merging keeps every node's scope: the merged readers read a value
//! with the same dependences.

use std::collections::HashMap;

use super::{Budget, PrepareOptions};
use crate::hierarchy::{SubId, hierarchy};
use crate::ir::{Graph, NodeId, Op};
use crate::rewrite::{OutputMap, change_output_refs};

/// The pass (module docs).
pub fn cse(graph: &mut Graph, budget: &mut Budget, _: &PrepareOptions) -> Result<(), String> {
    let h = hierarchy(graph).map_err(|e| format!("no definition hierarchy: {e}"))?;
    let ids: Vec<NodeId> = graph.nodes().iter().map(|n| n.id).collect();
    let mut first: HashMap<(Option<SubId>, String), NodeId> = HashMap::new();
    for id in ids {
        // [A] match, on the graph as the earlier merges left it.
        let Some(node) = graph.node(id) else { continue };
        let key = match &node.op {
            Op::Call(c) => format!("call {c:?} {:?} {:?}", node.inputs, node.outputs),
            Op::Const(t) => {
                let bits: Vec<u64> = t.data.iter().map(|v| v.to_bits()).collect();
                format!("const {} {:?} {bits:?}", t.dtype.name(), t.shape)
            }
            _ => continue,
        };
        let Some(scope) = h.scope_of(id) else {
            continue;
        };
        let Some(&earlier) = first.get(&(scope, key.clone())) else {
            first.insert((scope, key), id);
            continue;
        };
        // [C] apply.
        if !budget.spend() {
            break;
        }
        change_output_refs(graph, None, id, earlier, &OutputMap::same(1))
            .map_err(|e| format!("{id}: merging into {earlier}: {e}"))?;
    }
    Ok(())
}
