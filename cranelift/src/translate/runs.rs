//! Math over runs of lanes (JIT, f32): a vector loop whose statements call `exp`,
//! `log`, `tanh`, `sigmoid` or `erf` ([`plan::math_runs`]) runs its whole runs of
//! [`RUN`] lanes first as
//!
//! ```text
//! for each run {
//!     for each call, inner calls first {
//!         buffer[call][lane] = its argument, four vectors of four lanes at a time
//!         uop_vmath_f32_LEVEL(function, buffer[call], RUN)   // the CPU level's vectors
//!     }
//!     the statements, four vectors at a time (a reduction in four accumulators),
//!     each call's value read from its buffer
//! }
//! ```
//!
//! and the lanes after the last whole run as before (the inline polynomials).
//! The runtime's functions are the same `vmath` polynomials on the CPU level's
//! vectors, many chains at once, where the inline code runs one chain of four
//! lanes: gelu's and softmax's time went to that chain.

use cranelift_codegen::ir::StackSlot;
use uop_runtime::math_runs as rt_runs;

use super::*;

/// Lanes per run: each call's buffer holds a run (1 KiB of f32), in the
/// first-level cache with the run's inputs.
pub(super) const RUN: i64 = 256;

/// Vectors each phase of a run handles per iteration (a multiple of it fills a
/// run): independent chains in flight, and the statements' reductions kept in
/// as many accumulators (the vector loop allocates them).
pub(super) const RUN_UNROLL: i64 = 4;

/// The runtime's code of the function of a run call.
fn code(op: UnaryOp) -> Option<i32> {
    Some(match op {
        UnaryOp::Exp => rt_runs::EXP,
        UnaryOp::Log => rt_runs::LOG,
        UnaryOp::Tanh => rt_runs::TANH,
        UnaryOp::Sigmoid => rt_runs::SIGMOID,
        UnaryOp::Erf => rt_runs::ERF,
        _ => return None,
    })
}

impl<M: Module> Translator<'_, '_, M> {
    /// The calls of `l` this translator computes over runs: [`plan::math_runs`]
    /// in a JIT kernel of f32 outside a jam (whose rows share the loop).
    pub(super) fn run_calls(&self, cx: &Cx, l: &Loop) -> Vec<Value> {
        if self.linking != Linking::Jit || self.ty != F32 || cx.jam.is_some() {
            return Vec::new();
        }
        plan::math_runs(l)
    }

    /// Runs the whole runs of `l` from `iv` (see the module docs), leaving `iv` at
    /// the first lane after them; `count` is the loop's trip count from `start`.
    pub(super) fn math_runs(
        &mut self,
        cx: &Cx,
        l: &Loop,
        calls: &[Value],
        accs: &[(crate::loops::VarId, Accum, Vec<Variable>)],
        iv: Variable,
        (start, count): (IrValue, IrValue),
    ) -> Result<(), JitError> {
        let slots: Vec<StackSlot> = calls
            .iter()
            .map(|_| {
                self.b.create_sized_stack_slot(StackSlotData::new(
                    StackSlotKind::ExplicitSlot,
                    (RUN * 4) as u32,
                    6,
                ))
            })
            .collect();
        let whole = self.b.ins().band_imm_s(count, -RUN);
        let runs_end = self.b.ins().iadd(start, whole);
        self.counted_loop(iv, runs_end, RUN, |t, run| {
            let end = t.b.ins().iadd_imm_s(run, RUN);
            for (j, call) in calls.iter().enumerate() {
                let Value::Unary(op, arg) = call else {
                    return t.unsupported("a run call that is not a function call");
                };
                let Some(code) = code(*op) else {
                    return t.unsupported(format!("`{op:?}` over a run"));
                };
                let known = Cx {
                    runs: calls[..j]
                        .iter()
                        .cloned()
                        .zip(slots.iter().copied())
                        .collect(),
                    run_start: Some(run),
                    ..cx.clone()
                };
                t.unrolled_lanes(&known, l, (run, end), |t, i, copies| {
                    let at = t.run_address(slots[j], run, i);
                    for copy in copies {
                        let v = t.vector_value(copy, l, arg)?;
                        let bytes = t.copy_bytes(copy);
                        t.b.ins().store(Self::vector_flags(), v, at, bytes);
                    }
                    Ok(())
                })?;
                let f = t.b.ins().iconst(I32, i64::from(code));
                let buffer = t.b.ins().stack_addr(t.ptr, slots[j], 0);
                let n = t.b.ins().iconst(I64, RUN);
                t.call(RuntimeFn::MathRun, &[f, buffer, n]);
            }
            let all = Cx {
                runs: calls.iter().cloned().zip(slots.iter().copied()).collect(),
                run_start: Some(run),
                ..cx.clone()
            };
            t.unrolled_lanes(&all, l, (run, end), |t, _, copies| {
                for (k, copy) in copies.iter().enumerate() {
                    for s in &l.stmts {
                        t.vector_stmt(copy, l, s, accs, k)?;
                    }
                }
                Ok(())
            })
        })
    }

    /// A loop of `l`'s lanes from `run` to `end`, [`RUN_UNROLL`] vectors an
    /// iteration: `body` gets the lane index and one copy of `base` per vector
    /// (its lane offset set), in order.
    fn unrolled_lanes(
        &mut self,
        base: &Cx,
        l: &Loop,
        (run, end): (IrValue, IrValue),
        body: impl FnOnce(&mut Self, IrValue, &[Cx]) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let lanes = i64::from(self.lanes());
        let lane = self.b.declare_var(I64);
        self.b.def_var(lane, run);
        self.counted_loop(lane, end, lanes * RUN_UNROLL, |t, i| {
            t.loops.insert(l.id.0, i);
            let copies: Vec<Cx> = (0..RUN_UNROLL)
                .map(|k| Cx {
                    lane_offset: k * lanes,
                    ..base.clone()
                })
                .collect();
            body(t, i, &copies)
        })
    }

    /// Where lane `i` of a run from `run` sits in `slot`.
    fn run_address(&mut self, slot: StackSlot, run: IrValue, i: IrValue) -> IrValue {
        let from = self.b.ins().isub(i, run);
        let bytes = self.b.ins().ishl_imm_u(from, 2);
        let base = self.b.ins().stack_addr(self.ptr, slot, 0);
        self.b.ins().iadd(base, bytes)
    }

    /// The vector of a run call's values at the current lanes of loop `l`, when
    /// `v` is one ([`Cx::runs`]).
    pub(super) fn run_value(&mut self, cx: &Cx, l: &Loop, v: &Value) -> Option<IrValue> {
        let run = cx.run_start?;
        let &(_, slot) = cx.runs.iter().find(|(call, _)| call == v)?;
        let i = self.loops[&l.id.0];
        let at = self.run_address(slot, run, i);
        let vt = self.vector_type();
        let bytes = self.copy_bytes(cx);
        Some(self.b.ins().load(vt, Self::vector_flags(), at, bytes))
    }
}
