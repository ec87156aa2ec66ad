//! Register tiles computed by the runtime's micro-kernels (JIT only): a tile nest
//! of [`plan::contraction`] (a sum of products of a row operand and a column
//! operand, matmul's and a convolution's) runs as tiles of a CPU level's shape
//! (4 × 8 baseline, 5 × 16 AVX2, 4 × 64 AVX-512, the Rust backend's `MR × NR`),
//! each computed by one call:
//!
//! ```text
//! for each level, the host's (`uop_runtime::microkernel::host_index`) first, then
//! each lower one whose tile is narrower in rows or columns than those before {
//!     if the ranges hold a whole tile of the level {
//!         for each column tile (the last one moved back to end with the range) {
//!             panel = uop_pack_f32(the column operand's columns, every reduction step)
//!             for each row tile (the last one moved back too) {
//!                 uop_contract_f32_LEVEL(row operand, panel, out)
//!                 the column loop's statements on the cells this tile adds (unless
//!                 the plan's store took the results straight to their tensor)
//!             }
//!         }
//!         done
//!     }
//! }
//! every cell one by one, as the loop nest runs them
//! ```
//!
//! So a range narrower than the host's tile (a convolution's 32 output channels
//! against AVX-512's 64 columns) takes the widest tile it holds, AVX2's 16 columns
//! there, rather than the cells one by one; one nest runs one level's tiles
//! throughout, so a cell recomputed by a tile moved back has the same bits.
//!
//! The arguments go through two stack slots laid out as the runtime's
//! `#[repr(C)]` structs; the counts and every address step (per reduction loop,
//! per row, per column) are computed once per nest, as the difference of an
//! operand's address at the loops' first iteration and at the next one. A tile
//! moved back recomputes cells an earlier tile gave, with the same terms in the
//! same order: the same bits, written again or skipped by the epilogue.

use std::mem::offset_of;

use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::{F32, I64};
use cranelift_codegen::ir::{
    InstBuilder, StackSlot, StackSlotData, StackSlotKind, Value as IrValue,
};
use cranelift_module::Module;
use uop_runtime::microkernel::{Contraction as Args, LEVELS, Level, Pack};

use crate::loops::{Access, Loop};

use super::{Cx, JitError, RuntimeFn, Status, Translator, plan, trusted};

/// What every tile of one nest shares: the loops, the plan, the level and the
/// argument slots.
struct Nest<'a> {
    r: &'a Loop,
    c: &'a Loop,
    reduce: &'a [Loop],
    plan: &'a plan::Contraction,
    level: Level,
    /// The level's index in `microkernel::LEVELS` (which function the tiles call).
    index: u8,
    /// The reduction loops' first iterations.
    starts: Vec<IrValue>,
    args: StackSlot,
    pack: StackSlot,
    /// The tile's results when the column loop's statements run on them.
    tile: Option<StackSlot>,
}

