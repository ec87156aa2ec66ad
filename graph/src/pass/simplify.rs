//! `simplify`: algebraic bypasses that keep every type exactly (DESIGN.md §17).
//!
//! | pattern | becomes |
//! |---|---|
//! | `mul(x, 1)`, `mul(1, x)`, `div(x, 1)` | `x` |
//! | `add(x, 0)`, `add(0, x)`, `sub(x, 0)` | `x` (for `x = −0`, `add` gave `+0`) |
//! | `transpose` / `permute` of `transpose` / `permute` with inverse axes | `x` |
//! | `reshape(x, s)` of type `x`'s | `x` |
//! | `reshape(reshape(x, s1), s2)` | `reshape(x, s2)` (or `x` when of `x`'s type) |
//! | `reindex(x, s, [i0, i1, ...])` of `x`'s type | `x` |
//! | `where(c, a, b)`, `c` a constant | `a` when `c != 0`, else `b` |
//! | `if(c, T, E, args)`, `case(k, [..], args)`, constant selector | the chosen body inlined (a negative `case` selector: `args`) |
//! | `while(C, B, init)`, `C` false on `init` | `init` |
//!
//! A constant is a literal argument (`mul(x, 1)`) or a Const input whose elements are
//! all equal. A pattern applies only when the replacement has exactly the node's type
//! (so `mul(x, ones[N])` with `x: f32[]` stays: it broadcasts).
//!
//! Each node is visited once, in list order, so upstream nodes are already simplified
//! when their readers are matched: \[A\] match on the current graph, \[B\] build (a new
//! `reshape` taking the outer one's id; a Const for a body that returns a literal),
//! \[C\] apply. A *bypass* rewires the node's readers with
//! [`change_multi_output_refs`] and leaves the node to `dead`; `reshape` of `reshape`
//! is replaced in place with [`replace_nodes`].
//!
//! **Inlining** `if` / `case` branch k: the nodes of branch k (by the definition
//! hierarchy: every node placed in it, nested sub-functions included) are moved, in
//! order, to just before the super node ([`move_nodes`]: after the arguments, which
//! may be defined after the body), then every reader of the branch's Input node
//! parameter j reads argument j instead ([`change_multi_output_refs`] from the Input
//! node to the args), and finally the super node's readers read the branch's results.
//! The super node, its other branches and the now unread Input node are left for
//! `dead`. Types are unchanged: the branch's results have the super node's types (the
//! verifier checks it).
//!
//! **A `while` that never runs**: its condition's result is a constant 0, a state
//! parameter whose initial value is a Const 0, or a Call in the condition on such
//! parameters and Consts that the interpreter evaluates to 0 (as `fold` would).

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;

use super::fold::evaluate_call;
use super::{Budget, PassFailure, PrepareOptions};
use crate::hierarchy::{Entry, hierarchy};
use crate::infer::expected_types;
use crate::ir::{Call, CallValue, Graph, ListItem, Node, NodeId, Op, Ref, Source};
use crate::rewrite::{ConstCache, change_multi_output_refs, const_of, move_nodes, replace_nodes};

/// What a match found.
enum Action {
    /// Readers of output k read `to[k]`.
    Bypass(Vec<Option<Ref>>),
    /// The node is replaced by this one (same id).
    Replace(Node),
    /// Branch `branch` of an `if` / `case` inlined: `body` (list order) moves before
    /// the super node, the Input node `input`'s readers read the args.
    Inline {
        branch: usize,
        input: NodeId,
        body: Vec<NodeId>,
    },
}

/// The pass (module docs).
pub fn simplify(
    graph: &mut Graph,
    budget: &mut Budget,
    _: &PrepareOptions,
) -> Result<(), PassFailure> {
    let mut cache = ConstCache::new();
    let ids: Vec<NodeId> = graph.nodes().iter().map(|n| n.id).collect();
    for id in ids {
        let Some(node) = graph.node(id) else { continue };
        // [A] match and [B] build.
        let Some(action) = find(graph, node) else {
            continue;
        };
        if !budget.spend() {
            break;
        }
        // [C] apply.
        apply(graph, &mut cache, id, action)
            .map_err(|e| PassFailure::rewrite(id.to_string(), e))?;
    }
    Ok(())
}

