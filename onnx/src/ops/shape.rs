//! Shape ops and import-time folding: Constant, Shape, Size, ConstantOfShape, Range,
//! Cast, and Reshape / Squeeze / Unsqueeze / Flatten / Concat / Gather, which fold
//! when their data is known at import (the integer shape arithmetic every exporter
//! writes, over symbolic sizes) and become `reshape`, `concat`, `index_select`
//! otherwise.

use uop_codegen::index::{Expr, IndexOp};
use uop_graph::{Arg, Ref};

use crate::data::{ElemType, HostTensor};
use crate::import::value::{KData, Known, Val, bin, norm_axis, product, strides};
use crate::import::{CResult, Im, NodeIn, exprs_arg};

use super::elementwise::elem_of;

/// Constant.
pub(crate) fn constant(_im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    if let Some(t) = n.tensor("value") {
        let h = HostTensor::from_proto(t)?;
        return Ok(vec![Val::Known(Known::from_host(&h))]);
    }
    let k = if let Some(v) = n.ints("value_ints") {
        Known::ints(ElemType::Int64, v.into_iter().map(Expr::Int).collect())
    } else if let Some(v) = n.floats("value_floats") {
        Known {
            elem: ElemType::Float,
            shape: vec![v.len()],
            data: KData::Float(v),
        }
    } else if let Some(v) = n.int("value_int") {
        Known {
            elem: ElemType::Int64,
            shape: vec![],
            data: KData::Int(vec![Expr::Int(v)]),
        }
    } else if n.attr_names().any(|a| a == "value_float") {
        Known {
            elem: ElemType::Float,
            shape: vec![],
            data: KData::Float(vec![n.float_or("value_float", 0.0)]),
        }
    } else {
        let attr = n.attr_names().next().unwrap_or("none").to_string();
        return Err(format!("attribute `{attr}` is not supported").into());
    };
    Ok(vec![Val::Known(k)])
}

/// Shape (with start / end).
pub(crate) fn shape(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let s = im.shape(n.input(0)?)?;
    let r = s.len() as i64;
    let clamp = |v: i64| (if v < 0 { v.saturating_add(r) } else { v }).clamp(0, r) as usize;
    let start = clamp(n.int_or("start", 0));
    let end = clamp(n.int_or("end", r));
    let dims = s[start..end.max(start)].to_vec();
    Ok(vec![Val::Known(Known::ints(ElemType::Int64, dims))])
}

/// Size.
pub(crate) fn size(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let s = im.shape(n.input(0)?)?;
    Ok(vec![Val::Known(Known {
        elem: ElemType::Int64,
        shape: vec![],
        data: KData::Int(vec![product(&s)]),
    })])
}

/// ConstantOfShape.
pub(crate) fn constant_of_shape(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let dims = im.known(n, 0, "shape")?.exprs()?;
    let (elem, value) = match n.tensor("value") {
        Some(t) => {
            let h = HostTensor::from_proto(t)?;
            let v = Known::from_host(&h).float_values()?;
            (h.elem, *v.first().ok_or("`value` is empty")?)
        }
        None => (ElemType::Float, 0.0),
    };
    if let Some(shape) = dims
        .iter()
        .map(|d| d.as_int().and_then(|x| usize::try_from(x).ok()))
        .collect::<Option<Vec<_>>>()
    {
        let count = crate::import::value::folded_count(&shape)?;
        let data = if elem.is_float() {
            KData::Float(vec![value; count])
        } else {
            KData::Int(vec![Expr::Int(value as i64); count])
        };
        return Ok(vec![Val::Known(Known { elem, shape, data })]);
    }
    let one = Known {
        elem,
        shape: vec![1; dims.len()],
        data: KData::Float(vec![value]),
    };
    let c = im.constant(&one, im.env.float)?;
    let r = im.call("expand", &[c.into(), exprs_arg(&dims)], &[])?;
    Ok(vec![Val::Graph(r, elem)])
}

