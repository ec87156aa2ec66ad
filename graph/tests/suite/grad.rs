//! Gradients of graphs (issue 23): NNC's literal numbers through the graph
//! interpreter in both tape modes, the gradient graph as text, errors, second
//! order, and finite differences on random graphs with nested control flow.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::grad::fd::{FdOptions, check_gradient};
use uop_graph::grad::{GradError, GraphGradSpec, GraphGradient, TapeMode, gradient};
use uop_graph::random::{RandomOptions, random_graph, random_inputs};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, Op, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

fn scalar(v: f64) -> Tensor {
    Tensor::filled(DType::F32, Vec::new(), v)
}

fn spec(g: &Graph, tape: TapeMode) -> GraphGradSpec {
    GraphGradSpec {
        tape,
        ..GraphGradSpec::all(g)
    }
}

/// The gradients of the seeded outputs' plain sum (seeds of ones) at scalar inputs.
fn grads(g: &Graph, spec: &GraphGradSpec, inputs: &[f64]) -> Vec<f64> {
    let grad = gradient(g, spec).unwrap_or_else(|e| panic!("{e}"));
    let inputs: Vec<Tensor> = inputs.iter().map(|&v| scalar(v)).collect();
    let seeds: Vec<Tensor> = spec.seeds.iter().map(|_| scalar(1.0)).collect();
    let out = grad
        .run(g, &inputs, &seeds, &HashMap::new())
        .unwrap_or_else(|e| panic!("{e}\n{}", print_graph(&grad.graph)));
    out.iter().map(|t| t.data[0]).collect()
}

const MODES: [TapeMode; 2] = [TapeMode::Stack, TapeMode::Recompute];

/// NNC's product loop (`examples/graphs/power_loop.uop`).
const NNC_WHILE: &str = include_str!("../../../examples/graphs/power_loop.uop");

#[test]
fn nnc_product_loop() {
    let g = parse(NNC_WHILE);
    for mode in MODES {
        // Seed `out` only: n is a count.
        let s = GraphGradSpec {
            seeds: vec![0],
            ..spec(&g, mode)
        };
        let d = grads(&g, &s, &[0.34, 1.11]);
        assert!((d[0] - 1.685_058_2).abs() < 1e-6, "{mode:?}: d/dx {}", d[0]);
        let dy = 5.0 * 0.34 * 1.11f64.powi(4);
        assert!((d[1] - dy).abs() < 1e-5, "{mode:?}: d/dy {} vs {dy}", d[1]);
    }
}

const NNC_LOG: &str = "\
input y: f32[]
fn more(a, i) { return lt(i, 5) }
fn step(a, i) { return log(mul(a, y)), add(i, 1) }
a5, n = while(more, step, 1, 0)
u = mul(a5, 0.22)
output u
";

#[test]
fn nnc_log_loop() {
    let g = parse(NNC_LOG);
    for mode in MODES {
        let d = grads(&g, &spec(&g, mode), &[3.2]);
        assert!(
            (d[0] - 0.189_600_602).abs() < 1e-6,
            "{mode:?}: du/dy {}",
            d[0]
        );
    }
}

/// NNC's piecewise `case` (`examples/graphs/piecewise.uop`).
const NNC_CASE: &str = include_str!("../../../examples/graphs/piecewise.uop");

#[test]
fn nnc_piecewise_case() {
    let g = parse(NNC_CASE);
    for (x, want) in [(-1.0, 0.0), (0.76, 1.0), (1.226, 0.5), (2.1, 0.0)] {
        let d = grads(&g, &spec(&g, TapeMode::Stack), &[x]);
        assert_eq!(d, [want], "x = {x}");
    }
}

#[test]
fn the_gradient_graph_prints_and_parses_back() {
    let g = parse(NNC_WHILE);
    let grad = gradient(&g, &spec(&g, TapeMode::Stack)).unwrap();
    let text = print_graph(&grad.graph);
    eprintln!("{text}");
    let again = parse(&text);
    assert_eq!(print_graph(&again), text);
}

