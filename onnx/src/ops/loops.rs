//! `Scan` and the `Loop`s of a fixed trip count as the graph layer's sequential
//! `scan` node (`uop_graph::scan`): the ONNX body is imported once, as the scan's
//! body, so the graph's size does not grow with the trip count.
//!
//! - `Scan` (opset 9+): the carried values are the scan's state; each scanned input
//!   is sliced on its `scan_input_axes` axis (default 0) in its
//!   `scan_input_directions` direction; each scan output is stacked on its
//!   `scan_output_axes` axis in its `scan_output_directions` direction. The trip count
//!   is the scanned inputs' length on their axes, symbolic sizes included.
//! - `Scan` (opset 8): every input has a batch axis 0 (`sequence_lens` is not
//!   supported): an outer scan over the batch (no state: states and inputs sliced,
//!   every output stacked on axis 0) whose body is the opset-9 scan over axis 0 of
//!   the slices.
//! - `Loop` with a trip count `M` (a number or a symbolic size known at import) whose
//!   condition the body passes through unchanged: a scan of `M` iterations (0 when the
//!   condition input is false) whose iteration counter is the scan's index — known at
//!   import as the index expression `$t`, so `Slice(x, t, t + 1)` and other shape
//!   arithmetic on it fold into index expressions; scan outputs stacked on axis 0.
//!   (A Loop whose body computes its condition is a `while`, see `control.rs`; with
//!   scan outputs it is an error, their length being known only at run time.)

use uop_codegen::index::Expr;
use uop_graph::{BuildError, Op, Ref, ScanAxis, Source, ValueType};

use crate::data::ElemType;
use crate::import::value::{KData, Known, Val, norm_axis};
use crate::import::{CErr, CResult, Im, NodeIn};
use crate::proto::GraphProto;

use super::control::call_body;
use super::elementwise::elem_of;

/// What the ONNX body of a scan takes and returns.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A Loop body: (counter, condition, carried...) to (condition, carried...,
    /// scan outputs...).
    Loop,
    /// A Scan body: (carried..., slices...) to (carried..., scan outputs...).
    Scan,
}

/// One scan node to build.
struct Plan<'a> {
    body: &'a GraphProto,
    kind: Kind,
    count: Expr,
    init: Vec<Val>,
    xs: Vec<(Val, ScanAxis)>,
    /// Per scan output: the ONNX axis (may be negative) and the direction.
    out_axes: Vec<(i64, bool)>,
}

/// Scan.
pub(crate) fn scan(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let body = n.graph("body").ok_or("no body")?;
    let num_scan = usize::try_from(n.int("num_scan_inputs").ok_or("no num_scan_inputs")?)
        .map_err(|_| "negative num_scan_inputs")?;
    let first = usize::from(im.opset() < 9);
    if first == 1 && n.opt(0).is_some() {
        return Err("sequence_lens is not supported".into());
    }
    let inputs: Vec<Val> = n
        .inputs
        .iter()
        .skip(first)
        .map(|v| v.clone().ok_or("a missing input"))
        .collect::<Result<_, _>>()?;
    let carried = inputs
        .len()
        .checked_sub(num_scan)
        .ok_or("more scan inputs than inputs")?;
    let n_out = n.proto.output.len();
    let n_scan_out = n_out
        .checked_sub(carried)
        .ok_or("fewer outputs than carried values")?;
    if im.opset() < 9 {
        let dirs = n.ints("directions").unwrap_or_default();
        return scan8(im, body, inputs, carried, &dirs, n_scan_out);
    }
    let in_dirs = n.ints("scan_input_directions").unwrap_or_default();
    let in_axes = n.ints("scan_input_axes").unwrap_or_default();
    let out_dirs = n.ints("scan_output_directions").unwrap_or_default();
    let out_axes = n.ints("scan_output_axes").unwrap_or_default();
    let mut xs = Vec::new();
    let mut count: Option<Expr> = None;
    for (k, v) in inputs[carried..].iter().enumerate() {
        let shape = im.shape(v)?;
        let axis = norm_axis(in_axes.get(k).copied().unwrap_or(0), shape.len())?;
        let len = shape[axis].clone();
        match &count {
            Some(c) if !uop_codegen::index::equal_sizes(c, &len) => {
                return Err(format!(
                    "scan inputs of different lengths ({c} and {len}): they must be equal"
                )
                .into());
            }
            Some(_) => {}
            None => count = Some(len),
        }
        let reverse = in_dirs.get(k).copied().unwrap_or(0) != 0;
        xs.push((v.clone(), ScanAxis { axis, reverse }));
    }
    let count = count.ok_or("a Scan without scan inputs")?;
    let plan = Plan {
        body,
        kind: Kind::Scan,
        count,
        init: inputs[..carried].to_vec(),
        xs,
        out_axes: (0..n_scan_out)
            .map(|k| {
                (
                    out_axes.get(k).copied().unwrap_or(0),
                    out_dirs.get(k).copied().unwrap_or(0) != 0,
                )
            })
            .collect(),
    };
    build(im, &plan)
}

