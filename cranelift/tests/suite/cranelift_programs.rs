//! The Cranelift JIT on hand-written micro-op programs and the example programs:
//! results against the interpreter, shape and type errors, run-time failures of
//! index arithmetic, the kernel cache, and thread safety.

use std::collections::HashMap;
use std::path::Path;

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::testing::{GenConfig, random_case_with};
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};
use uop_cranelift::uses_inline_math;
use uop_cranelift::{self as cranelift, Input, Kernel, Options, Output, RunError, Status};

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

const SCALAR: Options = Options {
    vectorize: false,
    fast_compile: false,
};
const VECTOR: Options = Options {
    vectorize: true,
    fast_compile: false,
};

/// Runs `program` on random data through the interpreter and both JIT variants:
/// scalar code must agree bit for bit (f32 programs using the inline math within
/// 1e-6 of the larger of 1 and the value, about 8 ulps), vector code within `1e-5`
/// relative.
fn agrees_with_interpreter(name: &str, program: &Program, seeds: u64) {
    let math = uses_inline_math(program);
    let cfg = GenConfig {
        max_dim: 9,
        max_elements: 4096,
        ..GenConfig::default()
    };
    for seed in 0..seeds {
        let case = random_case_with(program, seed, &cfg).unwrap_or_else(|e| panic!("{name}: {e}"));
        let expected = interp::run(program, &case.inputs, &case.params)
            .unwrap_or_else(|e| panic!("{name}: interpreter: {e}"));
        for opts in [SCALAR, VECTOR] {
            let kernel = cranelift::compile_program(program, &opts)
                .unwrap_or_else(|e| panic!("{name}: compile: {e}"));
            let got = kernel
                .run(&case.inputs, &case.params)
                .unwrap_or_else(|e| panic!("{name}: run: {e}"));
            for (e, g) in expected.iter().zip(&got) {
                assert_eq!(e.shape, g.shape, "{name}");
                for (a, b) in e.data.iter().zip(&g.data) {
                    let exact = a == b || (a.is_nan() && b.is_nan());
                    let near = (a - b).abs() <= 1e-5 * (1.0 + a.abs());
                    let math_near = (a - b).abs() <= 1e-6 * a.abs().max(b.abs()).max(1.0);
                    assert!(
                        exact || (opts.vectorize && near) || (math && math_near),
                        "{name} ({opts:?}, seed {seed}): interpreter {a} vs cranelift {b}\n{}",
                        kernel.program()
                    );
                }
            }
        }
    }
}

