//! The small scalar functions kernels call inside their loops: index arithmetic
//! (floor division and modulo, row-major offsets), NaN-propagating extremes, sign,
//! multiply-add, cache-line phases, lane rotation, and the f64 error function.
//! All but `erf_f64` are `#[inline(always)]`, so that every CPU-specific copy of a
//! kernel's loops compiles them for its own target.

/// Floor division (rounds towards negative infinity), as in index expressions.
#[inline(always)]
pub fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// The modulo matching floor division: it has the sign of `b`.
#[inline(always)]
pub fn floor_mod(a: i64, b: i64) -> i64 {
    let r = a % b;
    if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    }
}

/// [`floor_div`] of sizes: `None` when `b` is 0 or the quotient overflows
/// (`i64::MIN / -1`).
#[inline(always)]
pub fn checked_floor_div(a: i64, b: i64) -> Option<i64> {
    if b == 0 || (a == i64::MIN && b == -1) {
        return None;
    }
    Some(floor_div(a, b))
}

/// [`floor_mod`] of sizes: `None` when `b` is 0 (or is -1 with `a` `i64::MIN`,
/// as for [`checked_floor_div`]).
#[inline(always)]
pub fn checked_floor_mod(a: i64, b: i64) -> Option<i64> {
    if b == 0 || (a == i64::MIN && b == -1) {
        return None;
    }
    Some(floor_mod(a, b))
}

/// The row-major offset of `index` in a tensor of shape `shape`, or `None` when a
/// subscript is out of range (a read then gives the fill value and a write is
/// skipped).
#[inline(always)]
pub fn offset<const R: usize>(index: [i64; R], shape: [i64; R]) -> Option<usize> {
    let mut at = 0;
    for (&i, &n) in index.iter().zip(&shape) {
        if i < 0 || i >= n {
            return None;
        }
        at = at * n + i;
    }
    Some(at as usize)
}

/// The larger of `a` and `b`; NaN if either is NaN.
#[inline(always)]
pub fn maximum_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.max(b)
    }
}

/// The larger of `a` and `b`; NaN if either is NaN.
#[inline(always)]
pub fn maximum_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// The smaller of `a` and `b`; NaN if either is NaN.
#[inline(always)]
pub fn minimum_f32(a: f32, b: f32) -> f32 {
    if a.is_nan() || b.is_nan() {
        f32::NAN
    } else {
        a.min(b)
    }
}