/// Scan of opset 8: an outer scan over the batch axis 0 of every input, whose body
/// is the scan over the next axis.
fn scan8(
    im: &mut Im,
    body: &GraphProto,
    inputs: Vec<Val>,
    carried: usize,
    dirs: &[i64],
    n_scan_out: usize,
) -> CResult<Vec<Val>> {
    let first = inputs.first().ok_or("a Scan without inputs")?;
    let batch = im.shape(first)?.first().cloned().ok_or("no batch axis")?;
    let elems: Vec<ElemType> = inputs.iter().map(elem_of).collect();
    let refs = inputs
        .iter()
        .map(|v| im.graph(v))
        .collect::<CResult<Vec<Ref>>>()?;
    let types = refs
        .iter()
        .map(|r| im.g.type_of(*r).cloned())
        .collect::<Result<Vec<_>, _>>()?;
    let scanned = vec![ScanAxis::new(0); refs.len()];
    let index = fresh_index(im);
    let shape = uop_graph::scan::ScanShape {
        count: &batch,
        carried: 0,
        scanned: &scanned,
        stacked: &[],
    };
    let params = uop_graph::scan::body_params(&shape, &types)?;
    let mut names = vec![index.clone()];
    names.extend((1..params.len()).map(|k| format!("p{k}")));
    let mut out_elems = Vec::new();
    let bound = index.clone();
    let sub = {
        let Im { g, env } = im;
        g.sub_function(
            names,
            params,
            Box::new(|g, s| {
                g.bind(&bound, s[0]);
                let mut inner = Im { g, env };
                let rows: Vec<Val> = s[1..]
                    .iter()
                    .zip(&elems)
                    .map(|(r, e)| Val::Graph(*r, *e))
                    .collect();
                let r = scan8_row(&mut inner, body, rows, carried, dirs, n_scan_out);
                inner.g.unbind();
                let vals = r.map_err(build_error)?;
                let mut out = Vec::new();
                for v in &vals {
                    out_elems.push(elem_of(v));
                    out.push(Source::Ref(inner.graph(v).map_err(build_error)?));
                }
                Ok(out)
            }),
        )?
    };
    let n_outs = sub.outputs.len();
    let outs = im.g.add_multi(
        Op::Scan {
            count: batch,
            index,
            carried: 0,
            scanned,
            stacked: vec![ScanAxis::new(0); n_outs],
            body: sub,
        },
        refs,
    )?;
    Ok(outs
        .into_iter()
        .zip(out_elems)
        .map(|(r, e)| Val::Graph(r, e))
        .collect())
}

