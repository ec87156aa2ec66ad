//! Statements and accesses: stores, accumulates, updates, addresses and raw loads.

use super::index::{Arith, ring_only};
use super::*;

impl<M: Module> Translator<'_, '_, M> {
    /// Checks that `a` may be written by `what` and returns the target's element type:
    /// the program's float type, or i32 for plain stores (an index tensor relabeled by
    /// a `reindex`, e.g. `index_select` broadcasting its index).
    pub(super) fn target_type(&self, a: &Access, what: &str) -> Result<DType, JitError> {
        let Some(decl) = self.p.tensors.get(a.tensor.0) else {
            return self.unsupported(format!("tensor %{} does not exist", a.tensor.0));
        };
        if decl.kind == TensorKind::Input {
            return self.unsupported(format!("the input `{}` is written", decl.name));
        }
        let integer_store = decl.dtype == DType::I32 && what == "a store";
        if decl.dtype != self.p.dtype && !integer_store {
            return self.unsupported(format!(
                "{what} into `{}` of type {} in an {} program",
                decl.name, decl.dtype, self.p.dtype
            ));
        }
        Ok(decl.dtype)
    }

    pub(super) fn stmt(&mut self, cx: &Cx, s: &Stmt) -> Result<(), JitError> {
        match s {
            Stmt::Store { access, value } => {
                let target = self.target_type(access, "a store")?;
                let mut v = self.value(cx, value)?;
                if target == DType::I32 {
                    // Truncating and saturating, NaN to 0: `DType::I32.round`, Rust's `as i32`.
                    v = self.b.ins().fcvt_to_sint_sat(I32, v);
                }
                self.guarded(cx, access, |t, addr| {
                    t.b.ins().store(trusted(), v, addr, 0);
                })?;
            }
            Stmt::Accumulate { access, op, value } => {
                self.target_type(access, "an accumulation")?;
                let vs = self.jammed(cx, |t| t.value(cx, value))?;
                let ty = self.ty;
                self.guarded(cx, access, |t, addr| {
                    let mut acc = t.b.ins().load(ty, trusted(), addr, 0);
                    for &v in &vs {
                        acc = t.combine(*op, acc, v);
                    }
                    t.b.ins().store(trusted(), acc, addr, 0);
                })?;
            }
            Stmt::Update { var, op, value } => {
                let v = self.value(cx, value)?;
                let Some(&variable) = self.vars.get(&var.0) else {
                    return self.unsupported(format!("v{} is not carried by any loop", var.0));
                };
                let acc = self.b.use_var(variable);
                let new = self.combine(*op, acc, v);
                self.b.def_var(variable, new);
            }
        }
        Ok(())
    }

    /// Runs `write` on the element's address, skipping it when a checked access is
    /// out of range.
    pub(super) fn guarded(
        &mut self,
        cx: &Cx,
        access: &Access,
        write: impl FnOnce(&mut Self, IrValue),
    ) -> Result<(), JitError> {
        let (addr, in_range) = self.address(cx, access)?;
        match in_range {
            None => write(self, addr),
            Some(ok) => {
                let then = self.b.create_block();
                let cont = self.b.create_block();
                self.b.ins().brif(ok, then, &[], cont, &[]);
                self.b.switch_to_block(then);
                self.b.seal_block(then);
                write(self, addr);
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(cont);
                self.b.seal_block(cont);
            }
        }
        Ok(())
    }

    pub(super) fn combine(&mut self, op: Accum, acc: IrValue, v: IrValue) -> IrValue {
        match op {
            Accum::Add => self.b.ins().fadd(acc, v),
            Accum::Mul => self.b.ins().fmul(acc, v),
            Accum::Max => self.b.ins().fmax(acc, v),
            Accum::Min => self.b.ins().fmin(acc, v),
        }
    }

    pub(super) fn subscript(&mut self, cx: &Cx, s: &Subscript) -> Result<IrValue, JitError> {
        match s {
            Subscript::Expr(e) => self.index(e),
            Subscript::Value(v) => {
                if let Value::Load { access, fill } = v.as_ref()
                    && self.p.tensors.get(access.tensor.0).map(|t| t.dtype) == Some(DType::I32)
                {
                    let raw = self.load_raw(cx, access, *fill, DType::I32)?;
                    return Ok(self.b.ins().sextend(I64, raw));
                }
                let x = self.value(cx, v)?;
                let f = self.b.ins().floor(x);
                Ok(self.b.ins().fcvt_to_sint_sat(I64, f))
            }
        }
    }

    /// The address of an element and, for a checked access, whether it is in range.
    pub(super) fn address(
        &mut self,
        cx: &Cx,
        a: &Access,
    ) -> Result<(IrValue, Option<IrValue>), JitError> {
        if let Some(row) = cx.tile_row
            && let Some(&(.., var)) = cx
                .pointers
                .iter()
                .find(|(b, r, _)| b == a && r.is_none_or(|r| r == row))
        {
            return Ok((self.b.use_var(var), None));
        }
        let k = a.tensor.0;
        let Some(decl) = self.p.tensors.get(k) else {
            return self.unsupported(format!("tensor %{k} does not exist"));
        };
        if a.index.len() != decl.shape.len() {
            return self.unsupported(format!(
                "`{}` has rank {} but is accessed with {} subscripts",
                decl.name,
                decl.shape.len(),
                a.index.len()
            ));
        }
        let Some(base) = self.bases[k] else {
            return self.unsupported(format!("`{}` has no storage", decl.name));
        };
        let mut offset: Option<IrValue> = None;
        let mut in_range: Option<IrValue> = None;
        for (axis, s) in a.index.iter().enumerate() {
            if decl.row_local == Some(axis) {
                continue; // the row being worked on is the only one kept
            }
            let sv = match s {
                Subscript::Expr(e) if !a.checked && ring_only(e) => {
                    self.index_in(e, Arith::Wrapping)?
                }
                _ => self.subscript(cx, s)?,
            };
            if a.checked {
                let ok = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedLessThan, sv, self.dims[k][axis]);
                in_range = Some(match in_range {
                    None => ok,
                    Some(prev) => self.b.ins().band(prev, ok),
                });
            }
            let term = match self.strides[k][axis] {
                None => sv,
                Some(st) => self.b.ins().imul(sv, st),
            };
            offset = Some(match offset {
                None => term,
                Some(o) => self.b.ins().iadd(o, term),
            });
        }
        let addr = match offset {
            None => base,
            Some(o) => {
                let shift = decl.dtype.size().trailing_zeros() as i64;
                let bytes = self.b.ins().ishl_imm_u(o, shift);
                self.b.ins().iadd(base, bytes)
            }
        };
        Ok((addr, in_range))
    }

    /// Loads an element in its own type; out of range (when checked) reads `fill`.
    pub(super) fn load_raw(
        &mut self,
        cx: &Cx,
        a: &Access,
        fill: f64,
        dtype: DType,
    ) -> Result<IrValue, JitError> {
        let ty = match dtype {
            DType::F32 => F32,
            DType::F64 => F64,
            DType::I32 => I32,
        };
        let (addr, in_range) = self.address(cx, a)?;
        let addr = match in_range {
            None => addr,
            Some(ok) => {
                let key = (dtype, dtype.round(fill).to_bits());
                let Some(&slot) = self.fills.get(&key) else {
                    return self.unsupported("a fill value was not prepared");
                };
                let fallback = self.b.ins().stack_addr(self.ptr, slot, 0);
                self.b.ins().select(ok, addr, fallback)
            }
        };
        Ok(self.b.ins().load(ty, trusted(), addr, 0))
    }
}
