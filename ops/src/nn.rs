//! Neural-network ops: softmax and log-softmax, layer and RMS normalization, and the
//! cross-entropy and mean-squared-error losses, with PyTorch's defaults.
//!
//! Everything exponential subtracts the maximum first (through
//! [`crate::reduce::logsumexp_keep`] or directly), so inputs around ±100 neither
//! overflow nor lose the small terms.

use uop_codegen::index::{Expr, equal_sizes, list};
use uop_codegen::text::{Args, Attrs, MacroError, MacroFn, Registry};
use uop_codegen::uop::{BinaryOp, Builder, DType, NodeId, ReduceOp, UnaryOp};

use crate::elementwise::{broadcast_operands, broadcast_to};
use crate::error::{Context, OpError};
use crate::names::named;
use crate::reduce::logsumexp_keep;
use crate::shape::{drop_axes, normalize_axes, normalize_axis};

/// `exp(x) / sum(exp(x))` along `axis`, computed as `exp(x - max)` over its sum.
pub fn softmax(b: &mut Builder, x: NodeId, axis: i64) -> Result<NodeId, OpError> {
    let op = "softmax";
    let shape = b.shape(x).to_vec();
    let a = normalize_axis(op, "axis", axis, shape.len())?;
    let m = b.reduce(ReduceOp::Max, &[a], x).op(op)?;
    let m = named(b, op, m, "max")?;
    let m = broadcast_to(b, op, m, &shape)?;
    let m = named(b, op, m, "max_wide")?;
    let shifted = b.binary(BinaryOp::Sub, x, m).op(op)?;
    let shifted = named(b, op, shifted, "shifted")?;
    let e = b.unary(UnaryOp::Exp, shifted).op(op)?;
    let e = named(b, op, e, "exps")?;
    let s = b.reduce(ReduceOp::Sum, &[a], e).op(op)?;
    let s = named(b, op, s, "sum")?;
    let s = broadcast_to(b, op, s, &shape)?;
    let s = named(b, op, s, "sum_wide")?;
    b.binary(BinaryOp::Div, e, s).op(op)
}

/// `x - logsumexp(x)` along `axis`: the log of [`softmax`] without its underflow
/// (a probability that rounds to 0 still has a finite log here).
pub fn log_softmax(b: &mut Builder, x: NodeId, axis: i64) -> Result<NodeId, OpError> {
    let op = "log_softmax";
    let shape = b.shape(x).to_vec();
    let a = normalize_axis(op, "axis", axis, shape.len())?;
    let lse = logsumexp_keep(b, op, x, &[a])?;
    let lse = broadcast_to(b, op, lse, &shape)?;
    let lse = named(b, op, lse, "lse_wide")?;
    b.binary(BinaryOp::Sub, x, lse).op(op)
}

/// PyTorch's default `eps` of `layer_norm`.
pub const LAYERNORM_EPS: f64 = 1e-5;

/// Checks that `param` (gamma or beta) is shaped like the normalized axes of `x`, in
/// order (PyTorch's `normalized_shape`), and places it along them, shaped like `x`.
/// Symbolic sizes that cannot be compared now are asserted equal at run time.
fn along_axes(
    b: &mut Builder,
    op: &'static str,
    what: &str,
    param: NodeId,
    x: NodeId,
    axes: &[usize],
) -> Result<NodeId, OpError> {
    let xs = b.shape(x).to_vec();
    let ps = b.shape(param).to_vec();
    let normalized: Vec<Expr> = axes.iter().map(|&a| xs[a].clone()).collect();
    let mismatch = || {
        OpError::operand(
            op,
            format!(
                "{what} has shape {}, but the normalized axes of x {} have shape {}",
                list(&ps),
                list(&xs),
                list(&normalized)
            ),
        )
    };
    if ps.len() != normalized.len() {
        return Err(mismatch());
    }
    for (p, n) in ps.iter().zip(&normalized) {
        if equal_sizes(p, n) {
            continue;
        }
        if p.as_int().is_some() && n.as_int().is_some() {
            return Err(mismatch());
        }
        b.assert_equal(p.clone(), n.clone()).op(op)?;
    }
    let index = axes.iter().map(|&a| Expr::Index(a)).collect();
    b.reindex_exprs(param, xs, &[], index, 0.0).op(op)
}

