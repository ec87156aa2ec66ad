//! Gradients through a `while` (issue 23): `examples/graph_grad/rnn.uop`, an RNN of
//! T = 200 steps `h <- tanh(h W + x_t U)` with H = E = 32, on the graph executor.
//!
//! - `graph_grad/rnn/forward`: the forward graph alone;
//! - `graph_grad/rnn/stack`: the gradient graph with the stack tape (its recording
//!   forward loop and the backward loop: forward + backward);
//! - `graph_grad/rnn/recompute`: the same with the recompute tape.
//!
//! Prints the tape bytes of each choice first. Compare with
//! `python3 benches/jax_rnn_grad.py` (`jax.lax.scan` + `jax.grad`), both pinned to
//! one core: `taskset -c 0 cargo bench --bench graph_grad`.

use std::collections::HashMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop_graph::grad::{GraphGradSpec, TapeMode, gradient};
use uop_graph::text::parse_graph;
use uop_graph::{RunOptions, default_registry, run_with};

const T: usize = 200;
const H: usize = 32;
const E: usize = 32;

fn rnn(c: &mut Criterion) {
    let src = std::fs::read_to_string("examples/graph_grad/rnn.uop").expect("example");
    let g = parse_graph(&src, default_registry()).expect("parses");
    let scaled = |shape: Vec<usize>, seed: u64, s: f64| {
        let mut t = Tensor::random(DType::F32, shape, seed);
        t.data
            .iter_mut()
            .for_each(|v| *v = DType::F32.round(*v * s));
        t
    };
    let inputs = vec![
        scaled(vec![T, E], 1, 1.0),
        scaled(vec![1, H], 2, 1.0),
        scaled(vec![H, H], 3, 0.2),
        scaled(vec![E, H], 4, 0.2),
    ];
    let mut params = HashMap::new();
    params.insert("steps".to_string(), T as i64);
    let fwd = run_with(&g, &inputs, &params, &RunOptions::default()).expect("forward");
    let seed = Tensor::filled(DType::F32, vec![1, 1], 1.0);
    let exe = uop::exec::compile(&g).expect("compiles");
    let mut group = c.benchmark_group("graph_grad/rnn");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("forward", |b| {
        b.iter(|| {
            exe.run_with_params(black_box(&inputs), &params)
                .expect("runs")
        })
    });
    for tape in [TapeMode::Stack, TapeMode::Recompute] {
        let spec = GraphGradSpec {
            tape,
            ..GraphGradSpec::all(&g)
        };
        let grad = gradient(&g, &spec).expect("gradient graph");
        let args = grad
            .arguments(&inputs, std::slice::from_ref(&seed), &fwd.outputs)
            .expect("arguments");
        let p = grad.params(&fwd.trace, &params);
        let bytes = grad
            .tape_bytes(&g, &inputs, &fwd.trace, &params)
            .expect("tape bytes");
        let exe = uop::exec::compile(&grad.graph).expect("compiles");
        exe.run_with_params(&args, &p).expect("runs");
        eprintln!(
            "rnn T={T} H={H}: tape {}: {bytes} tape bytes, arena {} bytes",
            tape.name(),
            exe.arena_bytes()
        );
        group.bench_function(tape.name(), |b| {
            b.iter(|| exe.run_with_params(black_box(&args), &p).expect("runs"))
        });
    }
    group.finish();
}

criterion_group!(benches, rnn);
criterion_main!(benches);