/// The smaller of `a` and `b`; NaN if either is NaN.
#[inline(always)]
pub fn minimum_f64(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

/// -1, 0 or 1 by the sign of `x` (0 for both zeros); NaN stays NaN.
#[inline(always)]
pub fn sign_f32(x: f32) -> f32 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// -1, 0 or 1 by the sign of `x` (0 for both zeros); NaN stays NaN.
#[inline(always)]
pub fn sign_f64(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x > 0.0 {
        1.0
    } else if x < 0.0 {
        -1.0
    } else {
        0.0
    }
}

/// `a * b + c`: one fused multiply-add, rounded once, where the code is compiled
/// for FMA (`fma`, a constant: `FMA`); two operations otherwise (never a library
/// call).
#[inline(always)]
pub fn mul_add_f32(fma: bool, a: f32, b: f32, c: f32) -> f32 {
    if fma { a.mul_add(b, c) } else { a * b + c }
}

/// `a * b + c`, as [`mul_add_f32`].
#[inline(always)]
pub fn mul_add_f64(fma: bool, a: f64, b: f64, c: f64) -> f64 {
    if fma { a.mul_add(b, c) } else { a * b + c }
}

/// How many elements from element `at` of the buffer at `base` to the next
/// 64-byte cache line: where vector accesses stop straddling lines, and where a
/// thread's share of a unit-stride write may start.
#[inline(always)]
pub fn line_phase<T>(base: *const T, at: usize) -> i64 {
    let size = core::mem::size_of::<T>().max(1);
    let addr = base.wrapping_add(at) as usize;
    ((64 - addr % 64) % 64 / size) as i64
}

/// `lanes` rotated right by `by` (less than `N`): element `l` moves to
/// `(l + by) % N`.
#[inline(always)]
pub fn rotated_right<T: Copy, const N: usize>(lanes: [T; N], by: usize) -> [T; N] {
    let twice = [lanes, lanes];
    let mut out = lanes;
    out.copy_from_slice(&twice.as_flattened()[N - by..2 * N - by]);
    out
}

/// The error function, to within a few ulps: a series with positive terms below
/// |x| = 3, the continued fraction of erfc above, ±1 from 6 on.
pub fn erf_f64(x: f64) -> f64 {
    let a = x.abs();
    if a.is_nan() {
        return x;
    }
    let r = if a < 3.0 {
        // erf(a) = 2/sqrt(pi) exp(-a^2) sum_n (2a^2)^n a / (1 3 5 ... (2n+1))
        let (mut term, mut sum, mut n) = (a, a, 0.0);
        while term > sum * 1e-17 {
            n += 1.0;
            term *= 2.0 * a * a / (2.0 * n + 1.0);
            sum += term;
        }
        sum * (-a * a).exp() * core::f64::consts::FRAC_2_SQRT_PI
    } else if a < 6.0 {
        // erfc(a) = exp(-a^2)/sqrt(pi) / (a + (1/2)/(a + 1/(a + (3/2)/(a + ...))))
        let mut f = a;
        for k in (1..=60).rev() {
            f = a + f64::from(k) / 2.0 / f;
        }
        1.0 - (-a * a).exp() * core::f64::consts::FRAC_2_SQRT_PI / 2.0 / f
    } else {
        1.0
    };
    r.copysign(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floor_division_rounds_down_and_the_modulo_has_the_divisor_sign() {
        for a in -20..20 {
            for b in [-7, -3, -1, 1, 2, 5] {
                let (q, r) = (floor_div(a, b), floor_mod(a, b));
                assert_eq!(q, (a as f64 / b as f64).floor() as i64, "{a} / {b}");
                assert_eq!(q * b + r, a);
                assert!(r == 0 || (r < 0) == (b < 0), "{a} % {b} = {r}");
            }
        }
    }

    #[test]
    fn checked_division_of_sizes_refuses_zero_and_the_one_overflow() {
        assert_eq!(checked_floor_div(-7, 2), Some(-4));
        assert_eq!(checked_floor_mod(-7, 2), Some(1));
        assert_eq!(checked_floor_div(7, 0), None);
        assert_eq!(checked_floor_mod(7, 0), None);
        assert_eq!(checked_floor_div(i64::MIN, -1), None);
        assert_eq!(checked_floor_mod(i64::MIN, -1), None);
        assert_eq!(checked_floor_div(i64::MIN, 1), Some(i64::MIN));
    }

    #[test]
    fn offsets_are_row_major_and_none_outside() {
        assert_eq!(offset([1, 2], [3, 4]), Some(6));
        assert_eq!(offset([3, 0], [3, 4]), None);
        assert_eq!(offset([0, -1], [3, 4]), None);
        assert_eq!(offset::<0>([], []), Some(0));
    }

    #[test]
    fn extremes_and_sign_propagate_nan() {
        assert!(maximum_f32(f32::NAN, 1.0).is_nan());
        assert!(minimum_f64(1.0, f64::NAN).is_nan());
        assert_eq!(maximum_f64(-1.0, 2.0), 2.0);
        assert_eq!(minimum_f32(-1.0, 2.0), -1.0);
        assert_eq!(sign_f32(-3.0), -1.0);
        assert_eq!(sign_f64(0.0), 0.0);
        assert_eq!(sign_f64(-0.0), 0.0);
        assert!(sign_f32(f32::NAN).is_nan());
        assert_eq!(mul_add_f32(false, 2.0, 3.0, 1.0), 7.0);
        assert_eq!(mul_add_f64(true, 2.0, 3.0, 1.0), 7.0);
    }

    #[test]
    fn line_phases_and_rotations() {
        let base = 64 as *const f32;
        assert_eq!(line_phase(base, 0), 0);
        assert_eq!(line_phase(base, 1), 15);
        assert_eq!(line_phase(base, 16), 0);
        assert_eq!(rotated_right([0, 1, 2, 3], 1), [3, 0, 1, 2]);
        assert_eq!(rotated_right([0, 1, 2, 3], 0), [0, 1, 2, 3]);
    }

    #[test]
    #[cfg_attr(miri, ignore = "Miri perturbs `exp` by design")]
    fn erf_is_odd_bounded_and_close_to_known_values() {
        // erf(1), erf(0.5), erf(3.5) to 17 digits.
        for (x, want) in [
            (1.0, 0.842_700_792_949_714_9),
            (0.5, 0.520_499_877_813_046_5),
            (3.5, 0.999_999_256_901_627_7),
        ] {
            assert!((erf_f64(x) - want).abs() <= 4.0 * f64::EPSILON, "{x}");
            assert_eq!(erf_f64(-x), -erf_f64(x));
        }
        assert_eq!(erf_f64(7.0), 1.0);
        assert!(erf_f64(f64::NAN).is_nan());
        assert_eq!(erf_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    }
}
