//! The schedule in generated Rust kernels, against the reference interpreter at
//! sizes where it really runs: register tiles with moved-back edge tiles (rows and
//! columns that are not multiples of the tile), split reductions, cache blocks, and
//! two threads (each must get at least 2^15 iterations). A prebuilt kernel gives
//! the same bits on one and on two threads, and a sum the same bits wherever its
//! buffer starts. The same checks run again in child
//! processes under `UOP_CPU=avx2` and `UOP_CPU=baseline`, so every copy of the loops
//! (AVX-512, AVX2, plain x86-64) is tested on a machine that has all three.
//!
//! The checks are one test function on purpose: `set_threads` is global to the
//! generated module, and this binary runs nothing else that could change it in
//! between.

use std::process::Command;

use uop_codegen::build::with_float_type;
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::parse_program;
use uop_codegen::uop::DType;
use uop_kernels as kernels;

/// The interpreter's f32 outputs of `kernels/{name}.uop` on `inputs`.
fn reference(name: &str, inputs: &[Tensor]) -> Vec<f32> {
    let path = format!("{}/kernels/{name}.uop", env!("CARGO_MANIFEST_DIR"));
    let src = std::fs::read_to_string(&path).expect("kernel program exists");
    let p = parse_program(&src, &uop_ops::registry()).expect("kernel program parses");
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
fn kernels_match_the_interpreter_and_give_the_same_bits_on_one_and_two_threads() {
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
    // Whole vector tiles (8 × 8 AVX2, 16 × 16 AVX-512) with ragged edges both ways.
    let (tt, t) = data(&[333, 517], 13);
    check("transpose", &reference("transpose", &[tt]), 0.0, |y| {
        kernels::transpose_f32(&t, [333, 517], y).expect("valid shapes");
    });
    // f64 tiles (4 × 4, 8 × 8): y[c, r] = x[r, c], bit for bit.
    let (rows, cols) = (45, 37);
    let x64: Vec<f64> = (0..rows * cols).map(|i| i as f64 * 0.5 - 7.0).collect();
    for threads in [1, 2] {
        kernels::set_threads(threads);
        let mut y = vec![f64::NAN; rows * cols];
        kernels::transpose_f64(&x64, [rows, cols], &mut y).expect("valid shapes");
        for r in 0..rows {
            for c in 0..cols {
                assert_eq!(
                    y[c * rows + r],
                    x64[r * cols + c],
                    "transpose_f64 at ({r}, {c})"
                );
            }
        }
    }
    // Buffers starting anywhere against a vector boundary (the tiles start where
    // the source's and the destination's vectors are aligned, and the edge tiles
    // overlap their neighbours), and blocks between one and two tiles wide.
    kernels::set_threads(1);
    for (rows, cols) in [(67, 45), (20, 18), (9, 40)] {
        let x: Vec<f32> = (0..rows * cols).map(|i| i as f32 - 100.0).collect();
        for (x_at, y_at) in [(0, 0), (1, 0), (0, 3), (5, 11), (15, 15), (8, 1)] {
            let mut x_buf = vec![0.0f32; x_at + x.len()];
            x_buf[x_at..].copy_from_slice(&x);
            let mut y_buf = vec![f32::NAN; y_at + x.len()];
            kernels::transpose_f32(&x_buf[x_at..], [rows, cols], &mut y_buf[y_at..])
                .expect("valid shapes");
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(
                        y_buf[y_at + c * rows + r],
                        x[r * cols + c],
                        "transpose_f32 of {rows} × {cols} at offsets ({x_at}, {y_at}): ({r}, {c})"
                    );
                }
            }
        }
    }
    let (at, a) = data(&[97, 75], 4);
    let (bt, b) = data(&[75, 83], 5);
    check("matmul", &reference("matmul", &[at, bt]), 1e-5, |c| {
        kernels::matmul_f32(&a, [97, 75], &b, [75, 83], c).expect("valid shapes");
    });
    // Packed panels: a reduction longer than every target's `KC` (a partial last
    // block) and a column count that moves the last tile back.
    let (at, a) = data(&[13, 1100], 13);
    let (bt, b) = data(&[1100, 37], 14);
    check("matmul", &reference("matmul", &[at, bt]), 1e-4, |c| {
        kernels::matmul_f32(&a, [13, 1100], &b, [1100, 37], c).expect("valid shapes");
    });
    // Panels are lent from the scratch unzeroed, so every cell a tile reads must be
    // packed earlier in the same call: neither NaNs left in every block a kernel
    // may get nor the previous call's panel (other sizes, other data) show.
    let scratch = uop_runtime::Scratch::new();
    for key in 0..8 {
        for part in 0..4 {
            scratch
                .part_unzeroed::<f32>(key, part, 1 << 16)
                .fill(f32::NAN);
        }
    }
    // (AVX2: row blocks of 30 rows, their loads packed too, over reduction blocks
    // of 512; the last case runs three row blocks per thread on two.)
    let cases = [
        (97, 75, 83, 16),
        (13, 1100, 37, 18),
        (41, 600, 70, 20),
        (131, 700, 45, 22),
    ];
    for (m, kk, n, seed) in cases {
        let (at, a) = data(&[m, kk], seed);
        let (bt, b) = data(&[kk, n], seed + 1);
        check(
            "matmul on a reused scratch",
            &reference("matmul", &[at, bt]),
            1e-4,
            |c| {
                kernels::matmul_f32_with_scratch(&scratch, &a, [m, kk], &b, [kk, n], c)
                    .expect("valid shapes");
            },
        );
    }
    let (xt, x) = data(&[3, 8, 21, 19], 6);
    let (kt, k) = data(&[10, 8, 3, 3], 7);
    check("conv2d", &reference("conv2d", &[xt, kt]), 1e-5, |y| {
        kernels::conv2d_f32(&x, [3, 8, 21, 19], &k, [10, 8, 3, 3], y).expect("valid shapes");
    });
    // Wider than a tile's columns, and channels not a multiple of its rows.
    let (xt, x) = data(&[2, 5, 6, 45], 9);
    let (kt, k) = data(&[13, 5, 3, 3], 10);
    check("conv2d", &reference("conv2d", &[xt, kt]), 1e-5, |y| {
        kernels::conv2d_f32(&x, [2, 5, 6, 45], &k, [13, 5, 3, 3], y).expect("valid shapes");
    });
    // Three pieces of 2^15 (the last one ragged, and not a whole number of
    // lanes), folded on two threads and combined in order.
    let (xt, x) = data(&[70_001], 11);
    check("sum", &reference("sum", &[xt]), 1e-5, |y| {
        kernels::sum_f32(&x, [70_001], y).expect("valid shapes");
    });
    // The same bits wherever the buffer starts: each piece's whole chunks start
    // on a cache line, the lanes rotated back after (at every offset of an f32
    // in a line, and lengths shorter than a chunk, a vector, a piece).
    for n in [3, 70, 1_000, 70_001] {
        let x = &x[..n];
        let at = |offset: usize| {
            let buffer = uop_runtime::AlignedVec::from_slice_at(x, offset);
            let mut y = [0.0f32];
            kernels::sum_f32(&buffer, [n], &mut y).expect("valid shapes");
            y[0].to_bits()
        };
        let want = at(0);
        for offset in (4..64).step_by(4) {
            assert_eq!(
                at(offset),
                want,
                "sum of {n} starting {offset} bytes into a line"
            );
        }
    }
    // Columns shared out in steps of 64 (the second thread's share ragged),
    // every thread walking all rows.
    let (xt, x) = data(&[333, 257], 12);
    check("column_sum", &reference("column_sum", &[xt]), 1e-5, |y| {
        kernels::column_sum_f32(&x, [333, 257], y).expect("valid shapes");
    });
    // The worker pool: back-to-back calls, calls from several threads at once
    // (one gets the pool, the others spawn their own threads), a pool grown to
    // three threads and then used by calls of two. Every call gives the same bits.
    let (_, x) = data(&[200_001], 15);
    let sum = || {
        let mut y = [0.0f32];
        kernels::sum_f32(&x, [200_001], &mut y).expect("valid shapes");
        y[0].to_bits()
    };
    kernels::set_threads(2);
    let want = sum();
    for threads in [2, 3, 2] {
        kernels::set_threads(threads);
        for _ in 0..200 {
            assert_eq!(sum(), want, "sum on {threads} threads, back to back");
        }
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..50 {
                        assert_eq!(sum(), want, "sum on {threads} threads, from 4 callers");
                    }
                });
            }
        });
    }
    kernels::set_threads(0);
}

#[test]
fn every_copy_of_the_loops_matches_the_interpreter() {
    // The children run only the test above (`--exact`), each with its own
    // `UOP_CPU`, whatever this process was given.
    let exe = std::env::current_exe().expect("the test binary");
    for level in ["avx2", "baseline"] {
        let out = Command::new(&exe)
            .args([
                "--exact",
                "kernels_match_the_interpreter_and_give_the_same_bits_on_one_and_two_threads",
                "--test-threads",
                "1",
            ])
            .env("UOP_CPU", level)
            .output()
            .expect("the test binary runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "UOP_CPU={level}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