fn apply(
    graph: &mut Graph,
    cache: &mut ConstCache,
    id: NodeId,
    action: Action,
) -> Result<(), crate::rewrite::RewriteError> {
    match action {
        Action::Bypass(to) => {
            change_multi_output_refs(graph, None, id, &to)?;
        }
        Action::Replace(node) => replace_nodes(graph, None, Some(node), &[id])?,
        Action::Inline {
            branch,
            input,
            body,
        } => {
            if !body.is_empty() {
                move_nodes(graph, Some(id), &body)?;
            }
            let args: Vec<Option<Ref>> = graph
                .node(id)
                .map(|n| n.inputs[1..].iter().copied().map(Some).collect())
                .unwrap_or_default();
            change_multi_output_refs(graph, None, input, &args)?;
            let results: Vec<Source> = graph
                .node(id)
                .and_then(|n| n.op.interfaces().get(branch).map(|i| i.outputs.clone()))
                .unwrap_or_default();
            let table: Vec<Option<Ref>> = results
                .into_iter()
                .map(|s| match s {
                    Source::Ref(r) => Some(r),
                    Source::Scalar(v) => Some(cache.const_scalar(graph, v)),
                })
                .collect();
            change_multi_output_refs(graph, None, id, &table)?;
        }
    }
    Ok(())
}

/// The pattern `node` matches, if any, with what to do.
fn find(graph: &Graph, node: &Node) -> Option<Action> {
    let one = |r: Option<Ref>| {
        let r = r?;
        let [ty] = node.outputs.as_slice() else {
            return None;
        };
        (graph.type_of(r) == Some(ty)).then(|| Action::Bypass(vec![Some(r)]))
    };
    match &node.op {
        Op::Call(call) => match call.op.as_str() {
            "mul" | "add" | "sub" | "div" => one(arithmetic(graph, node, call)),
            "transpose" | "permute" => one(inverse_permutes(graph, node, call)),
            "reshape" => reshape(graph, node, call),
            "reindex" => one(identity_reindex(graph, node, call)),
            "where" => one(constant_where(graph, node, call)),
            _ => None,
        },
        Op::If { .. } => {
            let c = single(graph, *node.inputs.first()?)?;
            inline(graph, node, if c != 0.0 { 0 } else { 1 })
        }
        Op::Case { branches } => {
            let sel = single(graph, *node.inputs.first()?)?;
            if sel.is_nan() || sel.floor() >= branches.len() as f64 {
                return None;
            }
            if sel < 0.0 {
                // Pass-through, when the arguments have the outputs' types.
                let args = &node.inputs[1..];
                let same = args.len() == node.outputs.len()
                    && args
                        .iter()
                        .zip(&node.outputs)
                        .all(|(r, t)| graph.type_of(*r) == Some(t));
                return same.then(|| Action::Bypass(args.iter().copied().map(Some).collect()));
            }
            inline(graph, node, sel.floor() as usize)
        }
        Op::While { .. } => never_runs(graph, node)
            .then(|| Action::Bypass(node.inputs.iter().copied().map(Some).collect())),
        _ => None,
    }
}

/// Every element of `t` when they are all the same value (bit for bit).
fn uniform(t: &Tensor) -> Option<f64> {
    let first = *t.data.first()?;
    t.data
        .iter()
        .all(|v| v.to_bits() == first.to_bits())
        .then_some(first)
}

/// The one value of a Const read through `r` (one element).
fn single(graph: &Graph, r: Ref) -> Option<f64> {
    let t = const_of(graph, r)?;
    (t.len() == 1).then(|| t.data[0])
}

/// A call argument: the value it reads, and its constant when it is one.
struct Operand {
    value: Option<Ref>,
    constant: Option<f64>,
}

fn operand(graph: &Graph, node: &Node, v: &CallValue) -> Operand {
    match v {
        CallValue::Input(k) => {
            let value = node.inputs.get(*k).copied();
            let constant = value.and_then(|r| const_of(graph, r)).and_then(uniform);
            Operand { value, constant }
        }
        CallValue::Int(i) => Operand {
            value: None,
            constant: Some(*i as f64),
        },
        CallValue::Float(f) => Operand {
            value: None,
            constant: Some(*f),
        },
        _ => Operand {
            value: None,
            constant: None,
        },
    }
}

