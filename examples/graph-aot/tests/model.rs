//! The generated `rnn_head` against the graph interpreter on the same model file,
//! for both heads and several sequence lengths, and the runtime's errors for what
//! the model refuses (never a panic); the chunk loops of `add_one` and `nested`
//! with the standard and custom loop ends, as the interpreter's loop stack runs them.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_example_graph_aot::{
    AddOneWorkspace, Head, KernelError, Model, NestedWorkspace, RnnHeadWorkspace, add_one,
    add_one_with_loop_ends, nested, nested_with_loop_ends, rnn_head,
};
use uop_graph::text::parse_graph;
use uop_graph::{default_registry, run};
use uop_runtime::graph::{LoopControl, LoopCounts, default_loop_end};

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

/// `0, 1, 2, ...`.
fn iota(n: usize) -> Vec<f32> {
    (0..n).map(|i| i as f32).collect()
}

/// What the interpreter computes for a model file on `x`.
fn interpreted(model: &str, x: &[f32]) -> Vec<f64> {
    let graph = parse_graph(model, default_registry()).expect("the model parses");
    let mut out = run(&graph, &[tensor(&[x.len()], x)], &HashMap::new()).expect("runs");
    out.remove(0).data
}

#[test]
fn chunk_loops_with_the_standard_loop_ends_give_the_interpreters_results() {
    let models = [
        include_str!("../model/add_one.uop"),
        include_str!("../model/nested.uop"),
    ];
    let mut ws = (AddOneWorkspace::new(), NestedWorkspace::new());
    // 0 rows (one empty chunk), a ragged last chunk, whole chunks.
    for n in [0, 1, 7, 8] {
        let x = iota(n);
        let mut y = vec![f32::NAN; n];
        add_one(&mut ws.0, &x, [n], &mut y).expect("runs");
        let want = interpreted(models[0], &x);
        assert_eq!(y.iter().map(|v| f64::from(*v)).collect::<Vec<_>>(), want);
        nested(&mut ws.1, &x, [n], &mut y).expect("runs");
        let want = interpreted(models[1], &x);
        assert_eq!(y.iter().map(|v| f64::from(*v)).collect::<Vec<_>>(), want);
    }
}

#[test]
fn a_custom_loop_end_that_stops_early_leaves_the_rest_zero() {
    // As the interpreter's test of the same name: the second loop end says done.
    let mut calls = 0;
    let mut stop_after_two = |_: &'static str, counts: &mut LoopCounts| {
        calls += 1;
        if calls < 2 {
            Ok(default_loop_end(counts))
        } else {
            Ok(LoopControl::Done)
        }
    };
    let mut y = vec![9.0; 7];
    add_one_with_loop_ends(
        &mut AddOneWorkspace::new(),
        &iota(7),
        [7],
        &mut y,
        &mut stop_after_two,
    )
    .expect("runs");
    assert_eq!(y, [1.0, 2.0, 3.0, 4.0, 0.0, 0.0, 0.0]);
}

#[test]
fn nested_loops_carry_the_inner_counts_across_outer_iterations() {
    // 7 rows: outer chunks of 4 (4, 3), inner chunks of 2 of each (2, 2 | 2, 1);
    // the inner loop's ends are called first, and its prev_outer_batches grows.
    let mut log: Vec<(&'static str, LoopCounts)> = Vec::new();
    let mut recording = |chunk: &'static str, counts: &mut LoopCounts| {
        let r = default_loop_end(counts);
        log.push((chunk, *counts));
        Ok(r)
    };
    let mut y = vec![0.0; 7];
    nested_with_loop_ends(
        &mut NestedWorkspace::new(),
        &iota(7),
        [7],
        &mut y,
        &mut recording,
    )
    .expect("runs");
    assert_eq!(y, [10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0]);
    let inner = log[0].0;
    let outer_batches: Vec<u64> = log
        .iter()
        .filter(|(c, _)| *c == inner)
        .map(|(_, c)| c.prev_outer_batches)
        .collect();
    assert_eq!(outer_batches, [0, 4, 4, 7]);
    assert_eq!(log.iter().filter(|(c, _)| *c != inner).count(), 2);
}

#[test]
fn a_loop_end_that_goes_on_past_the_input_or_fails_is_an_error_naming_the_chunk() {
    let mut go_on = |_: &'static str, counts: &mut LoopCounts| {
        counts.prev_batches += counts.current_batches;
        Ok(LoopControl::Again)
    };
    let mut y = vec![0.0; 3];
    let e = add_one_with_loop_ends(
        &mut AddOneWorkspace::new(),
        &iota(3),
        [3],
        &mut y,
        &mut go_on,
    )
    .expect_err("past the end");
    let message = e.to_string();
    assert!(message.starts_with("add_one: %"), "{message}");
    assert!(
        message.ends_with(
            ": the loop went on past the end of the input (3 rows, row 3 asked for): its loop-end function asked for another iteration"
        ),
        "{message}"
    );
    let mut fail = |_: &'static str, _: &mut LoopCounts| Err("out of tokens".to_string());
    let e = add_one_with_loop_ends(
        &mut AddOneWorkspace::new(),
        &iota(3),
        [3],
        &mut y,
        &mut fail,
    )
    .expect_err("fails");
    assert!(
        e.to_string()
            .ends_with(": loop-end function: out of tokens"),
        "{e}"
    );
}
