//! Parallel loops (the `parallel` schedule pass and the Rust backend's threads): a
//! prebuilt kernel gives the same bits on one and on two threads, and matches the
//! reference interpreter, at sizes large enough that two threads really start
//! (each must get at least 2^15 iterations).
//!
//! One test function on purpose: `set_threads` is global to the generated module,
//! and this binary runs nothing else that could change it in between.

use uop::codegen::build::with_float_type;
use uop::codegen::interp;
use uop::codegen::tensor::Tensor;
use uop::codegen::text::parse_program;
use uop::codegen::uop::DType;
use uop::kernels;

/// The interpreter's f32 outputs of `kernels/{name}.uop` on `inputs`.
fn reference(name: &str, inputs: &[Tensor]) -> Vec<f32> {
    let path = format!("{}/kernels/{name}.uop", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).expect("kernel program exists");
    let p = parse_program(&src, &uop::ops::registry()).expect("kernel program parses");
    let p = with_float_type(&p, DType::F32).expect("a float type");
    let out = interp::run(&p, inputs, &Default::default()).expect("the interpreter runs");
    out[0].data.iter().map(|&v| v as f32).collect()
}

fn data(shape: &[usize], seed: u64) -> (Tensor, Vec<f32>) {
    let t = Tensor::random(DType::F32, shape.to_vec(), seed);
    let v = t.data.iter().map(|&x| x as f32).collect();
    (t, v)
}

/// Runs `kernel` on one and on two threads and checks both against `want`.
fn check(name: &str, want: &[f32], tol: f32, kernel: impl Fn(&mut [f32])) {
    let mut results = Vec::new();
    for threads in [1, 2] {
        kernels::set_threads(threads);
        let mut y = vec![f32::NAN; want.len()];
        kernel(&mut y);
        for (i, (&g, &w)) in y.iter().zip(want).enumerate() {
            assert!(
                (g - w).abs() <= tol * w.abs().max(1.0),
                "{name} on {threads} threads: element {i} is {g}, the interpreter gives {w}"
            );
        }
        results.push(y);
    }
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(
        bits(&results[0]),
        bits(&results[1]),
        "{name}: one and two threads differ"
    );
}

#[test]
fn kernels_give_the_same_bits_on_one_and_two_threads() {
    let (xt, x) = data(&[300, 200], 1);
    check(
        "softmax",
        &reference("softmax", std::slice::from_ref(&xt)),
        1e-6,
        |y| {
            kernels::softmax_f32(&x, [300, 200], y).expect("valid shapes");
        },
    );
    let (gt, g) = data(&[200], 2);
    let (bt, b) = data(&[200], 3);
    let want = reference("layernorm", &[xt.clone(), gt, bt]);
    check("layernorm", &want, 1e-5, |y| {
        kernels::layernorm_f32(&x, [300, 200], &g, [200], &b, [200], y).expect("valid shapes");
    });
    drop(xt);
    let (tt, t) = data(&[400, 300], 8);
    check("transpose", &reference("transpose", &[tt]), 0.0, |y| {
        kernels::transpose_f32(&t, [400, 300], y).expect("valid shapes");
    });
    let (at, a) = data(&[97, 75], 4);
    let (bt, b) = data(&[75, 83], 5);
    check("matmul", &reference("matmul", &[at, bt]), 1e-5, |c| {
        kernels::matmul_f32(&a, [97, 75], &b, [75, 83], c).expect("valid shapes");
    });
    let (xt, x) = data(&[3, 8, 21, 19], 6);
    let (kt, k) = data(&[10, 8, 3, 3], 7);
    check("conv2d", &reference("conv2d", &[xt, kt]), 1e-5, |y| {
        kernels::conv2d_f32(&x, [3, 8, 21, 19], &k, [10, 8, 3, 3], y).expect("valid shapes");
    });
    kernels::set_threads(0);
}
