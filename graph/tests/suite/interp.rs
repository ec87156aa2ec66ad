//! The graph interpreter on literal values: NNC's `while` and `case..of` tests
//! (issue 19), `if`, `parallel`, `call`, `chunk`, run-time errors naming the node,
//! hoisted invariants computed once, and a graph of calls equal to the uop
//! interpreter on the same program, to the bit.

use crate::fixtures;
use fixtures::{invariant_loop, nnc_while};

use std::collections::HashMap;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::parse_program;
use uop_codegen::uop::DType;
use uop_graph::{
    Arg, Body, Graph, GraphBuilder, GraphRunError, Item, NodeId, Op, Ref, RunOptions, Source, run,
    run_with,
};

type Built = Result<Vec<Source>, uop_graph::BuildError>;

fn scalar(v: f32) -> Tensor {
    Tensor::filled(DType::F32, Vec::new(), f64::from(v))
}

fn no_params() -> HashMap<String, i64> {
    HashMap::new()
}

fn value(t: &Tensor) -> f32 {
    assert_eq!(t.len(), 1, "one value");
    t.data[0] as f32
}

/// The id of the one node that calls `op`.
fn call_node(g: &Graph, op: &str) -> NodeId {
    let ids: Vec<NodeId> = g
        .nodes()
        .iter()
        .filter(|n| matches!(&n.op, Op::Call(c) if c.op == op))
        .map(|n| n.id)
        .collect();
    assert_eq!(ids.len(), 1, "one {op}");
    ids[0]
}

fn kind_node(g: &Graph, kind: &str) -> NodeId {
    let ids: Vec<NodeId> = g
        .nodes()
        .iter()
        .filter(|n| n.op.kind() == kind)
        .map(|n| n.id)
        .collect();
    assert_eq!(ids.len(), 1, "one {kind}");
    ids[0]
}

#[test]
fn nnc_while_multiplies_five_times_and_counts_five() {
    let g = nnc_while();
    let r = run_with(
        &g,
        &[scalar(0.34), scalar(1.11)],
        &no_params(),
        &RunOptions::default(),
    )
    .expect("runs");
    let mut v = 1.0f32;
    for _ in 0..5 {
        v *= 1.11f32;
    }
    assert_eq!(value(&r.outputs[0]), 0.34f32 * v);
    assert!((value(&r.outputs[0]) - 0.572_919_8).abs() < 1e-6);
    assert_eq!(value(&r.outputs[1]), 5.0);
    assert_eq!(r.trace.trips[&kind_node(&g, "while")], [5]);
}

/// NNC's selector: 0 if x < 0, -1 if x < 1, 1 if x < 2, else 2.
fn selector(g: &mut GraphBuilder, x: Ref) -> Result<Ref, uop_graph::BuildError> {
    let lt = |g: &mut GraphBuilder, b: f64| g.call("lt", &[x.into(), b.into()], &[]);
    let c2 = lt(g, 2.0)?;
    let s2 = g.call("where", &[c2.into(), 1.0.into(), 2.0.into()], &[])?;
    let c1 = lt(g, 1.0)?;
    let s1 = g.call("where", &[c1.into(), (-1.0).into(), s2.into()], &[])?;
    let c0 = lt(g, 0.0)?;
    g.call("where", &[c0.into(), 0.0.into(), s1.into()], &[])
}

/// NNC's branches: `x * 0`, `x * 0.5 + 0.5`, `x * 0 + 1.5`.
fn nnc_branches<'a>() -> Vec<Body<'a>> {
    vec![
        Box::new(|g: &mut GraphBuilder, p: &[Ref]| -> Built {
            Ok(vec![g.call("mul", &[p[0].into(), 0.0.into()], &[])?.into()])
        }),
        Box::new(|g: &mut GraphBuilder, p: &[Ref]| -> Built {
            let h = g.call("mul", &[p[0].into(), 0.5.into()], &[])?;
            Ok(vec![g.call("add", &[h.into(), 0.5.into()], &[])?.into()])
        }),
        Box::new(|g: &mut GraphBuilder, p: &[Ref]| -> Built {
            let z = g.call("mul", &[p[0].into(), 0.0.into()], &[])?;
            Ok(vec![g.call("add", &[z.into(), 1.5.into()], &[])?.into()])
        }),
    ]
}

