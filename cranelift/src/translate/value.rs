//! Scalar float values: constants, conversions, math.

use super::*;

impl<M: Module> Translator<'_, '_, M> {
    pub(super) fn float_const(&mut self, c: f64) -> IrValue {
        if self.ty == F32 {
            self.b.ins().f32const(c as f32)
        } else {
            self.b.ins().f64const(c)
        }
    }

    pub(super) fn wide_const(&mut self, c: f64) -> IrValue {
        self.b.ins().f64const(c)
    }

    /// An i64 as the program's float type, rounded once from f64 like the interpreter.
    pub(super) fn int_to_float(&mut self, v: IrValue) -> IrValue {
        let wide = self.b.ins().fcvt_from_sint(F64, v);
        self.narrow(wide)
    }

    pub(super) fn widen(&mut self, x: IrValue) -> IrValue {
        if self.ty == F32 {
            self.b.ins().fpromote(F64, x)
        } else {
            x
        }
    }

    pub(super) fn narrow(&mut self, x: IrValue) -> IrValue {
        if self.ty == F32 {
            self.b.ins().fdemote(F32, x)
        } else {
            x
        }
    }

    pub(super) fn value(&mut self, cx: &Cx, v: &Value) -> Result<IrValue, JitError> {
        Ok(match v {
            Value::Load { access, fill } => {
                let Some(decl) = self.p.tensors.get(access.tensor.0) else {
                    return self.unsupported(format!("tensor %{} does not exist", access.tensor.0));
                };
                let dtype = decl.dtype;
                if dtype == DType::I32 {
                    let raw = self.load_raw(cx, access, *fill, dtype)?;
                    let wide = self.b.ins().fcvt_from_sint(F64, raw);
                    self.narrow(wide)
                } else if dtype == self.p.dtype {
                    self.load_raw(cx, access, *fill, dtype)?
                } else {
                    return self.unsupported(format!(
                        "`{}` is {dtype} in an {} program",
                        decl.name, self.p.dtype
                    ));
                }
            }
            Value::Var(var) => match self.vars.get(&var.0) {
                Some(&variable) => self.b.use_var(variable),
                None => return self.unsupported(format!("v{} is not carried by any loop", var.0)),
            },
            Value::Const(c) => self.float_const(*c),
            Value::Param(p) => {
                let Some(&v) = self.params.get(p) else {
                    return self.unsupported(format!("`${p}` is not a declared param"));
                };
                self.int_to_float(v)
            }
            Value::Index(e) => {
                let i = self.index(e)?;
                self.int_to_float(i)
            }
            Value::Unary(op, x) => {
                let x = self.value(cx, x)?;
                self.unary(*op, x)
            }
            Value::Binary(op, a, b) => {
                let a = self.value(cx, a)?;
                let b = self.value(cx, b)?;
                self.binary(*op, a, b)
            }
            Value::Where(c, a, b) => {
                let c = self.value(cx, c)?;
                let a = self.value(cx, a)?;
                let b = self.value(cx, b)?;
                let zero = self.float_const(0.0);
                let holds = self.b.ins().fcmp(FloatCC::NotEqual, c, zero);
                self.b.ins().select(holds, a, b)
            }
        })
    }

    /// A scalar unary operation in the program's float type.
    pub(super) fn unary(&mut self, op: UnaryOp, x: IrValue) -> IrValue {
        if self.ty == F32
            && let Some(f) = Inline::of(op)
        {
            return vmath::emit(&mut self.b, f, x, self.target.fma);
        }
        let math = |m: MathFn| RuntimeFn::Math(m);
        let wide_call = |t: &mut Self, f: RuntimeFn, x: IrValue| {
            let w = t.widen(x);
            let r = t.call(f, &[w]).unwrap_or(w);
            t.narrow(r)
        };
        match op {
            UnaryOp::Neg => self.b.ins().fneg(x),
            UnaryOp::Abs => self.b.ins().fabs(x),
            UnaryOp::Sqrt => self.b.ins().sqrt(x),
            UnaryOp::Floor => self.b.ins().floor(x),
            UnaryOp::Ceil => self.b.ins().ceil(x),
            UnaryOp::Recip => {
                let one = self.float_const(1.0);
                self.b.ins().fdiv(one, x)
            }
            UnaryOp::Exp => wide_call(self, math(MathFn::Exp), x),
            UnaryOp::Log => wide_call(self, math(MathFn::Log), x),
            UnaryOp::Tanh => wide_call(self, math(MathFn::Tanh), x),
            UnaryOp::Sin => wide_call(self, math(MathFn::Sin), x),
            UnaryOp::Cos => wide_call(self, math(MathFn::Cos), x),
            UnaryOp::Erf => wide_call(self, math(MathFn::Erf), x),
            UnaryOp::Rsqrt => {
                let w = self.widen(x);
                let s = self.b.ins().sqrt(w);
                let one = self.wide_const(1.0);
                let r = self.b.ins().fdiv(one, s);
                self.narrow(r)
            }
            UnaryOp::Sigmoid => {
                let w = self.widen(x);
                let n = self.b.ins().fneg(w);
                let e = self.call(math(MathFn::Exp), &[n]).unwrap_or(n);
                let one = self.wide_const(1.0);
                let d = self.b.ins().fadd(one, e);
                let r = self.b.ins().fdiv(one, d);
                self.narrow(r)
            }
            UnaryOp::Sign => {
                let zero = self.float_const(0.0);
                let one = self.float_const(1.0);
                let minus = self.float_const(-1.0);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                let zero_or_nan = self.b.ins().select(nan, x, zero);
                let neg = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                let r = self.b.ins().select(neg, minus, zero_or_nan);
                let pos = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                self.b.ins().select(pos, one, r)
            }
        }
    }

    /// A scalar binary operation in the program's float type.
    pub(super) fn binary(&mut self, op: BinaryOp, a: IrValue, b: IrValue) -> IrValue {
        let compare = |t: &mut Self, cc: FloatCC| {
            let c = t.b.ins().fcmp(cc, a, b);
            let one = t.float_const(1.0);
            let zero = t.float_const(0.0);
            t.b.ins().select(c, one, zero)
        };
        match op {
            BinaryOp::Add => self.b.ins().fadd(a, b),
            BinaryOp::Sub => self.b.ins().fsub(a, b),
            BinaryOp::Mul => self.b.ins().fmul(a, b),
            BinaryOp::Div => self.b.ins().fdiv(a, b),
            BinaryOp::Maximum => self.b.ins().fmax(a, b),
            BinaryOp::Minimum => self.b.ins().fmin(a, b),
            BinaryOp::Pow => {
                let (wa, wb) = (self.widen(a), self.widen(b));
                let r = self.call(RuntimeFn::Pow, &[wa, wb]).unwrap_or(wa);
                self.narrow(r)
            }
            BinaryOp::Eq => compare(self, FloatCC::Equal),
            BinaryOp::Ne => compare(self, FloatCC::NotEqual),
            BinaryOp::Lt => compare(self, FloatCC::LessThan),
            BinaryOp::Le => compare(self, FloatCC::LessThanOrEqual),
            BinaryOp::Gt => compare(self, FloatCC::GreaterThan),
            BinaryOp::Ge => compare(self, FloatCC::GreaterThanOrEqual),
        }
    }
}
