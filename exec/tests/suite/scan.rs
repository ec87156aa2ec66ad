//! The executor's `scan` against the graph interpreter (the oracle): hand-written
//! graphs (state, reverse directions, other axes, nested scans, the index as a value,
//! zero iterations, a scan inside a `while`), on both backends and on 1 to 4 streams
//! (and random streams), compared bit for bit (every op is exact).

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_exec::{ExecOptions, KernelBackend, Streams, compile_with};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, RunOptions, default_registry, run_with};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

fn t(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::F32, shape.to_vec(), data.to_vec()).unwrap()
}

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    t(
        shape,
        &(0..n).map(|i| (i as f64) * 0.5 - 1.0).collect::<Vec<_>>(),
    )
}

/// The graphs, each with its inputs.
fn cases() -> Vec<(&'static str, Vec<Tensor>)> {
    vec![
        (
            "input s0: f32[2]
input x: f32[5, 2]
fn step($t, s, row) {
  s2 = add(s, row)
  return s2, mul(s2, 2.0)
}
s, ys = scan(5, step, s0, x, carried=1, reverse=[1])
output s, ys",
            vec![t(&[2], &[1.0, 2.0]), ramp(&[5, 2])],
        ),
        (
            "input x: f32[2, N]
input c0: f32[2]
fn step($t, acc, col) { return add(acc, col), mul(col, acc), neg(col) }
s, ys, zs = scan(N, step, c0, x, carried=1, axes=[1], out_axes=[1, 0], out_reverse=[0, 1])
output s, ys, zs",
            vec![ramp(&[2, 4]), t(&[2], &[0.0, 10.0])],
        ),
        (
            "input x: f32[3, 2]
input w: f32[]
fn outer($i, s, row) {
  fn inner($j, a, e) { return add(a, mul(e, w)), a }
  r, seen = scan(2, inner, s, row, carried=1)
  return r, seen
}
s, rows = scan(3, outer, 0.0, x, carried=1)
output s, rows",
            vec![ramp(&[3, 2]), t(&[], &[2.0])],
        ),
        (
            "input v: f32[4]
fn step($t, s, p) {
  e = reindex(v, [], [$t])
  return add(s, e), mul(p, s), mul(e, $t)
}
s, q, ys = scan(4, step, 0.0, 1.0, carried=2)
output s, q, ys",
            vec![t(&[4], &[1.0, 2.0, 3.0, 4.0])],
        ),
        (
            "input x: f32[N, 2]
input s0: f32[2]
fn step($t, s, row) { return add(s, row), row }
s, ys = scan(N, step, s0, x, carried=1)
output s, ys",
            vec![t(&[0, 2], &[]), t(&[2], &[3.0, 4.0])],
        ),
        (
            "input x: f32[3]
fn more(v, i) { return lt(i, 3) }
fn step(v, i) {
  fn acc($t, a, e) { return add(a, mul(e, i)), a }
  r, seen = scan(3, acc, v, x, carried=1)
  return r, add(i, 1)
}
v, n = while(more, step, 0.5, 0)
output v, n",
            vec![t(&[3], &[1.0, -2.0, 4.0])],
        ),
    ]
}

#[test]
fn the_executor_gives_the_interpreters_scans_bit_for_bit() {
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    for (src, inputs) in cases() {
        let g = parse(src);
        let expected = run_with(&g, &inputs, &HashMap::new(), &options)
            .unwrap_or_else(|e| panic!("{e}\n{src}"))
            .outputs;
        let streams = [
            Streams::Max(1),
            Streams::Max(2),
            Streams::Max(4),
            Streams::Random {
                streams: 3,
                seed: 7,
            },
        ];
        for backend in [KernelBackend::Cranelift, KernelBackend::Loops] {
            for s in streams {
                let exe = compile_with(
                    &g,
                    &ExecOptions {
                        backend,
                        streams: s,
                        max_iterations: Some(1000),
                        ..ExecOptions::default()
                    },
                )
                .unwrap_or_else(|e| panic!("{e}\n{src}"));
                let found = exe.run(&inputs).unwrap_or_else(|e| panic!("{e}\n{src}"));
                assert_eq!(found, expected, "{backend:?} {s:?}\n{src}");
                // A second run reuses the buffers and gives the same.
                assert_eq!(
                    exe.run(&inputs).unwrap(),
                    expected,
                    "{backend:?} {s:?} again"
                );
            }
        }
    }
}

#[test]
fn the_gradient_of_a_scan_runs_on_the_executor_as_on_the_interpreter() {
    use uop_graph::grad::{GraphGradSpec, TapeMode, gradient};
    let src = "input x: f32[4, 2]
input s0: f32[2]
input w: f32[2]
fn step($t, s, row) {
  s2 = tanh(add(mul(s, w), row))
  return s2, mul(s2, row)
}
s, ys = scan(4, step, s0, x, carried=1, reverse=[1], out_axes=[1], out_reverse=[1])
output s, ys";
    let g = parse(src);
    let inputs = [ramp(&[4, 2]), t(&[2], &[0.1, -0.3]), t(&[2], &[0.8, 1.2])];
    for tape in [TapeMode::Stack, TapeMode::Recompute] {
        let spec = GraphGradSpec {
            tape,
            ..GraphGradSpec::all(&g)
        };
        let grad = gradient(&g, &spec).unwrap_or_else(|e| panic!("{e}"));
        let seeds = [t(&[2], &[1.0, -0.5]), ramp(&[2, 4])];
        let expected = grad
            .run(&g, &inputs, &seeds, &HashMap::new())
            .unwrap_or_else(|e| panic!("{e}"));
        let options = RunOptions {
            max_iterations: Some(1000),
        };
        let fwd = run_with(&g, &inputs, &HashMap::new(), &options).unwrap();
        let args = grad.arguments(&inputs, &seeds, &fwd.outputs).unwrap();
        let params = grad.params(&fwd.trace, &HashMap::new());
        let exe = uop_exec::compile(&grad.graph).unwrap_or_else(|e| panic!("{e}"));
        let found = exe.run_with_params(&args, &params).unwrap();
        for (f, e) in found.iter().zip(&expected) {
            assert_eq!(f.shape, e.shape);
            for (a, b) in f.data.iter().zip(&e.data) {
                assert!(
                    (a - b).abs() <= 1e-4 * b.abs().max(1.0),
                    "{tape:?}: {a} vs {b}"
                );
            }
        }
    }
}