fn check_eps(op: &'static str, eps: f64) -> Result<(), OpError> {
    if eps.is_finite() && eps >= 0.0 {
        Ok(())
    } else {
        Err(OpError::attr(
            op,
            "eps",
            eps,
            "must be a finite number >= 0",
        ))
    }
}

/// Layer normalization over `axis` (PyTorch's `normalized_shape`; the last axis is the
/// usual choice): `(x - mean) / sqrt(var + eps) * gamma + beta`, with the biased
/// variance. `gamma` and `beta` are shaped like the normalized axes, in order.
pub fn layernorm(
    b: &mut Builder,
    x: NodeId,
    gamma: NodeId,
    beta: NodeId,
    axis: &[i64],
    eps: f64,
) -> Result<NodeId, OpError> {
    let op = "layernorm";
    check_eps(op, eps)?;
    let shape = b.shape(x).to_vec();
    let axes = normalize_axes(op, "axis", axis, shape.len())?;
    if axes.is_empty() {
        return Err(OpError::attr(op, "axis", "[]", "name at least one axis"));
    }
    let gamma = along_axes(b, op, "gamma", gamma, x, &axes)?;
    let gamma = named(b, op, gamma, "gamma_wide")?;
    let beta = along_axes(b, op, "beta", beta, x, &axes)?;
    let beta = named(b, op, beta, "beta_wide")?;
    let mean = b.reduce(ReduceOp::Mean, &axes, x).op(op)?;
    let mean = named(b, op, mean, "mean")?;
    let mean = broadcast_to(b, op, mean, &shape)?;
    let mean = named(b, op, mean, "mean_wide")?;
    let d = b.binary(BinaryOp::Sub, x, mean).op(op)?;
    let d = named(b, op, d, "centered")?;
    let d2 = b.binary(BinaryOp::Mul, d, d).op(op)?;
    let d2 = named(b, op, d2, "squares")?;
    let var = b.reduce(ReduceOp::Mean, &axes, d2).op(op)?;
    let var = named(b, op, var, "var")?;
    let var = b.binary(BinaryOp::Add, var, eps).op(op)?;
    let var = named(b, op, var, "var_eps")?;
    let scale = b.unary(UnaryOp::Rsqrt, var).op(op)?;
    let scale = named(b, op, scale, "inv_std")?;
    let scale = broadcast_to(b, op, scale, &shape)?;
    let scale = named(b, op, scale, "inv_std_wide")?;
    let normalized = b.binary(BinaryOp::Mul, d, scale).op(op)?;
    let normalized = named(b, op, normalized, "normalized")?;
    let scaled = b.binary(BinaryOp::Mul, normalized, gamma).op(op)?;
    let scaled = named(b, op, scaled, "scaled")?;
    b.binary(BinaryOp::Add, scaled, beta).op(op)
}

/// The default `eps` of [`rmsnorm`]: as PyTorch's `eps=None`, the machine epsilon of
/// the program's float type (`f32::EPSILON` ≈ 1.19e-7, or `f64::EPSILON`).
pub fn rmsnorm_default_eps(dtype: DType) -> f64 {
    match dtype {
        DType::F64 => f64::EPSILON,
        _ => f64::from(f32::EPSILON),
    }
}

