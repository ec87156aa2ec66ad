//! Element-wise ops: arithmetic (folded over index expressions when both sides are
//! integers known at import), comparisons and logic on 0/1 values, unary functions,
//! and the activations composed from them.

use uop_codegen::index::{Expr, IndexOp};
use uop_graph::{Arg, Ref};

use crate::data::ElemType;
use crate::import::value::{KData, Known, Val, bin, broadcast};
use crate::import::{CResult, Im, NodeIn};

/// Add, Sub, Mul, Div, Pow.
pub(crate) fn arith(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let (a, b) = (n.input(0)?, n.input(1)?);
    if let Some(v) = fold_ints(n.op(), a, b)? {
        return Ok(vec![Val::Known(v)]);
    }
    let op = match n.op() {
        "Add" => "add",
        "Sub" => "sub",
        "Mul" => "mul",
        "Div" => "div",
        _ => "pow",
    };
    let (x, y) = (im.float(a)?, im.float(b)?);
    let mut r = im.op(op, &[x, y])?;
    if op == "div" && elem_of(a).is_int() {
        // Integer division truncates toward zero. The quotient of integers within
        // 2^24 (f32) or 2^53 (f64) rounds to a float on the same side of every
        // integer, so truncating it is exact.
        r = trunc(im, r)?;
    }
    let r = wrap(im, r, elem_of(a))?;
    Ok(vec![Val::Graph(r, elem_of(a))])
}

/// An integer result computed in the float type, wrapped into the range of its ONNX
/// type as two's complement arithmetic wraps: `r - 2^n floor((r + off) / 2^n)` (`off`
/// 2^(n-1) for signed types, 0 for unsigned), exact below 2^53. For the 8-, 16- and
/// 32-bit types; int32 only in an f64 graph (an f32 one is exact only within 2^24, far
/// from int32's ends), the 64-bit types not at all.
pub(crate) fn wrap(im: &mut Im, r: Ref, elem: ElemType) -> CResult<Ref> {
    let Some((bits, signed)) = elem.bits() else {
        return Ok(r);
    };
    if bits == 64 || (bits == 32 && im.env.float != uop_codegen::uop::DType::F64) {
        return Ok(r);
    }
    let m = f64::from(1u32 << (bits - 1)) * 2.0;
    let s = im.with_scalar("add", r, if signed { m / 2.0 } else { 0.0 })?;
    let q = im.with_scalar("div", s, m)?;
    let f = im.op("floor", &[q])?;
    let p = im.with_scalar("mul", f, m)?;
    im.op("sub", &[r, p])
}

/// `trunc(x)`, toward zero, as `sign(x) * floor(|x|)`.
pub(crate) fn trunc(im: &mut Im, x: Ref) -> CResult<Ref> {
    let s = im.op("sign", &[x])?;
    let m = im.op("abs", &[x])?;
    let f = im.op("floor", &[m])?;
    im.op("mul", &[s, f])
}

/// The ONNX element type of a value.
pub(crate) fn elem_of(v: &Val) -> ElemType {
    match v {
        Val::Graph(_, e) => *e,
        Val::Known(c) => c.elem,
    }
}

/// Integer arithmetic on tensors known at import (shape arithmetic), numpy-broadcast.
fn fold_ints(op: &str, a: &Val, b: &Val) -> CResult<Option<Known>> {
    let (Val::Known(x), Val::Known(y)) = (a, b) else {
        return Ok(None);
    };
    let (KData::Int(p), KData::Int(q)) = (&x.data, &y.data) else {
        return Ok(None);
    };
    let iop = match op {
        "Add" => IndexOp::Add,
        "Sub" => IndexOp::Sub,
        "Mul" => IndexOp::Mul,
        "Div" => IndexOp::Div,
        _ => return Ok(None),
    };
    let shape = broadcast_static(&x.shape, &y.shape)?;
    let total: usize = shape.iter().product();
    let pick =
        |v: &[Expr], s: &[usize], k: usize| -> Expr { v[broadcast_index(s, &shape, k)].clone() };
    let mut out = Vec::with_capacity(total);
    for k in 0..total {
        let (l, r) = (pick(p, &x.shape, k), pick(q, &y.shape, k));
        if iop == IndexOp::Div
            && let (Some(u), Some(w)) = (l.as_int(), r.as_int())
        {
            let d = u.checked_div(w).ok_or("integer division by zero")?;
            out.push(Expr::Int(d));
            continue;
        }
        out.push(bin(iop, &l, &r));
    }
    Ok(Some(Known {
        elem: x.elem,
        shape,
        data: KData::Int(out),
    }))
}

