//! Accuracy of the vectorizable f32 math generated kernels call
//! (`uop_runtime::vmath`): the distance in ulps to the f64
//! reference the interpreter computes, rounded to f32, over the whole f32 range.
//!
//! The CI tests sweep every 4093rd bit pattern of the 2^32 (about a million
//! inputs per function, both signs, every exponent, NaNs and infinities among
//! them); `exhaustive_*` (ignored, `cargo test --profile fast-build -p uop-runtime --test
//! vmath_ulp -- --ignored`) try every f32. `pow` has two arguments: it is tested on
//! a dense sample of pairs and on its special cases.
//!
//! Every function is checked in both instances: `fma = false` (separate multiplies
//! and adds, the baseline copies of kernels) and `fma = true` (fused
//! multiply-adds, the copies compiled for AVX2+FMA and AVX-512, and Cranelift on
//! an FMA host). Here `mul_add` is a library call, which computes the same fused
//! result as the instruction, only slower.

use uop_runtime::vmath;

/// The distance between two f32 in representable steps; NaN matches NaN only, and
/// zeros must agree in sign.
fn ulps(got: f32, want: f32) -> u64 {
    if got.is_nan() || want.is_nan() {
        return if got.is_nan() && want.is_nan() {
            0
        } else {
            u64::MAX
        };
    }
    if got == 0.0 && want == 0.0 {
        return if got.to_bits() == want.to_bits() {
            0
        } else {
            u64::MAX
        };
    }
    let ordered = |v: f32| {
        let b = i64::from(v.to_bits() & 0x7fff_ffff);
        if v.is_sign_negative() { -b } else { b }
    };
    ordered(got).abs_diff(ordered(want))
}

/// One function under test: its name, the vmath version (taking `fma`), the
/// reference and the bound (max ulps, for both instances) over the domain
/// `|x| < limit`.
struct Case {
    name: &'static str,
    f: fn(bool, f32) -> f32,
    /// `f(true, _)` compiled with the `fma` target feature (see [`fused_in_hardware`]).
    fused: unsafe fn(f32) -> f32,
    reference: fn(f64) -> f64,
    max_ulps: u64,
    limit: f32,
}

const CASES: &[Case] = &[
    Case {
        name: "exp",
        f: vmath::exp_f32,
        fused: fused::exp,
        reference: f64::exp,
        max_ulps: 1,
        limit: f32::INFINITY,
    },
    Case {
        name: "ln",
        f: vmath::ln_f32,
        fused: fused::ln,
        reference: f64::ln,
        max_ulps: 1,
        limit: f32::INFINITY,
    },
    Case {
        name: "tanh",
        f: vmath::tanh_f32,
        fused: fused::tanh,
        reference: f64::tanh,
        max_ulps: 1,
        limit: f32::INFINITY,
    },
    Case {
        name: "sigmoid",
        f: vmath::sigmoid_f32,
        fused: fused::sigmoid,
        reference: |x| 1.0 / (1.0 + (-x).exp()),
        max_ulps: 2,
        limit: f32::INFINITY,
    },
    Case {
        name: "erf",
        f: vmath::erf_f32,
        fused: fused::erf,
        reference: libm::erf,
        max_ulps: 1,
        limit: f32::INFINITY,
    },
    Case {
        name: "sin",
        f: vmath::sin_f32,
        fused: fused::sin,
        reference: f64::sin,
        max_ulps: 1,
        limit: 1_073_741_824.0,
    },
    Case {
        name: "cos",
        f: vmath::cos_f32,
        fused: fused::cos,
        reference: f64::cos,
        max_ulps: 1,
        limit: 1_073_741_824.0,
    },
];

/// The `fma = true` instances compiled for CPUs with FMA, where `mul_add` is one
/// instruction instead of a library call: the same results, ten times faster,
/// which the exhaustive sweeps need. Call them only if [`fused_in_hardware`].
mod fused {
    macro_rules! fused {
        ($($name:ident: $f:ident),* $(,)?) => {$(
            #[cfg_attr(target_arch = "x86_64", target_feature(enable = "fma"))]
            pub unsafe fn $name(x: f32) -> f32 {
                uop_runtime::vmath::$f(true, x)
            }
        )*};
    }
    fused!(exp: exp_f32, ln: ln_f32, tanh: tanh_f32, sigmoid: sigmoid_f32, erf: erf_f32, sin: sin_f32, cos: cos_f32);
}

