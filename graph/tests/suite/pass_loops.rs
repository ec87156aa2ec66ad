//! `loops` (DESIGN.md §20, seed 000): partitions by the seed's method, its three
//! errors and uop's rules (`docs/graph-looping.md`), the stable sort, one Sink at the
//! end; the graph then passes `Checks::PARTITIONS` and computes the same results.

use crate::pass_support;

use pass_support::{check, only, parse, prepared};
use uop_graph::looping::partitions;
use uop_graph::pass::prepare;
use uop_graph::{Checks, Graph, verify};

/// The seed's own example: a Const, A, a loop-control node fed by A, B fed by it, D
/// fed by A, the output fed by B and D.
const SEED: &str = "\
input x: f32[N, 2]
k = const(f32, [2], 1.0, 2.0)
a = mul(x, k)
ac = chunk(a, size=2)
b = neg(ac)
d = reduce_sum(a, [0])
out = sub(b, d)
output out
";

#[test]
fn the_seeds_example_partitions_0_1_1_0_1_sorts_d_first_and_sinks_a_and_d() {
    let g = parse(SEED);
    let p = partitions(&g).expect("keeps the rules");
    let ids: Vec<_> = g.nodes().iter().map(|n| n.id).collect();
    // input, k, then A, the LCN, B, D, the output.
    let parts: Vec<usize> = ids[2..].iter().map(|id| p.partition(*id)).collect();
    assert_eq!(parts, [0, 1, 1, 0, 1]);
    assert!(p.needs_sort);
    assert_eq!(p.chunks, [ids[3]]);
    assert!(verify(&g, Checks::PARTITIONS).is_err(), "unsorted, no Sink");
    let report = check(
        &["loops"],
        SEED,
        "\
input x: f32[N, 2]
k = const(f32, [2], 1.0, 2.0)
a = mul(x, k)
d = reduce_sum(a, [0])
ac = chunk(a, size=2)
b = neg(ac)
out = sub(b, d)
sink(a, d)
output out
",
    );
    // D moved, the Sink appended.
    assert_eq!(report.pass("loops").map(|p| p.rewrites), Some(2));
}

#[test]
fn a_sorted_graph_with_its_sink_is_left_alone() {
    let (once, _) = prepared(&parse(SEED), &only(&["loops"]));
    let (_, again) = prepared(&once, &only(&["loops"]));
    assert_eq!(again.pass("loops").map(|p| p.changed), Some(false));
}

#[test]
fn nested_chunks_open_partitions_in_turn_and_the_sink_holds_each_crossing_once() {
    check(
        &["loops"],
        "\
input x: f32[N]
input s: f32[]
c1 = chunk(x, size=4)
a = mul(c1, s)
c2 = chunk(a, size=2)
b = add(c2, s)
y = mul(b, b)
output y
",
        "\
input x: f32[N]
input s: f32[]
c1 = chunk(x, size=4)
a = mul(c1, s)
c2 = chunk(a, size=2)
b = add(c2, s)
y = mul(b, b)
sink(x, s, a)
output y
",
    );
}

#[test]
fn a_graph_without_chunks_skips_the_pass() {
    let g = parse("input x: f32[2]\ny = exp(x)\noutput y\n");
    let (_, report) = prepared(&g, &only(&["loops"]));
    assert!(report.pass("loops").is_some_and(|p| p.skipped()));
}

/// The `loops` pass's error on `src`.
fn error(src: &str) -> String {
    match prepare(parse(src), &only(&["loops"])) {
        Ok((g, _)) => panic!("no error; the result:\n{}", print(&g)),
        Err(e) => e.to_string(),
    }
}

fn print(g: &Graph) -> String {
    uop_graph::text::print_graph(g)
}

#[test]
fn a_chunk_not_downstream_of_the_previous_one_is_an_error() {
    assert_eq!(
        error(
            "\
input x: f32[N]
input y: f32[N]
a = chunk(x, size=2)
b = chunk(y, size=2)
c = add(a, b)
output c
"
        ),
        "pass `loops`: %3: chunk not downstream of the previous loop-control node %2"
    );
}

#[test]
fn more_than_four_chunks_is_an_error() {
    assert_eq!(
        error(
            "\
input x: f32[N]
a = chunk(x, size=2)
b = chunk(a, size=2)
c = chunk(b, size=2)
d = chunk(c, size=2)
e = chunk(d, size=2)
output e
"
        ),
        "pass `loops`: 5 chunk nodes (%2, %3, %4, %5, %6), at most 4 loop-control nodes are allowed"
    );
}

