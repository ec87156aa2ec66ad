//! Neural-network ops: MatMul, Gemm, Conv / ConvTranspose (1-D and 2-D), pooling
//! (2-D), global pooling, and the normalizations (Batch, Instance, Group, Layer,
//! RMS, Lp, MeanVariance).

use uop_codegen::index::Expr;
use uop_graph::{Arg, Ref};

use crate::import::value::{KData, Known, Val, norm_axis};
use crate::import::{CResult, Im, NodeIn, ints_arg};

use super::movement::pad_ref;

/// MatMul.
pub(crate) fn matmul(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let (a, b) = (im.float(n.input(0)?)?, im.float(n.input(1)?)?);
    let r = im.op("matmul", &[a, b])?;
    Ok(vec![im.fval(r)])
}

/// Gemm: `alpha * A' B' + beta * C`.
pub(crate) fn gemm(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let mut a = im.float(n.input(0)?)?;
    let mut b = im.float(n.input(1)?)?;
    if n.int_or("transA", 0) != 0 {
        a = im.permute(a, &[1, 0])?;
    }
    if n.int_or("transB", 0) != 0 {
        b = im.permute(b, &[1, 0])?;
    }
    let mut r = im.op("matmul", &[a, b])?;
    let alpha = n.float_or("alpha", 1.0);
    if alpha != 1.0 {
        r = im.with_scalar("mul", r, alpha)?;
    }
    if let Some(c) = n.opt(2) {
        let mut c = im.float(c)?;
        let beta = n.float_or("beta", 1.0);
        if beta != 1.0 {
            c = im.with_scalar("mul", c, beta)?;
        }
        r = im.op("add", &[r, c])?;
    }
    Ok(vec![im.fval(r)])
}

/// Spatial attributes of Conv and the pools, resolved against the input's spatial
/// sizes: pads per axis (begin, end) with `auto_pad` applied.
struct Window {
    kernel: Vec<i64>,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    pads: Vec<(i64, i64)>,
}

fn window(n: &NodeIn, spatial: &[Expr], kernel: Vec<i64>) -> CResult<Window> {
    let d = kernel.len();
    if spatial.len() != d {
        return Err(format!("a {d}-D kernel on {} spatial axes", spatial.len()).into());
    }
    if let Some(k) = kernel.iter().find(|&&k| !(1..=1 << 31).contains(&k)) {
        return Err(format!("kernel size {k} is out of range").into());
    }
    let strides = n.spatial("strides", d, 1, 1)?;
    let dilations = n.spatial("dilations", d, 1, 1)?;
    let auto = n.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    let pads = match auto.as_str() {
        "NOTSET" => {
            let p = n.spatial("pads", 2 * d, 0, 0)?;
            (0..d).map(|k| (p[k], p[k + d])).collect()
        }
        "VALID" => vec![(0, 0); d],
        "SAME_UPPER" | "SAME_LOWER" => (0..d)
            .map(|k| {
                let size = spatial[k]
                    .as_int()
                    .ok_or("auto_pad needs static spatial sizes")?;
                let out = (size + strides[k] - 1) / strides[k];
                let eff = (kernel[k] - 1) * dilations[k] + 1;
                let total = ((out - 1) * strides[k] + eff - size).max(0);
                let small = total / 2;
                Ok(if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                })
            })
            .collect::<CResult<Vec<_>>>()?,
        other => return Err(format!("auto_pad `{other}` is not supported").into()),
    };
    Ok(Window {
        kernel,
        strides,
        dilations,
        pads,
    })
}

impl Window {
    fn symmetric(&self) -> bool {
        self.pads.iter().all(|(a, b)| a == b)
    }

    /// Symmetric pads that uop's pooling takes (at most half the kernel).
    fn poolable(&self) -> bool {
        self.symmetric()
            && self
                .pads
                .iter()
                .zip(&self.kernel)
                .all(|(p, k)| 2 * p.0 <= *k)
    }