/// One program per micro op (and its variants), each small enough to read.
const MICRO_PROGRAMS: &[(&str, &str)] = &[
    (
        "unary ops",
        "input x: f32[N]\na = neg(abs(exp(x)))\nb = add(log(abs(x)), sqrt(abs(x)))\n\
         c = add(rsqrt(abs(x)), recip(x))\nd = add(tanh(x), sigmoid(x))\n\
         e = add(sin(x), cos(x))\nf = add(erf(x), floor(x))\ng = add(ceil(x), sign(x))\n\
         output a\noutput b\noutput c\noutput d\noutput e\noutput f\noutput g\n",
    ),
    (
        "binary ops",
        "input x: f32[N]\ninput y: f32[N]\na = add(sub(x, y), mul(x, y))\n\
         b = div(x, y)\nc = pow(abs(x), y)\nd = maximum(x, minimum(y, 0.5))\n\
         e = add(add(eq(x, y), ne(x, 1.0)), add(lt(x, y), le(x, y)))\n\
         f = add(gt(x, y), ge(x, y))\noutput a\noutput b\noutput c\noutput d\noutput e\noutput f\n",
    ),
    (
        "where and scalars",
        "param p\ninput x: f32[N]\nc = gt(x, 0.0)\ny = where(c, x, mul(x, $p))\noutput y\n",
    ),
    (
        "reductions",
        "input x: f64[M, N]\ns = reduce_sum(x, [1])\np = reduce_prod(x, [0])\n\
         hi = reduce_max(x, [0, 1])\nlo = reduce_min(x, [1])\nm = reduce_mean(x, [0])\n\
         am = reduce_argmax(x, [1])\nan = reduce_argmin(x, [0])\n\
         output s\noutput p\noutput hi\noutput lo\noutput m\noutput am\noutput an\n",
    ),
    (
        "padding reads the fill",
        "input x: f32[N]\ny = reindex(x, [N + 2], [i0 - 1], fill=-1.5)\noutput y\n",
    ),
    (
        "scatter with collisions and drops",
        "input x: f32[N]\ny = reindex_reduce(x, [3], [i0 % 4], op=\"max\")\n\
         z = reindex_reduce(x, [2], [i0 / 2], op=\"add\")\noutput y\noutput z\n",
    ),
    (
        "select with an index tensor",
        "input x: f32[N, K]\ninput idx: i32[N, 2]\ny = select(x, idx, axis=1)\noutput y\n",
    ),
    (
        "iota and a one-hot mask",
        "input x: f32[N]\ni = iota([N, 4], 1)\nxx = reindex(x, [N, 4], [i0])\n\
         y = eq(i, floor(abs(xx)))\noutput y\n",
    ),
    (
        "casts between i32 and the float type",
        "input x: f32[N]\ninput k: i32[N]\na = cast(mul(x, 1000.5), \"i32\")\n\
         b = add(cast(a, \"float\"), cast(k, \"float\"))\nc = cast(div(x, 0.0), \"i32\")\n\
         output a\noutput b\noutput c\n",
    ),
    (
        "flip, stride and upsample",
        "input x: f32[N]\na = reindex(x, [N], [N - 1 - i0])\nb = reindex(x, [(N + 1) / 2], [2 * i0])\n\
         c = reindex(x, [2 * N], [i0 / 2])\noutput a\noutput b\noutput c\n",
    ),
    (
        "row broadcast and vectorized reductions",
        "input x: f32[B, N]\ns = reduce_sum(x, [1])\nm = reduce_max(x, [1])\n\
         y = sub(x, reindex(m, [B, N], [i0, 0]))\nz = mul(y, reindex(s, [B, N], [i0, 0]))\n\
         output z\n",
    ),
];

#[test]
fn every_micro_op_matches_the_interpreter() {
    for (name, src) in MICRO_PROGRAMS {
        agrees_with_interpreter(name, &parse(src), 6);
    }
}

fn example_programs() -> Vec<(String, Program)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/programs");
    let mut out = Vec::new();
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/programs exists")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "uop"))
        .collect();
    paths.sort();
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable");
        let name = path.display().to_string();
        match parse_program(&src, &Registry::new()) {
            Ok(p) => out.push((name, p)),
            // Programs calling macro ops are covered by the root crate's tests.
            Err(e) => eprintln!("skipping {name}: {e}"),
        }
    }
    out
}

#[test]
fn example_programs_match_the_interpreter() {
    let examples = example_programs();
    assert!(examples.len() >= 5, "the examples are found");
    for (name, program) in &examples {
        agrees_with_interpreter(name, program, 4);
    }
}

fn matrix(rows: usize, cols: usize) -> Tensor {
    let data = (0..rows * cols).map(|k| k as f64 * 0.25 - 1.0).collect();
    Tensor::new(DType::F32, vec![rows, cols], data).expect("consistent")
}

