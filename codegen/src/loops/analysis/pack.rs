//! Which loads of a register tile may be packed into a panel: the one definition of
//! what the `pack` pass names and the verifier checks of
//! [`Tile::packed`](crate::loops::Tile::packed), and of a sliding window, which
//! the `channels` pass and the panels both leave alone.

use crate::loops::{Access, Block, LoadSet, Loop, LoopProgram, Stmt, Subscript, TensorId, Value};
use crate::uop::DType;

use super::body::body_accesses;
use super::stride::{access_mentions, value_mentions};
use super::walk::{block_accesses, operand_loads};

/// Whether `a` is a sliding window of the tile along its loop `c` (the column loop,
/// or the row loop for a row panel) whose reduction loops are `reduce`: one of its
/// subscripts moves with `c` and with a reduction loop at once (a convolution's
/// `x[c, h + kh, w + kw]` along `w`), or is data-dependent and moves with `c`
/// (where it lands is unknown). Packed per tile, a window's panel would hold each
/// value several times.
pub fn sliding(a: &Access, c: &Loop, reduce: &[Loop]) -> bool {
    a.index.iter().any(|s| match s {
        Subscript::Expr(e) => {
            let ids = e.indices();
            ids.contains(&c.id.0) && reduce.iter().any(|l| ids.contains(&l.id.0))
        }
        Subscript::Value(v) => value_mentions(v, c.id.0),
    })
}

/// The loads of the body of `b.loops[d]`, a `[tile]` column loop, that may be
/// packed, by position ([`body_accesses`]): those of the innermost reduction loop
/// that are also read as an operand of its statements' values (not only inside a
/// subscript), of a float tensor the block does not write, moving with the column
/// loop and not with the row loop `b.loops[d - 1]`, and not [`sliding`]. None when
/// the nest is not a row, a column and reduction loops, or when a reduction loop's
/// range uses the row or column loop. Every tile of rows then reads the same
/// values of such a load for a tile of columns, whatever order they run in.
pub fn packable(p: &LoopProgram, b: &Block, d: usize) -> LoadSet {
    packable_along(p, b, d, false)
}

/// The loads of the body of `b.loops[d]`, a `[tile]` column loop, that may be
/// packed into a row panel ([`Tile::rows`](crate::loops::Tile::rows)): as
/// [`packable`] with the rows and columns swapped, moving with the row loop
/// `b.loops[d - 1]` and not with the column loop, and not [`sliding`] along the
/// rows. Every tile of columns then reads the same values of such a load for a
/// tile of rows.
pub fn row_packable(p: &LoopProgram, b: &Block, d: usize) -> LoadSet {
    packable_along(p, b, d, true)
}

/// [`packable`] (`rows` false) or [`row_packable`] (`rows` true).
fn packable_along(p: &LoopProgram, b: &Block, d: usize, rows: bool) -> LoadSet {
    let mut out = LoadSet::default();
    let (Some(r), Some(c)) = (
        d.checked_sub(1).and_then(|e| b.loops.get(e)),
        b.loops.get(d),
    ) else {
        return out;
    };
    let reduce = &b.loops[d + 1..];
    let Some(innermost) = reduce.last() else {
        return out;
    };
    let moves = |e: &crate::index::Expr| {
        let ids = e.indices();
        ids.contains(&r.id.0) || ids.contains(&c.id.0)
    };
    if reduce.iter().any(|l| moves(&l.start) || moves(&l.end)) {
        return out;
    }
    // The loop the panel follows, and the one it is shared across.
    let (along, across) = if rows { (r, c) } else { (c, r) };
    let written: Vec<TensorId> = block_accesses(b)
        .into_iter()
        .filter(|a| a.write)
        .map(|a| a.access.tensor)
        .collect();
    let mut operands: Vec<&Value> = Vec::new();
    for s in &innermost.stmts {
        let (Stmt::Store { value, .. }
        | Stmt::Accumulate { value, .. }
        | Stmt::Update { value, .. }) = s;
        operand_loads(value, &mut operands);
    }
    let inside = body_accesses(std::slice::from_ref(innermost), false).len();
    for (k, a) in body_accesses(&b.loops[d..], false).iter().enumerate() {
        if k < inside
            && operands
                .iter()
                .any(|v| matches!(v, Value::Load { access, .. } if access == a))
            && p.tensors
                .get(a.tensor.0)
                .is_some_and(|t| t.dtype != DType::I32)
            && !written.contains(&a.tensor)
            && access_mentions(a, along.id.0)
            && !access_mentions(a, across.id.0)
            && !sliding(a, along, reduce)
        {
            out.insert(k);
        }
    }
    out
}