    /// uop `pad` list (last axis first) for the spatial axes.
    fn pad_list(&self) -> Vec<i64> {
        self.pads.iter().rev().flat_map(|&(a, b)| [a, b]).collect()
    }
}

/// Conv (1-D and 2-D; asymmetric pads become a `pad` first).
pub(crate) fn conv(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let xv = n.input(0)?;
    let xs = im.shape(xv)?;
    let ws = im.static_shape(n.input(1)?)?;
    if ws.len() < 3 || ws.len() != xs.len() {
        return Err("the weight's rank does not match the input's".into());
    }
    let kernel = n
        .ints("kernel_shape")
        .unwrap_or_else(|| ws[2..].iter().map(|&k| k as i64).collect());
    let w = window(n, &xs[2..], kernel)?;
    // (xs has the weight's rank, at least 3: checked above.)
    let op = match w.kernel.len() {
        1 => "conv1d",
        2 => "conv2d",
        k => return Err(format!("{k}-D convolution is not supported (1-D and 2-D are)").into()),
    };
    let mut x = im.float(xv)?;
    let padding: Vec<i64> = if w.symmetric() {
        w.pads.iter().map(|p| p.0).collect()
    } else {
        x = pad_ref(im, x, &w.pad_list(), 0.0, "constant")?;
        vec![0; w.kernel.len()]
    };
    let wt = im.float(n.input(1)?)?;
    let mut args: Vec<Arg> = vec![x.into(), wt.into()];
    if let Some(b) = n.opt(2) {
        args.push(im.float(b)?.into());
    }
    let r = im.call(
        op,
        &args,
        &[
            ("stride", ints_arg(&w.strides)),
            ("padding", ints_arg(&padding)),
            ("dilation", ints_arg(&w.dilations)),
            ("groups", Arg::Int(n.int_or("group", 1))),
        ],
    )?;
    Ok(vec![im.fval(r)])
}

/// ConvTranspose (2-D).
pub(crate) fn conv_transpose(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let xv = n.input(0)?;
    let xs = im.static_shape(xv)?;
    let ws = im.static_shape(n.input(1)?)?;
    if xs.len() != 4 || ws.len() != 4 {
        return Err("only 2-D ConvTranspose is supported".into());
    }
    let kernel = match n.ints("kernel_shape") {
        Some(_) => n.spatial("kernel_shape", 2, 1, 1)?,
        None => ws[2..].iter().map(|&k| k as i64).collect(),
    };
    let strides = n.spatial("strides", 2, 1, 1)?;
    let dil = n.spatial("dilations", 2, 1, 1)?;
    let mut out_pad = n.spatial("output_padding", 2, 0, 0)?;
    let auto = n.string("auto_pad").unwrap_or_else(|| "NOTSET".into());
    let full: Vec<i64> = (0..2)
        .map(|k| (xs[k + 2] as i64 - 1) * strides[k] + (kernel[k] - 1) * dil[k] + 1 + out_pad[k])
        .collect();
    let pads: Vec<(i64, i64)> = if let Some(os) = n.ints("output_shape") {
        let os = &os[os.len().saturating_sub(2)..];
        if os.len() != 2 || os.iter().any(|&s| !(0..=1 << 31).contains(&s)) {
            return Err("output_shape needs the two spatial sizes".into());
        }
        (0..2)
            .map(|k| {
                let total = full[k] - os[k];
                if total < 0 {
                    out_pad[k] -= total;
                    return (0, 0);
                }
                if auto == "SAME_LOWER" {
                    (total - total / 2, total / 2)
                } else {
                    (total / 2, total - total / 2)
                }
            })
            .collect()
    } else if auto == "SAME_UPPER" || auto == "SAME_LOWER" {
        (0..2)
            .map(|k| {
                let total = full[k] - xs[k + 2] as i64 * strides[k];
                if auto == "SAME_UPPER" {
                    (total / 2, total - total / 2)
                } else {
                    (total - total / 2, total / 2)
                }
            })
            .collect()
    } else {
        let p = n.spatial("pads", 4, 0, 0)?;
        vec![(p[0], p[2]), (p[1], p[3])]
    };
    let x = im.float(xv)?;
    let wt = im.float(n.input(1)?)?;
    let mut args: Vec<Arg> = vec![x.into(), wt.into()];
    if let Some(b) = n.opt(2) {
        args.push(im.float(b)?.into());
    }
    // uop pads symmetrically: give the smaller pad and crop the rest after.
    let sym: Vec<i64> = pads.iter().map(|&(a, b)| a.min(b)).collect();
    let extra: Vec<(i64, i64)> = pads
        .iter()
        .zip(&sym)
        .map(|(&(a, b), &s)| (a - s, b - s))
        .collect();
    let r = im.call(
        "conv_transpose2d",
        &args,
        &[
            ("stride", ints_arg(&strides)),
            ("padding", ints_arg(&sym)),
            ("output_padding", ints_arg(&out_pad)),
            ("dilation", ints_arg(&dil)),
            ("groups", Arg::Int(n.int_or("group", 1))),
        ],
    )?;
    let r = if extra.iter().any(|&e| e != (0, 0)) {
        let crop: Vec<i64> = extra.iter().rev().flat_map(|&(a, b)| [-a, -b]).collect();
        pad_ref(im, r, &crop, 0.0, "constant")?
    } else {
        r
    };
    Ok(vec![im.fval(r)])
}

