//! The sequential `scan` super node (`docs/graph-text.md`, `uop_graph::scan`): its
//! text, its typing rules and errors, its hierarchy, and its numbers on the graph
//! interpreter (hand-computed).

use std::collections::HashMap;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{
    Checks, Graph, GraphBuilder, RunOptions, ScanAxis, default_registry, run_with, verify,
};

fn parse(src: &str) -> Graph {
    let g = parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    verify(&g, Checks::NONE).unwrap_or_else(|e| panic!("{e}"));
    g
}

fn t(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::F32, shape.to_vec(), data.to_vec()).unwrap()
}

fn run(g: &Graph, inputs: &[Tensor]) -> Vec<Tensor> {
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    run_with(g, inputs, &HashMap::new(), &options)
        .unwrap_or_else(|e| panic!("{e}"))
        .outputs
}

/// print → parse → print writes the same text, and the parsed graph gives the same
/// numbers.
fn round_trip(g: &Graph, inputs: &[Tensor]) {
    let text = print_graph(g);
    let again = parse(&text);
    assert_eq!(print_graph(&again), text);
    assert_eq!(run(&again, inputs), run(g, inputs), "{text}");
}

const CUMSUM: &str = "\
input s0: f32[2]
input x: f32[3, 2]
fn step($t, s, row) {
  s2 = add(s, row)
  return s2, mul(s2, 2.0)
}
s, ys = scan(3, step, s0, x, carried=1)
output s, ys
";

