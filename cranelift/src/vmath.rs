//! Inline f32 math for f32 programs: `exp`, `log`, `tanh`, `sigmoid` and `erf` as
//! straight-line CLIF, on an `f32` or on the four lanes of an `f32x4`.
//!
//! Each function is a port of its counterpart in the runtime's
//! [`vmath`](uop_runtime::vmath) module, which Rust kernels call: the same range reduction, the same
//! constants, the same operations in the same order (comparisons and selects where
//! the Rust code has `if`; each of its `madd`s a fused multiply-add when the host has
//! FMA, as `cranelift-native` detects it, and a multiply and an add otherwise), so a
//! kernel's result is bit-identical to that module's function instantiated with
//! `FMA` = the host's FMA, NaN payloads aside (`tests/suite/cranelift_vmath.rs` checks this on a dense sweep of f32 bit
//! patterns, scalar and vector). The accuracy is therefore the one that module
//! states and measures: at most 1 ulp from the correctly rounded value for `exp`,
//! `log`, `tanh` and `erf`, 2 for `sigmoid`, over all f32 inputs, with the special
//! values (NaN, ±inf, ±0, overflow, underflow into the subnormals) exact.
//!
//! The constants are repeated here because that module keeps them private; a change
//! on either side without the other fails the bit-for-bit test.
//!
//! `sin`, `cos` and `pow` are not ported yet (their reductions work in f64, which
//! needs the two halves of an `f32x4` widened separately); kernels still call the
//! runtime's f64 functions for them, lane by lane in vector loops. f64 programs call
//! the runtime for every function, as the interpreter computes them.

use cranelift_codegen::ir::condcodes::FloatCC;
use cranelift_codegen::ir::types::{F32, F32X4, I32, I32X4};
use cranelift_codegen::ir::{InstBuilder, MemFlagsData, Type, Value};
use cranelift_frontend::FunctionBuilder;
use uop_runtime::vmath::{
    ERF_C0_MINUS_1, ERF_LARGE, ERF_SMALL, EXP_P, LN_Q, LN2_HI, LN2_LO, ROUND_F32, SIGN_F32,
    TANH_SMALL, TANH_T,
};

use crate::uop::UnaryOp;

/// A function emitted inline for f32 programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inline {
    /// `e^x`
    Exp,
    /// The natural logarithm.
    Log,
    /// The hyperbolic tangent.
    Tanh,
    /// `1 / (1 + e^-x)`
    Sigmoid,
    /// The error function.
    Erf,
}

impl Inline {
    /// The inline function computing `op`, if there is one.
    pub(crate) fn of(op: UnaryOp) -> Option<Inline> {
        Some(match op {
            UnaryOp::Exp => Inline::Exp,
            UnaryOp::Log => Inline::Log,
            UnaryOp::Tanh => Inline::Tanh,
            UnaryOp::Sigmoid => Inline::Sigmoid,
            UnaryOp::Erf => Inline::Erf,
            _ => return None,
        })
    }
}

/// True when `p` is an f32 program calling a function the JIT computes inline as a
/// polynomial (`Inline`: `exp log tanh sigmoid erf`), within 1 or 2 ulps of the
/// interpreter's result rather than equal to it.
pub fn uses_inline_math(p: &crate::uop::Program) -> bool {
    p.dtype == crate::uop::DType::F32
        && p.nodes
            .iter()
            .any(|n| matches!(n.op, crate::uop::Uop::Unary { op, .. } if Inline::of(op).is_some()))
}

// The constants are the runtime's own (`uop_runtime::vmath`), so both
// backends evaluate the very same polynomials.

/// Emits `f(x)` for an `f32` or `f32x4` value `x`; returns a value of the same type.
/// With `fma` (the host has fused multiply-add), the function's multiply-adds are
/// fused as in `vmath`'s `FMA = true` instance; without, as in `FMA = false`.
pub(crate) fn emit(b: &mut FunctionBuilder<'_>, f: Inline, x: Value, fma: bool) -> Value {
    let vector = b.func.dfg.value_type(x) == F32X4;
    let mut e = Emitter { b, vector, fma };
    match f {
        Inline::Exp => e.exp(x),
        Inline::Log => e.ln(x),
        Inline::Tanh => e.tanh(x),
        Inline::Sigmoid => e.sigmoid(x),
        Inline::Erf => e.erf(x),
    }
}

