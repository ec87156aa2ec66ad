//! Phase \[B\] of kernel formation: a group's fused uop program, built by applying
//! its members' calls, in list order, onto one [`Builder`] whose inputs are the
//! kernel's inputs (typed as in the graph; sizes that are neither integers nor plain
//! names stand as fresh dimension names, as `infer` does for one call), then cut out
//! with [`Builder::combine`]. The graph is only read.

use std::collections::{HashMap, HashSet};

use uop_codegen::index::{Expr, equal_sizes};
use uop_codegen::uop::{Builder, NodeId as UopId, Program};

use crate::infer::{apply_call, fresh_dims, graph_dims, list_names, substitute, with_fresh_names};
use crate::ir::{Graph, NodeId, Op, Ref, ValueType};

use super::KernelFormError;
use super::group::GroupPlan;

/// A group's program and how the kernel node is wired.
#[derive(Clone, Debug)]
pub(crate) struct Built {
    /// The fused program: inputs are `inputs`, outputs are the kernel's outputs.
    pub program: Program,
    /// What the kernel reads, in order (in terms of the original graph).
    pub inputs: Vec<Ref>,
    /// For each value the kernel gives (`GroupPlan::outputs`, in order): the member and
    /// the kernel output it is (two members may be one output when a call returns its
    /// operand unchanged).
    pub outputs: Vec<(NodeId, usize)>,
    /// The type of each kernel output.
    pub types: Vec<ValueType>,
}

/// Builds the program of `group`.
pub(crate) fn build(graph: &Graph, group: &GroupPlan) -> Result<Built, KernelFormError> {
    let at = group.anchor;
    let (inputs, types) = kernel_inputs(graph, group)?;
    // The builder, its params and inputs.
    let mut b = Builder::new(graph.dtype);
    for p in &graph.params {
        b.param(p).map_err(|e| node_error(at, e.to_string()))?;
    }
    let fresh = fresh_dims(&types);
    let mut input_ids: Vec<UopId> = Vec::with_capacity(inputs.len());
    for (k, t) in types.iter().enumerate() {
        let shape = with_fresh_names(&t.shape, &fresh);
        let id = b
            .input_exprs(&format!("in{k}"), t.dtype, shape)
            .map_err(|e| node_error(at, format!("kernel input {k} ({}): {e}", inputs[k])))?;
        input_ids.push(id);
    }
    let values = member_values(graph, group, &mut b, &inputs, &input_ids)?;
    let back: HashMap<String, Expr> = fresh.into_iter().map(|(e, n)| (n, e)).collect();
    let (out_ids, outputs, out_types) = kernel_outputs(graph, group, &b, &values, &back)?;
    let program = b
        .combine(&input_ids, &out_ids)
        .map_err(|e| node_error(at, format!("kernel program: {e}")))?;
    Ok(Built {
        program,
        inputs,
        outputs,
        types: out_types,
    })
}

/// A [`KernelFormError::Node`].
fn node_error(node: NodeId, message: String) -> KernelFormError {
    KernelFormError::Node { node, message }
}

/// The kernel's inputs and their types: every value a member reads from outside,
/// in order, then the graph inputs declaring a dimension a member's lists name
/// (`reindex(m, [B, N], ...)`) that no input declares.
fn kernel_inputs(
    graph: &Graph,
    group: &GroupPlan,
) -> Result<(Vec<Ref>, Vec<ValueType>), KernelFormError> {
    let at = group.anchor;
    let err = node_error;
    let members: HashSet<NodeId> = group.members.iter().copied().collect();
    let mut inputs: Vec<Ref> = Vec::new();
    for m in &group.members {
        let node = graph
            .node(*m)
            .ok_or_else(|| err(*m, "the node is not in the graph".into()))?;
        for r in &node.inputs {
            if !members.contains(&r.node) && !inputs.contains(r) {
                inputs.push(*r);
            }
        }
    }
    let mut types: Vec<ValueType> = inputs
        .iter()
        .map(|r| {
            graph
                .type_of(*r)
                .cloned()
                .ok_or_else(|| err(at, format!("input {r} does not exist")))
        })
        .collect::<Result<_, _>>()?;
    let dims: Vec<String> = graph_dims(graph).into_iter().map(|(n, _)| n).collect();
    let declared = |types: &[ValueType], name: &str| {
        types
            .iter()
            .any(|t| t.shape.iter().any(|d| *d == Expr::name(name)))
    };
    for m in &group.members {
        let Some(Op::Call(call)) = graph.node(*m).map(|n| &n.op) else {
            continue;
        };
        for name in list_names(call) {
            if !dims.contains(&name) || declared(&types, &name) {
                continue;
            }
            let source = graph.input_node().and_then(|n| {
                (0..n.outputs.len())
                    .find(|&k| n.outputs[k].shape.iter().any(|d| *d == Expr::name(&name)))
                    .map(|k| n.output(k))
            });
            let source = source
                .ok_or_else(|| err(*m, format!("no graph input declares the dimension {name}")))?;
            types.push(
                graph
                    .type_of(source)
                    .cloned()
                    .unwrap_or_else(|| ValueType::scalar(graph.dtype)),
            );
            inputs.push(source);
        }
    }
    Ok((inputs, types))
}