/// True for a call with positional arguments only.
fn plain(call: &Call) -> bool {
    call.attrs.is_empty() && call.bind.is_empty()
}

/// `x·1`, `1·x`, `x+0`, `0+x`, `x−0`, `x/1`: the `x`.
fn arithmetic(graph: &Graph, node: &Node, call: &Call) -> Option<Ref> {
    let [a, b] = call.args.as_slice() else {
        return None;
    };
    if !plain(call) {
        return None;
    }
    let (a, b) = (operand(graph, node, a), operand(graph, node, b));
    let is = |o: &Operand, v: f64| o.constant == Some(v);
    match call.op.as_str() {
        "mul" if is(&b, 1.0) => a.value,
        "mul" if is(&a, 1.0) => b.value,
        "add" if is(&b, 0.0) => a.value,
        "add" if is(&a, 0.0) => b.value,
        "sub" if is(&b, 0.0) => a.value,
        "div" if is(&b, 1.0) => a.value,
        _ => None,
    }
}

/// An integer argument given at position `at` or as attribute `name`.
fn int_arg(call: &Call, at: usize, name: &str) -> Option<i64> {
    let v = call
        .args
        .get(at)
        .or_else(|| call.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v))?;
    match v {
        CallValue::Int(i) => Some(*i),
        _ => None,
    }
}

/// A list argument given at position `at` or as attribute `name`.
fn list_arg<'c>(call: &'c Call, at: usize, name: &str) -> Option<&'c [ListItem]> {
    let v = call
        .args
        .get(at)
        .or_else(|| call.attrs.iter().find(|(n, _)| n == name).map(|(_, v)| v))?;
    match v {
        CallValue::List(items) => Some(items),
        _ => None,
    }
}

/// The value a `transpose` / `permute` reads and its permutation (axis k of the
/// result is axis `perm[k]` of the value).
fn permutation(graph: &Graph, node: &Node, call: &Call) -> Option<(Ref, Vec<usize>)> {
    if call.args.first() != Some(&CallValue::Input(0)) || node.inputs.len() != 1 {
        return None;
    }
    let x = node.inputs[0];
    let rank = graph.type_of(x)?.shape.len() as i64;
    let axis = |d: i64| {
        let d = if d < 0 { d + rank } else { d };
        (0..rank).contains(&d).then_some(d as usize)
    };
    let perm: Vec<usize> = match call.op.as_str() {
        "transpose" => {
            let (a, b) = (
                axis(int_arg(call, 1, "dim0")?)?,
                axis(int_arg(call, 2, "dim1")?)?,
            );
            let mut p: Vec<usize> = (0..rank as usize).collect();
            p.swap(a, b);
            p
        }
        "permute" => list_arg(call, 1, "dims")?
            .iter()
            .map(|item| match item {
                ListItem::Expr(e) => axis(e.as_int()?),
                ListItem::Input(_) => None,
            })
            .collect::<Option<Vec<usize>>>()?,
        _ => return None,
    };
    (perm.len() == rank as usize).then_some((x, perm))
}

/// `transpose` / `permute` of `transpose` / `permute` with inverse axes: the inner
/// one's input.
fn inverse_permutes(graph: &Graph, node: &Node, call: &Call) -> Option<Ref> {
    let (mid, outer) = permutation(graph, node, call)?;
    if mid.output != 0 {
        return None;
    }
    let inner_node = graph.node(mid.node)?;
    let Op::Call(inner_call) = &inner_node.op else {
        return None;
    };
    let (x, inner) = permutation(graph, inner_node, inner_call)?;
    (outer.len() == inner.len() && (0..outer.len()).all(|k| inner[outer[k]] == k)).then_some(x)
}