#[test]
fn nnc_case_takes_the_selected_branch_or_passes_through() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &[]).expect("x");
    let sel = selector(&mut g, x).expect("selector");
    let out = g.case(sel, &[x], nnc_branches()).expect("case");
    g.output(out[0]);
    let g = g.finish();
    let case = kind_node(&g, "case");
    for (x, expected, branch) in [
        (-1.0f32, 0.0f32, 0),
        (0.76, 0.76, -1),
        (1.226, 1.226f32 * 0.5 + 0.5, 1),
        (2.1, 1.5, 2),
    ] {
        let r = run_with(&g, &[scalar(x)], &no_params(), &RunOptions::default()).expect("runs");
        assert_eq!(value(&r.outputs[0]), expected, "x = {x}");
        assert_eq!(r.trace.branches[&case], [branch], "x = {x}");
    }
    let r = run(&g, &[scalar(1.226)], &no_params()).expect("runs");
    assert!((value(&r[0]) - 1.113).abs() < 1e-6);
}

#[test]
fn nnc_case_inside_a_four_step_while() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &[]).expect("x");
    let zero = g.scalar(0.0);
    let state = g
        .while_loop(
            &[x, zero],
            |g, s| Ok(vec![g.call("lt", &[s[1].into(), 4.0.into()], &[])?.into()]),
            |g, s| {
                let sel = selector(g, s[0])?;
                let v = g.case(sel, &[s[0]], nnc_branches())?;
                let i = g.call("add", &[s[1].into(), 1.0.into()], &[])?;
                Ok(vec![v[0].into(), i.into()])
            },
        )
        .expect("while");
    let out = g
        .call("mul", &[state[0].into(), 0.3.into()], &[])
        .expect("mul");
    g.output(out);
    let g = g.finish();
    let case = kind_node(&g, "case");

    let r = run_with(&g, &[scalar(1.226)], &no_params(), &RunOptions::default()).expect("runs");
    let mut v = 1.226f32;
    for _ in 0..4 {
        v = v * 0.5 + 0.5;
    }
    assert_eq!(value(&r.outputs[0]), v * 0.3f32);
    assert!((value(&r.outputs[0]) - 0.304_237_5).abs() < 1e-6);
    assert_eq!(r.trace.branches[&case], [1, 1, 1, 1]);
    assert_eq!(r.trace.trips[&kind_node(&g, "while")], [4]);

    let r = run_with(&g, &[scalar(0.8)], &no_params(), &RunOptions::default()).expect("runs");
    assert_eq!(value(&r.outputs[0]), 0.8f32 * 0.3f32);
    assert!((value(&r.outputs[0]) - 0.24).abs() < 1e-6);
    assert_eq!(r.trace.branches[&case], [-1, -1, -1, -1]);
}

#[test]
fn if_takes_then_for_any_non_zero_condition() {
    let mut g = GraphBuilder::new(DType::F32);
    let c = g.input("c", DType::F32, &[]).expect("c");
    let x = g.input("x", DType::F32, &["3"]).expect("x");
    let out = g
        .if_then_else(
            c,
            &[x],
            |g, p| Ok(vec![g.op("neg", &[p[0]])?.into()]),
            |g, p| {
                Ok(vec![
                    g.call("add", &[p[0].into(), 10.0.into()], &[])?.into(),
                ])
            },
        )
        .expect("if");
    g.output(out[0]);
    let g = g.finish();
    let x = Tensor::new(DType::F32, vec![3], vec![1.0, -2.0, 3.5]).expect("x");
    for (c, expected) in [
        (1.0, [-1.0, 2.0, -3.5]),
        (-0.5, [-1.0, 2.0, -3.5]),
        (0.0, [11.0, 8.0, 13.5]),
    ] {
        let r = run(&g, &[scalar(c), x.clone()], &no_params()).expect("runs");
        assert_eq!(r[0].data, expected, "c = {c}");
        assert_eq!(r[0].shape, [3]);
    }
}