/// RMS normalization over `axis` (usually the last axis):
/// `x / sqrt(mean(x^2) + eps) * gamma`, `gamma` shaped like the normalized axes.
/// `eps` defaults to [`rmsnorm_default_eps`] when `None`.
pub fn rmsnorm(
    b: &mut Builder,
    x: NodeId,
    gamma: NodeId,
    axis: &[i64],
    eps: Option<f64>,
) -> Result<NodeId, OpError> {
    let op = "rmsnorm";
    let eps = eps.unwrap_or_else(|| rmsnorm_default_eps(b.dtype()));
    check_eps(op, eps)?;
    let shape = b.shape(x).to_vec();
    let axes = normalize_axes(op, "axis", axis, shape.len())?;
    if axes.is_empty() {
        return Err(OpError::attr(op, "axis", "[]", "name at least one axis"));
    }
    let gamma = along_axes(b, op, "gamma", gamma, x, &axes)?;
    let gamma = named(b, op, gamma, "gamma_wide")?;
    let x2 = b.binary(BinaryOp::Mul, x, x).op(op)?;
    let x2 = named(b, op, x2, "squares")?;
    let ms = b.reduce(ReduceOp::Mean, &axes, x2).op(op)?;
    let ms = named(b, op, ms, "mean_square")?;
    let ms = b.binary(BinaryOp::Add, ms, eps).op(op)?;
    let ms = named(b, op, ms, "mean_square_eps")?;
    let scale = b.unary(UnaryOp::Rsqrt, ms).op(op)?;
    let scale = named(b, op, scale, "inv_rms")?;
    let scale = broadcast_to(b, op, scale, &shape)?;
    let scale = named(b, op, scale, "inv_rms_wide")?;
    let normalized = b.binary(BinaryOp::Mul, x, scale).op(op)?;
    let normalized = named(b, op, normalized, "normalized")?;
    b.binary(BinaryOp::Mul, normalized, gamma).op(op)
}

/// How a loss combines its per-element values (PyTorch's `reduction`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Reduction {
    /// The mean, as a rank-0 tensor (the default).
    #[default]
    Mean,
    /// The sum, as a rank-0 tensor.
    Sum,
    /// No reduction: one loss per element (per sample for cross-entropy).
    None,
}

impl Reduction {
    /// Parses PyTorch's spelling: `"mean"`, `"sum"` or `"none"`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "mean" => Some(Reduction::Mean),
            "sum" => Some(Reduction::Sum),
            "none" => Some(Reduction::None),
            _ => None,
        }
    }

    /// Applies the reduction to per-element losses (every axis reduced, or none).
    fn apply(self, b: &mut Builder, op: &'static str, x: NodeId) -> Result<NodeId, OpError> {
        let all: Vec<usize> = (0..b.shape(x).len()).collect();
        let reduce_op = match self {
            Reduction::None => return Ok(x),
            Reduction::Mean => ReduceOp::Mean,
            Reduction::Sum => ReduceOp::Sum,
        };
        let r = b.reduce(reduce_op, &all, x).op(op)?;
        let r = named(b, op, r, reduce_op.name())?;
        drop_axes(b, op, r, &all)
    }
}