#[test]
fn shapes_types_and_lengths_are_checked_before_running() {
    let program = parse(
        "input a: f32[M, K]\ninput b: f32[K, N]\n\
         c = reindex(reduce_sum(mul(reindex(a, [M, K, N], [i0, i1]), reindex(b, [M, K, N], [i1, i2])), [1]), [M, N], [i0, 0, i1])\noutput c\n",
    );
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let none = HashMap::new();
    let err = kernel
        .run(&[matrix(2, 3), matrix(4, 2)], &none)
        .unwrap_err();
    assert!(matches!(err, RunError::Bind(_)), "{err}");
    assert!(err.to_string().contains('K'), "{err}");

    let wrong_type = Tensor::zeros(DType::F64, vec![3, 2]);
    let err = kernel.run(&[matrix(2, 3), wrong_type], &none).unwrap_err();
    assert!(matches!(err, RunError::InputType { .. }), "{err}");

    let a = vec![0f32; 6];
    let b = vec![0f32; 5];
    let mut c = vec![0f32; 4];
    let err = kernel
        .run_slices(
            &[(Input::F32(&a), &[2, 3]), (Input::F32(&b), &[3, 2])],
            &none,
            &mut [Output::F32(&mut c)],
        )
        .unwrap_err();
    assert!(
        matches!(err, RunError::Length { what: "input", .. }),
        "{err}"
    );

    let b = vec![1f32; 6];
    let mut short = vec![0f32; 3];
    let err = kernel
        .run_slices(
            &[(Input::F32(&a), &[2, 3]), (Input::F32(&b), &[3, 2])],
            &none,
            &mut [Output::F32(&mut short)],
        )
        .unwrap_err();
    assert!(
        matches!(err, RunError::Length { what: "output", .. }),
        "{err}"
    );
    let err = kernel
        .run_slices(
            &[(Input::F32(&a), &[2, 3]), (Input::F32(&b), &[3, 2])],
            &none,
            &mut [],
        )
        .unwrap_err();
    assert!(matches!(err, RunError::OutputCount { .. }), "{err}");

    // The fast path writes into uninitialized-looking outputs.
    let a: Vec<f32> = (0..6).map(|k| k as f32).collect();
    let mut c = vec![f32::NAN; 4];
    kernel
        .run_slices(
            &[(Input::F32(&a), &[2, 3]), (Input::F32(&b), &[3, 2])],
            &none,
            &mut [Output::F32(&mut c)],
        )
        .expect("runs");
    assert_eq!(c, vec![3.0, 3.0, 12.0, 12.0]);
}

#[test]
fn index_overflow_and_division_by_zero_are_errors_not_wrapping() {
    let program = parse("param p\ninput x: f32[N]\ny = reindex(x, [N], [i0 * $p])\noutput y\n");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let x = Tensor::new(DType::F32, vec![3], vec![1.0, 2.0, 3.0]).expect("consistent");
    let params = HashMap::from([("p".to_string(), i64::MAX)]);
    assert!(interp::run(&program, std::slice::from_ref(&x), &params).is_err());
    let err = kernel.run(std::slice::from_ref(&x), &params).unwrap_err();
    assert_eq!(err, RunError::Kernel(Status::IndexArithmetic));

    let program = parse("param p\ninput x: f32[N]\ny = reindex(x, [N], [i0 / $p])\noutput y\n");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let params = HashMap::from([("p".to_string(), 0)]);
    assert!(interp::run(&program, std::slice::from_ref(&x), &params).is_err());
    let err = kernel.run(std::slice::from_ref(&x), &params).unwrap_err();
    assert_eq!(err, RunError::Kernel(Status::IndexArithmetic));

    let params = HashMap::from([("p".to_string(), -2)]);
    let expected = interp::run(&program, std::slice::from_ref(&x), &params).expect("runs");
    assert_eq!(kernel.run(&[x], &params).expect("runs"), expected);
}

