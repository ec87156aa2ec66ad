//! Snapshots of the Cranelift IR the backend generates for small programs, so a
//! change to the translation is visible in review. `UOP_BLESS=1` rewrites them.

use std::path::Path;

use uop_codegen::text::{Registry, parse_program};
use uop_cranelift::{self as cranelift, Options};

fn snapshot(name: &str, src: &str) {
    let program = parse_program(src, &Registry::new()).expect("parses");
    let optimized = cranelift::optimized(&program).expect("optimizes");
    let clif = cranelift::emit_clif(&optimized, name, &Options::default()).expect("translates");
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots/cranelift")
        .join(format!("{name}.clif"));
    if std::env::var_os("UOP_BLESS").is_some() {
        std::fs::write(&path, &clif).expect("writable");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (run with UOP_BLESS=1 to create it)",
            path.display()
        )
    });
    assert!(
        clif == expected,
        "{name}: the generated CLIF changed (UOP_BLESS=1 accepts it):\n{clif}"
    );
}

/// An element-wise loop: an f32x4 body and a scalar tail.
#[test]
fn scale_is_vectorized_with_a_scalar_tail() {
    snapshot("scale", "input x: f32[N]\ny = mul(x, 2.0)\noutput y\n");
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/cranelift/scale.clif"),
    )
    .expect("snapshot exists");
    assert!(text.contains("f32x4"), "the body uses vectors");
}

/// A row sum: a vector accumulator folded into the carried variable.
#[test]
fn row_sum_has_a_vector_accumulator() {
    snapshot(
        "row_sum",
        "input x: f32[M, N]\ns = reduce_sum(x, [1])\noutput s\n",
    );
}

/// A padded read: a bounds check selecting the fill's stack slot.
#[test]
fn padding_selects_the_fill() {
    snapshot(
        "pad",
        "input x: f64[N]\ny = reindex(x, [N + 2], [i0 - 1], fill=-1.5)\noutput y\n",
    );
}
