//! The Cranelift backend's inline f32 math against the Rust backend's `vmath`
//! functions, which it ports: for `y = f(x)` over a dense sweep of f32 bit patterns
//! (every 2039th of the 2^32, plus every pattern in windows around the overflow and
//! underflow edges, the subnormals, the branch points and the specials NaN, ±inf,
//! ±0), the JIT kernel's output must have the same bits as `vmath::f_f32(fma, x)`,
//! `fma` being whether this host has fused multiply-add (Cranelift fuses then), with
//! any NaN matching any NaN (payloads are not part of the semantics).
//!
//! Each function is checked twice: scalar code (`vectorize: false`, the path of
//! strided and rank-0 programs and of vector loops' tails) and the `f32x4` loop. The
//! vector loop must really compute the function in vector registers: its CLIF calls
//! no runtime function.

use std::collections::HashMap;

use uop_codegen::backend::rust::vmath;
use uop_codegen::uop::{Builder, DType, Program, UnaryOp};
use uop_cranelift::{self as cranelift, Input, Options, Output};

/// Inputs: a strided sweep of all bit patterns, dense windows around the points
/// where the algorithms change behaviour, and the special values.
fn sweep() -> Vec<f32> {
    let mut xs: Vec<f32> = (0..=u32::MAX / 2039)
        .map(|k| f32::from_bits(k * 2039))
        .collect();
    let window = |centre: f32, xs: &mut Vec<f32>| {
        for c in [centre, -centre] {
            let b = c.to_bits();
            for d in 0..4096u32 {
                xs.push(f32::from_bits(b.wrapping_add(d)));
                xs.push(f32::from_bits(b.wrapping_sub(d)));
            }
        }
    };
    for edge in [
        88.722_84,         // exp overflows
        89.0,              // exp's upper clamp
        -87.336_55,        // exp becomes subnormal
        -103.972_08,       // exp underflows to 0
        -104.0,            // exp's lower clamp
        1.0,               // log near 0, erf's branch
        f32::MIN_POSITIVE, // log's subnormal scaling
        0.625,             // tanh's branch
        4.0,               // erf's clamp
        9.0,               // tanh and erf round to 1
        f32::MAX,
    ] {
        window(edge, &mut xs);
    }
    // The smallest subnormals and the zeros.
    xs.extend((0..4096u32).map(f32::from_bits));
    xs.extend((0..4096u32).map(|b| f32::from_bits(b | 0x8000_0000)));
    xs.extend([
        f32::NAN,
        -f32::NAN,
        f32::from_bits(0x7f80_0001),
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
    ]);
    // A length that leaves a tail for the scalar loop after the vector one.
    if xs.len().is_multiple_of(4) {
        xs.push(0.5);
    }
    xs
}

fn unary_program(op: UnaryOp, dtype: DType) -> Program {
    let mut b = Builder::new(dtype);
    let x = b.input("x", dtype, &["N"]).expect("input");
    let y = b.unary(op, x).expect("unary");
    b.combine(&[x], &[y]).expect("program")
}

/// The kernel's `f(xs)`.
fn jit(op: UnaryOp, xs: &[f32], opts: &Options) -> Vec<f32> {
    let program = cranelift::optimized(&unary_program(op, DType::F32)).expect("optimizes");
    let kernel = cranelift::compile_uncached(&program, opts).expect("compiles");
    let mut ys = vec![0.0f32; xs.len()];
    let shape = [xs.len()];
    kernel
        .run_slices(
            &[(Input::F32(xs), &shape)],
            &HashMap::new(),
            &mut [Output::F32(&mut ys)],
        )
        .expect("runs");
    ys
}

fn same(a: f32, b: f32) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Whether Cranelift's host ISA has FMA (what `cranelift-native` detects).
fn host_fma() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("fma");
    #[cfg(target_arch = "aarch64")]
    return true;
    #[allow(unreachable_code)]
    false
}

fn matches_vmath(op: UnaryOp, f: fn(bool, f32) -> f32) {
    let fma = host_fma();
    let reference = |x| f(fma, x);
    let xs = sweep();
    for vectorize in [false, true] {
        let opts = Options {
            vectorize,
            ..Options::default()
        };
        let ys = jit(op, &xs, &opts);
        let wrong: Vec<(f32, f32, f32)> = xs
            .iter()
            .zip(&ys)
            .filter(|&(&x, &y)| !same(y, reference(x)))
            .map(|(&x, &y)| (x, y, reference(x)))
            .take(5)
            .collect();
        assert!(
            wrong.is_empty(),
            "{op:?} (vectorize: {vectorize}, fma: {fma}): (x, cranelift, vmath) {wrong:?}"
        );
    }
}

#[test]
fn exp_is_bit_identical_to_vmath() {
    matches_vmath(UnaryOp::Exp, vmath::exp_f32);
}

#[test]
fn log_is_bit_identical_to_vmath() {
    matches_vmath(UnaryOp::Log, vmath::ln_f32);
}

#[test]
fn tanh_is_bit_identical_to_vmath() {
    matches_vmath(UnaryOp::Tanh, vmath::tanh_f32);
}

#[test]
fn sigmoid_is_bit_identical_to_vmath() {
    matches_vmath(UnaryOp::Sigmoid, vmath::sigmoid_f32);
}

#[test]
fn erf_is_bit_identical_to_vmath() {
    matches_vmath(UnaryOp::Erf, vmath::erf_f32);
}

/// The CLIF of `y = f(x)`.
fn clif(op: UnaryOp, dtype: DType, vectorize: bool) -> String {
    let program = cranelift::optimized(&unary_program(op, dtype)).expect("optimizes");
    let opts = Options {
        vectorize,
        ..Options::default()
    };
    cranelift::emit_clif(&program, "k", &opts).expect("emits")
}

#[test]
fn f32_math_is_inline_and_stays_vectorized() {
    for op in [
        UnaryOp::Exp,
        UnaryOp::Log,
        UnaryOp::Tanh,
        UnaryOp::Sigmoid,
        UnaryOp::Erf,
    ] {
        let text = clif(op, DType::F32, true);
        assert!(
            !text.contains("call fn"),
            "{op:?} calls a function:\n{text}"
        );
        assert!(
            !text.contains("extractlane"),
            "{op:?} runs lane by lane:\n{text}"
        );
        assert!(text.contains("f32x4"), "{op:?} is not vectorized:\n{text}");
    }
}

#[test]
fn f64_programs_still_call_the_runtime() {
    let text = clif(UnaryOp::Exp, DType::F64, false);
    assert!(text.contains("call fn"), "{text}");
}