impl<M: Module> Translator<'_, '_, M> {
    /// The tile nest `loops = [r, c, k…]` of the contraction `plan` through the
    /// host level's micro-kernel (see the module docs).
    pub(super) fn contracted(
        &mut self,
        cx: &Cx,
        loops: &[Loop],
        plan: &plan::Contraction,
    ) -> Result<(), JitError> {
        let [r, c, reduce @ ..] = loops else {
            return self.unsupported("a tile without a row and a column loop");
        };
        let levels = tile_levels();
        let slot = |t: &mut Self, bytes: usize, align: u8| {
            t.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                bytes as u32,
                align,
            ))
        };
        let args = slot(self, size_of::<Args>(), 3);
        let pack = slot(self, size_of::<Pack>(), 3);
        let cells_per_tile = levels.iter().map(|(_, l)| l.rows * l.columns).max();
        let tile = plan
            .store
            .is_none()
            .then(|| slot(self, cells_per_tile.unwrap_or(0) * 4, 6));
        let mut starts = Vec::with_capacity(reduce.len());
        let one = self.b.ins().iconst(I64, 1);
        let mut counts = vec![one; 3 - reduce.len()];
        for k in reduce {
            let (s, e) = (self.index(&k.start)?, self.index(&k.end)?);
            starts.push(s);
            counts.push(self.trip_count(s, e));
        }
        for (i, &n) in counts.iter().enumerate() {
            let at = 8 * i as i32;
            self.b
                .ins()
                .stack_store(self.ptr, n, args, offset_of!(Args, counts) as i32 + at);
            self.b
                .ins()
                .stack_store(self.ptr, n, pack, offset_of!(Pack, counts) as i32 + at);
        }
        let (rs, re) = (self.index(&r.start)?, self.index(&r.end)?);
        let (cs, ce) = (self.index(&c.start)?, self.index(&c.end)?);
        let (row_count, col_count) = (self.trip_count(rs, re), self.trip_count(cs, ce));
        let after = self.b.create_block();
        for (index, level) in levels {
            let nest = Nest {
                r,
                c,
                reduce,
                plan,
                level,
                index,
                starts: starts.clone(),
                args,
                pack,
                tile,
            };
            let (rows, cols) = (level.rows as i64, level.columns as i64);
            let rows_fit =
                self.b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, row_count, rows);
            let cols_fit =
                self.b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, col_count, cols);
            let fits = self.b.ins().band(rows_fit, cols_fit);
            let (tiles, next) = (self.b.create_block(), self.b.create_block());
            self.b.ins().brif(fits, tiles, &[], next, &[]);
            self.b.switch_to_block(tiles);
            self.b.seal_block(tiles);
            self.tiles(cx, &nest, (rs, re), (cs, ce))?;
            self.b.ins().jump(after, &[]);
            self.b.switch_to_block(next);
            self.b.seal_block(next);
        }
        self.cells(cx, r, c, reduce, (rs, re), (cs, ce))?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        for l in loops {
            self.loops.remove(&l.id.0);
        }
        Ok(())
    }

    /// The ranges `rs..re` × `cs..ce`, which hold a whole tile of the nest's
    /// level, as tiles of that level: every column tile (the last one moved back
    /// to end at `ce`) with every row tile.
    fn tiles(
        &mut self,
        cx: &Cx,
        nest: &Nest,
        (rs, re): (IrValue, IrValue),
        (cs, ce): (IrValue, IrValue),
    ) -> Result<(), JitError> {
        let (rows, cols) = (nest.level.rows as i64, nest.level.columns as i64);
        self.steps(cx, nest, rs, cs)?;
        let r_main = self.whole_tiles_end(rs, re, rows);
        let c_main = self.whole_tiles_end(cs, ce, cols);
        let zero = self.b.ins().iconst(I64, 0);
        let ct = self.b.declare_var(I64);
        self.b.def_var(ct, cs);
        self.counted_loop(ct, c_main, cols, |t, ct| {
            t.column_tile(cx, nest, ct, zero, (rs, r_main, re))
        })?;
        let last = self.b.ins().iadd_imm_s(ce, -cols);
        let first_col = self.b.ins().isub(c_main, last);
        self.when_below(c_main, ce, |t| {
            t.column_tile(cx, nest, last, first_col, (rs, r_main, re))
        })
    }

    /// Runs `body` when `a < b`.
    fn when_below(
        &mut self,
        a: IrValue,
        b: IrValue,
        body: impl FnOnce(&mut Self) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let below = self.b.ins().icmp(IntCC::SignedLessThan, a, b);
        let (then, after) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(below, then, &[], after, &[]);
        self.b.switch_to_block(then);
        self.b.seal_block(then);
        body(self)?;
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        Ok(())
    }

    /// Binds the nest's loops at row `ri`, column `ci` and the reduction loops'
    /// iterations `ks`.
    fn bind_nest(&mut self, nest: &Nest, ri: IrValue, ci: IrValue, ks: &[IrValue]) {
        self.loops.insert(nest.r.id.0, ri);
        self.loops.insert(nest.c.id.0, ci);
        for (k, &i) in nest.reduce.iter().zip(ks) {
            self.loops.insert(k.id.0, i);
        }
    }

    /// The address of `a` with the nest bound at (`ri`, `ci`, `ks`).
    fn address_at(
        &mut self,
        cx: &Cx,
        nest: &Nest,
        a: &Access,
        (ri, ci, ks): (IrValue, IrValue, &[IrValue]),
    ) -> Result<IrValue, JitError> {
        self.bind_nest(nest, ri, ci, ks);
        Ok(self.address(cx, a)?.0)
    }

    /// Elements `a` moves by from (`ri`, `ci`, the first reduction iterations) to
    /// `moved`: the difference of the two addresses, in f32 elements.
    fn step(
        &mut self,
        cx: &Cx,
        nest: &Nest,
        a: &Access,
        (ri, ci): (IrValue, IrValue),
        moved: (IrValue, IrValue, &[IrValue]),
    ) -> Result<IrValue, JitError> {
        let starts = nest.starts.clone();
        let from = self.address_at(cx, nest, a, (ri, ci, &starts))?;
        let to = self.address_at(cx, nest, a, moved)?;
        let bytes = self.b.ins().isub(to, from);
        Ok(self.b.ins().sshr_imm_u(bytes, 2))
    }

    /// Stores every address step of the nest into the argument slots: each
    /// operand's per reduction loop, the row operand's per row, and where the
    /// results go per row and column (the plan's store, or the tile slot).
    fn steps(&mut self, cx: &Cx, nest: &Nest, rs: IrValue, cs: IrValue) -> Result<(), JitError> {
        let pad = 3 - nest.reduce.len();
        let zero = self.b.ins().iconst(I64, 0);
        for i in 0..pad {
            let at = 8 * i as i32;
            self.b.ins().stack_store(
                self.ptr,
                zero,
                nest.args,
                offset_of!(Args, a_steps) as i32 + at,
            );
            self.b.ins().stack_store(
                self.ptr,
                zero,
                nest.pack,
                offset_of!(Pack, b_steps) as i32 + at,
            );
        }
        for l in 0..nest.reduce.len() {
            let mut ks = nest.starts.clone();
            ks[l] = self.b.ins().iadd_imm_s(ks[l], 1);
            let at = 8 * (pad + l) as i32;
            let a = &nest.plan.row_operand;
            let s = self.step(cx, nest, a, (rs, cs), (rs, cs, &ks))?;
            self.b.ins().stack_store(
                self.ptr,
                s,
                nest.args,
                offset_of!(Args, a_steps) as i32 + at,
            );
            let b = &nest.plan.column_operand;
            let s = self.step(cx, nest, b, (rs, cs), (rs, cs, &ks))?;
            self.b.ins().stack_store(
                self.ptr,
                s,
                nest.pack,
                offset_of!(Pack, b_steps) as i32 + at,
            );
        }
        let starts = nest.starts.clone();
        let r1 = self.b.ins().iadd_imm_s(rs, 1);
        let c1 = self.b.ins().iadd_imm_s(cs, 1);
        let a_row = self.step(
            cx,
            nest,
            &nest.plan.row_operand,
            (rs, cs),
            (r1, cs, &starts),
        )?;
        self.b
            .ins()
            .stack_store(self.ptr, a_row, nest.args, offset_of!(Args, a_row) as i32);
        let (out_row, out_col) = match (&nest.plan.store, nest.tile) {
            (Some(store), _) => (
                self.step(cx, nest, store, (rs, cs), (r1, cs, &starts))?,
                self.step(cx, nest, store, (rs, cs), (rs, c1, &starts))?,
            ),
            (None, Some(tile)) => {
                let out = self.b.ins().stack_addr(self.ptr, tile, 0);
                self.b
                    .ins()
                    .stack_store(self.ptr, out, nest.args, offset_of!(Args, out) as i32);
                let cols = self.b.ins().iconst(I64, nest.level.columns as i64);
                let one = self.b.ins().iconst(I64, 1);
                (cols, one)
            }
            (None, None) => return self.unsupported("a contraction without a tile slot"),
        };
        self.b.ins().stack_store(
            self.ptr,
            out_row,
            nest.args,
            offset_of!(Args, out_row) as i32,
        );
        self.b.ins().stack_store(
            self.ptr,
            out_col,
            nest.args,
            offset_of!(Args, out_col) as i32,
        );
        let cols = self.b.ins().iconst(I64, nest.level.columns as i64);
        self.b
            .ins()
            .stack_store(self.ptr, cols, nest.pack, offset_of!(Pack, columns) as i32);
        Ok(())
    }

    /// The column tile from column `ct`, its cells from `first_col` on new: its
    /// panel packed, then every row tile of `rs..re` (whole tiles up to `r_main`,
    /// then one moved back to end at `re`).
    fn column_tile(
        &mut self,
        cx: &Cx,
        nest: &Nest,
        ct: IrValue,
        first_col: IrValue,
        (rs, r_main, re): (IrValue, IrValue, IrValue),
    ) -> Result<(), JitError> {
        let starts = nest.starts.clone();
        let b = self.address_at(cx, nest, &nest.plan.column_operand, (rs, ct, &starts))?;
        self.b
            .ins()
            .stack_store(self.ptr, b, nest.pack, offset_of!(Pack, b) as i32);
        let pack = self.b.ins().stack_addr(self.ptr, nest.pack, 0);
        let panel = self
            .call(RuntimeFn::Pack, &[pack])
            .unwrap_or_else(|| unreachable!("uop_pack_f32 returns the panel"));
        let ok = self.b.ins().icmp_imm_s(IntCC::NotEqual, panel, 0);
        self.check(ok, Status::Memory);
        self.b
            .ins()
            .stack_store(self.ptr, panel, nest.args, offset_of!(Args, panel) as i32);
        let rows = nest.level.rows as i64;
        let zero = self.b.ins().iconst(I64, 0);
        let rt = self.b.declare_var(I64);
        self.b.def_var(rt, rs);
        self.counted_loop(rt, r_main, rows, |t, rt| {
            t.row_tile(cx, nest, (rt, zero), (ct, first_col))
        })?;
        let last = self.b.ins().iadd_imm_s(re, -rows);
        let first_row = self.b.ins().isub(r_main, last);
        self.when_below(r_main, re, |t| {
            t.row_tile(cx, nest, (last, first_row), (ct, first_col))
        })
    }

    /// One tile at row `rt` and column `ct`, and the column loop's statements on
    /// its cells from (`first_row`, `first_col`) on (none when the plan's store
    /// took the results).
    fn row_tile(
        &mut self,
        cx: &Cx,
        nest: &Nest,
        (rt, first_row): (IrValue, IrValue),
        (ct, first_col): (IrValue, IrValue),
    ) -> Result<(), JitError> {
        let starts = nest.starts.clone();
        let a = self.address_at(cx, nest, &nest.plan.row_operand, (rt, ct, &starts))?;
        self.b
            .ins()
            .stack_store(self.ptr, a, nest.args, offset_of!(Args, a) as i32);
        if let Some(store) = &nest.plan.store {
            let out = self.address_at(cx, nest, store, (rt, ct, &starts))?;
            self.b
                .ins()
                .stack_store(self.ptr, out, nest.args, offset_of!(Args, out) as i32);
        }
        let args = self.b.ins().stack_addr(self.ptr, nest.args, 0);
        self.call(RuntimeFn::Contract(nest.index), &[args]);
        let Some(tile) = nest.tile else {
            return Ok(());
        };
        let cols = nest.level.columns as i64;
        let (rows_end, cols_end) = (
            self.b.ins().iconst(I64, nest.level.rows as i64),
            self.b.ins().iconst(I64, cols),
        );
        let row = self.b.declare_var(I64);
        self.b.def_var(row, first_row);
        self.scalar_loop(row, rows_end, |t, row| {
            let ri = t.b.ins().iadd(rt, row);
            let col = t.b.declare_var(I64);
            t.b.def_var(col, first_col);
            t.scalar_loop(col, cols_end, |t, col| {
                let ci = t.b.ins().iadd(ct, col);
                t.loops.insert(nest.r.id.0, ri);
                t.loops.insert(nest.c.id.0, ci);
                let cell = t.b.ins().imul_imm_s(row, cols);
                let cell = t.b.ins().iadd(cell, col);
                let bytes = t.b.ins().ishl_imm_u(cell, 2);
                let base = t.b.ins().stack_addr(t.ptr, tile, 0);
                let at = t.b.ins().iadd(base, bytes);
                let v = t.b.ins().load(F32, trusted(), at, 0);
                t.b.def_var(t.vars[&nest.plan.var.0], v);
                for s in &nest.c.stmts {
                    t.stmt(cx, s)?;
                }
                Ok(())
            })
        })
    }
}

/// The levels whose micro-kernels a nest may call, widest first, with their
/// indices in `LEVELS`: the host's, then each lower level whose tile is narrower
/// in rows or in columns than every one before it (a range too small for the
/// host's tile takes the widest tile it holds, not the cells one by one).
fn tile_levels() -> Vec<(u8, Level)> {
    let mut levels: Vec<(u8, Level)> = Vec::new();
    for index in (0..=uop_runtime::microkernel::host_index()).rev() {
        let level = LEVELS[index];
        let narrower = levels
            .iter()
            .all(|(_, l)| level.rows < l.rows || level.columns < l.columns);
        if narrower {
            levels.push((index as u8, level));
        }
    }
    levels
}
