//! `consts` (DESIGN.md §17): every Const moved right after the graph's Input node,
//! order and ids kept; the graph then passes `Checks::CONSTS_FIRST`.

use crate::pass_support;

use pass_support::{only, parse, prepared};
use uop_graph::{Checks, Op, verify};

#[test]
fn consts_move_to_the_front_in_order() {
    let g = parse(
        "\
input x: f32[2]
a = exp(x)
c1 = const(f32, [2], 1.0, 2.0)
b = mul(a, c1)
fn more(v, i) { return lt(i, 3) }
fn step(v, i) { return add(v, c1), add(i, 1) }
r, n = while(more, step, b, 0)
c2 = const(f32, [2], 3.0, 4.0)
y = add(r, c2)
output y
",
    );
    assert!(verify(&g, Checks::CONSTS_FIRST).is_err());
    let ids_of = |g: &uop_graph::Graph| -> Vec<u32> {
        g.nodes()
            .iter()
            .filter(|n| matches!(n.op, Op::Const(_)))
            .map(|n| n.id.0)
            .collect()
    };
    let before = ids_of(&g);
    let (after, report) = prepared(&g, &only(&["consts"]));
    verify(&after, Checks::CONSTS_FIRST).expect("consts first");
    assert_eq!(ids_of(&after), before, "the same Consts, in the same order");
    let kinds: Vec<&str> = after.nodes().iter().take(4).map(|n| n.op.kind()).collect();
    assert_eq!(kinds, ["input", "const", "const", "const"]);
    assert_eq!(report.pass("consts").map(|p| p.rewrites), Some(3));
    pass_support::assert_same_results(&g, &after);
    // Again: nothing to move.
    let (_, again) = prepared(&after, &only(&["consts"]));
    assert_eq!(again.pass("consts").map(|p| p.changed), Some(false));
}

#[test]
fn a_graph_without_consts_skips_the_pass() {
    let g = parse("input x: f32[2]\ny = exp(x)\noutput y\n");
    let (_, report) = prepared(&g, &only(&["consts"]));
    assert!(report.pass("consts").is_some_and(|p| p.skipped()));
}