fn broadcast_static(a: &[usize], b: &[usize]) -> CResult<Vec<usize>> {
    let r = a.len().max(b.len());
    (0..r)
        .map(|k| {
            let x = if k + a.len() >= r {
                a[k + a.len() - r]
            } else {
                1
            };
            let y = if k + b.len() >= r {
                b[k + b.len() - r]
            } else {
                1
            };
            match (x, y) {
                (1, y) => Ok(y),
                (x, 1) => Ok(x),
                (x, y) if x == y => Ok(x),
                _ => Err(format!("shapes {a:?} and {b:?} do not broadcast").into()),
            }
        })
        .collect()
}

/// The flat index into a tensor of shape `s` broadcast to `out`, for flat output index `k`.
pub(crate) fn broadcast_index(s: &[usize], out: &[usize], mut k: usize) -> usize {
    let mut idx = 0;
    let mut stride = 1;
    for d in (0..out.len()).rev() {
        let i = k % out[d];
        k /= out[d];
        if let Some(sd) = (d + s.len()).checked_sub(out.len()) {
            if s[sd] != 1 {
                idx += i * stride;
            }
            stride *= s[sd];
        }
    }
    idx
}

/// Max, Min, Sum, Mean: variadic, folded pairwise.
pub(crate) fn variadic(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let op = match n.op() {
        "Max" => "maximum",
        "Min" => "minimum",
        _ => "add",
    };
    let vals: Vec<&Val> = n.inputs.iter().flatten().collect();
    let first = *vals.first().ok_or("needs at least one input")?;
    if vals.len() == 2 && matches!(n.op(), "Max" | "Min") {
        let max = n.op() == "Max";
        if let Some(k) = fold_literal(n, |x, y| if max { x.max(y) } else { x.min(y) })? {
            return Ok(vec![Val::Known(k)]);
        }
    }
    let operand = |im: &mut Im, v: &Val| im.float(v);
    let mut acc = operand(im, first)?;
    for v in &vals[1..] {
        let r = operand(im, v)?;
        acc = im.op(op, &[acc, r])?;
    }
    if n.op() == "Mean" && vals.len() > 1 {
        acc = im.with_scalar("div", acc, vals.len() as f64)?;
    }
    if vals.len() == 1 {
        acc = im.with_scalar("add", acc, 0.0)?;
    }
    if n.op() == "Sum" {
        acc = wrap(im, acc, elem_of(first))?;
    }
    Ok(vec![Val::Graph(acc, elem_of(first))])
}

/// Equal, Less, LessOrEqual, Greater, GreaterOrEqual: bools (0/1).
pub(crate) fn compare(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let op = match n.op() {
        "Equal" => "eq",
        "Less" => "lt",
        "LessOrEqual" => "le",
        "Greater" => "gt",
        _ => "ge",
    };
    if let Some(k) = fold_literal(n, |x, y| {
        let r = match op {
            "eq" => x == y,
            "lt" => x < y,
            "le" => x <= y,
            "gt" => x > y,
            _ => x >= y,
        };
        i64::from(r)
    })? {
        return Ok(vec![Val::Known(Known {
            elem: ElemType::Bool,
            ..k
        })]);
    }
    let (a, b) = (im.float(n.input(0)?)?, im.float(n.input(1)?)?);
    Ok(vec![Val::Graph(im.op(op, &[a, b])?, ElemType::Bool)])
}

