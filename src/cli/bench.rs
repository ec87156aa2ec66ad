//! `uop bench`: times the speed workloads of issue 8 (see [`crate::bench`]) on the
//! Rust backend's prebuilt kernels and on Cranelift JIT kernels, next to a naive Rust
//! loop nest run in the same process, and prints one table or JSON lines shaped like
//! `peers.py`'s (`workload`, `threads`, `ms`, `metric`, `unit`, ...). With `--graph
//! FILE` it times a whole graph on the graph executor instead (see [`super::bench_graph`]).

use std::fmt::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};

use super::{CliError, fail};
use crate::bench::{self, Measure, Reps, Workload};
use uop_runtime::{AlignedVec, LINE};

/// Which generated code `uop bench` times.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BenchBackend {
    /// The prebuilt kernels of `uop::kernels` (uop's Rust backend, compiled by rustc;
    /// in a `uop` built with the feature `prebuilt`).
    Rust,
    /// The same programs JIT-compiled by Cranelift (compiled before timing); with
    /// `--graph`, the graph executor on Cranelift kernels (the default).
    Cranelift,
    /// With `--graph` only: the graph executor on the loop-IR interpreter.
    Loops,
}

impl BenchBackend {
    fn name(self) -> &'static str {
        match self {
            BenchBackend::Rust => "rust",
            BenchBackend::Cranelift => "cranelift",
            BenchBackend::Loops => "loops",
        }
    }
}

/// Arguments of `uop bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    /// Print one JSON object per workload and backend instead of a table.
    #[arg(long)]
    json: bool,
    /// Threads per Rust-backend kernel (`uop_runtime::set_threads`); the Cranelift
    /// JIT runs its loops on one thread.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Time only this backend (default: both, or `cranelift` alone in a `uop` built
    /// without the feature `prebuilt`).
    #[arg(long, value_enum)]
    backend: Option<BenchBackend>,
    /// Time only this workload (a name of peers.py, e.g. matmul_512).
    #[arg(long, value_name = "NAME")]
    workload: Option<String>,
    /// Timed calls per measurement (after one warm-up call); the median is reported.
    /// Slow runs stop after 3 calls once 2 s have been spent.
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Small sizes (for tests): the timings mean nothing, the plumbing is checked.
    #[arg(long)]
    quick: bool,
    /// Start every input and output buffer this many bytes past a 64-byte cache
    /// line (0 to 63) instead of on one, as a `Vec` of a few megabytes does (16):
    /// how the kernels do on buffers that are not aligned.
    #[arg(long, default_value_t = 0, value_name = "BYTES")]
    offset: usize,
    /// Skip the naive loop nest (seconds per call on matmul and conv2d): its time,
    /// the speedup and the difference print as `null` (`NaN` in the table).
    #[arg(long)]
    no_naive: bool,
    /// Untimed calls before the timed ones (after the first call, with `--graph`).
    #[arg(long, default_value_t = 1, value_name = "N")]
    warmup: usize,
    /// Time this graph (or program, as a graph of one kernel) on the graph executor
    /// instead of the workloads, on seeded random inputs: the first call (parse,
    /// prepare, compile, run) and the median of the later calls.
    #[arg(long, value_name = "FILE")]
    graph: Option<PathBuf>,
    /// With `--graph`: the size of a named dimension, as NAME=INT.
    #[arg(long = "dim", value_name = "NAME=INT", requires = "graph")]
    dims: Vec<String>,
    /// With `--graph`: the value of a $param, as NAME=INT.
    #[arg(long = "param", value_name = "NAME=INT", requires = "graph")]
    params: Vec<String>,
}

/// `--backend rust` in a `uop` built without the prebuilt kernels.
fn no_prebuilt() -> CliError {
    CliError(
        "--backend rust: this uop is built without the prebuilt Rust-backend kernels; build it \
         with the feature `prebuilt` (cargo install --path . --features prebuilt)"
            .into(),
    )
}

/// One measured row.
struct Row {
    workload: &'static str,
    backend: BenchBackend,
    measure: Measure,
    threads: usize,
    ms: f64,
    compile_ms: Option<f64>,
    naive_ms: f64,
    max_rel_diff: f64,
    /// Bytes past a cache line where every buffer starts.
    offset: usize,
}

