//! `simplify` (DESIGN.md §17): each algebraic bypass on graph text, printed after the
//! pass (and after `dead`, which removes what the bypass left unread); the verifier
//! runs after every pass and the interpreter gives the same results before and after.

use crate::pass_support;

use pass_support::{after, assert_same_results, check, only, parse, prepared};
use uop_graph::text::print_graph;
use uop_graph::{Checks, move_nodes, verify};

#[test]
fn multiplying_by_one_and_adding_zero_are_bypassed() {
    let src = "\
input x: f32[N]
a = mul(x, 1)
b = mul(1, a)
c = add(b, 0)
d = add(0.0, c)
e = sub(d, 0)
f = div(e, 1)
y = exp(f)
output y
";
    let report = check(
        &["simplify", "dead"],
        src,
        "\
input x: f32[N]
y = exp(x)
output y
",
    );
    assert_eq!(report.pass("simplify").map(|p| p.rewrites), Some(6));
    // Alone, the pass only rewires the readers: the bypassed nodes are left for `dead`.
    let (text, _) = after(&["simplify"], src);
    assert_eq!(
        text,
        "\
input x: f32[N]
a = mul(x, 1)
b = mul(1, x)
c = add(x, 0)
d = add(0.0, x)
e = sub(x, 0)
f = div(x, 1)
y = exp(x)
output y
"
    );
}

#[test]
fn a_const_of_ones_counts_and_broadcasting_or_other_constants_do_not() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[3]
input s: f32[]
ones = const(f32, [3], 1.0, 1.0, 1.0)
a = mul(x, ones)
b = mul(s, ones)
c = mul(x, 2)
d = sub(0, x)
e = div(1, x)
f = add(s, 1)
output a, b, c, d, e, f
",
        "\
input x: f32[3]
input s: f32[]
ones = const(f32, [3], 1.0, 1.0, 1.0)
b = mul(s, ones)
c = mul(x, 2)
d = sub(0, x)
e = div(1, x)
f = add(s, 1)
a = x
output a, b, c, d, e, f
",
    );
}

#[test]
fn inverse_transposes_and_permutes_cancel() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[A, B, C]
t = transpose(transpose(x, 0, 1), 1, 0)
u = transpose(transpose(x, -1, 0), 2, 0)
p = permute(permute(x, [1, 2, 0]), [2, 0, 1])
q = permute(permute(x, [1, 2, 0]), [1, 2, 0])
r = transpose(permute(x, [1, 0, 2]), 0, 1)
output t, u, p, q, r
",
        "\
input x: f32[A, B, C]
t8 = permute(x, [1, 2, 0])
q = permute(t8, [1, 2, 0])
t = x
u = x
p = x
r = x
output t, u, p, q, r
",
    );
}

#[test]
fn reshape_chains_collapse_and_identity_reshapes_go() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[2, 6]
a = reshape(reshape(x, [12]), [3, 4])
b = reshape(reshape(x, [12]), [2, 6])
c = reshape(x, [2, 6])
d = exp(reshape(reshape(reshape(x, [12]), [4, 3]), [6, 2]))
output a, b, c, d
",
        "\
input x: f32[2, 6]
a = reshape(x, [3, 4])
t9 = reshape(x, [6, 2])
d = exp(t9)
b = x
c = x
output a, b, c, d
",
    );
}

#[test]
fn identity_reindexes_go_and_other_reindexes_stay() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[A, B]
a = reindex(x, [A, B], [i0, i1])
b = reindex(x, [A, B], [i0, 0])
c = reindex(x, [A, B], [i0, i1], fill=2.0)
d = reindex(x, [A, 1], [i0, i1])
output a, b, c, d
",
        "\
input x: f32[A, B]
b = reindex(x, [A, B], [i0, 0])
d = reindex(x, [A, 1], [i0, i1])
a = x
c = x
output a, b, c, d
",
    );
}

#[test]
fn where_with_a_constant_condition_takes_one_side() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[3]
input y: f32[3]
zeros = const(f32, [3], 0.0, 0.0, 0.0)
a = where(1, x, y)
b = where(0, x, y)
c = where(zeros, x, y)
d = where(lt(x, 0), x, y)
e = where(1, 2.0, y)
output a, b, c, d, e
",
        "\
input x: f32[3]
input y: f32[3]
t6 = lt(x, 0)
d = where(t6, x, y)
e = where(1, 2.0, y)
a = x
b = y
c = y
output a, b, c, d, e
",
    );
}

