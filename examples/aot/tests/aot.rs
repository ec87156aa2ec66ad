//! The linked kernels against the reference interpreter on random shapes and data,
//! and the size errors they return instead of touching memory.

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::parse_program;
use uop_codegen::uop::{DType, Program};
use uop_example_aot::{Array, Error, ffi, layernorm, matmul, pad, softmax};

fn program(src: &str) -> Program {
    parse_program(src, &uop_ops::registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn random(rng: &mut StdRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.random_range(-2.0f32..2.0)).collect()
}

/// What the interpreter computes for `src` on f32 `inputs` (data, shape) and params.
fn reference(src: &str, inputs: &[(&[f32], Vec<usize>)], params: &[(&str, i64)]) -> Array {
    let tensors: Vec<Tensor> = inputs
        .iter()
        .map(|(data, shape)| {
            let data = data.iter().map(|&v| f64::from(v)).collect();
            Tensor::new(DType::F32, shape.clone(), data).expect("consistent")
        })
        .collect();
    let params: HashMap<String, i64> = params.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    let mut out = interp::run(&program(src), &tensors, &params).expect("the interpreter runs");
    let y = out.remove(0);
    Array {
        shape: y.shape,
        data: y.data.iter().map(|&v| v as f32).collect(),
    }
}

/// The same shape, and elements within 1e-5 relative: the object file calls the C
/// library's `exp` (not the interpreter's) and vectorized sums add in another order.
fn assert_close(got: &Array, want: &Array, what: &str) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    for (k, (g, w)) in got.data.iter().zip(&want.data).enumerate() {
        assert!(
            (g - w).abs() <= 1e-5 * (1.0 + w.abs()),
            "{what}: element {k}: {g} vs {w}"
        );
    }
}

const MATMUL: &str = include_str!("../../../prebuilt/kernels/matmul.uop");
const SOFTMAX: &str = include_str!("../../../prebuilt/kernels/softmax.uop");
const LAYERNORM: &str = include_str!("../../../prebuilt/kernels/layernorm.uop");
const PAD: &str = include_str!("../programs/pad.uop");

#[test]
fn matmul_matches_the_interpreter() {
    let mut rng = StdRng::seed_from_u64(1);
    for case in 0..12 {
        let (m, k, n) = (
            rng.random_range(1..9),
            rng.random_range(1..40),
            rng.random_range(1..13),
        );
        let (a, b) = (random(&mut rng, m * k), random(&mut rng, k * n));
        let got = matmul(&a, [m, k], &b, [k, n]).expect("runs");
        let want = reference(MATMUL, &[(&a, vec![m, k]), (&b, vec![k, n])], &[]);
        assert_close(&got, &want, &format!("matmul case {case} ({m}x{k}x{n})"));
    }
}

#[test]
fn softmax_matches_the_interpreter() {
    let mut rng = StdRng::seed_from_u64(2);
    for case in 0..12 {
        let (b, n) = (rng.random_range(1..6), rng.random_range(1..70));
        let x = random(&mut rng, b * n);
        let got = softmax(&x, [b, n]).expect("runs");
        let want = reference(SOFTMAX, &[(&x, vec![b, n])], &[]);
        assert_close(&got, &want, &format!("softmax case {case} ({b}x{n})"));
    }
}

#[test]
fn layernorm_matches_the_interpreter() {
    let mut rng = StdRng::seed_from_u64(3);
    for case in 0..12 {
        let (b, n) = (rng.random_range(1..6), rng.random_range(1..70));
        let x = random(&mut rng, b * n);
        let (gamma, beta) = (random(&mut rng, n), random(&mut rng, n));
        let got = layernorm(&x, [b, n], &gamma, &beta).expect("runs");
        let inputs = [
            (&x[..], vec![b, n]),
            (&gamma[..], vec![n]),
            (&beta[..], vec![n]),
        ];
        let want = reference(LAYERNORM, &inputs, &[]);
        assert_close(&got, &want, &format!("layernorm case {case} ({b}x{n})"));
    }
}

