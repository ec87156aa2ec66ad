//! The vector plan: which innermost loops run a vector of the target's lanes at a
//! time ([`vector_plan`]), and the jammed rows ([`jam_plan`]). Cranelift realizes
//! it (its vectors are 128 bits: four f32, two f64 lanes).
//!
//! An innermost loop is vectorized, with a scalar tail for the last
//! `len % lanes` iterations, when:
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
//!   the main loop runs four vectors per iteration (the target's
//!   [`lanes`](Target::lanes) of f32 partial results, in whole vectors) with one vector accumulator per
//!   copy (16 f32 partial results: element `start + 16m + 4k + j` goes to lane `j` of
//!   accumulator `k`), then single vectors into accumulator 0, then the scalar tail.
//!   After the loop the accumulators are combined in order, lane-wise, then their
//!   lanes in order into the variable. This is the same kind of reassociation as the
//!   Rust backend's `LANES` partial results (fixed per-position partial sums, combined
//!   in order), with fewer of them. Without `split` a sum keeps one accumulator.
//! - Element-wise loops without reductions are unrolled the same way (exact: lanes
//!   never see each other's writes), except when a body is
//!   [`math_heavy`](crate::loops::analysis::math_heavy) (inline math or a call):
//!   those already keep the vector units busy, and four copies only spill
//!   registers. Operations run lane by lane without a call (`rsqrt floor ceil
//!   sign`, index values) are a few instructions per lane and are unrolled.
//! - `blocked` on a copy `for r { for c { dst[..] = src[..] } }` whose destination is
//!   unit stride along `c` and source unit stride along `r` (a transpose): 16 × 16
//!   cache blocks of 4 × 4 tiles (2 × 2 in f64) loaded as vectors along `r`,
//!   transposed in registers with unpack shuffles and stored along `c`; the ragged
//!   edges run element by element. Exact (only stores, each once).
//! - `jammed` on a nest `for r { for c { y[..] op= f(r, c) } }` (the `order` pass's
//!   column sums; the mark is verified, [`jam_plan`] adds the limit of the
//!   realization) runs four rows at a time: each output vector is loaded once,
//!   combined with the four rows' values in row order, and stored once. Exact.
//! - `tile` on a nest of [`tile_plan`](super::tile_plan): register tiles of 4 rows by 2 vectors of
//!   columns, each cell's sum in a lane of a vector accumulator (the
//!   `translate::tile` module); the innermost reduction loop carries the
//!   addresses of its loads that advance by a fixed step
//!   ([`unit_axes`](super::unit_axes)). Exact:
//!   each cell adds its terms in the nest's order.
//! - `parallel` is ignored: Cranelift's kernels run on one thread.

use std::collections::HashSet;

use crate::loops::analysis::walk::{value_loads, value_reads_var};
use crate::loops::analysis::{self, Stride, math_heavy};
use crate::loops::{Access, Loop, LoopId, LoopProgram, Stmt, Subscript, TensorId, Value, VarId};
use crate::target::Target;
use crate::uop::Accum;

/// A loop that can be vectorized, and its reductions.
#[derive(Clone, Debug, PartialEq)]
pub struct VectorPlan {
    /// Carried variables updated in the loop, with their operator.
    pub reductions: Vec<(VarId, Accum)>,
    /// How many vectors one iteration of the main loop handles (1, or the
    /// target's [`lanes`](Target::lanes) in f32 vectors: 4 for Cranelift); with
    /// reductions, also how many vector accumulators each one gets.
    pub unroll: u32,
}

/// The unroll factor of a vectorizable loop (see [`VectorPlan::unroll`]). Several
/// accumulators reassociate a sum further, so a loop with sums or products gets them
/// only when its schedule says `split`; max and min are exact in any order. A
/// [`math_heavy`] body is not unrolled.
fn unroll(l: &Loop, reductions: &[(VarId, Accum)], target: &Target) -> u32 {
    let values = l.stmts.iter().map(|s| match s {
        Stmt::Store { value, .. } | Stmt::Accumulate { value, .. } | Stmt::Update { value, .. } => {
            value
        }
    });
    let exact = reductions
        .iter()
        .all(|(_, op)| matches!(op, Accum::Max | Accum::Min));
    if (!l.schedule.split && !exact) || values.clone().any(math_heavy) {
        1
    } else {
        target.lanes / target.vector_lanes(4)
    }
}

/// The stride of an access along loop `l` ([`crate::loops::analysis::stride`]), with
/// any data-dependent subscript [`Stride::Other`]: a vector loop computes no
/// subscript from a float.
pub fn stride(access: &Access, l: LoopId) -> Stride {
    if access
        .index
        .iter()
        .any(|s| matches!(s, Subscript::Value(_)))
    {
        return Stride::Other;
    }
    analysis::stride(access, l.0)
}

/// What the statements of a loop read: the loads of their values (nested ones
/// included, [`value_loads`]), and the values, to ask which carried variables they
/// read.
#[derive(Default)]
pub(super) struct Reads<'a> {
    pub loads: Vec<Access>,
    values: Vec<&'a Value>,
}

