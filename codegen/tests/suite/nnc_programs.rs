//! NNC's three micro-op test programs — matmul, and convolution written once with
//! `$params` and once with the dims of both inputs — run by the reference
//! interpreter and checked against naive loops written out in the test.
//!
//! The data are small integers, so every sum is exact in f32 and results compare
//! with `==`.

use std::collections::HashMap;

use uop_codegen::interp::{self, RunError};
use uop_codegen::tensor::{Tensor, strides};
use uop_codegen::testing::programs;
use uop_codegen::uop::{BindError, DType, Program};

const F32: DType = DType::F32;

/// Deterministic small-integer data in [-5, 5] (`mult` and `offset` vary it per tensor).
fn ints(shape: &[usize], mult: usize, offset: f64) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n).map(|k| ((k * mult) % 11) as f64 - offset).collect();
    Tensor::new(F32, shape.to_vec(), data).expect("data matches the shape")
}

/// Element of `t` at a multi-index, computed from the strides (independent of `Tensor::get`).
fn at(t: &Tensor, index: &[usize]) -> f64 {
    let st = strides(&t.shape);
    t.data[index.iter().zip(&st).map(|(i, s)| i * s).sum::<usize>()]
}

// ---------------------------------------------------------------- matmul

fn matmul_program() -> Program {
    programs::nnc_matmul().unwrap()
}

#[test]
fn matmul_matches_the_triple_loop() {
    let a = ints(&[4, 2], 3, 5.0);
    let w = ints(&[2, 3], 7, 4.0);
    let out = interp::run(&matmul_program(), &[a.clone(), w.clone()], &HashMap::new()).unwrap();
    let c = &out[0];
    assert_eq!(c.shape, vec![4, 1, 3]);

    let mut want = vec![0.0; 4 * 3];
    for m in 0..4 {
        for n in 0..3 {
            for k in 0..2 {
                want[m * 3 + n] += at(&a, &[m, k]) * at(&w, &[k, n]);
            }
        }
    }
    assert_eq!(c.data, want);
}

#[test]
fn matmul_by_hand() {
    // [[1, 2], [3, 4]] · [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
    let a = Tensor::new(F32, vec![2, 2], vec![1., 2., 3., 4.]).unwrap();
    let w = Tensor::new(F32, vec![2, 2], vec![5., 6., 7., 8.]).unwrap();
    let out = interp::run(&matmul_program(), &[a, w], &HashMap::new()).unwrap();
    assert_eq!(out[0].shape, vec![2, 1, 2]);
    assert_eq!(out[0].data, vec![19., 22., 43., 50.]);
}

// ---------------------------------------------------------------- convolution

/// Valid NHWC × OHWI convolution, output laid out like the uop program's:
/// `[N, H - KH + 1, W - KW + 1, 1, 1, 1, O]`.
fn conv_reference(x: &Tensor, w: &Tensor) -> (Vec<usize>, Vec<f64>) {
    let (n, h, wd, c) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let (o, kh, kw) = (w.shape[0], w.shape[1], w.shape[2]);
    let (oh, ow) = (h - kh + 1, wd - kw + 1);
    let mut out = Vec::with_capacity(n * oh * ow * o);
    for b in 0..n {
        for y in 0..oh {
            for xo in 0..ow {
                for f in 0..o {
                    let mut acc = 0.0;
                    for dy in 0..kh {
                        for dx in 0..kw {
                            for ch in 0..c {
                                acc += at(x, &[b, y + dy, xo + dx, ch]) * at(w, &[f, dy, dx, ch]);
                            }
                        }
                    }
                    out.push(acc);
                }
            }
        }
    }
    (vec![n, oh, ow, 1, 1, 1, o], out)
}

/// The convolution with the kernel size and output channels as `$kh $kw $kc`.
fn conv_with_params() -> Program {
    programs::nnc_conv_params().unwrap()
}

/// The same convolution with every size taken from the inputs, asserting that the
/// channel counts agree.
fn conv_with_input_dims() -> Program {
    programs::nnc_conv_two_sources().unwrap()
}

fn conv_inputs() -> (Tensor, Tensor) {
    (ints(&[1, 4, 4, 5], 7, 5.0), ints(&[2, 3, 3, 5], 5, 4.0))
}

#[test]
fn convolution_with_params_matches_the_six_loops() {
    let (x, w) = conv_inputs();
    let ps: HashMap<String, i64> = [("kh", 3), ("kw", 3), ("kc", 2)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let out = interp::run(&conv_with_params(), &[x.clone(), w.clone()], &ps).unwrap();
    let (shape, want) = conv_reference(&x, &w);
    assert_eq!(shape, vec![1, 2, 2, 1, 1, 1, 2]);
    assert_eq!(out[0].shape, shape);
    assert_eq!(out[0].data, want);
    assert!(
        want.iter().any(|v| *v != 0.0),
        "the data must exercise the sum"
    );
}

#[test]
fn convolution_from_input_dims_matches_the_six_loops() {
    let (x, w) = conv_inputs();
    let program = conv_with_input_dims();
    assert!(program.params.is_empty());
    let out = interp::run(&program, &[x.clone(), w.clone()], &HashMap::new()).unwrap();
    let (shape, want) = conv_reference(&x, &w);
    assert_eq!(out[0].shape, shape);
    assert_eq!(out[0].data, want);
}

#[test]
fn both_convolutions_agree_on_another_size() {
    // 2 images of 5x6 with 3 channels, 4 filters of 2x3.
    let x = ints(&[2, 5, 6, 3], 3, 5.0);
    let w = ints(&[4, 2, 3, 3], 2, 5.0);
    let ps: HashMap<String, i64> = [("kh", 2), ("kw", 3), ("kc", 4)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    let by_params = interp::run(&conv_with_params(), &[x.clone(), w.clone()], &ps).unwrap();
    let by_dims = interp::run(&conv_with_input_dims(), &[x.clone(), w.clone()], &ps).unwrap();
    let (shape, want) = conv_reference(&x, &w);
    assert_eq!(shape, vec![2, 4, 4, 1, 1, 1, 4]);
    assert_eq!(by_params[0].shape, shape);
    assert_eq!(by_params[0].data, want);
    assert_eq!(by_dims[0], by_params[0]);
}

#[test]
fn convolution_with_mismatching_channels_fails_the_assertion() {
    let x = ints(&[1, 4, 4, 5], 7, 5.0);
    let w = ints(&[2, 3, 3, 4], 5, 4.0);
    let err = interp::run(&conv_with_input_dims(), &[x, w], &HashMap::new()).unwrap_err();
    assert_eq!(
        err,
        RunError::Bind(BindError::Assertion {
            left: "C".into(),
            right: "CW".into(),
            left_value: 5,
            right_value: 4,
        })
    );
    assert_eq!(err.to_string(), "size assertion `C == CW` fails: 5 != 4");
}