/// Whether this CPU runs [`fused`]'s functions.
fn fused_in_hardware() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("fma");
    #[allow(unreachable_code)]
    true
}

/// The worst input of `case`'s instance `fma` among `bits`: (ulps, input).
fn worst(case: &Case, fma: bool, bits: impl Iterator<Item = u32>) -> (u64, f32) {
    let hardware = fma && fused_in_hardware();
    let mut worst = (0, 0.0);
    for b in bits {
        let x = f32::from_bits(b);
        if x.abs() >= case.limit {
            continue;
        }
        let got = if hardware {
            // SAFETY: the CPU has FMA.
            unsafe { (case.fused)(x) }
        } else {
            (case.f)(fma, x)
        };
        let e = ulps(got, (case.reference)(f64::from(x)) as f32);
        if e > worst.0 {
            worst = (e, x);
        }
    }
    worst
}

fn check(case: &Case, fma: bool, (e, x): (u64, f32)) {
    println!("{:8} (fma: {fma:5}) max {e} ulp at {x:e}", case.name);
    assert!(
        e <= case.max_ulps,
        "{}({x:e} = {:#010x}, fma: {fma}) is {} ulps off ({}, want {})",
        case.name,
        x.to_bits(),
        e,
        (case.f)(fma, x),
        (case.reference)(f64::from(x)) as f32
    );
}

/// Every `stride`th bit pattern, starting at `offset`.
fn strided(stride: u64, offset: u64) -> impl Iterator<Item = u32> {
    (offset..1 << 32).step_by(stride as usize).map(|b| b as u32)
}

#[test]
fn every_function_is_within_its_stated_ulp_bound_on_a_dense_sweep_of_all_f32() {
    for case in CASES {
        for fma in [false, true] {
            check(case, fma, worst(case, fma, strided(4093, 0)));
        }
    }
}

#[test]
fn the_neighbourhood_of_one_and_zero_is_within_bounds() {
    // Where polynomials meet range reductions and where results are tiny.
    let around = |v: f32| (v.to_bits() - 20_000..v.to_bits() + 20_000).step_by(7);
    for case in CASES {
        for fma in [false, true] {
            for v in [1.0f32, 0.625, 0.5, 1e-3, 88.0, 3.9, 0.785, 1.57, 100.0] {
                check(case, fma, worst(case, fma, around(v).chain(around(-v))));
            }
        }
    }
}

/// Calls `case`'s instance `fma` on every f32 (split over the available threads)
/// and checks the bound.
fn exhaustive(case: &Case, fma: bool) {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    let results: Vec<(u64, f32)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| s.spawn(move || worst(case, fma, strided(threads, t))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("sweep thread"))
            .collect()
    });
    let w = results
        .into_iter()
        .fold((0, 0.0), |a, b| if b.0 > a.0 { b } else { a });
    check(case, fma, w);
}

/// One ignored test per function and instance, so each can be run alone.
macro_rules! exhaustive_tests {
    ($($test:ident: $name:literal, $fma:literal),* $(,)?) => {$(
        #[test]
        #[ignore = "exhaustive: every f32, minutes in release"]
        fn $test() {
            let case = CASES.iter().find(|c| c.name == $name).expect("a case of CASES");
            exhaustive(case, $fma);
        }
    )*};
}

exhaustive_tests!(
    exhaustive_exp: "exp", false,
    exhaustive_ln: "ln", false,
    exhaustive_tanh: "tanh", false,
    exhaustive_sigmoid: "sigmoid", false,
    exhaustive_erf: "erf", false,
    exhaustive_sin: "sin", false,
    exhaustive_cos: "cos", false,
    exhaustive_exp_fma: "exp", true,
    exhaustive_ln_fma: "ln", true,
    exhaustive_tanh_fma: "tanh", true,
    exhaustive_sigmoid_fma: "sigmoid", true,
    exhaustive_erf_fma: "erf", true,
    exhaustive_sin_fma: "sin", true,
    exhaustive_cos_fma: "cos", true,
);

