//! Which innermost loops run four f32 (two f64) lanes at a time, and how.
//!
//! Cranelift's widest vectors on x86-64 are 128 bits. An innermost loop is
//! vectorized, with a scalar tail for the last `len % lanes` iterations, when:
//!
//! - it carries no variables of its own and has at least one statement;
//! - every access in its statements is proven in range (no checked access), has
//!   no data-dependent subscript, and is either *unit stride* (the last subscript is
//!   the loop index plus something that does not depend on it, the other subscripts
//!   do not depend on it) or *invariant* (no subscript depends on it; loaded once and
//!   broadcast);
//! - loads read tensors of the program's float type (not i32 index tensors);
//!   an invariant load from a tensor the loop does not write is loaded and
//!   broadcast once, before the vector part (which runs only for a whole vector, so
//!   an empty loop still reads nothing);
//! - stores and accumulates are unit stride, and every access to a tensor written in
//!   the loop uses the same subscripts (so lanes never see each other's writes);
//! - a carried variable updated in the loop is a sum, max or min, updated once and
//!   read by no statement of the loop (a reduction: it gets a vector accumulator,
//!   folded into the variable after the vector part).
//!
//! In f32 programs `exp log tanh sigmoid erf` are straight-line code (the `vmath`
//! module) that runs on the whole vector. Other operations without a vector
//! instruction (`sin`, `pow`, `floor`, f64's math, ...) run lane by lane inside the
//! vector loop. Either way they give the scalar results. A vectorized sum adds in
//! a different order than the loop IR says (lane-wise partial sums, then the lanes):
//! the result can differ in the last bits (about `n * eps * sum|x|` for `n` terms),
//! and the fuzz tests allow for that. Max and min reductions are exact.
//!
//! Schedule annotations (the loop IR's `Schedule`) this backend honors:
//!
//! - `split` on a reduction loop, and any loop whose reductions are all max or min:
//!   the main loop runs four vectors per iteration with one vector accumulator per
//!   copy (16 f32 partial results: element `start + 16m + 4k + j` goes to lane `j` of
//!   accumulator `k`), then single vectors into accumulator 0, then the scalar tail.
//!   After the loop the accumulators are combined in order, lane-wise, then their
//!   lanes in order into the variable. This is the same kind of reassociation as the
//!   Rust backend's `LANES` partial results (fixed per-position partial sums, combined
//!   in order), with fewer of them. Without `split` a sum keeps one accumulator.
//! - Element-wise loops without reductions are unrolled the same way (exact: lanes
//!   never see each other's writes), except when a body calls inline math or runs an
//!   operation lane by lane: those already keep the vector units busy, and four
//!   copies only spill registers.
//! - `blocked` on a copy `for r { for c { dst[..] = src[..] } }` whose destination is
//!   unit stride along `c` and source unit stride along `r` (a transpose): 16 × 16
//!   cache blocks of 4 × 4 tiles (2 × 2 in f64) loaded as vectors along `r`,
//!   transposed in registers with unpack shuffles and stored along `c`; the ragged
//!   edges run element by element. Exact (only stores, each once).
//! - `jammed` on a nest `for r { for c { y[..] op= f(r, c) } }` (the `order` pass's
//!   column sums; the mark is verified, [`jam_plan`] adds the limit of this
//!   realization) runs four rows at a time: each output vector is loaded once,
//!   combined with the four rows' values in row order, and stored once. Exact.
//! - `tile` on a nest of [`tile_plan`]: register tiles of 4 rows by 2 vectors of
//!   columns, each cell's sum in a lane of a vector accumulator (the
//!   `translate::tile` module); the innermost reduction loop carries the
//!   addresses of its loads that advance by a fixed step ([`unit_axes`]). Exact:
//!   each cell adds its terms in the nest's order.
//! - `parallel` is ignored: kernels run on one thread.

use std::collections::HashSet;

use crate::index::Expr;
use crate::loops::analysis::{self, Stride, coefficient};
use crate::loops::{Access, Loop, LoopId, LoopProgram, Stmt, Subscript, TensorId, Value, VarId};
use crate::uop::{Accum, BinaryOp, UnaryOp};

/// A loop that can be vectorized, and its reductions.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct VectorPlan {
    /// Carried variables updated in the loop, with their operator.
    pub reductions: Vec<(VarId, Accum)>,
    /// How many vectors one iteration of the main loop handles (1 or 4); with
    /// reductions, also how many vector accumulators each one gets.
    pub unroll: u8,
}