/// Range (of values known at import).
pub(crate) fn range(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let start = im.known(n, 0, "start")?;
    let limit = im.known(n, 1, "limit")?;
    let delta = im.known(n, 2, "delta")?;
    let elem = start.elem;
    let (s, l, d) = (
        one(&start.float_values()?)?,
        one(&limit.float_values()?)?,
        one(&delta.float_values()?)?,
    );
    if d == 0.0 {
        return Err("delta is 0".into());
    }
    let count = ((l - s) / d).ceil().max(0.0);
    if count.is_nan() || count > crate::import::value::MAX_FOLDED as f64 {
        return Err(format!("{count} elements are too many").into());
    }
    let values: Vec<f64> = (0..count as usize).map(|k| s + k as f64 * d).collect();
    let data = if elem.is_float() {
        KData::Float(values)
    } else {
        KData::Int(values.iter().map(|&x| Expr::Int(x as i64)).collect())
    };
    Ok(vec![Val::Known(Known {
        elem,
        shape: vec![count as usize],
        data,
    })])
}

fn one(v: &[f64]) -> CResult<f64> {
    match v {
        [x] => Ok(*x),
        _ => Err(format!("expected one value, got {}", v.len()).into()),
    }
}

/// Cast: of known tensors; of graph values between the float type and bool.
pub(crate) fn cast(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let to = ElemType::from_code(n.int_or("to", 0) as i32)?;
    cast_to(im, n.input(0)?, to)
}

/// CastLike: Cast to the element type of input 1.
pub(crate) fn cast_like(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    cast_to(im, n.input(0)?, elem_of(n.input(1)?))
}

fn cast_to(im: &mut Im, v: &Val, to: ElemType) -> CResult<Vec<Val>> {
    match v {
        Val::Known(c) => {
            let data = match (&c.data, to.is_float()) {
                (KData::Float(v), true) => KData::Float(v.clone()),
                (KData::Int(_), true) => KData::Float(c.float_values()?),
                (KData::Float(v), false) if to == ElemType::Bool => {
                    KData::Int(v.iter().map(|&x| Expr::Int(i64::from(x != 0.0))).collect())
                }
                (KData::Float(v), false) => {
                    KData::Int(v.iter().map(|&x| Expr::Int(x.trunc() as i64)).collect())
                }
                (KData::Int(_), false) if to == ElemType::Bool => KData::Int(
                    c.int_values()?
                        .iter()
                        .map(|&x| Expr::Int(i64::from(x != 0)))
                        .collect(),
                ),
                (KData::Int(v), false) => KData::Int(v.clone()),
            };
            Ok(vec![Val::Known(Known {
                elem: to,
                shape: c.shape.clone(),
                data,
            })])
        }
        Val::Graph(r, from) => {
            let r = *r;
            if to == *from || (to.is_float() && from.is_float()) {
                return Ok(vec![Val::Graph(r, to)]);
            }
            if to == ElemType::Bool && !from.is_int() {
                let b = im.with_scalar("ne", r, 0.0)?;
                return Ok(vec![Val::Graph(b, to)]);
            }
            if to == ElemType::Bool {
                let x = im.float(v)?;
                let b = im.with_scalar("ne", x, 0.0)?;
                return Ok(vec![Val::Graph(b, to)]);
            }
            if to.is_int() && from.is_float() {
                // Toward zero, as ONNX (and C) convert; out of range saturates, NaN
                // gives 0.
                let i = im.call("cast", &[r.into(), Arg::Str("i32".into())], &[])?;
                return Ok(vec![Val::Graph(i, to)]);
            }
            if to.is_float() {
                return Ok(vec![Val::Graph(im.float(v)?, to)]);
            }
            if let (Some((f, fs)), Some((t, ts))) = (from.bits(), to.bits())
                && (t < f || (fs && !ts))
            {
                // Two's complement: the value wrapped into the target's range, where
                // the float type holds the wrap exactly.
                if t <= 16 || (t == 32 && im.env.float == uop_codegen::uop::DType::F64) {
                    let x = im.float(v)?;
                    let w = crate::ops::elementwise::wrap(im, x, to)?;
                    return Ok(vec![Val::Graph(w, to)]);
                }
                if fs && !ts {
                    return Err(format!(
                        "a cast from {} to {} at run time is not supported in an {} graph \
                         (negative values would not be exact)",
                        from.name(),
                        to.name(),
                        im.env.float
                    )
                    .into());
                }
                // Narrowing to 32 bits in f32, or from 64: the graph's values are i32
                // already (integer data must fit i32).
            }
            // Bool or integer to a wider integer: the same values.
            Ok(vec![Val::Graph(r, to)])
        }
    }
}

