//! Index arithmetic: 64-bit, floor division and modulo, overflow checked (or wrapping where [`ring_only`] proves it exact).

use super::*;

/// How an index expression's `+ - *` are computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Arith {
    /// Overflow returns [`Status::IndexArithmetic`], as the interpreter fails.
    Checked,
    /// Wrapping, for a subscript of an access proven in range built from `+ - *`
    /// alone ([`ring_only`]): wrapping arithmetic is exact modulo 2^64 and the true
    /// value lies in `0..dim`, so the wrapped result is the true value.
    Wrapping,
}

impl<M: Module> Translator<'_, '_, M> {
    pub(super) fn materialize(&mut self, v: Int) -> IrValue {
        match v {
            Int::Const(c) => self.b.ins().iconst(I64, c),
            Int::Dyn(v) => v,
        }
    }

    pub(super) fn overflow_checked(&mut self, pair: (IrValue, IrValue)) -> IrValue {
        let (r, overflow) = pair;
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
        self.check(ok, Status::IndexArithmetic);
        r
    }

    /// The value of an index expression, every `+ - *` checked for overflow.
    pub(super) fn index(&mut self, e: &Expr) -> Result<IrValue, JitError> {
        self.index_in(e, Arith::Checked)
    }

    /// The value of an index expression with `arith`'s `+ - *`.
    pub(super) fn index_in(&mut self, e: &Expr, arith: Arith) -> Result<IrValue, JitError> {
        let v = self.int(e, arith)?;
        Ok(self.materialize(v))
    }

    pub(super) fn int(&mut self, e: &Expr, arith: Arith) -> Result<Int, JitError> {
        Ok(match e {
            Expr::Int(v) => Int::Const(*v),
            Expr::Index(n) => match self.loops.get(n) {
                Some(v) => Int::Dyn(*v),
                None => return self.unsupported(format!("i{n} is used outside its loop")),
            },
            Expr::Name(n) => match self.names.get(n) {
                Some(v) => Int::Dyn(*v),
                None => {
                    return self.unsupported(format!(
                        "the size `{n}` is not a named dimension of any input"
                    ));
                }
            },
            Expr::Param(n) => match self.params.get(n) {
                Some(v) => Int::Dyn(*v),
                None => return self.unsupported(format!("`${n}` is not a declared param")),
            },
            Expr::Dim(..) => {
                return self.unsupported(format!("`{e}` refers to a shape source"));
            }
            Expr::Neg(a) => {
                let zero = Expr::Int(0);
                return self.binary_int(IndexOp::Sub, &zero, a, arith);
            }
            Expr::Bin(op, a, b) => return self.binary_int(*op, a, b, arith),
        })
    }

    pub(super) fn binary_int(
        &mut self,
        op: IndexOp,
        a: &Expr,
        b: &Expr,
        arith: Arith,
    ) -> Result<Int, JitError> {
        let (x, y) = (self.int(a, arith)?, self.int(b, arith)?);
        if let (Int::Const(u), Int::Const(v)) = (x, y) {
            // Folded exactly as the interpreter evaluates; a failing fold is left to
            // fail at run time, where the error belongs.
            let folded = Expr::bin(op, Expr::Int(u), Expr::Int(v)).eval(&Bindings::default());
            if let Ok(c) = folded {
                return Ok(Int::Const(c));
            }
        }
        let xv = self.materialize(x);
        let ins_y = y;
        let yv = self.materialize(y);
        let r = match op {
            IndexOp::Add if arith == Arith::Wrapping => self.b.ins().iadd(xv, yv),
            IndexOp::Sub if arith == Arith::Wrapping => self.b.ins().isub(xv, yv),
            IndexOp::Mul if arith == Arith::Wrapping => self.b.ins().imul(xv, yv),
            IndexOp::Add => {
                let pair = self.b.ins().sadd_overflow(xv, yv);
                self.overflow_checked(pair)
            }
            IndexOp::Sub => {
                let pair = self.b.ins().ssub_overflow(xv, yv);
                self.overflow_checked(pair)
            }
            IndexOp::Mul => {
                let pair = self.b.ins().smul_overflow(xv, yv);
                self.overflow_checked(pair)
            }
            IndexOp::Min => self.b.ins().smin(xv, yv),
            IndexOp::Max => self.b.ins().smax(xv, yv),
            IndexOp::Div | IndexOp::Mod => self.floor_div_mod(op, xv, yv, ins_y),
        };
        Ok(Int::Dyn(r))
    }

    /// Floor division or modulo; a positive literal divisor needs no checks.
    pub(super) fn floor_div_mod(
        &mut self,
        op: IndexOp,
        a: IrValue,
        b: IrValue,
        divisor: Int,
    ) -> IrValue {
        let positive = matches!(divisor, Int::Const(c) if c > 0);
        if !positive {
            let nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, b, 0);
            self.check(nonzero, Status::IndexArithmetic);
            let a_min = self.b.ins().icmp_imm_s(IntCC::Equal, a, i64::MIN);
            let b_neg1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
            let overflow = self.b.ins().band(a_min, b_neg1);
            let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
            self.check(ok, Status::IndexArithmetic);
        }
        let q = self.b.ins().sdiv(a, b);
        let r = self.b.ins().srem(a, b);
        // The truncated quotient is one too large when the remainder is non-zero and
        // its sign differs from the divisor's.
        let r_nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
        let signs = self.b.ins().bxor(r, b);
        let differ = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, signs, 0);
        let fix = self.b.ins().band(r_nonzero, differ);
        match op {
            IndexOp::Div => {
                let fix = self.b.ins().uextend(I64, fix);
                self.b.ins().isub(q, fix)
            }
            _ => {
                let adjusted = self.b.ins().iadd(r, b);
                self.b.ins().select(fix, adjusted, r)
            }
        }
    }
}

/// True when `e` is built from sizes, loop indices and literals by `+ - *` alone,
/// the operations whose wrapping results are exact modulo 2^64.
pub(super) fn ring_only(e: &Expr) -> bool {
    !e.any(&mut |x| {
        matches!(
            x,
            Expr::Dim(..)
                | Expr::Bin(
                    IndexOp::Div | IndexOp::Mod | IndexOp::Min | IndexOp::Max,
                    ..
                )
        )
    })
}
