//! Vectorizable f32 math: `exp`, `ln`, `tanh`, `sigmoid`, `erf`, `sin`, `cos` and
//! `pow` as straight-line Rust that LLVM auto-vectorizes inside a plain
//! `for i in 0..n { y[i] = f(x[i]) }` loop.
//!
//! Generated kernels of f32 programs call these functions (`rt::vmath::exp_f32`),
//! and the Cranelift backend emits the same algorithms with the same constants
//! inline: this file is the single source of what is tested and what runs. f64
//! programs keep calling std's functions (and [`erf_f64`](super::erf_f64)), which
//! are the interpreter's own.
//!
//! # Rules the code follows
//!
//! Only `+ - * /`, comparisons used as selects (`if c { a } else { b }` on values),
//! `to_bits`/`from_bits`, integer bit operations (wrapping), `abs` and conversions
//! between f32, f64 and integers. `mul_add` only inside `madd`, chosen by the
//! `fma` argument every public function takes (without FMA hardware it is a libm
//! call). No other libm call, no loop, no panic, no table lookup. Rounding to an integer uses the
//! magic-constant trick: adding `1.5 * 2^23` to an f32 below `2^22` in magnitude
//! rounds it to the nearest integer (ties to even) and leaves that integer in the
//! low mantissa bits; `1.5 * 2^52` does the same for f64.
//!
//! # Fused multiply-add
//!
//! Each function takes `fma: bool`, a constant in generated code (the functions are
//! inlined, so the choice is free). With `fma`, every `a * b + c` of the range
//! reductions and polynomials is one fused multiply-add, rounded once; without, a
//! multiply and an add. Kernels pass `true` in their copies compiled for AVX2+FMA
//! and AVX-512 (a third fewer instructions: gelu 4M ran 1.80 -> 1.45 ms) and `false`
//! in the baseline copy; Cranelift fuses exactly the same operations when the host
//! has FMA. Both instances are held to the same bounds (table below), and the
//! `false` instance computes exactly what this module did before it had the choice.
//!
//! # Algorithms (and the constants a port needs)
//!
//! - `exp`: `x` clamped to `[-104, 89]` (both ends still overflow to `inf` or
//!   underflow to 0), `n = round(x log2 e)`, `r = x - n ln2` with ln2 split
//!   Cody–Waite style into `LN2_HI` (15 significant bits, so `n * LN2_HI` is
//!   exact) and `LN2_LO`, `exp(r) = 1 + r + r² P(r)` with a degree-4 minimax `P`
//!   on `|r| <= ln2/2` (`EXP_P`), then `* 2^(n/2) * 2^(n - n/2)`: two exact
//!   power-of-two factors so that results down in the subnormal range are rounded
//!   once.
//! - `ln`: subnormals scaled by `2^23` first; `x = 2^e m` with `m` in
//!   `[sqrt(1/2), sqrt(2))`, `f = m - 1`, `s = f / (2 + f)`,
//!   `ln(1 + f) = 2 atanh(s) = f - s (f - s² Q(s²))` with a degree-2 minimax `Q`
//!   (`LN_Q`), plus `e ln2` (split as for `exp`).
//! - `tanh`: below `|x| = 0.625` the odd polynomial `x + x³ T(x²)` (degree-5
//!   minimax `T`, `TANH_T`), above `sign(x) (1 - 2 / (exp(2|x|) + 1))`, the exponential computed
//!   as `exp` does on `2|x|` clamped to `TANH_EXP_MAX` = 20 (the result is 1 from
//!   there), so one power-of-two factor scales it (results bit-identical to calling
//!   `exp`, about 10% fewer instructions).
//! - `sigmoid`: `e = exp(-|x|)` never overflows; `1 / (1 + e)` for `x >= 0` and
//!   `e / (1 + e)` below, which keeps the tiny (even subnormal) values of large
//!   negative `x`.
//! - `erf`: below `|x| = 1` the odd polynomial `x (2/sqrt(pi) + x² E(x²))` (degree-5
//!   minimax `E`, `ERF_SMALL`, evaluated as `x + x (2/sqrt(pi) - 1 + x² E)`); above, `1 - exp(-x²) H(1/|x|)` where `H`
//!   (degree 7, `ERF_LARGE`) fits `erfc(a) exp(a²)` on `1 <= a <= 4`; `|x|` is
//!   clamped to 4, where erf already rounds to ±1.
//! - `sin`, `cos`: `k = round(x 2/pi)` and `r = x - k pi/2` in f64 with pi/2 split in
//!   three (`PIO2_1`, `PIO2_2` with 23 significant bits each, so `k * PIO2_i`
//!   is exact for `|k| < 2^30`, and `PIO2_3`), `r` rounded to an f32 pair `hi + lo`, then
//!   `sin r = r + r³ S(r²)` and `cos r = 1 - r²/2 + r⁴ C(r²)` (degree-2 minimax
//!   `S`, `C`: `SIN_S`, `COS_C`) chosen and negated by the quadrant `k mod 4`.
//! - `pow`: `|x|^y = 2^(y log2|x|)` evaluated in f64 (`log2` by the atanh series to
//!   `s^15`, `exp2` by the Taylor series of `e^u` to `u^10`, both far more accurate
//!   than f32 needs) and rounded to f32 once; then the sign and the special cases
//!   of IEEE `pow` (negative base with an integer exponent, `0^y`, `1^y`, `x^0`,
//!   infinities, NaN).
//!
//! The polynomial coefficients were fitted for this module with a Lawson
//! (iteratively reweighted least squares) minimax fit of the relative error, in
//! f64 against 40-digit references, and rounded to f32.
//!
//! # Accuracy
//!
//! Measured, for both instances, by `runtime/tests/vmath_ulp.rs` against the f64 reference (std / libm
//! in f64, as the interpreter computes) rounded to f32, as the distance in f32
//! steps (ulps); the exhaustive sweep over all 2^32 inputs is an ignored test of
//! the same file. Special values (NaN, ±inf, ±0, overflow, underflow into and
//! through the subnormal range) match the reference.
//!
//! | function  | max ulp | domain                                                    |
//! |-----------|---------|-----------------------------------------------------------|
//! | `exp`     | 1       | all f32                                                   |
//! | `ln`      | 1       | all f32                                                   |
//! | `tanh`    | 1       | all f32                                                   |
//! | `sigmoid` | 2       | all f32                                                   |
//! | `erf`     | 1       | all f32                                                   |
//! | `sin`     | 1       | `\|x\| < 2^30`; beyond, finite and in `[-1, 1]`, not accurate |
//! | `cos`     | 1       | `\|x\| < 2^30`; beyond, finite and in `[-1, 1]`, not accurate |
//! | `pow`     | 1       | all f32 `x`, `y`                                          |

