//! Macro ops: matrix products (`matmul`, `linear`).
//!
//! Both are the classic micro-op matmul: reindex the operands into one
//! iteration space `[..., M, K, N]`, multiply, `reduce_sum` over `K`, and drop
//! the reduced axis.
//!
//! ```
//! use uop_codegen::uop::{Builder, DType};
//! let mut b = Builder::new(DType::F32);
//! let a = b.input("a", DType::F32, &["2", "1", "3", "4"])?;
//! let c = b.input("c", DType::F32, &["5", "4", "6"])?;
//! let y = uop_ops::linalg::matmul(&mut b, a, c)?;
//! assert_eq!(uop_codegen::index::list(b.shape(y)), "[2, 5, 3, 6]");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use uop_codegen::index::{Expr, equal_sizes, list};
use uop_codegen::text::{Args, Attrs, MacroError, Registry};
use uop_codegen::uop::{BinaryOp, Builder, NodeId, ReduceOp};

use crate::error::{Context, OpError};
use crate::names::named;
use crate::shape::{broadcast_shapes, drop_axes, is_one};

/// Registers this module's ops by name.
pub(crate) fn register(registry: &mut Registry) {
    registry.register(
        "matmul",
        "matmul(a, b)",
        "matrix product with numpy semantics (1-D operands, broadcast batch axes)",
        matmul_text,
    );
    registry.register(
        "linear",
        "linear(x, w, [b])",
        "x @ w^T + b with PyTorch's layout: w [out, in], b [out], x [..., in]",
        linear_text,
    );
}

/// The matrix product `a @ c` with numpy's rules.
///
/// Operands of rank 2 or more are stacks of matrices whose leading (batch) axes
/// broadcast: `[2, 1, 3, 4] @ [5, 4, 6]` is `[2, 5, 3, 6]`. A 1-D `a` is a row
/// vector and a 1-D `c` a column vector whose unit axis is removed from the
/// result, so `[K] @ [K]` is a rank-0 scalar. Rank-0 operands are rejected, as in
/// numpy.
///
/// The iteration space is `[batch..., M, K, N]`, where `M` is absent when `a` is
/// 1-D and `N` when `c` is 1-D (rather than adding a unit axis only to remove it
/// again). Inner sizes that are both literal must agree; symbolic ones are
/// checked at run time by a size assertion.
pub fn matmul(b: &mut Builder, a: NodeId, c: NodeId) -> Result<NodeId, OpError> {
    const OP: &str = "matmul";
    let (sa, sc) = (b.shape(a).to_vec(), b.shape(c).to_vec());
    for (name, s) in [("a", &sa), ("b", &sc)] {
        if s.is_empty() {
            return Err(OpError::operand(
                OP,
                format!("operand {name} is a scalar (shape []); matmul needs rank 1 or more"),
            ));
        }
    }
    // The last axis of `a` and the first matrix axis of `c` are the inner ones.
    let ka = &sa[sa.len() - 1];
    let kc = &sc[sc.len().saturating_sub(2)];
    same_size(b, OP, ka, kc, || {
        format!(
            "inner dimensions differ: a {} has {ka} columns, b {} has {kc} rows",
            list(&sa),
            list(&sc)
        )
    })?;
    let batch_a = &sa[..sa.len().saturating_sub(2)];
    let batch_c = &sc[..sc.len().saturating_sub(2)];
    let batch = broadcast_shapes(b, OP, batch_a, batch_c)?;

    let mut space = batch.clone();
    let m_axis = (sa.len() >= 2).then(|| {
        space.push(sa[sa.len() - 2].clone());
        space.len() - 1
    });
    let k_axis = space.len();
    space.push(ka.clone());
    let n_axis = (sc.len() >= 2).then(|| {
        space.push(sc[sc.len() - 1].clone());
        space.len() - 1
    });

    let mut ia = batch_index(batch_a, &batch);
    ia.extend(m_axis.map(Expr::Index));
    ia.push(Expr::Index(k_axis));
    let mut ic = batch_index(batch_c, &batch);
    ic.push(Expr::Index(k_axis));
    ic.extend(n_axis.map(Expr::Index));

    let aa = b.reindex_exprs(a, space.clone(), &[], ia, 0.0).op(OP)?;
    let aa = named(b, OP, aa, "a_wide")?;
    let cc = b.reindex_exprs(c, space, &[], ic, 0.0).op(OP)?;
    let cc = named(b, OP, cc, "b_wide")?;
    let prod = b.binary(BinaryOp::Mul, aa, cc).op(OP)?;
    let prod = named(b, OP, prod, "products")?;
    let sum = b.reduce(ReduceOp::Sum, &[k_axis], prod).op(OP)?;
    let sum = named(b, OP, sum, "sum")?;
    drop_axes(b, OP, sum, &[k_axis])
}

