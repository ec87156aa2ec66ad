//! Loops: blocks, joined groups, jammed rows, plain nests and counted loops.

use super::*;

impl<M: Module> Translator<'_, '_, M> {
    pub(super) fn block(&mut self, cx: &Cx, block: &Block) -> Result<(), JitError> {
        self.reset(&block.carried);
        self.nest(cx, &block.loops)?;
        for s in &block.stmts {
            self.stmt(cx, s)?;
        }
        Ok(())
    }

    /// [Joined](crate::loops::Schedule::joined) blocks as one loop over their rows:
    /// row `i` of each block in turn, each block's outer index bound to `i`.
    pub(super) fn joined(&mut self, cx: &Cx, blocks: &[Block]) -> Result<(), JitError> {
        let outer = &blocks[0].loops[0];
        let start = self.index(&outer.start)?;
        let end = self.index(&outer.end)?;
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        self.scalar_loop(iv, end, |t, i| {
            for b in blocks {
                let (l, inner) = (&b.loops[0], &b.loops[1..]);
                t.loops.insert(l.id.0, i);
                t.iteration(cx, l, inner)?;
            }
            Ok(())
        })?;
        for b in blocks {
            self.loops.remove(&b.loops[0].id.0);
        }
        Ok(())
    }

    /// A nest `for r { for c [jammed] { y[..] op= f(r, c) } }` of [`plan::jam_plan`]:
    /// [`Target::jam_rows`] rows at a time (a power of two), each element of `y` loaded once, combined with the
    /// rows' values in row order and stored once (a column sum: one load and one
    /// store of `y` per four rows instead of per row); the last rows run plainly.
    /// Every element gets the same operations in the same order.
    pub(super) fn jammed_rows(&mut self, cx: &Cx, r: &Loop, c: &Loop) -> Result<(), JitError> {
        let jam = i64::from(self.target.jam_rows);
        let start = self.index(&r.start)?;
        let end = self.index(&r.end)?;
        let count = self.trip_count(start, end);
        let whole = self.b.ins().band_imm_s(count, -jam);
        let jam_end = self.b.ins().iadd(start, whole);
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        self.counted_loop(iv, jam_end, jam, |t, i| {
            t.loops.insert(r.id.0, i);
            let cx = Cx {
                jam: Some((r.id.0, i, jam)),
                ..cx.clone()
            };
            t.nest(&cx, std::slice::from_ref(c))
        })?;
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(r.id.0, i);
            t.nest(cx, std::slice::from_ref(c))
        })?;
        self.loops.remove(&r.id.0);
        Ok(())
    }

    /// The number of iterations of `start..end`, at least 0. An `end - start` that
    /// overflows is an index-arithmetic error (such a range is empty or its
    /// arithmetic check fails first anyway).
    pub(super) fn trip_count(&mut self, start: IrValue, end: IrValue) -> IrValue {
        let (count, overflow) = self.b.ins().ssub_overflow(end, start);
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
        self.check(ok, Status::IndexArithmetic);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().smax(count, zero)
    }

    /// `value` for each row of the jam in force (in row order), or once outside one.
    pub(super) fn jammed<T>(
        &mut self,
        cx: &Cx,
        mut value: impl FnMut(&mut Self) -> Result<T, JitError>,
    ) -> Result<Vec<T>, JitError> {
        let Some((r, first, rows)) = cx.jam else {
            return Ok(vec![value(self)?]);
        };
        let mut out = Vec::with_capacity(rows as usize);
        for k in 0..rows {
            let row = self.b.ins().iadd_imm_s(first, k);
            self.loops.insert(r, row);
            out.push(value(self)?);
        }
        self.loops.insert(r, first);
        Ok(out)
    }

    pub(super) fn reset(&mut self, carried: &[crate::loops::Carried]) {
        for c in carried {
            let v = self.float_const(c.op.identity());
            self.b.def_var(self.vars[&c.var.0], v);
        }
    }

    pub(super) fn nest(&mut self, cx: &Cx, loops: &[Loop]) -> Result<(), JitError> {
        let Some((outer, inner)) = loops.split_first() else {
            return Ok(());
        };
        if self.vectorize
            && inner.first().is_some_and(|c| c.schedule.tile.is_some())
            && let Some(reductions) = plan::tile_plan(self.p, loops)
        {
            return self.tiled(cx, loops, &reductions);
        }
        if let [c] = inner
            && self.vectorize
            && let Some((dst, src)) = plan::transpose_plan(self.p, outer, c)
        {
            return self.blocked_transpose(cx, outer, c, dst, src);
        }
        if let [c] = inner
            && self.vectorize
            && plan::jam_plan(self.p, c, &self.target)
        {
            return self.jammed_rows(cx, outer, c);
        }
        let start = self.index(&outer.start)?;
        let end = self.index(&outer.end)?;
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        if inner.is_empty()
            && self.vectorize
            && let Some(plan) = plan::vector_plan(self.p, outer, &self.target)
        {
            self.vector_loop(cx, outer, &plan, iv, start, end)?;
        }
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(outer.id.0, i);
            t.iteration(cx, outer, inner)
        })?;
        self.loops.remove(&outer.id.0);
        Ok(())
    }

    /// One iteration of `l`, its index already bound: its carried variables reset,
    /// the loops `inner` inside it, then its statements.
    pub(super) fn iteration(&mut self, cx: &Cx, l: &Loop, inner: &[Loop]) -> Result<(), JitError> {
        self.reset(&l.carried);
        self.nest(cx, inner)?;
        for s in &l.stmts {
            self.stmt(cx, s)?;
        }
        Ok(())
    }

    /// `while iv < end { body(iv); iv += 1 }`.
    pub(super) fn scalar_loop(
        &mut self,
        iv: Variable,
        end: IrValue,
        body: impl FnOnce(&mut Self, IrValue) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        self.counted_loop(iv, end, 1, body)
    }

    pub(super) fn counted_loop(
        &mut self,
        iv: Variable,
        end: IrValue,
        step: i64,
        body: impl FnOnce(&mut Self, IrValue) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let header = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(iv);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, i, end);
        self.b.ins().brif(more, body_block, &[], exit, &[]);
        self.b.switch_to_block(body_block);
        self.b.seal_block(body_block);
        body(self, i)?;
        // i < end <= i64::MAX, and a vector step stops `step` short of end: no overflow.
        let next = self.b.ins().iadd_imm_s(i, step);
        self.b.def_var(iv, next);
        self.b.ins().jump(header, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        Ok(())
    }
}