#[test]
fn a_running_sum_carries_its_state_and_stacks_each_step() {
    let g = parse(CUMSUM);
    let x = t(&[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let out = run(&g, &[t(&[2], &[1.0, 2.0]), x.clone()]);
    assert_eq!(out[0], t(&[2], &[7.0, 11.0]));
    assert_eq!(out[1], t(&[3, 2], &[2.0, 6.0, 6.0, 12.0, 14.0, 22.0]));
    round_trip(&g, &[t(&[2], &[1.0, 2.0]), x]);
}

#[test]
fn reverse_directions_read_and_write_from_the_last_position() {
    let src = CUMSUM.replace("carried=1)", "carried=1, reverse=[1], out_reverse=[1])");
    let g = parse(&src);
    let x = t(&[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    let out = run(&g, &[t(&[2], &[1.0, 2.0]), x.clone()]);
    // Rows 2, 1, 0: sums (5, 7), (7, 10), (7, 11); written at rows 2, 1, 0.
    assert_eq!(out[0], t(&[2], &[7.0, 11.0]));
    assert_eq!(out[1], t(&[3, 2], &[14.0, 22.0, 14.0, 20.0, 10.0, 14.0]));
    assert!(print_graph(&g).contains("reverse=[1], out_reverse=[1]"));
    round_trip(&g, &[t(&[2], &[1.0, 2.0]), x]);
}

#[test]
fn axes_other_than_0_slice_and_stack_columns() {
    let src = "\
input x: f32[2, N]
input c0: f32[2]
fn step($t, acc, col) { return add(acc, col), mul(col, acc) }
s, ys = scan(N, step, c0, x, carried=1, axes=[1], out_axes=[1])
output s, ys
";
    let g = parse(src);
    let x = t(&[2, 3], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let c0 = t(&[2], &[0.0, 10.0]);
    let out = run(&g, &[x.clone(), c0.clone()]);
    // acc: (0, 10) -> (1, 14) -> (3, 19) -> (6, 25); ys column t = col_t * acc_t.
    assert_eq!(out[0], t(&[2], &[6.0, 25.0]));
    assert_eq!(out[1], t(&[2, 3], &[0.0, 2.0, 9.0, 40.0, 70.0, 114.0]));
    assert_eq!(
        g.nodes().last().unwrap().outputs[1].shape,
        [Expr::Int(2), Expr::name("N")]
    );
    round_trip(&g, &[x, c0]);
}

#[test]
fn zero_iterations_give_the_initial_state_and_empty_stacks() {
    let src = "\
input x: f32[N, 2]
input s0: f32[2]
fn step($t, s, row) { return add(s, row), row }
s, ys = scan(N, step, s0, x, carried=1)
output s, ys
";
    let g = parse(src);
    let out = run(&g, &[t(&[0, 2], &[]), t(&[2], &[3.0, 4.0])]);
    assert_eq!(out[0], t(&[2], &[3.0, 4.0]));
    assert_eq!(out[1], t(&[0, 2], &[]));
}

#[test]
fn the_index_is_a_value_and_an_index_expression_of_the_body() {
    let src = "\
input v: f32[4]
fn step($t, s) {
  e = reindex(v, [], [$t])
  return add(s, e), mul(e, $t)
}
s, ys = scan(4, step, 0.0, carried=1)
output s, ys
";
    let g = parse(src);
    let v = t(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let out = run(&g, std::slice::from_ref(&v));
    assert_eq!(out[0], t(&[], &[10.0]));
    assert_eq!(out[1], t(&[4], &[0.0, 2.0, 6.0, 12.0]));
    round_trip(&g, &[v]);
}

#[test]
fn scans_nest_and_a_body_sees_the_enclosing_values() {
    let src = "\
input x: f32[3, 2]
input w: f32[]
fn outer($i, s, row) {
  fn inner($j, a, e) { return add(a, mul(e, w)), a }
  r, seen = scan(2, inner, s, row, carried=1)
  return r, seen
}
s, rows = scan(3, outer, 0.0, x, carried=1)
output s, rows
";
    let g = parse(src);
    let x = t(&[3, 2], &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);
    let out = run(&g, &[x.clone(), t(&[], &[2.0])]);
    // Every element times 2, summed: 42; `seen` holds the running sum before each.
    assert_eq!(out[0], t(&[], &[42.0]));
    assert_eq!(out[1], t(&[3, 2], &[0.0, 2.0, 6.0, 12.0, 20.0, 30.0]));
    round_trip(&g, &[x, t(&[], &[2.0])]);
}

#[test]
fn the_builder_makes_the_same_scan_as_the_text() {
    let mut b = GraphBuilder::new(DType::F32);
    let s0 = b.input("s0", DType::F32, &["2"]).unwrap();
    let x = b.input("x", DType::F32, &["3", "2"]).unwrap();
    let outs = b
        .scan(
            Expr::Int(3),
            "t",
            &[s0],
            &[(x, ScanAxis::new(0))],
            &[ScanAxis::new(0)],
            |g, p| {
                let s2 = g.op("add", &[p[1], p[2]])?;
                let y = g.call("mul", &[s2.into(), 2.0.into()], &[])?;
                Ok(vec![s2.into(), y.into()])
            },
        )
        .unwrap();
    b.output(outs[0]);
    b.output(outs[1]);
    let g = b.finish();
    verify(&g, Checks::NONE).unwrap();
    let inputs = [
        t(&[2], &[1.0, 2.0]),
        t(&[3, 2], &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0]),
    ];
    assert_eq!(run(&g, &inputs), run(&parse(CUMSUM), &inputs));
}

fn error(src: &str) -> String {
    parse_graph(src, default_registry())
        .expect_err(src)
        .message()
}

#[test]
fn a_scan_that_does_not_fit_is_a_clear_error() {
    let head = "input s0: f32[2]\ninput x: f32[3, 2]\n";
    let body = "fn step($t, s, row) { return add(s, row), row }\n";
    let cases = [
        (
            "s, ys = scan(4, step, s0, x, carried=1)",
            "scan: scanned input 0 (f32[3, 2]) has 3 positions on axis 0, but the scan runs 4 iterations",
        ),
        (
            "s, ys = scan(3, step, s0, x, carried=1, axes=[2])",
            "scan: scanned input 0: axis 2 is not an axis of f32[3, 2]",
        ),
        (
            "s, ys = scan(3, step, s0, x, carried=3)",
            "scan: carried=3 but only 2 values are given",
        ),
        (
            "s, ys = scan(3, step, s0, x, carried=1, out_axes=[2])",
            "scan: stacked output 0: axis 2 is not an axis of a value of f32[2] stacked (rank 2)",
        ),
        (
            "s, ys = scan(3, step, s0, x, carried=1, depth=2)",
            "scan: unknown attribute `depth` (carried, axes, reverse, out_axes, out_reverse)",
        ),
        (
            "s, ys = scan(3, step, s0, x, carried=1, reverse=1)",
            "scan: `reverse` is a list of non-negative integers",
        ),
    ];
    for (line, message) in cases {
        assert_eq!(error(&format!("{head}{body}{line}\noutput s, ys")), message);
    }
    let wrong_state = "fn step($t, s, row) { return $t, row }\n";
    assert_eq!(
        error(&format!(
            "{head}{wrong_state}s, ys = scan(3, step, s0, x, carried=1)\noutput s, ys"
        )),
        "scan: the body's results (the state): expected (f32[2]), found (i32[])"
    );
    let no_index = "fn step(s, row) { return add(s, row), row }\n";
    assert_eq!(
        error(&format!(
            "{head}{no_index}s, ys = scan(3, step, s0, x, carried=1)\noutput s, ys"
        )),
        "the body of `scan` takes the iteration index first: `fn step($i, ...)`"
    );
}

#[test]
fn the_memory_plan_keeps_every_value_a_scan_reads() {
    use uop_graph::memory::plan_memory;
    use uop_graph::pass::{PrepareOptions, prepare};
    let src = "\
input x: f32[N, 3]
input s0: f32[3]
fn step($t, s, row) {
  a = exp(add(s, row))
  b = mul(a, 0.5)
  return b, add(a, row), b
}
s, ys, zs = scan(N, step, s0, x, carried=1, out_axes=[1], out_reverse=[1])
y = add(reduce_sum(ys, [1]), s)
output y, zs
";
    let options = PrepareOptions {
        verify: true,
        ..PrepareOptions::default()
    };
    let g = prepare(parse(src), &options).unwrap().0;
    let dims: HashMap<String, i64> = [("N".to_string(), 4)].into();
    let plan = plan_memory(&g, &dims).unwrap();
    crate::memory_support::check_shape(&g, &plan).unwrap();
    let x = Tensor::new(
        DType::F32,
        vec![4, 3],
        (0..12).map(|i| i as f64 * 0.1).collect(),
    )
    .unwrap();
    let inputs = [x, t(&[3], &[0.0, 0.5, -0.5])];
    crate::memory_support::replay(&g, &plan, &inputs, &dims).unwrap();
}

/// The gradient of every input of `src` (f64 finite differences, both tape modes,
/// every element) at `inputs`.
fn check_fd(src: &str, inputs: &[Tensor]) -> usize {
    use uop_graph::grad::fd::{FdOptions, check_gradient};
    use uop_graph::grad::{GraphGradSpec, TapeMode};
    let g = parse(src);
    let mut checked = 0;
    for tape in [TapeMode::Stack, TapeMode::Recompute] {
        let spec = GraphGradSpec {
            tape,
            ..GraphGradSpec::all(&g)
        };
        let options = FdOptions {
            sample: None,
            ..FdOptions::default()
        };
        let report = check_gradient(&g, &spec, inputs, &HashMap::new(), &options)
            .unwrap_or_else(|e| panic!("{tape:?}: {e}\n{src}"));
        checked = report.checked;
    }
    checked
}

#[test]
fn the_gradient_of_a_scan_is_a_reverse_scan_matching_finite_differences() {
    // State, a reverse input, a stacked output in reverse on axis 1, and a value of
    // the enclosing scope (w) read every iteration.
    let src = "\
input x: f32[4, 2]
input s0: f32[2]
input w: f32[2]
fn step($t, s, row) {
  s2 = tanh(add(mul(s, w), row))
  return s2, mul(s2, row)
}
s, ys = scan(4, step, s0, x, carried=1, reverse=[1], out_axes=[1], out_reverse=[1])
output s, ys
";
    let x = Tensor::new(
        DType::F32,
        vec![4, 2],
        vec![0.3, -0.2, 0.5, 0.1, -0.7, 0.4, 0.2, 0.9],
    )
    .unwrap();
    let inputs = [x, t(&[2], &[0.1, -0.3]), t(&[2], &[0.8, 1.2])];
    assert_eq!(check_fd(src, &inputs), 12, "every element checked");
}

#[test]
fn gradients_flow_through_nested_scans_and_the_index() {
    let src = "\
input x: f32[3, 2]
input v: f32[3]
fn outer($i, s, row) {
  fn inner($j, a, e) { return sin(add(a, mul(e, reindex(v, [], [$i])))), a }
  r, seen = scan(2, inner, s, row, carried=1)
  return r, seen
}
s, rows = scan(3, outer, 0.5, x, carried=1)
output s, rows
";
    let x = Tensor::new(DType::F32, vec![3, 2], vec![0.3, -0.2, 0.5, 0.1, -0.7, 0.4]).unwrap();
    assert_eq!(
        check_fd(src, &[x, t(&[3], &[0.9, -1.1, 0.6])]),
        9,
        "every element checked"
    );
}
