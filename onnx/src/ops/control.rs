//! Control flow: If (a branch known at import is imported inline; otherwise both
//! branches become the sub-functions of an `if` node, closures over the outer values
//! as ONNX's subgraphs are).

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
        let taken = if c.first().is_some_and(|&x| x != 0.0) { then_g } else { else_g };
        return inline(im, taken);
    }
    let c = im.float(n.input(0)?)?;
    let mut elems = Vec::new();
    let then = {
        let Im { g, env } = im;
        g.sub_function(Vec::new(), Vec::new(), Box::new(|g, _| branch(g, env, then_g, &mut elems)))?
    };
    let mut else_elems = Vec::new();
    let else_ = {
        let Im { g, env } = im;
        g.sub_function(Vec::new(), Vec::new(), Box::new(|g, _| branch(g, env, else_g, &mut else_elems)))?
    };
    let outs = im.g.add_multi(Op::If { then, else_ }, vec![c])?;
    Ok(outs.into_iter().zip(elems).map(|(r, e)| Val::Graph(r, e)).collect())
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
    for t in &sub.initializer {
        let h = crate::data::HostTensor::from_proto(t)?;
        let name = t.name.clone().unwrap_or_default();
        im.env.set(&name, Val::Known(crate::import::value::Known::from_host(&h)));
    }
    import_nodes(im, &sub.node).map_err(|e| CErr::Msg(format!("in a branch: {e}")))?;
    sub.output
        .iter()
        .map(|o| {
            let name = o.name.clone().unwrap_or_default();
            im.env
                .get(&name)
                .cloned()
                .ok_or_else(|| CErr::Msg(format!("branch output `{name}` is never computed")))
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
        CErr::NeedsConstant { input, slot } => {
            BuildError::new(format!("input `{input}` (the {slot} of a node) must be known at import"))
        }
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
