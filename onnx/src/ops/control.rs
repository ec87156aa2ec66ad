//! Control flow.
//!
//! - If: a condition known at import imports the branch taken inline; otherwise both
//!   branches become the sub-functions of an `if` node, closures over the outer
//!   values as ONNX's subgraphs are.
//! - Loop and Scan with trip counts known at import are unrolled: the body is
//!   imported once per iteration, the iteration counter a known integer (so
//!   `Slice(x, iter, iter + 1)` folds) and the scan inputs sliced per step; scan
//!   outputs are stacked with `concat`.
//! - A Loop whose body computes its condition becomes a `while` node (no scan
//!   outputs: their length would be known only at run time).
//! - A Scan over a symbolic length is an error naming the reason (a stacking `scan`
//!   super node is the later, general form).

use std::collections::HashMap;

use uop_graph::{BuildError, GraphBuilder, Op, Source};

use crate::import::value::Val;
use crate::import::{CErr, CResult, Env, Im, NodeIn, import_nodes};
use crate::proto::GraphProto;

use super::elementwise::elem_of;

/// If.
pub(crate) fn if_(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let then_g = n.graph("then_branch").ok_or("no then_branch")?;
    let else_g = n.graph("else_branch").ok_or("no else_branch")?;
    if let Val::Known(k) = n.input(0)? {
        let c = k.float_values()?;
        let taken = if c.first().is_some_and(|&x| x != 0.0) {
            then_g
        } else {
            else_g
        };
        return inline(im, taken);
    }
    let c = im.float(n.input(0)?)?;
    let mut elems = Vec::new();
    let then = {
        let Im { g, env } = im;
        g.sub_function(
            Vec::new(),
            Vec::new(),
            Box::new(|g, _| branch(g, env, then_g, &mut elems)),
        )?
    };
    let mut else_elems = Vec::new();
    let else_ = {
        let Im { g, env } = im;
        g.sub_function(
            Vec::new(),
            Vec::new(),
            Box::new(|g, _| branch(g, env, else_g, &mut else_elems)),
        )?
    };
    let outs = im.g.add_multi(Op::If { then, else_ }, vec![c])?;
    Ok(outs
        .into_iter()
        .zip(elems)
        .map(|(r, e)| Val::Graph(r, e))
        .collect())
}

/// Imports subgraph `sub` into the current scope and returns its outputs.
fn inline(im: &mut Im, sub: &GraphProto) -> CResult<Vec<Val>> {
    im.env.scopes.push(HashMap::new());
    let result = body(im, sub);
    im.env.scopes.pop();
    result
}

fn body(im: &mut Im, sub: &GraphProto) -> CResult<Vec<Val>> {
    if !sub.input.is_empty() {
        return Err("a branch with inputs is not an If branch".into());
    }
    import_sub(im, sub, "in a branch", "branch")
}

/// Binds `sub`'s initializers, imports its nodes in the current scope and
/// returns its outputs; errors name the place (`in a branch`) and the kind of
/// output (`branch`).
fn import_sub(im: &mut Im, sub: &GraphProto, place: &str, kind: &str) -> CResult<Vec<Val>> {
    for t in &sub.initializer {
        let h = crate::data::HostTensor::from_proto(t)?;
        let name = t.name.clone().unwrap_or_default();
        im.env.set(
            &name,
            Val::Known(crate::import::value::Known::from_host(&h)),
        );
    }
    import_nodes(im, &sub.node).map_err(|e| CErr::Msg(format!("{place}: {e}")))?;
    sub.output
        .iter()
        .map(|o| {
            let name = o.name.clone().unwrap_or_default();
            im.env
                .get(&name)
                .cloned()
                .ok_or_else(|| CErr::Msg(format!("{kind} output `{name}` is never computed")))
        })
        .collect()
}

/// One branch as a sub-function body: its outputs as graph values.
fn branch(
    g: &mut GraphBuilder,
    env: &mut Env,
    sub: &GraphProto,
    elems: &mut Vec<crate::data::ElemType>,
) -> Result<Vec<Source>, BuildError> {
    let mut im = Im { g, env };
    let vals = inline(&mut im, sub).map_err(|e| match e {
        CErr::Msg(m) => BuildError::new(m),
        CErr::NeedsConstant { input, slot } => BuildError::new(format!(
            "input `{input}` (the {slot} of a node) must be known at import"
        )),
    })?;
    let mut out = Vec::new();
    for v in &vals {
        elems.push(elem_of(v));
        let r = im.graph(v).map_err(|e| match e {
            CErr::Msg(m) => BuildError::new(m),
            CErr::NeedsConstant { input, .. } => BuildError::new(format!("input `{input}`")),
        })?;
        out.push(Source::Ref(r));
    }
    Ok(out)
}

