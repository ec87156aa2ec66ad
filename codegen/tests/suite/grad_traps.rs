//! Gradients worked out by hand for the places micro-op gradients go wrong
//! (the traps NNC's gradients fell into): the sign of `div`'s gradient, summing
//! over several consumers, ties of max / min, repeated and diagonal reads,
//! scatters with collisions, products with zeros, reads that took the fill value.
//!
//! Every gradient is computed twice, by the reference interpreter on the gradient
//! program and by the loop-IR interpreter on its lowering, and both must agree.

use std::collections::HashMap;

use uop_codegen::grad::{GradSpec, gradient};
use uop_codegen::interp;
use uop_codegen::loops;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::DType;

fn t(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::F32, shape.to_vec(), data.to_vec()).expect("data matches shape")
}

fn idx(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::I32, shape.to_vec(), data.to_vec()).expect("data matches shape")
}

/// Gradients of `sum(seed * output)` (one output) with respect to every float input.
fn grads(src: &str, inputs: &[Tensor], seed: &Tensor) -> Vec<Tensor> {
    let forward = parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}"));
    let wrt: Vec<_> = forward
        .inputs
        .iter()
        .copied()
        .filter(|i| forward.node(*i).dtype.is_float())
        .collect();
    let spec = GradSpec {
        seeds: forward.outputs.clone(),
        wrt,
        supplied: vec![],
    };
    let grad = gradient(&forward, &spec).expect("gradient builds");
    let params = HashMap::new();
    let args = grad
        .arguments(&forward, inputs, std::slice::from_ref(seed), &params)
        .expect("arguments");
    let by_uops = interp::run(&grad.program, &args, &params).expect("gradient runs");
    let by_loops = interp::run_loops(&loops::lower(&grad.program), &args, &params)
        .expect("lowered gradient runs");
    assert_eq!(by_uops, by_loops, "uop and loop interpreters agree");
    by_uops
}

#[track_caller]
fn assert_data(t: &Tensor, expected: &[f64]) {
    assert_eq!(t.data, expected, "gradient values");
}

#[test]
fn div_gradient_is_one_over_b_for_a_and_minus_a_over_b_squared_for_b() {
    let g = grads(
        "input a: f32[N]\ninput b: f32[N]\ny = div(a, b)\noutput y\n",
        &[t(&[2], &[3.0, -1.0]), t(&[2], &[2.0, 4.0])],
        &t(&[2], &[1.0, 1.0]),
    );
    assert_data(&g[0], &[0.5, 0.25]);
    assert_data(&g[1], &[-0.75, 0.0625]);
    // A scalar numerator: d(2/b)/db = -2/b^2.
    let g = grads(
        "input b: f32[N]\ny = div(2.0, b)\noutput y\n",
        &[t(&[2], &[2.0, -4.0])],
        &t(&[2], &[1.0, 3.0]),
    );
    assert_data(&g[0], &[-0.5, -0.375]);
}

#[test]
fn an_input_feeding_three_ops_sums_all_three_contributions() {
    // y = 3x + x*x + reverse(x): the last term sends seed[N-1-i] to x[i].
    let g = grads(
        "input x: f32[N]\np = mul(x, 3.0)\nq = mul(x, x)\nr = reindex(x, [N], [N - 1 - i0])\ny = add(add(p, q), r)\noutput y\n",
        &[t(&[2], &[1.0, 2.0])],
        &t(&[2], &[1.0, 10.0]),
    );
    // x0: 3*1 + 2*1*1 + 10 ; x1: 3*10 + 2*2*10 + 1
    assert_data(&g[0], &[15.0, 71.0]);
}

#[test]
fn reduce_max_and_min_split_ties_evenly() {
    let g = grads(
        "input x: f32[R, N]\ny = reduce_max(x, [1])\noutput y\n",
        &[t(&[2, 4], &[1.0, 3.0, 3.0, 2.0, 5.0, 5.0, 5.0, 5.0])],
        &t(&[2, 1], &[1.0, 2.0]),
    );
    assert_data(&g[0], &[0.0, 0.5, 0.5, 0.0, 0.5, 0.5, 0.5, 0.5]);
    let g = grads(
        "input x: f32[R, N]\ny = reduce_min(x, [0, 1])\noutput y\n",
        &[t(&[2, 2], &[2.0, 1.0, 1.0, 4.0])],
        &t(&[1, 1], &[3.0]),
    );
    assert_data(&g[0], &[0.0, 1.5, 1.5, 0.0]);
}

#[test]
fn maximum_and_minimum_split_ties_between_operands() {
    let src = "input a: f32[N]\ninput b: f32[N]\ny = maximum(a, b)\noutput y\n";
    let g = grads(
        src,
        &[t(&[3], &[1.0, 2.0, 3.0]), t(&[3], &[1.0, 5.0, 0.0])],
        &t(&[3], &[1.0, 1.0, 1.0]),
    );
    assert_data(&g[0], &[0.5, 0.0, 1.0]);
    assert_data(&g[1], &[0.5, 1.0, 0.0]);
    // maximum(x, x): both halves reach x.
    let g = grads(
        "input x: f32[N]\ny = minimum(x, x)\noutput y\n",
        &[t(&[2], &[1.0, -2.0])],
        &t(&[2], &[4.0, 6.0]),
    );
    assert_data(&g[0], &[4.0, 6.0]);
}