#[test]
fn parallel_stacks_iterations_on_a_new_axis_with_the_index_in_a_reindex() {
    // Iteration $i takes row 3 - $i of x and adds $i's row number of a constant.
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["4", "3"]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let out = g
        .parallel(Expr::Int(4), "i", &[x], |g, p| {
            let index = vec![
                Item::Expr(
                    uop_codegen::index::parse_expr("3 - $i")
                        .map_err(|e| uop_graph::BuildError::new(e.headline()))?,
                ),
                Item::Expr(Expr::Index(0)),
            ];
            let row = g.call(
                "reindex",
                &[
                    p[0].into(),
                    Arg::List(vec![Item::Expr(Expr::Int(3))]),
                    Arg::List(index),
                ],
                &[],
            )?;
            Ok(vec![g.op("mul", &[row, y])?.into(), row.into()])
        })
        .expect("parallel");
    g.output(out[0]);
    g.output(out[1]);
    let g = g.finish();
    let data: Vec<f64> = (0..12).map(f64::from).collect();
    let x = Tensor::new(DType::F32, vec![4, 3], data).expect("x");
    let r = run(&g, &[x, scalar(2.0)], &no_params()).expect("runs");
    assert_eq!(r[0].shape, [4, 3]);
    assert_eq!(
        r[0].data,
        [
            18.0, 20.0, 22.0, 12.0, 14.0, 16.0, 6.0, 8.0, 10.0, 0.0, 2.0, 4.0
        ]
    );
    assert_eq!(
        r[1].data,
        [9.0, 10.0, 11.0, 6.0, 7.0, 8.0, 3.0, 4.0, 5.0, 0.0, 1.0, 2.0]
    );
}

#[test]
fn parallel_counts_may_be_dims_and_params() {
    let mut g = GraphBuilder::new(DType::F32);
    g.param("k").expect("param");
    let x = g.input("x", DType::F32, &["N"]).expect("x");
    let count = uop_codegen::index::parse_expr("N + $k").expect("count");
    let out = g
        .parallel(count, "i", &[x], |g, p| {
            let all = Arg::List(vec![Item::Expr(Expr::Int(0))]);
            Ok(vec![g.call("reduce_sum", &[p[0].into(), all], &[])?.into()])
        })
        .expect("parallel");
    g.output(out[0]);
    let g = g.finish();
    let x = Tensor::new(DType::F32, vec![2], vec![1.5, 2.0]).expect("x");
    let params = HashMap::from([("k".to_string(), 3)]);
    let r = run(&g, &[x], &params).expect("runs");
    assert_eq!(r[0].shape, [5, 1]);
    assert_eq!(r[0].data, [3.5; 5]);
}

#[test]
fn a_no_inline_call_runs_its_body_with_closures() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["2"]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let out = g
        .no_inline("axpy", &[x], |g, p| {
            let ax = g.op("mul", &[p[0], y])?;
            Ok(vec![g.op("add", &[ax, p[0]])?.into(), Source::Scalar(7.0)])
        })
        .expect("call");
    g.output(out[0]);
    g.output(out[1]);
    let g = g.finish();
    let x = Tensor::new(DType::F32, vec![2], vec![1.0, -3.0]).expect("x");
    let r = run(&g, &[x, scalar(4.0)], &no_params()).expect("runs");
    assert_eq!(r[0].data, [5.0, -15.0]);
    assert_eq!(r[1].shape, Vec::<usize>::new());
    assert_eq!(r[1].data, [7.0]);
}

#[test]
fn chunk_passes_its_input_through() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["N", "2"]).expect("x");
    let c = g.chunk(x, Expr::Int(2)).expect("chunk");
    let e = g.op("neg", &[c]).expect("neg");
    g.sink(&[c]).expect("sink");
    g.output(e);
    let g = g.finish();
    let x = Tensor::new(DType::F32, vec![3, 2], vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).expect("x");
    let r = run(&g, &[x], &no_params()).expect("runs");
    assert_eq!(r[0].shape, [3, 2]);
    assert_eq!(r[0].data, [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0]);
}

#[test]
fn a_loop_invariant_is_computed_once_and_the_body_every_iteration() {
    let g = invariant_loop();
    let r = run_with(
        &g,
        &[scalar(2.0), scalar(0.5)],
        &no_params(),
        &RunOptions::default(),
    )
    .expect("runs");
    let ev = &r.trace.evaluations;
    assert_eq!(ev[&call_node(&g, "exp")], 1);
    assert_eq!(ev[&call_node(&g, "mul")], 5);
    assert_eq!(ev[&call_node(&g, "lt")], 6);
    let e = (0.5f32).exp();
    let mut v = 2.0f32;
    for _ in 0..5 {
        v *= e;
    }
    assert_eq!(value(&r.outputs[0]), v);
}

