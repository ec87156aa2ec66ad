//! A super node contains everything inside its bodies (docs/graph-hierarchy.md,
//! "Containment"): a value inside a body that no result needs but that reads a
//! parameter of an enclosing function keeps every super node between the two inside
//! that function. Each graph: the printed hierarchy, the verifier and the hierarchy
//! agreeing, a stable print, and the numbers.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Checks, Graph, default_registry, hierarchy, print_hierarchy, run, verify};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// The printed hierarchy of `src`, after checking that the graph verifies, prints
/// stably and computes the same numbers after a round trip through the text.
fn checked(src: &str, inputs: &[f64]) -> (String, Vec<Vec<f64>>) {
    let g = parse(src);
    verify(&g, Checks::NONE).unwrap_or_else(|e| panic!("{e}"));
    let h = hierarchy(&g).unwrap_or_else(|e| panic!("{e}"));
    let text = print_graph(&g);
    let again = parse(&text);
    verify(&again, Checks::NONE).unwrap_or_else(|e| panic!("{e}\n{text}"));
    assert_eq!(print_graph(&again), text);
    let inputs: Vec<Tensor> = inputs
        .iter()
        .map(|v| Tensor::filled(DType::F32, vec![], *v))
        .collect();
    let values = |g: &Graph| -> Vec<Vec<f64>> {
        run(g, &inputs, &HashMap::new())
            .unwrap_or_else(|e| panic!("{e}"))
            .into_iter()
            .map(|t| t.data)
            .collect()
    };
    let out = values(&g);
    assert_eq!(values(&again), out);
    (print_hierarchy(&g, &h), out)
}

#[test]
fn a_dead_value_in_a_parallel_body_reading_the_enclosing_function_keeps_the_parallel_inside() {
    // `dead` reads outer's `a` and body's `b`; the parallel reads only `x` and its
    // body's results, but it contains `dead`, so it stays in `outer`.
    let (h, out) = checked(
        "input x: f32[]
fn outer(a) {
  fn body($i, b) {
    dead = add(a, b)
    return b
  }
  r = parallel(3, body, x)
  return r
}
y = call(outer, x)
output y
",
        &[2.5],
    );
    assert_eq!(
        h,
        "\
input(%1 x: f32[])
%6 = call(outer, %1)
  fn outer(%2 a: f32[])
    %5 = parallel(3, %1)
      fn body(%3 i: i32[], %3.1 b: f32[])
        %4 = add(%2, %3.1)
        return %3.1
    return %5
output %6
"
    );
    assert_eq!(out, vec![vec![2.5, 2.5, 2.5]]);
}

#[test]
fn a_dead_value_in_a_while_body_reading_the_enclosing_function_keeps_the_while_inside() {
    let (h, out) = checked(
        "input x: f32[]
fn outer(a) {
  fn more(i, v) { return lt(i, 3) }
  fn step(i, v) {
    dead = mul(a, v)
    return add(i, 1), add(v, 2)
  }
  n, w = while(more, step, 0, x)
  return w
}
y = call(outer, x)
output y
",
        &[1.0],
    );
    assert_eq!(
        h,
        "\
input(%1 x: f32[])
%3 = const 0.0
%11 = call(outer, %1)
  fn outer(%2 a: f32[])
    %10, %10.1 = while(%3, %1)
      fn cond(%4 i: f32[], %4.1 v: f32[])
        %5 = lt(%4, 3)
        return %5
      fn body(%6 i: f32[], %6.1 v: f32[])
        %7 = mul(%2, %6.1)
        %8 = add(%6, 1)
        %9 = add(%6.1, 2)
        return %8, %9
    return %10.1
output %11
"
    );
    assert_eq!(out, vec![vec![7.0]]);
}

#[test]
fn a_dead_value_in_a_case_branch_in_a_while_body_keeps_both_inside_the_function() {
    // `dead` reads the branch's `v`, the loop's `i` and outer's `a`: the case is local
    // to the loop body (it reads `i` anyway), the loop to `outer` only by containment.
    let (h, out) = checked(
        "input x: f32[]
fn outer(a) {
  fn more(i, v) { return lt(i, 2) }
  fn step(i, v) {
    fn zero(u) {
      dead = add(mul(u, a), i)
      return mul(u, 0)
    }
    fn same(u) { return u }
    sel = where(lt(i, 1), 0, -1)
    w = case(sel, [zero, same], v)
    return add(i, 1), add(w, 1)
  }
  n, w = while(more, step, 0, x)
  return w
}
y = call(outer, x)
output y
",
        &[4.0],
    );
    assert_eq!(
        h,
        "\
input(%1 x: f32[])
%3 = const 0.0
%18 = call(outer, %1)
  fn outer(%2 a: f32[])
    %17, %17.1 = while(%3, %1)
      fn cond(%4 i: f32[], %4.1 v: f32[])
        %5 = lt(%4, 2)
        return %5
      fn body(%6 i: f32[], %6.1 v: f32[])
        %7 = lt(%6, 1)
        %8 = where(%7, 0, -1)
        %14 = case(%8, %6.1)
          fn branch0(%9 u: f32[])
            %10 = mul(%9, %2)
            %11 = add(%10, %6)
            %12 = mul(%9, 0)
            return %12
          fn branch1(%13 u: f32[])
            return %13
        %15 = add(%6, 1)
        %16 = add(%14, 1)
        return %15, %16
    return %17.1
output %18
"
    );
    // i = 0: case 0 gives 0, + 1 = 1; i = 1: selector -1 passes 1 through, + 1 = 2.
    assert_eq!(out, vec![vec![2.0]]);
}

#[test]
fn a_dead_value_three_levels_down_keeps_every_level_inside_the_outermost_function() {
    // if inside parallel inside call; `dead`, in the if's else branch, reads the
    // outermost parameter `a`: the if and the parallel stay inside `outer`.
    let (h, out) = checked(
        "input x: f32[]
input c: f32[]
fn outer(a) {
  fn keep(v) { return v }
  fn twice(v) {
    dead = sub(v, a)
    return mul(v, 2)
  }
  fn body($i, b) {
    r = if(c, keep, twice, b)
    return r
  }
  p = parallel(2, body, x)
  return p
}
y = call(outer, x)
output y
",
        &[1.5, 0.0],
    );
    assert_eq!(
        h,
        "\
input(%1 x: f32[], %1.1 c: f32[])
%10 = call(outer, %1)
  fn outer(%2 a: f32[])
    %9 = parallel(2, %1)
      fn body(%3 i: i32[], %3.1 b: f32[])
        %8 = if(%1.1, %3.1)
          fn then(%4 v: f32[])
            return %4
          fn else(%5 v: f32[])
            %6 = sub(%5, %2)
            %7 = mul(%5, 2)
            return %7
        return %8
    return %9
output %10
"
    );
    assert_eq!(out, vec![vec![3.0, 3.0]]);
}

#[test]
fn without_the_dead_value_the_same_super_nodes_are_hoisted() {
    // The first graph without `dead`: nothing inside the parallel depends on outer,
    // so it is computed at the top level (loop-invariant hoisting, unchanged).
    let (h, _) = checked(
        "input x: f32[]
fn outer(a) {
  fn body($i, b) { return b }
  r = parallel(3, body, x)
  return r
}
y = call(outer, x)
output y
",
        &[2.5],
    );
    assert_eq!(
        h,
        "\
input(%1 x: f32[])
%4 = parallel(3, %1)
  fn body(%3 i: i32[], %3.1 b: f32[])
    return %3.1
%5 = call(outer, %1)
  fn outer(%2 a: f32[])
    return %4
output %5
"
    );
}
