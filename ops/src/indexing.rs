//! Indexing ops: `gather`, `index_select`, `one_hot` (built on the `select` micro
//! op, which reads 0 for an index out of range), `cumsum` (a triangular reindex and a
//! sum) and `tril` / `triu` (`iota` comparisons and `where`).
//!
//! Index tensors are i32. PyTorch raises on an index outside the axis; here, as in
//! `select`, such an index reads 0 (for `one_hot`: an all-zero row), because the
//! check would depend on data, not shapes.

use uop_codegen::index::{Expr, equal_sizes, list};
use uop_codegen::text::{Args, Attrs, MacroError, Registry};
use uop_codegen::uop::{BinaryOp, Builder, DType, NodeId, ReduceOp};

use crate::error::{Context, OpError};
use crate::movement::{Call, identity_index, max_expr};
use crate::shape::{drop_axes, normalize_axis};

/// Registers this module's ops by name.
pub(crate) fn register(registry: &mut Registry) {
    registry.register(
        "gather",
        "gather(x, index, axis)",
        "torch.gather: out[..i..] = x[..index[..i..]..] along axis; index (i32) has x's rank",
        gather_text,
    );
    registry.register(
        "index_select",
        "index_select(x, index, axis)",
        "the entries of x at the positions of the 1-D i32 tensor index along axis",
        index_select_text,
    );
    registry.register(
        "cumsum",
        "cumsum(x, axis)",
        "running sum of x along axis",
        cumsum_text,
    );
    registry.register(
        "one_hot",
        "one_hot(index, num_classes)",
        "a float tensor with a new last axis of num_classes: 1 at each i32 index, 0 elsewhere",
        one_hot_text,
    );
    registry.register(
        "tril",
        "tril(x, diagonal=0)",
        "the lower triangle of the last two axes (column - row <= diagonal); zeros above",
        tril_text,
    );
    registry.register(
        "triu",
        "triu(x, diagonal=0)",
        "the upper triangle of the last two axes (column - row >= diagonal); zeros below",
        triu_text,
    );
}

/// Requires `index` to be an i32 tensor.
fn expect_index(b: &Builder, op: &'static str, index: NodeId) -> Result<(), OpError> {
    let dtype = b.node(index).dtype;
    if dtype != DType::I32 {
        return Err(OpError::operand(
            op,
            format!("the index must be an i32 tensor, found {dtype}"),
        ));
    }
    Ok(())
}

/// `torch.gather`: `out[i] = x[i with i[axis] = index[i]]`, shaped like `index`.
///
/// `index` (i32) has the rank of `x`, and on every other axis a size no larger than
/// `x`'s (checked when both are literal; where they are not, a larger index axis
/// reads 0). An index value outside `[0, size)` reads 0.
pub fn gather(b: &mut Builder, x: NodeId, index: NodeId, axis: i64) -> Result<NodeId, OpError> {
    const OP: &str = "gather";
    expect_index(b, OP, index)?;
    let (xs, is) = (b.shape(x).to_vec(), b.shape(index).to_vec());
    if xs.len() != is.len() {
        return Err(OpError::operand(
            OP,
            format!(
                "the index has shape {} (rank {}) but x has shape {} (rank {}): the ranks must be equal",
                list(&is),
                is.len(),
                list(&xs),
                xs.len()
            ),
        ));
    }
    let a = normalize_axis(OP, "axis", axis, xs.len())?;
    let mut same = true;
    for d in (0..xs.len()).filter(|&d| d != a) {
        if let (Some(n), Some(m)) = (xs[d].as_int(), is[d].as_int())
            && m > n
        {
            return Err(OpError::operand(
                OP,
                format!(
                    "the index has shape {} but x has shape {}: axis {d} of the index ({m}) is larger than x's ({n})",
                    list(&is),
                    list(&xs)
                ),
            ));
        }
        same &= equal_sizes(&xs[d], &is[d]);
    }
    // `select` wants x and the index to agree off the gathered axis: crop x first.
    let source = if same {
        x
    } else {
        let mut shape = is.clone();
        shape[a] = xs[a].clone();
        b.reindex_exprs(x, shape, &[], identity_index(xs.len()), 0.0)
            .op(OP)?
    };
    b.select(a, source, index).op(OP)
}

fn gather_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let index = args.node(1)?;
    let axis = call.int(2, "axis")?;
    gather(b, x, index, axis).map_err(|e| call.error(e, &[("axis", 2)]))
}

/// `torch.index_select`: the entries of `x` at positions `index` (a 1-D i32 tensor)
/// along `axis`; the result has `x`'s shape with that axis of `index`'s length.
/// A position outside the axis reads 0.
pub fn index_select(
    b: &mut Builder,
    x: NodeId,
    index: NodeId,
    axis: i64,
) -> Result<NodeId, OpError> {
    const OP: &str = "index_select";
    expect_index(b, OP, index)?;
    let (xs, is) = (b.shape(x).to_vec(), b.shape(index).to_vec());
    if is.len() != 1 {
        return Err(OpError::operand(
            OP,
            format!(
                "the index must be 1-D, found shape {} (rank {})",
                list(&is),
                is.len()
            ),
        ));
    }
    let a = normalize_axis(OP, "axis", axis, xs.len())?;
    let mut shape = xs.clone();
    shape[a] = is[0].clone();
    // Every output element needs its own index for `select`: broadcast the list.
    let spread = b
        .reindex_exprs(index, shape, &[], vec![Expr::Index(a)], 0.0)
        .op(OP)?;
    b.select(a, x, spread).op(OP)
}

