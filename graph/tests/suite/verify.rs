//! The verifier (DESIGN.md §14): each kind of broken graph, built on purpose, is
//! reported with a message naming the node; correct graphs pass.

use crate::fixtures;

use uop_codegen::index::Expr;
use uop_codegen::uop::DType;
use uop_graph::{
    Arg, Call, CallValue, Checks, Graph, GraphBuilder, Node, NodeId, Op, Ref, Source, ValueType,
    verify,
};

fn f32s() -> ValueType {
    ValueType::scalar(DType::F32)
}

fn r(id: u32) -> Ref {
    Ref::new(NodeId(id), 0)
}

/// An op call on the node's inputs in order.
fn call(id: u32, op: &str, inputs: &[Ref], out: ValueType) -> Node {
    let args = (0..inputs.len()).map(CallValue::Input).collect();
    Node::new(
        NodeId(id),
        Op::Call(Call::new(op, args)),
        inputs.to_vec(),
        vec![out],
    )
}

/// The graph's Input node `%1` with rank-0 parameters `x`, `y`.
fn input() -> Node {
    let mut n = Node::new(
        NodeId(1),
        Op::Input {
            names: vec!["x".into(), "y".into()],
        },
        Vec::new(),
        vec![f32s(), f32s()],
    );
    n.names = vec![Some("x".into()), Some("y".into())];
    n
}

/// A hand-made graph: `%1` the input, then `nodes`, with outputs `outputs`.
fn graph(nodes: Vec<Node>, outputs: &[Ref]) -> Graph {
    let mut all = vec![input()];
    all.extend(nodes);
    Graph::from_nodes(
        DType::F32,
        uop_graph::Interface {
            input: NodeId(1),
            outputs: outputs.iter().map(|r| Source::Ref(*r)).collect(),
        },
        all,
    )
}

/// The verifier's report, one violation per line.
fn report(g: &Graph, checks: Checks) -> String {
    match verify(g, checks) {
        Ok(()) => String::new(),
        Err(e) => e.to_string(),
    }
}

/// The same graph with its node list changed by `edit` (indexes rebuilt).
fn edited(g: &Graph, edit: impl FnOnce(&mut Vec<Node>)) -> Graph {
    let mut nodes = g.nodes().to_vec();
    edit(&mut nodes);
    Graph::from_nodes(g.dtype, g.interface.clone(), nodes)
}

fn node_mut(nodes: &mut [Node], id: u32) -> &mut Node {
    nodes
        .iter_mut()
        .find(|n| n.id == NodeId(id))
        .expect("node exists")
}

fn kind(g: &Graph, id: u32) -> &'static str {
    g.node(NodeId(id)).map(|n| n.op.kind()).unwrap_or("missing")
}

/// NNC's loop (`fixtures::nnc_while`), with the kinds of the ids the tests name checked.
fn nnc_loop() -> Graph {
    let g = fixtures::nnc_while();
    let kinds: Vec<&str> = (1..=10).map(|i| kind(&g, i)).collect();
    assert_eq!(
        kinds,
        [
            "input", "const", "const", "input", "call", "input", "call", "call", "while", "call"
        ]
    );
    g
}

#[test]
fn a_correct_hand_made_graph_verifies() {
    let g = graph(
        vec![
            call(2, "exp", &[r(1)], f32s()),
            call(3, "mul", &[r(2), Ref::new(NodeId(1), 1)], f32s()),
        ],
        &[r(3)],
    );
    assert_eq!(report(&g, Checks::ALL), "");
}

#[test]
fn a_duplicate_id_is_named() {
    let g = graph(
        vec![
            call(2, "exp", &[r(1)], f32s()),
            call(2, "neg", &[r(1)], f32s()),
        ],
        &[r(2)],
    );
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: id used twice, at positions 1 and 2 (call and call)"
    );
}

