//! `fold`: a Call whose inputs are all Consts is evaluated by the uop interpreter (the
//! one-call program [`call_program`] builds, run by [`uop_codegen::interp::run`], as
//! the graph interpreter runs it) and replaced by a Const of the result, when the
//! result has at most [`PrepareOptions::fold_budget`] elements. The values are the
//! interpreter's, bit for bit (NaN and infinities included).
//!
//! \[A\] match: a Call, every input a Const, a concrete output type within the budget.
//! \[B\] build: the Const node, taking the call's id and names. \[C\] apply:
//! [`replace_nodes`] swaps it in; readers keep reading the same id. Calls the
//! interpreter cannot evaluate without run-time values (a `$param`, a graph dimension
//! named in a list) are left alone. One sweep in list order folds chains too.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;

use super::{Budget, PassFailure, PrepareOptions};
use crate::infer::call_program;
use crate::ir::{Call, Graph, Node, NodeId, Op, ValueType};
use crate::rewrite::{const_of, replace_nodes};

/// The value of `call` on the constant tensors `inputs`, as the graph interpreter
/// computes it, or `None` when it needs run-time values or fails.
pub fn evaluate_call(graph: &Graph, call: &Call, inputs: &[Tensor]) -> Option<Tensor> {
    let types: Vec<ValueType> = inputs.iter().map(concrete_type).collect();
    // Only the names the call binds to its (constant) inputs are known: a call that
    // reads another `$param` does not build, and is not evaluated.
    let bound: Vec<String> = call.bind.iter().map(|(n, _)| n.clone()).collect();
    let (program, _) = call_program(graph.dtype, &bound, &graph.registry, call, &types).ok()?;
    let mut params: HashMap<String, i64> = HashMap::new();
    for (name, k) in &call.bind {
        let t = inputs.get(*k)?;
        if t.len() != 1 {
            return None;
        }
        params.insert(name.clone(), t.data[0] as i64);
    }
    let mut out = uop_codegen::interp::run(&program, inputs, &params).ok()?;
    out.pop()
}

/// The type of a tensor.
fn concrete_type(t: &Tensor) -> ValueType {
    ValueType::new(
        t.dtype,
        t.shape
            .iter()
            .map(|&d| uop_codegen::index::Expr::Int(d as i64))
            .collect(),
    )
}

/// The number of elements of a type whose sizes are all integers.
fn elements(ty: &ValueType) -> Option<usize> {
    ty.shape.iter().try_fold(1usize, |n, d| {
        let d = usize::try_from(d.as_int()?).ok()?;
        n.checked_mul(d)
    })
}

/// The pass (module docs).
pub fn fold(
    graph: &mut Graph,
    budget: &mut Budget,
    options: &PrepareOptions,
) -> Result<(), PassFailure> {
    let ids: Vec<NodeId> = graph.nodes().iter().map(|n| n.id).collect();
    for id in ids {
        // [A] match.
        let Some(node) = graph.node(id) else { continue };
        let Op::Call(call) = &node.op else { continue };
        let [out_type] = node.outputs.as_slice() else {
            continue;
        };
        if elements(out_type).is_none_or(|n| n > options.fold_budget) {
            continue;
        }
        let Some(inputs) = node
            .inputs
            .iter()
            .map(|r| const_of(graph, *r).cloned())
            .collect::<Option<Vec<Tensor>>>()
        else {
            continue;
        };
        // [B] build.
        let Some(value) = evaluate_call(graph, call, &inputs) else {
            continue;
        };
        if concrete_type(&value) != *out_type {
            continue;
        }
        let mut folded = Node::new(id, Op::Const(value), Vec::new(), node.outputs.clone());
        folded.names = node.names.clone();
        folded.flags = node.flags;
        // [C] apply.
        if !budget.spend() {
            break;
        }
        replace_nodes(graph, None, Some(folded), &[id])
            .map_err(|e| PassFailure::rewrite(id.to_string(), e))?;
    }
    Ok(())
}