#[test]
fn an_output_outside_the_last_partition_is_an_error() {
    assert_eq!(
        error(
            "\
input x: f32[N]
a = chunk(x, size=2)
b = neg(a)
e = exp(x)
output b, e
"
        ),
        "pass `loops`: output 1 (%4) is not downstream of the last loop-control node %2"
    );
    assert_eq!(
        error("input x: f32[N]\na = chunk(x, size=2)\noutput a, 0.5\n"),
        "pass `loops`: output 1 (0.5) is not downstream of the last loop-control node %2"
    );
}

#[test]
fn a_reduction_over_the_looped_rows_is_an_error() {
    assert_eq!(
        error(
            "\
input x: f32[N, 3]
a = chunk(x, size=2)
m = reduce_sum(a, [0])
y = sub(a, m)
output y
"
        ),
        "pass `loops`: %3 (call) gives f32[1, 3] in the loop of chunk %2: its axis 0 is not \
         the looped rows `N`, so the chunks' results would differ from the whole batch's \
         (every value inside a chunk loop keeps its rows)"
    );
}

#[test]
fn a_chunk_inside_a_function_and_control_flow_inside_a_loop_are_errors() {
    let nested = error(
        "\
input x: f32[N]
fn f(v) {
  c = chunk(v, size=2)
  return neg(c)
}
y = call(f, x)
output y
",
    );
    assert!(
        nested.contains("a chunk loops the whole graph and must stand at the top level"),
        "{nested}"
    );
    let control = error(
        "\
input x: f32[N]
a = chunk(x, size=2)
fn f(v) { return neg(v) }
y = call(f, a)
output y
",
    );
    assert!(
        control.contains("(noinline) reads values looped by chunk %2: control flow inside a chunk loop is not supported"),
        "{control}"
    );
}

#[test]
fn ops_that_mix_rows_but_keep_their_number_are_errors_naming_the_node() {
    // Each keeps the chunk's rows, so "every looped value keeps its rows" holds, but
    // row r of the result reads other rows: a chunk alone cannot compute it.
    let mixing = [
        (
            "softmax(a, axis=0)",
            "its reduce_max (max) reduces axis 0, across the looped rows",
        ),
        (
            "flip(a, axis=0)",
            "its reindex (t1) reads its input's rows at other positions",
        ),
        (
            "cumsum(a, axis=0)",
            "its reindex (t1) reads its input's rows at other positions",
        ),
    ];
    for (op, what) in mixing {
        let src = format!("input x: f32[N, 3]\na = chunk(x, size=2)\ny = {op}\noutput y\n");
        let e = error(&src);
        assert!(e.starts_with("pass `loops`: %3 (call "), "{op}: {e}");
        assert!(
            e.contains("mixes the rows of the loop of chunk %2: "),
            "{op}: {e}"
        );
        assert!(e.contains(what), "{op}: {e}");
        assert!(
            e.ends_with(
                "so the chunks' results would differ from the whole batch's (an op inside \
                 a chunk loop computes each row from that row alone)"
            ),
            "{op}: {e}"
        );
    }
    // An iota over the rows as a call of its own stands in partition 0 (it reads
    // nothing); the kernels pass recomputes it inside the kernel that reads it,
    // which is in the loop, where the chunk's rows are numbered from 0.
    let src = "input x: f32[N, 3]\na = chunk(x, size=2)\ny = add(a, iota([N, 3], 0))\noutput y\n";
    let e = match prepare(parse(src), &only(&["kernels", "loops"])) {
        Ok((g, _)) => panic!("no error; the result:\n{}", print(&g)),
        Err(e) => e.to_string(),
    };
    assert!(
        e.contains(
            "(kernel k0) mixes the rows of the loop of chunk %2: its iota (v3) numbers the \
             looped rows along axis 0: a chunk's rows are numbered from 0"
        ),
        "{e}"
    );
}

#[test]
fn ops_along_other_axes_and_lookups_by_row_keep_each_row_to_itself() {
    for op in [
        "softmax(a, axis=1)",
        "flip(a, axis=1)",
        "cumsum(a, axis=1)",
        "mul(a, reindex(w, [N, 3], [i1]))",
        "add(a, iota([N, 3], 1))",
    ] {
        let src = format!(
            "input x: f32[N, 3]\ninput w: f32[3]\na = chunk(x, size=2)\ny = {op}\noutput y\n"
        );
        partitions(&parse(&src)).unwrap_or_else(|e| panic!("{op}: {e}"));
    }
    // An embedding lookup: a table outside the loop read at each row's index.
    let src = "\
input ix: i32[N]
input table: f32[V, 3]
c = chunk(ix, size=2)
y = index_select(table, c, axis=0)
output y
";
    partitions(&parse(src)).unwrap_or_else(|e| panic!("index_select: {e}"));
}