#[test]
fn pad_passes_its_param_and_matches_the_interpreter() {
    let mut rng = StdRng::seed_from_u64(4);
    for case in 0..12 {
        let n = rng.random_range(0..20);
        let p = rng.random_range(-(n as i64) / 2..5);
        let x = random(&mut rng, n);
        let got = pad(&x, p).expect("runs");
        let want = reference(PAD, &[(&x, vec![n])], &[("p", p)]);
        assert_close(&got, &want, &format!("pad case {case} (n {n}, p {p})"));
    }
    let padded = pad(&[1.0, 2.0], 1).expect("runs");
    assert_eq!(padded.data, vec![0.0, 1.0, 2.0, 0.0]);
}

#[test]
fn disagreeing_sizes_return_the_input_shape_code() {
    // a[2, 3] · b[4, 5]: the two inputs give the named dimension K different sizes.
    let err = matmul(&[0.0; 6], [2, 3], &[0.0; 20], [4, 5]).unwrap_err();
    assert_eq!(err, Error::Kernel(ffi::UOP_ERR_INPUT_SHAPE));
    // gamma must be as long as the rows of x.
    let err = layernorm(&[0.0; 6], [2, 3], &[1.0; 4], &[0.0; 3]).unwrap_err();
    assert_eq!(err, Error::Kernel(ffi::UOP_ERR_INPUT_SHAPE));
}

#[test]
fn a_negative_computed_size_returns_its_code() {
    // 3 + 2 * -2 = -1 elements.
    let err = pad(&[1.0, 2.0, 3.0], -2).unwrap_err();
    assert_eq!(err, Error::Kernel(ffi::UOP_ERR_NEGATIVE_SIZE));
    assert_eq!(pad(&[1.0, 2.0, 3.0], -1).expect("crops").data, vec![2.0]);
}

#[test]
fn the_raw_functions_refuse_bad_sizes_having_written_nothing() {
    let mut out_dims = [7i64; ffi::MATMUL_OUTPUT_RANKS[0]];
    let negative = [2i64, -3, -3, 4];
    // SAFETY: the arrays have the lengths the declarations' rank constants give.
    let code = unsafe { ffi::matmul_shapes(negative.as_ptr(), [].as_ptr(), out_dims.as_mut_ptr()) };
    assert_eq!(code, ffi::UOP_ERR_INPUT_SHAPE);
    assert_eq!(out_dims, [7, 7], "nothing written");

    // The kernel checks output_dims against the shapes it computes itself.
    let (a, b, mut c) = ([1.0f32; 6], [1.0f32; 12], [5.0f32; 8]);
    let dims = [2i64, 3, 3, 4];
    let wrong_out = [2i64, 5];
    let inputs = [a.as_ptr().cast(), b.as_ptr().cast()];
    let outputs = [c.as_mut_ptr().cast()];
    // SAFETY: as above; the buffers hold what `dims` say (c is never written).
    let code = unsafe {
        ffi::matmul(
            inputs.as_ptr(),
            dims.as_ptr(),
            [].as_ptr(),
            outputs.as_ptr(),
            wrong_out.as_ptr(),
        )
    };
    assert_eq!(code, ffi::UOP_ERR_OUTPUT_SHAPE);
    assert_eq!(c, [5.0; 8], "nothing written");
}

#[test]
fn the_safe_wrappers_check_lengths_before_calling() {
    let err = softmax(&[0.0; 5], [2, 3]).unwrap_err();
    assert_eq!(
        err,
        Error::Length {
            input: 0,
            expected: 6,
            found: 5
        }
    );
    assert_eq!(
        err.to_string(),
        "input 0 has 6 elements by its shape, but its slice has 5"
    );
}

#[test]
fn the_generated_ranks_describe_the_programs() {
    assert_eq!(ffi::MATMUL_INPUT_RANKS, [2, 2]);
    assert_eq!(ffi::LAYERNORM_INPUT_RANKS, [2, 1, 1]);
    assert_eq!((ffi::PAD_NUM_PARAMS, ffi::PAD_OUTPUT_RANKS), (1, [1]));
}