/// Reshape.
pub(crate) fn reshape(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let spec = if im.opset() < 5 {
        n.ints("shape")
            .unwrap_or_default()
            .into_iter()
            .map(Expr::Int)
            .collect()
    } else {
        im.known(n, 1, "shape")?.exprs()?
    };
    let input = im.shape(v)?;
    let allowzero = n.int_or("allowzero", 0) != 0;
    let mut dims = Vec::with_capacity(spec.len());
    for (k, d) in spec.iter().enumerate() {
        if d.as_int() == Some(0) && !allowzero {
            dims.push(input.get(k).cloned().ok_or(format!(
                "shape[{k}] = 0 copies a dimension the input does not have"
            ))?);
        } else {
            dims.push(d.clone());
        }
    }
    if let Some(k) = dims.iter().position(|d| d.as_int() == Some(-1)) {
        let others: Vec<Expr> = dims
            .iter()
            .enumerate()
            .filter(|(j, _)| *j != k)
            .map(|(_, d)| d.clone())
            .collect();
        dims[k] = inferred(&input, &others);
    }
    reshaped(im, v, dims)
}

/// The size a `-1` stands for: the input's element count over the other sizes, with
/// the sizes both share cancelled first (so `[B, 3, 4] → [B, -1]` gives `12`, not
/// `12 * B / B`).
fn inferred(input: &[Expr], others: &[Expr]) -> Expr {
    let mut num: Vec<Expr> = input.to_vec();
    let mut den = Vec::new();
    for d in others {
        match num.iter().position(|x| x == d) {
            Some(k) => {
                num.remove(k);
            }
            None => den.push(d.clone()),
        }
    }
    if den.is_empty() {
        product(&num)
    } else {
        bin(IndexOp::Div, &product(&num), &product(&den))
    }
}

/// `v` in shape `dims` (folded when `v` is known).
pub(crate) fn reshaped(im: &mut Im, v: &Val, dims: Vec<Expr>) -> CResult<Vec<Val>> {
    if let Val::Known(c) = v {
        let shape = dims
            .iter()
            .map(|d| d.as_int().and_then(|x| usize::try_from(x).ok()))
            .collect::<Option<Vec<_>>>();
        if let Some(shape) = shape.filter(|s| s.iter().product::<usize>() == c.len()) {
            return Ok(vec![Val::Known(Known { shape, ..c.clone() })]);
        }
    }
    let x = im.graph(v)?;
    let r = im.reshape(x, &dims)?;
    Ok(vec![Val::Graph(r, elem_of(v))])
}

/// The `axes` of Squeeze/Unsqueeze: an attribute before opset 13, the
/// optional input 1 from then on.
fn axes_arg(im: &mut Im, n: &NodeIn) -> CResult<Option<Vec<i64>>> {
    if im.opset() < 13 {
        Ok(n.ints("axes"))
    } else {
        im.opt_ints(n, 1, "axes")
    }
}

/// Squeeze.
pub(crate) fn squeeze(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let s = im.shape(v)?;
    let axes = axes_arg(im, n)?;
    let axes: Vec<usize> = match axes {
        Some(a) if !a.is_empty() => a
            .iter()
            .map(|&x| norm_axis(x, s.len()))
            .collect::<Result<_, _>>()?,
        _ => (0..s.len()).filter(|&k| s[k].as_int() == Some(1)).collect(),
    };
    for &a in &axes {
        if s[a].as_int() != Some(1) {
            return Err(format!("axis {a} has size {}, not 1", s[a]).into());
        }
    }
    let dims = s
        .iter()
        .enumerate()
        .filter(|(k, _)| !axes.contains(k))
        .map(|(_, d)| d.clone())
        .collect();
    reshaped(im, v, dims)
}

