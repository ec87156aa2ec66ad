//! Cranelift backend benchmarks: how long JIT compilation takes (lowering, passes
//! and code generation, no cache) for the example programs and a few micro-op
//! programs, and how fast the JIT kernels run on larger workloads.
//!
//! `cargo bench --bench cranelift` (add a filter such as `compile` or `run/` to pick
//! a group). Runs are kept short: few samples, short measurement windows.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use uop::codegen::backend::cranelift::{self, Input, Kernel, Options, Output};
use uop::codegen::text::{Registry, parse_program};
use uop::codegen::uop::Program;

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

const MICRO: &[(&str, &str)] = &[
    ("neg", "input x: f32[N]\ny = neg(x)\noutput y\n"),
    (
        "gelu",
        "input x: f32[N]\ny = mul(mul(x, 0.5), add(erf(mul(x, 0.70710678)), 1.0))\noutput y\n",
    ),
    (
        "row_sum",
        "input x: f32[M, N]\ns = reduce_sum(x, [1])\noutput s\n",
    ),
    (
        "transpose",
        "input x: f32[M, N]\ny = reindex(x, [N, M], [i1, i0])\noutput y\n",
    ),
];

fn compile_latency(c: &mut Criterion) {
    let mut group = c.benchmark_group("compile");
    group
        .sample_size(20)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/programs");
    let mut programs: Vec<(String, Program)> = MICRO
        .iter()
        .map(|(name, src)| (name.to_string(), parse(src)))
        .collect();
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("examples/programs")
        .flatten()
        .map(|e| e.path())
        .collect();
    paths.sort();
    for path in paths {
        let src = std::fs::read_to_string(&path).expect("readable");
        let name = path
            .file_stem()
            .expect("stem")
            .to_string_lossy()
            .into_owned();
        programs.push((name, parse(&src)));
    }
    for (name, program) in &programs {
        group.bench_function(name.as_str(), |b| {
            b.iter(|| {
                let optimized = cranelift::optimized(black_box(program)).expect("optimizes");
                cranelift::compile_uncached(&optimized, &Options::default()).expect("compiles")
            })
        });
    }
    group.finish();
}

/// A workload: a program, its f32 inputs' shapes and its params.
struct Workload {
    name: &'static str,
    src: &'static str,
    shapes: Vec<Vec<usize>>,
}

fn workloads() -> Vec<Workload> {
    vec![
        Workload {
            name: "gelu_chain_4M",
            src: "input x: f32[N]\ny = mul(mul(x, 0.5), add(erf(mul(x, 0.70710678)), 1.0))\noutput y\n",
            shapes: vec![vec![1 << 22]],
        },
        Workload {
            name: "softmax_4096x1024",
            src: include_str!("../examples/programs/softmax.uop"),
            shapes: vec![vec![4096, 1024]],
        },
        Workload {
            name: "layernorm_4096x1024",
            src: include_str!("../examples/programs/layer_norm.uop"),
            shapes: vec![vec![4096, 1024], vec![1024], vec![1024]],
        },
        Workload {
            name: "sum_16M",
            src: "input x: f32[N]\ns = reduce_sum(x, [0])\noutput s\n",
            shapes: vec![vec![1 << 24]],
        },
        Workload {
            name: "column_sum_4096x1024",
            src: "input x: f32[M, N]\ns = reduce_sum(x, [0])\noutput s\n",
            shapes: vec![vec![4096, 1024]],
        },
        Workload {
            name: "matmul_512",
            src: include_str!("../examples/programs/matmul.uop"),
            shapes: vec![vec![512, 512], vec![512, 512]],
        },
        Workload {
            name: "conv2d_8x64x56x56_k3",
            src: include_str!("../examples/programs/conv_two_sources.uop"),
            shapes: vec![vec![8, 56, 56, 64], vec![64, 3, 3, 64]],
        },
        Workload {
            name: "transpose_1024",
            src: "input x: f32[M, N]\ny = reindex(x, [N, M], [i1, i0])\noutput y\n",
            shapes: vec![vec![1024, 1024]],
        },
    ]
}

fn run_kernel(
    kernel: &Kernel,
    inputs: &[Vec<f32>],
    shapes: &[Vec<usize>],
    outputs: &mut [Vec<f32>],
) {
    let args: Vec<(Input<'_>, &[usize])> = inputs
        .iter()
        .zip(shapes)
        .map(|(v, s)| (Input::F32(v), s.as_slice()))
        .collect();
    let mut outs: Vec<Output<'_>> = outputs.iter_mut().map(|v| Output::F32(v)).collect();
    kernel
        .run_slices(&args, &HashMap::new(), &mut outs)
        .expect("runs");
}

fn run_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("run");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    for w in workloads() {
        let kernel =
            cranelift::compile_program(&parse(w.src), &Options::default()).expect("compiles");
        let inputs: Vec<Vec<f32>> = w
            .shapes
            .iter()
            .map(|s| {
                let n: usize = s.iter().product();
                (0..n).map(|k| ((k % 97) as f32) * 0.02 - 1.0).collect()
            })
            .collect();
        let shape_refs: Vec<&[usize]> = w.shapes.iter().map(Vec::as_slice).collect();
        let out_shapes = kernel
            .output_shapes(&shape_refs, &HashMap::new())
            .expect("shapes fit");
        let mut outputs: Vec<Vec<f32>> = out_shapes
            .iter()
            .map(|s| vec![0.0; s.iter().product()])
            .collect();
        group.bench_function(w.name, |b| {
            b.iter(|| run_kernel(&kernel, &inputs, &w.shapes, &mut outputs))
        });
    }
    group.finish();
}

criterion_group!(benches, compile_latency, run_time);
criterion_main!(benches);