/// A binary op on two integer tensors known at import whose values are numbers,
/// numpy-broadcast; `None` when either is not such a tensor.
fn fold_literal(n: &NodeIn, f: impl Fn(i64, i64) -> i64) -> CResult<Option<Known>> {
    let (Some(Val::Known(x)), Some(Val::Known(y))) = (n.opt(0), n.opt(1)) else {
        return Ok(None);
    };
    if !matches!((&x.data, &y.data), (KData::Int(_), KData::Int(_))) {
        return Ok(None);
    }
    let (Ok(p), Ok(q)) = (x.int_values(), y.int_values()) else {
        return Ok(None);
    };
    let shape = broadcast_static(&x.shape, &y.shape)?;
    let total: usize = shape.iter().product();
    let data = (0..total)
        .map(|k| {
            let a = p[broadcast_index(&x.shape, &shape, k)];
            let b = q[broadcast_index(&y.shape, &shape, k)];
            Expr::Int(f(a, b))
        })
        .collect();
    Ok(Some(Known {
        elem: x.elem,
        shape,
        data: KData::Int(data),
    }))
}

/// And, Or, Xor, Not on 0/1 values (folded on tensors known at import).
pub(crate) fn logic(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    if n.op() == "Not" {
        if let Val::Known(k) = n.input(0)?
            && let Ok(v) = k.int_values()
        {
            let data = KData::Int(v.iter().map(|&x| Expr::Int(i64::from(x == 0))).collect());
            return Ok(vec![Val::Known(Known {
                elem: ElemType::Bool,
                data,
                ..k.clone()
            })]);
        }
    } else if let Some(k) = fold_literal(n, |x, y| match n.op() {
        "And" => i64::from(x != 0 && y != 0),
        "Or" => i64::from(x != 0 || y != 0),
        _ => i64::from((x != 0) != (y != 0)),
    })? {
        return Ok(vec![Val::Known(Known {
            elem: ElemType::Bool,
            ..k
        })]);
    }
    let a = im.float(n.input(0)?)?;
    let r = if n.op() == "Not" {
        im.scalar_with("sub", 1.0, a)?
    } else {
        let b = im.float(n.input(1)?)?;
        let op = match n.op() {
            "And" => "mul",
            "Or" => "maximum",
            _ => "ne",
        };
        im.op(op, &[a, b])?
    };
    Ok(vec![Val::Graph(r, ElemType::Bool)])
}

/// Where(c, a, b) (folded when all three are integers known at import).
pub(crate) fn where_(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    if let (Val::Known(c), Val::Known(a), Val::Known(b)) = (n.input(0)?, n.input(1)?, n.input(2)?)
        && let (Ok(cv), KData::Int(av), KData::Int(bv)) = (c.int_values(), &a.data, &b.data)
    {
        let shape = broadcast_static(&broadcast_static(&c.shape, &a.shape)?, &b.shape)?;
        let total: usize = shape.iter().product();
        let data = (0..total)
            .map(|k| {
                if cv[broadcast_index(&c.shape, &shape, k)] != 0 {
                    av[broadcast_index(&a.shape, &shape, k)].clone()
                } else {
                    bv[broadcast_index(&b.shape, &shape, k)].clone()
                }
            })
            .collect();
        return Ok(vec![Val::Known(Known {
            elem: a.elem,
            shape,
            data: KData::Int(data),
        })]);
    }
    let c = im.float(n.input(0)?)?;
    let (a, b) = (im.float(n.input(1)?)?, im.float(n.input(2)?)?);
    Ok(vec![Val::Graph(
        im.op("where", &[c, a, b])?,
        elem_of(n.input(1)?),
    )])
}

/// Mod: integers known at import folded; floats as `x - trunc(x / y) * y` (fmod=1)
/// or `x - floor(x / y) * y` (fmod=0, the sign of the divisor).
pub(crate) fn modulo(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let fmod = n.int_or("fmod", 0) != 0;
    if let Some(k) = fold_literal(n, |x, y| {
        if y == 0 {
            0
        } else if fmod {
            x % y
        } else {
            x.rem_euclid(y) + if y < 0 && x.rem_euclid(y) != 0 { y } else { 0 }
        }
    })? {
        return Ok(vec![Val::Known(k)]);
    }
    let (a, b) = (im.float(n.input(0)?)?, im.float(n.input(1)?)?);
    let q = im.op("div", &[a, b])?;
    let t = if fmod {
        trunc(im, q)?
    } else {
        im.op("floor", &[q])?
    };
    let p = im.op("mul", &[t, b])?;
    let r = im.op("sub", &[a, p])?;
    // A divisor of ±inf: fmod gives x; mod gives x when x is 0 or has y's sign, else y.
    let ay = im.op("abs", &[b])?;
    let inf = im.with_scalar("eq", ay, f64::INFINITY)?;
    let alt = if fmod {
        a
    } else {
        let (sa, sb) = (im.op("sign", &[a])?, im.op("sign", &[b])?);
        let same = im.op("eq", &[sa, sb])?;
        let zero = im.with_scalar("eq", a, 0.0)?;
        let keep = im.op("maximum", &[same, zero])?;
        im.op("where", &[keep, a, b])?
    };
    let r = im.op("where", &[inf, alt, r])?;
    Ok(vec![Val::Graph(r, elem_of(n.input(0)?))])
}