/// Unsqueeze.
pub(crate) fn unsqueeze(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let s = im.shape(v)?;
    let axes = axes_arg(im, n)?;
    let axes = axes.ok_or("no axes")?;
    let rank = s.len() + axes.len();
    let mut new: Vec<usize> = axes
        .iter()
        .map(|&a| norm_axis(a, rank))
        .collect::<Result<_, _>>()?;
    new.sort_unstable();
    let mut it = s.into_iter();
    let dims = (0..rank)
        .map(|k| {
            if new.contains(&k) {
                Some(Expr::Int(1))
            } else {
                it.next()
            }
        })
        .collect::<Option<Vec<_>>>()
        .ok_or("repeated axes")?;
    reshaped(im, v, dims)
}

/// Flatten.
pub(crate) fn flatten(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let s = im.shape(v)?;
    let r = s.len() as i64;
    let mut axis = n.int_or("axis", 1);
    if axis < 0 {
        axis = axis.saturating_add(r);
    }
    if !(0..=r).contains(&axis) {
        return Err(format!("axis {} is out of range for rank {r}", n.int_or("axis", 1)).into());
    }
    let a = axis as usize;
    reshaped(im, v, vec![product(&s[..a]), product(&s[a..])])
}

/// Concat.
pub(crate) fn concat(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let vals: Vec<&Val> = n.inputs.iter().flatten().collect();
    let first = *vals.first().ok_or("needs an input")?;
    let rank = im.rank(first)?;
    let axis = norm_axis(n.int("axis").ok_or("no axis")?, rank)?;
    let known: Option<Vec<&Known>> = vals
        .iter()
        .map(|v| match v {
            Val::Known(c) => Some(c),
            Val::Graph(..) => None,
        })
        .collect();
    if let Some(ks) = known.filter(|ks| {
        ks.iter().all(|k| matches!(k.data, KData::Int(_)))
            || ks.iter().all(|k| matches!(k.data, KData::Float(_)))
    }) {
        return Ok(vec![Val::Known(concat_known(&ks, axis)?)]);
    }
    let mut refs: Vec<Arg> = Vec::new();
    for v in &vals {
        let s = im.shape(v)?;
        if s.get(axis).and_then(Expr::as_int) == Some(0) {
            continue;
        }
        // In the float type: `concat` computes (integers are exact there).
        refs.push(im.float(v)?.into());
    }
    if refs.len() == 1 {
        return Ok(vec![(*first).clone()]);
    }
    let r = im.call("concat", &refs, &[("axis", Arg::Int(axis as i64))])?;
    Ok(vec![Val::Graph(r, elem_of(first))])
}

fn concat_known(ks: &[&Known], axis: usize) -> CResult<Known> {
    let first = ks[0];
    let mut shape = first.shape.clone();
    shape[axis] = ks.iter().map(|k| k.shape[axis]).sum();
    let outer: usize = shape[..axis].iter().product();
    let mut ints = Vec::new();
    let mut floats = Vec::new();
    for o in 0..outer {
        for k in ks {
            let inner: usize = k.shape[axis..].iter().product();
            match &k.data {
                KData::Int(v) => ints.extend_from_slice(&v[o * inner..(o + 1) * inner]),
                KData::Float(v) => floats.extend_from_slice(&v[o * inner..(o + 1) * inner]),
            }
        }
    }
    let data = if matches!(first.data, KData::Int(_)) {
        KData::Int(ints)
    } else {
        KData::Float(floats)
    };
    Ok(Known {
        elem: first.elem,
        shape,
        data,
    })
}

