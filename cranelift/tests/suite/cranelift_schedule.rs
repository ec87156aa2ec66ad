//! The Cranelift backend's use of schedule annotations, against the interpreter at
//! ragged sizes: split reductions (several vector accumulators, a single-vector
//! loop, a scalar tail), unrolled element-wise loops, column reductions four rows
//! at a time and blocked copies transposed in registers.

use std::collections::HashMap;

use uop_codegen::compile::CompileOptions;
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};
use uop_cranelift::{self as cranelift, Options};

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Sizes around every boundary of a 4-lane, 4-way unrolled loop (and of 2 lanes).
const RAGGED: [usize; 14] = [0, 1, 2, 3, 4, 5, 7, 15, 16, 17, 31, 33, 64, 67];

/// Deterministic values in [-2, 2) with a few exact zeros and repeats.
fn data(n: usize, seed: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7919 + seed * 104_729) % 1000) as f64 / 250.0 - 2.0)
        .collect()
}

/// Runs `src` through the interpreter and the vectorizing JIT; every output must
/// agree within `tolerance(expected, sum of |terms|)`.
fn check(
    src: &str,
    inputs: &[(DType, Vec<usize>)],
    tolerance: impl Fn(f64, f64) -> f64,
    terms: usize,
) {
    check_with(src, inputs, tolerance, terms, &CompileOptions::default());
}

/// [`check`] with the program compiled under `options` (passes switched off).
fn check_with(
    src: &str,
    inputs: &[(DType, Vec<usize>)],
    tolerance: impl Fn(f64, f64) -> f64,
    terms: usize,
    options: &CompileOptions,
) {
    let program = parse(src);
    let inputs: Vec<Tensor> = inputs
        .iter()
        .enumerate()
        .map(|(k, (dtype, shape))| {
            let n = shape.iter().product();
            Tensor::new(*dtype, shape.clone(), data(n, k)).expect("sized")
        })
        .collect();
    let params = HashMap::new();
    let expected = interp::run(&program, &inputs, &params).expect("interpreter runs");
    let kernel =
        cranelift::compile_program_with(&program, options, &Options::default()).expect("compiles");
    let got = kernel.run(&inputs, &params).expect("kernel runs");
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e.shape, g.shape);
        for (a, b) in e.data.iter().zip(&g.data) {
            let bound = tolerance(*a, 2.0 * terms as f64);
            assert!(
                a == b || (a.is_nan() && b.is_nan()) || (a - b).abs() <= bound,
                "{src}\nshapes {:?}: interpreter {a} vs cranelift {b} (allowed {bound})\n{}",
                inputs.iter().map(|t| &t.shape).collect::<Vec<_>>(),
                kernel.program()
            );
        }
    }
}

fn exact(_: f64, _: f64) -> f64 {
    0.0
}

/// A reassociated f32 sum of `n` terms of magnitude at most `m` is off by at most
/// about `n * eps * n * m`; the bound below is that with room to spare.
fn sum_f32(_: f64, mass: f64) -> f64 {
    4.0 * f64::from(f32::EPSILON) * mass * mass.max(1.0)
}

fn sum_f64(_: f64, mass: f64) -> f64 {
    4.0 * f64::EPSILON * mass * mass.max(1.0)
}

#[test]
fn split_sums_agree_at_ragged_lengths() {
    for n in RAGGED {
        for (dtype, tol) in [("f32", sum_f32 as fn(f64, f64) -> f64), ("f64", sum_f64)] {
            let src = format!("input x: {dtype}[M, N]\ns = reduce_sum(x, [1])\noutput s\n");
            let d = if dtype == "f32" {
                DType::F32
            } else {
                DType::F64
            };
            check(&src, &[(d, vec![3, n])], tol, n);
        }
    }
}

#[test]
fn split_max_and_min_are_exact_at_ragged_lengths() {
    for n in RAGGED {
        for op in ["reduce_max", "reduce_min"] {
            let src = format!("input x: f32[M, N]\ns = {op}(x, [1])\noutput s\n");
            check(&src, &[(DType::F32, vec![2, n])], exact, n);
        }
    }
}