#[test]
fn a_program_without_control_flow_matches_the_program_gradient() {
    // softmax written as a graph: the graph gradient and the program gradient agree.
    let src = "input x: f32[4]\ny = softmax(x)\nz = mul(y, x)\noutput z\n";
    let g = parse(src);
    let x = Tensor::new(DType::F32, vec![4], vec![0.5, -1.0, 2.0, 0.25]).unwrap();
    let report = check_gradient(
        &g,
        &GraphGradSpec::all(&g),
        &[x],
        &HashMap::new(),
        &FdOptions {
            sample: Some(4),
            ..FdOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.checked, 4);
}

#[test]
fn calls_if_and_parallel_against_finite_differences() {
    let src = "\
input x: f32[3]
input s: f32[]
fn unit(a, b) { return mul(tanh(a), b) }
u = call(unit, x, s)
fn pos(v) { return mul(v, s) }
fn other(v) { return sin(v) }
c = if(lt(s, 0), pos, other, u)
fn each($i, v) { return mul(reindex(v, [], [$i]), s) }
p = parallel(3, each, c)
output p, c
";
    let g = parse(src);
    for s in [0.7, -0.4] {
        let x = Tensor::new(DType::F32, vec![3], vec![0.3, -0.8, 1.1]).unwrap();
        for tape in MODES {
            let report = check_gradient(
                &g,
                &spec(&g, tape),
                &[x.clone(), scalar(s)],
                &HashMap::new(),
                &FdOptions {
                    sample: None,
                    ..FdOptions::default()
                },
            )
            .unwrap_or_else(|e| panic!("s = {s}: {e}"));
            assert_eq!(report.checked, 4);
        }
    }
}

#[test]
fn a_loop_invariant_gets_the_sum_of_its_iterations_gradients() {
    // v <- v * w + w, three times from v = x: invariant w read twice per iteration.
    let src = "\
input x: f32[2]
input w: f32[2]
fn more(v, i) { return lt(i, 3) }
fn step(v, i) { return add(mul(v, w), w), add(i, 1) }
v3, n = while(more, step, x, 0)
output v3
";
    let g = parse(src);
    let x = Tensor::new(DType::F32, vec![2], vec![0.5, -1.5]).unwrap();
    let w = Tensor::new(DType::F32, vec![2], vec![0.9, 1.2]).unwrap();
    for tape in MODES {
        let grad = gradient(&g, &spec(&g, tape)).unwrap();
        let seed = Tensor::new(DType::F32, vec![2], vec![1.0, 1.0]).unwrap();
        let d = grad
            .run(&g, &[x.clone(), w.clone()], &[seed], &HashMap::new())
            .unwrap();
        // v3 = x w^3 + w^3 + w^2 + w: d/dx = w^3, d/dw = 3 x w^2 + 3 w^2 + 2 w + 1.
        for k in 0..2 {
            let (xv, wv) = (x.data[k], w.data[k]);
            assert!((d[0].data[k] - wv.powi(3)).abs() < 1e-5);
            let dw = 3.0 * xv * wv * wv + 3.0 * wv * wv + 2.0 * wv + 1.0;
            assert!((d[1].data[k] - dw).abs() < 1e-4, "{} vs {dw}", d[1].data[k]);
        }
    }
}

#[test]
fn nested_loops_against_finite_differences() {
    let src = "\
input x: f32[]
input y: f32[]
fn more(v, i) { return lt(i, 3) }
fn inner_more(u, j) { return lt(j, 2) }
fn step(v, i) {
  fn inner(u, j) { return sin(add(mul(u, y), v)), add(j, 1) }
  u2, j2 = while(inner_more, inner, v, 0)
  return mul(u2, y), add(i, 1)
}
v3, n = while(more, step, x, 0)
output v3
";
    let g = parse(src);
    for tape in MODES {
        let report = check_gradient(
            &g,
            &spec(&g, tape),
            &[scalar(0.4), scalar(0.8)],
            &HashMap::new(),
            &FdOptions {
                sample: Some(4),
                ..FdOptions::default()
            },
        )
        .unwrap_or_else(|e| panic!("{tape:?}: {e}"));
        assert_eq!(report.checked, 2);
    }
}

#[test]
fn the_gradient_of_a_while_gradient_is_second_order() {
    // d/dx of (d/dx x^3) = 6x: the gradient graph of the loop differentiated again.
    let src = "\
input x: f32[]
fn more(v, i) { return lt(i, 3) }
fn step(v, i) { return mul(v, x), add(i, 1) }
v3, n = while(more, step, 1, 0)
output v3
";
    let g = parse(src);
    for tape in MODES {
        let first = gradient(&g, &spec(&g, tape)).unwrap();
        // The first gradient takes x, g_v3 and (stack) $tape_N; differentiate it
        // with respect to x, seeding g_x.
        let s2 = GraphGradSpec {
            seeds: vec![0],
            wrt: vec![0],
            supplied: vec![],
            tape,
        };
        let second = gradient(&first.graph, &s2).unwrap_or_else(|e| panic!("{e}"));
        let x = 0.7f64;
        let args = [scalar(x), scalar(1.0)];
        let fwd =
            uop_graph::run_with(&g, &args[..1], &HashMap::new(), &Default::default()).unwrap();
        let p1 = first.params(&fwd.trace, &HashMap::new());
        let run1 = uop_graph::run_with(&first.graph, &args, &p1, &Default::default()).unwrap();
        assert!((run1.outputs[0].data[0] - 3.0 * x * x).abs() < 1e-5);
        let p2 = second.params(&run1.trace, &p1);
        let d2 = uop_graph::run(&second.graph, &[scalar(x), scalar(1.0), scalar(1.0)], &p2)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(
            (d2[0].data[0] - 6.0 * x).abs() < 1e-5,
            "{tape:?}: {}",
            d2[0].data[0]
        );
    }
}

#[test]
fn errors_name_what_is_wrong() {
    let g = parse(NNC_WHILE);
    let none = GraphGradSpec {
        wrt: vec![],
        ..GraphGradSpec::all(&g)
    };
    assert!(matches!(gradient(&g, &none), Err(GradError::Spec(_))));
    let bad = GraphGradSpec {
        wrt: vec![7],
        ..GraphGradSpec::all(&g)
    };
    let e = gradient(&g, &bad).unwrap_err().to_string();
    assert!(e.contains("there is no input 7"), "{e}");
    let count = GraphGradSpec {
        seeds: vec![1],
        ..GraphGradSpec::all(&g)
    };
    // n is a float count here: seeding it is allowed; an output past the end is not.
    assert!(gradient(&g, &count).is_ok());
    let past = GraphGradSpec {
        seeds: vec![2],
        ..GraphGradSpec::all(&g)
    };
    let e = gradient(&g, &past).unwrap_err().to_string();
    assert!(e.contains("there is no output 2"), "{e}");
    // A value computed before the loop from a wanted input: its gradient would be
    // complete only after the last chunk.
    let before =
        parse("input x: f32[8]\na = mul(x, 2)\nac = chunk(a, size=4)\ny = mul(ac, ac)\noutput y\n");
    let e = gradient(&before, &GraphGradSpec::all(&before))
        .unwrap_err()
        .to_string();
    assert!(e.contains("computed before the loop of chunk"), "{e}");
}

/// A chunked layer: rows of `x` chunked, a weight matrix and a scalar read whole.
const CHUNKED_LAYER: &str = "input x: f32[N, 2]
input w: f32[2, 3]
input s: f32[]
xc = chunk(x, size=3)
h = tanh(matmul(xc, w))
y = mul(h, s)
output y
";

fn filled(shape: Vec<usize>, seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|k| ((k * 7 + seed * 3) % 11) as f64 / 11.0 - 0.4)
        .collect();
    Tensor::new(DType::F32, shape, data).unwrap()
}

