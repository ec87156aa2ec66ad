//! `fold` (DESIGN.md §17): calls on Consts become Consts of the interpreter's value,
//! within the size budget, NaN and infinities kept exactly.

use crate::pass_support;

use pass_support::{check, only, parse, prepared};
use uop_graph::Op;
use uop_graph::pass::PrepareOptions;
use uop_graph::text::print_graph;

#[test]
fn calls_on_consts_become_consts_and_chains_fold_in_one_sweep() {
    let report = check(
        &["fold"],
        "\
input x: f32[3]
a = const(f32, [3], 1.0, 2.0, 3.0)
b = mul(a, 2)
c = add(b, a)
y = mul(x, c)
output y
",
        "\
input x: f32[3]
a = const(f32, [3], 1.0, 2.0, 3.0)
b = const(f32, [3], 2.0, 4.0, 6.0)
c = const(f32, [3], 3.0, 6.0, 9.0)
y = mul(x, c)
output y
",
    );
    assert_eq!(report.pass("fold").map(|p| p.rewrites), Some(2));
}

#[test]
fn nan_and_infinities_are_kept_exactly() {
    let g = parse(
        "\
input x: f32[3]
a = const(f32, [3], 0.0, 1.0, -1.0)
b = div(a, 0)
y = add(x, b)
output y
",
    );
    let (after, _) = prepared(&g, &only(&["fold"]));
    let b = after
        .nodes()
        .iter()
        .find_map(|n| match &n.op {
            Op::Const(t) if n.name(0) == Some("b") => Some(t.clone()),
            _ => None,
        })
        .expect("b is a Const");
    assert!(b.data[0].is_nan());
    assert_eq!(&b.data[1..], &[f64::INFINITY, f64::NEG_INFINITY]);
    assert!(print_graph(&after).contains("b = const(f32, [3], nan, inf, -inf)"));
}

#[test]
fn the_budget_bounds_the_output_size_and_run_time_values_are_not_folded() {
    let src = "\
input x: f32[N]
param $k
a = const(f32, [3], 1.0, 2.0, 3.0)
b = exp(a)
c = reduce_sum(b, [0])
d = reindex(c, [N], [0])
e = reindex(a, [$k], [i0])
y = mul(x, d)
output y, e
";
    let g = parse(src);
    let options = PrepareOptions {
        fold_budget: 2,
        ..only(&["fold"])
    };
    let (after, report) = prepared(&g, &options);
    // exp(a) has 3 elements (over the budget); the sum of its folded value would have
    // one, but its input is not a Const; `d` has a symbolic size, `e` a `$param`.
    assert_eq!(report.pass("fold").map(|p| p.rewrites), Some(0));
    assert_eq!(print_graph(&after), print_graph(&g));
    let (after, report) = prepared(&g, &only(&["fold"]));
    let text = print_graph(&after);
    assert_eq!(
        report.pass("fold").map(|p| p.rewrites),
        Some(2),
        "{text}{report:?}"
    );
    assert!(text.contains("c = const(f32, [1], "), "{text}");
    assert!(text.contains("d = reindex(c, [N], [0])"), "{text}");
    assert!(text.contains("e = reindex(a, [$k], [i0])"), "{text}");
}

#[test]
fn a_graph_without_calls_skips_fold() {
    let g = parse(
        "\
input x: f32[3]
output x
",
    );
    let (_, report) = prepared(&g, &only(&["fold"]));
    assert!(report.pass("fold").is_some_and(|p| p.skipped()));
}