#[test]
fn a_nan_anywhere_in_a_split_max_gives_nan() {
    let program = parse("input x: f32[N]\ns = reduce_max(x, [0])\noutput s\n");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    for n in [1, 5, 16, 17, 40] {
        for at in 0..n {
            let mut values = data(n, 3);
            values[at] = f64::NAN;
            let x = Tensor::new(DType::F32, vec![n], values).expect("sized");
            let got = kernel.run(&[x], &HashMap::new()).expect("runs");
            assert!(got[0].data[0].is_nan(), "n = {n}, NaN at {at}");
        }
    }
}

#[test]
fn softmax_rows_agree_at_ragged_lengths() {
    let src = "input x: f32[B, N]\n\
               m = reduce_max(x, [1])\n\
               mb = reindex(m, [B, N], [i0, 0])\n\
               e = exp(sub(x, mb))\n\
               s = reduce_sum(e, [1])\n\
               sb = reindex(s, [B, N], [i0, 0])\n\
               y = div(e, sb)\n\
               output y\n";
    for n in RAGGED.into_iter().filter(|&n| n > 0) {
        check(
            src,
            &[(DType::F32, vec![3, n])],
            |a, _| 1e-5 * a.abs().max(1e-30),
            n,
        );
    }
}

/// Joined blocks run as one loop over the rows, keeping one row of each row-local
/// temporary (a centered row between a mean, a variance and the output).
#[test]
fn row_groups_keep_one_row_of_their_temporaries() {
    let src = "input x: f32[B, N]\n\
               s = reduce_sum(x, [1])\n\
               mean = div(s, 7.0)\n\
               mb = reindex(mean, [B, N], [i0, 0])\n\
               c = sub(x, mb)\n\
               q = reduce_sum(mul(c, c), [1])\n\
               qb = reindex(q, [B, N], [i0, 0])\n\
               y = div(c, add(qb, 1.0))\n\
               output y\n";
    let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
    let text = optimized.to_string();
    assert!(text.contains("[parallel, joined]"), "{text}");
    assert!(text.contains("[one row of axis 0 at a time]"), "{text}");
    for (b, n) in [(1, 1), (3, 17), (5, 33), (0, 4), (4, 0)] {
        check(
            src,
            &[(DType::F32, vec![b, n])],
            |a, mass| sum_f32(a, mass) * 4.0,
            n.max(1),
        );
    }
}

#[test]
fn unrolled_element_wise_loops_are_exact_with_tails() {
    for n in RAGGED {
        check(
            "input x: f32[N]\ninput z: f32[N]\ny = div(add(mul(x, 3.0), 1.0), add(z, 5.0))\noutput y\n",
            &[(DType::F32, vec![n]), (DType::F32, vec![n])],
            exact,
            n,
        );
        check(
            "input x: f64[N]\ny = maximum(sqrt(abs(x)), 0.5)\noutput y\n",
            &[(DType::F64, vec![n])],
            exact,
            n,
        );
    }
}

#[test]
fn loops_of_index_values_and_short_lane_by_lane_operations_unroll_exactly() {
    // Not math-heavy (`loops::analysis::math_heavy`): these run four vectors per
    // iteration, their index values and `rsqrt floor sign` lane by lane in each.
    for n in RAGGED {
        // The causal mask of examples/programs/masked.uop: two iotas compared.
        check(
            "input x: f32[T, T]\nrow = iota([T, T], 0)\ncol = iota([T, T], 1)\n\
             y = where(le(col, row), x, -inf)\noutput y\n",
            &[(DType::F32, vec![n, n])],
            exact,
            n,
        );
        // An argmax (of a non-empty axis): a `min=` over column indices, split.
        if n > 0 {
            check(
                "input x: f32[B, N]\ny = reduce_argmax(x, [1])\noutput y\n",
                &[(DType::F32, vec![3, n])],
                exact,
                n,
            );
        }
        check(
            "input x: f32[N]\ny = add(rsqrt(add(abs(x), 1.0)), mul(floor(x), sign(x)))\noutput y\n",
            &[(DType::F32, vec![n])],
            exact,
            n,
        );
    }
}