/// Sign bit of an f32.
pub const SIGN_F32: u32 = 0x8000_0000;

/// `1.5 * 2^23`: adding it to an f32 below `2^22` in magnitude rounds to an
/// integer, left in the low mantissa bits.
pub const ROUND_F32: f32 = 12_582_912.0;

/// `1.5 * 2^52`: the f64 rounding constant.
const ROUND_F64: f64 = 6_755_399_441_055_744.0;

/// High part of ln 2 (`0x3f317200`): 15 significant bits, so `n * LN2_HI` is exact
/// for `|n| < 2^9`.
pub const LN2_HI: f32 = 0.693_145_75;

/// `ln 2 - LN2_HI`, rounded to f32.
pub const LN2_LO: f32 = 1.428_606_8e-6;

/// `exp(r) ~ 1 + r + r² (P0 + P1 r + P2 r² + P3 r³ + P4 r⁴)` on `|r| <= ln2/2`.
pub const EXP_P: [f32; 5] = [
    0.499_999_94,
    0.166_665_21,
    0.041_668_39,
    0.008_368_716,
    0.001_381_460_2,
];

/// `2 atanh(s) ~ 2s + s z (Q0 + Q1 z + Q2 z²)`, `z = s²`, `|s| <= 0.1716`.
pub const LN_Q: [f32; 3] = [0.666_667_76, 0.399_775_27, 0.298_721_52];