/// One batch row of an opset-8 Scan: the scan over axis 0 of the rows.
fn scan8_row(
    im: &mut Im,
    body: &GraphProto,
    rows: Vec<Val>,
    carried: usize,
    dirs: &[i64],
    n_scan_out: usize,
) -> CResult<Vec<Val>> {
    let mut xs = Vec::new();
    let mut count = None;
    for (k, v) in rows[carried..].iter().enumerate() {
        let len = im
            .shape(v)?
            .first()
            .cloned()
            .ok_or("a scan input of rank 1")?;
        count.get_or_insert(len);
        let reverse = dirs.get(k).copied().unwrap_or(0) != 0;
        xs.push((v.clone(), ScanAxis { axis: 0, reverse }));
    }
    let plan = Plan {
        body,
        kind: Kind::Scan,
        count: count.ok_or("a Scan without scan inputs")?,
        init: rows[..carried].to_vec(),
        xs,
        out_axes: vec![(0, false); n_scan_out],
    };
    build(im, &plan)
}

/// Loop with a trip count whose condition the body passes through: a scan.
pub(crate) fn loop_scan(
    im: &mut Im,
    n: &NodeIn,
    body: &GraphProto,
    trips: Option<Expr>,
    cond: bool,
    state: Vec<Val>,
) -> CResult<Vec<Val>> {
    let Some(trips) = trips else {
        return Err(
            "a Loop without a trip count whose condition never changes runs forever".into(),
        );
    };
    let count = if cond { trips } else { Expr::Int(0) };
    if let Some(c) = count.as_int()
        && c < 0
    {
        return Err(format!("the trip count is {c}, below 0").into());
    }
    let n_scan_out = n.proto.output.len().saturating_sub(state.len());
    let plan = Plan {
        body,
        kind: Kind::Loop,
        count,
        init: state,
        xs: Vec::new(),
        out_axes: vec![(0, false); n_scan_out],
    };
    build(im, &plan)
}

/// A fresh name for a scan's index (`t<nodes>`: distinct from every enclosing
/// scan's, whose bodies were begun with fewer nodes).
fn fresh_index(im: &Im) -> String {
    format!("t{}", im.g.graph().len())
}

fn build_error(e: CErr) -> BuildError {
    match e {
        CErr::Msg(m) => BuildError::new(m),
        CErr::NeedsConstant { input, slot } => BuildError::new(format!(
            "input `{input}` (the {slot} of a node in the loop body) must be known at import"
        )),
    }
}

/// Builds the scan node of `p`; returns its outputs (the final carried values, then
/// the stacked scan outputs).
fn build(im: &mut Im, p: &Plan<'_>) -> CResult<Vec<Val>> {
    let init = p
        .init
        .iter()
        .map(|v| im.graph(v))
        .collect::<CResult<Vec<Ref>>>()?;
    let xs =
        p.xs.iter()
            .map(|(v, _)| im.graph(v))
            .collect::<CResult<Vec<Ref>>>()?;
    let scanned: Vec<ScanAxis> = p.xs.iter().map(|(_, a)| *a).collect();
    let mut inputs = init.clone();
    inputs.extend(&xs);
    let types = inputs
        .iter()
        .map(|r| im.g.type_of(*r).cloned())
        .collect::<Result<Vec<ValueType>, _>>()?;
    let shape = uop_graph::scan::ScanShape {
        count: &p.count,
        carried: init.len(),
        scanned: &scanned,
        stacked: &[],
    };
    let params = uop_graph::scan::body_params(&shape, &types)?;
    let index = fresh_index(im);
    let mut names = vec![index.clone()];
    names.extend((1..params.len()).map(|k| format!("p{k}")));
    let state_elems: Vec<ElemType> = p.init.iter().map(elem_of).collect();
    let x_elems: Vec<ElemType> = p.xs.iter().map(|(v, _)| elem_of(v)).collect();
    let mut out_elems: Vec<ElemType> = Vec::new();
    let sub = {
        let Im { g, env } = im;
        let out_elems = &mut out_elems;
        g.sub_function(
            names,
            params,
            Box::new(|g, s| {
                g.bind(&index, s[0]);
                let mut inner = Im { g, env };
                let r = body(
                    &mut inner,
                    p,
                    &index,
                    s,
                    (&state_elems, &x_elems),
                    out_elems,
                );
                inner.g.unbind();
                r.map_err(build_error)
            }),
        )?
    };
    let mut stacked = Vec::new();
    for (k, (axis, reverse)) in p.out_axes.iter().enumerate() {
        let src = sub
            .outputs
            .get(init.len() + k)
            .ok_or("the body returns fewer values than the loop's outputs")?;
        let rank =
            im.g.graph()
                .source_type(src)
                .ok_or("a body result is missing")?
                .shape
                .len();
        stacked.push(ScanAxis {
            axis: norm_axis(*axis, rank + 1)?,
            reverse: *reverse,
        });
    }
    if sub.outputs.len() != init.len() + stacked.len() {
        return Err(format!(
            "the body returns {} values for {} carried values and {} scan outputs",
            sub.outputs.len(),
            init.len(),
            stacked.len()
        )
        .into());
    }
    let outs = im.g.add_multi(
        Op::Scan {
            count: p.count.clone(),
            index,
            carried: init.len(),
            scanned,
            stacked,
            body: sub,
        },
        inputs,
    )?;
    let mut elems = state_elems;
    elems.extend(out_elems.iter().skip(init.len()).copied());
    Ok(outs
        .into_iter()
        .zip(elems)
        .map(|(r, e)| Val::Graph(r, e))
        .collect())
}

