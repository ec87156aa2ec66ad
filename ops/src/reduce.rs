//! Reductions with PyTorch's calling conventions: `axis` (an int or a list, negative
//! counting from the end; omitted = every axis) and `keepdim` (default false).
//! Reducing every axis without `keepdim` gives a rank-0 tensor.
//!
//! `max` and `min` return the values only (not PyTorch's `(values, indices)` pair;
//! use `argmax` / `argmin` for the indices). `argmax` / `argmin` return the index as a
//! float, the program having a single float type. An empty `axis=[]` is rejected
//! rather than guessed: numpy reduces nothing there and PyTorch everything.

use uop_codegen::index::Expr;
use uop_codegen::text::{Args, Attrs, MacroError, MacroFn, Registry};
use uop_codegen::uop::{BinaryOp, Builder, NodeId, Operand, ReduceOp, UnaryOp};

use crate::elementwise::broadcast_to;
use crate::error::{Context, OpError};
use crate::names::named;
use crate::shape::{drop_axes, normalize_axes, normalize_axis};

/// The axes `axis` names in a tensor of rank `rank`, sorted: all of them when `None`.
pub fn reduced_axes(
    op: &'static str,
    axis: Option<&[i64]>,
    rank: usize,
) -> Result<Vec<usize>, OpError> {
    match axis {
        None => Ok((0..rank).collect()),
        Some([]) => Err(OpError::attr(
            op,
            "axis",
            "[]",
            "an empty axis list is ambiguous (numpy reduces nothing, PyTorch everything); \
             omit `axis` to reduce every axis",
        )),
        Some(axes) => normalize_axes(op, "axis", axes, rank),
    }
}

/// Reduces the already-normalized `axes` with `reduce_op`, then drops them unless
/// `keepdim`: the common tail of every reduction here.
fn finish(
    b: &mut Builder,
    op: &'static str,
    reduce_op: ReduceOp,
    x: NodeId,
    axes: &[usize],
    keepdim: bool,
) -> Result<NodeId, OpError> {
    let r = b.reduce(reduce_op, axes, x).op(op)?;
    if keepdim {
        Ok(r)
    } else {
        drop_axes(b, op, r, axes)
    }
}

/// Defines the reductions that are one micro op plus the `keepdim` handling.
macro_rules! simple_reductions {
    ($($(#[$doc:meta])* $fn_name:ident => $op:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $fn_name(
                b: &mut Builder,
                x: NodeId,
                axis: Option<&[i64]>,
                keepdim: bool,
            ) -> Result<NodeId, OpError> {
                let op = stringify!($fn_name);
                let axes = reduced_axes(op, axis, b.shape(x).len())?;
                finish(b, op, ReduceOp::$op, x, &axes, keepdim)
            }
        )*
    };
}

simple_reductions! {
    /// Sum over `axis` (all axes when `None`).
    sum => Sum;
    /// Mean over `axis` (all axes when `None`).
    mean => Mean;
    /// Largest value over `axis` (NaN if any is NaN); values only, no indices.
    max => Max;
    /// Smallest value over `axis` (NaN if any is NaN); values only, no indices.
    min => Min;
    /// Product over `axis` (all axes when `None`).
    prod => Prod;
}

fn arg_reduction(
    b: &mut Builder,
    op: &'static str,
    reduce_op: ReduceOp,
    x: NodeId,
    axis: Option<i64>,
    keepdim: bool,
) -> Result<NodeId, OpError> {
    let rank = b.shape(x).len();
    // With no axis the micro op's row-major position over every axis is exactly
    // PyTorch's index into the flattened tensor.
    let axes = match axis {
        None => (0..rank).collect(),
        Some(a) => vec![normalize_axis(op, "axis", a, rank)?],
    };
    finish(b, op, reduce_op, x, &axes, keepdim)
}

/// Index of the first largest value (PyTorch semantics): along `axis`, or into the
/// flattened tensor when `None`. The index is returned as a float.
pub fn argmax(
    b: &mut Builder,
    x: NodeId,
    axis: Option<i64>,
    keepdim: bool,
) -> Result<NodeId, OpError> {
    arg_reduction(b, "argmax", ReduceOp::Argmax, x, axis, keepdim)
}

