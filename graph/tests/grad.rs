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

const NNC_WHILE: &str = "\
input x: f32[]
input y: f32[]
fn more(v, i) { return lt(i, 5) }
fn step(v, i) { return mul(y, v), add(i, 1) }
v5, n = while(more, step, 1, 0)
out = mul(x, v5)
output out, n
";

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

const NNC_CASE: &str = "\
input x: f32[]
fn zero(v) { return mul(v, 0) }
fn half(v) { return add(mul(v, 0.5), 0.5) }
fn flat(v) { return add(mul(v, 0), 1.5) }
sel = where(lt(x, 0), 0, where(lt(x, 1), -1, where(lt(x, 2), 1, 2)))
r = case(sel, [zero, half, flat], x)
output r
";

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