/// The most iterations a Loop or Scan is unrolled to.
const MAX_UNROLL: i64 = 4096;

/// Imports `body` with its inputs bound to `args`; returns its outputs.
fn call_body(im: &mut Im, body: &GraphProto, args: &[Val]) -> CResult<Vec<Val>> {
    if body.input.len() != args.len() {
        return Err(format!(
            "the body takes {} inputs, {} given",
            body.input.len(),
            args.len()
        )
        .into());
    }
    im.env.scopes.push(HashMap::new());
    for (vi, v) in body.input.iter().zip(args) {
        im.env.set(vi.name.as_deref().unwrap_or(""), v.clone());
    }
    let result = import_sub(im, body, "in the body", "body");
    im.env.scopes.pop();
    result
}

/// `vals` (all of one shape) stacked along a new axis `axis`.
fn stack(im: &mut Im, vals: &[Val], axis: i64) -> CResult<Val> {
    let first = vals.first().ok_or("nothing to stack (zero iterations)")?;
    let shape = im.shape(first)?;
    let a = crate::import::value::norm_axis(axis, shape.len() + 1)?;
    let mut dims = shape.clone();
    dims.insert(a, uop_codegen::index::Expr::Int(1));
    let mut parts: Vec<uop_graph::Arg> = Vec::new();
    for v in vals {
        let r = im.graph(v)?;
        parts.push(im.reshape(r, &dims)?.into());
    }
    let r = if parts.len() == 1 {
        match parts[0] {
            uop_graph::Arg::Tensor(r) => r,
            _ => return Err("internal: not a tensor".into()),
        }
    } else {
        im.call("concat", &parts, &[("axis", uop_graph::Arg::Int(a as i64))])?
    };
    Ok(Val::Graph(r, elem_of(first)))
}

/// Loop with a trip count and condition known at import, unrolled.
pub(crate) fn loop_(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let body = n.graph("body").ok_or("no body")?;
    let trips = match n.opt(0) {
        Some(_) => Some(
            im.known(n, 0, "trip count M")?
                .int_values()?
                .first()
                .copied()
                .ok_or("empty M")?,
        ),
        None => None,
    };
    let mut cond = match n.opt(1) {
        Some(_) => {
            im.known(n, 1, "condition")?
                .int_values()?
                .first()
                .copied()
                .ok_or("empty cond")?
                != 0
        }
        None => true,
    };
    let mut state: Vec<Val> = n
        .inputs
        .iter()
        .skip(2)
        .map(|v| v.clone().ok_or("a missing loop-carried value"))
        .collect::<Result<_, _>>()?;
    if !condition_passes_through(body) {
        return as_while(im, n, body, trips, cond, state);
    }
    let carried = state.len();
    let mut scans: Vec<Vec<Val>> = Vec::new();
    let mut i: i64 = 0;
    while cond && trips.is_none_or(|m| i < m) {
        if i >= MAX_UNROLL {
            return Err(format!("more than {MAX_UNROLL} iterations are not unrolled").into());
        }
        let counter = Val::Known(crate::import::value::Known {
            elem: crate::data::ElemType::Int64,
            shape: vec![],
            data: crate::import::value::KData::Int(vec![uop_codegen::index::Expr::Int(i)]),
        });
        let cond_in = Val::Known(crate::import::value::Known {
            elem: crate::data::ElemType::Bool,
            shape: vec![],
            data: crate::import::value::KData::Int(vec![uop_codegen::index::Expr::Int(1)]),
        });
        let mut args = vec![counter, cond_in];
        args.extend(state.iter().cloned());
        let out = call_body(im, body, &args)?;
        if out.len() < 1 + carried {
            return Err("the body returns fewer values than the loop carries".into());
        }
        cond = match &out[0] {
            Val::Known(k) => k.float_values()?.first().is_some_and(|&c| c != 0.0),
            Val::Graph(..) => {
                return Err("the body's condition is computed at run time (a condition-driven Loop is not supported yet)".into());
            }
        };
        state = out[1..1 + carried].to_vec();
        for (k, v) in out[1 + carried..].iter().enumerate() {
            if scans.len() <= k {
                scans.push(Vec::new());
            }
            scans[k].push(v.clone());
        }
        i += 1;
    }
    let mut result = state;
    let want_scans = n.proto.output.len().saturating_sub(carried);
    for k in 0..want_scans {
        match scans.get(k) {
            Some(vals) => result.push(stack(im, vals, 0)?),
            None => {
                return Err("a Loop with zero iterations and scan outputs is not supported".into());
            }
        }
    }
    Ok(result)
}

