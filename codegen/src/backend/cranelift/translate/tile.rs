//! Register tiles in the JIT: a [`tile_plan`](super::vector::tile_plan) nest
//! `for r { for c [tile] { v = id; for k… { v op= f(r, c, k) }; stmts(v) } }` runs
//! `ROWS` rows by `VECTORS` vectors of columns at a time, each cell's partial
//! result in a lane of a vector register for the whole reduction:
//!
//! ```text
//! for c_tile in whole column tiles {          // a panel of the column loads stays cached
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
//! numbering share it between rows). Each cell adds the same terms in the same order
//! as the loop nest, so the result is the interpreter's, bit for bit; cells run in
//! another order, which the `tile` pass allows (each writes its own elements and
//! reads none that another writes).

use cranelift_codegen::ir::types::I64;
use cranelift_codegen::ir::{InstBuilder, Value as IrValue};
use cranelift_frontend::Variable;
use cranelift_module::Module;

use crate::loops::{Access, Loop, Subscript, VarId};
use crate::uop::Accum;

use super::{JitError, Translator, vector};

/// Where a tile is: its row and column loops and its first row and column.
struct Place {
    r: usize,
    c: usize,
    rt: IrValue,
    ct: IrValue,
}

/// A load's address carried through a tile's innermost reduction loop: the load,
/// its row of the tile (`None` when it does not move with the rows), the variable
/// and the step in bytes per iteration.
type Carried = (Access, Option<i64>, Variable, IrValue);

/// Rows of a tile.
const ROWS: i64 = 4;
/// Vectors of columns of a tile: 8 f32 columns (4 f64). With `ROWS` it takes 8
/// accumulators, 2 column vectors and a broadcast row value of the 16 vector
/// registers of x86-64. Measured (matmul 512³ / conv2d of `uop bench`, ms, before
/// the carried addresses): 4 × 2 vectors 6.8 / 82, 6 × 2 9.1 / 121, 4 × 3
/// 11.2 / 169 (the larger ones spill). Multiply-adds are not fused: with the
/// carried addresses the tile runs 5.5 / 47 unfused and 5.9 / 49 fused. On Zen 5
/// two 128-bit multiplies and two adds issue per cycle, as many flops as two
/// fused multiply-adds, so the tile keeps the interpreter's rounding at no cost.
const VECTORS: i64 = 2;

impl<M: Module> Translator<'_, '_, M> {
    /// The nest `loops = [r, c, k…]` of a [`tile_plan`](super::vector::tile_plan),
    /// whose reductions are `reductions`, as register tiles (see the module docs).
    pub(super) fn tiled(
        &mut self,
        loops: &[Loop],
        reductions: &[(VarId, Accum)],
    ) -> Result<(), JitError> {
        let [r, c, reduce @ ..] = loops else {
            return self.unsupported("a tile without a row and a column loop");
        };
        let columns = VECTORS * i64::from(self.lanes());
        let (rs, re) = (self.index(&r.start)?, self.index(&r.end)?);
        let (cs, ce) = (self.index(&c.start)?, self.index(&c.end)?);
        let r_main = self.whole_tiles_end(rs, re, ROWS);
        let c_main = self.whole_tiles_end(cs, ce, columns);
        let c_tile = self.b.declare_var(I64);
        self.b.def_var(c_tile, cs);
        self.counted_loop(c_tile, c_main, columns, |t, ct| {
            let r_tile = t.b.declare_var(I64);
            t.b.def_var(r_tile, rs);
            t.counted_loop(r_tile, r_main, ROWS, |t, rt| {
                t.tile(r, c, reduce, reductions, rt, ct)
            })
        })?;
        // The cells no tile covered: the last columns of the tiled rows, then the
        // last rows.
        self.cells(r, c, reduce, (rs, r_main), (c_main, ce))?;
        self.cells(r, c, reduce, (r_main, re), (cs, ce))?;
        self.loops.remove(&r.id.0);
        self.loops.remove(&c.id.0);
        Ok(())
    }

    /// Where the whole tiles of `size` in `start..end` end: `start` plus the trip
    /// count rounded down to a multiple of `size`.
    fn whole_tiles_end(&mut self, start: IrValue, end: IrValue, size: i64) -> IrValue {
        let count = self.trip_count(start, end);
        let rest = self.b.ins().srem_imm_s(count, size);
        let whole = self.b.ins().isub(count, rest);
        self.b.ins().iadd(start, whole)
    }

