//! The nine speed workloads of issue 8 (`../shared/bench/README.md`, the names and
//! sizes of `peers.py`), the same definitions `uop bench` times: the prebuilt
//! Rust-backend kernels on one and on two threads, and the Cranelift JIT kernels
//! (single-threaded; compiled outside the timed region).
//!
//! `cargo bench --bench workloads` (a filter such as `matmul_512` picks one
//! workload; `rust_t2` the two-thread runs). Few samples: the naive references are
//! not timed here, `uop bench` prints them side by side.

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use uop::bench::{NAMES, Workload, run_jit};
use uop::kernels;

fn workloads(c: &mut Criterion) {
    let mut g = c.benchmark_group("workloads");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for name in NAMES {
        let w = Workload::named(name, false).unwrap_or_else(|e| panic!("{name}: {e}"));
        let data = w.data(0);
        let mut y = uop::AlignedVec::<f32>::zeroed(w.output_len());
        let scratch = uop_runtime::Scratch::new();
        for threads in [1, 2] {
            kernels::set_threads(threads);
            g.bench_function(format!("{name}/rust_t{threads}"), |b| {
                b.iter(|| w.run_rust(&data, &scratch, &mut y).expect("valid shapes"));
            });
        }
        kernels::set_threads(0);
        let kernel = w.compile_jit().unwrap_or_else(|e| panic!("{name}: {e}"));
        g.bench_function(format!("{name}/cranelift_t1"), |b| {
            b.iter(|| run_jit(&kernel, &data, &mut y).expect("valid shapes"));
        });
    }
    g.finish();
}

criterion_group!(benches, workloads);
criterion_main!(benches);
