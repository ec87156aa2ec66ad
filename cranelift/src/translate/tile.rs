//! Register tiles in the JIT: a [`tile_plan`](crate::plan::tile_plan) nest
//! `for r { for c [tile] { v = id; for k… { v op= f(r, c, k) }; stmts(v) } }` runs
//! `tile_rows` rows by `tile_vectors` vectors of columns at a time, each cell's partial
//! result in a lane of a vector register for the whole reduction:
//!
//! ```text
//! for c_tile in whole column tiles {          // a panel of the column loads stays cached
//!     pack the panel (one reduction loop, when it fits)
//!     for r_tile in whole row tiles {
//!         acc[row][vec] = identity
//!         for k… { acc[row][vec] op= f(r_tile + row, c_tile + 4 vec .. + 4, k) }
//!         for each cell: v = its lane; stmts(v)
//!     }
//! }
//! the cells of the last columns, then of the last rows, one by one
//! ```
//!
//! A load that does not move with the columns (matmul's `a[i, k]`) is loaded once
//! per row and broadcast; one that moves with them (`b[k, j]`) is one vector load
//! per vector, the same for every row (Cranelift's alias analysis and value
//! numbering share it between rows). The innermost reduction loop carries each
//! load's address, advanced by a fixed step, instead of computing it. With one
//! reduction loop the column loads the `pack` pass names are first copied, per
//! column tile, into a contiguous [`Panel`] on the stack: matmul 1024³ 82 → 44 ms, since `b`'s rows
//! 4 KiB apart otherwise share a few cache sets. Each cell adds the same terms in the same order
//! as the loop nest, so the result is the interpreter's, bit for bit; cells run in
//! another order, which the `tile` pass allows (each writes its own elements and
//! reads none that another writes).

use super::Cx;
use cranelift_codegen::ir::condcodes::IntCC;
use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{InstBuilder, StackSlotData, StackSlotKind, Value as IrValue};
use cranelift_frontend::Variable;
use cranelift_module::Module;

use crate::loops::{Access, Loop, Subscript, Value, VarId};
use crate::uop::Accum;

use super::{JitError, Linking, Translator, plan};

/// Where a tile is: its row and column loops, its first row and column, and its
/// column panel.
struct Place<'a> {
    r: &'a Loop,
    c: &'a Loop,
    rt: IrValue,
    ct: IrValue,
    panel: Option<&'a Panel>,
}

/// A load's address carried through a tile's innermost reduction loop: the load,
/// its row of the tile (`None` when it does not move with the rows), the variable
/// and the step in bytes per iteration.
type Carried = (Access, Option<i64>, Variable, IrValue);

/// A column panel of a tile with one reduction loop: the loads that move with the
/// columns but not with the rows (matmul's `b[k, j]`) copied, per column tile,
/// into a contiguous stack slot, step `k` of load `j` at byte
/// `(k - start) * step + j * columns * size`. Read in place, a panel whose rows
/// are 4 KiB apart falls into a few cache sets and comes from L3.
struct Panel {
    slot: cranelift_codegen::ir::StackSlot,
    /// Whether this call's reduction fits the slot (else the loads read in place).
    fits: IrValue,
    loads: Vec<Access>,
    /// Bytes of one packed load's columns in a reduction step.
    load_bytes: i64,
    /// Bytes per reduction step: every packed load's columns.
    step: i64,
}

impl Panel {
    /// Where packed load `j` starts within a reduction step, in bytes.
    fn offset(&self, j: usize) -> i64 {
        j as i64 * self.load_bytes
    }
}

