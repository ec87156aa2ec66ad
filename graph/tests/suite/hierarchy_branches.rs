//! The branch guard of the definition hierarchy (`docs/graph-hierarchy.md`): a node
//! every use of which is inside one branch of an `if` or `case` is computed in that
//! branch, so the branch not taken runs nothing — not even a `while` that only reads
//! outer values. Nodes also used outside the branch, and cheap nodes under a branch
//! inside a loop, are still hoisted.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_graph::text::parse_graph;
use uop_graph::{Graph, RunOptions, default_registry, hierarchy, print_hierarchy, run_with};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

fn hierarchy_text(g: &Graph) -> String {
    let h = hierarchy(g).unwrap_or_else(|e| panic!("{e}"));
    print_hierarchy(g, &h)
}

/// The line of `text` containing `what`, and its indentation (in spaces).
fn indent_of(text: &str, what: &str) -> usize {
    let line = text
        .lines()
        .find(|l| l.contains(what))
        .unwrap_or_else(|| panic!("no `{what}` in\n{text}"));
    line.len() - line.trim_start().len()
}

/// `if(x > 0)`: the then-branch doubles `y` while `sum(y) < 100` (at most 1e6
/// trips, counted), the else-branch returns `y` and 0 trips. With `y = 0` the loop
/// never reaches 100, so running it when `x <= 0` takes a million trips (or hits
/// `--max-iterations`).
pub const GUARDED_LOOP: &str = "\
input x: f32[]
input y: f32[4]
fn more(v, i) { return lt(maximum(sum(v), mul(i, 0.0001)), 100) }
fn step(v, i) { return mul(v, 2), add(i, 1) }
fn grow(p) {
  r, n = while(more, step, y, 0)
  return r, n
}
fn keep(p) { return p, 0 }
out, trips = if(gt(x, 0), grow, keep, y)
output out, trips
";

fn run(g: &Graph, x: f32, y: f32) -> (Vec<f64>, f64) {
    let inputs = [
        Tensor::filled(uop_codegen::uop::DType::F32, Vec::new(), f64::from(x)),
        Tensor::filled(uop_codegen::uop::DType::F32, vec![4], f64::from(y)),
    ];
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    let r = run_with(g, &inputs, &HashMap::new(), &options).unwrap_or_else(|e| panic!("{e}"));
    (r.outputs[0].data.clone(), r.outputs[1].data[0])
}

#[test]
fn a_while_read_only_by_one_branch_stays_in_that_branch() {
    let g = parse(GUARDED_LOOP);
    let text = hierarchy_text(&g);
    let fn_then = indent_of(&text, "fn then(");
    assert!(indent_of(&text, "= while(") > fn_then, "{text}");
}

#[test]
fn the_branch_not_taken_runs_no_trips() {
    let g = parse(GUARDED_LOOP);
    // Else: y comes back and no loop ran (it would exceed 1000 iterations).
    assert_eq!(run(&g, -1.0, 0.0), (vec![0.0; 4], 0.0));
    // Then: 4 -> 8 -> 16 -> 32 -> 64 -> 128 in 5 trips.
    assert_eq!(run(&g, 1.0, 1.0), (vec![32.0; 4], 5.0));
}

#[test]
fn a_case_branch_keeps_its_loop_too() {
    let g = parse(
        "\
input x: f32[]
input y: f32[4]
fn more(v, i) { return lt(maximum(sum(v), mul(i, 0.0001)), 100) }
fn step(v, i) { return mul(v, 2), add(i, 1) }
fn keep(p) { return p, 0 }
fn grow(p) {
  r, n = while(more, step, y, 0)
  return r, n
}
out, trips = case(where(gt(x, 0), 1, 0), [keep, grow], y)
output out, trips
",
    );
    let text = hierarchy_text(&g);
    assert!(
        indent_of(&text, "= while(") > indent_of(&text, "fn branch1("),
        "{text}"
    );
    assert_eq!(run(&g, -1.0, 0.0), (vec![0.0; 4], 0.0));
    assert_eq!(run(&g, 1.0, 1.0), (vec![32.0; 4], 5.0));
}

#[test]
fn a_value_used_only_in_one_branch_is_computed_there() {
    let g = parse(
        "\
input x: f32[]
input y: f32[4]
fn heavy(p) { return add(exp(y), p) }
fn light(p) { return p }
out = if(gt(x, 0), heavy, light, y)
output out
",
    );
    let text = hierarchy_text(&g);
    assert!(
        indent_of(&text, "exp(") > indent_of(&text, "fn then("),
        "{text}"
    );
}

#[test]
fn a_value_also_used_outside_the_branch_is_hoisted() {
    let g = parse(
        "\
input x: f32[]
input y: f32[4]
e = exp(y)
fn heavy(p) { return add(e, p) }
fn light(p) { return p }
out = if(gt(x, 0), heavy, light, y)
both = add(out, e)
output both
",
    );
    assert_eq!(indent_of(&hierarchy_text(&g), "exp("), 0);
}

#[test]
fn a_value_used_by_both_branches_is_hoisted() {
    let g = parse(
        "\
input x: f32[]
input y: f32[4]
fn one(p) { return add(exp(y), p) }
fn two(p) { return mul(exp(y), p) }
out = if(gt(x, 0), one, two, y)
output out
",
    );
    // Two exp nodes (no cse here), each in its own branch.
    let text = hierarchy_text(&g);
    for line in text.lines().filter(|l| l.contains("exp(")) {
        assert!(line.starts_with("    %"), "{text}");
    }
}

/// A branch inside a loop body: a plain invariant stays hoisted out of the loop (it
/// runs once, not once per trip); a `while` under the branch goes into the branch,
/// inside the loop, so it runs only on the trips that take the branch.
const BRANCH_IN_LOOP: &str = "\
input x: f32[]
input y: f32[4]
fn more(v, i) { return lt(maximum(sum(v), mul(i, 0.0001)), 100) }
fn step(v, i) { return mul(v, 2), add(i, 1) }
fn grow(p) {
  r, n = while(more, step, y, 0)
  return add(r, exp(x)), n
}
fn keep(p) { return p, 0 }
fn outer_more(s, t, k) { return lt(k, 3) }
fn outer_step(s, t, k) {
  o, n = if(gt(x, 0), grow, keep, s)
  return o, add(t, n), add(k, 1)
}
out, trips, k = while(outer_more, outer_step, y, 0, 0)
output out, trips
";

#[test]
fn under_a_branch_in_a_loop_plain_invariants_hoist_and_loops_stay_in_the_branch() {
    let g = parse(BRANCH_IN_LOOP);
    let text = hierarchy_text(&g);
    assert_eq!(indent_of(&text, "exp("), 0, "{text}");
    // The outer loop at the top, the inner one in the branch.
    let loops: Vec<usize> = text
        .lines()
        .filter(|l| l.contains("= while("))
        .map(|l| l.len() - l.trim_start().len())
        .collect();
    assert_eq!(loops, [0, indent_of(&text, "fn then(") + 2], "{text}");
    let (out, trips) = run(&g, -1.0, 0.0);
    assert_eq!((out, trips), (vec![0.0; 4], 0.0));
    // Each outer trip runs the inner loop again: 3 x 5 trips.
    let e = 1f64.exp() as f32;
    let (out, trips) = run(&g, 1.0, 1.0);
    assert_eq!(trips, 15.0);
    assert_eq!(out, vec![f64::from(32.0f32 + e); 4]);
}
