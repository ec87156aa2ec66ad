//! The static schedule (issue 21, DESIGN.md §18) on literal graphs: NNC's diamond,
//! NNC's GEMM DAG, transitive edges, independent chains, the critical-path rank, the
//! maximum stream count, partial schedules and nested sub-functions.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::schedule::{
    CheckError, Schedule, ScheduleError, ScheduleOptions, SignalId, Step, check, print_schedule,
    schedule, schedule_dot,
};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, Node, NodeId, Op, default_registry, run};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

/// The id of the node defining output name `name`.
fn id(g: &Graph, name: &str) -> NodeId {
    g.nodes()
        .iter()
        .find(|n| n.name(0) == Some(name))
        .unwrap_or_else(|| panic!("no node named {name}"))
        .id
}

fn sched(g: &Graph, max_streams: Option<usize>) -> Schedule {
    let s = schedule(
        g,
        &ScheduleOptions {
            max_streams,
            ..ScheduleOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"));
    check(g, &s).unwrap_or_else(|e| panic!("{e}\n{}", print_schedule(g, &s)));
    s
}

/// The names of the nodes each stream runs, in order.
fn runs(g: &Graph, s: &Schedule) -> Vec<Vec<String>> {
    s.streams
        .iter()
        .map(|steps| {
            steps
                .iter()
                .filter_map(|st| match st {
                    Step::Run(n) => Some(
                        g.node(*n)
                            .and_then(|n| n.name(0))
                            .unwrap_or("?")
                            .to_string(),
                    ),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

const DIAMOND: &str = "\
input x: f32[4]
n1 = exp(x)
n2 = sin(n1)
n3 = cos(n1)
n4 = add(n2, n3)
output n4
";

#[test]
fn nnc_diamond_puts_n1_n2_n4_on_stream_0_and_n3_on_stream_1() {
    let g = parse(DIAMOND);
    let s = sched(&g, None);
    assert_eq!(runs(&g, &s), [vec!["n1", "n2", "n4"], vec!["n3"]]);
    let (n1, n3, n4) = (id(&g, "n1"), id(&g, "n3"), id(&g, "n4"));
    assert_eq!(s.signal_count, 2, "one signal each way");
    assert_eq!(
        s.streams[0],
        [
            Step::Run(n1),
            Step::Signal(SignalId(0)),
            Step::Run(id(&g, "n2")),
            Step::Wait(SignalId(1)),
            Step::Run(n4),
        ]
    );
    assert_eq!(
        s.streams[1],
        [
            Step::Wait(SignalId(0)),
            Step::Run(n3),
            Step::Signal(SignalId(1))
        ]
    );
    let ranks: Vec<usize> = ["n1", "n2", "n3", "n4"]
        .iter()
        .map(|n| s.rank[&id(&g, n)])
        .collect();
    assert_eq!(ranks, [2, 1, 1, 0]);
}

#[test]
fn the_diamond_prints_per_stream_with_ranks() {
    let g = parse(DIAMOND);
    let s = sched(&g, None);
    assert_eq!(
        print_schedule(&g, &s),
        "schedule: 2 streams, 2 signals\n\
         stream 0:\n  run %2 exp  rank 2\n  signal s0\n  run %3 sin  rank 1\n  wait s1\n  run %5 add  rank 0\n\
         stream 1:\n  wait s0\n  run %4 cos  rank 1\n  signal s1\n"
    );
    let dot = schedule_dot(&g, &s);
    assert!(dot.starts_with("digraph schedule {\n"), "{dot}");
    assert!(
        dot.contains("  n4 [label=\"%4 cos\\nstream 1, rank 1\", fillcolor=lightsalmon];"),
        "{dot}"
    );
    assert!(dot.contains("  n2 -> n3;\n"), "{dot}");
    assert!(
        dot.contains("  n2 -> n4 [style=dashed, label=\"s0\"];\n"),
        "{dot}"
    );
    assert!(
        dot.contains("  n4 -> n5 [style=dashed, label=\"s1\"];\n"),
        "{dot}"
    );
}

#[test]
fn one_stream_runs_the_diamond_in_order_without_signals() {
    let g = parse(DIAMOND);
    let s = sched(&g, Some(1));
    assert_eq!(runs(&g, &s), [vec!["n1", "n2", "n3", "n4"]]);
    assert_eq!(s.signal_count, 0);
}

#[test]
fn a_transitive_edge_is_removed_and_the_chain_runs_on_one_stream() {
    let g = parse("input x: f32[4]\na = exp(x)\nb = sin(a)\nc = add(a, b)\noutput c\n");
    let s = sched(&g, None);
    assert_eq!(runs(&g, &s), [vec!["a", "b", "c"]]);
    assert_eq!(s.signal_count, 0);
    let (a, b, c) = (id(&g, "a"), id(&g, "b"), id(&g, "c"));
    assert_eq!(
        s.edges,
        [(a, b), (b, c)],
        "a -> c is implied by a -> b -> c"
    );
}

#[test]
fn two_independent_chains_land_on_two_streams() {
    let g = parse(
        "input x: f32[4]\ninput y: f32[4]\na = exp(x)\nb = sin(a)\nc = exp(y)\nd = sin(c)\noutput b, d\n",
    );
    let s = sched(&g, None);
    assert_eq!(runs(&g, &s), [vec!["a", "b"], vec!["c", "d"]]);
    // Only the end synchronization: stream 0 waits for stream 1's last node.
    assert_eq!(s.signal_count, 1);
    assert_eq!(s.streams[1].last(), Some(&Step::Signal(SignalId(0))));
    assert_eq!(s.streams[0].last(), Some(&Step::Wait(SignalId(0))));
}

#[test]
fn the_longer_chain_stays_on_stream_0_by_critical_path_rank() {
    // A -> B -> E, A -> C -> D -> E: NNC's code would follow B.
    let g = parse(
        "input x: f32[4]\na = exp(x)\nb = sin(a)\nc = cos(a)\nd = cos(c)\ne = add(b, d)\noutput e\n",
    );
    let s = sched(&g, None);
    assert_eq!(runs(&g, &s), [vec!["a", "c", "d", "e"], vec!["b"]]);
    let ranks: Vec<usize> = ["a", "b", "c", "d", "e"]
        .iter()
        .map(|n| s.rank[&id(&g, n)])
        .collect();
    assert_eq!(ranks, [3, 1, 2, 1, 0]);
}

#[test]
fn ties_in_the_descent_go_to_the_same_kernel() {
    // After `a = exp`, `b = sin` and `c = exp` have equal ranks: the stream keeps exp.
    let g = parse("input x: f32[4]\na = exp(x)\nb = sin(a)\nc = exp(a)\nd = add(b, c)\noutput d\n");
    let s = sched(&g, None);
    assert_eq!(runs(&g, &s), [vec!["a", "c", "d"], vec!["b"]]);
}

/// NNC's "schedule GPU work on multiple streams": three independent GEMMs joined by two.
const GEMM: &str = "\
input a: f32[1, 2]
input w1: f32[1, 2]
input bias1: f32[1]
input w2: f32[1, 2]
input bias2: f32[1]
input w3: f32[1, 2]
input bias3: f32[1]
input biasc: f32[1]
input biasd: f32[1]
b1 = linear(a, w1, bias1)
b2 = linear(a, w2, bias2)
b3 = linear(a, w3, bias3)
c = linear(b1, b2, biasc)
d = linear(c, b3, biasd)
output d
";

fn tensor(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::F32, shape.to_vec(), data.to_vec()).expect("tensor")
}

fn gemm_inputs() -> Vec<Tensor> {
    vec![
        tensor(&[1, 2], &[1.4, 0.2]),
        tensor(&[1, 2], &[2.0, 11.0]),
        tensor(&[1], &[0.0]),
        tensor(&[1, 2], &[1.0, 2.2]),
        tensor(&[1], &[1.0]),
        tensor(&[1, 2], &[0.5, 1.5]),
        tensor(&[1], &[0.5]),
        tensor(&[1], &[0.2]),
        tensor(&[1], &[0.3]),
    ]
}

/// One execution the schedule allows: the streams advanced in turn, one step at a
/// time, each blocked at a wait until its signal is reached.
fn interleaving(s: &Schedule) -> Vec<NodeId> {
    let mut at = vec![0; s.streams.len()];
    let mut reached = std::collections::HashSet::new();
    let mut order = Vec::new();
    while at.iter().zip(&s.streams).any(|(a, st)| *a < st.len()) {
        let mut moved = false;
        for (t, steps) in s.streams.iter().enumerate() {
            match steps.get(at[t]) {
                Some(Step::Wait(g)) if !reached.contains(g) => continue,
                Some(Step::Signal(g)) => {
                    reached.insert(*g);
                }
                Some(Step::Run(n)) => order.push(*n),
                _ => {}
            }
            if at[t] < steps.len() {
                at[t] += 1;
                moved = true;
            }
        }
        assert!(moved, "deadlock");
    }
    order
}

/// The graph with its scheduled nodes in the order of [`interleaving`] (after the
/// Input and constant nodes).
fn reordered(g: &Graph, s: &Schedule) -> Graph {
    let mut nodes: Vec<Node> = g
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::Input { .. } | Op::Const(_)))
        .cloned()
        .collect();
    for n in interleaving(s) {
        nodes.push(g.node(n).expect("scheduled node").clone());
    }
    let out = Graph::from_nodes(g.dtype, g.interface.clone(), nodes);
    uop_graph::verify(&out, uop_graph::Checks::default()).unwrap_or_else(|e| panic!("{e}"));
    out
}

#[test]
fn nnc_gemm_dag_gives_21_9_with_1_2_and_3_streams() {
    let g = parse(GEMM);
    for max in [1, 2, 3] {
        let s = sched(&g, Some(max));
        assert_eq!(s.streams.len(), max, "{}", print_schedule(&g, &s));
        let order = interleaving(&s);
        assert_eq!(order.len(), 5);
        let out = run(&reordered(&g, &s), &gemm_inputs(), &HashMap::new()).expect("runs");
        assert_eq!(out[0].shape, [1, 1]);
        assert!(
            (out[0].data[0] - 21.9).abs() < 1e-5,
            "{} streams: {}",
            max,
            out[0].data[0]
        );
    }
}

#[test]
fn nnc_gemm_dag_uses_3_streams_unlimited_and_2_when_capped() {
    let g = parse(GEMM);
    let s = sched(&g, None);
    assert_eq!(runs(&g, &s), [vec!["b1", "c", "d"], vec!["b2"], vec!["b3"]]);
    let s = sched(&g, Some(2));
    // At the cap b3 goes after b2 (one node of work placed before it there) rather
    // than before d on stream 0 (b1 and c before it).
    assert_eq!(runs(&g, &s), [vec!["b1", "c", "d"], vec!["b2", "b3"]]);
    let ranks: Vec<usize> = ["b1", "b2", "b3", "c", "d"]
        .iter()
        .map(|n| s.rank[&id(&g, n)])
        .collect();
    assert_eq!(ranks, [2, 2, 1, 1, 0]);
}

/// Four equal towers of three nodes on `x`, joined by a tree of `add`s.
const FOUR_TOWERS: &str = "\
input x: f32[4]
a0 = exp(x)
b0 = sin(a0)
c0 = cos(b0)
a1 = exp(x)
b1 = sin(a1)
c1 = cos(b1)
a2 = exp(x)
b2 = sin(a2)
c2 = cos(b2)
a3 = exp(x)
b3 = sin(a3)
c3 = cos(b3)
j0 = add(c0, c1)
j1 = add(c2, c3)
j2 = add(j0, j1)
output j2
";

#[test]
fn four_equal_towers_capped_at_2_streams_get_two_towers_each() {
    let g = parse(FOUR_TOWERS);
    // Unlimited: a stream per tower; the first descends through both joins.
    let s = sched(&g, None);
    assert_eq!(
        runs(&g, &s),
        [
            vec!["a0", "b0", "c0", "j0", "j2"],
            vec!["a1", "b1", "c1"],
            vec!["a2", "b2", "c2", "j1"],
            vec!["a3", "b3", "c3"],
        ]
    );
    // Capped at 2: tower 2 goes after tower 1 (three nodes before it there, four
    // before j2 on stream 0) and descends to j1; tower 3 goes before j2 on stream 0
    // (four nodes before it there, six before j1 on stream 1).
    let s = sched(&g, Some(2));
    assert_eq!(
        runs(&g, &s),
        [
            vec!["a0", "b0", "c0", "j0", "a3", "b3", "c3", "j2"],
            vec!["a1", "b1", "c1", "a2", "b2", "c2", "j1"],
        ]
    );
}

/// The bench's four towers (`benches/streams.rs`): three `relu(matmul)` layers each,
/// joined by a tree of `add`s, after the prepare passes.
fn mlp_towers(towers: usize) -> Graph {
    let mut src = String::from("input x: f32[B, D]\n");
    let mut outs = Vec::new();
    for t in 0..towers {
        let mut last = "x".to_string();
        for l in 0..3 {
            src.push_str(&format!("input w{t}_{l}: f32[D, D]\n"));
            src.push_str(&format!("h{t}_{l} = relu(matmul({last}, w{t}_{l}))\n"));
            last = format!("h{t}_{l}");
        }
        outs.push(last);
    }
    src.push_str(&format!(
        "j0 = add({}, {})\nj1 = add({}, {})\nj = add(j0, j1)\noutput j\n",
        outs[0], outs[1], outs[2], outs[3]
    ));
    let (prepared, _) = uop_graph::pass::prepare(parse(&src), &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    prepared
}

#[test]
fn the_prepared_four_mlp_towers_capped_at_2_streams_get_six_layers_each() {
    let g = mlp_towers(4);
    let s = sched(&g, Some(2));
    // Twelve layer kernels and one join kernel (`split-joins`): a tower is the
    // three kernels of one input weight chain.
    let kernels: Vec<usize> = s
        .streams
        .iter()
        .map(|st| st.iter().filter(|x| matches!(x, Step::Run(_))).count())
        .collect();
    assert_eq!(kernels, [7, 6], "{}", print_schedule(&g, &s));
    let joins: Vec<usize> = s
        .rank
        .iter()
        .filter(|(_, r)| **r == 0)
        .map(|(n, _)| s.stream_of[n])
        .collect();
    assert_eq!(joins, [0], "one join kernel, on stream 0");
}

#[test]
fn a_missing_wait_is_found() {
    let g = parse(DIAMOND);
    let mut s = sched(&g, None);
    s.streams[1].retain(|st| *st != Step::Wait(SignalId(0)));
    assert_eq!(
        check(&g, &s),
        Err(CheckError::MissingWait {
            from: id(&g, "n1"),
            to: id(&g, "n3")
        })
    );
}

#[test]
fn a_wait_on_a_signal_never_reached_is_a_deadlock() {
    let g = parse(DIAMOND);
    let mut s = sched(&g, None);
    s.streams[1].retain(|st| *st != Step::Signal(SignalId(1)));
    s.streams[1].push(Step::Wait(SignalId(1)));
    s.streams[1].push(Step::Signal(SignalId(1)));
    assert!(
        matches!(check(&g, &s), Err(CheckError::Deadlock(_))),
        "{:?}",
        check(&g, &s)
    );
}

#[test]
fn zero_streams_and_unknown_sources_are_errors() {
    let g = parse(DIAMOND);
    let zero = ScheduleOptions {
        max_streams: Some(0),
        ..ScheduleOptions::default()
    };
    assert_eq!(schedule(&g, &zero), Err(ScheduleError::NoStreams));
    let bad = ScheduleOptions {
        sources: vec![NodeId(99)],
        ..ScheduleOptions::default()
    };
    let e = schedule(&g, &bad).unwrap_err();
    assert_eq!(e, ScheduleError::NotSchedulable(NodeId(99)));
    assert!(
        e.to_string()
            .starts_with("%99: not a node of the graph's top level"),
        "{e}"
    );
}

#[test]
fn a_partial_schedule_runs_from_sources_to_destinations() {
    let g = parse(
        "input x: f32[4]\na = exp(x)\nb = sin(a)\nc = cos(a)\nd = cos(c)\ne = add(b, d)\noutput e\n",
    );
    let options = ScheduleOptions {
        sources: vec![id(&g, "c")],
        destinations: vec![id(&g, "d")],
        ..ScheduleOptions::default()
    };
    let s = schedule(&g, &options).expect("schedules");
    check(&g, &s).expect("valid");
    assert_eq!(runs(&g, &s), [vec!["c", "d"]]);
    let options = ScheduleOptions {
        destinations: vec![id(&g, "b")],
        ..ScheduleOptions::default()
    };
    let s = schedule(&g, &options).expect("schedules");
    assert_eq!(runs(&g, &s), [vec!["a", "b"]]);
}

#[test]
fn sub_functions_are_scheduled_on_their_super_node_stream() {
    let g = parse(
        "input x: f32[4]\ninput y: f32[4]\n\
         fn more(v, i) { return lt(i, 5) }\n\
         fn step(v, i) { return add(sin(v), cos(v)), add(i, 1) }\n\
         p = exp(y)\n\
         z, n = while(more, step, x, 0)\n\
         q = add(z, p)\n\
         output q, n\n",
    );
    let s = sched(&g, None);
    let w = g
        .nodes()
        .iter()
        .find(|n| n.op.kind() == "while")
        .expect("while")
        .id;
    // exp(y) comes first in the list and descends to q on stream 0; the loop (also
    // rank 1) takes stream 1.
    assert_eq!(runs(&g, &s), [vec!["p", "q"], vec!["z"]]);
    assert_eq!(s.stream_of[&w], 1);
    assert_eq!(s.streams.len(), 2);
    assert_eq!(s.nested.len(), 2);
    let body = s.nested.values().nth(1).expect("body");
    assert_eq!(body.scope.map(|b| b.branch), Some(1));
    // sin(v), cos(v) and i + 1 are independent: three streams (the first is the
    // loop's); sin descends to the add joining it with cos.
    let ops: Vec<Vec<String>> = body
        .streams
        .iter()
        .map(|st| {
            st.iter()
                .filter_map(|x| match x {
                    Step::Run(n) => match g.node(*n).map(|n| &n.op) {
                        Some(Op::Call(c)) => Some(c.op.clone()),
                        other => panic!("not a call: {other:?}"),
                    },
                    _ => None,
                })
                .collect()
        })
        .collect();
    assert_eq!(ops, [vec!["sin", "add"], vec!["cos"], vec!["add"]]);
    let text = print_schedule(&g, &s);
    assert!(
        text.contains(&format!(
            "sub-function 1 (body) of while {w}, on stream 1:\n  schedule: 3 streams"
        )),
        "{text}"
    );
}