#[test]
fn a_chunked_gradient_loops_over_the_same_chunks_and_sums_the_weights_gradients() {
    let g = parse(CHUNKED_LAYER);
    let grad = gradient(&g, &GraphGradSpec::all(&g)).unwrap();
    let text = print_graph(&grad.graph);
    // The forward's chunk node chunks the seed with x; w and s get sums over chunks.
    assert!(text.contains("= chunk(x, g_y, size=3)"), "{text}");
    assert_eq!(text.matches("sum_chunks(").count(), 2, "{text}");
    let back = parse(&text);
    assert_eq!(print_graph(&back), text);
    // 7 rows: chunks of 3, 3 and 1.
    let inputs = [filled(vec![7, 2], 0), filled(vec![2, 3], 1), scalar(1.5)];
    let seed = filled(vec![7, 3], 2);
    let chunked = grad
        .run(&g, &inputs, std::slice::from_ref(&seed), &HashMap::new())
        .unwrap();
    let whole_graph = uop_graph::looping::unchunked(&g);
    let whole = gradient(&whole_graph, &GraphGradSpec::all(&whole_graph)).unwrap();
    let expected = whole
        .run(&whole_graph, &inputs, &[seed], &HashMap::new())
        .unwrap();
    assert_eq!(chunked.len(), 3);
    for (c, e) in chunked.iter().zip(&expected) {
        assert_eq!(c.shape, e.shape);
        for (a, b) in c.data.iter().zip(&e.data) {
            assert!((a - b).abs() <= 1e-6 * b.abs().max(1.0), "{a} vs {b}");
        }
    }
}