/// Emits the same code for one lane or four: constants are splatted, selects of
/// vectors are bit selects on the comparison masks.
struct Emitter<'a, 'f> {
    b: &'a mut FunctionBuilder<'f>,
    vector: bool,
    /// `madd` is one fused multiply-add.
    fma: bool,
}

impl Emitter<'_, '_> {
    fn float_type(&self) -> Type {
        if self.vector { F32X4 } else { F32 }
    }

    fn int_type(&self) -> Type {
        if self.vector { I32X4 } else { I32 }
    }

    fn f(&mut self, c: f32) -> Value {
        let s = self.b.ins().f32const(c);
        if self.vector {
            self.b.ins().splat(F32X4, s)
        } else {
            s
        }
    }

    fn i(&mut self, c: u32) -> Value {
        let s = self.b.ins().iconst(I32, i64::from(c));
        if self.vector {
            self.b.ins().splat(I32X4, s)
        } else {
            s
        }
    }

    fn add(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fadd(a, b)
    }

    fn sub(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fsub(a, b)
    }

    fn mul(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fmul(a, b)
    }

    fn div(&mut self, a: Value, b: Value) -> Value {
        self.b.ins().fdiv(a, b)
    }

    /// `vmath`'s `madd`: `a * b + c`, fused when the host has FMA.
    fn madd(&mut self, a: Value, b: Value, c: Value) -> Value {
        if self.fma {
            self.b.ins().fma(a, b, c)
        } else {
            let p = self.mul(a, b);
            self.add(p, c)
        }
    }

    /// `madd(a, k, c)` for constants `k` and `c`.
    fn maddc(&mut self, a: Value, k: f32, c: f32) -> Value {
        let (k, c) = (self.f(k), self.f(c));
        self.madd(a, k, c)
    }

    fn neg(&mut self, x: Value) -> Value {
        self.b.ins().fneg(x)
    }

    /// `c + x` for a constant `c`.
    fn cadd(&mut self, c: f32, x: Value) -> Value {
        let c = self.f(c);
        self.add(c, x)
    }

    /// `x * c` for a constant `c`.
    fn mulc(&mut self, x: Value, c: f32) -> Value {
        let c = self.f(c);
        self.mul(x, c)
    }

    /// `c[0] + x (c[1] + x (... + x c[n-1]))`, innermost first, one `madd` per
    /// coefficient as the Rust code nests it.
    fn horner(&mut self, x: Value, c: &[f32]) -> Value {
        let (&last, rest) = c
            .split_last()
            .unwrap_or_else(|| unreachable!("polynomials have coefficients"));
        let mut acc = self.f(last);
        for &k in rest.iter().rev() {
            let k = self.f(k);
            acc = self.madd(x, acc, k);
        }
        acc
    }

    fn bits(&mut self, x: Value) -> Value {
        let ty = self.int_type();
        self.b.ins().bitcast(ty, MemFlagsData::new(), x)
    }

    fn float_of_bits(&mut self, x: Value) -> Value {
        let ty = self.float_type();
        self.b.ins().bitcast(ty, MemFlagsData::new(), x)
    }

    fn cmp(&mut self, cc: FloatCC, a: Value, b: Value) -> Value {
        self.b.ins().fcmp(cc, a, b)
    }

    /// `x cc c` for a constant `c`.
    fn cmpc(&mut self, cc: FloatCC, x: Value, c: f32) -> Value {
        let c = self.f(c);
        self.cmp(cc, x, c)
    }

