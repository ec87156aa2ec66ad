//! Graph executor benchmarks (`uop::exec`):
//!
//! - `graph/one_kernel/{executor,jit}`: a graph that prepares to one kernel, run
//!   through the executor and its program run through `uop::jit` directly: the
//!   executor's overhead on one node;
//! - `graph/chain/{1,64}`: a chain of 1 and 64 `call`s each running one cheap kernel on
//!   16 elements: (t64 − t1) / 63 is the executor's per-node overhead;
//! - `graph/first_call/transformer_block`: parse, prepare, compile (JIT cache cleared
//!   first) and one run of `examples/graphs/transformer_block.uop` at T = 64, D = 64,
//!   F = 256 — compare with `python3 benches/jax_transformer_block.py`.
//!
//! `cargo bench --bench graph` (a filter such as `first_call` picks one group).

mod common;

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop_graph::text::parse_graph;
use uop_graph::{Graph, Op, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn vector(n: usize, seed: u64) -> Tensor {
    Tensor::random(DType::F32, vec![n], seed)
}

fn one_kernel(c: &mut Criterion) {
    let g = parse("input x: f32[N]\ninput y: f32[N]\nz = relu(add(mul(x, y), x))\noutput z\n");
    let exe = uop::exec::compile(&g).expect("compiles");
    assert_eq!(exe.kernel_count(), 1);
    let program = exe
        .graph()
        .nodes()
        .iter()
        .find_map(|n| match &n.op {
            Op::Kernel(k) => Some(k.program.clone()),
            _ => None,
        })
        .expect("one kernel");
    let kernel = uop::jit::compile(&program).expect("jit");
    let inputs = [vector(1 << 16, 1), vector(1 << 16, 2)];
    let params = std::collections::HashMap::new();
    let mut group = c.benchmark_group("graph/one_kernel");
    group.measurement_time(Duration::from_secs(3));
    group.bench_function("executor", |b| {
        b.iter(|| exe.run(black_box(&inputs)).expect("runs"))
    });
    group.bench_function("jit", |b| {
        b.iter(|| kernel.run(black_box(&inputs), &params).expect("runs"))
    });
    group.finish();
}

/// `n` calls of a one-kernel function in a chain.
fn chain(n: usize) -> Graph {
    let mut src = String::from("input x: f32[16]\nfn unit(v) { return add(mul(v, 0.5), 1) }\n");
    let mut last = "x".to_string();
    for k in 0..n {
        src.push_str(&format!("y{k} = call(unit, {last})\n"));
        last = format!("y{k}");
    }
    src.push_str(&format!("output {last}\n"));
    parse(&src)
}

fn per_node(c: &mut Criterion) {
    let mut group = c.benchmark_group("graph/chain");
    group.measurement_time(Duration::from_secs(3));
    let inputs = [vector(16, 3)];
    for n in [1usize, 64] {
        let exe = uop::exec::compile(&chain(n)).expect("compiles");
        group.bench_function(n.to_string(), |b| {
            b.iter(|| exe.run(black_box(&inputs)).expect("runs"))
        });
    }
    group.finish();
}

fn first_call(c: &mut Criterion) {
    let src = std::fs::read_to_string("examples/graphs/transformer_block.uop").expect("file");
    let (t, d, f) = (64, 64, 256);
    let shapes = common::transformer_block_shapes(t, d, f);
    let inputs: Vec<Tensor> = shapes
        .into_iter()
        .enumerate()
        .map(|(k, s)| Tensor::random(DType::F32, s, k as u64))
        .collect();
    let mut group = c.benchmark_group("graph/first_call");
    group.sample_size(10);
    group.bench_function("transformer_block", |b| {
        b.iter(|| {
            uop::jit::clear_cache();
            let exe = uop::exec::compile(&parse(&src)).expect("compiles");
            exe.run(black_box(&inputs)).expect("runs")
        })
    });
    group.finish();
}

criterion_group!(benches, one_kernel, per_node, first_call);
criterion_main!(benches);