#[test]
fn id_0_is_named() {
    let g = graph(
        vec![
            call(0, "exp", &[r(1)], f32s()),
            call(3, "neg", &[r(1)], f32s()),
        ],
        &[r(3)],
    );
    assert_eq!(report(&g, Checks::NONE), "%0: node at position 1 has id 0");
}

#[test]
fn a_forward_reference_is_named() {
    let g = graph(
        vec![
            call(2, "exp", &[r(3)], f32s()),
            call(3, "neg", &[r(1)], f32s()),
        ],
        &[r(2)],
    );
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: input 0 reads %3, which comes later (position 2, this node is at 1)"
    );
    let g = graph(vec![call(2, "exp", &[r(2)], f32s())], &[r(2)]);
    assert_eq!(report(&g, Checks::NONE), "%2: input 0 reads %2, itself");
}

#[test]
fn a_reference_to_a_missing_node_is_named() {
    let g = graph(vec![call(2, "mul", &[r(1), r(7)], f32s())], &[r(2), r(8)]);
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: input 1 reads %7, which does not exist\n\
         graph output 1 reads %8, which does not exist"
    );
}

#[test]
fn a_bad_output_index_is_named() {
    let g = graph(
        vec![call(2, "exp", &[Ref::new(NodeId(1), 2)], f32s())],
        &[Ref::new(NodeId(2), 1)],
    );
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: input 0 reads %1.2, but %1 has 2 outputs\n\
         graph output 0 reads %2.1, but %2 has 1 outputs"
    );
}

#[test]
fn a_wrong_output_type_is_named() {
    let n = ValueType::new(DType::F32, vec![Expr::name("N")]);
    let g = graph(vec![call(2, "exp", &[r(1)], n)], &[r(2)]);
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: call has output types (f32[N]), but its inputs give (f32[])"
    );
    // A call the registry cannot type at all is named too.
    let g = graph(vec![call(2, "no_such_op", &[r(1)], f32s())], &[r(2)]);
    let text = report(&g, Checks::NONE);
    assert!(text.starts_with("%2: call: "), "{text}");
    assert!(text.contains("no_such_op"), "{text}");
}

#[test]
fn names_must_match_the_outputs() {
    let mut n = call(2, "exp", &[r(1)], f32s());
    n.names.push(Some("extra".into()));
    let g = graph(vec![n], &[r(2)]);
    assert_eq!(report(&g, Checks::NONE), "%2: 2 output names for 1 outputs");
}

#[test]
fn input_and_const_nodes_read_nothing_and_name_each_parameter() {
    let mut bad_input = input();
    bad_input.op = Op::Input {
        names: vec!["x".into()],
    };
    let mut konst = Node::new(
        NodeId(2),
        Op::Const(uop_codegen::tensor::Tensor::filled(DType::F32, vec![], 1.0)),
        vec![r(1)],
        vec![f32s()],
    );
    konst.names = vec![None];
    let g = Graph::from_nodes(
        DType::F32,
        uop_graph::Interface {
            input: NodeId(1),
            outputs: vec![Source::Ref(r(2))],
        },
        vec![bad_input, konst],
    );
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: const node with inputs\n%1: 1 parameter names for 2 parameters"
    );
}

#[test]
fn nnc_loop_verifies_with_every_flag_but_consts_first() {
    let g = nnc_loop();
    assert_eq!(report(&g, Checks::DEAD | Checks::PARTITIONS), "");
}

#[test]
fn a_while_body_returning_the_wrong_types_is_named_by_the_while() {
    let g = edited(&nnc_loop(), |nodes| {
        // The body returns (v, i, i): one value too many.
        let Op::While { body, .. } = &mut node_mut(nodes, 9).op else {
            panic!("not a while")
        };
        body.outputs.push(Source::Ref(r(8)));
    });
    assert_eq!(
        report(&g, Checks::NONE),
        "%9: while: the body's results (the state): expected (f32[], f32[]), found (f32[], f32[], f32[])"
    );
}