/// Index of the first smallest value (PyTorch semantics): along `axis`, or into the
/// flattened tensor when `None`. The index is returned as a float.
pub fn argmin(
    b: &mut Builder,
    x: NodeId,
    axis: Option<i64>,
    keepdim: bool,
) -> Result<NodeId, OpError> {
    arg_reduction(b, "argmin", ReduceOp::Argmin, x, axis, keepdim)
}

/// The number of elements a reduction over `axes` combines, as an operand shaped like
/// that reduction's result (`keepdim`): a constant when the sizes are literals, else
/// counted at run time by summing ones (a `reindex` that reads only its fill).
pub fn element_count(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    axes: &[usize],
) -> Result<Operand, OpError> {
    let shape = b.shape(x).to_vec();
    let literal: Option<i64> = axes.iter().map(|&a| shape[a].as_int()).product();
    if let Some(n) = literal {
        return Ok(Operand::Const(n as f64));
    }
    let outside = vec![Expr::Int(-1); shape.len()];
    let ones = b.reindex_exprs(x, shape, &[], outside, 1.0).op(op)?;
    Ok(Operand::Node(b.reduce(ReduceOp::Sum, axes, ones).op(op)?))
}

/// Sum of squared deviations from the mean over `axes`, keeping them (size 1).
fn squared_deviations(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    axes: &[usize],
) -> Result<NodeId, OpError> {
    let shape = b.shape(x).to_vec();
    let mean = b.reduce(ReduceOp::Mean, axes, x).op(op)?;
    let mean = named(b, op, mean, "mean")?;
    let mean = broadcast_to(b, op, mean, &shape)?;
    let mean = named(b, op, mean, "mean_wide")?;
    let d = b.binary(BinaryOp::Sub, x, mean).op(op)?;
    let d = named(b, op, d, "centered")?;
    let d2 = b.binary(BinaryOp::Mul, d, d).op(op)?;
    let d2 = named(b, op, d2, "squares")?;
    let ss = b.reduce(ReduceOp::Sum, axes, d2).op(op)?;
    named(b, op, ss, "sum_squares")
}

