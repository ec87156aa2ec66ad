//! Blocked transposed copies: cache blocks of register tiles transposed with unpack shuffles.

use super::*;

impl<M: Module> Translator<'_, '_, M> {
    /// A blocked nest `for r { for c { dst[..] = src[..] } }` of
    /// [`plan::transpose_plan`]: [`Target::cache_block`]-square cache blocks of `lanes × lanes`
    /// tiles, each read as `lanes` vectors along `r` (one per column), transposed in
    /// registers and written as `lanes` vectors along `c` (one per row); the ragged
    /// right and bottom strips run element by element. Every element is written once
    /// with the value it has in loop order (the nest reads no tensor it writes).
    pub(super) fn blocked_transpose(
        &mut self,
        cx: &Cx,
        rl: &Loop,
        cl: &Loop,
        dst: &Access,
        src: &Access,
    ) -> Result<(), JitError> {
        let (rs, re) = (self.index(&rl.start)?, self.index(&rl.end)?);
        // The inner range is evaluated once, and only when the outer loop runs, as
        // the plain nest would evaluate it (an arithmetic error stays where it was).
        let runs = self.b.ins().icmp(IntCC::SignedLessThan, rs, re);
        let (body, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(runs, body, &[], done, &[]);
        self.b.switch_to_block(body);
        self.b.seal_block(body);
        self.blocked_transpose_in(cx, rl, cl, dst, src, (rs, re))?;
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        self.b.seal_block(done);
        Ok(())
    }

    /// [`Self::blocked_transpose`] once the outer range `rs..re` is known not empty.
    pub(super) fn blocked_transpose_in(
        &mut self,
        cx: &Cx,
        rl: &Loop,
        cl: &Loop,
        dst: &Access,
        src: &Access,
        (rs, re): (IrValue, IrValue),
    ) -> Result<(), JitError> {
        let block = i64::from(self.target.cache_block);
        let lanes = self.lanes() as i64;
        let (cs, ce) = (self.index(&cl.start)?, self.index(&cl.end)?);
        let main_end = |t: &mut Self, start: IrValue, end: IrValue| {
            let count = t.trip_count(start, end);
            let whole = t.b.ins().band_imm_s(count, -lanes);
            t.b.ins().iadd(start, whole)
        };
        let r_main = main_end(self, rs, re);
        let c_main = main_end(self, cs, ce);
        let (r, c) = (rl.id.0, cl.id.0);
        let var = |t: &mut Self, init: IrValue| {
            let v = t.b.declare_var(I64);
            t.b.def_var(v, init);
            v
        };
        let rb = var(self, rs);
        self.counted_loop(rb, r_main, block, |t, rb| {
            let rb_end = t.b.ins().iadd_imm_s(rb, block);
            let rb_end = t.b.ins().smin(rb_end, r_main);
            let cb = var(t, cs);
            t.counted_loop(cb, c_main, block, |t, cb| {
                let cb_end = t.b.ins().iadd_imm_s(cb, block);
                let cb_end = t.b.ins().smin(cb_end, c_main);
                let ri = var(t, rb);
                t.counted_loop(ri, rb_end, lanes, |t, ri| {
                    let ci = var(t, cb);
                    t.counted_loop(ci, cb_end, lanes, |t, ci| {
                        t.transpose_tile(cx, (r, ri), (c, ci), dst, src)
                    })
                })
            })
        })?;
        // The strips: rows rs..r_main by columns c_main..ce, then rows r_main..re by
        // every column.
        for (from, to, c_from) in [(rs, r_main, c_main), (r_main, re, cs)] {
            let ri = var(self, from);
            self.counted_loop(ri, to, 1, |t, ri| {
                t.loops.insert(r, ri);
                let ci = var(t, c_from);
                t.counted_loop(ci, ce, 1, |t, ci| {
                    t.loops.insert(c, ci);
                    for s in &cl.stmts {
                        t.stmt(cx, s)?;
                    }
                    Ok(())
                })
            })?;
        }
        self.loops.remove(&r);
        self.loops.remove(&c);
        Ok(())
    }

    /// One `lanes × lanes` tile of [`Self::blocked_transpose`] at row `ri` of loop `r`,
    /// column `ci` of loop `c`.
    pub(super) fn transpose_tile(
        &mut self,
        cx: &Cx,
        (r, ri): (usize, IrValue),
        (c, ci): (usize, IrValue),
        dst: &Access,
        src: &Access,
    ) -> Result<(), JitError> {
        let vt = self.vector_type();
        let lanes = self.lanes() as i64;
        self.loops.insert(r, ri);
        let mut columns = Vec::with_capacity(lanes as usize);
        for j in 0..lanes {
            let at = self.b.ins().iadd_imm_s(ci, j);
            self.loops.insert(c, at);
            let (addr, _) = self.address(cx, src)?;
            columns.push(self.b.ins().load(vt, Self::vector_flags(), addr, 0));
        }
        let rows = self.transpose(&columns);
        self.loops.insert(c, ci);
        for (k, row) in rows.into_iter().enumerate() {
            let at = self.b.ins().iadd_imm_s(ri, k as i64);
            self.loops.insert(r, at);
            let (addr, _) = self.address(cx, dst)?;
            self.b.ins().store(Self::vector_flags(), row, addr, 0);
        }
        Ok(())
    }

    /// Interleaves the low or high halves of two vectors at `bytes` granularity
    /// (`punpckl*` / `punpckh*`).
    pub(super) fn unpack(&mut self, a: IrValue, b: IrValue, bytes: u8, high: bool) -> IrValue {
        let vt = self.vector_type();
        let little = MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little);
        let x = self.b.ins().bitcast(I8X16, little, a);
        let y = self.b.ins().bitcast(I8X16, little, b);
        let base = if high { 8 } else { 0 };
        let mut mask = Vec::with_capacity(16);
        for pair in 0..(8 / bytes) {
            // `bytes` from `a` (indices 0..16), then as many from `b` (16..32).
            for from in [0u8, 16] {
                for byte in 0..bytes {
                    mask.push(from + base + pair * bytes + byte);
                }
            }
        }
        let imm = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let r = self.b.ins().shuffle(x, y, imm);
        self.b.ins().bitcast(vt, little, r)
    }

    /// The transpose of a square of vectors (`columns[j][k]` becomes `rows[k][j]`).
    pub(super) fn transpose(&mut self, columns: &[IrValue]) -> Vec<IrValue> {
        match columns {
            [a, b] => vec![self.unpack(*a, *b, 8, false), self.unpack(*a, *b, 8, true)],
            [a, b, c, d] => {
                let t0 = self.unpack(*a, *b, 4, false);
                let t1 = self.unpack(*c, *d, 4, false);
                let t2 = self.unpack(*a, *b, 4, true);
                let t3 = self.unpack(*c, *d, 4, true);
                vec![
                    self.unpack(t0, t1, 8, false),
                    self.unpack(t0, t1, 8, true),
                    self.unpack(t2, t3, 8, false),
                    self.unpack(t2, t3, 8, true),
                ]
            }
            _ => unreachable!("vectors have two or four lanes"),
        }
    }
}