#[test]
fn special_values_match_the_reference() {
    let specials = [
        0.0f32,
        -0.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        -f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::MAX,
        f32::MIN,
        88.72284,
        88.72285,
        -87.33655,
        -103.97,
        -104.0,
        -89.5,
    ];
    for case in CASES {
        for (fma, &x) in [false, true]
            .into_iter()
            .flat_map(|f| specials.iter().map(move |x| (f, x)))
        {
            if x.abs() >= case.limit {
                continue;
            }
            let want = (case.reference)(f64::from(x)) as f32;
            let got = (case.f)(fma, x);
            assert!(
                ulps(got, want) <= case.max_ulps,
                "{}({x:e}, fma: {fma}): got {got:e}, want {want:e}",
                case.name
            );
        }
    }
}

#[test]
fn sin_and_cos_stay_finite_and_bounded_beyond_their_accurate_range() {
    for b in strided(4093, 0) {
        let x = f32::from_bits(b);
        if x.is_finite() && x.abs() >= 1_073_741_824.0 {
            let both = [false, true].map(|fma| [vmath::sin_f32(fma, x), vmath::cos_f32(fma, x)]);
            for v in both.into_iter().flatten() {
                assert!(v.abs() <= 1.0, "sin/cos({x:e}) = {v}");
            }
        }
    }
}

/// A deterministic stream of u32 (xorshift), for sampling pairs.
fn stream(mut s: u64) -> impl FnMut() -> u32 {
    move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 32) as u32
    }
}

fn check_pow(pairs: impl Iterator<Item = (f32, f32)>) -> u64 {
    let mut max = 0;
    for (x, y) in pairs {
        let want = f64::from(x).powf(f64::from(y)) as f32;
        let got = vmath::pow_f32(x, y);
        let e = ulps(got, want);
        assert!(
            e <= POW_MAX_ULPS,
            "pow({x:e}, {y:e}) = {got:e}, want {want:e} ({e} ulps)"
        );
        max = max.max(e);
    }
    max
}

/// pow's bound, for all f32 `x` and `y`.
const POW_MAX_ULPS: u64 = 1;

#[test]
fn pow_is_within_its_bound_on_random_pairs_of_all_f32() {
    let mut next = stream(0x9e37_79b9_7f4a_7c15);
    let bits = check_pow((0..1_000_000).map(|_| (f32::from_bits(next()), f32::from_bits(next()))));
    // Exponents where results are finite and nonzero, bases of either sign and
    // integer exponents for negative bases.
    let mut next = stream(0x2545_f491_4f6c_dd1d);
    let moderate = check_pow((0..1_000_000).map(|_| {
        let x = f32::from_bits(next());
        let y = (next() as f32 / u32::MAX as f32 - 0.5) * 80.0;
        (x, y)
    }));
    let mut next = stream(0x1234_5678_9abc_def1);
    let integers = check_pow((0..1_000_000).map(|_| {
        let x = (next() as f32 / u32::MAX as f32 - 0.5) * 20.0;
        let y = (next() % 81) as f32 - 40.0;
        (x, y)
    }));
    println!(
        "pow max ulps: random bits {bits}, moderate exponents {moderate}, integer exponents {integers}"
    );
}

#[test]
fn pow_special_cases_are_those_of_ieee_pow() {
    let values = [
        0.0f32,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -0.5,
        2.0,
        -2.0,
        3.0,
        -3.0,
        2.5,
        -2.5,
        f32::INFINITY,
        f32::NEG_INFINITY,
        f32::NAN,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        f32::MAX,
        -f32::MAX,
        8_388_607.0,
        8_388_609.0,
        16_777_216.0,
        -16_777_215.0,
        1e30,
        -1e30,
    ];
    check_pow(
        values
            .iter()
            .flat_map(|&x| values.iter().map(move |&y| (x, y))),
    );
}