#[test]
fn an_if_with_a_constant_condition_is_inlined() {
    let src = "\
input x: f32[N]
fn th(v) {
  w = exp(v)
  return mul(w, v)
}
fn el(v) { return neg(v) }
r = if(1, th, el, add(x, 1))
s = if(0, th, el, x)
output r, s
";
    let report = check(
        &["simplify", "dead"],
        src,
        "\
input x: f32[N]
t3 = add(x, 1)
w = exp(t3)
r = mul(w, t3)
s = neg(x)
output r, s
",
    );
    assert_eq!(report.pass("simplify").map(|p| p.rewrites), Some(2));
    assert_eq!(
        report.pass("dead").map(|p| p.rewrites),
        Some(4),
        "each if with its branches is one unit, and so is each condition's Const"
    );
}

#[test]
fn an_inlined_branch_moves_after_an_argument_defined_after_it() {
    // The text defines arguments before the branches; a rewrite may leave an argument
    // after them. Move `add(x, 1)` to just before the `if`, after the bodies.
    let mut g = parse(
        "\
input x: f32[N]
a = add(x, 1)
fn th(v) {
  w = exp(v)
  return mul(w, v)
}
fn el(v) { return neg(v) }
r = if(1, th, el, a)
output r
",
    );
    let a = g.nodes()[1].id;
    let r = g.nodes().last().map(|n| n.id).expect("the if");
    move_nodes(&mut g, Some(r), &[a]).expect("a valid move");
    verify(&g, Checks::NONE).expect("verifies");
    let body = g.node(r).map(|n| n.op.interfaces()[0].input).expect("then");
    assert!(g.position(a) > g.position(body), "{}", print_graph(&g));
    assert_eq!(g.position(a), Some(g.len() - 2));
    let (after, _) = prepared(&g, &only(&["simplify", "dead"]));
    assert_same_results(&g, &after);
    assert_eq!(
        print_graph(&after),
        "\
input x: f32[N]
a = add(x, 1)
w = exp(a)
r = mul(w, a)
output r
"
    );
}

#[test]
fn a_case_with_a_constant_selector_takes_its_branch_or_passes_the_arguments_through() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[]
fn zero(v) { return mul(v, 0) }
fn half(v) { return add(mul(v, 0.5), 0.5) }
fn flat(v) { return 1.5 }
a = case(1, [zero, half, flat], x)
b = case(-1, [zero, half, flat], x)
c = case(2.7, [zero, half, flat], x)
output a, b, c
",
        "\
input x: f32[]
c = 1.5
t6 = mul(x, 0.5)
a = add(t6, 0.5)
b = x
output a, b, c
",
    );
}

#[test]
fn a_case_selector_past_the_branches_is_left_to_fail_at_run_time() {
    let g = parse(
        "\
input x: f32[]
fn zero(v) { return mul(v, 0) }
a = case(3, [zero], x)
output a
",
    );
    let (after, report) = prepared(&g, &only(&["simplify"]));
    assert_eq!(report.pass("simplify").map(|p| p.rewrites), Some(0));
    assert_eq!(print_graph(&after), print_graph(&g));
}
#[test]
fn a_while_whose_condition_is_false_at_the_start_is_its_initial_state() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[]
fn more(v, i) { return lt(i, 5) }
fn step(v, i) { return mul(v, 2), add(i, 1) }
v7, n7 = while(more, step, x, 7)
v0, n0 = while(more, step, x, 0)
fn never(v) { return 0 }
fn again(v) { return exp(v) }
w = while(never, again, x)
output v7, n7, v0, n0, w
",
        "\
input x: f32[]
n7 = 7.0
t9 = 0.0
fn v0_cond(v, i) {
  t11 = lt(i, 5)
  return t11
}
fn v0_body(v, i) {
  t13 = mul(v, 2)
  t14 = add(i, 1)
  return t13, t14
}
v0, n0 = while(v0_cond, v0_body, x, t9)
v7 = x
w = x
output v7, n7, v0, n0, w
",
    );
}

#[test]
fn a_constant_if_inside_a_loop_body_is_inlined_there() {
    check(
        &["simplify", "dead"],
        "\
input x: f32[]
fn more(v, i) { return lt(i, 3) }
fn step(v, i) {
  fn th(u) { return mul(u, 2) }
  fn el(u) { return u }
  w = if(1, th, el, v)
  return w, add(i, 1)
}
r, n = while(more, step, x, 0)
output r
",
        "\
input x: f32[]
t2 = 0.0
fn r_cond(v, i) {
  t4 = lt(i, 3)
  return t4
}
fn r_body(v, i) {
  t8 = mul(v, 2)
  t11 = add(i, 1)
  return t8, t11
}
r, n = while(r_cond, r_body, x, t2)
output r
",
    );
}