fn variance(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    axis: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<NodeId, OpError> {
    if !correction.is_finite() {
        return Err(OpError::attr(
            op,
            "correction",
            correction,
            "must be a finite number",
        ));
    }
    let axes = reduced_axes(op, axis, b.shape(x).len())?;
    let ss = squared_deviations(b, op, x, &axes)?;
    // PyTorch divides by max(0, N - correction): too few elements give inf or NaN.
    let dof = match element_count(b, op, x, &axes)? {
        Operand::Const(n) => Operand::Const((n - correction).max(0.0)),
        count => {
            let less = b.binary(BinaryOp::Sub, count, correction).op(op)?;
            Operand::Node(b.binary(BinaryOp::Maximum, less, 0.0).op(op)?)
        }
    };
    let mut v = b.binary(BinaryOp::Div, ss, dof).op(op)?;
    v = named(b, op, v, "var")?;
    if take_sqrt {
        v = b.unary(UnaryOp::Sqrt, v).op(op)?;
    }
    if keepdim {
        Ok(v)
    } else {
        drop_axes(b, op, v, &axes)
    }
}

/// PyTorch's default `correction` of `var` and `std` (Bessel's correction).
pub const DEFAULT_CORRECTION: f64 = 1.0;

/// Variance over `axis`: the sum of squared deviations divided by
/// `max(0, N - correction)` (PyTorch; numpy's `ddof`).
pub fn var(
    b: &mut Builder,
    x: NodeId,
    axis: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
) -> Result<NodeId, OpError> {
    variance(b, "var", x, axis, correction, keepdim, false)
}

/// Standard deviation over `axis`: the square root of [`var`].
pub fn std(
    b: &mut Builder,
    x: NodeId,
    axis: Option<&[i64]>,
    correction: f64,
    keepdim: bool,
) -> Result<NodeId, OpError> {
    variance(b, "std", x, axis, correction, keepdim, true)
}

/// `log(sum(exp(x)))` over the normalized `axes`, keeping them; what [`logsumexp`]
/// and the nn ops share. Stable: the maximum is subtracted first. Where that maximum
/// is infinite it is replaced by 0 (as PyTorch does), so a slice of `-inf` gives
/// `-inf` and one holding `+inf` gives `+inf` rather than NaN.
pub fn logsumexp_keep(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    axes: &[usize],
) -> Result<NodeId, OpError> {
    let shape = b.shape(x).to_vec();
    let m = b.reduce(ReduceOp::Max, axes, x).op(op)?;
    let m = named(b, op, m, "max")?;
    let size = b.unary(UnaryOp::Abs, m).op(op)?;
    let size = named(b, op, size, "max_abs")?;
    let infinite = b.binary(BinaryOp::Eq, size, f64::INFINITY).op(op)?;
    let infinite = named(b, op, infinite, "max_infinite")?;
    let m = b.where_(infinite, 0.0, m).op(op)?;
    let m = named(b, op, m, "max_finite")?;
    let wide = broadcast_to(b, op, m, &shape)?;
    let wide = named(b, op, wide, "max_wide")?;
    let shifted = b.binary(BinaryOp::Sub, x, wide).op(op)?;
    let shifted = named(b, op, shifted, "shifted")?;
    let e = b.unary(UnaryOp::Exp, shifted).op(op)?;
    let e = named(b, op, e, "exps")?;
    let s = b.reduce(ReduceOp::Sum, axes, e).op(op)?;
    let s = named(b, op, s, "sum")?;
    let l = b.unary(UnaryOp::Log, s).op(op)?;
    let l = named(b, op, l, "log_sum")?;
    let lse = b.binary(BinaryOp::Add, l, m).op(op)?;
    named(b, op, lse, "lse")
}

/// `log(sum(exp(x)))` over `axis`, computed stably (see [`logsumexp_keep`]).
pub fn logsumexp(
    b: &mut Builder,
    x: NodeId,
    axis: Option<&[i64]>,
    keepdim: bool,
) -> Result<NodeId, OpError> {
    let op = "logsumexp";
    let axes = reduced_axes(op, axis, b.shape(x).len())?;
    let r = logsumexp_keep(b, op, x, &axes)?;
    if keepdim {
        Ok(r)
    } else {
        drop_axes(b, op, r, &axes)
    }
}

// ---------------------------------------------------------------------------
// The `.uop` text adapters.

/// The `axis` attribute as PyTorch's `dim`: absent, an int or a list.
fn axis_attr(attrs: &Attrs) -> Result<Option<Vec<i64>>, MacroError> {
    if attrs.has("axis") {
        Ok(Some(attrs.int_list("axis")?))
    } else {
        Ok(None)
    }
}

/// Defines the text adapter of each `axis` / `keepdim` reduction.
macro_rules! reduction_adapters {
    ($($adapter:ident => $fn_name:ident;)*) => {
        $(
            fn $adapter(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
                let x = args.node(0)?;
                let axis = axis_attr(attrs)?;
                let keepdim = attrs.bool_or("keepdim", false)?;
                $fn_name(b, x, axis.as_deref(), keepdim).map_err(|e| e.into_macro_error(attrs))
            }
        )*
    };
}

reduction_adapters! {
    sum_text => sum;
    mean_text => mean;
    max_text => max;
    min_text => min;
    prod_text => prod;
    logsumexp_text => logsumexp;
}

/// Defines the text adapters of `argmax` / `argmin`, whose `axis` is a single int.
macro_rules! arg_adapters {
    ($($adapter:ident => $fn_name:ident;)*) => {
        $(
            fn $adapter(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
                let x = args.node(0)?;
                let axis = attrs.has("axis").then(|| attrs.int("axis")).transpose()?;
                let keepdim = attrs.bool_or("keepdim", false)?;
                $fn_name(b, x, axis, keepdim).map_err(|e| e.into_macro_error(attrs))
            }
        )*
    };
}

arg_adapters! {
    argmax_text => argmax;
    argmin_text => argmin;
}

/// Defines the text adapters of `var` / `std`.
macro_rules! variance_adapters {
    ($($adapter:ident => $fn_name:ident;)*) => {
        $(
            fn $adapter(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
                let x = args.node(0)?;
                let axis = axis_attr(attrs)?;
                let correction = attrs.float_or("correction", DEFAULT_CORRECTION)?;
                let keepdim = attrs.bool_or("keepdim", false)?;
                $fn_name(b, x, axis.as_deref(), correction, keepdim)
                    .map_err(|e| e.into_macro_error(attrs))
            }
        )*
    };
}

variance_adapters! {
    var_text => var;
    std_text => std;
}

/// Registers this module's ops by name.
pub(crate) fn register(r: &mut Registry) {
    let ops: [(&str, &str, &str, MacroFn); 10] = [
        (
            "sum",
            "sum(x, axis=all, keepdim=false)",
            "sum over axes",
            sum_text,
        ),
        (
            "mean",
            "mean(x, axis=all, keepdim=false)",
            "mean over axes",
            mean_text,
        ),
        (
            "max",
            "max(x, axis=all, keepdim=false)",
            "largest value over axes",
            max_text,
        ),
        (
            "min",
            "min(x, axis=all, keepdim=false)",
            "smallest value over axes",
            min_text,
        ),
        (
            "prod",
            "prod(x, axis=all, keepdim=false)",
            "product over axes",
            prod_text,
        ),
        (
            "argmax",
            "argmax(x, axis=none, keepdim=false)",
            "index of the first maximum (into the flattened tensor without axis), as a float",
            argmax_text,
        ),
        (
            "argmin",
            "argmin(x, axis=none, keepdim=false)",
            "index of the first minimum (into the flattened tensor without axis), as a float",
            argmin_text,
        ),
        (
            "var",
            "var(x, axis=all, correction=1, keepdim=false)",
            "variance, dividing by N - correction",
            var_text,
        ),
        (
            "std",
            "std(x, axis=all, correction=1, keepdim=false)",
            "standard deviation, dividing by N - correction",
            std_text,
        ),
        (
            "logsumexp",
            "logsumexp(x, axis=all, keepdim=false)",
            "log(sum(exp(x))) over axes, computed stably",
            logsumexp_text,
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
    use uop_codegen::uop::DType;

    fn shape_of(b: &Builder, id: NodeId) -> Vec<String> {
        b.shape(id).iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn reducing_every_axis_gives_rank_0_unless_kept() {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["B", "N", "3"]).expect("input");
        let all = sum(&mut b, x, None, false).expect("sum");
        assert!(b.shape(all).is_empty());
        let kept = mean(&mut b, x, None, true).expect("mean");
        assert_eq!(shape_of(&b, kept), ["1", "1", "1"]);
        let inner = var(&mut b, x, Some(&[-2]), 1.0, false).expect("var");
        assert_eq!(shape_of(&b, inner), ["B", "3"]);
        let arg = argmax(&mut b, x, Some(0), true).expect("argmax");
        assert_eq!(shape_of(&b, arg), ["1", "N", "3"]);
        let lse = logsumexp(&mut b, x, Some(&[0, 2]), false).expect("logsumexp");
        assert_eq!(shape_of(&b, lse), ["N"]);
        let program = b
            .combine(&[x], &[all, kept, inner, arg, lse])
            .expect("combines");
        check_round_trip(&program).expect("round trip");
    }

    #[test]
    fn element_counts_are_constants_when_sizes_are_literal() {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["B", "4", "5"]).expect("input");
        assert_eq!(
            element_count(&mut b, "var", x, &[1, 2]),
            Ok(Operand::Const(20.0))
        );
        let counted = element_count(&mut b, "var", x, &[0, 2]).expect("count");
        let node = counted.node().expect("a symbolic count is computed");
        assert_eq!(shape_of(&b, node), ["1", "4", "1"]);
    }
}