/// True when `v` calls a function that takes many instructions per vector (inline
/// math, or an operation run lane by lane): such bodies already keep the machine
/// busy, and unrolling them only adds register pressure.
fn heavy(v: &Value) -> bool {
    match v {
        Value::Unary(op, x) => {
            !matches!(
                op,
                UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sqrt | UnaryOp::Recip
            ) || heavy(x)
        }
        Value::Binary(op, a, b) => *op == BinaryOp::Pow || heavy(a) || heavy(b),
        Value::Where(c, a, b) => heavy(c) || heavy(a) || heavy(b),
        Value::Load { .. } | Value::Var(_) | Value::Const(_) | Value::Param(_) => false,
        Value::Index(_) => true,
    }
}

/// The unroll factor of a vectorizable loop (see [`VectorPlan::unroll`]). Several
/// accumulators reassociate a sum further, so a loop with sums or products gets them
/// only when its schedule says `split`; max and min are exact in any order.
fn unroll(l: &Loop, reductions: &[(VarId, Accum)]) -> u8 {
    let values = l.stmts.iter().map(|s| match s {
        Stmt::Store { value, .. } | Stmt::Accumulate { value, .. } | Stmt::Update { value, .. } => {
            value
        }
    });
    let exact = reductions
        .iter()
        .all(|(_, op)| matches!(op, Accum::Max | Accum::Min));
    if (!l.schedule.split && !exact) || values.clone().any(heavy) {
        1
    } else {
        4
    }
}

fn mentions(e: &Expr, l: LoopId) -> bool {
    e.indices().contains(&l.0)
}

/// True when `e` is the loop index plus (or minus) terms independent of it.
fn is_unit(e: &Expr, l: LoopId) -> bool {
    coefficient(e, l.0) == Some(1)
}

/// The stride of an access along loop `l` ([`crate::loops::analysis::stride`]), with
/// any data-dependent subscript [`Stride::Other`]: a vector loop computes no
/// subscript from a float.
pub(crate) fn stride(access: &Access, l: LoopId) -> Stride {
    if access
        .index
        .iter()
        .any(|s| matches!(s, Subscript::Value(_)))
    {
        return Stride::Other;
    }
    analysis::stride(access, l.0)
}

/// What the statements of a loop read.
#[derive(Default)]
struct Reads<'a> {
    loads: Vec<&'a Access>,
    vars: HashSet<VarId>,
}

fn collect<'a>(v: &'a Value, r: &mut Reads<'a>) {
    match v {
        Value::Load { access, .. } => {
            r.loads.push(access);
            for s in &access.index {
                if let Subscript::Value(x) = s {
                    collect(x, r);
                }
            }
        }
        Value::Var(var) => {
            r.vars.insert(*var);
        }
        Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => collect(x, r),
        Value::Binary(_, a, b) => {
            collect(a, r);
            collect(b, r);
        }
        Value::Where(c, a, b) => {
            collect(c, r);
            collect(a, r);
            collect(b, r);
        }
    }
}

/// The plan for vectorizing the innermost loop `l` of program `p`, if it qualifies.
pub(crate) fn plan(p: &LoopProgram, l: &Loop) -> Option<VectorPlan> {
    if !l.carried.is_empty() || l.stmts.is_empty() {
        return None;
    }
    let mut reads = Reads::default();
    let mut writes: Vec<&Access> = Vec::new();
    let mut reductions: Vec<(VarId, Accum)> = Vec::new();
    for s in &l.stmts {
        match s {
            Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
                writes.push(access);
                collect(value, &mut reads);
            }
            Stmt::Update { var, op, value } => {
                if !matches!(op, Accum::Add | Accum::Max | Accum::Min)
                    || reductions.iter().any(|(v, _)| v == var)
                {
                    return None;
                }
                reductions.push((*var, *op));
                collect(value, &mut reads);
            }
        }
    }
    if reductions.iter().any(|(v, _)| reads.vars.contains(v)) {
        return None;
    }
    let float = |a: &Access| p.tensors.get(a.tensor.0).map(|t| t.dtype) == Some(p.dtype);
    for a in reads.loads.iter().chain(&writes) {
        if a.checked || !float(a) || stride(a, l.id) == Stride::Other {
            return None;
        }
    }
    if writes.iter().any(|a| stride(a, l.id) != Stride::Unit) {
        return None;
    }
    let written: HashSet<TensorId> = writes.iter().map(|a| a.tensor).collect();
    for t in written {
        let mut accesses = reads.loads.iter().chain(&writes).filter(|a| a.tensor == t);
        let first = accesses.next()?;
        if accesses.any(|a| a.index != first.index) {
            return None;
        }
    }
    let unroll = unroll(l, &reductions);
    Some(VectorPlan { reductions, unroll })
}