#[test]
fn a_condition_that_is_not_one_value_is_named_by_the_while() {
    let g = edited(&nnc_loop(), |nodes| {
        let Op::While { cond, .. } = &mut node_mut(nodes, 9).op else {
            panic!("not a while")
        };
        cond.outputs.push(Source::Scalar(1.0));
    });
    assert_eq!(
        report(&g, Checks::NONE),
        "%9: while: the condition must return one value, found (f32[], f32[])"
    );
}

/// `if(c, then: relu(p), else: p, x)` with `x: f32[N]`; ids: %2 then input,
/// %3 relu, %4 else input, %5 if.
fn if_graph() -> Graph {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["N"]).unwrap();
    let c = g.input("c", DType::F32, &[]).unwrap();
    let y = g
        .if_then_else(
            c,
            &[x],
            |g, p| Ok(vec![g.op("relu", &[p[0]])?.into()]),
            |_, p| Ok(vec![p[0].into()]),
        )
        .unwrap();
    g.output(y[0]);
    let g = g.finish();
    let kinds: Vec<&str> = (1..=5).map(|i| kind(&g, i)).collect();
    assert_eq!(kinds, ["input", "input", "call", "input", "if"]);
    g
}

#[test]
fn case_branches_with_different_signatures_are_named_by_the_case() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["N"]).unwrap();
    let s = g.input("s", DType::F32, &[]).unwrap();
    let y = g
        .case(
            s,
            &[x],
            vec![
                Box::new(|g, p| Ok(vec![g.op("exp", &[p[0]])?.into()])),
                Box::new(|_, p| Ok(vec![p[0].into()])),
            ],
        )
        .unwrap();
    g.output(y[0]);
    let g = g.finish();
    assert_eq!(kind(&g, 5), "case");
    assert_eq!(report(&g, Checks::DEAD), "");
    // Branch 1 now returns the selector (f32[]) instead of its parameter (f32[N]).
    let broken = edited(&g, |nodes| {
        let Op::Case { branches } = &mut node_mut(nodes, 5).op else {
            panic!("not a case")
        };
        branches[1].outputs[0] = Source::Ref(Ref::new(NodeId(1), 1));
    });
    assert_eq!(
        report(&broken, Checks::NONE),
        "%5: case: branch 1 returns (f32[]), but branch 0 returns (f32[N])"
    );
}

#[test]
fn an_if_whose_branches_differ_is_named_by_the_if() {
    let g = edited(&if_graph(), |nodes| {
        let Op::If { else_, .. } = &mut node_mut(nodes, 5).op else {
            panic!("not an if")
        };
        else_.outputs.push(Source::Scalar(0.0));
    });
    assert_eq!(
        report(&g, Checks::NONE),
        "%5: if: branch 1 returns (f32[N], f32[]), but branch 0 returns (f32[N])"
    );
}

#[test]
fn an_input_node_named_by_two_interfaces_is_named() {
    // The else branch names the then branch's Input node %2; its own %4 is orphaned.
    let g = edited(&if_graph(), |nodes| {
        let Op::If { else_, .. } = &mut node_mut(nodes, 5).op else {
            panic!("not an if")
        };
        else_.input = NodeId(2);
        else_.outputs = vec![Source::Ref(Ref::new(NodeId(2), 0))];
    });
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: Input node named by sub-function 0 (then) of if %5 and by sub-function 1 (else) of if %5\n\
         %4: Input node named by no interface"
    );
    // The graph's own Input node counts as named by the graph.
    let g = edited(&if_graph(), |nodes| {
        let Op::If { then, .. } = &mut node_mut(nodes, 5).op else {
            panic!("not an if")
        };
        then.input = NodeId(1);
    });
    let text = report(&g, Checks::NONE);
    assert!(
        text.contains(
            "%1: Input node named by the graph's interface and by sub-function 0 (then) of if %5"
        ),
        "{text}"
    );
    // An interface must name an Input node.
    let g = edited(&if_graph(), |nodes| {
        let Op::If { then, .. } = &mut node_mut(nodes, 5).op else {
            panic!("not an if")
        };
        then.input = NodeId(3);
    });
    let text = report(&g, Checks::NONE);
    assert!(
        text.contains(
            "sub-function 0 (then) of if %5 names %3 as its Input node, but it is a call node"
        ),
        "{text}"
    );
}

