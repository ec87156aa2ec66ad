//! Control flow.
//!
//! - If: a condition known at import imports the branch taken inline; otherwise both
//!   branches become the sub-functions of an `if` node, closures over the outer
//!   values as ONNX's subgraphs are.
//! - Scan, and a Loop with a trip count whose body passes its condition through,
//!   become the graph layer's sequential `scan` node (`loops.rs`): the body is
//!   imported once, whatever the trip count.
//! - A Loop whose body computes its condition becomes a `while` node (no scan
//!   outputs: their length would be known only at run time).

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

/// Imports `body` with its inputs bound to `args`; returns its outputs.
pub(super) fn call_body(im: &mut Im, body: &GraphProto, args: &[Val]) -> CResult<Vec<Val>> {
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

/// Loop: a `scan` when the body passes its condition through (`loops.rs`), a
/// `while` when it computes it.
pub(crate) fn loop_(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let body = n.graph("body").ok_or("no body")?;
    let trips = match n.opt(0) {
        Some(_) => Some(
            im.known(n, 0, "trip count M")?
                .exprs()?
                .first()
                .map(uop_codegen::index::Expr::simplify)
                .ok_or("empty M")?,
        ),
        None => None,
    };
    let cond = match n.opt(1) {
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
    let state: Vec<Val> = n
        .inputs
        .iter()
        .skip(2)
        .map(|v| v.clone().ok_or("a missing loop-carried value"))
        .collect::<Result<_, _>>()?;
    if !condition_passes_through(body) {
        let trips = match trips {
            Some(m) => Some(m.as_int().ok_or_else(|| {
                format!("a Loop whose body computes its condition needs a trip count known at import, not `{m}`")
            })?),
            None => None,
        };
        return as_while(im, n, body, trips, cond, state);
    }
    super::loops::loop_scan(im, n, body, trips, cond, state)
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