/// `reshape` to the input's own type: the input; `reshape` of `reshape`: one
/// `reshape` of the first one's input (or that input, when of the same type).
fn reshape(graph: &Graph, node: &Node, call: &Call) -> Option<Action> {
    if call.args.first() != Some(&CallValue::Input(0)) || node.inputs.len() != 1 {
        return None;
    }
    let [ty] = node.outputs.as_slice() else {
        return None;
    };
    let bypass = |r: Ref| (graph.type_of(r) == Some(ty)).then(|| Action::Bypass(vec![Some(r)]));
    let mid = node.inputs[0];
    if let Some(a) = bypass(mid) {
        return Some(a);
    }
    let inner = graph.node(mid.node)?;
    let Op::Call(inner_call) = &inner.op else {
        return None;
    };
    if inner_call.op != "reshape"
        || inner_call.args.first() != Some(&CallValue::Input(0))
        || inner.inputs.len() != 1
    {
        return None;
    }
    let x = inner.inputs[0];
    if let Some(a) = bypass(x) {
        return Some(a);
    }
    let mut new = node.clone();
    new.inputs = vec![x];
    (expected_types(graph, &new).ok()? == node.outputs).then_some(Action::Replace(new))
}

/// `reindex(x, shape, [i0, i1, ...])` of `x`'s type: `x`.
fn identity_reindex(graph: &Graph, node: &Node, call: &Call) -> Option<Ref> {
    let CallValue::Input(k) = call.args.first()? else {
        return None;
    };
    let x = *node.inputs.get(*k)?;
    let rank = graph.type_of(x)?.shape.len();
    let index = list_arg(call, 2, "index")?;
    let identity = index.len() == rank
        && index
            .iter()
            .enumerate()
            .all(|(j, item)| matches!(item, ListItem::Expr(Expr::Index(i)) if *i == j));
    identity.then_some(x)
}

/// `where(c, a, b)` with a constant `c`: `a` or `b`.
fn constant_where(graph: &Graph, node: &Node, call: &Call) -> Option<Ref> {
    let [c, a, b] = call.args.as_slice() else {
        return None;
    };
    if !plain(call) {
        return None;
    }
    let c = operand(graph, node, c).constant?;
    operand(graph, node, if c != 0.0 { a } else { b }).value
}

/// Branch `branch` of `node` inlined: its body by the definition hierarchy.
fn inline(graph: &Graph, node: &Node, branch: usize) -> Option<Action> {
    let interfaces = node.op.interfaces();
    let input = interfaces.get(branch)?.input;
    let h = hierarchy(graph).ok()?;
    let entry = find_entry(&h.top, node.id)?;
    let sub = entry.subs.get(branch)?;
    let mut body = Vec::new();
    collect(&sub.nodes, &mut body);
    body.sort_by_key(|id| graph.position(*id));
    Some(Action::Inline {
        branch,
        input,
        body,
    })
}

fn find_entry(entries: &[Entry], id: NodeId) -> Option<&Entry> {
    entries.iter().find_map(|e| {
        if e.node == id {
            Some(e)
        } else {
            e.subs.iter().find_map(|s| find_entry(&s.nodes, id))
        }
    })
}

/// Every node of `entries`, their sub-functions' Input nodes and nodes, recursively.
fn collect(entries: &[Entry], out: &mut Vec<NodeId>) {
    for e in entries {
        out.push(e.node);
        for s in &e.subs {
            out.push(s.input);
            collect(&s.nodes, out);
        }
    }
}

/// True when a `while`'s condition is false on its initial state.
fn never_runs(graph: &Graph, node: &Node) -> bool {
    let Op::While { cond, .. } = &node.op else {
        return false;
    };
    let [result] = cond.outputs.as_slice() else {
        return false;
    };
    // The constant a value of the condition has on the initial state.
    let value_of = |r: Ref| -> Option<Tensor> {
        if r.node == cond.input {
            const_of(graph, *node.inputs.get(r.output)?).cloned()
        } else {
            const_of(graph, r).cloned()
        }
    };
    let value = match result {
        Source::Scalar(v) => Some(Tensor::filled(
            graph.dtype,
            Vec::new(),
            graph.dtype.round(*v),
        )),
        Source::Ref(r) => value_of(*r).or_else(|| {
            let n = graph.node(r.node)?;
            let Op::Call(c) = &n.op else { return None };
            let inputs = n
                .inputs
                .iter()
                .map(|i| value_of(*i))
                .collect::<Option<Vec<_>>>()?;
            evaluate_call(graph, c, &inputs)
        }),
    };
    value.is_some_and(|t| t.len() == 1 && t.data[0] == 0.0)
}