    /// `if mask { a } else { b }`, per lane.
    fn select(&mut self, mask: Value, a: Value, b: Value) -> Value {
        if !self.vector {
            return self.b.ins().select(mask, a, b);
        }
        let ty = self.b.func.dfg.value_type(a);
        let mask = if ty == I32X4 {
            mask
        } else {
            self.b.ins().bitcast(ty, MemFlagsData::new(), mask)
        };
        self.b.ins().bitselect(mask, a, b)
    }

    /// `if mask { c } else { b }` for a constant `c`.
    fn selectc(&mut self, mask: Value, c: f32, b: Value) -> Value {
        let c = self.f(c);
        self.select(mask, c, b)
    }

    /// `if x > c { c } else { x }` (NaN stays), written as `c < x` so that the vector
    /// form lowers to one `minps c, x` (whose semantics are exactly this) instead of
    /// a compare and a blend.
    fn clamp_above(&mut self, x: Value, c: f32) -> Value {
        let cv = self.f(c);
        let above = self.cmp(FloatCC::LessThan, cv, x);
        self.select(above, cv, x)
    }

    /// `v` with the sign bit of `x` or-ed in.
    fn or_sign(&mut self, v: Value, x: Value) -> Value {
        let vb = self.bits(v);
        let xb = self.bits(x);
        let sign = self.i(SIGN_F32);
        let s = self.b.ins().band(xb, sign);
        let r = self.b.ins().bor(vb, s);
        self.float_of_bits(r)
    }

    /// `2^n` for an integer `n` in the normal exponent range, as a float.
    fn pow2(&mut self, n: Value) -> Value {
        let bias = self.i(127);
        let e = self.b.ins().iadd(n, bias);
        let shift = self.b.ins().iconst(I32, 23);
        let p = self.b.ins().ishl(e, shift);
        self.float_of_bits(p)
    }

    /// `scale_f32`: `x * 2^n` through two power-of-two factors.
    fn scale(&mut self, x: Value, n: Value) -> Value {
        let one = self.b.ins().iconst(I32, 1);
        let n1 = self.b.ins().sshr(n, one);
        let n2 = self.b.ins().isub(n, n1);
        let p1 = self.pow2(n1);
        let p2 = self.pow2(n2);
        let y = self.mul(x, p1);
        self.mul(y, p2)
    }

    /// `exp_f32`.
    fn exp(&mut self, x: Value) -> Value {
        let x = self.clamp_above(x, 89.0);
        let below = self.cmpc(FloatCC::LessThan, x, -104.0);
        let x = self.selectc(below, -104.0, x);
        let t = self.maddc(x, std::f32::consts::LOG2_E, ROUND_F32);
        let round = self.f(ROUND_F32);
        let n = self.sub(t, round);
        let nn = self.neg(n);
        let (hi, lo) = (self.f(LN2_HI), self.f(LN2_LO));
        let xh = self.madd(nn, hi, x);
        let r = self.madd(nn, lo, xh);
        let p = self.horner(r, &EXP_P);
        let rr = self.mul(r, r);
        let q = self.madd(rr, p, r);
        let e = self.cadd(1.0, q);
        let tb = self.bits(t);
        let rb = self.i(ROUND_F32.to_bits());
        let ni = self.b.ins().isub(tb, rb);
        self.scale(e, ni)
    }