/// MaxPool, AveragePool (2-D, no ceil_mode; asymmetric pads by padding first).
pub(crate) fn pool(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let xv = n.input(0)?;
    let xs = im.shape(xv)?;
    let kernel = n.ints("kernel_shape").ok_or("no kernel_shape")?;
    if !(1..=2).contains(&kernel.len()) || xs.len() != kernel.len() + 2 {
        return Err(format!(
            "{}-D pooling is not supported (1-D and 2-D are)",
            kernel.len()
        )
        .into());
    }
    if n.int_or("ceil_mode", 0) != 0 {
        return Err("ceil_mode is not supported".into());
    }
    if n.wants_output(1) {
        return Err("the Indices output is not supported".into());
    }
    let mut w = window(n, &xs[2..], kernel)?;
    let max = n.op() == "MaxPool";
    if !max && w.dilations.iter().any(|&d| d != 1) {
        return Err("AveragePool with dilations is not supported".into());
    }
    let mut x = im.float(xv)?;
    let one_d = w.kernel.len() == 1;
    if one_d {
        // [N, C, L] pooled as [N, C, 1, L] with a 1-high window.
        let mut lifted = xs.clone();
        lifted.insert(2, Expr::Int(1));
        x = im.reshape(x, &lifted)?;
        w = Window {
            kernel: vec![1, w.kernel[0]],
            strides: vec![1, w.strides[0]],
            dilations: vec![1, w.dilations[0]],
            pads: vec![(0, 0), w.pads[0]],
        };
    }
    let base = |im: &mut Im, x: Ref, padding: &[i64]| -> CResult<Ref> {
        let mut attrs = vec![
            ("stride", ints_arg(&w.strides)),
            ("padding", ints_arg(padding)),
        ];
        if max {
            attrs.push(("dilation", ints_arg(&w.dilations)));
            im.call("max_pool2d", &[x.into(), ints_arg(&w.kernel)], &attrs)
        } else {
            let include = n.int_or("count_include_pad", 0) != 0;
            attrs.push(("count_include_pad", Arg::Bool(include)));
            im.call("avg_pool2d", &[x.into(), ints_arg(&w.kernel)], &attrs)
        }
    };
    let r = if w.poolable() {
        base(im, x, &w.pads.iter().map(|p| p.0).collect::<Vec<_>>())?
    } else if max {
        let p = pad_ref(im, x, &w.pad_list(), f64::NEG_INFINITY, "constant")?;
        base(im, p, &[0, 0])?
    } else {
        let include = n.int_or("count_include_pad", 0) != 0;
        let p = pad_ref(im, x, &w.pad_list(), 0.0, "constant")?;
        let sums = base(im, p, &[0, 0])?;
        if include {
            sums
        } else {
            let zero = im.with_scalar("mul", x, 0.0)?;
            let ones = im.with_scalar("add", zero, 1.0)?;
            let q = pad_ref(im, ones, &w.pad_list(), 0.0, "constant")?;
            let counts = base(im, q, &[0, 0])?;
            im.op("div", &[sums, counts])?
        }
    };
    let r = if one_d {
        let mut s = im.g.type_of(r)?.shape.clone();
        s.remove(2);
        im.reshape(r, &s)?
    } else {
        r
    };
    Ok(vec![im.fval(r)])
}