#[test]
fn column_sums_accumulate_exactly_at_ragged_widths() {
    // The loop over rows is outermost: each output element adds its column in order.
    for c in RAGGED {
        check(
            "input x: f32[R, C]\ny = reduce_sum(x, [0])\noutput y\n",
            &[(DType::F32, vec![5, c])],
            exact,
            5,
        );
    }
}

#[test]
fn column_reductions_jam_rows_exactly_at_ragged_heights() {
    // Four rows at a time, then the last rows one by one: each output element still
    // takes its column's values in row order.
    for r in [0, 1, 3, 4, 5, 8, 9, 17] {
        for c in [1, 4, 7, 16, 33] {
            for src in [
                "input x: f32[R, C]\ninput z: f32[R, C]\ny = reduce_sum(mul(x, z), [0])\noutput y\n",
                "input x: f32[R, C]\ninput z: f32[R, C]\ny = reduce_max(sub(x, z), [0])\noutput y\n",
                "input x: f64[R, C]\ninput z: f64[R, C]\ny = reduce_sum(x, [0])\noutput y\n",
            ] {
                let d = if src.contains("f64") {
                    DType::F64
                } else {
                    DType::F32
                };
                check(src, &[(d, vec![r, c]), (d, vec![r, c])], exact, r);
            }
        }
    }
}

#[test]
fn blocked_transposes_are_exact_at_sizes_off_the_blocks() {
    let sizes = [
        (0, 5),
        (5, 0),
        (1, 1),
        (3, 5),
        (4, 4),
        (5, 7),
        (16, 16),
        (17, 33),
        (33, 18),
        (40, 3),
        (2, 37),
    ];
    for (r, c) in sizes {
        for (dtype, d) in [("f32", DType::F32), ("f64", DType::F64)] {
            let src =
                format!("input x: {dtype}[R, C]\ny = reindex(x, [C, R], [i1, i0])\noutput y\n");
            check(&src, &[(d, vec![r, c])], exact, 1);
        }
    }
}

#[test]
fn a_blocked_transpose_uses_register_shuffles() {
    let program = parse("input x: f32[R, C]\ny = reindex(x, [C, R], [i1, i0])\noutput y\n");
    let optimized = cranelift::optimized(&program).expect("optimizes");
    assert!(
        optimized.to_string().contains("[blocked]"),
        "the schedule blocks the transpose:\n{optimized}"
    );
    let clif = cranelift::emit_clif(&optimized, "t", &Options::default()).expect("translates");
    assert!(
        clif.contains("shuffle"),
        "tiles are transposed in registers"
    );
    let scalar = Options {
        vectorize: false,
        ..Options::default()
    };
    let plain = cranelift::emit_clif(&optimized, "t", &scalar).expect("translates");
    assert!(
        !plain.contains("shuffle"),
        "scalar code ignores the schedule"
    );
}

#[test]
fn a_split_sum_keeps_four_vector_accumulators() {
    let program = parse("input x: f32[M, N]\ns = reduce_sum(x, [1])\noutput s\n");
    let optimized = cranelift::optimized(&program).expect("optimizes");
    assert!(optimized.to_string().contains("[split]"), "{optimized}");
    let clif = cranelift::emit_clif(&optimized, "s", &Options::default()).expect("translates");
    // One accumulator per copy of the main loop's body, each starting at zero.
    assert_eq!(clif.matches("splat.f32x4").count(), 4, "{clif}");
    // Four vectors per main iteration, then one per single-vector iteration.
    assert_eq!(clif.matches("load.f32x4").count(), 5, "{clif}");
}