/// Scan (opset 8 with its batch axis, and 9+ with axes and directions), unrolled
/// over a length known at import.
pub(crate) fn scan(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let body = n.graph("body").ok_or("no body")?;
    let num_scan = usize::try_from(n.int("num_scan_inputs").ok_or("no num_scan_inputs")?)
        .map_err(|_| "negative num_scan_inputs")?;
    if im.opset() < 9 {
        if n.opt(0).is_some() {
            return Err("sequence_lens is not supported".into());
        }
        let inputs: Vec<Val> = n
            .inputs
            .iter()
            .skip(1)
            .map(|v| v.clone().ok_or("a missing input"))
            .collect::<Result<_, _>>()?;
        let batch = im
            .static_shape(&inputs[0])?
            .first()
            .copied()
            .ok_or("no batch axis")?;
        let mut per_batch: Vec<Vec<Val>> = Vec::new();
        for b in 0..batch {
            let rows = inputs
                .iter()
                .map(|v| row(im, v, 0, b as i64))
                .collect::<CResult<Vec<_>>>()?;
            let dirs = n.ints("directions").unwrap_or_default();
            let out = scan_core(im, n, body, &rows, num_scan, &dirs, &[], &[], &[])?;
            for (k, v) in out.into_iter().enumerate() {
                if per_batch.len() <= k {
                    per_batch.push(Vec::new());
                }
                per_batch[k].push(v);
            }
        }
        return per_batch.iter().map(|vals| stack(im, vals, 0)).collect();
    }
    let inputs: Vec<Val> = n
        .inputs
        .iter()
        .map(|v| v.clone().ok_or("a missing input"))
        .collect::<Result<_, _>>()?;
    let in_dirs = n.ints("scan_input_directions").unwrap_or_default();
    let in_axes = n.ints("scan_input_axes").unwrap_or_default();
    let out_dirs = n.ints("scan_output_directions").unwrap_or_default();
    let out_axes = n.ints("scan_output_axes").unwrap_or_default();
    scan_core(
        im, n, body, &inputs, num_scan, &in_dirs, &in_axes, &out_dirs, &out_axes,
    )
}

/// Slice `i` of `v` along `axis`, the axis removed.
fn row(im: &mut Im, v: &Val, axis: usize, i: i64) -> CResult<Val> {
    let shape = im.shape(v)?;
    let x = im.graph(v)?;
    let s = im.call(
        "slice",
        &[x.into(), uop_graph::Arg::Int(axis as i64)],
        &[
            ("start", uop_graph::Arg::Int(i)),
            ("end", uop_graph::Arg::Int(i + 1)),
        ],
    )?;
    let mut dims = shape;
    dims.remove(axis);
    let r = im.reshape(s, &dims)?;
    Ok(Val::Graph(r, elem_of(v)))
}

#[allow(clippy::too_many_arguments)]
fn scan_core(
    im: &mut Im,
    n: &NodeIn,
    body: &GraphProto,
    inputs: &[Val],
    num_scan: usize,
    in_dirs: &[i64],
    in_axes: &[i64],
    out_dirs: &[i64],
    out_axes: &[i64],
) -> CResult<Vec<Val>> {
    let carried = inputs
        .len()
        .checked_sub(num_scan)
        .ok_or("more scan inputs than inputs")?;
    let mut state = inputs[..carried].to_vec();
    let scanned = &inputs[carried..];
    let mut axes = Vec::new();
    let mut length: Option<i64> = None;
    for (k, v) in scanned.iter().enumerate() {
        let shape = im.shape(v)?;
        let axis =
            crate::import::value::norm_axis(in_axes.get(k).copied().unwrap_or(0), shape.len())?;
        let l = shape[axis]
            .as_int()
            .ok_or("a Scan over a symbolic length is not supported yet")?;
        if length.is_some_and(|x| x != l) {
            return Err("scan inputs of different lengths".into());
        }
        length = Some(l);
        axes.push(axis);
    }
    let length = length.ok_or("a Scan without scan inputs")?;
    if length > MAX_UNROLL {
        return Err(format!("more than {MAX_UNROLL} iterations are not unrolled").into());
    }
    let mut scans: Vec<Vec<Val>> = Vec::new();
    for t in 0..length {
        let mut args = state.clone();
        for (k, v) in scanned.iter().enumerate() {
            let reverse = in_dirs.get(k).copied().unwrap_or(0) != 0;
            let i = if reverse { length - 1 - t } else { t };
            args.push(row(im, v, axes[k], i)?);
        }
        let out = call_body(im, body, &args)?;
        if out.len() < carried {
            return Err("the body returns fewer values than the scan carries".into());
        }
        state = out[..carried].to_vec();
        for (k, v) in out[carried..].iter().enumerate() {
            if scans.len() <= k {
                scans.push(Vec::new());
            }
            scans[k].push(v.clone());
        }
    }
    let mut result = state;
    let _ = n;
    for (k, mut vals) in scans.into_iter().enumerate() {
        if out_dirs.get(k).copied().unwrap_or(0) != 0 {
            vals.reverse();
        }
        result.push(stack(im, &vals, out_axes.get(k).copied().unwrap_or(0))?);
    }
    Ok(result)
}

