//! `cse` (DESIGN.md §17): identical calls on identical inputs in one scope merged, and
//! identical Consts.

use crate::pass_support;

use pass_support::check;

#[test]
fn identical_calls_merge_and_merges_cascade() {
    let report = check(
        &["cse", "dead"],
        "\
input x: f32[N]
a = exp(x)
b = exp(x)
c = neg(a)
d = neg(b)
e = add(c, d)
f = reindex(x, [N], [i0], fill=1.0)
g = reindex(x, [N], [i0], fill=2.0)
output e, b, f, g
",
        "\
input x: f32[N]
a = exp(x)
c = neg(a)
e = add(c, c)
f = reindex(x, [N], [i0], fill=1.0)
g = reindex(x, [N], [i0], fill=2.0)
b = a
output e, b, f, g
",
    );
    assert_eq!(report.pass("cse").map(|p| p.rewrites), Some(2));
}

#[test]
fn consts_with_identical_data_merge_and_negative_zero_is_not_zero() {
    check(
        &["cse", "dead"],
        "\
input x: f32[2]
a = const(f32, [2], 1.0, 2.0)
b = const(f32, [2], 1.0, 2.0)
c = const(f32, [2], 0.0, 0.0)
d = const(f32, [2], -0.0, 0.0)
e = const(f32, [2], 2.0, 1.0)
y = add(add(add(mul(x, a), mul(x, b)), add(c, d)), e)
output y
",
        "\
input x: f32[2]
a = const(f32, [2], 1.0, 2.0)
c = const(f32, [2], 0.0, 0.0)
d = const(f32, [2], -0.0, 0.0)
e = const(f32, [2], 2.0, 1.0)
t7 = mul(x, a)
t9 = add(t7, t7)
t10 = add(c, d)
t11 = add(t9, t10)
y = add(t11, e)
output y
",
    );
}

#[test]
fn identical_calls_in_different_scopes_stay_apart() {
    // `mul(s, 2)` in both loop bodies reads only an outer value: the hierarchy hoists
    // it out of both (one scope), so the two merge. `reindex(s, [N], [])` is larger
    // than what it reads, so the hierarchy keeps it in each loop body that uses it
    // (XLA's guard): two scopes, not merged.
    check(
        &["cse", "dead"],
        "\
input x: f32[N]
input s: f32[]
fn more(v, i) { return lt(i, 2) }
fn one(v, i) { return add(mul(v, mul(s, 2)), reindex(s, [N], [])), add(i, 1) }
fn two(v, i) { return add(mul(v, mul(s, 2)), reindex(s, [N], [])), add(i, 1) }
a, n = while(more, one, x, 0)
b, m = while(more, two, x, 0)
y = add(a, b)
output y
",
        "\
input x: f32[N]
input s: f32[]
t2 = 0.0
t6 = mul(s, 2)
fn a_cond(v, i) {
  t4 = lt(i, 2)
  return t4
}
fn a_body(v, i) {
  t7 = mul(v, t6)
  t8 = reindex(s, [N], [])
  t9 = add(t7, t8)
  t10 = add(i, 1)
  return t9, t10
}
a, n = while(a_cond, a_body, x, t2)
fn b_cond(v, i) {
  t14 = lt(i, 2)
  return t14
}
fn b_body(v, i) {
  t17 = mul(v, t6)
  t18 = reindex(s, [N], [])
  t19 = add(t17, t18)
  t20 = add(i, 1)
  return t19, t20
}
b, m = while(b_cond, b_body, x, t2)
y = add(a, b)
output y
",
    );
}

#[test]
fn calls_merge_by_structure_and_an_attribute_that_differs_keeps_them_apart() {
    // `a` and `b` are the same call (op, arguments, attribute, input); `c` differs
    // only in its `fill` attribute, and `-0.0` is not `0.0`; `d` only in the
    // attribute's value.
    check(
        &["cse", "dead"],
        "\
input x: f32[N]
a = reindex(x, [N], [i0], fill=0.0)
b = reindex(x, [N], [i0], fill=0.0)
c = reindex(x, [N], [i0], fill=-0.0)
d = reindex(x, [N], [i0], fill=0.5)
output a, b, c, d
",
        "\
input x: f32[N]
a = reindex(x, [N], [i0], fill=0.0)
c = reindex(x, [N], [i0], fill=-0.0)
d = reindex(x, [N], [i0], fill=0.5)
b = a
output a, b, c, d
",
    );
}