/// The scan's body: the ONNX body on its parameters; returns the state results then
/// the scan outputs, and records every result's element type in `out_elems`.
fn body(
    im: &mut Im,
    p: &Plan<'_>,
    index: &str,
    s: &[Ref],
    (state_elems, x_elems): (&[ElemType], &[ElemType]),
    out_elems: &mut Vec<ElemType>,
) -> CResult<Vec<Source>> {
    let carried = state_elems.len();
    let state = s[1..=carried]
        .iter()
        .zip(state_elems)
        .map(|(r, e)| Val::Graph(*r, *e));
    let slices = s[1 + carried..]
        .iter()
        .zip(x_elems)
        .map(|(r, e)| Val::Graph(*r, *e));
    let mut args: Vec<Val> = Vec::new();
    if p.kind == Kind::Loop {
        args.push(Val::Known(Known {
            elem: ElemType::Int64,
            shape: Vec::new(),
            data: KData::Int(vec![Expr::param(index)]),
        }));
        args.push(Val::Known(Known {
            elem: ElemType::Bool,
            shape: Vec::new(),
            data: KData::Int(vec![Expr::Int(1)]),
        }));
    }
    args.extend(state);
    args.extend(slices);
    let mut out = call_body(im, p.body, &args)?;
    if p.kind == Kind::Loop {
        if out.is_empty() {
            return Err("the body returns no condition".into());
        }
        let c = out.remove(0);
        let holds = match &c {
            Val::Known(k) => k.float_values()?.first().is_some_and(|&x| x != 0.0),
            Val::Graph(..) => false,
        };
        if !holds {
            return Err("the body's condition is not the condition it was given".into());
        }
    }
    let mut results = Vec::with_capacity(out.len());
    for (k, v) in out.iter().enumerate() {
        out_elems.push(elem_of(v));
        let r = im.graph(v)?;
        // A state the body returns as a constant of another type than the state's
        // (an int64 counter folded at import) is converted when it can be.
        let r = match (s.get(1 + k), v) {
            (Some(param), Val::Known(c)) if k < carried => {
                let want = im.g.type_of(*param)?.dtype;
                if want != im.g.type_of(r)?.dtype {
                    im.constant(c, want)?
                } else {
                    r
                }
            }
            _ => r,
        };
        results.push(Source::Ref(r));
    }
    Ok(results)
}