/// The two accesses of a nest `for r { for c [blocked] { dst[..] = src[..] } }` that
/// can run as `lanes × lanes` tiles transposed in registers: a
/// [`transpose_copy`](crate::loops::analysis::transpose_copy) marked `[blocked]`.
pub(crate) fn transpose_plan<'p>(
    p: &LoopProgram,
    r: &'p Loop,
    c: &'p Loop,
) -> Option<(&'p Access, &'p Access)> {
    if !c.schedule.blocked {
        return None;
    }
    crate::loops::analysis::transpose_copy(p, r, c)
}

/// True for a nest `for r { for c [jammed] { y[..] op= f(r, c) } }` this backend
/// jams: the `[jammed]` mark is trusted (`loops::verify` checks all it guarantees,
/// [`jammable`](crate::loops::analysis::jammable)); what is checked here is this
/// realization's limit, `c` a vector loop without reductions.
pub(crate) fn jam_plan(p: &LoopProgram, c: &Loop) -> bool {
    c.schedule.jammed && plan(p, c).is_some_and(|plan| plan.reductions.is_empty())
}

/// A register tile the JIT can run (see [`Schedule::tile`](crate::loops::Schedule)):
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
pub(crate) fn tile_plan(p: &LoopProgram, loops: &[Loop]) -> Option<Vec<(VarId, Accum)>> {
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
        collect(value, &mut reads);
    }
    if reductions.len() != c.carried.len() || c.carried.iter().any(|k| reads.vars.contains(&k.var))
    {
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
pub(crate) fn unit_axes(access: &Access, l: LoopId) -> Option<Vec<usize>> {
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

/// The loads of `l`'s statements that do not move with `l` (no subscript depends on
/// its index), from tensors no statement of `l` writes, each once: their value is
/// the same in every iteration, so a vector loop loads and broadcasts them before
/// it starts.
pub(crate) fn invariant_loads(l: &Loop) -> Vec<Value> {
    let mut written = HashSet::new();
    for s in &l.stmts {
        crate::loops::analysis::walk::stmt_accesses(s, &mut |a, write| {
            if write {
                written.insert(a.tensor);
            }
        });
    }
    let mut loads: Vec<Value> = Vec::new();
    for s in &l.stmts {
        crate::loops::analysis::walk::stmt_accesses(s, &mut |a, write| {
            let load = Value::Load {
                access: a.clone(),
                fill: 0.0,
            };
            if !write
                && !written.contains(&a.tensor)
                && stride(a, l.id) == Stride::Zero
                && !loads.contains(&load)
            {
                loads.push(load);
            }
        });
    }
    loads
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_and_invariant_strides() {
        let l = LoopId(2);
        let access = |index: Vec<Expr>| Access {
            tensor: TensorId(0),
            index: index.into_iter().map(Subscript::Expr).collect(),
            checked: false,
        };
        let i = |n| Expr::Index(n);
        assert_eq!(stride(&access(vec![i(0), i(2)]), l), Stride::Unit);
        assert_eq!(
            stride(&access(vec![i(0), i(2) + Expr::Int(1)]), l),
            Stride::Unit
        );
        assert_eq!(stride(&access(vec![i(0), i(1)]), l), Stride::Zero);
        assert_eq!(stride(&access(vec![i(2), i(1)]), l), Stride::Other);
        assert_eq!(
            stride(&access(vec![i(0), Expr::Int(2) * i(2)]), l),
            Stride::Other
        );
        assert_eq!(stride(&access(vec![]), l), Stride::Zero);
        // A data-dependent subscript is never vectorized, even when it does not move.
        let mut data = access(vec![i(0)]);
        data.index
            .push(Subscript::Value(Box::new(Value::Const(1.0))));
        assert_eq!(stride(&data, l), Stride::Other);
    }
}
