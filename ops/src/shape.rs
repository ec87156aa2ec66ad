//! Shape helpers shared by the ops: axis normalization, numpy broadcasting,
//! expanding to a shape, dropping reduced axes — all as micro ops (`reindex`).

use uop_codegen::index::{Expr, equal_sizes, list};
use uop_codegen::uop::{Builder, NodeId, UopError};

use crate::error::{Context, OpError};

/// A Python-style axis (negative counts from the end) as an index into a rank-`rank` shape.
pub fn normalize_axis(
    op: &'static str,
    attr: &'static str,
    axis: i64,
    rank: usize,
) -> Result<usize, OpError> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    if (0..r).contains(&a) {
        Ok(a as usize)
    } else {
        Err(OpError::attr(
            op,
            attr,
            axis,
            format!("out of range for a tensor of rank {rank}"),
        ))
    }
}

/// Normalizes a list of axes; repeats are an error. The result is sorted.
pub fn normalize_axes(
    op: &'static str,
    attr: &'static str,
    axes: &[i64],
    rank: usize,
) -> Result<Vec<usize>, OpError> {
    let mut out = axes
        .iter()
        .map(|&a| normalize_axis(op, attr, a, rank))
        .collect::<Result<Vec<_>, _>>()?;
    out.sort_unstable();
    if out.windows(2).any(|w| w[0] == w[1]) {
        return Err(OpError::attr(
            op,
            attr,
            format!("{axes:?}"),
            "an axis is repeated",
        ));
    }
    Ok(out)
}

/// True when a size is the literal 1.
pub fn is_one(e: &Expr) -> bool {
    e.as_int() == Some(1)
}

/// The numpy broadcast of two shapes ([`Builder::broadcast_shapes`], the one rule of
/// the text format too): aligned at the last axis, sizes equal or one of them the
/// literal 1; two symbolic sizes that cannot be proven equal are asserted equal at
/// run time.
pub fn broadcast_shapes(
    b: &mut Builder,
    op: &'static str,
    x: &[Expr],
    y: &[Expr],
) -> Result<Vec<Expr>, OpError> {
    b.broadcast_shapes(op, x, y)
        .map_err(|e| broadcast_error(op, e))
}

/// A broadcasting error as the op's operand error; the builder's others as they are.
pub(crate) fn broadcast_error(op: &'static str, e: UopError) -> OpError {
    match e {
        UopError::Broadcast { message, .. } => OpError::operand(op, message),
        source => OpError::Uop { op, source },
    }
}

/// Broadcasts `x` to `shape` (numpy rules: aligned at the last axis, size-1 axes
/// repeat). Returns `x` itself when its shape already is `shape`.
pub fn expand_to(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    shape: &[Expr],
) -> Result<NodeId, OpError> {
    let xs = b.shape(x).to_vec();
    if xs == shape {
        return Ok(x);
    }
    if xs.len() > shape.len() {
        return Err(OpError::operand(
            op,
            format!("cannot broadcast shape {} to {}", list(&xs), list(shape)),
        ));
    }
    let offset = shape.len() - xs.len();
    let index = xs
        .iter()
        .enumerate()
        .map(|(k, d)| {
            let target = &shape[offset + k];
            if is_one(d) && !is_one(target) {
                Ok(Expr::Int(0))
            } else if equal_sizes(d, target) || is_one(d) {
                Ok(Expr::Index(offset + k))
            } else {
                Err(OpError::operand(
                    op,
                    format!("cannot broadcast shape {} to {}", list(&xs), list(shape)),
                ))
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    b.reindex_exprs(x, shape.to_vec(), &[], index, 0.0).op(op)
}

/// Removes the listed axes (each of size 1) with a reindex: how `keepdim=false`
/// turns a reduction's `[B, 1]` into `[B]` (and a full reduction into rank 0).
pub fn drop_axes(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    axes: &[usize],
) -> Result<NodeId, OpError> {
    if axes.is_empty() {
        return Ok(x);
    }
    let xs = b.shape(x).to_vec();
    let mut shape = Vec::new();
    let mut index = Vec::new();
    for (k, d) in xs.iter().enumerate() {
        if axes.contains(&k) {
            index.push(Expr::Int(0));
        } else {
            index.push(Expr::Index(shape.len()));
            shape.push(d.clone());
        }
    }
    b.reindex_exprs(x, shape, &[], index, 0.0).op(op)
}
