//! Whole graphs ahead of time (issue 24, `uop_graph::emit`) against the JIT graph
//! executor (`uop::exec`), on the reference graphs of `examples/graphs` (mlp,
//! layernorm, conv_block, transformer_block, at the sizes of the README's memory
//! table; the transformer block at jax's T = 64, D = 64, F = 256) and the RNN of
//! `examples/graph_grad/rnn.uop` (T = 200, E = H = 32), and against the sum of the
//! AOT module's kernel times, which gives the AOT path's overhead per kernel call.
//!
//! The bench writes the graphs as Rust into a scratch crate (each twice: as is, and
//! with every kernel called through `rt::graph::clocked`, which sums the kernels'
//! times; the clocked run's time outside its kernels, per kernel call, is the
//! overhead per node — an upper bound, as it includes the clock's two
//! `Instant::now`), builds it once (`cargo build --release`, a minute or two the first time),
//! then alternates rounds: the executor in this process, the AOT module in the
//! scratch binary (which times its own loop, so its start is not counted). Same
//! shapes and data formula on both sides; each side's first call (workspace,
//! executor caches) is not timed. The executor returns new output tensors per call,
//! the AOT function writes into the caller's buffers.
//!
//! `taskset -c 0 cargo bench --bench graph_aot` (one core: the kernels' worker pool
//! then has one thread on both sides). `UOP_AOT_BENCH_ROUNDS=N` sets the rounds (5);
//! with `UOP_AOT_BENCH_JAX=1` each round also runs `benches/jax_transformer_block.py`
//! (jax.jit's later calls of the same transformer block; `pip install jax`).

mod common;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use uop::codegen::build::write_if_changed;
use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop_graph::Graph;
use uop_graph::default_registry;
use uop_graph::emit::GraphModule;
use uop_graph::text::parse_graph;

/// One graph of the bench.
struct Case {
    name: &'static str,
    file: &'static str,
    /// Every input's shape, in declaration order.
    shapes: Vec<Vec<usize>>,
    /// Each input's scale (the data is `scale × [-1, 1)`).
    scales: Vec<f64>,
    params: Vec<(&'static str, i64)>,
}

fn cases() -> Vec<Case> {
    let (t, d, f) = (64, 64, 256);
    let ones = |n: usize| vec![1.0; n];
    vec![
        Case {
            name: "mlp",
            file: "examples/graphs/mlp.uop",
            shapes: vec![
                vec![64, 784],
                vec![784, 256],
                vec![256],
                vec![256, 256],
                vec![256],
                vec![256, 10],
                vec![10],
            ],
            scales: ones(7),
            params: vec![],
        },
        Case {
            name: "layernorm",
            file: "examples/graphs/layernorm.uop",
            shapes: vec![vec![128, 256], vec![256], vec![256]],
            scales: ones(3),
            params: vec![],
        },
        Case {
            name: "conv_block",
            file: "examples/graphs/conv_block.uop",
            shapes: vec![vec![8, 16, 32, 32], vec![32, 16, 3, 3], vec![32]],
            scales: ones(3),
            params: vec![],
        },
        Case {
            name: "transformer_block",
            file: "examples/graphs/transformer_block.uop",
            shapes: common::transformer_block_shapes(t, d, f),
            scales: ones(13),
            params: vec![],
        },
        Case {
            name: "rnn",
            file: "examples/graph_grad/rnn.uop",
            shapes: vec![vec![200, 32], vec![1, 32], vec![32, 32], vec![32, 32]],
            scales: vec![1.0, 1.0, 0.2, 0.2],
            params: vec![("steps", 200)],
        },
    ]
}

/// Element `i` of input `k`: the same formula here and in the scratch crate.
const DATA: &str = "((i.wrapping_mul(2654435761) ^ (k * 40503)) % 2000) as f64 / 1000.0 - 1.0";

fn data(k: usize, n: usize, scale: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let v = ((i.wrapping_mul(2654435761) ^ (k * 40503)) % 2000) as f64 / 1000.0 - 1.0;
            DType::F32.round(v * scale)
        })
        .collect()
}

