//! The Cranelift JIT against the reference interpreter on random programs, shapes
//! and data (DESIGN.md §9).
//!
//! - Scalar code (`vectorize: false`) must match the interpreter bit for bit on every
//!   program that does not use `exp`, `log`, `tanh`, `sigmoid` or `erf` in f32: the
//!   kernels round like the interpreter and call the same math functions. Those five
//!   are inline polynomials in f32 programs (the Rust backend's `vmath`, within 1 ulp
//!   of the interpreter's correctly rounded f64 result, 2 for `sigmoid`); programs
//!   using them must agree within [`MATH_TOLERANCE`] (1e-6, about 8 f32 ulps) of the
//!   larger of 1 and the value, which leaves room for those ulps growing through
//!   later operations (10,000 random programs pass).
//! - Vectorized code may reorder sums; it is compared on data quantized to quarters
//!   (so most sums are exact in any order) within a small tolerance, which also
//!   covers the inline math.
//!
//! `UOP_CRANELIFT_FUZZ_CASES=N` runs N programs per test instead of the default.

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::{Case, GenConfig, random_case, random_program};
use uop_codegen::text::print_program;
use uop_codegen::uop::{DType, Program};
use uop_cranelift::uses_inline_math;
use uop_cranelift::{self as cranelift, Input, Kernel, Options, Output, RunError};

