//! The tile plan: which `[tile]` nests run as register tiles of the target's
//! [`tile_rows`](crate::target::Target::tile_rows) ×
//! [`tile_vectors`](crate::target::Target::tile_vectors) (both backends read the
//! shape from the target), and the limits of Cranelift's realization
//! ([`tile_plan`]): a marked nest outside them runs untiled there. The Rust copies
//! realize every marked nest (their limit is the plain nest small ranges fall back
//! to, decided at run time).

use std::collections::HashSet;

use crate::index::Expr;
use crate::loops::analysis::{Stride, coefficient};
use crate::loops::{Access, Loop, LoopId, LoopProgram, Stmt, Subscript, VarId};
use crate::uop::Accum;

use super::vector::{Reads, stride};

fn mentions(e: &Expr, l: LoopId) -> bool {
    e.indices().contains(&l.0)
}

/// True when `e` is the loop index plus (or minus) terms independent of it.
fn is_unit(e: &Expr, l: LoopId) -> bool {
    coefficient(e, l.0) == Some(1)
}

/// A register tile Cranelift can run (see [`Schedule::tile`](crate::loops::Schedule)):
/// the nest `for r { for c [tile] { v = id; for k… { v op= f(r, c, k) }; stmts(v) } }`
/// of `loops = [r, c, k…]`.
///
/// The `[tile]` mark is trusted: `loops::verify` checks what it guarantees (a parent
/// loop, carried variables of `c`'s own, reduction loops that carry nothing and only
/// update them, each with its variable's operator), and this does not check it
/// again. What is checked here is what this backend's realization needs beyond the
/// mark:
///
/// - `r` carrying nothing and holding no statements of its own;
/// - the reduction loops' ranges independent of `r` and `c`, so every cell of a
///   tile runs the same reduction loops, and only the innermost one holding
///   statements;
/// - one update per carried variable of `c`, each a sum, max or min (so the
///   accumulators start from the variable's reset value), whose values read no
///   carried variable of `c` and no tensor that `c`'s statements write;
/// - every load of those values a float, proven in range, and unit stride or
///   invariant along `c` (data-dependent subscripts excluded).
///
/// A marked nest outside these runs untiled, with the same results. Returns the
/// reductions in statement order.
pub fn tile_plan(p: &LoopProgram, loops: &[Loop]) -> Option<Vec<(VarId, Accum)>> {
    let [r, c, reduce @ ..] = loops else {
        return None;
    };
    let (innermost, outer) = reduce.split_last()?;
    let depends = |e: &Expr| {
        let ix = e.indices();
        ix.contains(&r.id.0) || ix.contains(&c.id.0)
    };
    if c.schedule.tile.is_none()
        || !r.carried.is_empty()
        || !r.stmts.is_empty()
        || depends(&c.start)
        || depends(&c.end)
        || reduce.iter().any(|k| depends(&k.start) || depends(&k.end))
        || outer.iter().any(|k| !k.stmts.is_empty())
    {
        return None;
    }
    let mut reads = Reads::default();
    let mut reductions: Vec<(VarId, Accum)> = Vec::new();
    for s in &innermost.stmts {
        let Stmt::Update { var, op, value } = s else {
            return None;
        };
        if !matches!(op, Accum::Add | Accum::Max | Accum::Min)
            || reductions.iter().any(|(v, _)| v == var)
        {
            return None;
        }
        reductions.push((*var, *op));
        reads.add(value);
    }
    if reductions.len() != c.carried.len() || c.carried.iter().any(|k| reads.var(k.var)) {
        return None;
    }
    let mut written = HashSet::new();
    for s in &c.stmts {
        crate::loops::analysis::walk::stmt_accesses(s, &mut |a, write| {
            if write {
                written.insert(a.tensor);
            }
        });
    }
    let float = |a: &Access| p.tensors.get(a.tensor.0).map(|t| t.dtype) == Some(p.dtype);
    reads
        .loads
        .iter()
        .all(|a| {
            !a.checked
                && float(a)
                && !written.contains(&a.tensor)
                && stride(a, c.id) != Stride::Other
        })
        .then_some(reductions)
}

/// The axes whose subscripts in `access` move by one with loop `l` (`l` plus terms
/// independent of it), when every other subscript is independent of `l`: the
/// access's address then advances by the same number of bytes every iteration.
/// `None` otherwise.
pub fn unit_axes(access: &Access, l: LoopId) -> Option<Vec<usize>> {
    let mut axes = Vec::new();
    for (axis, s) in access.index.iter().enumerate() {
        let Subscript::Expr(e) = s else {
            return None;
        };
        if is_unit(e, l) {
            axes.push(axis);
        } else if mentions(e, l) {
            return None;
        }
    }
    Some(axes)
}