/// IsNaN, IsInf.
pub(crate) fn is_special(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let x = im.float(n.input(0)?)?;
    let r = if n.op() == "IsNaN" {
        im.op("ne", &[x, x])?
    } else {
        let pos = n.int_or("detect_positive", 1) != 0;
        let neg = n.int_or("detect_negative", 1) != 0;
        let p = im.with_scalar("eq", x, f64::INFINITY)?;
        let q = im.with_scalar("eq", x, f64::NEG_INFINITY)?;
        match (pos, neg) {
            (true, true) => im.op("maximum", &[p, q])?,
            (true, false) => p,
            (false, true) => q,
            (false, false) => im.with_scalar("mul", x, 0.0)?,
        }
    };
    Ok(vec![Val::Graph(r, ElemType::Bool)])
}

/// Unary functions that are one uop op (Neg and Abs folded on known integers).
pub(crate) fn unary(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    if let Val::Known(k) = n.input(0)?
        && let (KData::Int(v), "Neg" | "Abs") = (&k.data, n.op())
    {
        let data = v
            .iter()
            .map(|e| match (n.op(), e.as_int()) {
                ("Neg", _) => Ok(Expr::Neg(Box::new(e.clone())).simplify()),
                (_, Some(x)) => Ok(Expr::Int(x.abs())),
                _ => Err(format!("Abs of the symbolic size `{e}`")),
            })
            .collect::<Result<Vec<_>, _>>()?;
        return Ok(vec![Val::Known(Known {
            data: KData::Int(data),
            ..k.clone()
        })]);
    }
    let op = match n.op() {
        "Neg" => "neg",
        "Abs" => "abs",
        "Exp" => "exp",
        "Log" => "log",
        "Sqrt" => "sqrt",
        "Tanh" => "tanh",
        "Sigmoid" => "sigmoid",
        "Sin" => "sin",
        "Cos" => "cos",
        "Erf" => "erf",
        "Floor" => "floor",
        "Ceil" => "ceil",
        "Sign" => "sign",
        "Reciprocal" => "reciprocal",
        _ => "relu",
    };
    let x = im.float(n.input(0)?)?;
    let r = im.op(op, &[x])?;
    // Neg, Abs, Sign and Relu keep an integer type (computed in the float type).
    let elem = elem_of(n.input(0)?);
    Ok(vec![if elem.is_int() {
        Val::Graph(wrap(im, r, elem)?, elem)
    } else {
        im.fval(r)
    }])
}

/// Identity (and Dropout in inference: the data, and an all-true mask if asked).
pub(crate) fn identity(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let v = n.input(0)?.clone();
    if n.op() == "Dropout" && n.opt(2).is_some() {
        let training = im.known(n, 2, "training_mode")?.int_values()?;
        let ratio = match n.opt(1) {
            Some(_) => im.known(n, 1, "ratio")?.float_values()?,
            None => vec![0.5],
        };
        if training.iter().any(|&t| t != 0) && ratio.iter().any(|&r| r != 0.0) {
            return Err("training mode (random dropout) is not supported".into());
        }
    }
    if n.op() == "Dropout" && n.wants_output(1) {
        let x = im.float(&v)?;
        let ones = im.with_scalar("mul", x, 0.0)?;
        let ones = im.with_scalar("add", ones, 1.0)?;
        return Ok(vec![v, Val::Graph(ones, ElemType::Bool)]);
    }
    Ok(vec![v])
}