/// GlobalAveragePool, GlobalMaxPool.
pub(crate) fn global_pool(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let rank = im.rank(v)?;
    let x = im.float(v)?;
    let op = if n.op() == "GlobalMaxPool" {
        "max"
    } else {
        "mean"
    };
    let axes: Vec<i64> = (2..rank as i64).collect();
    let r = im.call(
        op,
        &[x.into()],
        &[("axis", ints_arg(&axes)), ("keepdim", Arg::Bool(true))],
    )?;
    Ok(vec![im.fval(r)])
}

/// `v` reshaped to broadcast along axis 1 of a rank-`rank` tensor ([C] → [C, 1, ...]).
fn per_channel(im: &mut Im, v: &Val, rank: usize) -> CResult<Ref> {
    let r = im.float(v)?;
    let c = im.shape(v)?;
    let mut dims = c.clone();
    dims.extend(std::iter::repeat_n(
        Expr::Int(1),
        rank.saturating_sub(1 + c.len()),
    ));
    im.reshape(r, &dims)
}

/// `(x - mean) / sqrt(var + eps)` over `axes` (biased variance).
fn normalize(im: &mut Im, x: Ref, axes: &[i64], eps: f64) -> CResult<Ref> {
    let a = ints_arg(axes);
    let keep = ("keepdim", Arg::Bool(true));
    let mean = im.call("mean", &[x.into()], &[("axis", a.clone()), keep.clone()])?;
    let centered = im.op("sub", &[x, mean])?;
    let sq = im.op("mul", &[centered, centered])?;
    let var = im.call("mean", &[sq.into()], &[("axis", a), keep])?;
    let var = im.with_scalar("add", var, eps)?;
    let inv = im.op("rsqrt", &[var])?;
    im.op("mul", &[centered, inv])
}