#[test]
fn a_selector_past_the_last_branch_is_a_run_time_error_naming_the_node() {
    let mut g = GraphBuilder::new(DType::F32);
    let s = g.input("s", DType::F32, &[]).expect("s");
    let x = g.input("x", DType::F32, &[]).expect("x");
    let out = g.case(s, &[x], nnc_branches()).expect("case");
    g.output(out[0]);
    let g = g.finish();
    let case = kind_node(&g, "case");
    let r = run(&g, &[scalar(2.9), scalar(1.0)], &no_params()).expect("branch 2");
    assert_eq!(value(&r[0]), 1.5);
    let e = run(&g, &[scalar(3.0), scalar(1.0)], &no_params()).expect_err("out of range");
    assert_eq!(
        e.to_string(),
        format!("{case}: the selector is 3, but there are 3 branches")
    );
}

#[test]
fn a_negative_selector_with_other_output_types_is_a_run_time_error() {
    let mut g = GraphBuilder::new(DType::F32);
    let s = g.input("s", DType::F32, &[]).expect("s");
    let x = g.input("x", DType::F32, &["4"]).expect("x");
    let sum = |g: &mut GraphBuilder, p: &[Ref]| -> Built {
        let all = Arg::List(vec![Item::Expr(Expr::Int(0))]);
        Ok(vec![g.call("reduce_sum", &[p[0].into(), all], &[])?.into()])
    };
    let out = g.case(s, &[x], vec![Box::new(sum)]).expect("case");
    g.output(out[0]);
    let g = g.finish();
    let case = kind_node(&g, "case");
    let x = Tensor::new(DType::F32, vec![4], vec![1.0, 2.0, 3.0, 4.0]).expect("x");
    let r = run(&g, &[scalar(0.0), x.clone()], &no_params()).expect("branch 0");
    assert_eq!(r[0].data, [10.0]);
    let e = run(&g, &[scalar(-1.0), x], &no_params()).expect_err("mismatched pass-through");
    assert_eq!(
        e.to_string(),
        format!(
            "{case}: the selector is -1, which passes the arguments through, but the arguments (f32[4]) do not have the output types (f32[1])"
        )
    );
}

#[test]
fn inputs_are_checked_by_count_dtype_and_shape_naming_the_input() {
    let mut g = GraphBuilder::new(DType::F32);
    let a = g.input("a", DType::F32, &["N"]).expect("a");
    let b = g.input("b", DType::F32, &["N"]).expect("b");
    let s = g.op("add", &[a, b]).expect("add");
    g.output(s);
    let g = g.finish();
    let v = |n: usize| Tensor::zeros(DType::F32, vec![n]);
    let e = run(&g, &[v(2)], &no_params()).expect_err("count");
    assert_eq!(
        e,
        GraphRunError::InputCount {
            expected: 2,
            found: 1
        }
    );
    let e = run(&g, &[v(2), v(3)], &no_params()).expect_err("conflict");
    assert!(
        e.to_string()
            .starts_with("input `b`: dimension `N` is 2 in input `a` but 3"),
        "{e}"
    );
    let e = run(
        &g,
        &[v(2), Tensor::zeros(DType::I32, vec![2])],
        &no_params(),
    )
    .expect_err("dtype");
    assert_eq!(e.to_string(), "input `b`: expected f32[N], got i32[2]");
    let e = run(
        &g,
        &[v(2), Tensor::zeros(DType::F32, vec![2, 1])],
        &no_params(),
    )
    .expect_err("rank");
    assert!(
        e.to_string().starts_with("input `b`: expected rank 1"),
        "{e}"
    );
    let r = run(&g, &[v(2), v(2)], &no_params()).expect("runs");
    assert_eq!(r[0].shape, [2]);
}

#[test]
fn a_failing_size_assertion_names_the_inputs_it_constrains() {
    let mut g = GraphBuilder::new(DType::F32);
    let a = g.input("a", DType::F32, &["N"]).expect("a");
    let b = g.input("b", DType::F32, &["M"]).expect("b");
    g.assert_equal(Expr::name("N"), Expr::name("M"));
    g.output(a);
    g.output(b);
    let g = g.finish();
    let v = |n: usize| Tensor::zeros(DType::F32, vec![n]);
    let e = run(&g, &[v(2), v(3)], &no_params()).expect_err("assertion");
    assert_eq!(
        e.to_string(),
        "input `a`, `b`: size assertion `N == M` fails: 2 != 3"
    );
    assert!(run(&g, &[v(3), v(3)], &no_params()).is_ok());
}