#[test]
fn a_value_local_to_a_loop_body_read_after_the_loop_is_named() {
    // %11 = exp(%7) after the while: %7 is the body's y * v.
    let g = edited(&nnc_loop(), |nodes| {
        nodes.push(call(11, "exp", &[r(7)], f32s()));
    });
    let g = Graph::from_nodes(
        g.dtype,
        uop_graph::Interface {
            input: NodeId(1),
            outputs: vec![Source::Ref(r(10)), Source::Ref(r(11))],
        },
        g.nodes().to_vec(),
    );
    assert_eq!(
        report(&g, Checks::NONE),
        "%11: input 0 reads %7, local to sub-function 1 (body) of while %9, but comes after %9, outside it\n\
         graph output 1 reads %11, local to sub-function 1 (body) of while %9"
    );
}

#[test]
fn a_loop_reading_its_own_body_other_than_through_its_results_is_named() {
    // The while's initial state reads the body's %7.
    let g = edited(&nnc_loop(), |nodes| {
        node_mut(nodes, 9).inputs[0] = r(7);
    });
    assert_eq!(
        report(&g, Checks::NONE),
        "%9: input 0 reads %7, local to sub-function 1 (body) of while %9, other than through that sub-function's results"
    );
    // The condition returns a body parameter.
    let g = edited(&nnc_loop(), |nodes| {
        let Op::While { cond, .. } = &mut node_mut(nodes, 9).op else {
            panic!("not a while")
        };
        cond.outputs[0] = Source::Ref(Ref::new(NodeId(6), 1));
    });
    assert_eq!(
        report(&g, Checks::NONE),
        "%9: sub-function 0's result 0 reads %6.1, a parameter of sub-function 1 (body) of while %9, other than through that sub-function's results"
    );
}

#[test]
fn a_node_in_two_sibling_sub_functions_is_named() {
    // %11 = add(cond's i, body's i), placed before the while: local to both the
    // condition and the body, which are not nested.
    let g = edited(&nnc_loop(), |nodes| {
        let at = nodes.iter().position(|n| n.id == NodeId(9)).unwrap();
        let mut n = call(
            11,
            "add",
            &[Ref::new(NodeId(4), 1), Ref::new(NodeId(6), 1)],
            f32s(),
        );
        n.flags = uop_graph::Flags::RETAIN;
        nodes.insert(at, n);
    });
    assert_eq!(
        report(&g, Checks::DEAD),
        "%11: depends on the parameters of sub-function 0 (condition) of while %9 and of sub-function 1 (body) of while %9, which are not nested"
    );
}

#[test]
fn a_sub_function_input_after_its_super_node_is_named() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &[]).unwrap();
    let y = b
        .no_inline("F", &[x], |_, _| Ok(vec![Source::Scalar(2.0)]))
        .unwrap();
    b.output(y[0]);
    let g = b.finish();
    assert_eq!((kind(&g, 2), kind(&g, 3)), ("input", "noinline"));
    assert_eq!(report(&g, Checks::NONE), "");
    let g = edited(&g, |nodes| nodes.swap(1, 2));
    assert_eq!(
        report(&g, Checks::NONE),
        "%2: the Input node of sub-function 0 (body) of noinline %3 comes after it"
    );
}