impl<M: Module> Translator<'_, '_, M> {
    /// The nest `loops = [r, c, k…]` of a [`tile_plan`](crate::plan::tile_plan),
    /// whose reductions are `reductions`, as register tiles (see the module docs).
    pub(super) fn tiled(
        &mut self,
        cx: &Cx,
        loops: &[Loop],
        reductions: &[(VarId, Accum)],
    ) -> Result<(), JitError> {
        let rows = i64::from(self.target.tile_rows);
        let vectors = i64::from(self.target.tile_vectors());
        if self.linking == Linking::Jit
            && let Some(contraction) = plan::contraction(self.p, loops)
        {
            return self.contracted(cx, loops, &contraction);
        }
        let [r, c, reduce @ ..] = loops else {
            return self.unsupported("a tile without a row and a column loop");
        };
        let columns = vectors * i64::from(self.lanes());
        let (rs, re) = (self.index(&r.start)?, self.index(&r.end)?);
        let (cs, ce) = (self.index(&c.start)?, self.index(&c.end)?);
        let r_main = self.whole_tiles_end(rs, re, rows);
        let c_main = self.whole_tiles_end(cs, ce, columns);
        let panel = self.panel(loops)?;
        let c_tile = self.b.declare_var(I64);
        self.b.def_var(c_tile, cs);
        self.counted_loop(c_tile, c_main, columns, |t, ct| {
            if let (Some(panel), [k]) = (&panel, reduce) {
                t.pack(cx, panel, c, k, ct)?;
            }
            let r_tile = t.b.declare_var(I64);
            t.b.def_var(r_tile, rs);
            t.counted_loop(r_tile, r_main, rows, |t, rt| {
                let place = Place {
                    r,
                    c,
                    rt,
                    ct,
                    panel: panel.as_ref(),
                };
                t.tile(cx, &place, reduce, reductions)
            })
        })?;
        // The cells no tile covered: the last columns of the tiled rows, then the
        // last rows.
        self.cells(cx, r, c, reduce, (rs, r_main), (c_main, ce))?;
        self.cells(cx, r, c, reduce, (r_main, re), (cs, ce))?;
        self.loops.remove(&r.id.0);
        self.loops.remove(&c.id.0);
        Ok(())
    }

    /// The column panel of a tile `loops = [r, c, k]`: the panel plan's loads for
    /// panels copied in whole vectors ([`plan::panel_loads`], [`plan::Packing::Vectors`]:
    /// named by the mark, unit stride along the columns, one reduction loop) whose
    /// address this realization carries from one step of `k` to the next. Its own
    /// limit besides: a reduction that fits the target's panel bytes (else the
    /// loads are read in place, decided per call).
    fn panel(&mut self, loops: &[Loop]) -> Result<Option<Panel>, JitError> {
        let vectors = i64::from(self.target.tile_vectors());
        let panel_bytes = self.target.panel_bytes;
        let [_, _, k] = loops else {
            return Ok(None);
        };
        let carried: Vec<Access> = carried_loads(k).into_iter().map(|(a, _)| a).collect();
        let loads: Vec<Access> = plan::panel_loads(loops, plan::Packing::Vectors)
            .into_iter()
            .filter_map(|v| match v {
                Value::Load { access, .. } if carried.contains(&access) => Some(access),
                _ => None,
            })
            .collect();
        if loads.is_empty() {
            return Ok(None);
        }
        let load_bytes = vectors * i64::from(self.vector_type().bytes());
        let step = loads.len() as i64 * load_bytes;
        let slot = self.b.create_sized_stack_slot(StackSlotData::new(
            StackSlotKind::ExplicitSlot,
            panel_bytes,
            6,
        ));
        let (start, end) = (self.index(&k.start)?, self.index(&k.end)?);
        let count = self.trip_count(start, end);
        let most = i64::from(panel_bytes) / step;
        let fits = self
            .b
            .ins()
            .icmp_imm_s(IntCC::SignedLessThanOrEqual, count, most);
        Ok(Some(Panel {
            slot,
            fits,
            loads,
            load_bytes,
            step,
        }))
    }