impl<'a> Reads<'a> {
    /// Adds what `v` reads.
    pub(super) fn add(&mut self, v: &'a Value) {
        value_loads(v, &mut |a, _| self.loads.push(a.clone()));
        self.values.push(v);
    }

    /// Whether a value added reads the carried variable `var`.
    pub(super) fn var(&self, var: VarId) -> bool {
        self.values.iter().any(|v| value_reads_var(v, var))
    }
}

/// The plan for vectorizing the innermost loop `l` of program `p` on `target`, if
/// it qualifies.
pub fn vector_plan(p: &LoopProgram, l: &Loop, target: &Target) -> Option<VectorPlan> {
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
                reads.add(value);
            }
            Stmt::Update { var, op, value } => {
                if !matches!(op, Accum::Add | Accum::Max | Accum::Min)
                    || reductions.iter().any(|(v, _)| v == var)
                {
                    return None;
                }
                reductions.push((*var, *op));
                reads.add(value);
            }
        }
    }
    if reductions.iter().any(|&(v, _)| reads.var(v)) {
        return None;
    }
    let float = |a: &Access| p.tensors.get(a.tensor.0).map(|t| t.dtype) == Some(p.dtype);
    for a in reads.loads.iter().chain(writes.iter().copied()) {
        if a.checked || !float(a) || stride(a, l.id) == Stride::Other {
            return None;
        }
    }
    if writes.iter().any(|a| stride(a, l.id) != Stride::Unit) {
        return None;
    }
    let written: HashSet<TensorId> = writes.iter().map(|a| a.tensor).collect();
    for t in written {
        let mut accesses = reads
            .loads
            .iter()
            .chain(writes.iter().copied())
            .filter(|a| a.tensor == t);
        let first = accesses.next()?;
        if accesses.any(|a| a.index != first.index) {
            return None;
        }
    }
    let unroll = unroll(l, &reductions, target);
    Some(VectorPlan { reductions, unroll })
}

/// True for a nest `for r { for c [jammed] { y[..] op= f(r, c) } }` whose rows run
/// [`jam_rows`](Target::jam_rows) at a time: the `[jammed]` mark is trusted
/// (`loops::verify` checks all it guarantees,
/// [`jammable`](crate::loops::analysis::jammable)); what is checked here is the
/// realization's limit (Cranelift's; the Rust copies do not jam), `c` a vector
/// loop without reductions.
pub fn jam_plan(p: &LoopProgram, c: &Loop, target: &Target) -> bool {
    c.schedule.jammed && vector_plan(p, c, target).is_some_and(|plan| plan.reductions.is_empty())
}

/// The loads of `l`'s statements that do not move with `l` (no subscript depends on
/// its index), from tensors no statement of `l` writes, each once: their value is
/// the same in every iteration, so a vector loop loads and broadcasts them before
/// it starts.
pub fn invariant_loads(l: &Loop) -> Vec<Value> {
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
    use crate::index::Expr;
    use crate::loops::parse_program;

    /// The unroll of the vector plan of the innermost loop of `text`'s first block
    /// on Cranelift's target.
    fn unroll_of(text: &str) -> u32 {
        let p = parse_program(text).unwrap_or_else(|e| panic!("{e}"));
        let l = p.blocks[0].loops.last().expect("a loop");
        vector_plan(&p, l, &Target::cranelift(true))
            .expect("a vector loop")
            .unroll
    }

    #[test]
    fn math_heavy_bodies_run_one_vector_at_a_time() {
        let exp = "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = exp(x[i0]) * 0.5\n  }\n}\n";
        assert_eq!(unroll_of(exp), 1);
        let pow = "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = pow(x[i0], 3.0)\n  }\n}\n";
        assert_eq!(unroll_of(pow), 1);
    }

    #[test]
    fn short_operations_lane_by_lane_are_unrolled_four_vectors() {
        // `rsqrt`, `floor` and index values run lane by lane in Cranelift without a
        // call: not math-heavy, so the loop keeps four vectors in flight.
        let rsqrt = "input  x: f32[N]\noutput y: f32[N]\nblock 0 {\n  for i0 in 0..N {\n    y[i0] = rsqrt(x[i0]) + floor(x[i0])\n  }\n}\n";
        assert_eq!(unroll_of(rsqrt), 4);
        // A row's argmin by index: a min over index values, split (exact anyway).
        let argmin = "input  x: f32[B, N]\noutput y: f32[B]\nblock 0 {\n  for i0 in 0..B {\n    v0 = inf (min)\n    for i1 in 0..N [split] {\n      v0 min= where(x[i0, i1] == 0.0, i1, inf)\n    }\n    y[i0] = v0\n  }\n}\n";
        assert_eq!(unroll_of(argmin), 4);
        // The unroll is the target's split-reduction lanes in f32 vectors.
        let t = Target::cranelift(true);
        assert_eq!(t.lanes / t.vector_lanes(4), 4);
    }

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
