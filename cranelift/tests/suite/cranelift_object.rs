//! Ahead-of-time kernels: an object file and its C header linked into a C program
//! (with `gcc ... -lm`), whose outputs must match the interpreter's. The Rust side
//! (objects archived and linked by a build script, called through the generated
//! `extern "C"` block) is the workspace member `examples/aot`.
//!
//! Without `gcc` the C test fails, unless `UOP_SKIP_C_TESTS` is set, in which case
//! it prints `SKIPPED` on its output.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::gcc_or_skip;
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};
use uop_cranelift::{self as cranelift, Options};

/// Softmax over rows, then a scaled copy: exercises libm calls, reductions, vectors.
const SOFTMAX: &str = "input x: f32[B, N]\nm = reduce_max(x, [1])\n\
    e = exp(sub(x, reindex(m, [B, N], [i0, 0])))\ns = reduce_sum(e, [1])\n\
    y = div(e, reindex(s, [B, N], [i0, 0]))\nz = mul(tanh(x), 0.5)\noutput y\noutput z\n";

/// A fresh, empty directory for one test, under the tests' target tmpdir (nothing
/// is left in the system's temporary folder).
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("uop-cranelift-{test}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Writes `name.o` and `name.h` into `dir`.
fn emit(program: &Program, name: &str, dir: &Path) {
    let optimized = cranelift::optimized(program).expect("optimizes");
    let object = cranelift::emit_object(&optimized, name, &Options::default()).expect("emits");
    std::fs::write(dir.join(format!("{name}.o")), object).expect("writes");
    let header = cranelift::c_header(&optimized, name).expect("header");
    std::fs::write(dir.join(format!("{name}.h")), header).expect("writes");
}

fn input() -> Tensor {
    let data = (0..3 * 5)
        .map(|k| ((k * 7) % 11) as f64 * 0.3 - 1.5)
        .collect();
    Tensor::new(DType::F32, vec![3, 5], data).expect("consistent")
}

fn expected() -> Vec<f64> {
    let program = parse_program(SOFTMAX, &Registry::new()).expect("parses");
    let out = interp::run(&program, &[input()], &HashMap::new()).expect("runs");
    out.into_iter().flat_map(|t| t.data).collect()
}

fn check_printed(stdout: &str) {
    let mut lines = stdout.lines();
    assert_eq!(
        lines.next(),
        Some("shape error 1"),
        "bad sizes are refused: {stdout}"
    );
    assert_eq!(
        lines.next(),
        Some("too large 1 1"),
        "sizes whose byte counts overflow are refused by both entries: {stdout}"
    );
    let got: Vec<f64> = lines
        .map(|l| l.trim().parse().unwrap_or_else(|_| panic!("a number: {l}")))
        .collect();
    let want = expected();
    assert_eq!(got.len(), want.len(), "{stdout}");
    for (g, w) in got.iter().zip(&want) {
        // The C library's exp/tanh may differ from Rust's in the last bit.
        assert!((g - w).abs() <= 1e-6 * (1.0 + w.abs()), "{g} vs {w}");
    }
}

const MAIN_C: &str = r#"#include <stdio.h>
#include "softmax.h"
int main(void) {
    float x[15], y[15], z[15];
    for (int k = 0; k < 15; k++) x[k] = (float)(((k * 7) % 11) * 0.3 - 1.5);
    const void *inputs[1] = {x};
    int64_t bad_dims[2] = {3, -5};
    int64_t out_dims[SOFTMAX_NUM_OUTPUT_DIMS];
    printf("shape error %d\n", softmax_shapes(bad_dims, NULL, out_dims) == UOP_ERR_INPUT_SHAPE);
    /* 2^40 x 2^40 floats: the byte count overflows 63 bits (it would wrap to 0). */
    int64_t huge_dims[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
    printf("too large %d %d\n", softmax_shapes(huge_dims, NULL, out_dims) == UOP_ERR_TOO_LARGE,
           softmax(inputs, huge_dims, NULL, (void *const *)inputs, out_dims) == UOP_ERR_TOO_LARGE);
    int64_t in_dims[SOFTMAX_NUM_INPUT_DIMS] = {3, 5};
    if (softmax_shapes(in_dims, NULL, out_dims) != UOP_OK) return 2;
    void *outputs[2] = {y, z};
    if (softmax(inputs, in_dims, NULL, outputs, out_dims) != UOP_OK) return 3;
    for (int k = 0; k < 15; k++) printf("%.9g\n", y[k]);
    for (int k = 0; k < 15; k++) printf("%.9g\n", z[k]);
    return 0;
}
"#;

#[test]
fn object_file_links_into_a_c_program() {
    if !gcc_or_skip("object_file_links_into_a_c_program") {
        return;
    }
    let dir = scratch("c");
    let program = parse_program(SOFTMAX, &Registry::new()).expect("parses");
    emit(&program, "softmax", &dir);
    std::fs::write(dir.join("main.c"), MAIN_C).expect("writes");
    let built = Command::new("gcc")
        .current_dir(&dir)
        .args([
            "-std=c99",
            "-Wall",
            "-Werror",
            "main.c",
            "softmax.o",
            "-lm",
            "-o",
            "main",
        ])
        .output()
        .expect("gcc runs");
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(dir.join("main")).output().expect("runs");
    assert!(run.status.success(), "exit {:?}", run.status);
    check_printed(&String::from_utf8_lossy(&run.stdout));
}

#[test]
fn names_must_be_c_identifiers() {
    let program = parse_program(SOFTMAX, &Registry::new()).expect("parses");
    let optimized = cranelift::optimized(&program).expect("optimizes");
    let err = cranelift::emit_object(&optimized, "soft-max", &Options::default()).unwrap_err();
    assert!(err.to_string().contains("soft-max"), "{err}");
}