/// Below this `|x|`, `tanh` is the odd polynomial.
pub const TANH_SMALL: f32 = 0.625;

/// The largest `2|x|` whose exponential `tanh` computes: `1 - 2 / (e^20 + 1)` already
/// rounds to 1.
pub const TANH_EXP_MAX: f32 = 20.0;

/// `tanh(x) ~ x + x z (T0 + ... + T5 z⁵)`, `z = x²`, `|x| <= 0.625`.
pub const TANH_T: [f32; 6] = [
    -0.333_333_3,
    0.133_332_06,
    -0.053_946_763,
    0.021_700_703,
    -0.008_177_398,
    0.002_142_961_6,
];

/// `erf(x) ~ x (2/sqrt(pi) + z (E0 + ... + E5 z⁵))`, `z = x²`, `|x| <= 1`.
pub const ERF_SMALL: [f32; 6] = [
    -0.376_126_3,
    0.112_836_175,
    -0.026_854_916,
    0.005_190_162_5,
    -0.000_802_481_84,
    7.898_694_5e-5,
];

/// `2/sqrt(pi) - 1`.
pub const ERF_C0_MINUS_1: f32 = 0.128_379_17;

/// `erfc(a) exp(a²) ~ H0 + H1 t + ... + H7 t⁷`, `t = 1/a`, `1 <= a <= 4`.
pub const ERF_LARGE: [f32; 8] = [
    0.000_201_098_05,
    0.559_095_44,
    0.046_020_426,
    -0.496_494_44,
    0.566_283_35,
    -0.349_607_9,
    0.120_134_23,
    -0.018_048_61,
];

/// First part of pi/2 (23 significant bits): `k * PIO2_1` is exact for `|k| < 2^30`.
const PIO2_1: f64 = 1.570_796_251_296_997;

/// Second part of pi/2 (23 significant bits).
const PIO2_2: f64 = 7.549_789_415_861_596e-8;

/// `pi/2 - PIO2_1 - PIO2_2`, rounded to f64.
const PIO2_3: f64 = 5.390_302_858_158_119e-15;

/// `sin(r) ~ r + r z (S0 + S1 z + S2 z²)`, `z = r²`, `|r| <= pi/4`.
const SIN_S: [f32; 3] = [-0.166_666_55, 0.008_332_16, -0.000_195_152_82];

/// `cos(r) ~ 1 - z/2 + z² (C0 + C1 z + C2 z²)`, `z = r²`, `|r| <= pi/4`.
const COS_C: [f32; 3] = [0.041_666_646, -0.001_388_731_6, 2.443_315_7e-5];

/// `a * b + c`: one fused multiply-add (rounded once) with `fma`, a multiply and
/// an add without. Kernels pass a constant `fma` (the functions are inlined, so the
/// choice costs nothing), `true` only in code compiled for CPUs with FMA, where
/// `mul_add` is one instruction (elsewhere it is a libm call).
#[inline(always)]
fn madd(fma: bool, a: f32, b: f32, c: f32) -> f32 {
    if fma { a.mul_add(b, c) } else { a * b + c }
}

/// `e^r ~ 1 + r + r² P(r)` on `|r| <= ln2/2` (a little beyond is fine), [`EXP_P`].
#[inline(always)]
fn exp_reduced(fma: bool, r: f32) -> f32 {
    let p = madd(fma, r, EXP_P[4], EXP_P[3]);
    let p = madd(fma, r, p, EXP_P[2]);
    let p = madd(fma, r, p, EXP_P[1]);
    let p = madd(fma, r, p, EXP_P[0]);
    1.0 + madd(fma, r * r, p, r)
}