    /// `ln_f32`.
    fn ln(&mut self, x: Value) -> Value {
        let tiny = self.cmpc(FloatCC::LessThan, x, f32::MIN_POSITIVE);
        let scaled = self.mulc(x, 8_388_608.0);
        let xs = self.select(tiny, scaled, x);
        let (b23, b0) = (self.i(127 + 23), self.i(127));
        let bias = self.select_int(tiny, b23, b0);
        let xb = self.bits(xs);
        let off = self.i(0x3f80_0000 - 0x3f35_04f3);
        let ix = self.b.ins().iadd(xb, off);
        let shift = self.b.ins().iconst(I32, 23);
        let top = self.b.ins().ushr(ix, shift);
        let ei = self.b.ins().isub(top, bias);
        let ty = self.float_type();
        let e = self.b.ins().fcvt_from_sint(ty, ei);
        let mant = self.i(0x007f_ffff);
        let mb = self.b.ins().band(ix, mant);
        let sqrt_half = self.i(0x3f35_04f3);
        let mb = self.b.ins().iadd(mb, sqrt_half);
        let m = self.float_of_bits(mb);
        let one = self.f(1.0);
        let f = self.sub(m, one);
        let d = self.cadd(2.0, f);
        let s = self.div(f, d);
        let z = self.mul(s, s);
        let q = self.horner(z, &LN_Q);
        let nz = self.neg(z);
        let fzq = self.madd(nz, q, f);
        let sc = self.mul(s, fzq);
        let nsc = self.neg(sc);
        let ln2_lo = self.f(LN2_LO);
        let lo = self.madd(e, ln2_lo, nsc);
        let flo = self.add(f, lo);
        let ln2_hi = self.f(LN2_HI);
        let r = self.madd(e, ln2_hi, flo);
        let inf = self.cmpc(FloatCC::Equal, x, f32::INFINITY);
        let r = self.select(inf, x, r);
        let zero = self.cmpc(FloatCC::Equal, x, 0.0);
        let r = self.selectc(zero, f32::NEG_INFINITY, r);
        let negative = self.cmpc(FloatCC::LessThan, x, 0.0);
        let nan = self.cmp(FloatCC::Unordered, x, x);
        let invalid = self.b.ins().bor(negative, nan);
        self.selectc(invalid, f32::NAN, r)
    }

    /// A select of integers (`select` takes any type, `bitselect` the mask's).
    fn select_int(&mut self, mask: Value, a: Value, b: Value) -> Value {
        if self.vector {
            self.b.ins().bitselect(mask, a, b)
        } else {
            self.b.ins().select(mask, a, b)
        }
    }

    /// `tanh_f32`.
    fn tanh(&mut self, x: Value) -> Value {
        let a = self.b.ins().fabs(x);
        let z = self.mul(x, x);
        let t = self.horner(z, &TANH_T);
        let xz = self.mul(x, z);
        let small = self.madd(xz, t, x);
        let small = self.or_sign(small, x);
        let two = self.f(2.0);
        let a2 = self.mul(two, a);
        let e = self.exp(a2);
        let one = self.f(1.0);
        let e1 = self.add(e, one);
        let q = self.div(two, e1);
        let big = self.sub(one, q);
        let big = self.or_sign(big, x);
        let is_small = self.cmpc(FloatCC::LessThan, a, TANH_SMALL);
        self.select(is_small, small, big)
    }

    /// `sigmoid_f32`.
    fn sigmoid(&mut self, x: Value) -> Value {
        let a = self.b.ins().fabs(x);
        let na = self.b.ins().fneg(a);
        let e = self.exp(na);
        let negative = self.cmpc(FloatCC::LessThan, x, 0.0);
        let one = self.f(1.0);
        let num = self.select(negative, e, one);
        let d = self.cadd(1.0, e);
        self.div(num, d)
    }

    /// `erf_f32`.
    fn erf(&mut self, x: Value) -> Value {
        let z = self.mul(x, x);
        let p = self.horner(z, &ERF_SMALL);
        let c0 = self.f(ERF_C0_MINUS_1);
        let c = self.madd(z, p, c0);
        let small = self.madd(x, c, x);
        let small = self.or_sign(small, x);
        let a = self.b.ins().fabs(x);
        let a = self.clamp_above(a, 4.0);
        let one = self.f(1.0);
        let t = self.div(one, a);
        let h = self.horner(t, &ERF_LARGE);
        let aa = self.mul(a, a);
        let naa = self.b.ins().fneg(aa);
        let e = self.exp(naa);
        let ne = self.neg(e);
        let big = self.madd(ne, h, one);
        let big = self.or_sign(big, x);
        let ax = self.b.ins().fabs(x);
        let is_small = self.cmpc(FloatCC::LessThan, ax, 1.0);
        self.select(is_small, small, big)
    }
}