/// relu(x) = maximum(x, 0): at the kink the number wins the tie and x gets no
/// gradient, torch's relu'(0) = 0; likewise a clamp from above with `minimum`.
#[test]
fn a_tie_with_a_number_gives_the_tensor_no_gradient() {
    let g = grads(
        "input x: f32[N]\ny = maximum(x, 0.0)\noutput y\n",
        &[t(&[4], &[-1.0, 0.0, 2.0, -0.0])],
        &t(&[4], &[1.0, 1.0, 1.0, 1.0]),
    );
    assert_data(&g[0], &[0.0, 0.0, 1.0, 0.0]);
    let g = grads(
        "input x: f32[N]\ny = minimum(6.0, x)\noutput y\n",
        &[t(&[3], &[6.0, 7.0, 5.0])],
        &t(&[3], &[2.0, 2.0, 2.0]),
    );
    assert_data(&g[0], &[0.0, 0.0, 2.0]);
}

#[test]
fn max_scatter_splits_ties_and_routes_to_the_winner() {
    // Targets: 0 <- x0, x2 (tie at 3); 1 <- x1, x3 (x1 = 2 wins).
    let g = grads(
        "input x: f32[N]\ny = reindex_reduce(x, [2], [i0 % 2], op=\"max\")\noutput y\n",
        &[t(&[4], &[3.0, 2.0, 3.0, 1.0])],
        &t(&[2], &[2.0, 4.0]),
    );
    assert_data(&g[0], &[1.0, 4.0, 1.0, 0.0]);
}

#[test]
fn diagonal_read_sends_gradient_to_the_diagonal_only() {
    let g = grads(
        "input x: f32[N, N]\ny = reindex(x, [N], [i0, i0])\noutput y\n",
        &[t(&[3, 3], &[0.0; 9])],
        &t(&[3], &[1.0, 2.0, 3.0]),
    );
    assert_data(&g[0], &[1.0, 0.0, 0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 3.0]);
}

#[test]
fn repeated_reads_sum_their_gradients() {
    let g = grads(
        "input x: f32[N]\ny = reindex(x, [N, 2], [i0])\noutput y\n",
        &[t(&[2], &[0.0, 0.0])],
        &t(&[2, 2], &[1.0, 2.0, 3.0, 4.0]),
    );
    assert_data(&g[0], &[3.0, 7.0]);
}

#[test]
fn reads_that_took_the_fill_value_pass_no_gradient() {
    let g = grads(
        "input x: f32[N]\ny = reindex(x, [N + 2], [i0 - 1], fill=7.0)\noutput y\n",
        &[t(&[2], &[5.0, 6.0])],
        &t(&[4], &[1.0, 2.0, 3.0, 4.0]),
    );
    assert_data(&g[0], &[2.0, 3.0]);
}

#[test]
fn add_scatter_with_collisions_gathers_each_targets_gradient() {
    let g = grads(
        "input x: f32[N]\ny = reindex_reduce(x, [2], [i0 % 2])\noutput y\n",
        &[t(&[5], &[1.0, 2.0, 3.0, 4.0, 5.0])],
        &t(&[2], &[10.0, 20.0]),
    );
    assert_data(&g[0], &[10.0, 20.0, 10.0, 20.0, 10.0]);
    // Targets outside the output were dropped: no gradient.
    let g = grads(
        "input x: f32[N]\ny = reindex_reduce(x, [2], [i0 - 1])\noutput y\n",
        &[t(&[4], &[1.0, 2.0, 3.0, 4.0])],
        &t(&[2], &[10.0, 20.0]),
    );
    assert_data(&g[0], &[0.0, 10.0, 20.0, 0.0]);
}

#[test]
fn select_with_repeated_and_out_of_range_indices() {
    // idx 0 twice: both seeds reach x[0]; -1 and 4 are out of range and give nothing.
    let g = grads(
        "input x: f32[R, N]\ninput i: i32[R, M]\ny = select(x, i, axis=1)\noutput y\n",
        &[
            t(&[1, 4], &[1.0, 2.0, 3.0, 4.0]),
            idx(&[1, 5], &[0.0, 0.0, 3.0, -1.0, 4.0]),
        ],
        &t(&[1, 5], &[1.0, 2.0, 3.0, 4.0, 5.0]),
    );
    assert_data(&g[0], &[3.0, 0.0, 0.0, 3.0]);
}

#[test]
fn reduce_prod_with_no_one_or_two_zeros() {
    let g = grads(
        "input x: f32[R, N]\ny = reduce_prod(x, [1])\noutput y\n",
        &[t(&[3, 3], &[2.0, 3.0, 4.0, 2.0, 0.0, 4.0, 0.0, 3.0, 0.0])],
        &t(&[3, 1], &[1.0, 1.0, 1.0]),
    );
    assert_data(&g[0], &[12.0, 8.0, 6.0, 0.0, 8.0, 0.0, 0.0, 0.0, 0.0]);
}

#[test]
fn reduce_mean_divides_by_the_symbolic_count() {
    let g = grads(
        "input x: f32[R, N]\ny = reduce_mean(x, [1])\noutput y\n",
        &[t(&[2, 3], &[0.0; 6])],
        &t(&[2, 1], &[3.0, 6.0]),
    );
    assert_data(&g[0], &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
}

#[test]
fn piecewise_constant_ops_have_zero_gradient() {
    for (body, out_len) in [
        ("floor(x)", 3),
        ("sign(x)", 3),
        ("gt(x, 0.5)", 3),
        ("where(x, 1.0, 2.0)", 3),
        ("reduce_argmax(x, [0])", 1),
    ] {
        let g = grads(
            &format!("input x: f32[N]\ny = {body}\noutput y\n"),
            &[t(&[3], &[0.25, 1.5, -2.0])],
            &t(&[out_len], &vec![1.0; out_len]),
        );
        assert_data(&g[0], &[0.0, 0.0, 0.0]);
    }
}
