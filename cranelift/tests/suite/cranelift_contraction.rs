//! Register tiles computed by the runtime's micro-kernels (`plan::contraction`,
//! JIT only): matmul, batched matmul, a convolution and a matmul with an
//! epilogue, against the interpreter at sizes below, at and around every CPU
//! level's tile (4 × 8, 5 × 16, 4 × 64), so whole tiles, tiles moved back to end
//! with a range and ranges smaller than a tile (run cell by cell) all run. The
//! same checks, and those of the math over runs (`cranelift_math_runs`), run again
//! in child processes under `UOP_CPU=avx2` and `UOP_CPU=baseline`, so every
//! level's runtime code is tested on a machine that has all three.

use std::collections::HashMap;
use std::process::Command;

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};
use uop_cranelift::{self as cranelift, Options};

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Deterministic values in [-2, 2).
fn data(n: usize, seed: usize) -> Vec<f64> {
    (0..n)
        .map(|i| ((i * 7919 + seed * 104_729) % 1000) as f64 / 250.0 - 2.0)
        .collect()
}

/// Runs `src` on inputs of `shapes` through the interpreter and the JIT; every
/// output agrees within a reassociated f32 sum of `terms` products of values below
/// 2 (the micro-kernels fuse each multiply-add on the AVX2 and AVX-512 levels).
fn check(src: &str, shapes: &[Vec<usize>], terms: usize) {
    let program = parse(src);
    let inputs: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let n = shape.iter().product();
            Tensor::new(DType::F32, shape.clone(), data(n, k)).expect("sized")
        })
        .collect();
    let params = HashMap::new();
    let expected = interp::run(&program, &inputs, &params).expect("interpreter runs");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let got = kernel.run(&inputs, &params).expect("kernel runs");
    let bound = 4.0 * f64::from(f32::EPSILON) * (4 * terms.max(1)) as f64;
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e.shape, g.shape);
        for (i, (a, b)) in e.data.iter().zip(&g.data).enumerate() {
            assert!(
                (a - b).abs() <= bound * a.abs().max(1.0),
                "{src}\nshapes {shapes:?}, element {i}: interpreter {a} vs cranelift {b}"
            );
        }
    }
}

/// The JIT's IR of `src` after the optimizer.
fn jit_clif(src: &str) -> String {
    let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
    cranelift::emit_jit_clif(&optimized, &Options::default()).expect("translates")
}

/// The micro-kernel symbol of the level this process runs.
fn contract_symbol() -> &'static str {
    uop_runtime::microkernel::host_level().symbol
}

const MATMUL: &str = "\
input a: f32[M, K]
input b: f32[K, N]
ab = mul(reindex(a, [M, N, K], [i0, i2]), reindex(b, [M, N, K], [i2, i1]))
c = reduce_sum(ab, [2])
output c
";

const BATCHED: &str = "\
input a: f32[B, M, K]
input b: f32[B, K, N]
ab = mul(reindex(a, [B, M, N, K], [i0, i1, i3]), reindex(b, [B, M, N, K], [i0, i3, i2]))
c = reduce_sum(ab, [3])
output c
";

const CONV: &str = "\
input x: f32[N, C, H, W]
input k: f32[O, C, 3, 3]
xx = reindex(x, [N, O, H, W, C, 3, 3], [i0, i4, i2 + i5 - 1, i3 + i6 - 1])
kk = reindex(k, [N, O, H, W, C, 3, 3], [i1, i4, i5, i6])
s = reduce_sum(mul(xx, kk), [4, 5, 6])
y = reindex(s, [N, O, H, W], [i0, i1, i2, i3, 0, 0, 0])
output y
";

/// A matmul whose sums go through more statements before their store.
const EPILOGUE: &str = "\
input a: f32[M, K]
input b: f32[K, N]
ab = mul(reindex(a, [M, N, K], [i0, i2]), reindex(b, [M, N, K], [i2, i1]))
c = reduce_sum(ab, [2])
d = maximum(mul(c, c), c)
output d
";

/// Rows and columns around every level's tile: smaller, equal, one more, ragged.
const ROWS: [usize; 6] = [1, 4, 5, 6, 11, 13];
const COLS: [usize; 7] = [3, 8, 16, 17, 64, 70, 131];