#[test]
fn a_tape_too_short_is_a_run_time_error() {
    let g = parse(NNC_WHILE);
    let grad: GraphGradient = gradient(&g, &spec(&g, TapeMode::Stack)).unwrap();
    assert_eq!(grad.tapes.len(), 1);
    let args = [scalar(0.34), scalar(1.11), scalar(1.0), scalar(1.0)];
    let mut params = HashMap::new();
    params.insert(grad.tapes[0].param.clone(), 4);
    let e = uop_graph::run(&grad.graph, &args, &params)
        .unwrap_err()
        .to_string();
    assert!(e.contains("the selector is 1"), "{e}");
}

/// `g` with every `chunk(x, size=C)` (an identity for values, refused by the
/// gradient) written as `add(x, 0)`.
fn without_chunks(g: &Graph) -> Graph {
    if !g.nodes().iter().any(|n| matches!(n.op, Op::Chunk { .. })) {
        return g.clone();
    }
    let text = print_graph(g);
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("chunk(") {
        out.push_str(&rest[..at]);
        out.push_str("add(");
        rest = &rest[at + "chunk(".len()..];
        let size = rest.find(", size=").expect("a chunk has a size");
        out.push_str(&rest[..size]);
        out.push_str(", 0");
        rest = &rest[size..];
        rest = &rest[rest.find(')').expect("closed")..];
    }
    out.push_str(rest);
    parse(&out)
}

/// Seeds the CI sweep covers (`UOP_GRAPH_SWEEP=N` for more).
fn sweep() -> u64 {
    std::env::var("UOP_GRAPH_SWEEP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200)
}

#[test]
fn random_graphs_against_finite_differences() {
    let (mut checked, mut graphs, mut skipped) = (0, 0, 0);
    for seed in 0..sweep() {
        let g =
            without_chunks(&random_graph(seed, &RandomOptions::default()).expect("random graph"));
        let s = GraphGradSpec {
            tape: MODES[seed as usize % 2],
            ..GraphGradSpec::all(&g)
        };
        if s.seeds.is_empty() {
            continue;
        }
        let inputs = random_inputs(&g, 3, seed.wrapping_mul(7));
        let options = FdOptions {
            seed,
            sample: Some(2),
            // f64 central differences with h = 1e-6 through up to 3 nested levels.
            abs: 1e-6,
            rel: 1e-5,
            ..FdOptions::default()
        };
        match check_gradient(&g, &s, &inputs, &HashMap::new(), &options) {
            Ok(r) => {
                checked += r.checked;
                skipped += r.skipped;
                graphs += 1;
            }
            Err(e) => panic!("seed {seed} ({:?}): {e}\n{}", s.tape, print_graph(&g)),
        }
    }
    eprintln!("{graphs} graphs, {checked} elements checked, {skipped} at a boundary");
    assert!(
        graphs * 2 > sweep() as usize,
        "only {graphs} graphs checked"
    );
}

#[test]
fn chunked_random_graphs_against_finite_differences_and_the_unchunked_gradient() {
    let (mut checked, mut graphs) = (0, 0);
    for seed in 0..sweep() / 2 {
        let g = uop_graph::random::random_chunked_graph(seed).unwrap();
        let s = GraphGradSpec::all(&g);
        let rows = 1 + (seed as usize % 7);
        let inputs = [
            filled(vec![rows, 2], seed as usize),
            filled(vec![2, 2], seed as usize + 1),
            filled(vec![2], seed as usize + 2),
            scalar(0.7),
        ];
        let options = FdOptions {
            seed,
            sample: Some(3),
            ..FdOptions::default()
        };
        let r = check_gradient(&g, &s, &inputs, &HashMap::new(), &options)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{}", print_graph(&g)));
        checked += r.checked;
        graphs += 1;
        // The same numbers as the gradient of the graph without its loops.
        let grad = gradient(&g, &s).unwrap();
        let whole_graph = uop_graph::looping::unchunked(&g);
        let whole = gradient(&whole_graph, &GraphGradSpec::all(&whole_graph)).unwrap();
        let seeds = [filled(vec![rows, 2], seed as usize + 5)];
        let found = grad.run(&g, &inputs, &seeds, &HashMap::new()).unwrap();
        let expected = whole
            .run(&whole_graph, &inputs, &seeds, &HashMap::new())
            .unwrap();
        for (f, e) in found.iter().zip(&expected) {
            assert_eq!(f.shape, e.shape, "seed {seed}");
            for (a, b) in f.data.iter().zip(&e.data) {
                assert!(
                    (a - b).abs() <= 1e-5 * b.abs().max(1.0),
                    "seed {seed}: {a} vs {b}\n{}",
                    print_graph(&grad.graph)
                );
            }
        }
    }
    eprintln!("{graphs} chunked graphs, {checked} elements checked");
}
