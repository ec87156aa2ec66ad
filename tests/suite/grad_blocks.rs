//! How small the gradient programs of matmul and conv2d are: blocks and temporaries
//! of their loop IR as lowered and after `pass::optimize`, for the macro ops
//! `matmul` and `conv2d` and the micro-op programs `examples/programs/matmul.uop`
//! and `conv_params.uop`. NNC's backward passes take 5 blocks (matmul) and 3
//! (convolution).
//!
//! All four come out as one zero-reset block per gradient and a single loop nest
//! over the forward iteration space accumulating both gradients, with no
//! temporaries: the seed is read in place (the adjoint of the reindex dropping the
//! reduced axes relabels it, composed with the broadcast back into the product
//! space), and the gradients of the inputs are scatters, whose accumulations fuse.

use std::path::Path;

use uop::codegen::grad::{GradSpec, gradient};
use uop::codegen::loops::{self, LoopProgram, TensorKind};
use uop::codegen::pass::{self, PassOptions};
use uop::codegen::text::parse_program;

/// Size of a gradient program: uop nodes, then (blocks, temporaries) of its loop IR
/// as lowered and after optimization.
#[derive(Debug, PartialEq)]
struct Sizes {
    nodes: usize,
    lowered: (usize, usize),
    optimized: (usize, usize),
}

/// The [`Sizes`] of the gradient of `src` with respect to every input, the output seeded.
fn gradient_sizes(src: &str) -> Sizes {
    let forward = parse_program(src, &uop::ops::registry()).unwrap_or_else(|e| panic!("{e}"));
    let spec = GradSpec {
        seeds: forward.outputs.clone(),
        wrt: forward.inputs.clone(),
        supplied: vec![],
    };
    let grad = gradient(&forward, &spec).expect("gradient");
    let lowered = loops::lower(&grad.program);
    let optimized = pass::optimize(&lowered, &PassOptions::default()).expect("optimize");
    let size = |lp: &LoopProgram| {
        let temps = lp
            .tensors
            .iter()
            .filter(|t| t.kind == TensorKind::Temp)
            .count();
        (lp.blocks.len(), temps)
    };
    Sizes {
        nodes: grad.program.nodes.len(),
        lowered: size(&lowered),
        optimized: size(&optimized),
    }
}

fn example(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/programs")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

const MATMUL: &str = "input a: f32[M, K]\ninput b: f32[K, N]\ny = matmul(a, b)\noutput y\n";
const CONV2D: &str =
    "input x: f32[N, C, H, W]\ninput w: f32[O, C, KH, KW]\ny = conv2d(x, w)\noutput y\n";
const CONV2D_BIAS: &str = "input x: f32[N, C, H, W]\ninput w: f32[O, C, KH, KW]\ninput b: f32[O]\ny = conv2d(x, w, b)\noutput y\n";

/// Inputs, seed, the seed broadcast into the product space, two products and two
/// scatters (each a zero-reset block and an accumulation block when lowered): three
/// blocks once optimized, against NNC's five (it was five, with one temporary,
/// before the seed was read in place).
const PRODUCT_AND_TWO_SCATTERS: Sizes = Sizes {
    nodes: 10,
    lowered: (9, 5),
    optimized: (3, 0),
};

#[test]
fn matmul_backward_is_three_blocks_without_temporaries() {
    assert_eq!(gradient_sizes(MATMUL), PRODUCT_AND_TWO_SCATTERS);
    assert_eq!(
        gradient_sizes(&example("matmul.uop")),
        PRODUCT_AND_TWO_SCATTERS
    );
}

#[test]
fn conv2d_backward_is_three_blocks_without_temporaries() {
    // NNC: three blocks. The window reads `x[.., i2 + i5, ..]` keep g_x a scatter.
    assert_eq!(gradient_sizes(CONV2D), PRODUCT_AND_TWO_SCATTERS);
    assert_eq!(
        gradient_sizes(&example("conv_params.uop")),
        PRODUCT_AND_TWO_SCATTERS
    );
}

#[test]
fn a_bias_adds_its_own_reset_and_accumulation() {
    // g_b sums the seed over [N, OH, OW]: a nest of its own (it was 6 blocks and one
    // temporary before the seed was read in place).
    assert_eq!(
        gradient_sizes(CONV2D_BIAS),
        Sizes {
            nodes: 12,
            lowered: (12, 6),
            optimized: (5, 0),
        }
    );
}