#[test]
fn a_column_sum_adds_four_rows_per_load_of_the_output() {
    let program = parse("input x: f32[R, C]\ny = reduce_sum(x, [0])\noutput y\n");
    let optimized = cranelift::optimized(&program).expect("optimizes");
    let clif = cranelift::emit_clif(&optimized, "c", &Options::default()).expect("translates");
    // Four rows × (four unrolled vectors, one single vector, one scalar) = 24 adds
    // in the jammed loop and 6 in the loop over the last rows; 6 in all without.
    assert_eq!(clif.matches(" = fadd").count(), 30, "{clif}");
}

#[test]
fn disabling_the_jam_pass_runs_a_column_sum_one_row_at_a_time() {
    let src = "input x: f32[R, C]\ny = reduce_sum(x, [0])\noutput y\n";
    let program = parse(src);
    let off = CompileOptions::default().disable_pass("jam");
    let optimized = cranelift::optimized_with(&program, &off).expect("optimizes");
    assert!(!optimized.to_string().contains("jammed"), "{optimized}");
    assert!(
        cranelift::optimized(&program)
            .expect("optimizes")
            .to_string()
            .contains("), jammed, line split]"),
        "the columns marked `[parallel(lines ..), jammed, line split]`"
    );
    let clif = cranelift::emit_clif(&optimized, "c", &Options::default()).expect("translates");
    // One row at a time: four unrolled vectors, one single vector, one scalar.
    assert_eq!(clif.matches(" = fadd").count(), 6, "{clif}");
    for r in [0, 1, 3, 4, 5, 9] {
        for c in [1, 4, 7, 33] {
            check_with(src, &[(DType::F32, vec![r, c])], exact, r, &off);
        }
    }
}

#[test]
fn disabling_the_pack_pass_reads_a_matmul_tile_in_place() {
    let src = matmul("f32");
    let program = parse(&src);
    let on = cranelift::optimized(&program).expect("optimizes");
    assert!(on.to_string().contains("[tile(packed "), "{on}");
    let packed = cranelift::emit_clif(&on, "c", &Options::default()).expect("translates");
    assert!(packed.contains("explicit_slot"), "the panel: {packed}");
    let off = CompileOptions::default().disable_pass("pack");
    let optimized = cranelift::optimized_with(&program, &off).expect("optimizes");
    assert!(!optimized.to_string().contains("packed"), "{optimized}");
    assert!(optimized.to_string().contains("[tile"), "{optimized}");
    let clif = cranelift::emit_clif(&optimized, "c", &Options::default()).expect("translates");
    assert!(!clif.contains("explicit_slot"), "no panel: {clif}");
    for (m, n, k) in [(4, 8, 5), (9, 17, 16), (13, 33, 3)] {
        let inputs = [(DType::F32, vec![m, k]), (DType::F32, vec![k, n])];
        check_with(&src, &inputs, sum_f32, k, &off);
    }
}

/// `matmul(a, b)` spelled out in micro ops, in `dtype`.
fn matmul(dtype: &str) -> String {
    format!(
        "input a: {dtype}[M, K]\ninput b: {dtype}[K, N]\n\
         ab = mul(reindex(a, [M, N, K], [i0, i2]), reindex(b, [M, N, K], [i2, i1]))\n\
         c = reduce_sum(ab, [2])\noutput c\n"
    )
}

#[test]
fn register_tiles_give_every_cell_the_interpreters_sum() {
    // Each cell adds its terms in the loop nest's order, whatever tile it is in:
    // sizes below, at and around the 4 × 8 tile (4 × 4 in f64), ragged reductions.
    // f64 keeps Cranelift's own tiles, exact; f32 takes the runtime's micro-kernels
    // (a level's tile wherever the ranges hold one, at every level since issue 37),
    // which fuse each multiply-add on AVX2 and AVX-512.
    for (m, n) in [(0, 9), (3, 7), (4, 8), (5, 9), (9, 17), (13, 33), (8, 3)] {
        for k in [0, 1, 5, 16] {
            for (dtype, d, tolerance) in [
                ("f32", DType::F32, sum_f32 as fn(f64, f64) -> f64),
                ("f64", DType::F64, exact),
            ] {
                check(
                    &matmul(dtype),
                    &[(d, vec![m, k]), (d, vec![k, n])],
                    tolerance,
                    k,
                );
            }
        }
    }
}

