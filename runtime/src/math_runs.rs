//! Vector math over runs of lanes for code generated at run time (the Cranelift
//! JIT): `exp`, `log`, `tanh`, `sigmoid` and `erf` applied in place to a run of
//! f32 values, compiled once per CPU level so that the loop runs on that level's
//! vectors (16 lanes with AVX-512, 8 with AVX2, 4 baseline) with several
//! independent chains in flight. A JIT kernel computes a run of a math call's
//! arguments into a buffer, calls [`MathLevel::apply`] on it, and reads the results
//! back, instead of evaluating the polynomial four lanes at a time itself.
//!
//! The functions are the runtime's own [`vmath`](crate::vmath) functions with the
//! level's `FMA` (fused on AVX2 and AVX-512, not on the baseline level), so a
//! JIT kernel's values are the Rust backend's, bit for bit, on the same level.
//!
//! This module is not copied into standalone generated files: Rust kernels do not
//! call it.

use crate::vmath::{erf_f32, exp_f32, ln_f32, sigmoid_f32, tanh_f32};

/// The code of `exp` for [`MathLevel::apply`].
pub const EXP: i32 = 0;
/// The code of the natural logarithm.
pub const LOG: i32 = 1;
/// The code of `tanh`.
pub const TANH: i32 = 2;
/// The code of `sigmoid`, `1 / (1 + e^-x)`.
pub const SIGMOID: i32 = 3;
/// The code of `erf`.
pub const ERF: i32 = 4;

/// A CPU level's math over runs.
#[derive(Clone, Copy, Debug)]
pub struct MathLevel {
    /// The symbol a generated kernel links the function under.
    pub symbol: &'static str,
    /// Replaces each of the `n` values from `x` by the function coded `op` of it
    /// (a code other than the five leaves them unchanged).
    pub apply: unsafe extern "C" fn(op: i32, x: *mut f32, n: i64),
}

/// `f` of every value of `xs`, in place.
#[inline(always)]
fn map(xs: &mut [f32], f: impl Fn(f32) -> f32) {
    for x in xs {
        *x = f(*x);
    }
}

/// The function coded `op` with `FMA` of each of the `n` values from `x`.
///
/// # Safety
///
/// `x` points at `n` writable values (`n` ≤ 0: none).
#[inline(always)]
unsafe fn apply<const FMA: bool>(op: i32, x: *mut f32, n: i64) {
    let Ok(n) = usize::try_from(n) else {
        return;
    };
    if n == 0 {
        return;
    }
    // SAFETY: as the caller guarantees.
    let xs = unsafe { std::slice::from_raw_parts_mut(x, n) };
    match op {
        EXP => map(xs, |x| exp_f32(FMA, x)),
        LOG => map(xs, |x| ln_f32(FMA, x)),
        TANH => map(xs, |x| tanh_f32(FMA, x)),
        SIGMOID => map(xs, |x| sigmoid_f32(FMA, x)),
        ERF => map(xs, |x| erf_f32(FMA, x)),
        _ => {}
    }
}

/// The baseline level's math (no fused multiply-adds).
///
/// # Safety
///
/// `x` points at `n` writable values.
pub unsafe extern "C" fn uop_vmath_f32_baseline(op: i32, x: *mut f32, n: i64) {
    // SAFETY: as the caller guarantees.
    unsafe { apply::<false>(op, x, n) }
}

/// The AVX2 level's math.
///
/// # Safety
///
/// The CPU has AVX2 and FMA; `x` points at `n` writable values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub unsafe extern "C" fn uop_vmath_f32_avx2(op: i32, x: *mut f32, n: i64) {
    // SAFETY: as the caller guarantees.
    unsafe { apply::<true>(op, x, n) }
}

/// The AVX-512 level's math.
///
/// # Safety
///
/// The CPU has AVX-512 F and VL, AVX2 and FMA; `x` points at `n` writable values.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
pub unsafe extern "C" fn uop_vmath_f32_avx512(op: i32, x: *mut f32, n: i64) {
    // SAFETY: as the caller guarantees.
    unsafe { apply::<true>(op, x, n) }
}

/// The levels, narrowest first, indexed by [`crate::cpu_level`] (the caller must
/// not use a level above the CPU's).
#[cfg(target_arch = "x86_64")]
pub const LEVELS: [MathLevel; 3] = [
    MathLevel {
        symbol: "uop_vmath_f32_baseline",
        apply: uop_vmath_f32_baseline,
    },
    MathLevel {
        symbol: "uop_vmath_f32_avx2",
        apply: uop_vmath_f32_avx2,
    },
    MathLevel {
        symbol: "uop_vmath_f32_avx512",
        apply: uop_vmath_f32_avx512,
    },
];

/// The levels off x86-64: the baseline level only.
#[cfg(not(target_arch = "x86_64"))]
pub const LEVELS: [MathLevel; 1] = [MathLevel {
    symbol: "uop_vmath_f32_baseline",
    apply: uop_vmath_f32_baseline,
}];

/// The math of the level this process runs ([`crate::cpu_level`], capped by
/// `UOP_CPU`).
pub fn host_level() -> MathLevel {
    #[cfg(target_arch = "x86_64")]
    let level = usize::from(crate::cpu_level());
    #[cfg(not(target_arch = "x86_64"))]
    let level = 0;
    LEVELS[level.min(LEVELS.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_level_gives_the_vmath_functions_values_bit_for_bit() {
        let xs: Vec<f32> = (0..301).map(|i| (i as f32 - 150.0) * 0.173).collect();
        type Function = fn(bool, f32) -> f32;
        let fs: [(i32, Function); 5] = [
            (EXP, exp_f32),
            (LOG, ln_f32),
            (TANH, tanh_f32),
            (SIGMOID, sigmoid_f32),
            (ERF, erf_f32),
        ];
        #[cfg(target_arch = "x86_64")]
        let levels = usize::from(crate::cpu_level()) + 1;
        #[cfg(not(target_arch = "x86_64"))]
        let levels = 1;
        for (level, m) in LEVELS[..levels].iter().enumerate() {
            for (op, f) in fs {
                let mut run = xs.clone();
                // SAFETY: the level is one the CPU runs; `run` holds the values.
                unsafe { (m.apply)(op, run.as_mut_ptr(), run.len() as i64) };
                for (x, y) in xs.iter().zip(&run) {
                    let want = f(level > 0, *x);
                    assert!(
                        want.to_bits() == y.to_bits() || (want.is_nan() && y.is_nan()),
                        "{} op {op} of {x}: {y} against {want}",
                        m.symbol
                    );
                }
            }
        }
    }

    #[test]
    fn an_unknown_code_or_an_empty_run_changes_nothing() {
        let mut xs = [1.5_f32, -2.0];
        // SAFETY: `xs` holds two values; none is touched for n ≤ 0.
        unsafe {
            uop_vmath_f32_baseline(99, xs.as_mut_ptr(), 2);
            uop_vmath_f32_baseline(EXP, xs.as_mut_ptr(), 0);
            uop_vmath_f32_baseline(EXP, xs.as_mut_ptr(), -1);
        }
        assert_eq!(xs, [1.5, -2.0]);
    }
}