    /// One tile: rows `rt..rt + ROWS` by columns `ct..ct + VECTORS * lanes`.
    fn tile(
        &mut self,
        r: &Loop,
        c: &Loop,
        reduce: &[Loop],
        reductions: &[(VarId, Accum)],
        rt: IrValue,
        ct: IrValue,
    ) -> Result<(), JitError> {
        let vt = self.vector_type();
        let cells = (ROWS * VECTORS) as usize;
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
        let place = Place {
            r: r.id.0,
            c: c.id.0,
            rt,
            ct,
        };
        self.tile_reduction(&place, reduce, &mut |t| {
            let Some(innermost) = reduce.last() else {
                return Ok(());
            };
            t.loops.insert(c.id.0, ct);
            for row in 0..ROWS {
                let ri = t.b.ins().iadd_imm_s(rt, row);
                t.loops.insert(r.id.0, ri);
                t.tile_row = Some(row);
                for vector in 0..VECTORS {
                    t.lane_offset = vector * i64::from(t.lanes());
                    for (s, (&(_, op), accs)) in
                        innermost.stmts.iter().zip(reductions.iter().zip(&accs))
                    {
                        let crate::loops::Stmt::Update { value, .. } = s else {
                            return t.unsupported("a tile statement that is not an update");
                        };
                        let v = t.vector_value(c, value)?;
                        let acc = accs[(row * VECTORS + vector) as usize];
                        let old = t.b.use_var(acc);
                        let new = t.combine(op, old, v);
                        t.b.def_var(acc, new);
                    }
                }
            }
            t.lane_offset = 0;
            t.tile_row = None;
            Ok(())
        })?;
        // Each cell's result, lane by lane, through the column loop's statements.
        for row in 0..ROWS {
            let ri = self.b.ins().iadd_imm_s(rt, row);
            self.loops.insert(r.id.0, ri);
            for vector in 0..VECTORS {
                for lane in 0..self.lanes() {
                    let col = vector * i64::from(self.lanes()) + i64::from(lane);
                    let ci = self.b.ins().iadd_imm_s(ct, col);
                    self.loops.insert(c.id.0, ci);
                    for (&(var, _), accs) in reductions.iter().zip(&accs) {
                        let acc = self.b.use_var(accs[(row * VECTORS + vector) as usize]);
                        let x = self.b.ins().extractlane(acc, lane);
                        self.b.def_var(self.vars[&var.0], x);
                    }
                    for s in &c.stmts {
                        self.stmt(s)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// The reduction loops of a tile, `body` inside the innermost. The loads of
    /// the innermost loop whose address advances by a fixed step (see
    /// [`vector::unit_axes`]; proven in range, subscripts of `+ - *` alone) get it
    /// from a variable set before the loop, one per
    /// row of the tile for loads that move with the rows, and advanced at the end
    /// of each iteration: no index arithmetic in the loop.
    fn tile_reduction(
        &mut self,
        tile: &Place,
        reduce: &[Loop],
        body: &mut dyn FnMut(&mut Self) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let Some((k, inner)) = reduce.split_first() else {
            return body(self);
        };
        let (start, end) = (self.index(&k.start)?, self.index(&k.end)?);
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        let pointers = if inner.is_empty() {
            self.loops.insert(k.id.0, start);
            self.pointers_at(tile, k)?
        } else {
            Vec::new()
        };
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(k.id.0, i);
            t.pointers = pointers
                .iter()
                .map(|&(ref a, row, var, _)| (a.clone(), row, var))
                .collect();
            t.tile_reduction(tile, inner, body)?;
            t.pointers.clear();
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
    fn pointers_at(&mut self, tile: &Place, k: &Loop) -> Result<Vec<Carried>, JitError> {
        let mut loads: Vec<Access> = Vec::new();
        for s in &k.stmts {
            crate::pass::walk::stmt_accesses(s, &mut |a, write| {
                if !write && !loads.contains(a) {
                    loads.push(a.clone());
                }
            });
        }
        let mut out = Vec::new();
        for a in loads {
            // Subscripts of `+ - *` alone wrap (see `Translator::wrapping`), so the
            // address computed here cannot fail, even for a loop that does not run.
            let ring = a.index.iter().all(|s| match s {
                Subscript::Expr(e) => super::ring_only(e),
                Subscript::Value(_) => false,
            });
            let Some(axes) = vector::unit_axes(&a, k.id).filter(|_| ring && !a.checked) else {
                continue;
            };
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
            let rows: Vec<Option<i64>> = if crate::pass::access_mentions(&a, tile.r) {
                (0..ROWS).map(Some).collect()
            } else {
                vec![None]
            };
            self.loops.insert(tile.c, tile.ct);
            for row in rows {
                let ri = self.b.ins().iadd_imm_s(tile.rt, row.unwrap_or(0));
                self.loops.insert(tile.r, ri);
                let (addr, _) = self.address(&a)?;
                let var = self.b.declare_var(self.ptr);
                self.b.def_var(var, addr);
                out.push((a.clone(), row, var, step));
            }
        }
        Ok(out)
    }

    /// The cells `rows × cols` of the nest one by one, as the untiled loops run them.
    fn cells(
        &mut self,
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
                t.iteration(c, reduce)
            })
        })
    }
}