/// The members' calls applied in list order onto `b`; the value of each member,
/// named readably (member %4's is `v4`).
fn member_values(
    graph: &Graph,
    group: &GroupPlan,
    b: &mut Builder,
    inputs: &[Ref],
    input_ids: &[UopId],
) -> Result<HashMap<NodeId, UopId>, KernelFormError> {
    let err = node_error;
    let members: HashSet<NodeId> = group.members.iter().copied().collect();
    let mut values: HashMap<NodeId, UopId> = HashMap::new();
    for m in &group.members {
        let Some(node) = graph.node(*m) else { continue };
        let Op::Call(call) = &node.op else {
            return Err(err(
                *m,
                format!("a {} node cannot be fused", node.op.kind()),
            ));
        };
        let mut operands: Vec<UopId> = Vec::with_capacity(node.inputs.len());
        for r in &node.inputs {
            let v = match values.get(&r.node) {
                Some(v) if members.contains(&r.node) => Some(*v),
                _ => inputs.iter().position(|i| i == r).map(|k| input_ids[k]),
            };
            operands.push(
                v.ok_or_else(|| err(*m, format!("reads {r}, which the kernel does not have")))?,
            );
        }
        let v = apply_call(b, &graph.registry, call, &operands)
            .map_err(|e| err(*m, format!("{}: {e}", call.op)))?;
        values.insert(*m, v);
    }
    let mut named: HashSet<UopId> = input_ids.iter().copied().collect();
    for m in &group.members {
        if let Some(&v) = values.get(m)
            && named.insert(v)
        {
            let _ = b.set_name(v, &format!("v{}", m.0));
        }
    }
    Ok(values)
}

/// The kernel's outputs, each uop node once: their ids, which output each of
/// `group.outputs` is, and their types (checked against the members' types, with
/// the fresh dimension names mapped `back`).
#[allow(clippy::type_complexity)]
fn kernel_outputs(
    graph: &Graph,
    group: &GroupPlan,
    b: &Builder,
    values: &HashMap<NodeId, UopId>,
    back: &HashMap<String, Expr>,
) -> Result<(Vec<UopId>, Vec<(NodeId, usize)>, Vec<ValueType>), KernelFormError> {
    let err = node_error;
    let mut out_ids: Vec<UopId> = Vec::new();
    let mut outputs: Vec<(NodeId, usize)> = Vec::new();
    let mut out_types: Vec<ValueType> = Vec::new();
    for m in &group.outputs {
        let v = *values
            .get(m)
            .ok_or_else(|| err(*m, "an output is not a member".into()))?;
        let expected = graph
            .type_of(Ref::new(*m, 0))
            .cloned()
            .ok_or_else(|| err(*m, "the node has no output".into()))?;
        let found = ValueType::new(
            b.node(v).dtype,
            b.shape(v).iter().map(|e| substitute(e, back)).collect(),
        );
        let same = found.dtype == expected.dtype
            && found.shape.len() == expected.shape.len()
            && found
                .shape
                .iter()
                .zip(&expected.shape)
                .all(|(a, e)| a == e || equal_sizes(a, e));
        if !same {
            return Err(KernelFormError::Type {
                node: *m,
                expected: expected.to_string(),
                found: found.to_string(),
            });
        }
        let k = match out_ids.iter().position(|o| *o == v) {
            Some(k) => k,
            None => {
                out_ids.push(v);
                out_types.push(expected);
                out_ids.len() - 1
            }
        };
        outputs.push((*m, k));
    }
    Ok((out_ids, outputs, out_types))
}
