//! The generated `rnn_head` against the graph interpreter on the same model file,
//! for both heads and several sequence lengths, and the runtime's errors for what
//! the model refuses (never a panic).

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_example_graph_aot::{Head, KernelError, Model, RnnHeadWorkspace, rnn_head};
use uop_graph::text::parse_graph;
use uop_graph::{default_registry, run};

const MODEL: &str = include_str!("../model/rnn_head.uop");
const E: usize = 3;
const H: usize = 5;
const K: usize = 4;

/// Deterministic values in [-1, 1).
fn values(n: usize, seed: u32) -> Vec<f32> {
    (0..n)
        .map(|i| {
            let x = (i as u32)
                .wrapping_mul(2_654_435_761)
                .wrapping_add(seed.wrapping_mul(40_503));
            (x % 2000) as f32 / 1000.0 - 1.0
        })
        .collect()
}

fn tensor(shape: &[usize], data: &[f32]) -> Tensor {
    let data = data.iter().map(|&v| f64::from(v)).collect();
    Tensor::new(DType::F32, shape.to_vec(), data).expect("consistent")
}

fn model() -> Model {
    Model::new(
        values(H, 1),
        values(H * H, 2).iter().map(|v| v * 0.5).collect(),
        values(E * H, 3),
        values(H * K, 4),
        [E, H, K],
    )
}

/// What the graph interpreter computes for the model file.
fn reference(m: &Model, xs: &[f32], steps: usize, head: f32) -> Vec<f64> {
    let graph = parse_graph(MODEL, default_registry()).expect("the model parses");
    let inputs = [
        tensor(&[steps, E], xs),
        tensor(&[1, H], &m.h0),
        tensor(&[H, H], &m.w),
        tensor(&[E, H], &m.u),
        tensor(&[H, K], &m.v),
        tensor(&[], &[head]),
    ];
    let params = HashMap::from([("steps".to_string(), steps as i64)]);
    let mut out = run(&graph, &inputs, &params).expect("the interpreter runs");
    out.remove(0).data
}

#[test]
fn both_heads_give_the_interpreters_results_for_several_lengths() {
    let mut m = model();
    for steps in [1, 2, 7, 16] {
        let xs = values(steps * E, steps as u32);
        for (head, selector) in [(Head::Logits, 0.0), (Head::Probabilities, 1.0)] {
            let expected = reference(&m, &xs, steps, selector);
            // Twice on the model's one workspace: the same result.
            for _ in 0..2 {
                let y = m.run(&xs, steps, head).expect("runs");
                assert_eq!(y.len(), K);
                for (found, want) in y.iter().zip(&expected) {
                    let tolerance = 1e-5 * want.abs().max(1.0);
                    assert!(
                        (f64::from(*found) - want).abs() <= tolerance,
                        "{steps} steps, {head:?}: {y:?} vs {expected:?}"
                    );
                }
            }
        }
    }
    let probs = m
        .run(&values(3 * E, 9), 3, Head::Probabilities)
        .expect("runs");
    assert!((probs.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{probs:?}");
}

/// The generated function on `m`'s weights, a sequence of `xs.len() / E` rows, the
/// selector `head` and `steps` steps.
fn call_rnn_head(m: &Model, xs: &[f32], head: f32, steps: i64) -> Result<Vec<f32>, KernelError> {
    let mut y = vec![0.0; K];
    rnn_head(
        &mut RnnHeadWorkspace::new(),
        xs,
        [xs.len() / E, E],
        &m.h0,
        [1, H],
        &m.w,
        [H, H],
        &m.u,
        [E, H],
        &m.v,
        [H, K],
        &[head],
        [],
        steps,
        &mut y,
    )?;
    Ok(y)
}

#[test]
fn what_the_model_refuses_is_an_error_naming_it() {
    let mut m = model();
    // A sequence whose length is not its shape's.
    let e = m
        .run(&values(4 * E, 1), 3, Head::Logits)
        .expect_err("4 rows, not 3");
    assert!(matches!(e, KernelError::Length { .. }), "{e}");
    // A sequence of T rows run for another number of steps: the graph's
    // `assert T == $steps`, checked at entry.
    let xs = values(4 * E, 1);
    let e = call_rnn_head(&m, &xs, 0.0, 3).expect_err("T != steps");
    assert!(matches!(e, KernelError::Assertion { .. }), "{e}");
    // A head that is neither 0 nor 1: the `case` refuses its selector.
    let e = call_rnn_head(&m, &xs, 2.0, 4).expect_err("no branch 2");
    let message = e.to_string();
    assert!(message.starts_with("rnn_head: %"), "{message}");
    assert!(
        message.ends_with(": the selector is 2, but there are 2 branches"),
        "{message}"
    );
    // A sequence with rows of the wrong width.
    let e = m
        .run(&values(7, 1), 1, Head::Logits)
        .expect_err("not E wide");
    assert!(e.to_string().starts_with("rnn_head: "), "{e}");
    // Weights of the wrong shape.
    m.w.pop();
    let e = m
        .run(&values(2 * E, 1), 2, Head::Logits)
        .expect_err("w too short");
    assert!(e.to_string().contains("`w`"), "{e}");
}
