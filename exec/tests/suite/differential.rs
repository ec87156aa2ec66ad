//! Differential tests of the graph executor (DESIGN.md §22): random graphs
//! (`uop_graph::random`) through the whole prepare pipeline and the executor on both
//! non-oracle backends (Cranelift, the loop-IR interpreter), against the graph
//! interpreter on the unprepared graph.
//!
//! Results are compared **bit for bit** (reading `-0` as `+0`, which `x + 0 → x`
//! keeps, see `uop_graph::pass`) when every op of the graph is exact in both: `neg`,
//! `abs`, `add`, `sub`, `mul`, `where`, `lt`, `reindex` — each rounds once to f32 in
//! the interpreter and in the kernels. Graphs with `tanh`, `sin` (the JIT's vector
//! math differs from libm in the last bits) or `reduce_sum` (the JIT may reassociate
//! the sum) are compared with a tolerance of `1e-4 · max(1, |expected|)` per element.
//!
//! `UOP_GRAPH_SWEEP=N` runs N seeds instead of the CI's 300; a failure panics with
//! the shrunk `.uop` reproducer.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_exec::{ExecOptions, KernelBackend, Streams, compile_with};
use uop_graph::random::{RandomOptions, random_graph, reproducer};
use uop_graph::{Graph, Op, RunOptions, run_with};

/// Seeds the CI run covers.
const CI_SEEDS: u64 = 300;

/// The loop bound every run gets (random loops end after at most 3 iterations).
const MAX_ITERATIONS: u64 = 1000;

/// Ops whose results are exact (one rounding) both in the interpreter and in kernels.
const EXACT: [&str; 8] = ["neg", "abs", "add", "sub", "mul", "where", "lt", "reindex"];

