//! What several benches share (declared as `mod common;` by each).

/// The input shapes of `examples/graphs/transformer_block.uop` at T = `t` tokens,
/// D = `d` features and F = `f` hidden units (jax's sizes: 64, 64, 256), in
/// declaration order.
pub fn transformer_block_shapes(t: usize, d: usize, f: usize) -> Vec<Vec<usize>> {
    vec![
        vec![t, d],
        vec![d],
        vec![d],
        vec![d, d],
        vec![d, d],
        vec![d, d],
        vec![d, d],
        vec![d],
        vec![d],
        vec![d, f],
        vec![f],
        vec![f, d],
        vec![d],
    ]
}