#[test]
fn identical_programs_compile_once() {
    let src = "input x: f32[N]\ny = exp(neg(x))\noutput y\n";
    let first = cranelift::compile_program(&parse(src), &Options::default()).expect("compiles");
    let again = cranelift::compile_program(&parse(src), &Options::default()).expect("compiles");
    assert!(first.shares_code_with(&again));
    let scalar = cranelift::compile_program(&parse(src), &SCALAR).expect("compiles");
    assert!(
        !first.shares_code_with(&scalar),
        "options are part of the key"
    );
    let fast = Options {
        fast_compile: true,
        ..Options::default()
    };
    let single_pass = cranelift::compile_program(&parse(src), &fast).expect("compiles");
    assert!(
        !first.shares_code_with(&single_pass),
        "the register allocator is part of the key"
    );
    let x = Tensor::new(DType::F32, vec![5], vec![-2.0, -0.5, 0.0, 1.0, 3.0]).expect("consistent");
    assert_eq!(
        single_pass.run(std::slice::from_ref(&x), &HashMap::new()),
        first.run(&[x], &HashMap::new()),
        "either allocator computes the same"
    );
    let uncached =
        cranelift::compile_uncached(first.program(), &Options::default()).expect("compiles");
    assert!(!first.shares_code_with(&uncached));
}

#[test]
fn kernels_are_send_and_sync_and_outlive_the_cache() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Kernel>();
    let program = parse("input x: f64[N]\ny = mul(x, 2.0)\noutput y\n");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    cranelift::clear_cache();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let kernel = kernel.clone();
            std::thread::spawn(move || {
                let x = Tensor::new(DType::F64, vec![5], vec![t as f64; 5]).expect("consistent");
                kernel.run(&[x], &HashMap::new()).expect("runs")[0]
                    .data
                    .clone()
            })
        })
        .collect();
    for (t, h) in threads.into_iter().enumerate() {
        assert_eq!(h.join().expect("no panic"), vec![2.0 * t as f64; 5]);
    }
}

/// Issue 17, class 1: a 2^40 × 2^40 output has 2^80 elements, a count that wraps to
/// 0 in unchecked arithmetic; the kernel must refuse it before its code runs (it
/// once wrote into a 0-length buffer and crashed).
#[test]
fn an_output_whose_element_count_overflows_is_refused_before_the_kernel_runs() {
    let program = parse(
        "input a: f32[M, K]\ny = reindex(a, [1099511627776, 1099511627776], [0, 0])\noutput y\n",
    );
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let a = Tensor::new(DType::F32, vec![2, 3], vec![1.0; 6]).expect("consistent");
    // Binding the signature refuses it, naming the tensor and its size expression.
    let err = kernel.run(&[a], &HashMap::new()).unwrap_err().to_string();
    assert!(
        err.contains("`y`") && err.contains("[1099511627776, 1099511627776]"),
        "{err}"
    );
    let err = kernel
        .output_shapes(&[&[2, 3]], &HashMap::new())
        .unwrap_err();
    assert!(err.to_string().contains("`y`"), "{err}");
    // The fast path: an empty slice cannot pass for 2^80 elements either.
    let err = kernel
        .run_slices(
            &[(Input::F32(&[1.0; 6]), &[2, 3])],
            &HashMap::new(),
            &mut [Output::F32(&mut [])],
        )
        .unwrap_err();
    assert!(err.to_string().contains("`y`"), "{err}");
}

/// An input whose byte count overflows (a 2^62-element f32 slice cannot exist, so
/// its shape is a lie) is refused by the same binding.
#[test]
fn an_input_shape_whose_bytes_overflow_is_refused() {
    let kernel = cranelift::compile_program(
        &parse("input x: f32[N]\ny = neg(x)\noutput y\n"),
        &Options::default(),
    )
    .expect("compiles");
    let err = kernel
        .output_shapes(&[&[1 << 62]], &HashMap::new())
        .unwrap_err();
    assert!(
        matches!(err, RunError::TooLarge { what: "input", ref tensor, .. } if tensor == "x"),
        "{err}"
    );
}

/// An i32 output (index tensors reversed) runs through the JIT too.
#[test]
fn i32_outputs_have_a_slice_type() {
    let program = parse("input idx: i32[N]\ny = reindex(idx, [N], [N - 1 - i0])\noutput y\n");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let x = Tensor::new(DType::I32, vec![4], vec![1.0, 5.0, 2.0, 7.0]).expect("consistent");
    let expected = interp::run(&program, std::slice::from_ref(&x), &HashMap::new()).expect("runs");
    let found = kernel.run(&[x], &HashMap::new()).expect("runs");
    assert_eq!(found, expected);
}