/// `x * 2^n` for `n` in `[-150, 128]` (wrapping, so other `n` only give a wrong
/// value, never a panic): two normal power-of-two factors, so a subnormal result is
/// rounded once.
#[inline(always)]
fn scale_f32(x: f32, n: i32) -> f32 {
    let n1 = n >> 1;
    let n2 = n.wrapping_sub(n1);
    let p1 = f32::from_bits((n1.wrapping_add(127) as u32) << 23);
    let p2 = f32::from_bits((n2.wrapping_add(127) as u32) << 23);
    x * p1 * p2
}

/// `e^x`, within 1 ulp: `n = round(x log2 e)`, Cody–Waite `r = x - n ln2`, a
/// degree-6 polynomial for `e^r`, scaled by `2^n`.
#[inline(always)]
pub fn exp_f32(fma: bool, x: f32) -> f32 {
    // The clamps keep n in [-150, 128]; NaN passes them (comparisons are false).
    exp_below_89(fma, if x > 89.0 { 89.0 } else { x })
}

/// [`exp_f32`] of an `x` known not to exceed 89 (or NaN), without the upper clamp:
/// for `sigmoid` and `erf`, whose exponents are never positive.
#[inline(always)]
fn exp_below_89(fma: bool, x: f32) -> f32 {
    let x = if x < -104.0 { -104.0 } else { x };
    let t = madd(fma, x, core::f32::consts::LOG2_E, ROUND_F32);
    let n = t - ROUND_F32;
    // n * LN2_HI is exact, so the first step is exact with or without FMA.
    let r = madd(fma, -n, LN2_LO, madd(fma, -n, LN2_HI, x));
    let e = exp_reduced(fma, r);
    let ni = (t.to_bits() as i32).wrapping_sub(ROUND_F32.to_bits() as i32);
    scale_f32(e, ni)
}

/// The natural logarithm, within 1 ulp: `x = 2^e m`, `m` in `[sqrt(1/2), sqrt(2))`,
/// `ln m = 2 atanh(s)` with `s = (m - 1) / (m + 1)` by a polynomial in `s²`, plus
/// `e ln2`. `ln 0 = -inf`, `ln x = NaN` for `x < 0`.
#[inline(always)]
pub fn ln_f32(fma: bool, x: f32) -> f32 {
    // Subnormals are scaled into the normal range (exactly) first.
    let tiny = x < f32::MIN_POSITIVE;
    let xs = if tiny { x * 8_388_608.0 } else { x };
    let bias: i32 = if tiny { 23 } else { 0 };
    // Adding 1 - sqrt(1/2) (in bits) moves the exponent step from m = 2 to m = sqrt(2).
    let ix = xs.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let e = ((ix >> 23) as i32).wrapping_sub(127 + bias) as f32;
    let m = f32::from_bits((ix & 0x007f_ffff).wrapping_add(0x3f35_04f3));
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let q = madd(fma, z, madd(fma, z, LN_Q[2], LN_Q[1]), LN_Q[0]);
    // ln(1 + f) = f - s (f - z q): f is exact, the correction is small.
    let lo = madd(fma, e, LN2_LO, -(s * madd(fma, -z, q, f)));
    let r = madd(fma, e, LN2_HI, f + lo);
    let r = if x == f32::INFINITY { x } else { r };
    let r = if x == 0.0 { f32::NEG_INFINITY } else { r };
    if x < 0.0 || x.is_nan() { f32::NAN } else { r }
}

