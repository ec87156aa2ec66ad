//! The prologue: binding the signature, output shapes, strides, temporaries and fill slots.

use super::*;

impl<M: Module> Translator<'_, '_, M> {
    /// Binds the kernel's [`Signature`]: loads and checks the input sizes and params,
    /// checks the assertions and computes the outputs' shapes; then every
    /// temporary's shape and every tensor's strides.
    pub(super) fn bind(&mut self, input_dims: IrValue, params: IrValue) -> Result<(), JitError> {
        let sig = self.sig;
        let mut at = 0i32;
        for (spec, &t) in sig.inputs.iter().zip(&self.p.inputs) {
            let mut dims = Vec::with_capacity(spec.shape.len());
            for e in &spec.shape {
                let d = self.b.ins().load(I64, trusted(), input_dims, at * 8);
                at += 1;
                let ok = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, 0);
                self.check(ok, Status::InputShape);
                match e {
                    Expr::Int(v) => {
                        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, d, *v);
                        self.check(ok, Status::InputShape);
                    }
                    Expr::Name(n) => match self.names.get(n) {
                        Some(&prev) => {
                            let ok = self.b.ins().icmp(IntCC::Equal, d, prev);
                            self.check(ok, Status::InputShape);
                        }
                        None => {
                            self.names.insert(n.clone(), d);
                        }
                    },
                    _ => {}
                }
                dims.push(d);
            }
            self.dims[t.0] = dims;
        }
        for (k, name) in sig.params.iter().enumerate() {
            let v = self.b.ins().load(I64, trusted(), params, (k * 8) as i32);
            self.params.insert(name.clone(), v);
        }
        for (l, r) in &sig.assertions {
            let (lv, rv) = (self.index(l)?, self.index(r)?);
            let ok = self.b.ins().icmp(IntCC::Equal, lv, rv);
            self.check(ok, Status::Assertion);
        }
        for (spec, &t) in sig.outputs.iter().zip(&self.p.outputs) {
            self.dims[t.0] = self.sizes(&spec.shape)?;
        }
        for (k, decl) in self.p.tensors.iter().enumerate() {
            if decl.kind != TensorKind::Temp {
                continue;
            }
            let mut dims = self.sizes(&decl.shape)?;
            // A row-local temporary keeps one row: its row axis has size 1 in
            // storage (its accesses are unchecked, see `address`).
            if let Some(axis) = decl.row_local {
                dims[axis] = self.b.ins().iconst(I64, 1);
            }
            self.dims[k] = dims;
        }
        // Every input's and output's size in bytes fits 63 bits (no buffer the caller
        // holds can be larger): then no stride below wraps for them, and the output
        // zeroing's byte count is exact.
        let interface: Vec<usize> = self
            .p
            .inputs
            .iter()
            .chain(&self.p.outputs)
            .map(|t| t.0)
            .collect();
        for k in interface {
            self.checked_bytes(k, Status::TooLarge);
        }
        for k in 0..self.p.tensors.len() {
            let rank = self.dims[k].len();
            let mut strides = vec![None; rank];
            let mut acc: Option<IrValue> = None;
            for axis in (0..rank).rev() {
                strides[axis] = acc;
                let d = self.dims[k][axis];
                acc = Some(match acc {
                    None => d,
                    // Wrapping is harmless: inputs and outputs were checked above, and a
                    // temporary whose size overflows is refused before any loop runs.
                    Some(s) => self.b.ins().imul(s, d),
                });
            }
            self.strides[k] = strides;
        }
        Ok(())
    }

    /// The values of the size expressions `shape`, each checked to be non-negative.
    pub(super) fn sizes(&mut self, shape: &[Expr]) -> Result<Vec<IrValue>, JitError> {
        let mut dims = Vec::with_capacity(shape.len());
        for e in shape {
            let d = self.index(e)?;
            let ok = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, 0);
            self.check(ok, Status::NegativeSize);
            dims.push(d);
        }
        Ok(dims)
    }

    pub(super) fn write_output_shapes(&mut self, out: IrValue) {
        let mut at = 0i32;
        for &t in &self.p.outputs {
            for k in 0..self.dims[t.0].len() {
                let d = self.dims[t.0][k];
                self.b.ins().store(trusted(), d, out, at * 8);
                at += 1;
            }
        }
        let ok = self.b.ins().iconst(I32, 0);
        self.b.ins().return_(&[ok]);
    }

    /// Byte count of tensor `k`, failing with `status` when it overflows 63 bits.
    pub(super) fn checked_bytes(&mut self, k: usize, status: Status) -> IrValue {
        let size = self.p.tensors[k].dtype.size() as i64;
        let mut n = self.b.ins().iconst(I64, size);
        for axis in 0..self.dims[k].len() {
            let d = self.dims[k][axis];
            let (r, overflow) = self.b.ins().smul_overflow(n, d);
            let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
            self.check(ok, status);
            n = r;
        }
        n
    }

    pub(super) fn kernel(
        &mut self,
        inputs: IrValue,
        outputs: IrValue,
        output_dims: IrValue,
    ) -> Result<(), JitError> {
        let mut at = 0i32;
        for k in 0..self.p.outputs.len() {
            let t = self.p.outputs[k];
            for axis in 0..self.dims[t.0].len() {
                let given = self.b.ins().load(I64, trusted(), output_dims, at * 8);
                at += 1;
                let ok = self.b.ins().icmp(IntCC::Equal, given, self.dims[t.0][axis]);
                self.check(ok, Status::OutputShape);
            }
        }
        let pw = self.ptr.bytes() as i32;
        for k in 0..self.p.inputs.len() {
            let t = self.p.inputs[k];
            let base = self
                .b
                .ins()
                .load(self.ptr, trusted(), inputs, k as i32 * pw);
            self.bases[t.0] = Some(base);
        }
        for k in 0..self.p.outputs.len() {
            let t = self.p.outputs[k];
            let base = self
                .b
                .ins()
                .load(self.ptr, trusted(), outputs, k as i32 * pw);
            self.bases[t.0] = Some(base);
        }
        let temps: Vec<usize> = (0..self.p.tensors.len())
            .filter(|&k| self.p.tensors[k].kind == TensorKind::Temp)
            .collect();
        for _ in &temps {
            let var = self.b.declare_var(self.ptr);
            let null = self.b.ins().iconst(self.ptr, 0);
            self.b.def_var(var, null);
            self.temps.push(var);
        }
        for (slot, &k) in temps.iter().enumerate() {
            let bytes = self.checked_bytes(k, Status::Memory);
            // calloc(0) may return null; ask for at least one byte.
            let one = self.b.ins().iconst(I64, 1);
            let bytes = self.b.ins().smax(bytes, one);
            let args = match self.linking {
                Linking::Jit => vec![bytes],
                Linking::Object => vec![one, bytes],
            };
            let p = self.call(RuntimeFn::Alloc, &args).unwrap_or(one);
            self.b.def_var(self.temps[slot], p);
            let ok = self.b.ins().icmp_imm_s(IntCC::NotEqual, p, 0);
            self.check(ok, Status::Memory);
            self.bases[k] = Some(p);
        }
        for k in 0..self.p.outputs.len() {
            let t = self.p.outputs[k];
            if crate::loops::analysis::fully_written_first(self.p, t) {
                continue;
            }
            let size = self.p.tensors[t.0].dtype.size() as i64;
            let mut bytes = self.b.ins().iconst(I64, size);
            for axis in 0..self.dims[t.0].len() {
                bytes = self.b.ins().imul(bytes, self.dims[t.0][axis]);
            }
            let base = self.bases[t.0].unwrap_or(bytes);
            match self.linking {
                Linking::Jit => self.call(RuntimeFn::Zero, &[base, bytes]),
                Linking::Object => {
                    let zero = self.b.ins().iconst(I32, 0);
                    self.call(RuntimeFn::Zero, &[base, zero, bytes])
                }
            };
        }
        self.make_fill_slots();
        let blocks = &self.p.blocks;
        let mut first = 0;
        for k in 1..=blocks.len() {
            let joined = blocks
                .get(k)
                .and_then(|b| b.loops.first())
                .is_some_and(|l| l.schedule.joined);
            if !joined {
                match &blocks[first..k] {
                    [b] => self.block(&Cx::default(), b)?,
                    group => self.joined(&Cx::default(), group)?,
                }
                first = k;
            }
        }
        for slot in 0..self.temps.len() {
            let p = self.b.use_var(self.temps[slot]);
            self.call(RuntimeFn::Free, &[p]);
        }
        let ok = self.b.ins().iconst(I32, 0);
        self.b.ins().return_(&[ok]);
        Ok(())
    }

    /// One stack slot per distinct fill value of a checked load, written once here.
    pub(super) fn make_fill_slots(&mut self) {
        let mut wanted: Vec<(DType, f64)> = Vec::new();
        for block in &self.p.blocks {
            let stmts = block
                .stmts
                .iter()
                .chain(block.loops.iter().flat_map(|l| &l.stmts));
            for s in stmts {
                let (access, value) = match s {
                    Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
                        (Some(access), value)
                    }
                    Stmt::Update { value, .. } => (None, value),
                };
                if let Some(a) = access {
                    for sub in &a.index {
                        if let Subscript::Value(v) = sub {
                            checked_fills(self.p, v, &mut wanted);
                        }
                    }
                }
                checked_fills(self.p, value, &mut wanted);
            }
        }
        for (dtype, fill) in wanted {
            let fill = dtype.round(fill);
            let key = (dtype, fill.to_bits());
            if self.fills.contains_key(&key) {
                continue;
            }
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                8,
                3,
            ));
            let v = match dtype {
                DType::F32 => self.b.ins().f32const(fill as f32),
                DType::F64 => self.b.ins().f64const(fill),
                DType::I32 => self.b.ins().iconst(I32, fill as i32 as i64),
            };
            self.b.ins().stack_store(self.ptr, v, slot, 0);
            self.fills.insert(key, slot);
        }
    }
}

/// The fill values (and types) of checked loads in `v`.
pub(super) fn checked_fills(p: &LoopProgram, v: &Value, out: &mut Vec<(DType, f64)>) {
    match v {
        Value::Load { access, fill } => {
            if access.checked
                && let Some(t) = p.tensors.get(access.tensor.0)
            {
                out.push((t.dtype, *fill));
            }
            for s in &access.index {
                if let Subscript::Value(x) = s {
                    checked_fills(p, x, out);
                }
            }
        }
        Value::Unary(_, x) => checked_fills(p, x, out),
        Value::Binary(_, a, b) => {
            checked_fills(p, a, out);
            checked_fills(p, b, out);
        }
        Value::Where(c, a, b) => {
            checked_fills(p, c, out);
            checked_fills(p, a, out);
            checked_fills(p, b, out);
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
    }
}