fn seeds() -> u64 {
    std::env::var("UOP_GRAPH_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_SEEDS)
}

/// Inputs for `g`: symbolic sizes 3, values seeded.
fn inputs_for(g: &Graph, seed: u64) -> Vec<Tensor> {
    uop_graph::random::random_inputs(g, 3, seed.wrapping_mul(7))
}

/// True when every call of `g` is one of [`EXACT`].
fn exact(g: &Graph) -> bool {
    g.nodes().iter().all(|n| match &n.op {
        Op::Call(c) => EXACT.contains(&c.op.as_str()),
        _ => true,
    })
}

/// Equal bit for bit (`-0` as `+0`, any NaN as NaN), or within the tolerance.
fn same(found: &Tensor, expected: &Tensor, exact: bool) -> bool {
    if found.shape != expected.shape || found.dtype != expected.dtype {
        return false;
    }
    found.data.iter().zip(&expected.data).all(|(&f, &e)| {
        if f.is_nan() || e.is_nan() {
            return f.is_nan() && e.is_nan();
        }
        if exact {
            f == e
        } else {
            (f - e).abs() <= 1e-4 * e.abs().max(1.0) || f == e
        }
    })
}

/// `g` on `backend` and `streams` against the interpreter; the error says what
/// differs. True when the executor ran some scope on several streams.
fn check(g: &Graph, backend: KernelBackend, streams: Streams, seed: u64) -> Result<bool, String> {
    let inputs = inputs_for(g, seed);
    let options = RunOptions {
        max_iterations: Some(MAX_ITERATIONS),
    };
    let expected = run_with(g, &inputs, &HashMap::new(), &options).map(|r| r.outputs);
    let exe = compile_with(
        g,
        &ExecOptions {
            backend,
            max_iterations: Some(MAX_ITERATIONS),
            streams,
            ..ExecOptions::default()
        },
    )
    .map_err(|e| format!("does not compile: {e}"))?;
    let found = exe.run(&inputs);
    let several = exe.schedule().is_some();
    match (expected, found) {
        (Ok(expected), Ok(found)) => {
            let exact = exact(g);
            if found.len() == expected.len()
                && found.iter().zip(&expected).all(|(f, e)| same(f, e, exact))
            {
                Ok(several)
            } else {
                Err(format!(
                    "different results ({}):\ninterpreter {:?}\nexecutor    {:?}",
                    if exact {
                        "bit for bit"
                    } else {
                        "tolerance 1e-4"
                    },
                    expected.iter().map(|t| &t.data).collect::<Vec<_>>(),
                    found.iter().map(|t| &t.data).collect::<Vec<_>>()
                ))
            }
        }
        (Err(e), Err(f)) if e.to_string() == f.to_string() => Ok(several),
        (Err(e), found) => Err(format!(
            "the interpreter fails ({e}), the executor gives {found:?}"
        )),
        (Ok(_), Err(f)) => Err(format!("the executor fails: {f}")),
    }
}

fn sweep(backend: KernelBackend) {
    sweep_streams(backend, seeds(), |_| vec![Streams::Auto]);
}

/// `seeds` random graphs on `backend`, each with every stream choice of `streams`.
fn sweep_streams(backend: KernelBackend, n: u64, streams: impl Fn(u64) -> Vec<Streams>) {
    let (mut exact_graphs, mut total, mut runs, mut several) = (0, 0, 0, 0);
    for seed in 0..n {
        let g = random_graph(seed, &RandomOptions::default())
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        for s in streams(seed) {
            runs += 1;
            let result = check(&g, backend, s, seed);
            several += usize::from(result == Ok(true));
            if let Err(message) = result {
                let repro = reproducer(
                    &g,
                    &|small| check(small, backend, s, seed).is_err(),
                    &format!("seed {seed}, {backend:?}, {s:?}: {message}"),
                );
                panic!("seed {seed} on {backend:?}, {s:?}: {message}\n--- reproducer\n{repro}");
            }
        }
        total += 1;
        exact_graphs += usize::from(exact(&g));
    }
    eprintln!(
        "{backend:?}: {total} random graphs equal to the interpreter ({exact_graphs} bit for bit); {runs} runs, {several} on several streams"
    );
    assert_eq!(total, n as usize);
    assert!(
        streams(0).len() == 1 || several > runs / 8,
        "too few runs on several streams: {several} of {runs}"
    );
}

#[test]
fn random_graphs_on_cranelift_equal_the_interpreter() {
    sweep(KernelBackend::Cranelift);
}

#[test]
fn random_graphs_on_the_loop_interpreter_equal_the_interpreter() {
    sweep(KernelBackend::Loops);
}

/// `g` looped with chunks of `size` on `backend` against the interpreter on `g`
/// without its loops (`uop_graph::looping::unchunked`).
fn check_chunked(g: &Graph, backend: KernelBackend, seed: u64, size: i64) -> Result<(), String> {
    let looped = uop_graph::looping::with_chunk_size(g, &uop_codegen::index::Expr::Int(size));
    let inputs = uop_graph::random::random_inputs(g, 7, seed);
    let options = RunOptions {
        max_iterations: Some(MAX_ITERATIONS),
    };
    let expected = run_with(
        &uop_graph::looping::unchunked(g),
        &inputs,
        &HashMap::new(),
        &options,
    )
    .map_err(|e| format!("the unchunked graph does not run: {e}"))?
    .outputs;
    let exe = compile_with(
        &looped,
        &ExecOptions {
            backend,
            max_iterations: Some(MAX_ITERATIONS),
            ..ExecOptions::default()
        },
    )
    .map_err(|e| format!("chunks of {size}: {e}"))?;
    let found = exe
        .run(&inputs)
        .map_err(|e| format!("chunks of {size}: {e}"))?;
    let exact = exact(g);
    if found.len() != expected.len() || found.iter().zip(&expected).any(|(f, e)| !same(f, e, exact))
    {
        return Err(format!(
            "chunks of {size}: {:?}, unchunked {:?}",
            found.iter().map(|t| &t.data).collect::<Vec<_>>(),
            expected.iter().map(|t| &t.data).collect::<Vec<_>>()
        ));
    }
    Ok(())
}

#[test]
fn chunked_random_graphs_on_the_executor_equal_the_unchunked_interpreter() {
    let mut looped = 0;
    for seed in 0..seeds() {
        let g = random_graph(seed, &RandomOptions::default()).expect("builds");
        if !g.nodes().iter().any(|n| matches!(n.op, Op::Chunk { .. })) {
            continue;
        }
        looped += 1;
        for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
            // 7 rows: chunks of 1, ragged 3, and larger than the batch.
            for size in [1, 3, 100] {
                if let Err(found) = check_chunked(&g, backend, seed, size) {
                    let repro = reproducer(
                        &g,
                        &|g| check_chunked(g, backend, seed, size).is_err(),
                        &found,
                    );
                    panic!("seed {seed}, {backend:?}: {found}\nreproducer:\n{repro}");
                }
            }
        }
    }
    assert!(looped >= seeds() as usize / 10, "{looped} looped graphs");
}

/// Every graph on 1 to 4 streams and on up to 4 streams drawn at random (the test
/// mode that finds missing waits), on Cranelift: a third of the CI's seeds, each
/// five ways.
#[test]
fn random_graphs_on_1_to_4_streams_and_random_streams_equal_the_interpreter() {
    sweep_streams(KernelBackend::Cranelift, seeds().div_ceil(3), |seed| {
        vec![
            Streams::Max(1),
            Streams::Max(2),
            Streams::Max(3),
            Streams::Max(4),
            Streams::Random { streams: 4, seed },
        ]
    });
}