/// True when the body's condition output is its condition input passed through
/// (directly or by Identity) or a constant: then it is known at import in every
/// iteration and the Loop can be unrolled.
fn condition_passes_through(body: &GraphProto) -> bool {
    let (Some(cond_in), Some(out)) = (body.input.get(1), body.output.first()) else {
        return true;
    };
    let cond_in = cond_in.name.as_deref().unwrap_or("");
    let mut name = out.name.as_deref().unwrap_or("");
    for _ in 0..=body.node.len() {
        if name == cond_in {
            return true;
        }
        let producer = body
            .node
            .iter()
            .find(|n| n.output.iter().any(|o| o == name));
        match producer {
            Some(p) if p.op_type.as_deref() == Some("Identity") => {
                name = p.input.first().map_or("", String::as_str);
            }
            Some(p) => return p.op_type.as_deref() == Some("Constant"),
            None => return false,
        }
    }
    false
}

/// A Loop whose condition the body computes at run time: a `while` node over the
/// state (counter, condition, carried values...), looping while the condition holds
/// and the counter is below the trip count. Scan outputs would have a length known
/// only at run time, so they are an error.
fn as_while(
    im: &mut Im,
    n: &NodeIn,
    body: &GraphProto,
    trips: Option<i64>,
    cond: bool,
    state: Vec<Val>,
) -> CResult<Vec<Val>> {
    let carried = state.len();
    if n.proto.output.len() > carried {
        return Err("a Loop whose condition is computed at run time cannot have scan outputs (their length is known only at run time)".into());
    }
    if !cond || trips == Some(0) {
        return Ok(state);
    }
    let elems: Vec<crate::data::ElemType> = state.iter().map(elem_of).collect();
    let mut init = vec![im.g.scalar(0.0), im.g.scalar(1.0)];
    for v in &state {
        init.push(im.float(v)?);
    }
    let types = init
        .iter()
        .map(|r| im.g.type_of(*r).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<String> = (0..init.len()).map(|k| format!("p{k}")).collect();
    let limit = trips.map(|m| m as f64);
    let cond_fn = im.g.sub_function(
        names.clone(),
        types.clone(),
        Box::new(move |g, s| {
            let c = g.call("ne", &[s[1].into(), uop_graph::Arg::Float(0.0)], &[])?;
            let c = match limit {
                Some(m) => {
                    let l = g.call("lt", &[s[0].into(), uop_graph::Arg::Float(m)], &[])?;
                    g.op("mul", &[c, l])?
                }
                None => c,
            };
            Ok(vec![c.into()])
        }),
    )?;
    let body_fn = {
        let Im { g, env } = im;
        g.sub_function(
            names,
            types,
            Box::new(|g, s| {
                let mut inner = Im { g, env };
                while_body(&mut inner, body, s, &elems).map_err(|e| match e {
                    CErr::Msg(m) => BuildError::new(m),
                    CErr::NeedsConstant { input, slot } => BuildError::new(format!(
                        "input `{input}` (the {slot} of a node in the loop body) must be known at import"
                    )),
                })
            }),
        )?
    };
    let outs = im.g.add_multi(
        Op::While {
            cond: cond_fn,
            body: body_fn,
        },
        init,
    )?;
    Ok(outs[2..]
        .iter()
        .zip(elems)
        .map(|(r, e)| Val::Graph(*r, e))
        .collect())
}

/// The `while` body: the ONNX body on (counter, condition, carried...), then the
/// next counter, the condition as a single value and the carried values.
fn while_body(
    im: &mut Im,
    body: &GraphProto,
    s: &[uop_graph::Ref],
    elems: &[crate::data::ElemType],
) -> CResult<Vec<Source>> {
    use crate::data::ElemType;
    let mut args = vec![
        Val::Graph(s[0], ElemType::Int64),
        Val::Graph(s[1], ElemType::Bool),
    ];
    args.extend(s[2..].iter().zip(elems).map(|(r, e)| Val::Graph(*r, *e)));
    let out = call_body(im, body, &args)?;
    if out.len() != s.len() - 1 {
        return Err("the body must return the condition and the carried values".into());
    }
    let next = im.with_scalar("add", s[0], 1.0)?;
    let c = im.float(&out[0])?;
    let c = im.reshape(c, &[])?;
    let mut results = vec![Source::Ref(next), Source::Ref(c)];
    for v in &out[1..] {
        results.push(Source::Ref(im.float(v)?));
    }
    Ok(results)
}
