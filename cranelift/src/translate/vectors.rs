//! Vector loops of a [`VectorPlan`]: unrolled copies, reductions into vector accumulators, hoisted invariant loads.

use super::*;

impl<M: Module> Translator<'_, '_, M> {
    pub(super) fn vector_type(&self) -> Type {
        if self.ty == F32 { F32X4 } else { F64X2 }
    }

    pub(super) fn lanes(&self) -> u8 {
        self.vector_type().lane_count() as u8
    }

    /// The vector part of an innermost loop: whole groups of lanes from `start`,
    /// leaving `iv` at the first iteration the scalar loop still has to run.
    ///
    /// With `plan.unroll = u > 1`, a main loop first runs `u` vectors per iteration
    /// (copy `k` at lanes `4k..4k + 4` of the chunk), each reduction keeping one
    /// vector accumulator per copy; then single vectors run into accumulator 0. The
    /// accumulators are combined in order (0 op 1 op ...), lane-wise, then their
    /// lanes in order into the variable.
    pub(super) fn vector_loop(
        &mut self,
        cx: &Cx,
        l: &Loop,
        plan: &VectorPlan,
        iv: Variable,
        start: IrValue,
        end: IrValue,
    ) -> Result<(), JitError> {
        let lanes = self.lanes() as i64;
        let unroll = i64::from(plan.unroll.max(1));
        let vt = self.vector_type();
        let count = self.trip_count(start, end);
        let calls = self.run_calls(cx, l);
        // Runs of math calls unroll their statements (`runs.rs`), each copy with
        // its own accumulators.
        let copies_n = if calls.is_empty() {
            unroll
        } else {
            unroll.max(runs::RUN_UNROLL)
        };
        let mut accs = Vec::with_capacity(plan.reductions.len());
        for &(var, op) in &plan.reductions {
            let mut copies = Vec::with_capacity(copies_n as usize);
            for _ in 0..copies_n {
                let acc = self.b.declare_var(vt);
                let id = self.float_const(op.identity());
                let splat = self.b.ins().splat(vt, id);
                self.b.def_var(acc, splat);
                copies.push(acc);
            }
            accs.push((var, op, copies));
        }
        // The vector part runs only for a whole vector or more; only then are the
        // invariant loads made (an empty loop reads nothing).
        let whole = self.b.ins().band_imm_s(count, -lanes);
        let runs = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, whole, 0);
        let (vector_part, after) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(runs, vector_part, &[], after, &[]);
        self.b.switch_to_block(vector_part);
        self.b.seal_block(vector_part);
        let mut hoisted = Vec::new();
        for load in plan::invariant_loads(l) {
            // In a jam, a load that moves with the rows is loaded per row.
            if let (Some((r, ..)), Value::Load { access, .. }) = (cx.jam, &load)
                && crate::loops::analysis::access_mentions(access, r)
            {
                continue;
            }
            let x = self.value(cx, &load)?;
            let v = self.splat(x);
            if let Value::Load { access, .. } = load {
                hoisted.push((access, v));
            }
        }
        let cx = &Cx {
            hoisted,
            ..cx.clone()
        };
        if !calls.is_empty() {
            self.math_runs(cx, l, &calls, &accs, iv, (start, count))?;
        }
        if unroll > 1 {
            let chunk = lanes * unroll;
            let big = self.b.ins().band_imm_s(count, -chunk);
            let big_end = self.b.ins().iadd(start, big);
            self.counted_loop(iv, big_end, chunk, |t, i| {
                t.loops.insert(l.id.0, i);
                for k in 0..unroll {
                    let copy = Cx {
                        lane_offset: k * lanes,
                        ..cx.clone()
                    };
                    for s in &l.stmts {
                        t.vector_stmt(&copy, l, s, &accs, k as usize)?;
                    }
                }
                Ok(())
            })?;
        }
        let vec_end = self.b.ins().iadd(start, whole);
        self.counted_loop(iv, vec_end, lanes, |t, i| {
            t.loops.insert(l.id.0, i);
            for s in &l.stmts {
                t.vector_stmt(cx, l, s, &accs, 0)?;
            }
            Ok(())
        })?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        for (var, op, copies) in &accs {
            let mut v = self.b.use_var(copies[0]);
            for &acc in &copies[1..] {
                let x = self.b.use_var(acc);
                v = self.combine(*op, v, x);
            }
            let mut folded = self.b.ins().extractlane(v, 0);
            for lane in 1..self.lanes() {
                let x = self.b.ins().extractlane(v, lane);
                folded = self.combine(*op, folded, x);
            }
            let variable = self.vars[&var.0];
            let old = self.b.use_var(variable);
            let new = self.combine(*op, old, folded);
            self.b.def_var(variable, new);
        }
        Ok(())
    }

    /// The byte offset of the current unrolled copy for a unit-stride access.
    pub(super) fn copy_bytes(&self, cx: &Cx) -> i32 {
        let size = if self.ty == F32 { 4 } else { 8 };
        (cx.lane_offset * size) as i32
    }

    pub(super) fn vector_flags() -> MemFlagsData {
        MemFlagsData::new().with_notrap()
    }

    pub(super) fn vector_stmt(
        &mut self,
        cx: &Cx,
        l: &Loop,
        s: &Stmt,
        accs: &[(crate::loops::VarId, Accum, Vec<Variable>)],
        copy: usize,
    ) -> Result<(), JitError> {
        let at = self.copy_bytes(cx);
        match s {
            Stmt::Store { access, value } => {
                self.target_type(access, "a store")?;
                let v = self.vector_value(cx, l, value)?;
                let (addr, _) = self.address(cx, access)?;
                self.b.ins().store(Self::vector_flags(), v, addr, at);
            }
            Stmt::Accumulate { access, op, value } => {
                self.target_type(access, "an accumulation")?;
                let vs = self.jammed(cx, |t| t.vector_value(cx, l, value))?;
                let (addr, _) = self.address(cx, access)?;
                let vt = self.vector_type();
                let mut acc = self.b.ins().load(vt, Self::vector_flags(), addr, at);
                for v in vs {
                    acc = self.combine(*op, acc, v);
                }
                self.b.ins().store(Self::vector_flags(), acc, addr, at);
            }
            Stmt::Update { var, op, value } => {
                let v = self.vector_value(cx, l, value)?;
                let Some(&acc) = accs
                    .iter()
                    .find(|(x, _, _)| x == var)
                    .and_then(|(_, _, copies)| copies.get(copy))
                else {
                    return self.unsupported(format!("v{} has no vector accumulator", var.0));
                };
                let old = self.b.use_var(acc);
                let new = self.combine(*op, old, v);
                self.b.def_var(acc, new);
            }
        }
        Ok(())
    }

    pub(super) fn splat(&mut self, x: IrValue) -> IrValue {
        let vt = self.vector_type();
        self.b.ins().splat(vt, x)
    }

    /// Applies a scalar operation lane by lane.
    pub(super) fn lanewise(
        &mut self,
        inputs: &[IrValue],
        mut f: impl FnMut(&mut Self, &[IrValue]) -> IrValue,
    ) -> IrValue {
        let mut out: Option<IrValue> = None;
        for lane in 0..self.lanes() {
            let xs: Vec<IrValue> = inputs
                .iter()
                .map(|&v| self.b.ins().extractlane(v, lane))
                .collect();
            let r = f(self, &xs);
            out = Some(match out {
                None => self.splat(r),
                Some(v) => self.b.ins().insertlane(v, r, lane),
            });
        }
        out.unwrap_or_else(|| unreachable!("vectors have lanes"))
    }

    /// A float vector of 1.0 where `mask` is set and 0.0 elsewhere.
    pub(super) fn mask_to_float(&mut self, mask: IrValue, a: IrValue, b: IrValue) -> IrValue {
        let vt = self.vector_type();
        let m = self.b.ins().bitcast(vt, MemFlagsData::new(), mask);
        self.b.ins().bitselect(m, a, b)
    }

    pub(super) fn vector_value(
        &mut self,
        cx: &Cx,
        l: &Loop,
        v: &Value,
    ) -> Result<IrValue, JitError> {
        let vt = self.vector_type();
        if let Value::Unary(..) = v
            && let Some(x) = self.run_value(cx, l, v)
        {
            return Ok(x);
        }
        Ok(match v {
            Value::Load { access, .. } => match plan::stride(access, l.id) {
                Stride::Unit => {
                    let (addr, _) = self.address(cx, access)?;
                    let at = self.copy_bytes(cx);
                    self.b.ins().load(vt, Self::vector_flags(), addr, at)
                }
                _ => match cx.hoisted.iter().find(|(a, _)| a == access) {
                    Some(&(_, v)) => v,
                    None => {
                        let x = self.value(cx, v)?;
                        self.splat(x)
                    }
                },
            },
            Value::Var(_) | Value::Const(_) | Value::Param(_) => {
                let x = self.value(cx, v)?;
                self.splat(x)
            }
            Value::Index(e) => {
                if e.indices().contains(&l.id.0) {
                    let i = self.loops[&l.id.0];
                    let mut out: Option<IrValue> = None;
                    for lane in 0..self.lanes() {
                        let at = self.b.ins().iadd_imm_s(i, cx.lane_offset + lane as i64);
                        self.loops.insert(l.id.0, at);
                        let x = self.value(cx, v)?;
                        out = Some(match out {
                            None => self.splat(x),
                            Some(acc) => self.b.ins().insertlane(acc, x, lane),
                        });
                    }
                    self.loops.insert(l.id.0, i);
                    out.unwrap_or_else(|| unreachable!("vectors have lanes"))
                } else {
                    let x = self.value(cx, v)?;
                    self.splat(x)
                }
            }
            Value::Unary(op, x) => {
                let x = self.vector_value(cx, l, x)?;
                match op {
                    UnaryOp::Neg => self.b.ins().fneg(x),
                    UnaryOp::Abs => self.b.ins().fabs(x),
                    UnaryOp::Sqrt => self.b.ins().sqrt(x),
                    UnaryOp::Recip => {
                        let one = self.float_const(1.0);
                        let ones = self.splat(one);
                        self.b.ins().fdiv(ones, x)
                    }
                    _ => match Inline::of(*op) {
                        Some(f) if self.ty == F32 => {
                            vmath::emit(&mut self.b, f, x, self.target.fma)
                        }
                        _ => self.lanewise(&[x], |t, xs| t.unary(*op, xs[0])),
                    },
                }
            }
            Value::Binary(op, a, b) => {
                let a = self.vector_value(cx, l, a)?;
                let b = self.vector_value(cx, l, b)?;
                let cc = match op {
                    BinaryOp::Add => return Ok(self.b.ins().fadd(a, b)),
                    BinaryOp::Sub => return Ok(self.b.ins().fsub(a, b)),
                    BinaryOp::Mul => return Ok(self.b.ins().fmul(a, b)),
                    BinaryOp::Div => return Ok(self.b.ins().fdiv(a, b)),
                    BinaryOp::Maximum => return Ok(self.b.ins().fmax(a, b)),
                    BinaryOp::Minimum => return Ok(self.b.ins().fmin(a, b)),
                    BinaryOp::Pow => {
                        return Ok(self.lanewise(&[a, b], |t, xs| t.binary(*op, xs[0], xs[1])));
                    }
                    BinaryOp::Eq => FloatCC::Equal,
                    BinaryOp::Ne => FloatCC::NotEqual,
                    BinaryOp::Lt => FloatCC::LessThan,
                    BinaryOp::Le => FloatCC::LessThanOrEqual,
                    BinaryOp::Gt => FloatCC::GreaterThan,
                    BinaryOp::Ge => FloatCC::GreaterThanOrEqual,
                };
                let mask = self.b.ins().fcmp(cc, a, b);
                let one = self.float_const(1.0);
                let zero = self.float_const(0.0);
                let (ones, zeros) = (self.splat(one), self.splat(zero));
                self.mask_to_float(mask, ones, zeros)
            }
            Value::Where(c, a, b) => {
                let c = self.vector_value(cx, l, c)?;
                let a = self.vector_value(cx, l, a)?;
                let b = self.vector_value(cx, l, b)?;
                let zero = self.float_const(0.0);
                let zeros = self.splat(zero);
                let mask = self.b.ins().fcmp(FloatCC::NotEqual, c, zeros);
                self.mask_to_float(mask, a, b)
            }
        })
    }
}