fn cases() -> u64 {
    std::env::var("UOP_CRANELIFT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150)
}

fn config(seed: u64) -> GenConfig {
    GenConfig {
        dtype: if seed % 3 == 2 {
            DType::F64
        } else {
            DType::F32
        },
        ..GenConfig::default()
    }
}

/// How far f32 programs using the inline math may be from the interpreter
/// (relative to the larger of 1 and the value).
const MATH_TOLERANCE: f64 = 1e-6;

/// Same bits, or both NaN; within [`MATH_TOLERANCE`] when `math` is set.
fn scalar_agree(math: bool) -> impl Fn(f64, f64) -> bool {
    move |a, b| {
        same_bits(a, b) || (math && (a - b).abs() <= MATH_TOLERANCE * a.abs().max(b.abs()).max(1.0))
    }
}

fn same_bits(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    same_bits(a, b) || (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

/// Runs one program both ways; `Err` describes the first difference.
fn check(
    program: &Program,
    case: &Case,
    opts: &Options,
    agree: impl Fn(f64, f64) -> bool,
) -> Result<(), String> {
    let expected = interp::run(program, &case.inputs, &case.params);
    let optimized = cranelift::optimized(program).map_err(|e| e.to_string())?;
    let kernel = cranelift::compile(&optimized, opts).map_err(|e| format!("compile: {e}"))?;
    let got = run_on_garbage(&kernel, case);
    let (expected, got) = match (expected, got) {
        (Ok(e), Ok(g)) => (e, g),
        (Err(_), Err(_)) => return Ok(()),
        (e, g) => return Err(format!("interpreter: {e:?}\ncranelift: {g:?}")),
    };
    for (k, (e, g)) in expected.iter().zip(&got).enumerate() {
        if e.shape != g.shape {
            return Err(format!("output {k}: shape {:?} vs {:?}", e.shape, g.shape));
        }
        if let Some(at) = (0..e.data.len()).find(|&i| !agree(e.data[i], g.data[i])) {
            return Err(format!(
                "output {k} element {at}: interpreter {} vs cranelift {}\nloop IR:\n{optimized}",
                e.data[at], g.data[at]
            ));
        }
    }
    Ok(())
}

/// Runs through the slice API with outputs filled with NaN first, so an output the
/// kernel wrongly assumes it overwrites shows up as a difference.
fn run_on_garbage(kernel: &Kernel, case: &Case) -> Result<Vec<Tensor>, RunError> {
    let shapes: Vec<&[usize]> = case.inputs.iter().map(|t| t.shape.as_slice()).collect();
    let out_shapes = kernel.output_shapes(&shapes, &case.params)?;
    let f32s: Vec<Vec<f32>> = case
        .inputs
        .iter()
        .map(|t| t.data.iter().map(|&v| v as f32).collect())
        .collect();
    let i32s: Vec<Vec<i32>> = case
        .inputs
        .iter()
        .map(|t| t.data.iter().map(|&v| v as i32).collect())
        .collect();
    let inputs: Vec<(Input<'_>, &[usize])> = case
        .inputs
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let slice = match t.dtype {
                DType::F32 => Input::F32(&f32s[k]),
                DType::F64 => Input::F64(&t.data),
                DType::I32 => Input::I32(&i32s[k]),
            };
            (slice, t.shape.as_slice())
        })
        .collect();
    let dtype = kernel.program().dtype;
    let mut out32: Vec<Vec<f32>> = out_shapes
        .iter()
        .map(|s| vec![f32::NAN; s.iter().product()])
        .collect();
    let mut out64: Vec<Vec<f64>> = out_shapes
        .iter()
        .map(|s| vec![f64::NAN; s.iter().product()])
        .collect();
    let mut outputs: Vec<Output<'_>> = if dtype == DType::F32 {
        out32.iter_mut().map(|v| Output::F32(v)).collect()
    } else {
        out64.iter_mut().map(|v| Output::F64(v)).collect()
    };
    kernel.run_slices(&inputs, &case.params, &mut outputs)?;
    drop(outputs);
    Ok(out_shapes
        .into_iter()
        .enumerate()
        .map(|(k, shape)| Tensor {
            dtype,
            shape,
            data: if dtype == DType::F32 {
                out32[k].iter().map(|&v| f64::from(v)).collect()
            } else {
                out64[k].clone()
            },
        })
        .collect())
}

fn report(seed: u64, program: &Program, case: &Case, error: &str) -> String {
    format!(
        "seed {seed}: {error}\nprogram:\n{}\nparams: {:?}\nshapes: {:?}",
        print_program(program),
        case.params,
        case.inputs.iter().map(|t| &t.shape).collect::<Vec<_>>()
    )
}

#[test]
fn scalar_kernels_match_the_interpreter_bit_for_bit_but_for_inline_math() {
    // The single-pass register allocator here, the backtracking one below: the
    // random programs cover both.
    let scalar = Options {
        vectorize: false,
        fast_compile: true,
    };
    for seed in 0..cases() {
        let program = random_program(seed, &config(seed));
        for data_seed in 0..2 {
            let case = random_case(&program, seed * 7 + data_seed).expect("a case");
            let agree = scalar_agree(uses_inline_math(&program));
            if let Err(e) = check(&program, &case, &scalar, agree) {
                panic!("{}", report(seed, &program, &case, &e));
            }
        }
    }
}

/// Rounds float inputs to multiples of 1/4, so sums of them are exact in any order.
fn quantized(case: &Case) -> Case {
    let inputs = case
        .inputs
        .iter()
        .map(|t| match t.dtype {
            DType::I32 => t.clone(),
            _ => Tensor {
                data: t.data.iter().map(|v| (v * 4.0).round() / 4.0).collect(),
                ..t.clone()
            },
        })
        .collect();
    Case {
        inputs,
        params: case.params.clone(),
    }
}

#[test]
fn vectorized_kernels_match_the_interpreter_within_reassociation() {
    let vector = Options {
        vectorize: true,
        fast_compile: false,
    };
    for seed in 0..cases() {
        let cfg = config(seed + 1000);
        let program = random_program(seed + 1000, &cfg);
        let tol = if cfg.dtype == DType::F64 { 1e-10 } else { 1e-4 };
        let case = quantized(&random_case(&program, seed).expect("a case"));
        if let Err(e) = check(&program, &case, &vector, |a, b| close(a, b, tol)) {
            panic!("{}", report(seed + 1000, &program, &case, &e));
        }
    }
}