fn index_select_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let index = args.node(1)?;
    let axis = call.int(2, "axis")?;
    index_select(b, x, index, axis).map_err(|e| call.error(e, &[("axis", 2)]))
}

/// Running sum along `axis`: `out[.., i, ..] = x[.., 0, ..] + ... + x[.., i, ..]`.
///
/// Written as a reindex to an extra last axis `k` that reads `x[.., k, ..]` where
/// `k <= i` and 0 elsewhere (the index is pushed out of range by
/// `n * max(k - i, 0)`), summed over `k`; O(n²) work along the axis.
pub fn cumsum(b: &mut Builder, x: NodeId, axis: i64) -> Result<NodeId, OpError> {
    const OP: &str = "cumsum";
    let xs = b.shape(x).to_vec();
    let a = normalize_axis(OP, "axis", axis, xs.len())?;
    let r = xs.len();
    let n = xs[a].clone();
    let mut shape = xs.clone();
    shape.push(n.clone());
    let (i, k) = (Expr::Index(a), Expr::Index(r));
    let mut index = identity_index(r);
    index[a] = k.clone() + n * max_expr(k - i, Expr::Int(0));
    let triangle = b.reindex_exprs(x, shape, &[], index, 0.0).op(OP)?;
    let sums = b.reduce(ReduceOp::Sum, &[r], triangle).op(OP)?;
    drop_axes(b, OP, sums, &[r])
}

fn cumsum_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let axis = call.int(1, "axis")?;
    cumsum(b, x, axis).map_err(|e| call.error(e, &[("axis", 1)]))
}

/// One-hot encoding: for an i32 `index` of shape `S`, a float tensor of shape
/// `[*S, num_classes]` with 1 where the last index equals the value of `index`.
///
/// `num_classes` must be at least 1 (PyTorch's `-1`, "infer from the data", would
/// make the shape depend on data). An index outside `[0, num_classes)` gives a row
/// of zeros. Built as a `select` from `iota + 1` (which turns the i32 index into a
/// float, 0 when out of range) compared with `iota + 1`.
pub fn one_hot(b: &mut Builder, index: NodeId, num_classes: i64) -> Result<NodeId, OpError> {
    const OP: &str = "one_hot";
    if num_classes < 1 {
        return Err(OpError::attr(
            OP,
            "num_classes",
            num_classes,
            "must be at least 1",
        ));
    }
    expect_index(b, OP, index)?;
    let is = b.shape(index).to_vec();
    let r = is.len();
    let mut column = is.clone();
    column.push(Expr::Int(1));
    let mut shape = is.clone();
    shape.push(Expr::Int(num_classes));
    let positions = b
        .reindex_exprs(index, column, &[], identity_index(r), 0.0)
        .op(OP)?;
    let classes = b.iota_exprs(shape.clone(), &[], r).op(OP)?;
    let labels = b.binary(BinaryOp::Add, classes, 1.0).op(OP)?;
    let chosen = b.select(r, labels, positions).op(OP)?;
    let mut spread = identity_index(r);
    spread.push(Expr::Int(0));
    let chosen = b.reindex_exprs(chosen, shape, &[], spread, 0.0).op(OP)?;
    b.binary(BinaryOp::Eq, chosen, labels).op(OP)
}

fn one_hot_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let index = args.node(0)?;
    let num_classes = call.int(1, "num_classes")?;
    one_hot(b, index, num_classes).map_err(|e| call.error(e, &[("num_classes", 1)]))
}

/// Keeps the elements of the last two axes where `column - row` compares with
/// `diagonal` by `keep`, zeros elsewhere.
fn triangle(
    b: &mut Builder,
    op: &'static str,
    x: NodeId,
    diagonal: i64,
    keep: BinaryOp,
) -> Result<NodeId, OpError> {
    let xs = b.shape(x).to_vec();
    if xs.len() < 2 {
        return Err(OpError::operand(
            op,
            format!(
                "x has shape {} but needs at least 2 axes (a matrix or a batch of them)",
                list(&xs)
            ),
        ));
    }
    let r = xs.len();
    let rows = b.iota_exprs(xs.clone(), &[], r - 2).op(op)?;
    let cols = b.iota_exprs(xs, &[], r - 1).op(op)?;
    let offset = b.binary(BinaryOp::Sub, cols, rows).op(op)?;
    let mask = b.binary(keep, offset, diagonal as f64).op(op)?;
    b.where_(mask, x, 0.0).op(op)
}

/// The lower triangle of the last two axes of `x` (`torch.tril`): elements with
/// `column - row <= diagonal` are kept, the others are 0. `diagonal > 0` keeps
/// diagonals above the main one, `< 0` removes more.
pub fn tril(b: &mut Builder, x: NodeId, diagonal: i64) -> Result<NodeId, OpError> {
    triangle(b, "tril", x, diagonal, BinaryOp::Le)
}

/// The upper triangle of the last two axes of `x` (`torch.triu`): elements with
/// `column - row >= diagonal` are kept, the others are 0.
pub fn triu(b: &mut Builder, x: NodeId, diagonal: i64) -> Result<NodeId, OpError> {
    triangle(b, "triu", x, diagonal, BinaryOp::Ge)
}

fn tril_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let diagonal = call.int_or(1, "diagonal", 0)?;
    tril(b, x, diagonal).map_err(|e| call.error(e, &[("diagonal", 1)]))
}

fn triu_text(b: &mut Builder, args: &Args, attrs: &Attrs) -> Result<NodeId, MacroError> {
    let call = Call::new(args, attrs);
    let x = args.node(0)?;
    let diagonal = call.int_or(1, "diagonal", 0)?;
    triu(b, x, diagonal).map_err(|e| call.error(e, &[("diagonal", 1)]))
}