#[test]
fn the_seeds_caveat_a_super_node_returning_an_enclosing_parameter_is_inside() {
    // Seed 003's second program: f v1 = v5; g v2 = v3; v3 = v1 + 2; v4 = f 0; v5 = g 1.
    // v5 (g's owner) must be local to f because g's result v3 is.
    let mut b = GraphBuilder::new(DType::F32);
    let zero = b.scalar(0.0);
    let v4 = b
        .no_inline("f", &[zero], |b, v1| {
            let one = b.scalar(1.0);
            let v5 = b.no_inline("g", &[one], |b, _v2| {
                Ok(vec![
                    b.call("add", &[v1[0].into(), 2.0.into()], &[])?.into(),
                ])
            })?;
            Ok(vec![v5[0].into()])
        })
        .unwrap();
    b.output(v4[0]);
    let g = b.finish();
    // %2 = 0, %3 f's input, %4 = 1, %5 g's input, %6 = v1 + 2, %7 = g 1, %8 = f 0.
    let kinds: Vec<&str> = (2..=8).map(|i| kind(&g, i)).collect();
    assert_eq!(
        kinds,
        [
            "const", "input", "const", "input", "call", "noinline", "noinline"
        ]
    );
    // g's Input node is not read (g ignores its parameter), which the verifier
    // accepts: Input nodes are never dead.
    assert_eq!(report(&g, Checks::DEAD), "");
    // Because of the caveat, v5 (%7) is local to f: reading it after v4 (%8) is
    // reading from outside f.
    let g = edited(&g, |nodes| nodes.push(call(9, "exp", &[r(7)], f32s())));
    assert_eq!(
        report(&g, Checks::NONE),
        "%9: input 0 reads %7, local to sub-function 0 (body) of noinline %8, but comes after %8, outside it"
    );
}

#[test]
fn dead_nodes_are_named_under_dead() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let unused = b.op("exp", &[x]).unwrap();
    let two = b.scalar(2.0);
    let y = b.op("mul", &[x, two]).unwrap();
    b.output(y);
    let sink = b.sink(&[y]).unwrap();
    let g = b.finish();
    assert_eq!(unused.node, NodeId(2));
    assert_eq!(kind(&g, sink.0), "sink");
    assert_eq!(report(&g, Checks::NONE), "");
    assert_eq!(
        report(&g, Checks::DEAD),
        "%2: dead call node (no node reads it, it is not a graph output and not RETAIN)"
    );
}

#[test]
fn a_const_after_a_call_is_named_under_consts_first() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let e = b.op("exp", &[x]).unwrap();
    let two = b.scalar(2.0);
    let y = b.op("mul", &[e, two]).unwrap();
    b.output(y);
    let g = b.finish();
    assert_eq!(report(&g, Checks::DEAD), "");
    assert_eq!(
        report(&g, Checks::CONSTS_FIRST),
        "%3: Const after %2, a call node (Consts go first)"
    );
    // With the Const moved in front (after the graph's Input node) it passes.
    let g = edited(&g, |nodes| nodes.swap(1, 2));
    assert_eq!(report(&g, Checks::ALL), "");
    // The graph's Input node must be first.
    let g = edited(&g, |nodes| nodes.swap(0, 1));
    assert_eq!(
        report(&g, Checks::CONSTS_FIRST),
        "%1: the graph's Input node is not first (%3 is)"
    );
}

#[test]
fn chunks_must_follow_each_other_and_be_at_most_four() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let y = b.input("y", DType::F32, &["N"]).unwrap();
    let a = b.chunk(x, Expr::Int(4)).unwrap();
    let c = b.chunk(y, Expr::Int(4)).unwrap();
    let s = b.op("add", &[a, c]).unwrap();
    b.output(s);
    let g = b.finish();
    assert_eq!(report(&g, Checks::DEAD), "");
    let found = report(&g, Checks::PARTITIONS);
    assert_eq!(
        found.lines().next(),
        Some("%3: chunk not downstream of the previous loop-control node %2"),
        "{found}"
    );
    // No Sink yet: what crosses a partition is reported too.
    assert!(
        found.contains(
            "%2 is read in a later partition than its own (or by a chunk), but no Sink holds it"
        ),
        "{found}"
    );

    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let mut v = x;
    for _ in 0..5 {
        let c = b.chunk(v, Expr::Int(4)).unwrap();
        v = b.op("exp", &[c]).unwrap();
    }
    b.output(v);
    let g = b.finish();
    let found = report(&g, Checks::PARTITIONS);
    assert!(
        found.contains(
            "5 chunk nodes (%2, %4, %6, %8, %10), at most 4 loop-control nodes are allowed"
        ),
        "{found}"
    );
}