/// `x @ wᵀ + bias`, PyTorch's `linear`: `x` is `[..., in]`, `w` is `[out, in]`,
/// the optional `bias` is `[out]`; the result is `[..., out]`.
///
/// Written like [`matmul`] over the space `[..., out, in]`, with `w` read
/// transposed by the reindex itself (no separate transpose).
pub fn linear(
    b: &mut Builder,
    x: NodeId,
    w: NodeId,
    bias: Option<NodeId>,
) -> Result<NodeId, OpError> {
    const OP: &str = "linear";
    let (sx, sw) = (b.shape(x).to_vec(), b.shape(w).to_vec());
    if sx.is_empty() {
        return Err(OpError::operand(
            OP,
            "x is a scalar (shape []); linear needs x of shape [..., in]",
        ));
    }
    if sw.len() != 2 {
        return Err(OpError::operand(
            OP,
            format!("w must have shape [out, in], found {}", list(&sw)),
        ));
    }
    let lead = sx.len() - 1;
    same_size(b, OP, &sx[lead], &sw[1], || {
        format!(
            "in-features differ: x {} has {} features, w {} takes {}",
            list(&sx),
            sx[lead],
            list(&sw),
            sw[1]
        )
    })?;
    let mut space = sx[..lead].to_vec();
    space.push(sw[0].clone());
    space.push(sw[1].clone());
    let mut ix: Vec<Expr> = (0..lead).map(Expr::Index).collect();
    ix.push(Expr::Index(lead + 1));
    let iw = vec![Expr::Index(lead), Expr::Index(lead + 1)];
    let xx = b.reindex_exprs(x, space.clone(), &[], ix, 0.0).op(OP)?;
    let ww = b.reindex_exprs(w, space, &[], iw, 0.0).op(OP)?;
    let prod = b.binary(BinaryOp::Mul, xx, ww).op(OP)?;
    let sum = b.reduce(ReduceOp::Sum, &[lead + 1], prod).op(OP)?;
    let y = drop_axes(b, OP, sum, &[lead + 1])?;
    add_channel_bias(b, OP, y, bias, lead)
}

/// Adds a 1-D `bias` along `axis` of `y` (the channel or feature axis), checking
/// its size; no bias leaves `y` as it is.
pub(crate) fn add_channel_bias(
    b: &mut Builder,
    op: &'static str,
    y: NodeId,
    bias: Option<NodeId>,
    axis: usize,
) -> Result<NodeId, OpError> {
    let Some(bias) = bias else {
        return Ok(y);
    };
    let (sy, sb) = (b.shape(y).to_vec(), b.shape(bias).to_vec());
    if sb.len() != 1 {
        return Err(OpError::operand(
            op,
            format!("bias must be 1-D [{}], found {}", sy[axis], list(&sb)),
        ));
    }
    same_size(b, op, &sb[0], &sy[axis], || {
        format!(
            "bias {} has {} values, but there are {} output channels",
            list(&sb),
            sb[0],
            sy[axis]
        )
    })?;
    let spread = b
        .reindex_exprs(bias, sy, &[], vec![Expr::Index(axis)], 0.0)
        .op(op)?;
    b.binary(BinaryOp::Add, y, spread).op(op)
}

/// Requires two sizes to be equal: an error (with `message`) when both are
/// literals that differ, a run-time size assertion when either is symbolic and
/// they cannot be proven equal.
pub(crate) fn same_size(
    b: &mut Builder,
    op: &'static str,
    x: &Expr,
    y: &Expr,
    message: impl FnOnce() -> String,
) -> Result<(), OpError> {
    if equal_sizes(x, y) {
        return Ok(());
    }
    match (x.simplify().as_int(), y.simplify().as_int()) {
        (Some(_), Some(_)) => Err(OpError::operand(op, message())),
        _ => b.assert_equal(x.clone(), y.clone()).op(op),
    }
}

/// How an operand's batch axes read the broadcast batch `batch` (aligned at the
/// right): a literal 1 that is broadcast reads index 0, any other axis follows
/// its loop index.
fn batch_index(own: &[Expr], batch: &[Expr]) -> Vec<Expr> {
    let offset = batch.len() - own.len();
    own.iter()
        .enumerate()
        .map(|(k, d)| {
            if is_one(d) && !is_one(&batch[offset + k]) {
                Expr::Int(0)
            } else {
                Expr::Index(offset + k)
            }
        })
        .collect()
}

/// An optional bias: the positional argument `position`, or the attribute `bias=`.
pub(crate) fn optional_bias(
    args: &Args,
    attrs: &Attrs,
    position: usize,
) -> Result<Option<NodeId>, MacroError> {
    match (args.len() > position, attrs.has("bias")) {
        (true, true) => Err(attrs.error(
            "bias",
            format!(
                "the bias is given twice: as argument {} and as `bias=`",
                position + 1
            ),
        )),
        (true, false) => Ok(Some(args.node(position)?)),
        (false, true) => Ok(Some(attrs.node("bias")?)),
        (false, false) => Ok(None),
    }
}

fn matmul_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (a, c) = (args.node(0)?, args.node(1)?);
    matmul(b, a, c).map_err(|e| e.into_macro_error(attrs))
}

fn linear_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let (x, w) = (args.node(0)?, args.node(1)?);
    let bias = optional_bias(args, attrs, 2)?;
    linear(b, x, w, bias).map_err(|e| e.into_macro_error(attrs))
}