#[test]
fn an_endless_loop_stops_at_max_iterations_with_an_error() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &[]).expect("x");
    let out = g
        .while_loop(
            &[x],
            |_, _| Ok(vec![Source::Scalar(1.0)]),
            |g, s| Ok(vec![g.call("add", &[s[0].into(), 1.0.into()], &[])?.into()]),
        )
        .expect("while");
    g.output(out[0]);
    let g = g.finish();
    let w = kind_node(&g, "while");
    let options = RunOptions {
        max_iterations: Some(100),
    };
    let e = run_with(&g, &[scalar(0.0)], &no_params(), &options).expect_err("endless");
    assert_eq!(
        e.to_string(),
        format!("{w}: the `while` did not end within 100 iterations (--max-iterations 100)")
    );
}

#[test]
fn a_graph_of_calls_equals_the_uop_interpreter_on_the_same_program_to_the_bit() {
    let src = "\
input a: f32[M, K]
input b: f32[K, N]
c = matmul(a, b)
y = softmax(c, axis=1)
z = add(y, reduce_max(c, [1]))
output z
";
    let registry = uop_ops::registry();
    let program = parse_program(src, &registry).expect("parses");

    let mut g = GraphBuilder::new(DType::F32);
    let a = g.input("a", DType::F32, &["M", "K"]).expect("a");
    let b = g.input("b", DType::F32, &["K", "N"]).expect("b");
    let c = g.op("matmul", &[a, b]).expect("matmul");
    let y = g
        .call("softmax", &[c.into()], &[("axis", Arg::Int(1))])
        .expect("softmax");
    let m = g
        .call(
            "reduce_max",
            &[c.into(), Arg::List(vec![Item::Expr(Expr::Int(1))])],
            &[],
        )
        .expect("reduce_max");
    let z = g.op("add", &[y, m]).expect("add");
    g.output(z);
    let g = g.finish();

    let inputs = [
        Tensor::random(DType::F32, vec![5, 7], 1),
        Tensor::random(DType::F32, vec![7, 3], 2),
    ];
    let expected = uop_codegen::interp::run(&program, &inputs, &no_params()).expect("program");
    let found = run(&g, &inputs, &no_params()).expect("graph");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].shape, [5, 3]);
    assert_eq!(found[0].shape, expected[0].shape);
    let bits = |t: &Tensor| t.data.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&found[0]), bits(&expected[0]));
}

#[test]
fn a_kernel_runs_its_program_and_a_const_gives_its_tensor() {
    use uop_graph::{Interface, Kernel, Node, ValueType};
    let registry = uop_ops::registry();
    let program = parse_program(
        "input x: f32[N]\ninput w: f32[N]\ny = mul(exp(neg(x)), w)\noutput y\n",
        &registry,
    )
    .expect("parses");
    let n = || ValueType::new(DType::F32, vec![Expr::name("N")]);
    let three = ValueType::new(DType::F32, vec![Expr::Int(3)]);
    let mut input = Node::new(
        NodeId(1),
        Op::Input {
            names: vec!["x".into()],
        },
        Vec::new(),
        vec![n()],
    );
    input.names = vec![Some("x".into())];
    let w = Tensor::new(DType::F32, vec![3], vec![1.0, 2.0, 4.0]).expect("w");
    let nodes = vec![
        input,
        Node::new(NodeId(2), Op::Const(w), Vec::new(), vec![three]),
        Node::new(
            NodeId(3),
            Op::Kernel(Box::new(Kernel {
                name: "k0".into(),
                program,
                members: Vec::new(),
                ops: Vec::new(),
                notes: Vec::new(),
            })),
            vec![Ref::new(NodeId(1), 0), Ref::new(NodeId(2), 0)],
            vec![n()],
        ),
    ];
    let interface = Interface {
        input: NodeId(1),
        outputs: vec![Source::Ref(Ref::new(NodeId(3), 0))],
    };
    let g = Graph::from_nodes(DType::F32, interface, nodes);
    let x = Tensor::new(DType::F32, vec![3], vec![0.0, 1.0, -1.0]).expect("x");
    let r = run(&g, &[x], &no_params()).expect("runs");
    let round = |v: f64| f64::from(v as f32);
    let e = |v: f64| round(round((-v).exp()));
    assert_eq!(
        r[0].data,
        [e(0.0), round(e(1.0) * 2.0), round(e(-1.0) * 4.0)]
    );
}