/// Activations and functions composed of a few ops.
pub(crate) fn composed(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let x = im.float(n.input(0)?)?;
    let r = match n.op() {
        "Tan" => {
            let (s, c) = (im.op("sin", &[x])?, im.op("cos", &[x])?);
            im.op("div", &[s, c])?
        }
        "Sinh" | "Cosh" => {
            let e = im.op("exp", &[x])?;
            let nx = im.op("neg", &[x])?;
            let f = im.op("exp", &[nx])?;
            let s = im.op(if n.op() == "Sinh" { "sub" } else { "add" }, &[e, f])?;
            im.with_scalar("mul", s, 0.5)?
        }
        "Asinh" | "Acosh" => {
            let sq = im.op("mul", &[x, x])?;
            let d = im.with_scalar(if n.op() == "Asinh" { "add" } else { "sub" }, sq, 1.0)?;
            let s = im.op("sqrt", &[d])?;
            let a = im.op("add", &[x, s])?;
            im.op("log", &[a])?
        }
        "Atanh" => {
            let p = im.scalar_with("add", 1.0, x)?;
            let q = im.scalar_with("sub", 1.0, x)?;
            let d = im.op("div", &[p, q])?;
            let l = im.op("log", &[d])?;
            im.with_scalar("mul", l, 0.5)?
        }
        "Softplus" => softplus(im, x)?,
        "Softsign" => {
            let a = im.op("abs", &[x])?;
            let d = im.with_scalar("add", a, 1.0)?;
            im.op("div", &[x, d])?
        }
        "Elu" => elu(im, x, n.float_or("alpha", 1.0))?,
        "Selu" => {
            let alpha = n.float_or("alpha", 1.673_263_192_176_818_8);
            let gamma = n.float_or("gamma", 1.050_701_022_148_132_3);
            let e = elu(im, x, alpha)?;
            im.with_scalar("mul", e, gamma)?
        }
        "Celu" => {
            let alpha = n.float_or("alpha", 1.0);
            let s = im.with_scalar("div", x, alpha)?;
            let e = im.op("exp", &[s])?;
            let e = im.with_scalar("sub", e, 1.0)?;
            let e = im.with_scalar("mul", e, alpha)?;
            let neg = im.with_scalar("minimum", e, 0.0)?;
            let pos = im.with_scalar("maximum", x, 0.0)?;
            im.op("add", &[pos, neg])?
        }
        "HardSigmoid" => hard_sigmoid(im, x, n.float_or("alpha", 0.2), n.float_or("beta", 0.5))?,
        "HardSwish" => {
            let h = hard_sigmoid(im, x, 1.0 / 6.0, 0.5)?;
            im.op("mul", &[x, h])?
        }
        "ThresholdedRelu" => {
            let c = im.with_scalar("gt", x, n.float_or("alpha", 1.0))?;
            im.op("mul", &[c, x])?
        }
        "LeakyRelu" => im.call(
            "leaky_relu",
            &[x.into()],
            &[("alpha", Arg::Float(n.float_or("alpha", 0.01)))],
        )?,
        "PRelu" => {
            let slope = im.float(n.input(1)?)?;
            let c = im.with_scalar("lt", x, 0.0)?;
            let s = im.op("mul", &[slope, x])?;
            im.op("where", &[c, s, x])?
        }
        "Mish" => {
            let s = softplus(im, x)?;
            let t = im.op("tanh", &[s])?;
            im.op("mul", &[x, t])?
        }
        "Swish" => {
            let a = im.with_scalar("mul", x, n.float_or("alpha", 1.0))?;
            let s = im.op("sigmoid", &[a])?;
            im.op("mul", &[x, s])?
        }
        "Shrink" => {
            let (bias, l) = (n.float_or("bias", 0.0), n.float_or("lambd", 0.5));
            let lo = im.with_scalar("lt", x, -l)?;
            let hi = im.with_scalar("gt", x, l)?;
            let up = im.with_scalar("add", x, bias)?;
            let down = im.with_scalar("sub", x, bias)?;
            let zero = im.with_scalar("mul", x, 0.0)?;
            let inner = im.op("where", &[hi, down, zero])?;
            im.op("where", &[lo, up, inner])?
        }
        "Gelu" => {
            let approx = n.string("approximate").unwrap_or_else(|| "none".into());
            im.call("gelu", &[x.into()], &[("approximate", Arg::Str(approx))])?
        }
        other => return Err(format!("no composition for {other}").into()),
    };
    Ok(vec![im.fval(r)])
}

