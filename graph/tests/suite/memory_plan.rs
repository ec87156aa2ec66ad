//! Memory plans of small graphs, printed in full (`print_memory`), and the reference
//! graphs of `examples/graphs/` within 10% of the lower bound.

use crate::memory_support;

use std::collections::HashMap;

use uop_graph::memory::{Carried, MemoryError, Slot, plan_memory, plan_memory_apart, print_memory};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::text::parse_graph;
use uop_graph::{Graph, Ref, default_registry};

use memory_support::{check_concurrency, check_shape};

fn prepared(src: &str) -> Graph {
    let g = parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let options = PrepareOptions {
        verify: true,
        ..PrepareOptions::default()
    };
    prepare(g, &options).unwrap_or_else(|e| panic!("{e}")).0
}

fn dims(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The plan of `src` (prepared) for `pairs`, printed; its static checks hold.
fn plan_text(src: &str, pairs: &[(&str, i64)]) -> String {
    let g = prepared(src);
    let plan = plan_memory(&g, &dims(pairs)).unwrap_or_else(|e| panic!("{e}"));
    check_shape(&g, &plan).unwrap_or_else(|e| panic!("{e}"));
    print_memory(&g, &plan)
}

#[test]
fn a_chain_of_matmuls_reuses_the_first_buffer_for_the_third() {
    // a, b, c live over steps 0..1, 1..2, 2..3: a and c share offset 0.
    let text = plan_text(
        "input x: f32[N, N]\na = matmul(x, x)\nb = matmul(a, x)\nc = matmul(b, x)\ny = matmul(c, x)\noutput y\n",
        &[("N", 4)],
    );
    assert_eq!(
        text,
        "\
# memory plan for N=4 (bytes; every buffer at a multiple of 64)
value  type       bytes  offset  steps  shares
%6     f32[N, N]     64       0  0..1
%7     f32[N, N]     64      64  1..2
%8     f32[N, N]     64       0  2..3
sum of intermediates  192
planned arena         128  (best fit, largest first)
lower bound           128
"
    );
}

/// A matmul in a `call` (a boundary for kernels), an element-wise kernel on its
/// result, and an `if` over that; `tail` is appended.
fn boundary_graph(tail: &str) -> String {
    format!(
        "input x: f32[N, N]\ninput c: f32[]\nfn f(v) {{ return matmul(v, v) }}\na = call(f, x)\ne = mul(exp(a), 2.0)\nfn th(v) {{ return matmul(v, v) }}\nfn el(v) {{ return matmul(v, x) }}\nr = if(c, th, el, e)\n{tail}"
    )
}

#[test]
fn an_element_wise_kernel_writes_over_the_input_that_dies_there() {
    // exp(a) * 2 is one element-wise kernel and the call's output a dies there: e is
    // written over a. The branches' matmuls write straight into the if's output.
    let text = plan_text(&boundary_graph("y = exp(r)\noutput y\n"), &[("N", 8)]);
    assert_eq!(
        text,
        "\
# memory plan for N=8 (bytes; every buffer at a multiple of 64)
value  type       bytes  offset  steps  shares
%4     f32[N, N]    256       0  0..4
%13    f32[N, N]    256       0  1..2   result into %4
%14    f32[N, N]    256       0  4..10  in place of %4
%11    f32[N, N]    256     256  5..11
%15    f32[N, N]    256     256  6..7   result into %11
%16    f32[N, N]    256     256  8..9   result into %11
sum of intermediates  1536
planned arena         512  (best fit, largest first)
lower bound           512
"
    );
}

#[test]
fn apart_no_kernel_writes_over_its_input() {
    // The graph above planned for code emitted ahead of time: e gets bytes of its
    // own while a is read (one more buffer); branch results still go straight into
    // the if's output.
    let g = prepared(&boundary_graph("y = exp(r)\noutput y\n"));
    let plan = plan_memory_apart(&g, &dims(&[("N", 8)])).expect("plan");
    check_shape(&g, &plan).expect("checks");
    assert_eq!(
        print_memory(&g, &plan),
        "\
# memory plan for N=8 (bytes; every buffer at a multiple of 64)
value  type       bytes  offset  steps  shares
%4     f32[N, N]    256       0  0..4
%13    f32[N, N]    256       0  1..2   result into %4
%14    f32[N, N]    256     256  4..10
%11    f32[N, N]    256       0  5..11
%15    f32[N, N]    256       0  6..7   result into %11
%16    f32[N, N]    256       0  8..9   result into %11
sum of intermediates  1536
planned arena         512  (best fit, largest first)
lower bound           512
"
    );
}

#[test]
fn a_value_read_later_is_not_overwritten_in_place() {
    // a is read again after the if: e gets a buffer of its own.
    let g = prepared(&boundary_graph("y = add(r, a)\noutput y\n"));
    let plan = plan_memory(&g, &dims(&[("N", 8)])).expect("plan");
    check_shape(&g, &plan).expect("checks");
    assert!(plan.in_place.is_empty(), "{}", print_memory(&g, &plan));
    assert_eq!(plan.arena_bytes, 3 * 256, "{}", print_memory(&g, &plan));
}

#[test]
fn while_state_is_carried_in_place_when_the_body_writes_it_after_its_last_read() {
    // power_loop: v <- y * v (an element-wise kernel reading v as v dies) and
    // i <- i + 1: both in place; the initial values are Consts (copied in).
    let src = std::fs::read_to_string("../examples/graphs/power_loop.uop").expect("example");
    let g = prepared(&src);
    let plan = plan_memory(&g, &HashMap::new()).expect("plan");
    check_shape(&g, &plan).expect("checks");
    assert_eq!(
        print_memory(&g, &plan),
        "\
# memory plan (bytes; every buffer at a multiple of 64)
value  type   bytes  offset  steps  shares
%4     f32[]      4       0  2..2   state 0 of %9
%4.1   f32[]      4      64  2..3   state 1 of %9
%6     f32[]      4       0  2..5   state 0 of %9
%6.1   f32[]      4      64  2..6   state 1 of %9
%11    f32[]      4     128  3..4
%12    f32[]      4       0  5..7   next state 0 of %9
%13    f32[]      4      64  6..7   next state 1 of %9
%9     f32[]      4       0  8..9   state 0 of %9
while %9 state 0: in place at 0
while %9 state 1: in place at 64
sum of intermediates  512
planned arena         192  (best fit, largest first)
lower bound           192
"
    );
    let w = g
        .nodes()
        .iter()
        .find(|n| n.op.kind() == "while")
        .expect("a while");
    assert_eq!(
        plan.carried[&w.id],
        [
            Carried::InPlace {
                slot: Slot {
                    offset: 0,
                    bytes: 4
                }
            },
            Carried::InPlace {
                slot: Slot {
                    offset: 64,
                    bytes: 4
                }
            }
        ]
    );
}

#[test]
fn while_state_alternates_when_the_parameter_is_read_after_the_result_is_written() {
    // The body returns (v + 1, v * 2): v is read by the second kernel after the first
    // wrote the next state 0, so state 0 needs two slots; the initial value dies at
    // the loop, so its slot is the state's.
    let src = "input x: f32[N]\nfn more(v, i) { return lt(i, 3) }\nfn step(v, i) {\n  a = add(v, 1.0)\n  b = sum(mul(v, a))\n  return a, add(i, b)\n}\nx2 = exp(x)\nv, n = while(more, step, x2, 0)\noutput v\n";
    let g = prepared(src);
    let plan = plan_memory(&g, &dims(&[("N", 16)])).expect("plan");
    check_shape(&g, &plan).expect("checks");
    let text = print_memory(&g, &plan);
    let w = g
        .nodes()
        .iter()
        .find(|n| n.op.kind() == "while")
        .expect("a while");
    let Carried::Alternate { slots } = plan.carried[&w.id][0] else {
        panic!("state 0 should alternate:\n{text}");
    };
    assert_ne!(slots[0].offset, slots[1].offset);
    // exp(x) died at the loop: the state took its slot.
    let init = w.inputs[0];
    assert_eq!(plan.slots[&init].offset, slots[0].offset, "{text}");
    // The result a is written straight into the second slot.
    assert!(text.contains("next state 0 of"), "{text}");
    memory_support::replay(
        &g,
        &plan,
        &[uop_codegen::tensor::Tensor::random(
            uop_codegen::uop::DType::F32,
            vec![16],
            3,
        )],
        &dims(&[("N", 16)]),
    )
    .expect("replays");
}

#[test]
fn branch_results_are_written_into_the_case_output() {
    let src = std::fs::read_to_string("../examples/graphs/piecewise_loop.uop").expect("example");
    let g = prepared(&src);
    let plan = plan_memory(&g, &HashMap::new()).expect("plan");
    check_shape(&g, &plan).expect("checks");
    // Each of the three branches' kernels writes into the case's output.
    let case = g
        .nodes()
        .iter()
        .find(|n| n.op.kind() == "case")
        .expect("a case");
    let into: Vec<&Ref> = plan
        .results
        .iter()
        .filter(|(_, out)| out.node == case.id)
        .map(|(r, _)| r)
        .collect();
    assert_eq!(into.len(), 3, "{}", print_memory(&g, &plan));
    for r in into {
        assert_eq!(plan.slots[r].offset, plan.slots[&case.output(0)].offset);
    }
}

#[test]
fn a_missing_dim_is_an_error_naming_the_value_and_the_dim() {
    let g = prepared(
        "input x: f32[N, M]\nfn f(v) { return exp(v) }\na = call(f, x)\ny = exp(a)\noutput y\n",
    );
    let err = plan_memory(&g, &dims(&[("N", 4)])).expect_err("M is missing");
    assert!(
        matches!(&err, MemoryError::MissingDim { dim, .. } if dim == "M"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("the size `M` has no value"),
        "{err}"
    );
    let err = plan_memory(&g, &dims(&[("N", i64::MAX), ("M", i64::MAX)])).expect_err("overflow");
    assert!(matches!(err, MemoryError::Size { .. }), "{err:?}");
}

/// The reference graphs with the dims the README states: (file, dims).
const REFERENCE: [(&str, &[(&str, i64)]); 4] = [
    ("mlp", &[("B", 64), ("D", 784), ("H", 256), ("O", 10)]),
    ("transformer_block", &[("T", 128), ("D", 256), ("F", 1024)]),
    (
        "conv_block",
        &[("N", 8), ("C", 16), ("H", 32), ("W", 32), ("K", 32)],
    ),
    ("layernorm", &[("T", 128), ("D", 256)]),
];

#[test]
fn the_reference_graphs_plan_within_ten_percent_of_the_lower_bound() {
    let mut figures = Vec::new();
    for (name, pairs) in REFERENCE {
        let src =
            std::fs::read_to_string(format!("../examples/graphs/{name}.uop")).expect("example");
        let g = prepared(&src);
        // The stated dims, and a second, larger set.
        let larger: Vec<(&str, i64)> = pairs.iter().map(|(k, v)| (*k, v * 2)).collect();
        for set in [pairs.to_vec(), larger] {
            let plan = plan_memory(&g, &dims(&set)).expect("plan");
            check_shape(&g, &plan).expect("checks");
            assert!(
                plan.arena_bytes * 10 <= plan.lower_bound * 11,
                "{name}: arena {} vs lower bound {}\n{}",
                plan.arena_bytes,
                plan.lower_bound,
                print_memory(&g, &plan)
            );
            figures.push((
                name,
                plan.intermediates_bytes,
                plan.arena_bytes,
                plan.lower_bound,
            ));
        }
    }
    // The figures the README states (the first dims of each graph).
    assert_eq!(
        figures
            .iter()
            .step_by(2)
            .map(|f| (f.0, f.1, f.2, f.3))
            .collect::<Vec<_>>(),
        [
            ("mlp", 131072, 131072, 131072),
            ("transformer_block", 1572864, 786432, 786432),
            ("conv_block", 1048576, 1048576, 1048576),
            ("layernorm", 0, 0, 0),
        ]
    );
}

#[test]
fn streams_cost_the_reference_graphs_no_arena_bytes() {
    let mut figures = Vec::new();
    for (name, pairs) in REFERENCE {
        let src =
            std::fs::read_to_string(format!("../examples/graphs/{name}.uop")).expect("example");
        let g = prepared(&src);
        let sequential = plan_memory(&g, &dims(pairs)).expect("plan");
        let mut row = vec![sequential.arena_bytes];
        for streams in [2, 4] {
            let s = uop_graph::schedule::schedule(
                &g,
                &uop_graph::schedule::ScheduleOptions {
                    max_streams: Some(streams),
                    ..Default::default()
                },
            )
            .expect("schedules");
            let plan =
                uop_graph::memory::plan_memory_scheduled(&g, &dims(pairs), &s).expect("plan");
            check_shape(&g, &plan).expect("checks");
            check_concurrency(&g, &plan, &s).expect("no race");
            row.push(s.max_stream_count());
            row.push(plan.arena_bytes);
        }
        figures.push((name.to_string(), row));
    }
    // Per graph: the one-stream arena, then the streams used and the arena for at
    // most 2 and 4 streams (docs/graph-memory.md). Only the transformer block has
    // independent nodes (its q, k, v projections), and their buffers are live
    // together on one stream too.
    let expected = [
        ("mlp", [131072, 1, 131072, 1, 131072]),
        ("transformer_block", [786432, 2, 786432, 3, 786432]),
        ("conv_block", [1048576, 1, 1048576, 1, 1048576]),
        ("layernorm", [0, 1, 0, 1, 0]),
    ];
    assert_eq!(
        figures,
        expected
            .iter()
            .map(|(n, r)| (n.to_string(), r.to_vec()))
            .collect::<Vec<_>>()
    );
}