/// `src` JIT-compiled with the default options.
fn jit(src: &str) -> Kernel {
    cranelift::compile_program(&parse(src), &Options::default()).expect("compiles")
}

/// A one-element f32 input holding `v`, and the param `p`.
fn one_element_and_p(v: f64, p: i64) -> (Tensor, HashMap<String, i64>) {
    let x = Tensor::new(DType::F32, vec![1], vec![v]).expect("consistent");
    (x, HashMap::from([("p".to_string(), p)]))
}

/// `Kernel::run` accounts its outputs against the memory limit before allocating
/// them: 10^12 output elements (12 TB with the f64 tensor returned) are refused with
/// a message naming the output, where allocating them would abort the process.
#[test]
fn run_refuses_outputs_beyond_the_memory_limit_before_allocating() {
    let kernel = jit("param p\ninput x: f32[N]\ny = reindex(x, [$p, $p], [0])\noutput y\n");
    let (x, params) = one_element_and_p(1.0, 1_000_000);
    let err = kernel.run(&[x], &params).unwrap_err();
    assert!(matches!(err, RunError::Memory(_)), "{err:?}");
    let message = err.to_string();
    assert!(
        message.contains("this needs 12.0 TB") && message.contains("`y`"),
        "{message}"
    );
}

/// A temporary the machine code would allocate counts against the limit too, on
/// every entry: `big` (p × p f32, 4 TB) is refused by name before the kernel runs,
/// also when the caller brings its own (small) output buffers.
#[test]
fn temporaries_are_accounted_before_the_kernel_runs() {
    let src = "param p\ninput x: f32[N]\nbig = exp(reindex(x, [$p, $p], [0]))\n\
               c = reduce_sum(big, [0])\nr = reduce_sum(big, [1])\noutput c\noutput r\n";
    let kernel = jit(src);
    assert!(kernel.program().to_string().contains("temp   big"));
    let p = 1_000_000;
    let (x, params) = one_element_and_p(0.0, p as i64);
    let err = kernel.run(&[x], &params).unwrap_err();
    assert!(matches!(err, RunError::Memory(_)), "{err:?}");
    assert!(err.to_string().contains("`big`, 4.0 TB"), "{err}");
    let (mut c, mut r) = (vec![0.0f32; p], vec![0.0f32; p]);
    let err = kernel
        .run_slices(
            &[(Input::F32(&[0.0]), &[1])],
            &params,
            &mut [Output::F32(&mut c), Output::F32(&mut r)],
        )
        .unwrap_err();
    assert!(matches!(err, RunError::Memory(_)), "{err:?}");
    assert!(err.to_string().contains("`big`, 4.0 TB"), "{err}");
    // Within the limit, the same kernel runs and agrees with the interpreter.
    let (x, small) = one_element_and_p(0.0, 3);
    let expected = interp::run(&parse(src), std::slice::from_ref(&x), &small).expect("runs");
    assert_eq!(kernel.run(&[x], &small).expect("runs"), expected);
}

/// An iteration count that overflows is refused by `Kernel::run` before anything
/// runs, as the interpreters refuse it (2^62 × 2^62 iterations of a sum into one
/// element would otherwise run "forever").
#[test]
fn run_refuses_iteration_counts_that_overflow() {
    let kernel = jit(
        "param p\ninput x: f32[N]\ns = reduce_sum(reindex(x, [$p, $p], [0]), [0, 1])\noutput s\n",
    );
    let (x, params) = one_element_and_p(1.0, 1 << 62);
    let err = kernel.run(&[x], &params).unwrap_err();
    assert!(err.to_string().contains("iterations"), "{err}");
}