/// BatchNormalization (inference), InstanceNormalization, GroupNormalization,
/// MeanVarianceNormalization.
pub(crate) fn norm(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let shape = im.shape(v)?;
    let rank = shape.len();
    let x = im.float(v)?;
    let eps = n.float_or("epsilon", 1e-5);
    let r = match n.op() {
        "BatchNormalization" if n.int_or("training_mode", 0) != 0 => {
            return batch_norm_training(im, n, x, rank, eps);
        }
        "BatchNormalization" => {
            if n.outputs_used() > 1 {
                return Err("running statistics are outputs only in training mode".into());
            }
            let scale = per_channel(im, n.input(1)?, rank)?;
            let bias = per_channel(im, n.input(2)?, rank)?;
            let mean = per_channel(im, n.input(3)?, rank)?;
            let var = per_channel(im, n.input(4)?, rank)?;
            let var = im.with_scalar("add", var, eps)?;
            let inv = im.op("rsqrt", &[var])?;
            let c = im.op("sub", &[x, mean])?;
            let c = im.op("mul", &[c, inv])?;
            let c = im.op("mul", &[c, scale])?;
            im.op("add", &[c, bias])?
        }
        "InstanceNormalization" => {
            let axes: Vec<i64> = (2..rank as i64).collect();
            let y = normalize(im, x, &axes, eps)?;
            let scale = per_channel(im, n.input(1)?, rank)?;
            let bias = per_channel(im, n.input(2)?, rank)?;
            let y = im.op("mul", &[y, scale])?;
            im.op("add", &[y, bias])?
        }
        "GroupNormalization" => {
            let groups = n.int("num_groups").ok_or("no num_groups")?;
            let c = shape
                .get(1)
                .and_then(Expr::as_int)
                .ok_or("needs a static channel count")?;
            if groups < 1 || c % groups != 0 {
                return Err(format!("{groups} groups do not divide {c} channels").into());
            }
            let mut g = vec![shape[0].clone(), Expr::Int(groups), Expr::Int(-1)];
            let t = im.reshape(x, &{
                let rest = crate::import::value::product(&shape[1..]);
                g[2] = crate::import::value::bin(
                    uop_codegen::index::IndexOp::Div,
                    &rest,
                    &Expr::Int(groups),
                );
                g
            })?;
            let y = normalize(im, t, &[2], eps)?;
            let y = im.reshape(y, &shape)?;
            let per_group = im.opset() < 21;
            let (scale, bias) = if per_group {
                let rep = c / groups;
                let s = expand_groups(im, n.input(1)?, rep)?;
                let b = expand_groups(im, n.input(2)?, rep)?;
                (s, b)
            } else {
                (n.input(1)?.clone(), n.input(2)?.clone())
            };
            let scale = per_channel(im, &scale, rank)?;
            let bias = per_channel(im, &bias, rank)?;
            let y = im.op("mul", &[y, scale])?;
            im.op("add", &[y, bias])?
        }
        _ => {
            let axes = n.ints("axes").unwrap_or_else(|| vec![0, 2, 3]);
            normalize(im, x, &axes, 1e-9)?
        }
    };
    Ok(vec![im.fval(r)])
}

/// BatchNormalization in training mode: normalized by the batch's statistics
/// (population variance), with the updated running mean and variance as outputs.
fn batch_norm_training(
    im: &mut Im,
    n: &NodeIn,
    x: Ref,
    rank: usize,
    eps: f64,
) -> CResult<Vec<Val>> {
    let axes: Vec<i64> = std::iter::once(0).chain(2..rank as i64).collect();
    let a = ints_arg(&axes);
    let keep = ("keepdim", Arg::Bool(true));
    let mean = im.call("mean", &[x.into()], &[("axis", a.clone()), keep.clone()])?;
    let centered = im.op("sub", &[x, mean])?;
    let sq = im.op("mul", &[centered, centered])?;
    let var = im.call("mean", &[sq.into()], &[("axis", a), keep])?;
    let inv = im.with_scalar("add", var, eps)?;
    let inv = im.op("rsqrt", &[inv])?;
    let scale = per_channel(im, n.input(1)?, rank)?;
    let bias = per_channel(im, n.input(2)?, rank)?;
    let y = im.op("mul", &[centered, inv])?;
    let y = im.op("mul", &[y, scale])?;
    let y = im.op("add", &[y, bias])?;
    let mut out = vec![im.fval(y)];
    let momentum = n.float_or("momentum", 0.9);
    for (k, batch) in [(3, mean), (4, var)] {
        let c = im.shape(n.input(k)?)?;
        let flat = im.reshape(batch, &c)?;
        let old = im.float(n.input(k)?)?;
        let old = im.with_scalar("mul", old, momentum)?;
        let new = im.with_scalar("mul", flat, 1.0 - momentum)?;
        let run = im.op("add", &[old, new])?;
        out.push(im.fval(run));
    }
    Ok(out)
}