/// Cross-entropy of `logits` `[B, C]` against class indices `target` (i32, `[B]`):
/// `logsumexp(logits[b]) - logits[b, target[b]]`, reduced over the batch (default the
/// mean, a rank-0 tensor).
///
/// A target outside `[0, C)` gives a NaN loss for its sample (and so a NaN mean):
/// there is no run-time error to raise, and NaN cannot go unnoticed. PyTorch's
/// `ignore_index` (-100) is therefore not supported, nor are class-probability targets.
pub fn cross_entropy(
    b: &mut Builder,
    logits: NodeId,
    target: NodeId,
    reduction: Reduction,
) -> Result<NodeId, OpError> {
    let op = "cross_entropy";
    let ls = b.shape(logits).to_vec();
    let ts = b.shape(target).to_vec();
    if ls.len() != 2 {
        return Err(OpError::operand(
            op,
            format!("logits must have shape [B, C], found {}", list(&ls)),
        ));
    }
    let target_dtype = b.node(target).dtype;
    if target_dtype != DType::I32 {
        return Err(OpError::operand(
            op,
            format!(
                "target must hold i32 class indices, found {target_dtype} \
                 (class-probability targets are not supported)"
            ),
        ));
    }
    if ts.len() != 1 {
        return Err(OpError::operand(
            op,
            format!(
                "target must have shape [B] for logits {}, found {}",
                list(&ls),
                list(&ts)
            ),
        ));
    }
    if !equal_sizes(&ts[0], &ls[0]) {
        if ts[0].as_int().is_some() && ls[0].as_int().is_some() {
            return Err(OpError::operand(
                op,
                format!(
                    "target {} and logits {} disagree on the batch size",
                    list(&ts),
                    list(&ls)
                ),
            ));
        }
        b.assert_equal(ts[0].clone(), ls[0].clone()).op(op)?;
    }
    let column = vec![ls[0].clone(), Expr::Int(1)];
    let index = b
        .reindex_exprs(target, column, &[], vec![Expr::Index(0)], 0.0)
        .op(op)?;
    let index = named(b, op, index, "target_column")?;
    let picked = b.select(1, logits, index).op(op)?;
    let picked = named(b, op, picked, "picked")?;
    // Picking from ones tells whether the target was in range: `select` reads 0 outside.
    let ones = b
        .reindex_exprs(logits, ls.clone(), &[], vec![Expr::Int(-1); 2], 1.0)
        .op(op)?;
    let ones = named(b, op, ones, "ones")?;
    let in_range = b.select(1, ones, index).op(op)?;
    let in_range = named(b, op, in_range, "in_range")?;
    let lse = logsumexp_keep(b, op, logits, &[1])?;
    let loss = b.binary(BinaryOp::Sub, lse, picked).op(op)?;
    let loss = named(b, op, loss, "loss")?;
    let loss = b.where_(in_range, loss, f64::NAN).op(op)?;
    let loss = named(b, op, loss, "loss_checked")?;
    let loss = drop_axes(b, op, loss, &[1])?;
    let loss = named(b, op, loss, "losses")?;
    reduction.apply(b, op, loss)
}

/// Mean squared error `(x - t)^2`, `x` and `t` broadcast together, reduced (default
/// the mean, a rank-0 tensor).
pub fn mse_loss(
    b: &mut Builder,
    x: NodeId,
    t: NodeId,
    reduction: Reduction,
) -> Result<NodeId, OpError> {
    let op = "mse_loss";
    let operands = broadcast_operands(b, op, &[x.into(), t.into()])?;
    let [x, t] = <[_; 2]>::try_from(operands).expect("two operands in, two out");
    let d = b.binary(BinaryOp::Sub, x, t).op(op)?;
    let d = named(b, op, d, "diff")?;
    let d2 = b.binary(BinaryOp::Mul, d, d).op(op)?;
    let d2 = named(b, op, d2, "squares")?;
    reduction.apply(b, op, d2)
}

// ---------------------------------------------------------------------------
// The `.uop` text adapters.

fn softmax_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let axis = attrs.int_or("axis", -1)?;
    softmax(b, x, axis).map_err(|e| e.into_macro_error(attrs))
}

fn log_softmax_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let x = args.node(0)?;
    let axis = attrs.int_or("axis", -1)?;
    log_softmax(b, x, axis).map_err(|e| e.into_macro_error(attrs))
}

fn layernorm_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (x, gamma, beta) = (args.node(0)?, args.node(1)?, args.node(2)?);
    let axis = attrs.int_list_or("axis", vec![-1])?;
    let eps = attrs.float_or("eps", LAYERNORM_EPS)?;
    layernorm(b, x, gamma, beta, &axis, eps).map_err(|e| e.into_macro_error(attrs))
}

fn rmsnorm_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (x, gamma) = (args.node(0)?, args.node(1)?);
    let axis = attrs.int_list_or("axis", vec![-1])?;
    let eps = attrs.has("eps").then(|| attrs.float("eps")).transpose()?;
    rmsnorm(b, x, gamma, &axis, eps).map_err(|e| e.into_macro_error(attrs))
}

fn reduction_attr(op: &'static str, attrs: &Attrs) -> Result<Reduction, MacroError> {
    let name = attrs.str_or("reduction", "mean")?;
    Reduction::from_name(name).ok_or_else(|| {
        OpError::attr(
            op,
            "reduction",
            format!("{name:?}"),
            "must be \"mean\", \"sum\" or \"none\"",
        )
        .into_macro_error(attrs)
    })
}

