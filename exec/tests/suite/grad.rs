//! Gradient graphs (`uop_graph::grad`, issue 23) on the graph executor: NNC's
//! literal numbers on the example graphs in both tape modes, and random graphs
//! with nested control flow whose gradient graphs must give on the executor what
//! they give on the graph interpreter (the oracle, itself checked against finite
//! differences in `graph/tests/suite/grad.rs`).
//!
//! The executor's kernels may reassociate sums and use vector math that differs
//! from libm in the last bits, so results are compared within
//! `1e-4 · max(1, |expected|)` per element. `UOP_GRAPH_SWEEP=N` runs N seeds
//! instead of the CI's 300 (`random_graph`'s chunked graphs, whose loops read values
//! computed before them, are skipped: their gradient is refused with a clear error;
//! `random_chunked_graph`'s are run instead).

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_exec::compile;
use uop_graph::grad::{GraphGradSpec, GraphGradient, TapeMode, gradient};
use uop_graph::random::{RandomOptions, random_graph, random_inputs};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, Op, RunOptions, default_registry, run_with};

const CI_SEEDS: u64 = 300;

fn seeds() -> u64 {
    std::env::var("UOP_GRAPH_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CI_SEEDS)
}

fn load(path: &str) -> Graph {
    let src = std::fs::read_to_string(crate::common::repo(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    parse_graph(&src, default_registry()).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn scalar(v: f64) -> Tensor {
    Tensor::filled(DType::F32, Vec::new(), v)
}

/// Runs the forward graph with the interpreter (for the outputs and trip counts),
/// then the gradient graph on the executor.
fn on_executor(
    forward: &Graph,
    grad: &GraphGradient,
    inputs: &[Tensor],
    seeds: &[Tensor],
) -> Result<Vec<Tensor>, String> {
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    let fwd = run_with(forward, inputs, &HashMap::new(), &options).map_err(|e| e.to_string())?;
    let args = grad
        .arguments(inputs, seeds, &fwd.outputs)
        .map_err(|e| e.to_string())?;
    let params = grad.params(&fwd.trace, &HashMap::new());
    let exe = compile(&grad.graph).map_err(|e| e.to_string())?;
    exe.run_with_params(&args, &params)
        .map_err(|e| e.to_string())
}

fn spec(g: &Graph, tape: TapeMode, seeds: Vec<usize>) -> GraphGradSpec {
    GraphGradSpec {
        seeds,
        tape,
        ..GraphGradSpec::all(g)
    }
}

fn first_values(g: &Graph, spec: &GraphGradSpec, inputs: &[f64]) -> Vec<f64> {
    let grad = gradient(g, spec).unwrap_or_else(|e| panic!("{e}"));
    let inputs: Vec<Tensor> = inputs.iter().map(|&v| scalar(v)).collect();
    let seeds: Vec<Tensor> = spec.seeds.iter().map(|_| scalar(1.0)).collect();
    on_executor(g, &grad, &inputs, &seeds)
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|t| t.data[0])
        .collect()
}

#[test]
fn nnc_product_loop_on_the_executor() {
    let g = load("examples/graphs/power_loop.uop");
    for tape in [TapeMode::Stack, TapeMode::Recompute] {
        let d = first_values(&g, &spec(&g, tape, vec![0]), &[0.34, 1.11]);
        assert!((d[0] - 1.685_058_2).abs() < 1e-6, "{tape:?}: d/dx {}", d[0]);
        let dy = 5.0 * 0.34 * 1.11f64.powi(4);
        assert!((d[1] - dy).abs() < 1e-5, "{tape:?}: d/dy {} vs {dy}", d[1]);
    }
}

#[test]
fn nnc_log_loop_on_the_executor() {
    let g = parse_graph(
        "input y: f32[]\nfn more(a, i) { return lt(i, 5) }\n\
         fn step(a, i) { return log(mul(a, y)), add(i, 1) }\n\
         a5, n = while(more, step, 1, 0)\nu = mul(a5, 0.22)\noutput u\n",
        default_registry(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    for tape in [TapeMode::Stack, TapeMode::Recompute] {
        let d = first_values(&g, &spec(&g, tape, vec![0]), &[3.2]);
        assert!(
            (d[0] - 0.189_600_602).abs() < 1e-6,
            "{tape:?}: du/dy {}",
            d[0]
        );
    }
}

#[test]
fn nnc_piecewise_case_on_the_executor() {
    let g = load("examples/graphs/piecewise.uop");
    for (x, want) in [(-1.0, 0.0), (0.76, 1.0), (1.226, 0.5), (2.1, 0.0)] {
        let d = first_values(&g, &spec(&g, TapeMode::Stack, vec![0]), &[x]);
        assert_eq!(d, [want], "x = {x}");
    }
}

#[test]
fn piecewise_loop_on_the_executor() {
    // x = 1.226 takes the half branch four times: d/dx (0.3 * ...) = 0.3 * 0.5^4.
    let g = load("examples/graphs/piecewise_loop.uop");
    for tape in [TapeMode::Stack, TapeMode::Recompute] {
        let d = first_values(&g, &spec(&g, tape, vec![0]), &[1.226]);
        assert!((d[0] - 0.3 * 0.0625).abs() < 1e-7, "{tape:?}: {}", d[0]);
        let d = first_values(&g, &spec(&g, tape, vec![0]), &[0.8]);
        assert!((d[0] - 0.3).abs() < 1e-7, "{tape:?}: pass-through {}", d[0]);
    }
}

/// Equal within `1e-4 · max(1, |expected|)`.
fn close(found: &Tensor, expected: &Tensor) -> bool {
    found.shape == expected.shape
        && found
            .data
            .iter()
            .zip(&expected.data)
            .all(|(&f, &e)| (f.is_nan() && e.is_nan()) || (f - e).abs() <= 1e-4 * e.abs().max(1.0))
}

/// Runs gradient graph `grad` on the interpreter and the executor and asserts they
/// agree ([`close`]); a failure shows `shown`.
fn executor_matches_interpreter(
    seed: u64,
    grad: &Graph,
    args: &[Tensor],
    params: &HashMap<String, i64>,
    shown: &Graph,
) {
    let want = uop_graph::run(grad, args, params)
        .unwrap_or_else(|e| panic!("seed {seed}: interpreter: {e}\n{}", print_graph(shown)));
    let got = compile(grad)
        .and_then(|exe| exe.run_with_params(args, params))
        .unwrap_or_else(|e| panic!("seed {seed}: executor: {e}\n{}", print_graph(shown)));
    for (k, (f, e)) in got.iter().zip(&want).enumerate() {
        assert!(
            close(f, e),
            "seed {seed}: gradient {k}: executor {:?}, interpreter {:?}\n{}",
            f.data,
            e.data,
            print_graph(shown)
        );
    }
}

fn has_chunk(g: &Graph) -> bool {
    g.nodes().iter().any(|n| matches!(n.op, Op::Chunk { .. }))
}

#[test]
fn random_gradient_graphs_run_alike_on_the_executor_and_the_interpreter() {
    let mut checked = 0;
    for seed in 0..seeds() {
        let g = random_graph(seed, &RandomOptions::default()).expect("random graph");
        if has_chunk(&g) {
            continue;
        }
        let inputs = random_inputs(&g, 3, seed.wrapping_mul(7));
        let options = RunOptions {
            max_iterations: Some(1000),
        };
        let Ok(fwd) = run_with(&g, &inputs, &HashMap::new(), &options) else {
            continue;
        };
        let tape = if seed % 2 == 0 {
            TapeMode::Stack
        } else {
            TapeMode::Recompute
        };
        let s = GraphGradSpec {
            tape,
            ..GraphGradSpec::all(&g)
        };
        if s.seeds.is_empty() {
            continue;
        }
        let grad =
            gradient(&g, &s).unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", print_graph(&g)));
        let seeds: Vec<Tensor> = s
            .seeds
            .iter()
            .map(|&o| Tensor::filled(DType::F32, fwd.outputs[o].shape.clone(), 0.5))
            .collect();
        let args = grad
            .arguments(&inputs, &seeds, &fwd.outputs)
            .expect("arguments");
        let params = grad.params(&fwd.trace, &HashMap::new());
        executor_matches_interpreter(seed, &grad.graph, &args, &params, &g);
        checked += 1;
    }
    eprintln!("{checked} random gradient graphs compared");
    assert!(
        checked * 4 > seeds() as usize,
        "only {checked} graphs checked"
    );
}

/// Gradient graphs of chunked graphs (a chunk loop with `sum_chunks`) on the
/// executor: the interpreter's numbers, which equal the unchunked gradient's
/// (`graph/tests/grad.rs`).
#[test]
fn chunked_gradient_graphs_run_alike_on_the_executor_and_the_interpreter() {
    let mut checked = 0;
    for seed in 0..seeds() / 3 {
        let g = uop_graph::random::random_chunked_graph(seed).expect("random chunked graph");
        let rows = 1 + seed as usize % 9;
        let inputs = random_inputs(&g, rows, seed);
        let s = GraphGradSpec::all(&g);
        let grad = gradient(&g, &s).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        let seeds = [Tensor::filled(DType::F32, vec![rows, 2], 0.5)];
        let args = grad.arguments(&inputs, &seeds, &[]).expect("arguments");
        executor_matches_interpreter(seed, &grad.graph, &args, &HashMap::new(), &grad.graph);
        checked += 1;
    }
    eprintln!("{checked} chunked gradient graphs compared");
}

/// `examples/graphs/chunked_mlp.uop` over 2,500 rows (chunks of 1,024, 1,024 and
/// 452): its gradient graph on the executor gives the unchunked `mlp.uop`'s
/// gradient on the interpreter.
#[test]
fn the_chunked_mlp_gradient_equals_the_mlp_gradient() {
    let chunked = load("examples/graphs/chunked_mlp.uop");
    let whole = load("examples/graphs/mlp.uop");
    let dims: HashMap<String, usize> = [("B", 2500), ("D", 3), ("H", 4), ("O", 2)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let inputs: Vec<Tensor> = chunked
        .input_node()
        .expect("inputs")
        .outputs
        .iter()
        .enumerate()
        .map(|(k, t)| {
            let shape: Vec<usize> = t.shape.iter().map(|d| dims[&d.to_string()]).collect();
            let n: usize = shape.iter().product();
            let data = (0..n)
                .map(|i| ((i * 13 + k * 5) % 17) as f64 / 17.0 - 0.45)
                .collect();
            Tensor::new(DType::F32, shape, data).unwrap()
        })
        .collect();
    let seed = Tensor::filled(DType::F32, vec![2500, 2], 0.25);
    let grad = gradient(&chunked, &GraphGradSpec::all(&chunked)).expect("chunked gradient");
    let text = print_graph(&grad.graph);
    assert!(text.contains("chunk(x, g_y, size=1024)"), "{text}");
    let args = grad
        .arguments(&inputs, std::slice::from_ref(&seed), &[])
        .unwrap();
    let got = compile(&grad.graph)
        .and_then(|exe| exe.run(&args))
        .expect("executor");
    let reference = gradient(&whole, &GraphGradSpec::all(&whole)).expect("mlp gradient");
    let want = reference
        .run(&whole, &inputs, &[seed], &HashMap::new())
        .expect("interpreter");
    assert_eq!(got.len(), 7);
    for (k, (f, e)) in got.iter().zip(&want).enumerate() {
        assert!(
            close(f, e),
            "gradient {k}: {:?} vs {:?}",
            &f.data[..4.min(f.data.len())],
            &e.data[..4.min(e.data.len())]
        );
    }
}

/// `depth` one-trip `while`s, each body running the next loop: `x` through
/// `depth` levels of `mul(·, 1.01)` around one `sin`.
fn nested_loops(depth: usize) -> String {
    let mut src = String::from(
        "input x: f32[]\nfn more(v, i) { return lt(i, 1) }\nfn s0(v, i) { return sin(v), add(i, 1) }\n",
    );
    for k in 1..depth {
        src.push_str(&format!(
            "fn s{k}(v, i) {{ a, b = while(more, s{}, v, 0); return mul(a, 1.01), add(i, 1) }}\n",
            k - 1
        ));
    }
    src.push_str(&format!(
        "y, n = while(more, s{}, x, 0)\noutput y\n",
        depth - 1
    ));
    src
}

/// The gradient of `depth` nested loops on the executor: the interpreter's value,
/// d/dx of 1.01^(depth-1) · sin(x) = 1.01^(depth-1) · cos(x).
fn nested_loops_gradient(depth: usize) {
    let g = parse_graph(&nested_loops(depth), default_registry()).unwrap_or_else(|e| panic!("{e}"));
    let t = std::time::Instant::now();
    let s = spec(&g, TapeMode::Stack, vec![0]);
    let found = first_values(&g, &s, &[0.3]);
    eprintln!(
        "{depth} nested loops' gradient on the executor: {:?}",
        t.elapsed()
    );
    let expected = 1.01f64.powi(depth as i32 - 1) * 0.3f64.cos();
    assert!(
        (found[0] - expected).abs() < 1e-4,
        "{found:?} vs {expected}"
    );
}

/// Nested loops' gradients build, compile and run on the executor (issue 40 item 7:
/// the memory plan's ordering and the kernels' application were quadratic and
/// worse; 64 levels took minutes).
#[test]
fn the_gradient_of_16_nested_loops_runs_on_the_executor() {
    nested_loops_gradient(16);
}

/// The same at 64 levels (about 15,000 nodes; tens of seconds on a busy 2-core
/// machine): `cargo test --profile fast-build -p uop-exec --test suite -- --ignored
/// nested_loops`.
#[test]
#[ignore]
fn the_gradient_of_64_nested_loops_runs_on_the_executor() {
    nested_loops_gradient(64);
}