/// A per-group [G] tensor known at import repeated to per-channel [G * rep].
fn expand_groups(im: &mut Im, v: &Val, rep: i64) -> CResult<Val> {
    let Val::Known(k) = v else {
        let _ = im;
        return Err("per-group scale and bias must be known at import".into());
    };
    let vals = k.float_values()?;
    let out: Vec<f64> = vals
        .iter()
        .flat_map(|&x| std::iter::repeat_n(x, rep as usize))
        .collect();
    Ok(Val::Known(Known {
        elem: k.elem,
        shape: vec![out.len()],
        data: KData::Float(out),
    }))
}

/// LayerNormalization (Mean and InvStdDev outputs composed), RMSNormalization.
pub(crate) fn layer_norm(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let shape = im.shape(v)?;
    let rank = shape.len();
    let first = norm_axis(n.int_or("axis", -1), rank)?;
    let axes: Vec<i64> = (first as i64..rank as i64).collect();
    let eps = n.float_or("epsilon", 1e-5);
    let x = im.float(v)?;
    let scale = im.float(n.input(1)?)?;
    let norm_shape = &shape[first..];
    let scale = broadcast_to(im, scale, norm_shape)?;
    if n.op() == "RMSNormalization" {
        let r = im.call(
            "rmsnorm",
            &[x.into(), scale.into()],
            &[("axis", ints_arg(&axes)), ("eps", Arg::Float(eps))],
        )?;
        return Ok(vec![im.fval(r)]);
    }
    let bias = match n.opt(2) {
        Some(b) => {
            let b = im.float(b)?;
            broadcast_to(im, b, norm_shape)?
        }
        None => im.with_scalar("mul", scale, 0.0)?,
    };
    let r = im.call(
        "layernorm",
        &[x.into(), scale.into(), bias.into()],
        &[("axis", ints_arg(&axes)), ("eps", Arg::Float(eps))],
    )?;
    let mut out = vec![im.fval(r)];
    if n.outputs_used() > 1 {
        let a = ints_arg(&axes);
        let keep = ("keepdim", Arg::Bool(true));
        let mean = im.call("mean", &[x.into()], &[("axis", a.clone()), keep.clone()])?;
        let c = im.op("sub", &[x, mean])?;
        let sq = im.op("mul", &[c, c])?;
        let var = im.call("mean", &[sq.into()], &[("axis", a), keep])?;
        let var = im.with_scalar("add", var, eps)?;
        let inv = im.op("rsqrt", &[var])?;
        out.push(im.fval(mean));
        out.push(im.fval(inv));
    }
    Ok(out)
}

/// `x` broadcast to `shape` when it is not already that shape.
fn broadcast_to(im: &mut Im, x: Ref, shape: &[Expr]) -> CResult<Ref> {
    if im.g.type_of(x)?.shape == shape {
        return Ok(x);
    }
    let list = uop_graph::Arg::List(shape.iter().cloned().map(uop_graph::Item::Expr).collect());
    im.call("expand", &[x.into(), list], &[])
}

/// LpNormalization.
pub(crate) fn lp_norm(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?;
    let rank = im.rank(v)?;
    let axis = norm_axis(n.int_or("axis", -1), rank)? as i64;
    let x = im.float(v)?;
    let p = n.int_or("p", 2);
    let t = match p {
        1 => im.op("abs", &[x])?,
        2 => im.op("mul", &[x, x])?,
        _ => return Err(format!("p = {p} is not supported (1 or 2)").into()),
    };
    let s = im.call(
        "sum",
        &[t.into()],
        &[("axis", Arg::Int(axis)), ("keepdim", Arg::Bool(true))],
    )?;
    let norm = if p == 2 { im.op("sqrt", &[s])? } else { s };
    let zero = im.with_scalar("eq", norm, 0.0)?;
    let q = im.op("div", &[x, norm])?;
    let z = im.with_scalar("mul", x, 0.0)?;
    let r = im.op("where", &[zero, z, q])?;
    Ok(vec![im.fval(r)])
}