/// The hyperbolic tangent, within 1 ulp: an odd polynomial below `|x| = 0.625`,
/// `1 - 2 / (e^(2|x|) + 1)` with the sign of `x` above (±1 for large `|x|`).
#[inline(always)]
pub fn tanh_f32(fma: bool, x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let t = madd(fma, z, TANH_T[5], TANH_T[4]);
    let t = madd(fma, z, t, TANH_T[3]);
    let t = madd(fma, z, t, TANH_T[2]);
    let t = madd(fma, z, t, TANH_T[1]);
    let t = madd(fma, z, t, TANH_T[0]);
    // The sign again, for -0 (-0 + -0 * ... gives +0).
    let small = f32::from_bits(madd(fma, x * z, t, x).to_bits() | (x.to_bits() & SIGN_F32));
    // e^(2|x|) as in `exp_f32`, but cheaper: the argument is never negative, and
    // clamped at 20 (from there the result rounds to 1, as it did with e^89 or inf),
    // so one exact power-of-two factor scales it and no clamp below is needed.
    let w = 2.0 * a;
    let w = if w > TANH_EXP_MAX { TANH_EXP_MAX } else { w };
    let t = madd(fma, w, core::f32::consts::LOG2_E, ROUND_F32);
    let n = t - ROUND_F32;
    let r = madd(fma, -n, LN2_LO, madd(fma, -n, LN2_HI, w));
    let e = exp_reduced(fma, r);
    let ni = t.to_bits().wrapping_sub(ROUND_F32.to_bits());
    let e = e * f32::from_bits(ni.wrapping_add(127) << 23);
    let big = 1.0 - 2.0 / (e + 1.0);
    let big = f32::from_bits(big.to_bits() | (x.to_bits() & SIGN_F32));
    if a < TANH_SMALL { small } else { big }
}

/// The logistic function `1 / (1 + e^-x)`, within 2 ulps: from `e = e^-|x|`, which
/// cannot overflow, as `1 / (1 + e)` or `e / (1 + e)`.
#[inline(always)]
pub fn sigmoid_f32(fma: bool, x: f32) -> f32 {
    let e = exp_below_89(fma, -x.abs());
    let num = if x < 0.0 { e } else { 1.0 };
    num / (1.0 + e)
}

/// The error function, within 1 ulp: an odd polynomial below `|x| = 1`,
/// `1 - e^(-x²) H(1/|x|)` with the sign of `x` above.
#[inline(always)]
pub fn erf_f32(fma: bool, x: f32) -> f32 {
    let z = x * x;
    let p = madd(fma, z, ERF_SMALL[5], ERF_SMALL[4]);
    let p = madd(fma, z, p, ERF_SMALL[3]);
    let p = madd(fma, z, p, ERF_SMALL[2]);
    let p = madd(fma, z, p, ERF_SMALL[1]);
    let p = madd(fma, z, p, ERF_SMALL[0]);
    // x + x (2/sqrt(pi) - 1 + ...): x is exact and the rounding errors of the small
    // correction stay small.
    let small = madd(fma, x, madd(fma, z, p, ERF_C0_MINUS_1), x);
    let small = f32::from_bits(small.to_bits() | (x.to_bits() & SIGN_F32));
    // erf(4) already rounds to 1; the clamp keeps NaN.
    let a = x.abs();
    let a = if a > 4.0 { 4.0 } else { a };
    let t = 1.0 / a;
    let h = madd(fma, t, ERF_LARGE[7], ERF_LARGE[6]);
    let h = madd(fma, t, h, ERF_LARGE[5]);
    let h = madd(fma, t, h, ERF_LARGE[4]);
    let h = madd(fma, t, h, ERF_LARGE[3]);
    let h = madd(fma, t, h, ERF_LARGE[2]);
    let h = madd(fma, t, h, ERF_LARGE[1]);
    let h = madd(fma, t, h, ERF_LARGE[0]);
    let big = madd(fma, -exp_below_89(fma, -(a * a)), h, 1.0);
    let big = f32::from_bits(big.to_bits() | (x.to_bits() & SIGN_F32));
    if x.abs() < 1.0 { small } else { big }
}

