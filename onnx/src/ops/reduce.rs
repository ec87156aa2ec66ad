//! Reductions (axes as attribute or input, keepdims, noop_with_empty_axes), ArgMax /
//! ArgMin, Softmax / LogSoftmax / Hardmax (the opset < 13 forms flatten first).

use uop_codegen::index::Expr;
use uop_graph::{Arg, Ref};

use crate::data::ElemType;
use crate::import::value::{Val, norm_axis, product};
use crate::import::{CResult, Im, NodeIn, ints_arg};

/// The axes a Reduce* node reduces: from the `axes` attribute before the opset that
/// made them an input (13 for ReduceSum, 18 for the others), else from input 1.
/// `None` means every axis... or none with `noop_with_empty_axes`.
fn reduce_axes(im: &Im, n: &NodeIn, rank: usize) -> CResult<Option<Vec<usize>>> {
    let input_from = if n.op() == "ReduceSum" { 13 } else { 18 };
    let axes = if im.opset() < input_from {
        n.ints("axes")
    } else {
        im.opt_ints(n, 1, "axes")?
    };
    let axes = axes.unwrap_or_default();
    if axes.is_empty() {
        if n.int_or("noop_with_empty_axes", 0) != 0 {
            return Ok(None);
        }
        return Ok(Some((0..rank).collect()));
    }
    let mut v = axes
        .iter()
        .map(|&a| norm_axis(a, rank))
        .collect::<Result<Vec<_>, _>>()?;
    v.sort_unstable();
    v.dedup();
    Ok(Some(v))
}

/// ReduceSum/Mean/Max/Min/Prod/LogSumExp/L1/L2/SumSquare/LogSum.
pub(crate) fn reduce(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let rank = im.rank(v)?;
    let x = im.float(v)?;
    let keep = n.int_or("keepdims", 1) != 0;
    let Some(axes) = reduce_axes(im, n, rank)? else {
        let r = match n.op() {
            "ReduceL1" => im.op("abs", &[x])?,
            "ReduceSumSquare" => im.op("mul", &[x, x])?,
            "ReduceL2" => {
                let s = im.op("mul", &[x, x])?;
                im.op("sqrt", &[s])?
            }
            "ReduceLogSum" => im.op("log", &[x])?,
            _ => im.with_scalar("add", x, 0.0)?,
        };
        return Ok(vec![typed(im, v, r)?]);
    };
    let (pre, op) = match n.op() {
        "ReduceSum" => (None, "sum"),
        "ReduceMean" => (None, "mean"),
        "ReduceMax" => (None, "max"),
        "ReduceMin" => (None, "min"),
        "ReduceProd" => (None, "prod"),
        "ReduceLogSumExp" => (None, "logsumexp"),
        "ReduceL1" => (Some("abs"), "sum"),
        "ReduceL2" | "ReduceSumSquare" => (Some("square"), "sum"),
        _ => (None, "sum"),
    };
    let input = match pre {
        Some("abs") => im.op("abs", &[x])?,
        Some(_) => im.op("mul", &[x, x])?,
        None => x,
    };
    let mut r = if axes.is_empty() {
        input
    } else {
        let axis = ints_arg(&axes.iter().map(|&a| a as i64).collect::<Vec<_>>());
        im.call(
            op,
            &[input.into()],
            &[("axis", axis), ("keepdim", Arg::Bool(keep))],
        )?
    };
    if crate::ops::elementwise::elem_of(v) == ElemType::Bool {
        // An empty reduction of bools is false for Max and true for Min (not ∓inf).
        match n.op() {
            "ReduceMax" => r = im.with_scalar("maximum", r, 0.0)?,
            "ReduceMin" => r = im.with_scalar("minimum", r, 1.0)?,
            _ => {}
        }
    }
    match n.op() {
        "ReduceL2" => r = im.op("sqrt", &[r])?,
        "ReduceLogSum" => r = im.op("log", &[r])?,
        "ReduceMean" if crate::ops::elementwise::elem_of(v).is_int() => {
            r = crate::ops::elementwise::trunc(im, r)?;
        }
        _ => {}
    }
    Ok(vec![typed(im, v, r)?])
}

/// A reduction's result: of the input's type for integers (computed in the float
/// type, wrapped into the type's range), else of the float type.
fn typed(im: &mut Im, input: &Val, r: Ref) -> CResult<Val> {
    Ok(match crate::ops::elementwise::elem_of(input) {
        e if e.is_int() => Val::Graph(crate::ops::elementwise::wrap(im, r, e)?, e),
        _ => im.fval(r),
    })
}

/// ArgMax, ArgMin (select_last_index by flipping the axis).
pub(crate) fn arg_reduce(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let shape = im.shape(v)?;
    let axis = norm_axis(n.int_or("axis", 0), shape.len())?;
    let keep = n.int_or("keepdims", 1) != 0;
    let op = if n.op() == "ArgMax" {
        "argmax"
    } else {
        "argmin"
    };
    let mut x = im.float(v)?;
    let last = n.int_or("select_last_index", 0) != 0;
    if last {
        x = im.call("flip", &[x.into(), Arg::Int(axis as i64)], &[])?;
    }
    let mut r = im.call(
        op,
        &[x.into()],
        &[
            ("axis", Arg::Int(axis as i64)),
            ("keepdim", Arg::Bool(keep)),
        ],
    )?;
    if last {
        let size = shape[axis]
            .as_int()
            .ok_or("select_last_index needs a static size on the axis")?;
        r = im.scalar_with("sub", (size - 1) as f64, r)?;
    }
    Ok(vec![Val::Graph(r, ElemType::Int64)])
}

/// Softmax, LogSoftmax, Hardmax.
pub(crate) fn softmax(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let shape = im.shape(v)?;
    let x = im.float(v)?;
    let old = im.opset() < 13;
    let axis = norm_axis(n.int_or("axis", if old { 1 } else { -1 }), shape.len())?;
    let (input, flat) = if old {
        let two = [product(&shape[..axis]), product(&shape[axis..])];
        (im.reshape(x, &two)?, 1)
    } else {
        (x, axis)
    };
    let r = match n.op() {
        "Softmax" => im.call(
            "softmax",
            &[input.into()],
            &[("axis", Arg::Int(flat as i64))],
        )?,
        "LogSoftmax" => im.call(
            "log_softmax",
            &[input.into()],
            &[("axis", Arg::Int(flat as i64))],
        )?,
        _ => hardmax(im, input, flat)?,
    };
    let r = if old { im.reshape(r, &shape)? } else { r };
    Ok(vec![im.fval(r)])
}

/// 1 at the first maximum along `axis`, 0 elsewhere.
fn hardmax(im: &mut Im, x: Ref, axis: usize) -> CResult<Ref> {
    let a = Arg::Int(axis as i64);
    let m = im.call(
        "max",
        &[x.into()],
        &[("axis", a.clone()), ("keepdim", Arg::Bool(true))],
    )?;
    let is_max = im.op("eq", &[x, m])?;
    let count = im.call("cumsum", &[is_max.into(), a], &[])?;
    let first = im.with_scalar("eq", count, 1.0)?;
    im.op("mul", &[is_max, first])
}

/// Index expressions of a static shape.
#[allow(dead_code)]
pub(crate) fn dims(shape: &[usize]) -> Vec<Expr> {
    shape.iter().map(|&d| Expr::Int(d as i64)).collect()
}
