//! Cranelift backend benchmarks: how long JIT compilation takes (lowering, passes
//! and code generation, no cache) for the example programs and a few micro-op
//! programs, and how fast the JIT kernels run on the workloads of
//! `benches/kernels.rs` (the Rust backend), under the same ids.
//!
//! `cargo bench --bench cranelift` (add a filter such as `compile` or `run/` to pick
//! a group). Runs are kept short: few samples, short measurement windows.

use std::collections::HashMap;
use std::hint::black_box;
use std::path::Path;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use uop::codegen::text::{Registry, parse_program};
use uop::codegen::uop::Program;
use uop::cranelift::{self, Input, Kernel, Options, Output};

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

/// Deterministic data in [-1, 1): the generator and seeds of `benches/kernels.rs`,
/// so both benches run on the same numbers.
fn data(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A workload of `benches/kernels.rs`: its id there, the `prebuilt/kernels/*.uop` program the
/// prebuilt kernel was generated from, and its inputs' shapes and data seeds.
struct Workload {
    id: &'static str,
    src: &'static str,
    inputs: Vec<(Vec<usize>, u64)>,
}

fn workloads() -> Vec<Workload> {
    let (rows, cols) = (4096, 1024);
    let (bn, ch, h, w, o) = (8, 64, 56, 56, 64);
    vec![
        Workload {
            id: "gelu_chain 4M",
            src: include_str!("../prebuilt/kernels/gelu_chain.uop"),
            inputs: vec![(vec![4 << 20], 1)],
        },
        Workload {
            id: "softmax 4096x1024",
            src: include_str!("../prebuilt/kernels/softmax.uop"),
            inputs: vec![(vec![rows, cols], 2)],
        },
        Workload {
            id: "layernorm 4096x1024",
            src: include_str!("../prebuilt/kernels/layernorm.uop"),
            inputs: vec![(vec![rows, cols], 2), (vec![cols], 3), (vec![cols], 4)],
        },
        Workload {
            id: "column_sum 4096x1024",
            src: include_str!("../prebuilt/kernels/column_sum.uop"),
            inputs: vec![(vec![rows, cols], 2)],
        },
        Workload {
            id: "sum 16M",
            src: include_str!("../prebuilt/kernels/sum.uop"),
            inputs: vec![(vec![16 << 20], 5)],
        },
        Workload {
            id: "matmul 512",
            src: include_str!("../prebuilt/kernels/matmul.uop"),
            inputs: vec![(vec![512, 512], 6), (vec![512, 512], 7)],
        },
        Workload {
            id: "conv2d 8x64x56x56 k3",
            src: include_str!("../prebuilt/kernels/conv2d.uop"),
            inputs: vec![(vec![bn, ch, h, w], 8), (vec![o, ch, 3, 3], 9)],
        },
        Workload {
            id: "transpose 1024",
            src: include_str!("../prebuilt/kernels/transpose.uop"),
            inputs: vec![(vec![1024, 1024], 10)],
        },
    ]
}

fn run_kernel(kernel: &Kernel, inputs: &[(Vec<usize>, Vec<f32>)], outputs: &mut [Vec<f32>]) {
    let args: Vec<(Input<'_>, &[usize])> = inputs
        .iter()
        .map(|(s, v)| (Input::F32(v), s.as_slice()))
        .collect();
    let mut outs: Vec<Output<'_>> = outputs.iter_mut().map(|v| Output::F32(v)).collect();
    kernel
        .run_slices(&args, &HashMap::new(), &mut outs)
        .expect("runs");
}

/// The workloads of `benches/kernels.rs` (same ids, sizes and data) on the same
/// `prebuilt/kernels/*.uop` programs, JIT-compiled with the default options outside the
/// timed region: `run/ID/jit` compares with `kernels/ID/uop`.
fn run_time(c: &mut Criterion) {
    let mut group = c.benchmark_group("run");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    let registry = uop::ops::registry();
    for w in workloads() {
        let program = parse_program(w.src, &registry).unwrap_or_else(|e| panic!("{e}"));
        let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
        let inputs: Vec<(Vec<usize>, Vec<f32>)> = w
            .inputs
            .iter()
            .map(|(shape, seed)| (shape.clone(), data(shape.iter().product(), *seed)))
            .collect();
        let shape_refs: Vec<&[usize]> = w.inputs.iter().map(|(s, _)| s.as_slice()).collect();
        let out_shapes = kernel
            .output_shapes(&shape_refs, &HashMap::new())
            .expect("shapes fit");
        let mut outputs: Vec<Vec<f32>> = out_shapes
            .iter()
            .map(|s| vec![0.0; s.iter().product()])
            .collect();
        group.bench_function(format!("{}/jit", w.id), |b| {
            b.iter(|| run_kernel(&kernel, black_box(&inputs), &mut outputs))
        });
    }
    group.finish();
}

criterion_group!(benches, compile_latency, run_time);
criterion_main!(benches);