fn parse(path: &Path) -> Graph {
    let text = std::fs::read_to_string(path).expect("graph file");
    parse_graph(&text, default_registry()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The scratch crate's function timing case `c`: `fn NAME(iters) -> (aot_ns,
/// kernel_ns, kernel_calls)` per call.
fn runner(c: &Case, out_lens: &[usize]) -> String {
    let mut f = String::new();
    let _ = writeln!(f, "fn {}(iters: u32) -> (f64, f64, f64, f64) {{", c.name);
    let mut args = Vec::new();
    for (k, (shape, scale)) in c.shapes.iter().zip(&c.scales).enumerate() {
        let n: usize = shape.iter().product();
        let _ = writeln!(
            f,
            "    let in{k}: Vec<f32> = (0..{n}usize).map(|i| {{ let k = {k}usize; ({DATA}) as f32 * {scale:?} }}).collect();"
        );
        args.push(format!("&in{k}, {shape:?}"));
    }
    for (_, v) in &c.params {
        args.push(format!("{v}_i64"));
    }
    for (k, n) in out_lens.iter().enumerate() {
        let _ = writeln!(f, "    let mut out{k} = vec![0.0f32; {n}];");
        args.push(format!("&mut out{k}"));
    }
    let args = args.join(", ");
    let (m, camel) = (c.name, camel(c.name));
    let _ = writeln!(
        f,
        "    let mut ws = {m}::{camel}Workspace::new();\n    \
         {m}::{m}(&mut ws, {args}).expect(\"runs\");\n    \
         let start = Instant::now();\n    \
         for _ in 0..iters {{ {m}::{m}(black_box(&mut ws), {args}).expect(\"runs\"); }}\n    \
         let aot = start.elapsed().as_nanos() as f64 / f64::from(iters);\n    \
         let mut ws = {m}_clocked::{camel}Workspace::new();\n    \
         {m}_clocked::{m}(&mut ws, {args}).expect(\"runs\");\n    \
         rt::graph::kernel_clock();\n    \
         let start = Instant::now();\n    \
         for _ in 0..iters {{ {m}_clocked::{m}(black_box(&mut ws), {args}).expect(\"runs\"); }}\n    \
         let clocked = start.elapsed().as_nanos() as f64 / f64::from(iters);\n    \
         let (ns, calls) = rt::graph::kernel_clock();\n    \
         (aot, clocked, ns as f64 / f64::from(iters), calls as f64 / f64::from(iters))\n}}"
    );
    f
}

fn camel(name: &str) -> String {
    uop::codegen::backend::names::camel(name)
}

/// Writes `text` unless the file already holds it (so cargo sees no change).
fn write(path: &Path, text: &str) {
    write_if_changed(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// Emits every case (as is and clocked) into the scratch crate and builds it; the
/// binary's path.
fn build(root: &Path, cases: &[Case], out_lens: &[Vec<usize>]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("uop_graph_aot_bench");
    let manifest = format!(
        "[package]\nname = \"uop_graph_aot_bench\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
         [dependencies]\nuop-runtime = {{ path = {:?} }}\n\n[profile.release]\ndebug = false\n\n[workspace]\n",
        root.join("runtime")
    );
    std::fs::create_dir_all(dir.join("src")).expect("scratch dir");
    write(&dir.join("Cargo.toml"), &manifest);
    let mut main = String::from(
        "// The generated modules' API is wider than this driver uses (`arena_len`).\n\
         #![allow(dead_code)]\n\n\
         use std::hint::black_box;\nuse std::time::Instant;\nuse uop_runtime as rt;\n\n",
    );
    for c in cases {
        let graph = parse(&root.join(c.file));
        for clocked in [false, true] {
            let mut module = GraphModule::new(Default::default());
            module.clock_kernels(clocked);
            module.add(c.name, &graph, None).expect("emits");
            let suffix = if clocked { "_clocked" } else { "" };
            let file = format!("{}{suffix}", c.name);
            write(
                &dir.join(format!("src/{file}.rs")),
                &module.source().expect("source"),
            );
            let _ = writeln!(main, "mod {file};");
        }
    }
    for (c, lens) in cases.iter().zip(out_lens) {
        main.push('\n');
        main.push_str(&runner(c, lens));
        main.push('\n');
    }
    main.push_str("\nfn main() {\n    let args: Vec<String> = std::env::args().collect();\n    let iters: u32 = args[2].parse().expect(\"iterations\");\n    let (aot, clocked, kernels, calls) = match args[1].as_str() {\n");
    for c in cases {
        let _ = writeln!(main, "        {:?} => {}(iters),", c.name, c.name);
    }
    main.push_str("        other => panic!(\"no graph {other}\"),\n    };\n    println!(\"{aot} {clocked} {kernels} {calls}\");\n}\n");
    write(&dir.join("src/main.rs"), &main);
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("generated_crates_target");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--release", "--offline", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", &target)
        .env_remove("RUSTFLAGS")
        .status()
        .expect("run cargo");
    assert!(status.success(), "the scratch crate does not build");
    target.join("release/uop_graph_aot_bench")
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; a filter picks graphs by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let rounds: usize = std::env::var("UOP_AOT_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| filter.is_empty() || filter.iter().any(|f| c.name.contains(f.as_str())))
        .collect();
    // The executors, their inputs, and the outputs' lengths (from a first run).
    let mut runs = Vec::new();
    let mut out_lens = Vec::new();
    for c in &cases {
        let graph = parse(&root.join(c.file));
        let inputs: Vec<Tensor> = c
            .shapes
            .iter()
            .zip(&c.scales)
            .enumerate()
            .map(|(k, (s, &scale))| {
                let n = s.iter().product();
                Tensor::new(DType::F32, s.clone(), data(k, n, scale)).expect("input")
            })
            .collect();
        let params: HashMap<String, i64> =
            c.params.iter().map(|(p, v)| (p.to_string(), *v)).collect();
        let exe = uop::exec::compile(&graph).expect("compiles");
        let start = Instant::now();
        let outputs = exe.run_with_params(&inputs, &params).expect("runs");
        let once = start.elapsed().as_secs_f64();
        // About 0.3 s a round per side.
        let iters = ((0.3 / once.max(1e-7)) as u32).clamp(3, 100_000);
        out_lens.push(outputs.iter().map(|t| t.data.len()).collect());
        runs.push((exe, inputs, params, iters));
    }
    let binary = build(&root, &cases, &out_lens);
    let mut jit = vec![Vec::new(); cases.len()];
    let mut aot = vec![Vec::new(); cases.len()];
    let mut kernels = vec![Vec::new(); cases.len()];
    let mut overhead = vec![Vec::new(); cases.len()];
    let mut calls = vec![0.0; cases.len()];
    let with_jax = std::env::var_os("UOP_AOT_BENCH_JAX").is_some()
        && cases.iter().any(|c| c.name == "transformer_block");
    let mut jax = Vec::new();
    for _ in 0..rounds {
        if with_jax {
            jax.push(jax_later_calls(&root));
        }
        for (k, (c, (exe, inputs, params, iters))) in cases.iter().zip(&runs).enumerate() {
            let start = Instant::now();
            for _ in 0..*iters {
                std::hint::black_box(exe.run_with_params(inputs, params).expect("runs"));
            }
            jit[k].push(start.elapsed().as_nanos() as f64 / f64::from(*iters));
            let out = Command::new(&binary)
                .args([c.name, &iters.to_string()])
                .output()
                .expect("run the scratch binary");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            let v: Vec<f64> = text
                .split_whitespace()
                .map(|x| x.parse().expect("a number"))
                .collect();
            aot[k].push(v[0]);
            // The clocked run's time outside its kernels, per kernel call: the graph
            // function's own work plus the clock's (two `Instant::now`).
            overhead[k].push((v[1] - v[2]) / v[3].max(1.0));
            kernels[k].push(v[2]);
            calls[k] = v[3];
        }
    }
    println!(
        "{:<18} {:>12} {:>12} {:>8} {:>12} {:>8} {:>14}",
        "graph", "JIT µs", "AOT µs", "AOT/JIT", "kernels µs", "calls", "overhead/call"
    );
    for (k, c) in cases.iter().enumerate() {
        let (j, a, s) = (
            median(&mut jit[k]) / 1e3,
            median(&mut aot[k]) / 1e3,
            median(&mut kernels[k]) / 1e3,
        );
        println!(
            "{:<18} {j:>12.1} {a:>12.1} {:>8.2} {s:>12.1} {:>8.0} {:>11.0} ns",
            c.name,
            a / j,
            calls[k],
            median(&mut overhead[k])
        );
    }
    if !jax.is_empty() {
        println!(
            "{:<18} {:>12.1}   (jax.jit, median of 50 later calls, median of {rounds} rounds)",
            "transformer_block",
            median(&mut jax)
        );
    }
    println!(
        "(medians of {rounds} alternating rounds; kernels: the clocked module's time in \
         kernels; overhead/call: its time outside them per kernel call, the clock included)"
    );
}

/// jax.jit's median later call of the transformer block, µs, from
/// `benches/jax_transformer_block.py` (run when `UOP_AOT_BENCH_JAX` is set).
fn jax_later_calls(root: &Path) -> f64 {
    let out = Command::new("python3")
        .arg(root.join("benches/jax_transformer_block.py"))
        .output()
        .expect("run python3 (pip install jax)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("jax.jit later calls (median of 50): "))
        .and_then(|v| v.trim_end_matches(" us").parse().ok())
        .expect("the script prints its later calls")
}
