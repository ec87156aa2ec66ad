//! Peak memory of graph looping (DESIGN.md §20, issue 22): `examples/graphs/mlp.uop`
//! over a batch of 65,536 rows (D = 64, H = 512, O = 16) run whole and in chunks of
//! 1,024 rows (`examples/graphs/chunked_mlp.uop`) on the executor (Cranelift). Each
//! configuration runs in a fresh process (this binary runs itself), alternating
//! rounds; each child prints the memory plan's arena, its peak resident memory
//! (`VmHWM` from `/proc/self/status`) and the run's wall time.
//!
//! `taskset -c 0 cargo bench --bench chunk_memory` (a benchmark, not a test: the
//! figures go in the README).

use std::collections::HashMap;
use std::process::Command;
use std::time::Instant;

use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop_graph::default_registry;
use uop_graph::text::parse_graph;

const ROWS: usize = 65_536;
const CHUNK: usize = 1_024;
const D: usize = 64;
const H: usize = 512;
const O: usize = 16;
const ROUNDS: usize = 2;
const CHILD: &str = "UOP_CHUNK_MEMORY";

/// `VmHWM` of this process, in KiB.
fn peak_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// One configuration in this process: prints `arena_bytes peak_kib seconds`.
fn child(file: &str) {
    let src = std::fs::read_to_string(file).expect("example");
    let g = parse_graph(&src, default_registry()).expect("parses");
    let exe = uop::exec::compile(&g).expect("compiles");
    let inputs = vec![
        Tensor::random(DType::F32, vec![ROWS, D], 1),
        Tensor::random(DType::F32, vec![D, H], 2),
        Tensor::random(DType::F32, vec![H], 3),
        Tensor::random(DType::F32, vec![H, H], 4),
        Tensor::random(DType::F32, vec![H], 5),
        Tensor::random(DType::F32, vec![H, O], 6),
        Tensor::random(DType::F32, vec![O], 7),
    ];
    let plan = exe.memory_plan(&inputs, &HashMap::new()).expect("plans");
    let start = Instant::now();
    let out = exe.run(&inputs).expect("runs");
    let seconds = start.elapsed().as_secs_f64();
    assert_eq!(out[0].shape, [ROWS, O]);
    println!("{} {} {seconds}", plan.arena_bytes, peak_kib());
}

fn main() {
    if let Ok(file) = std::env::var(CHILD) {
        child(&file);
        return;
    }
    let me = std::env::current_exe().expect("this binary");
    let configs = [
        ("whole", "examples/graphs/mlp.uop"),
        ("chunks of 1024", "examples/graphs/chunked_mlp.uop"),
    ];
    let mut results: Vec<Vec<(u64, u64, f64)>> = vec![Vec::new(); configs.len()];
    for round in 0..ROUNDS {
        for k in 0..configs.len() {
            // Alternate the order each round.
            let k = if round % 2 == 0 {
                k
            } else {
                configs.len() - 1 - k
            };
            let o = Command::new(&me)
                .env(CHILD, configs[k].1)
                .output()
                .expect("runs itself");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            let text = String::from_utf8_lossy(&o.stdout);
            let v: Vec<&str> = text.split_whitespace().collect();
            results[k].push((
                v[0].parse().expect("arena"),
                v[1].parse().expect("peak"),
                v[2].parse().expect("seconds"),
            ));
        }
    }
    println!(
        "MLP {ROWS}x{D} -> {H} -> {H} -> {O}, chunks of {CHUNK}, {ROUNDS} rounds, one process each"
    );
    println!(
        "{:<16} {:>14} {:>14} {:>10}",
        "config", "arena MiB", "peak RSS MiB", "run s"
    );
    let mib = |b: f64| b / (1024.0 * 1024.0);
    let mut summary = Vec::new();
    for (k, (name, _)) in configs.iter().enumerate() {
        let r = &results[k];
        let arena = r[0].0 as f64;
        let peak = r.iter().map(|x| x.1).min().unwrap_or(0) as f64 * 1024.0;
        let secs = r.iter().map(|x| x.2).fold(f64::INFINITY, f64::min);
        println!(
            "{name:<16} {:>14.1} {:>14.1} {:>10.3}",
            mib(arena),
            mib(peak),
            secs
        );
        summary.push((arena, peak, secs));
    }
    let (w, c) = (summary[0], summary[1]);
    println!(
        "whole / chunked: arena {:.1}x, peak RSS {:.1}x, time {:.2}x",
        w.0 / c.0,
        w.1 / c.1,
        w.2 / c.2
    );
}