fn cross_entropy_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (logits, target) = (args.node(0)?, args.node(1)?);
    let reduction = reduction_attr("cross_entropy", attrs)?;
    cross_entropy(b, logits, target, reduction).map_err(|e| e.into_macro_error(attrs))
}

fn mse_loss_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (x, t) = (args.node(0)?, args.node(1)?);
    let reduction = reduction_attr("mse_loss", attrs)?;
    mse_loss(b, x, t, reduction).map_err(|e| e.into_macro_error(attrs))
}

/// Registers this module's ops by name.
pub(crate) fn register(r: &mut Registry) {
    let ops: [(&str, &str, &str, MacroFn); 6] = [
        (
            "softmax",
            "softmax(x, axis=-1)",
            "exp(x) / sum(exp(x)) along axis, computed stably",
            softmax_text,
        ),
        (
            "log_softmax",
            "log_softmax(x, axis=-1)",
            "x - logsumexp(x) along axis",
            log_softmax_text,
        ),
        (
            "layernorm",
            "layernorm(x, gamma, beta, axis=[-1], eps=1e-5)",
            "(x - mean) / sqrt(var + eps) * gamma + beta over the axes",
            layernorm_text,
        ),
        (
            "rmsnorm",
            "rmsnorm(x, gamma, axis=[-1], eps=<machine epsilon>)",
            "x / sqrt(mean(x^2) + eps) * gamma over the axes",
            rmsnorm_text,
        ),
        (
            "cross_entropy",
            "cross_entropy(logits, target, reduction=\"mean\")",
            "logsumexp(logits) - logits[target] for [B, C] logits and i32 [B] targets",
            cross_entropy_text,
        ),
        (
            "mse_loss",
            "mse_loss(x, t, reduction=\"mean\")",
            "(x - t)^2, reduced",
            mse_loss_text,
        ),
    ];
    for (name, signature, doc, f) in ops {
        r.register(name, signature, doc, f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uop_codegen::text::check_round_trip;

    #[test]
    fn losses_are_rank_0_and_per_sample_without_reduction() {
        let mut b = Builder::new(DType::F32);
        let logits = b.input("logits", DType::F32, &["B", "C"]).expect("input");
        let target = b.input("target", DType::I32, &["B"]).expect("input");
        let mean = cross_entropy(&mut b, logits, target, Reduction::Mean).expect("ce");
        assert!(b.shape(mean).is_empty());
        let each = cross_entropy(&mut b, logits, target, Reduction::None).expect("ce");
        assert_eq!(b.shape(each), &[Expr::name("B")]);
        let mse = mse_loss(&mut b, logits, logits, Reduction::Sum).expect("mse");
        assert!(b.shape(mse).is_empty());
        // The NaN that marks an out-of-range target survives printing.
        let program = b
            .combine(&[logits, target], &[mean, each, mse])
            .expect("combines");
        check_round_trip(&program).expect("round trip");
    }

    #[test]
    fn normalizations_keep_the_input_shape() {
        let mut b = Builder::new(DType::F64);
        let x = b.input("x", DType::F64, &["B", "T", "D"]).expect("input");
        let g = b.input("g", DType::F64, &["T", "D"]).expect("input");
        let ln = layernorm(&mut b, x, g, g, &[1, 2], LAYERNORM_EPS).expect("layernorm");
        let rms = rmsnorm(&mut b, x, g, &[-2, -1], None).expect("rmsnorm");
        let sm = softmax(&mut b, x, 1).expect("softmax");
        let lsm = log_softmax(&mut b, x, -1).expect("log_softmax");
        for y in [ln, rms, sm, lsm] {
            assert_eq!(b.shape(y), b.shape(x));
        }
        assert_eq!(rmsnorm_default_eps(DType::F64), f64::EPSILON);
        assert_eq!(rmsnorm_default_eps(DType::F32), 1.1920928955078125e-7);
    }
}