/// Round: half to even, as `r = floor(x + 1/2)`, less 1 where `x + 1/2` is an odd
/// integer (a tie rounded up to an odd number); an integral `x` is itself (above
/// 2^23 in f32, `x + 1/2` would itself round).
pub(crate) fn round(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let x = im.float(n.input(0)?)?;
    let h = im.with_scalar("add", x, 0.5)?;
    let r = im.op("floor", &[h])?;
    let tie = im.op("eq", &[h, r])?;
    let half = im.with_scalar("mul", r, 0.5)?;
    let fh = im.op("floor", &[half])?;
    let even = im.op("eq", &[half, fh])?;
    let odd = im.scalar_with("sub", 1.0, even)?;
    let down = im.op("mul", &[tie, odd])?;
    let r = im.op("sub", &[r, down])?;
    let fx = im.op("floor", &[x])?;
    let integral = im.op("eq", &[fx, x])?;
    let r = im.op("where", &[integral, x, r])?;
    Ok(vec![Val::Graph(r, elem_of(n.input(0)?))])
}

fn softplus(im: &mut Im, x: Ref) -> CResult<Ref> {
    let e = im.op("exp", &[x])?;
    let p = im.with_scalar("add", e, 1.0)?;
    im.op("log", &[p])
}

fn elu(im: &mut Im, x: Ref, alpha: f64) -> CResult<Ref> {
    let e = im.op("exp", &[x])?;
    let e = im.with_scalar("sub", e, 1.0)?;
    let e = im.with_scalar("mul", e, alpha)?;
    let c = im.with_scalar("gt", x, 0.0)?;
    im.op("where", &[c, x, e])
}

fn hard_sigmoid(im: &mut Im, x: Ref, alpha: f64, beta: f64) -> CResult<Ref> {
    let a = im.with_scalar("mul", x, alpha)?;
    let a = im.with_scalar("add", a, beta)?;
    let a = im.with_scalar("minimum", a, 1.0)?;
    im.with_scalar("maximum", a, 0.0)
}

/// Clip: bounds from attributes (opset < 11) or optional inputs known at import.
pub(crate) fn clip(im: &mut Im, n: &NodeIn) -> CResult<Vec<Val>> {
    let x = im.float(n.input(0)?)?;
    let (lo, hi) = if im.opset() < 11 {
        (
            n.floats("min")
                .and(Some(n.float_or("min", f64::NEG_INFINITY))),
            n.floats("max").and(Some(n.float_or("max", f64::INFINITY))),
        )
    } else {
        let bound = |k: usize, slot: &str| -> CResult<Option<f64>> {
            if n.opt(k).is_none() {
                return Ok(None);
            }
            let v = im.known(n, k, slot)?.float_values()?;
            Ok(v.first().copied())
        };
        (bound(1, "min")?, bound(2, "max")?)
    };
    let mut r = x;
    if let Some(lo) = lo {
        r = im.with_scalar("maximum", r, lo)?;
    }
    if let Some(hi) = hi {
        r = im.with_scalar("minimum", r, hi)?;
    }
    if r == x {
        r = im.with_scalar("add", x, 0.0)?;
    }
    Ok(vec![Val::Graph(r, elem_of(n.input(0)?))])
}

/// A graph value equal to `x` (for an op that must produce a node of its own).
#[allow(dead_code)]
pub(crate) fn copy(im: &mut Im, x: Ref) -> CResult<Ref> {
    im.with_scalar("add", x, 0.0)
}

/// Broadcast of the shapes of two values.
#[allow(dead_code)]
pub(crate) fn broadcast_shapes(im: &Im, a: &Val, b: &Val) -> CResult<Vec<Expr>> {
    Ok(broadcast(&im.shape(a)?, &im.shape(b)?)?)
}