#[test]
fn column_panels_are_packed_when_they_fit_and_read_in_place_when_not() {
    // A panel holds 2048 steps of one packed load: K = 2048 is packed, 2049 is read
    // in place; two packed loads (`b` and `d`) share a panel of 1024 steps.
    for k in [2048, 2049] {
        check(
            &matmul("f32"),
            &[(DType::F32, vec![5, k]), (DType::F32, vec![k, 9])],
            exact,
            k,
        );
    }
    let src = "\
input a: f32[M, K]
input b: f32[K, N]
input d: f32[K, N]
ab = mul(reindex(a, [M, N, K], [i0, i2]), mul(reindex(b, [M, N, K], [i2, i1]), reindex(d, [M, N, K], [i2, i1])))
c = reduce_sum(ab, [2])
output c
";
    let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
    assert!(optimized.to_string().contains("[tile"), "{optimized}");
    for k in [3, 1024, 1025] {
        check(
            src,
            &[
                (DType::F32, vec![6, k]),
                (DType::F32, vec![k, 17]),
                (DType::F32, vec![k, 17]),
            ],
            exact,
            k,
        );
    }
}

#[test]
fn tile_loads_without_a_fixed_step_compute_their_address_each_time() {
    // `b` read backwards along the reduction: its address moves back a row at a
    // time, which the carried addresses do not cover, next to `a`'s carried ones.
    let src = "\
input a: f32[M, K]
input b: f32[K, N]
ab = mul(reindex(a, [M, N, K], [i0, i2]), reindex(b, [M, N, K], [K - 1 - i2, i1]))
c = reduce_sum(ab, [2])
output c
";
    let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
    assert!(optimized.to_string().contains("[tile"), "{optimized}");
    for (m, n, k) in [(4, 8, 3), (9, 17, 5), (5, 3, 0)] {
        check(
            src,
            &[(DType::F32, vec![m, k]), (DType::F32, vec![k, n])],
            sum_f32,
            k,
        );
    }
}

#[test]
fn a_convolution_runs_in_register_tiles() {
    // The `tile` pass turns the output channels into the tile's columns and reads
    // the kernel from a transposed copy; rows are the image's columns. The JIT runs
    // the runtime's micro-kernels there (fused multiply-adds on AVX2 and AVX-512).
    let src = "\
input x: f32[N, C, H, W]
input k: f32[O, C, 3, 3]
xx = reindex(x, [N, O, H, W, C, 3, 3], [i0, i4, i2 + i5 - 1, i3 + i6 - 1])
kk = reindex(k, [N, O, H, W, C, 3, 3], [i1, i4, i5, i6])
s = reduce_sum(mul(xx, kk), [4, 5, 6])
y = reindex(s, [N, O, H, W], [i0, i1, i2, i3, 0, 0, 0])
output y
";
    for (o, w) in [(8, 5), (9, 4), (3, 7), (16, 6)] {
        check(
            src,
            &[
                (DType::F32, vec![2, 3, 5, w]),
                (DType::F32, vec![o, 3, 3, 3]),
            ],
            sum_f32,
            27,
        );
    }
}

#[test]
fn a_matmul_tile_keeps_its_sums_in_vector_registers() {
    let program = parse(&matmul("f32"));
    let optimized = cranelift::optimized(&program).expect("optimizes");
    assert!(optimized.to_string().contains("[tile"), "{optimized}");
    let clif = cranelift::emit_clif(&optimized, "m", &Options::default()).expect("translates");
    // 4 rows × 2 vectors of sums in the tile, each cell's lane taken out once.
    assert_eq!(clif.matches(" = fadd.f32x4").count(), 8, "{clif}");
    assert_eq!(clif.matches(" = extractlane.f32x4").count(), 32, "{clif}");
    let scalar = Options {
        vectorize: false,
        ..Options::default()
    };
    let plain = cranelift::emit_clif(&optimized, "m", &scalar).expect("translates");
    assert!(!plain.contains("f32x4"), "scalar code ignores the tile");
}