/// Gather of one position known at import only symbolically (a Loop's iteration
/// counter, imported as a `scan` index `$t`): a `reindex` reading position `e` of
/// `axis`, which goes. A position outside the axis reads 0.
fn gather_symbolic(im: &mut Im, data: &Val, axis: usize, e: &Expr) -> CResult<Vec<Val>> {
    let shape = im.shape(data)?;
    let mut dims = shape.clone();
    dims.remove(axis);
    let index: Vec<Expr> = (0..shape.len())
        .map(|d| match d.cmp(&axis) {
            std::cmp::Ordering::Less => Expr::index(d),
            std::cmp::Ordering::Equal => e.clone(),
            std::cmp::Ordering::Greater => Expr::index(d - 1),
        })
        .collect();
    let x = im.graph(data)?;
    let r = im.call(
        "reindex",
        &[x.into(), exprs_arg(&dims), exprs_arg(&index)],
        &[],
    )?;
    Ok(vec![Val::Graph(r, elem_of(data))])
}

/// Gather.
pub(crate) fn gather(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let (data, idx) = (n.input(0)?, n.input(1)?);
    let s = im.shape(data)?;
    let axis = norm_axis(n.int_or("axis", 0), s.len())?;
    let size = s[axis].as_int();
    if let Val::Known(k) = idx
        && k.shape.is_empty()
        && let KData::Int(v) = &k.data
        && let [e] = &v[..]
        && e.as_int().is_none()
    {
        return gather_symbolic(im, data, axis, e);
    }
    let known_idx = match idx {
        Val::Known(k) => {
            let mut v = k.int_values()?;
            for x in &mut v {
                if *x < 0 {
                    *x += size.ok_or("negative indices need a static size")?;
                }
                if size.is_some_and(|sz| *x < 0 || *x >= sz) {
                    return Err(format!("index {x} is out of range").into());
                }
            }
            Some((k.shape.clone(), v))
        }
        Val::Graph(..) => None,
    };
    if let (Val::Known(d), Some((ishape, iv))) = (data, &known_idx) {
        return Ok(vec![Val::Known(gather_known(d, axis, ishape, iv))]);
    }
    let ishape: Vec<Expr> = im.shape(idx)?;
    let index: Ref = match &known_idx {
        Some((sh, v)) => {
            let k = Known {
                elem: ElemType::Int64,
                shape: vec![v.len()],
                data: KData::Int(v.iter().map(|&x| Expr::Int(x)).collect()),
            };
            let _ = sh;
            im.constant(&k, uop_codegen::uop::DType::I32)?
        }
        None => {
            let r = im.index(idx, size)?;
            let flat = product(&ishape);
            im.reshape(r, &[flat])?
        }
    };
    let x = im.graph(data)?;
    let sel = im.call(
        "index_select",
        &[x.into(), index.into(), Arg::Int(axis as i64)],
        &[],
    )?;
    let mut out: Vec<Expr> = s[..axis].to_vec();
    out.extend(ishape);
    out.extend_from_slice(&s[axis + 1..]);
    let r = im.reshape(sel, &out)?;
    Ok(vec![Val::Graph(r, elem_of(data))])
}

fn gather_known(d: &Known, axis: usize, ishape: &[usize], idx: &[i64]) -> Known {
    let outer: usize = d.shape[..axis].iter().product();
    let inner: usize = d.shape[axis + 1..].iter().product();
    let st = strides(&d.shape);
    let step = st.get(axis).copied().unwrap_or(1);
    let mut shape = d.shape[..axis].to_vec();
    shape.extend_from_slice(ishape);
    shape.extend_from_slice(&d.shape[axis + 1..]);
    let mut pos = Vec::new();
    for o in 0..outer {
        for &i in idx {
            for j in 0..inner {
                pos.push(o * d.shape[axis] * inner + i as usize * step + j);
            }
        }
    }
    let data = match &d.data {
        KData::Int(v) => KData::Int(pos.iter().map(|&p| v[p].clone()).collect()),
        KData::Float(v) => KData::Float(pos.iter().map(|&p| v[p]).collect()),
    };
    Known {
        elem: d.elem,
        shape,
        data,
    }
}