/// `x - k pi/2` as an f32 pair `hi + lo`, and `k mod 4`, with `k = round(x 2/pi)`,
/// computed in f64; exact enough for `|x| < 2^30`. Beyond, `r` is clamped to
/// `[-1, 1]` (finite garbage rather than a huge one); NaN and ±inf give NaN.
#[inline(always)]
fn reduce_half_pi(x: f32) -> (f32, f32, u32) {
    let xd = f64::from(x);
    let t = xd * core::f64::consts::FRAC_2_PI + ROUND_F64;
    let k = t - ROUND_F64;
    let r = ((xd - k * PIO2_1) - k * PIO2_2) - k * PIO2_3;
    let r = if r > 1.0 { 1.0 } else { r };
    let r = if r < -1.0 { -1.0 } else { r };
    let hi = r as f32;
    (hi, (r - f64::from(hi)) as f32, t.to_bits() as u32 & 3)
}

/// `sin(r + lo + q pi/2)` for `|r| <= pi/4` and `lo` the rounding error of `r`:
/// the sine or cosine polynomial by the parity of `q`, negated for `q` = 2, 3.
#[inline(always)]
fn sin_quadrant(fma: bool, r: f32, lo: f32, q: u32) -> f32 {
    let z = r * r;
    // sin(r + lo) ~ sin r + lo, cos(r + lo) ~ cos r - r lo.
    let sp = madd(fma, z, madd(fma, z, SIN_S[2], SIN_S[1]), SIN_S[0]);
    let s = r + madd(fma, r * z, sp, lo);
    // Keeps sin(-0) = -0.
    let s = f32::from_bits(s.to_bits() | (r.to_bits() & SIGN_F32));
    // 1 - z/2 loses bits when rounded; (1 - w) - z/2 is exactly what it lost.
    let hz = 0.5 * z;
    let w = 1.0 - hz;
    let cp = madd(fma, z, madd(fma, z, COS_C[2], COS_C[1]), COS_C[0]);
    let c = w + madd(fma, z * z, cp, madd(fma, -r, lo, (1.0 - w) - hz));
    let v = if q & 1 == 0 { s } else { c };
    f32::from_bits(v.to_bits() ^ ((q & 2) << 30))
}

/// The sine, within 1 ulp for `|x| < 2^30`: reduction by pi/2 in f64, then a
/// polynomial on `[-pi/4, pi/4]`.
#[inline(always)]
pub fn sin_f32(fma: bool, x: f32) -> f32 {
    let (r, lo, q) = reduce_half_pi(x);
    sin_quadrant(fma, r, lo, q)
}

/// The cosine, within 1 ulp for `|x| < 2^30`: `cos x = sin(x + pi/2)` through the
/// quadrant.
#[inline(always)]
pub fn cos_f32(fma: bool, x: f32) -> f32 {
    let (r, lo, q) = reduce_half_pi(x);
    sin_quadrant(fma, r, lo, q.wrapping_add(1) & 3)
}

/// `log2 a` for a positive, finite, normal f64 `a`, to about 2^-45 relative:
/// `a = 2^e m`, `m` in `[sqrt(1/2), sqrt(2))`, `log2 m = 2 atanh(s) / ln 2` with
/// `s = (m - 1) / (m + 1)`, by the atanh series to `s^15`.
#[inline(always)]
fn log2_f64(a: f64) -> f64 {
    let ix = a
        .to_bits()
        .wrapping_add(0x3ff0_0000_0000_0000 - 0x3fe6_a09e_667f_3bcd);
    // The exponent as an f64 through the 2^52 trick (vectorizes without AVX-512).
    let e = f64::from_bits(0x4330_0000_0000_0000 | (ix >> 52)) - (4_503_599_627_370_496.0 + 1023.0);
    let m = f64::from_bits((ix & 0x000f_ffff_ffff_ffff).wrapping_add(0x3fe6_a09e_667f_3bcd));
    let s = (m - 1.0) / (m + 1.0);
    let z = s * s;
    // Horner's scheme, innermost term first (as `exp2_f64`).
    let p = 1.0 / 15.0;
    let p = 1.0 / 13.0 + z * p;
    let p = 1.0 / 11.0 + z * p;
    let p = 1.0 / 9.0 + z * p;
    let p = 1.0 / 7.0 + z * p;
    let p = 1.0 / 5.0 + z * p;
    let p = 1.0 / 3.0 + z * p;
    let two_over_ln2 = 2.0 * core::f64::consts::LOG2_E;
    e + s * two_over_ln2 * (1.0 + z * p)
}