    /// Copies the column tile from `ct` of the panel's loads into its slot, when
    /// this call's reduction fits.
    fn pack(
        &mut self,
        cx: &Cx,
        panel: &Panel,
        c: &Loop,
        k: &Loop,
        ct: IrValue,
    ) -> Result<(), JitError> {
        let vectors = i64::from(self.target.tile_vectors());
        let (copy, after) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(panel.fits, copy, &[], after, &[]);
        self.b.switch_to_block(copy);
        self.b.seal_block(copy);
        let (start, end) = (self.index(&k.start)?, self.index(&k.end)?);
        let vt = self.vector_type();
        let vector_bytes = i64::from(vt.bytes());
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(c.id.0, ct);
            t.loops.insert(k.id.0, i);
            let from = t.b.ins().isub(i, start);
            let row = t.b.ins().imul_imm_s(from, panel.step);
            let base = t.b.ins().stack_addr(t.ptr, panel.slot, 0);
            let to = t.b.ins().iadd(base, row);
            for (j, a) in panel.loads.iter().enumerate() {
                let (src, _) = t.address(cx, a)?;
                for v in 0..vectors {
                    let at = (v * vector_bytes) as i32;
                    let x = t.b.ins().load(vt, Self::vector_flags(), src, at);
                    let offset = panel.offset(j) + v * vector_bytes;
                    t.b.ins().store(Self::vector_flags(), x, to, offset as i32);
                }
            }
            Ok(())
        })?;
        self.loops.remove(&k.id.0);
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        Ok(())
    }

    /// Where the whole tiles of `size` in `start..end` end: `start` plus the trip
    /// count rounded down to a multiple of `size`.
    pub(super) fn whole_tiles_end(&mut self, start: IrValue, end: IrValue, size: i64) -> IrValue {
        let count = self.trip_count(start, end);
        let rest = self.b.ins().srem_imm_s(count, size);
        let whole = self.b.ins().isub(count, rest);
        self.b.ins().iadd(start, whole)
    }

    /// One tile: rows `rt..rt + rows` by columns `ct..ct + vectors * lanes` of `place`.
    fn tile(
        &mut self,
        cx: &Cx,
        place: &Place,
        reduce: &[Loop],
        reductions: &[(VarId, Accum)],
    ) -> Result<(), JitError> {
        let rows = i64::from(self.target.tile_rows);
        let vectors = i64::from(self.target.tile_vectors());
        let (r, c, rt, ct) = (place.r, place.c, place.rt, place.ct);
        let vt = self.vector_type();
        let cells = (rows * vectors) as usize;
        let mut accs: Vec<Vec<Variable>> = Vec::with_capacity(reductions.len());
        for &(_, op) in reductions {
            let id = self.float_const(op.identity());
            let splat = self.b.ins().splat(vt, id);
            accs.push(
                (0..cells)
                    .map(|_| {
                        let acc = self.b.declare_var(vt);
                        self.b.def_var(acc, splat);
                        acc
                    })
                    .collect(),
            );
        }
        self.tile_reduction(cx, place, reduce, &mut |t, cx| {
            let Some(innermost) = reduce.last() else {
                return Ok(());
            };
            t.loops.insert(c.id.0, ct);
            for row in 0..rows {
                let ri = t.b.ins().iadd_imm_s(rt, row);
                t.loops.insert(r.id.0, ri);
                for vector in 0..vectors {
                    let cell = Cx {
                        tile_row: Some(row),
                        lane_offset: vector * i64::from(t.lanes()),
                        ..cx.clone()
                    };
                    for (s, (&(_, op), accs)) in
                        innermost.stmts.iter().zip(reductions.iter().zip(&accs))
                    {
                        let crate::loops::Stmt::Update { value, .. } = s else {
                            return t.unsupported("a tile statement that is not an update");
                        };
                        let v = t.vector_value(&cell, c, value)?;
                        let acc = accs[(row * vectors + vector) as usize];
                        let old = t.b.use_var(acc);
                        let new = t.combine(op, old, v);
                        t.b.def_var(acc, new);
                    }
                }
            }
            Ok(())
        })?;
        // Each cell's result, lane by lane, through the column loop's statements.
        for row in 0..rows {
            let ri = self.b.ins().iadd_imm_s(rt, row);
            self.loops.insert(r.id.0, ri);
            for vector in 0..vectors {
                for lane in 0..self.lanes() {
                    let col = vector * i64::from(self.lanes()) + i64::from(lane);
                    let ci = self.b.ins().iadd_imm_s(ct, col);
                    self.loops.insert(c.id.0, ci);
                    for (&(var, _), accs) in reductions.iter().zip(&accs) {
                        let acc = self.b.use_var(accs[(row * vectors + vector) as usize]);
                        let x = self.b.ins().extractlane(acc, lane);
                        self.b.def_var(self.vars[&var.0], x);
                    }
                    for s in &c.stmts {
                        self.stmt(cx, s)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The reduction loops of a tile, `body` inside the innermost. The loads of
    /// the innermost loop whose address advances by a fixed step (see
    /// [`plan::unit_axes`]; proven in range, subscripts of `+ - *` alone) get it
    /// from a variable set before the loop, one per
    /// row of the tile for loads that move with the rows, and advanced at the end
    /// of each iteration: no index arithmetic in the loop.
    fn tile_reduction(
        &mut self,
        cx: &Cx,
        tile: &Place,
        reduce: &[Loop],
        body: &mut dyn FnMut(&mut Self, &Cx) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let Some((k, inner)) = reduce.split_first() else {
            return body(self, cx);
        };
        let (start, end) = (self.index(&k.start)?, self.index(&k.end)?);
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        let pointers = if inner.is_empty() {
            self.loops.insert(k.id.0, start);
            self.pointers_at(cx, tile, k)?
        } else {
            Vec::new()
        };
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(k.id.0, i);
            let cx = Cx {
                pointers: pointers
                    .iter()
                    .map(|&(ref a, row, var, _)| (a.clone(), row, var))
                    .collect(),
                ..cx.clone()
            };
            t.tile_reduction(&cx, tile, inner, body)?;
            for &(_, _, var, step) in &pointers {
                let p = t.b.use_var(var);
                let next = t.b.ins().iadd(p, step);
                t.b.def_var(var, next);
            }
            Ok(())
        })?;
        self.loops.remove(&k.id.0);
        Ok(())
    }

    /// The carried addresses of the loads of `k`'s statements that advance by a
    /// fixed step with `k`, at the current iteration of `k` (bound in `loops`):
    /// each load, its row of the tile (`None` when it does not move with the
    /// rows), the variable holding its address, and the step in bytes.
    fn pointers_at(&mut self, cx: &Cx, tile: &Place, k: &Loop) -> Result<Vec<Carried>, JitError> {
        let rows = i64::from(self.target.tile_rows);
        let mut out = Vec::new();
        for (a, axes) in carried_loads(k) {
            let t = a.tensor.0;
            let decl = &self.p.tensors[t];
            let (size, row_local) = (decl.dtype.size() as i64, decl.row_local);
            let mut step = self.b.ins().iconst(self.ptr, 0);
            for axis in axes.into_iter().filter(|&x| Some(x) != row_local) {
                let bytes = match self.strides[t][axis] {
                    None => self.b.ins().iconst(self.ptr, size),
                    Some(stride) => self.b.ins().imul_imm_s(stride, size),
                };
                step = self.b.ins().iadd(step, bytes);
            }
            let at_rows: Vec<Option<i64>> =
                if crate::loops::analysis::access_mentions(&a, tile.r.id.0) {
                    (0..rows).map(Some).collect()
                } else {
                    vec![None]
                };
            self.loops.insert(tile.c.id.0, tile.ct);
            for row in at_rows {
                let ri = self.b.ins().iadd_imm_s(tile.rt, row.unwrap_or(0));
                self.loops.insert(tile.r.id.0, ri);
                let (mut addr, _) = self.address(cx, &a)?;
                let mut step = step;
                if let Some(panel) = tile.panel
                    && let Some(j) = panel.loads.iter().position(|p| *p == a)
                {
                    let base = self.b.ins().stack_addr(self.ptr, panel.slot, 0);
                    let packed = self.b.ins().iadd_imm_s(base, panel.offset(j));
                    addr = self.b.ins().select(panel.fits, packed, addr);
                    let packed_step = self.b.ins().iconst(self.ptr, panel.step);
                    step = self.b.ins().select(panel.fits, packed_step, step);
                }
                let var = self.b.declare_var(self.ptr);
                self.b.def_var(var, addr);
                out.push((a.clone(), row, var, step));
            }
        }
        Ok(out)
    }

    /// The cells `rows × cols` of the nest one by one, as the untiled loops run them.
    pub(super) fn cells(
        &mut self,
        cx: &Cx,
        r: &Loop,
        c: &Loop,
        reduce: &[Loop],
        (r_from, r_to): (IrValue, IrValue),
        (c_from, c_to): (IrValue, IrValue),
    ) -> Result<(), JitError> {
        let ri = self.b.declare_var(I64);
        self.b.def_var(ri, r_from);
        self.scalar_loop(ri, r_to, |t, i| {
            t.loops.insert(r.id.0, i);
            let ci = t.b.declare_var(I64);
            t.b.def_var(ci, c_from);
            t.scalar_loop(ci, c_to, |t, j| {
                t.loops.insert(c.id.0, j);
                t.iteration(cx, c, reduce)
            })
        })
    }
}

/// The loads of `k`'s statements whose address can be carried from one iteration
/// of `k` to the next, each once, with the axes that move with `k` (see
/// [`plan::unit_axes`]): proven in range, their subscripts built by `+ - *`
/// alone, which wrap (see [`Arith::Wrapping`](super::index::Arith)), so computing an address before
/// a loop that does not run cannot fail.
fn carried_loads(k: &Loop) -> Vec<(Access, Vec<usize>)> {
    let mut loads: Vec<Access> = Vec::new();
    for s in &k.stmts {
        crate::loops::analysis::walk::stmt_accesses(s, &mut |a, write| {
            if !write && !loads.contains(a) {
                loads.push(a.clone());
            }
        });
    }
    loads
        .into_iter()
        .filter_map(|a| {
            let ring = a.index.iter().all(|s| match s {
                Subscript::Expr(e) => super::index::ring_only(e),
                Subscript::Value(_) => false,
            });
            let axes = plan::unit_axes(&a, k.id).filter(|_| ring && !a.checked)?;
            Some((a, axes))
        })
        .collect()
}