#[test]
fn every_violation_is_reported_not_only_the_first() {
    let g = graph(
        vec![
            call(2, "exp", &[r(9)], f32s()),
            call(0, "neg", &[r(1)], f32s()),
        ],
        &[r(2)],
    );
    let e = verify(&g, Checks::NONE).unwrap_err();
    assert_eq!(e.violations.len(), 2, "{e}");
    assert!(e.mentions(NodeId(2), "does not exist"));
    assert!(e.mentions(NodeId(0), "id 0"));
}

/// A graph with every super node, nested: verifies with every flag but CONSTS_FIRST.
#[test]
fn a_graph_with_nested_super_nodes_built_by_the_builder_verifies() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let y = b.input("y", DType::F32, &[]).unwrap();
    // (No chunk: a chunk loop holds no control flow; see `pass_loops.rs`.)
    let e = b.op("exp", &[x]).unwrap();
    let total = b
        .call("reduce_sum", &[e.into(), Arg::exprs(&["0"]).unwrap()], &[])
        .unwrap();
    let one = b.scalar(1.0);
    let zero = b.scalar(0.0);
    // while i < 5: v <- if(v < 100, v * 2, v) * y, i <- i + 1
    let w = b
        .while_loop(
            &[one, zero],
            |b, s| Ok(vec![b.call("lt", &[s[1].into(), 5.0.into()], &[])?.into()]),
            |b, s| {
                let small = b.call("lt", &[s[0].into(), 100.0.into()], &[])?;
                let v = b.if_then_else(
                    small,
                    &[s[0]],
                    |b, p| Ok(vec![b.call("mul", &[p[0].into(), 2.0.into()], &[])?.into()]),
                    |_, p| Ok(vec![p[0].into()]),
                )?;
                let v = b.op("mul", &[v[0], y])?;
                let i = b.call("add", &[s[1].into(), 1.0.into()], &[])?;
                Ok(vec![v.into(), i.into()])
            },
        )
        .unwrap();
    // case(i, [exp, relu], e)
    let c = b
        .case(
            w[1],
            &[e],
            vec![
                Box::new(|b, p| Ok(vec![b.op("exp", &[p[0]])?.into()])),
                Box::new(|b, p| Ok(vec![b.op("relu", &[p[0]])?.into()])),
            ],
        )
        .unwrap();
    // parallel(4, ($i, a) -> a * total), with a call(F) inside
    let p = b
        .parallel(Expr::Int(4), "i", &[y], |b, a| {
            let f = b.no_inline("F", &[a[0]], |b, q| {
                Ok(vec![b.op("mul", &[q[0], total])?.into()])
            })?;
            Ok(vec![f[0].into()])
        })
        .unwrap();
    b.output(total);
    b.output(w[0]);
    b.output(c[0]);
    b.output(p[0]);
    let g = b.finish();
    let kinds: std::collections::BTreeSet<&str> = g.nodes().iter().map(|n| n.op.kind()).collect();
    for k in ["while", "if", "case", "parallel", "noinline"] {
        assert!(kinds.contains(k), "{k} missing");
    }
    assert_eq!(report(&g, Checks::DEAD | Checks::PARTITIONS), "");
    assert!(!report(&g, Checks::CONSTS_FIRST).is_empty());
}