/// `2^t` in f64 to about 2^-42 relative, for `t` clamped to `[-160, 130]` (beyond
/// which the f32 result is 0 or inf): `k = round(t)`, `2^(t-k) = e^u` by its Taylor
/// series to `u^10`, times `2^k`.
#[inline(always)]
fn exp2_f64(t: f64) -> f64 {
    let t = if t > 130.0 { 130.0 } else { t };
    let t = if t < -160.0 { -160.0 } else { t };
    let rt = t + ROUND_F64;
    let k = rt - ROUND_F64;
    let u = (t - k) * core::f64::consts::LN_2;
    // Horner's scheme, innermost term first: the same operations in the same order
    // as `1 + u (1 + u (1/2 + ... + u (1/9! + u / 10!)))` written nested (which
    // rustfmt takes minutes to lay out).
    let p = 1.0 / 3_628_800.0;
    let p = 1.0 / 362_880.0 + u * p;
    let p = 1.0 / 40320.0 + u * p;
    let p = 1.0 / 5040.0 + u * p;
    let p = 1.0 / 720.0 + u * p;
    let p = 1.0 / 120.0 + u * p;
    let p = 1.0 / 24.0 + u * p;
    let p = 1.0 / 6.0 + u * p;
    let p = 1.0 / 2.0 + u * p;
    let p = 1.0 + u * p;
    let p = 1.0 + u * p;
    let ki = (rt.to_bits() as i64).wrapping_sub(ROUND_F64.to_bits() as i64);
    p * f64::from_bits((ki.wrapping_add(1023) as u64) << 52)
}

/// `x^y` as IEEE `pow` (f64 `powf` rounded to f32), within 1 ulp: `2^(y log2|x|)`
/// in f64, rounded once, with the sign of odd integer powers of negative bases and
/// the special cases: `x^0 = 1^y = 1` (even for NaN), `(-1)^±inf = 1`, NaN for a
/// finite negative base with a non-integer exponent, NaN in → NaN out otherwise,
/// and the zeros and infinities `2^(±inf)` gives.
#[inline(always)]
pub fn pow_f32(x: f32, y: f32) -> f32 {
    let ax = f64::from(x.abs());
    let l = log2_f64(ax);
    let l = if ax == 0.0 { f64::NEG_INFINITY } else { l };
    let l = if ax == f64::INFINITY { ax } else { l };
    let mag = exp2_f64(f64::from(y) * l) as f32;
    // Is y an integer, and an odd one? Below 2^23 the rounding constant 2^23 rounds
    // it and leaves its parity in the last bit; from 2^23 every f32 is an integer,
    // its parity in the last bit below 2^24, even above.
    let ay = y.abs();
    let below = ay < 8_388_608.0;
    let shifted = ay + 8_388_608.0;
    let integer = if below {
        shifted - 8_388_608.0 == ay
    } else {
        true
    };
    let last_bit = if below {
        shifted.to_bits()
    } else {
        ay.to_bits()
    } & 1;
    let odd = integer & (last_bit == 1) & (ay < 16_777_216.0);
    let r = if odd {
        f32::from_bits(mag.to_bits() | (x.to_bits() & SIGN_F32))
    } else {
        mag
    };
    let r = if (x < 0.0) & x.is_finite() & !integer {
        f32::NAN
    } else {
        r
    };
    let r = if x.is_nan() | y.is_nan() { f32::NAN } else { r };
    let r = if (x == -1.0) & y.is_infinite() {
        1.0
    } else {
        r
    };
    if (y == 0.0) | (x == 1.0) { 1.0 } else { r }
}