#[test]
fn contractions_match_the_interpreter_at_sizes_around_every_tile() {
    for m in ROWS {
        for n in COLS {
            for k in [0, 1, 7, 40] {
                check(MATMUL, &[vec![m, k], vec![k, n]], k);
                check(EPILOGUE, &[vec![m, k], vec![k, n]], k);
            }
        }
    }
    for (b, m, n, k) in [(3, 5, 16, 9), (2, 6, 70, 33), (1, 4, 64, 2)] {
        check(BATCHED, &[vec![b, m, k], vec![b, k, n]], k);
    }
    // 32 and 48 output channels: narrower than AVX-512's 64 columns, so tiles of
    // a narrower level (issue 37's graph conv, [8, 16, 34, 34] x [32, 16, 3, 3]).
    for (o, h, w) in [
        (8, 3, 5),
        (64, 4, 9),
        (70, 3, 12),
        (16, 2, 6),
        (32, 4, 9),
        (48, 3, 7),
    ] {
        check(CONV, &[vec![2, 3, h, w], vec![o, 3, 3, 3]], 27);
    }
}

#[test]
fn the_jit_calls_the_host_levels_micro_kernel_and_an_object_file_none() {
    for src in [MATMUL, BATCHED, CONV, EPILOGUE] {
        let clif = jit_clif(src);
        assert!(clif.contains(contract_symbol()), "{src}\n{clif}");
        assert!(clif.contains("uop_pack_f32"), "{clif}");
        let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
        let object = cranelift::emit_clif(&optimized, "k", &Options::default()).expect("emits");
        assert!(!object.contains("uop_contract"), "{object}");
    }
    // A plain store takes the results straight to the output; an epilogue reads
    // them back from the tile's slot.
    let slots = |clif: &str| clif.matches("explicit_slot").count();
    assert_eq!(slots(&jit_clif(EPILOGUE)), slots(&jit_clif(MATMUL)) + 1);
    let scalar = Options {
        vectorize: false,
        ..Options::default()
    };
    let optimized = cranelift::optimized(&parse(MATMUL)).expect("optimizes");
    let plain = cranelift::emit_jit_clif(&optimized, &scalar).expect("translates");
    assert!(
        !plain.contains("uop_contract"),
        "scalar code ignores the tile"
    );
}

#[test]
fn a_range_narrower_than_the_hosts_tile_takes_a_narrower_levels_tile() {
    // Every level up to the host's is narrower than the ones above it in rows or
    // columns (4 × 64, 5 × 16, 4 × 8), so the JIT's IR calls each: a range too
    // small for the host's tile runs the widest tile it holds, not one cell at a time.
    use uop_runtime::microkernel::{LEVELS, host_index};
    for src in [MATMUL, CONV, EPILOGUE] {
        let clif = jit_clif(src);
        for level in &LEVELS[..=host_index()] {
            assert!(clif.contains(level.symbol), "{}\n{clif}", level.symbol);
        }
        for level in &LEVELS[host_index() + 1..] {
            assert!(
                !clif.contains(level.symbol),
                "above the host: {}",
                level.symbol
            );
        }
    }
}

#[test]
fn other_reductions_keep_the_generated_tiles() {
    // A max of products is a tile, but no contraction.
    let src = "\
input a: f32[M, K]
input b: f32[K, N]
ab = mul(reindex(a, [M, N, K], [i0, i2]), reindex(b, [M, N, K], [i2, i1]))
c = reduce_max(ab, [2])
output c
";
    let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
    assert!(optimized.to_string().contains("[tile"), "{optimized}");
    assert!(!jit_clif(src).contains("uop_contract"));
    check(src, &[vec![9, 5], vec![5, 70]], 0);
    let f64_matmul = MATMUL.replace("f32", "f64");
    assert!(!jit_clif(&f64_matmul).contains("uop_contract"));
}

#[test]
fn every_level_of_the_runtime_code_matches_the_interpreter() {
    // The children run the checks above and those of the math over runs with
    // their own `UOP_CPU`, whatever this process was given, and the random
    // programs of the vectorized oracle.
    let exe = std::env::current_exe().expect("the test binary");
    for level in ["avx2", "baseline"] {
        for test in [
            "cranelift_contraction::contractions_match_the_interpreter_at_sizes_around_every_tile",
            "cranelift_contraction::the_jit_calls_the_host_levels_micro_kernel_and_an_object_file_none",
            "cranelift_contraction::a_range_narrower_than_the_hosts_tile_takes_a_narrower_levels_tile",
            "cranelift_math_runs::math_runs_match_the_interpreter_at_lengths_around_a_run",
            "cranelift_math_runs::the_jit_calls_the_host_levels_math_and_an_object_file_none",
            "cranelift_oracle::vectorized_kernels_match_the_interpreter_within_reassociation",
        ] {
            let out = Command::new(&exe)
                .args(["--exact", test, "--test-threads", "1"])
                .env("UOP_CPU", level)
                .output()
                .expect("the test binary runs");
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains("1 passed"),
                "UOP_CPU={level} {test}:\n{stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}
