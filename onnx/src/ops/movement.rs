//! Movement and indexing: Transpose, Slice, Split, Pad, Expand, Tile, SpaceToDepth,
//! DepthToSpace, GatherElements, CumSum, OneHot.

use uop_codegen::index::{Expr, IndexOp};
use uop_codegen::uop::DType;
use uop_graph::{Arg, Ref};

use crate::import::value::{KData, Known, Val, bin, broadcast, norm_axis};
use crate::import::{CResult, Im, NodeIn, exprs_arg, ints_arg};

use super::elementwise::elem_of;

/// Transpose.
pub(crate) fn transpose(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let rank = im.rank(v)?;
    let perm: Vec<usize> = match n.ints("perm") {
        Some(p) => p
            .iter()
            .map(|&a| norm_axis(a, rank))
            .collect::<Result<_, _>>()?,
        None => (0..rank).rev().collect(),
    };
    let x = im.graph(v)?;
    let r = im.permute(x, &perm)?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// Slice: starts/ends/axes/steps as attributes (opset < 10) or inputs known at import.
pub(crate) fn slice(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let shape = im.shape(v)?;
    let (starts, ends, axes, steps) = if im.opset() < 10 {
        (
            n.ints("starts").ok_or("no starts")?,
            n.ints("ends").ok_or("no ends")?,
            n.ints("axes"),
            None,
        )
    } else {
        let (starts, ends) = (im.known(n, 1, "starts")?, im.known(n, 2, "ends")?);
        if starts.int_values().is_err() || ends.int_values().is_err() {
            let axes = im.opt_ints(n, 3, "axes")?;
            let steps = im.opt_ints(n, 4, "steps")?;
            return slice_symbolic(im, v, (starts.exprs()?, ends.exprs()?), axes, steps);
        }
        (
            starts.int_values()?,
            ends.int_values()?,
            im.opt_ints(n, 3, "axes")?,
            im.opt_ints(n, 4, "steps")?,
        )
    };
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; starts.len()]);
    if ends.len() != starts.len() || axes.len() != starts.len() || steps.len() != starts.len() {
        return Err("starts, ends, axes and steps differ in length".into());
    }
    let mut cur = v.clone();
    for k in 0..starts.len() {
        let axis = norm_axis(axes[k], shape.len())?;
        let step = steps[k];
        if step == 0 {
            return Err("a step is 0".into());
        }
        let size = shape[axis].as_int();
        let (start, end) = clamp_range(starts[k], ends[k], step, size);
        cur = slice_axis(im, &cur, axis, start, end, step)?;
    }
    Ok(vec![cur])
}