/// Runs `uop bench`.
pub fn bench(args: &BenchArgs) -> Result<(), CliError> {
    if let Some(file) = &args.graph {
        return graph_bench(args, file);
    }
    if args.backend == Some(BenchBackend::Loops) {
        return fail("--backend loops: times a graph on the executor; pass --graph FILE");
    }
    if args.threads == 0 {
        return fail("--threads must be at least 1");
    }
    uop_runtime::set_threads(args.threads);
    if args.reps == 0 {
        return fail("--reps must be at least 1");
    }
    if args.offset >= LINE || !args.offset.is_multiple_of(4) {
        return fail(format!(
            "--offset {}: must be a multiple of 4 (a whole f32) below {LINE}",
            args.offset
        ));
    }
    let names: Vec<&'static str> = match &args.workload {
        Some(name) => match bench::NAMES.iter().find(|n| **n == name.as_str()) {
            Some(n) => vec![*n],
            None => {
                return fail(format!(
                    "--workload: {}",
                    bench::BenchError::Unknown(name.clone())
                ));
            }
        },
        None => bench::NAMES.to_vec(),
    };
    let backends: Vec<BenchBackend> = match args.backend {
        Some(BenchBackend::Rust) if !cfg!(feature = "prebuilt") => return Err(no_prebuilt()),
        Some(b) => vec![b],
        None if cfg!(feature = "prebuilt") => vec![BenchBackend::Rust, BenchBackend::Cranelift],
        None => vec![BenchBackend::Cranelift],
    };
    let reps = Reps {
        warmup: args.warmup,
        reps: args.reps,
        budget: Duration::from_secs(2),
    };
    // Measured before any workload runs, once per process and thread count (see
    // `bench::limits`): rows on `threads` threads and Cranelift's on one.
    let mut thread_counts = vec![args.threads];
    if args.threads != 1 && backends.contains(&BenchBackend::Cranelift) {
        thread_counts.push(1);
    }
    for &t in &thread_counts {
        bench::limits::measured(t);
    }
    if !args.json {
        println!("{}", header());
    }
    for name in names {
        let w = Workload::named(name, args.quick).map_err(|e| CliError(e.to_string()))?;
        let data = w.data_at(0, args.offset);
        let mut naive = AlignedVec::<f32>::zeroed_at(w.output_len(), args.offset);
        let naive_ms = if args.no_naive {
            f64::NAN
        } else {
            bench::median_ms(reps, || {
                w.run_naive(&data, &mut naive);
                Ok::<(), CliError>(())
            })?
        };
        for &backend in &backends {
            let mut y = AlignedVec::<f32>::zeroed_at(w.output_len(), args.offset);
            let threads = match backend {
                BenchBackend::Rust => args.threads,
                BenchBackend::Cranelift | BenchBackend::Loops => 1,
            };
            let (ms, compile_ms) = match backend {
                #[cfg(feature = "prebuilt")]
                BenchBackend::Rust => {
                    let scratch = uop_runtime::Scratch::new();
                    let ms = bench::median_ms(reps, || w.run_rust(&data, &scratch, &mut y))
                        .map_err(|e| {
                            CliError(format!("{name}: the prebuilt kernel failed: {e}"))
                        })?;
                    (ms, None)
                }
                #[cfg(not(feature = "prebuilt"))]
                BenchBackend::Rust => return Err(no_prebuilt()),
                BenchBackend::Loops => {
                    return fail(
                        "--backend loops: times a graph on the executor; pass --graph FILE",
                    );
                }
                BenchBackend::Cranelift => {
                    let t = Instant::now();
                    let kernel = w
                        .compile_jit()
                        .map_err(|e| CliError(format!("{name}: Cranelift compilation: {e}")))?;
                    let compile_ms = t.elapsed().as_secs_f64() * 1e3;
                    let ms = bench::median_ms(reps, || bench::run_jit(&kernel, &data, &mut y))
                        .map_err(|e| {
                            CliError(format!("{name}: the Cranelift kernel failed: {e}"))
                        })?;
                    (ms, Some(compile_ms))
                }
            };
            let row = Row {
                workload: name,
                backend,
                measure: w.measure(),
                threads,
                ms,
                compile_ms,
                naive_ms,
                max_rel_diff: if args.no_naive {
                    f64::NAN
                } else {
                    bench::max_rel_diff(&y, &naive)
                },
                offset: args.offset,
            };
            if args.json {
                println!("{}", json(&row, args.quick));
            } else {
                println!("{}", table_row(&row));
            }
        }
    }
    if !args.json {
        for &t in &thread_counts {
            println!("{}", bench::limits::measured(t).describe());
        }
        println!(
            "rust runs on {} thread{}, cranelift on 1; x naive = naive Rust loop time (1 thread) \
             / kernel time{}",
            args.threads,
            if args.threads == 1 { "" } else { "s" },
            if args.quick {
                "; --quick sizes, timings are not meaningful"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// `uop bench --graph FILE`: the workloads' own flags are errors with it.
fn graph_bench(args: &BenchArgs, file: &std::path::Path) -> Result<(), CliError> {
    let workload_flag = [
        (args.workload.is_some(), "--workload"),
        (args.quick, "--quick"),
        (args.offset != 0, "--offset"),
        (args.no_naive, "--no-naive"),
        (args.threads != 1, "--threads"),
    ]
    .into_iter()
    .find(|(given, _)| *given);
    if let Some((_, flag)) = workload_flag {
        return fail(format!(
            "{flag}: applies to the workloads; --graph times a graph on the executor"
        ));
    }
    let backend = match args.backend.unwrap_or(BenchBackend::Cranelift) {
        BenchBackend::Rust => {
            return fail(
                "--backend rust: the graph executor runs JIT (cranelift) or loop-IR (loops) \
                 kernels; the Rust backend is `uop emit` (the graph's AOT module)",
            );
        }
        BenchBackend::Cranelift => uop_exec::KernelBackend::Cranelift,
        BenchBackend::Loops => uop_exec::KernelBackend::Loops,
    };
    if args.reps == 0 {
        return fail("--reps must be at least 1");
    }
    let spec = super::bench_graph::GraphBench {
        file,
        dims: &args.dims,
        params: &args.params,
        backend,
        warmup: args.warmup,
        reps: args.reps,
    };
    let timing = super::bench_graph::time(&spec)?;
    if args.json {
        println!("{}", timing.json(&spec));
    } else {
        println!("{}", timing.describe(&spec));
    }
    Ok(())
}

fn header() -> String {
    format!(
        "{:<22} {:<9} {:>10} {:>16} {:>8} {:>11} {:>9} {:>9}",
        "workload", "backend", "ms", "speed", "% limit", "naive ms", "x naive", "max diff"
    )
}

fn table_row(r: &Row) -> String {
    let rate = r.measure.rate(r.ms);
    let limits = bench::limits::measured(r.threads);
    let mut s = String::new();
    let _ = write!(
        s,
        "{:<22} {:<9} {:>10.3} {:>8.2} {:<7} {:>7.1}% {:>11.3} {:>8.2}x {:>9.1e}",
        r.workload,
        r.backend.name(),
        r.ms,
        rate,
        r.measure.unit(),
        100.0 * rate / limits.of(r.measure),
        r.naive_ms,
        r.naive_ms / r.ms,
        r.max_rel_diff
    );
    s
}

/// A finite number as JSON (`null` otherwise: JSON has no infinities).
fn num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".to_string()
    }
}

fn json(r: &Row, quick: bool) -> String {
    let threads = r.threads;
    let limits = bench::limits::measured(threads);
    let rate = r.measure.rate(r.ms);
    let mut s = format!(
        "{{\"workload\": \"{}\", \"backend\": \"{}\", \"impl\": \"uop_{}\", \"threads\": {threads}, \
         \"ms\": {}, \"metric\": {}, \"unit\": \"{}\", \"limit\": {}, \"pct_of_limit\": {}, \
         \"naive_ms\": {}, \"speedup_vs_naive\": {}, \"max_rel_diff\": {}",
        r.workload,
        r.backend.name(),
        r.backend.name(),
        num(r.ms),
        num(rate),
        r.measure.unit(),
        num(limits.of(r.measure)),
        num(100.0 * rate / limits.of(r.measure)),
        num(r.naive_ms),
        num(r.naive_ms / r.ms),
        num(r.max_rel_diff),
    );
    if let Some(c) = r.compile_ms {
        let _ = write!(s, ", \"compile_ms\": {}", num(c));
    }
    let _ = write!(s, ", \"offset\": {}, \"quick\": {quick}}}", r.offset);
    s
}