/// A Slice whose starts or ends are index expressions known at import only
/// symbolically (a Loop's iteration counter `$t`, imported as a `scan` index): a
/// `reindex` of length `end - start` (which must simplify to a number) from `start`,
/// step 1. The start is taken as it is, not clamped: positions outside the input
/// read 0 (ONNX would shorten the slice, which a static shape cannot).
fn slice_symbolic(
    im: &mut Im,
    v: &Val,
    (starts, ends): (Vec<Expr>, Vec<Expr>),
    axes: Option<Vec<i64>>,
    steps: Option<Vec<i64>>,
) -> CResult<Vec<Val>> {
    let shape = im.shape(v)?;
    let axes = axes.unwrap_or_else(|| (0..starts.len() as i64).collect());
    if ends.len() != starts.len() || axes.len() != starts.len() {
        return Err("starts, ends and axes differ in length".into());
    }
    if steps.is_some_and(|s| s.iter().any(|&x| x != 1)) {
        return Err("a slice with symbolic starts or ends needs steps of 1".into());
    }
    let mut dims = shape.clone();
    let mut index: Vec<Expr> = (0..shape.len()).map(Expr::index).collect();
    for ((start, end), axis) in starts.iter().zip(&ends).zip(&axes) {
        let a = norm_axis(*axis, shape.len())?;
        let len = (end.clone() - start.clone()).simplify();
        let Some(l) = len.as_int().filter(|&l| l >= 0) else {
            return Err(
                format!("a slice from `{start}` to `{end}` has no length known at import").into(),
            );
        };
        dims[a] = Expr::Int(l);
        index[a] = (Expr::index(a) + start.clone()).simplify();
    }
    let x = im.graph(v)?;
    let r = im.call(
        "reindex",
        &[x.into(), exprs_arg(&dims), exprs_arg(&index)],
        &[],
    )?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// ONNX's start / end clamped so that they can be given to uop's `slice` (Python
/// semantics); `None` for an end past the last element in the step's direction.
fn clamp_range(start: i64, end: i64, step: i64, size: Option<i64>) -> (i64, Option<i64>) {
    const BIG: i64 = i32::MAX as i64;
    let start = match size {
        Some(s) => start.clamp(-s - 1, s),
        None => start.clamp(-BIG, BIG),
    };
    let end = match size {
        Some(s) if step > 0 && end >= s => None,
        Some(s) if step < 0 && end < -s => None,
        Some(s) => Some(end.clamp(-s - 1, s)),
        None if end.abs() >= BIG => None,
        None => Some(end),
    };
    (start, end)
}

/// `x[start:end:step]` along `axis` (folded for a known 1-D tensor).
fn slice_axis(
    im: &mut Im,
    v: &Val,
    axis: usize,
    start: i64,
    end: Option<i64>,
    step: i64,
) -> CResult<Val> {
    if let Val::Known(c) = v
        && c.shape.len() == 1
    {
        let len = c.shape[0] as i64;
        let idx = python_range(start, end, step, len);
        let data = match &c.data {
            KData::Int(d) => KData::Int(idx.iter().map(|&i| d[i].clone()).collect()),
            KData::Float(d) => KData::Float(idx.iter().map(|&i| d[i]).collect()),
        };
        return Ok(Val::Known(Known {
            elem: c.elem,
            shape: vec![idx.len()],
            data,
        }));
    }
    let x = im.graph(v)?;
    if step < 0 {
        // Python's x[start:end:step] for a negative step is the reverse of an
        // ascending slice with step -step.
        let size = im.g.type_of(x)?.shape[axis]
            .as_int()
            .ok_or("a negative step needs a static size")?;
        let idx = python_range(start, end, step, size);
        let (Some(&first), Some(&last)) = (idx.first(), idx.last()) else {
            return Err("a slice with no elements is not supported".into());
        };
        let attrs = [
            ("start", Arg::Int(last as i64)),
            ("end", Arg::Int(first as i64 + 1)),
            ("step", Arg::Int(-step)),
        ];
        let s = im.call("slice", &[x.into(), Arg::Int(axis as i64)], &attrs)?;
        let r = im.call("flip", &[s.into(), Arg::Int(axis as i64)], &[])?;
        return Ok(Val::Graph(r, elem_of(v)));
    }
    let mut attrs = vec![("start", Arg::Int(start)), ("step", Arg::Int(step))];
    if let Some(e) = end {
        attrs.push(("end", Arg::Int(e)));
    }
    let r = im.call("slice", &[x.into(), Arg::Int(axis as i64)], &attrs)?;
    Ok(Val::Graph(r, elem_of(v)))
}

/// The indices of Python's `range(len)[start:end:step]`.
fn python_range(start: i64, end: Option<i64>, step: i64, len: i64) -> Vec<usize> {
    let norm = |x: i64, lo: i64, hi: i64| if x < 0 { (x + len).max(lo) } else { x.min(hi) };
    let mut out = Vec::new();
    if step > 0 {
        let (s, e) = (norm(start, 0, len), end.map_or(len, |e| norm(e, 0, len)));
        let mut i = s;
        while i < e {
            out.push(i as usize);
            let Some(next) = i.checked_add(step) else {
                break;
            };
            i = next;
        }
    } else {
        let (s, e) = (
            norm(start, -1, len - 1),
            end.map_or(-1, |e| norm(e, -1, len - 1)),
        );
        let mut i = s;
        while i > e {
            out.push(i as usize);
            let Some(next) = i.checked_add(step) else {
                break;
            };
            i = next;
        }
    }
    out
}

/// Split.
pub(crate) fn split(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let shape = im.shape(v)?;
    let axis = norm_axis(n.int_or("axis", 0), shape.len())?;
    let parts = n.proto.output.len();
    let given = if im.opset() < 13 {
        n.ints("split")
    } else {
        im.opt_ints(n, 1, "split")?
    };
    let sizes = match given {
        Some(s) if !s.is_empty() => s,
        _ => {
            let total = shape[axis]
                .as_int()
                .ok_or("an even split needs a static size")?;
            let count = n.int("num_outputs").map_or(parts as i64, |c| c);
            if count != parts as i64 {
                return Err(format!("num_outputs = {count} for {parts} outputs").into());
            }
            let each = (total + count - 1) / count;
            if n.int("num_outputs").is_none() && total % count != 0 {
                return Err(format!("{total} does not split evenly into {count}").into());
            }
            (0..count)
                .map(|k| each.min(total - k * each).max(0))
                .collect()
        }
    };
    let total = shape[axis].as_int();
    if sizes.iter().any(|&s| s < 0 || total.is_some_and(|t| s > t)) {
        return Err(format!("split sizes {sizes:?} do not fit the axis").into());
    }
    let mut out = Vec::new();
    let mut at = 0;
    for s in sizes {
        out.push(slice_axis(im, v, axis, at, Some(at + s), 1)?);
        at += s;
    }
    Ok(out)
}

/// Pad.
pub(crate) fn pad(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let rank = im.rank(v)?;
    let (pads, value, axes) = if im.opset() < 11 {
        (
            n.ints("pads").ok_or("no pads")?,
            n.float_or("value", 0.0),
            None,
        )
    } else {
        let pads = im.known(n, 1, "pads")?.int_values()?;
        let value = match n.opt(2) {
            Some(_) => *im
                .known(n, 2, "constant_value")?
                .float_values()?
                .first()
                .unwrap_or(&0.0),
            None => 0.0,
        };
        (pads, value, im.opt_ints(n, 3, "axes")?)
    };
    let axes: Vec<usize> = match axes {
        Some(a) => a
            .iter()
            .map(|&x| norm_axis(x, rank))
            .collect::<Result<_, _>>()?,
        None => (0..rank).collect(),
    };
    if pads.iter().any(|p| p.unsigned_abs() > 1 << 31) {
        return Err("a pad is out of range".into());
    }
    if pads.len() != 2 * axes.len() {
        return Err(format!("{} pads for {} axes", pads.len(), axes.len()).into());
    }
    let mut per_axis = vec![(0i64, 0i64); rank];
    for (k, &a) in axes.iter().enumerate() {
        per_axis[a] = (pads[k], pads[k + axes.len()]);
    }
    let last = per_axis.iter().rposition(|p| *p != (0, 0));
    let list: Vec<i64> = match last {
        Some(l) => (0..=l)
            .rev()
            .flat_map(|a| [per_axis[a].0, per_axis[a].1])
            .collect(),
        None => vec![],
    };
    let mode = match n.string("mode").as_deref().unwrap_or("constant") {
        "constant" => "constant",
        "reflect" => "reflect",
        "edge" => "replicate",
        "wrap" => "circular",
        m => return Err(format!("mode `{m}` is not supported").into()),
    };
    let x = im.graph(v)?;
    if list.is_empty() {
        let r = im.with_scalar("add", x, 0.0)?;
        return Ok(vec![Val::Graph(r, elem_of(v))]);
    }
    let r = pad_ref(im, x, &list, value, mode)?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// uop's `pad(x, pads, value, mode)` (pads from the last axis).
pub(crate) fn pad_ref(
    im: &mut Im,
    x: Ref,
    pads_last_first: &[i64],
    value: f64,
    mode: &str,
) -> CResult<Ref> {
    im.call(
        "pad",
        &[x.into(), ints_arg(pads_last_first)],
        &[
            ("value", Arg::Float(value)),
            ("mode", Arg::Str(mode.into())),
        ],
    )
}

/// Expand (bidirectional broadcast to the shape).
pub(crate) fn expand(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let target = im.known(n, 1, "shape")?.exprs()?;
    let out = broadcast(&im.shape(v)?, &target)?;
    let x = im.graph(v)?;
    let r = if im.g.type_of(x)?.shape == out {
        im.with_scalar("add", x, 0.0)?
    } else {
        im.call("expand", &[x.into(), exprs_arg(&out)], &[])?
    };
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// Tile: concat copies along each repeated axis.
pub(crate) fn tile(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let reps = im.known(n, 1, "repeats")?.int_values()?;
    let mut x = im.graph(v)?;
    for (axis, &r) in reps.iter().enumerate() {
        if !(0..=4096).contains(&r) {
            return Err(format!("repeat {r} is not supported").into());
        }
        if r != 1 {
            let args: Vec<Arg> = (0..r).map(|_| x.into()).collect();
            x = im.call("concat", &args, &[("axis", Arg::Int(axis as i64))])?;
        }
    }
    Ok(vec![Val::Graph(x, elem_of(v))])
}

/// SpaceToDepth, DepthToSpace (modes DCR and CRD).
pub(crate) fn space_depth(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let s = im.shape(v)?;
    let [nb, c, h, w]: [Expr; 4] = s.try_into().map_err(|_| "needs a rank-4 input")?;
    let b = n.int("blocksize").ok_or("no blocksize")?;
    if !(1..=1 << 15).contains(&b) {
        return Err(format!("blocksize {b} is out of range").into());
    }
    let be = Expr::Int(b);
    let div = |x: &Expr| bin(IndexOp::Div, x, &be);
    let mul = |x: &Expr| bin(IndexOp::Mul, x, &be);
    let x = im.graph(v)?;
    let r = if n.op() == "SpaceToDepth" {
        let t = im.reshape(
            x,
            &[
                nb.clone(),
                c.clone(),
                div(&h),
                be.clone(),
                div(&w),
                be.clone(),
            ],
        )?;
        let crd = n.string("mode").as_deref() == Some("CRD");
        let t = im.permute(
            t,
            if crd {
                &[0, 1, 3, 5, 2, 4]
            } else {
                &[0, 3, 5, 1, 2, 4]
            },
        )?;
        im.reshape(
            t,
            &[
                nb,
                bin(IndexOp::Mul, &c, &Expr::Int(b * b)),
                div(&h),
                div(&w),
            ],
        )?
    } else {
        let cc = bin(IndexOp::Div, &c, &Expr::Int(b * b));
        let crd = n.string("mode").as_deref() == Some("CRD");
        let (shape, perm) = if crd {
            (
                vec![
                    nb.clone(),
                    cc.clone(),
                    be.clone(),
                    be.clone(),
                    h.clone(),
                    w.clone(),
                ],
                [0, 1, 4, 2, 5, 3],
            )
        } else {
            (
                vec![
                    nb.clone(),
                    be.clone(),
                    be.clone(),
                    cc.clone(),
                    h.clone(),
                    w.clone(),
                ],
                [0, 3, 4, 1, 5, 2],
            )
        };
        let t = im.reshape(x, &shape)?;
        let t = im.permute(t, &perm)?;
        im.reshape(t, &[nb, cc, mul(&h), mul(&w)])?
    };
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// GatherElements.
pub(crate) fn gather_elements(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let s = im.shape(v)?;
    let axis = norm_axis(n.int_or("axis", 0), s.len())?;
    let index = match n.input(1)? {
        Val::Known(k) => {
            let size = s[axis].as_int().ok_or("needs a static size on the axis")?;
            let vals: Vec<Expr> = k
                .int_values()?
                .into_iter()
                .map(|x| Expr::Int(if x < 0 { x + size } else { x }))
                .collect();
            let k = Known {
                data: KData::Int(vals),
                ..k.clone()
            };
            im.constant(&k, DType::I32)?
        }
        other => im.index(other, s[axis].as_int())?,
    };
    let x = im.graph(v)?;
    let r = im.call(
        "gather",
        &[x.into(), index.into(), Arg::Int(axis as i64)],
        &[],
    )?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// Trilu: `triu` / `tril` with the diagonal offset `k` known at import.
pub(crate) fn trilu(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let k = match n.opt(1) {
        Some(_) => *im
            .known(n, 1, "k")?
            .int_values()?
            .first()
            .ok_or("empty k")?,
        None => 0,
    };
    let op = if n.int_or("upper", 1) != 0 {
        "triu"
    } else {
        "tril"
    };
    let x = im.float(v)?;
    let r = im.call(op, &[x.into()], &[("diagonal", Arg::Int(k))])?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// CumSum (exclusive and reverse).
pub(crate) fn cumsum(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let rank = im.rank(v)?;
    let axis_v = im.known(n, 1, "axis")?.int_values()?;
    let axis = norm_axis(*axis_v.first().ok_or("no axis")?, rank)? as i64;
    let x = im.float(v)?;
    let reverse = n.int_or("reverse", 0) != 0;
    let flip = |im: &mut Im, t: Ref| im.call("flip", &[t.into(), Arg::Int(axis)], &[]);
    let src = if reverse { flip(im, x)? } else { x };
    let mut r = im.call("cumsum", &[src.into(), Arg::Int(axis)], &[])?;
    if n.int_or("exclusive", 0) != 0 {
        r = im.op("sub", &[r, src])?;
    }
    if reverse {
        r = flip(im, r)?;
    }
    let r = crate::ops::elementwise::wrap(im, r, elem_of(v))?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// OneHot: `off + (on - off) * (indices == k)` along a new axis, negative indices
/// counting from `depth`.
pub(crate) fn one_hot(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let idx = n.input(0)?;
    let ishape = im.shape(idx)?;
    let depth = *im
        .known(n, 1, "depth")?
        .float_values()?
        .first()
        .ok_or("no depth")? as i64;
    let values = im.known(n, 2, "values")?.float_values()?;
    let [off, on]: [f64; 2] = values.try_into().map_err(|_| "values must be [off, on]")?;
    if !(0..=crate::import::value::MAX_FOLDED as i64).contains(&depth) {
        return Err(format!("depth {depth} is out of range").into());
    }
    let rank = ishape.len() + 1;
    let axis = norm_axis(n.int_or("axis", -1), rank)?;
    if let Val::Graph(r, e) = idx
        && e.is_int()
        && im.g.type_of(*r)?.dtype == DType::I32
    {
        // i32 indices: uop's one_hot (class axis last; an out-of-range index
        // gives a row of zeros, ONNX's all-`off` row).
        let i = im.index(idx, Some(depth))?;
        let oh = im.call("one_hot", &[i.into(), Arg::Int(depth)], &[])?;
        let r = im.with_scalar("mul", oh, on - off)?;
        let r = im.with_scalar("add", r, off)?;
        let mut perm: Vec<usize> = (0..rank - 1).collect();
        perm.insert(axis, rank - 1);
        let r = im.permute(r, &perm)?;
        return Ok(vec![Val::Graph(r, elem_of(n.input(2)?))]);
    }
    let x = im.float(idx)?;
    let neg = im.with_scalar("lt", x, 0.0)?;
    let wrapped = im.with_scalar("add", x, depth as f64)?;
    let x = im.op("where", &[neg, wrapped, x])?;
    let mut dims = ishape.clone();
    dims.insert(axis, Expr::Int(1));
    let x = im.reshape(x, &dims)?;
    let mut kshape = vec![1usize; rank];
    kshape[axis] = depth.max(0) as usize;
    let ks = Known {
        elem: crate::data::ElemType::Float,
        shape: kshape,
        data: KData::Float((0..depth).map(|k| k as f64).collect()),
    };
    let k = im.constant(&ks, im.env.float)?;
    let hit = im.op("eq", &[x, k])?;
    let r = im.with_scalar("mul", hit, on - off)?;
    let r = im.with_scalar("add", r, off)?;
    Ok(vec![Val::Graph(r, elem_of(n.input(2)?))])
}
