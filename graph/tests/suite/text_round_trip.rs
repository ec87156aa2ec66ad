//! Graph text round trips: print -> parse -> print writes the same text, for graphs
//! with every construct of DESIGN.md §13.2; parsed text runs with the numbers of
//! NNC's while / case..of tests.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, default_registry, run};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Prints the graph of `src`, parses the print and prints again: the same text.
fn stable(src: &str) -> String {
    let first = print_graph(&parse(src));
    let second = print_graph(&parse(&first));
    assert_eq!(second, first, "unstable print of\n{src}");
    first
}

fn scalar(v: f64) -> Tensor {
    Tensor::filled(DType::F32, vec![], v)
}

fn run_scalars(g: &Graph, inputs: &[f64]) -> Vec<f64> {
    let inputs: Vec<Tensor> = inputs.iter().map(|v| scalar(*v)).collect();
    run(g, &inputs, &HashMap::new())
        .unwrap_or_else(|e| panic!("{e}"))
        .iter()
        .map(|t| t.data[0])
        .collect()
}

const NNC_WHILE: &str = "input x: f32[]
input y: f32[]
fn more(v, i) { return lt(i, 5) }
fn step(v, i) { return mul(y, v), add(i, 1) }
v5, n = while(more, step, 1, 0)
out = mul(x, v5)
output out, n
";

#[test]
fn nncs_while_prints_with_its_functions_before_the_loop() {
    assert_eq!(
        stable(NNC_WHILE),
        "input x: f32[]
input y: f32[]
t2 = 1.0
t3 = 0.0
fn v5_cond(v, i) {
  t5 = lt(i, 5)
  return t5
}
fn v5_body(v, i) {
  t7 = mul(y, v)
  t8 = add(i, 1)
  return t7, t8
}
v5, n = while(v5_cond, v5_body, t2, t3)
out = mul(x, v5)
output out, n
"
    );
    let out = run_scalars(&parse(NNC_WHILE), &[0.34, 1.11]);
    assert!((out[0] - 0.5729198).abs() < 1e-6, "{out:?}");
    assert_eq!(out[1], 5.0);
}

const NNC_CASE: &str = "input x: f32[]
fn b0(v) { return mul(v, 0) }
fn b1(v) { return add(mul(v, 0.5), 0.5) }
fn b2(v) { return add(mul(v, 0), 1.5) }
fn selector(v) { return where(lt(v, 0), 0, where(lt(v, 1), -1, where(lt(v, 2), 1, 2))) }
r = case(selector(x), [b0, b1, b2], x)
output r
";

#[test]
fn nncs_case_selects_a_branch_or_passes_through() {
    let g = parse(NNC_CASE);
    for (x, want) in [(-1.0, 0.0), (0.76, 0.76), (1.226, 1.113), (2.1, 1.5)] {
        let out = run_scalars(&g, &[x]);
        assert!((out[0] - want).abs() < 1e-6, "x = {x}: {out:?}");
    }
    let text = stable(NNC_CASE);
    assert!(text.contains("r = case(t"), "{text}");
    assert!(
        text.contains("[r_branch0, r_branch1, r_branch2], x)"),
        "{text}"
    );
}

const NNC_CASE_IN_WHILE: &str = "input x: f32[]
fn b0(v) { return mul(v, 0) }
fn b1(v) { return add(mul(v, 0.5), 0.5) }
fn b2(v) { return add(mul(v, 0), 1.5) }
fn more(v, i) { return lt(i, 4) }
fn step(v, i) {
  sel = where(lt(v, 0), 0, where(lt(v, 1), -1, where(lt(v, 2), 1, 2)))
  r = case(sel, [b0, b1, b2], v)   # functions of the enclosing scope
  return r, add(i, 1)
}
v4, n = while(more, step, x, 0)
out = mul(v4, 0.3)
output out
";

#[test]
fn nncs_case_inside_a_while() {
    let g = parse(NNC_CASE_IN_WHILE);
    let out = run_scalars(&g, &[1.226]);
    assert!((out[0] - 0.3042375).abs() < 1e-6, "{out:?}");
    let out = run_scalars(&g, &[0.8]);
    assert!((out[0] - 0.24).abs() < 1e-6, "{out:?}");
    // The case's branches are printed inside the body that uses them.
    let text = stable(NNC_CASE_IN_WHILE);
    // (Their parameter is `v_2`, as `v` is the body's.)
    assert!(text.contains("\n  fn r_branch0(v_2) {\n    t"), "{text}");
    let again = parse(&text);
    assert!((run_scalars(&again, &[1.226])[0] - 0.3042375).abs() < 1e-6);
}

#[test]
fn every_construct_prints_back_stably() {
    let src = "param k
input x: f32[N, 4]
input c: f32[]
fn twice(v) { return mul(v, 2) }          # an inline function
fn pick(a, b) { return b, a }              # multiple results
y = twice(exp(x))
p, q = pick(y, x)
fn keep(v: f32[N, 4]) { return v }         # a typed parameter
fn clear(v) { return mul(v, 0) }
z = if(c, keep, clear, p)
fn row($i, v) {                            # parallel's index
  fn scale(w) { return mul(w, c) }         # nested, closing over c
  r = reindex(v, [4], [$i, i0])
  return scale(r)
}
rows = parallel(N, row, z)
fn unit(v) { return reduce_sum(v, [0, 1]), 1.5 }   # a literal result
s, one = call(unit, rows)
xc = chunk(x, size=2)
m = const(f32, [2], 1, -2.5)
w = where(lt(reindex(q, [$k], [0, 0]), 0), 0, 1)
sink(xc, m, w)
output s, one, 0.25
";
    let text = stable(src);
    for needle in [
        "fn unit(",
        "s, one = call(unit, rows)",
        "fn rows_body($i, ",
        "  t10 = mul(r, c)\n  return t10\n}\nrows = parallel(N, rows_body, z)",
        "fn z_then(v) { return v }",
        "z = if(c, z_then, z_else, x)",
        "xc = chunk(x, size=2)",
        "m = const(f32, [2], 1.0, -2.5)",
        "sink(xc, m, w)",
        "output s, one, 0.25",
        "reindex(v, [4], [$i, i0])",
    ] {
        assert!(text.contains(needle), "{needle} not in\n{text}");
    }
}

#[test]
fn a_super_node_without_results_is_a_statement() {
    let src = "input x: f32[N]\nfn nothing(v) { return }\ncall(nothing, x)\noutput x\n";
    let text = stable(src);
    assert_eq!(
        text,
        "input x: f32[N]\nfn nothing(v) { return }\ncall(nothing, x)\noutput x\n"
    );
}

#[test]
fn nested_parallel_indices_of_one_name_print_apart() {
    use uop_codegen::index::Expr;
    use uop_graph::{Arg, GraphBuilder, Item};
    // Both bodies call their index `i` (as the builder allows): the inner one prints
    // as `$i_2`, and its calls follow.
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).expect("input");
    let row = |name: &str| Arg::List(vec![Item::Expr(Expr::Param(name.into()) * Expr::Int(2))]);
    let out = b
        .parallel(Expr::Int(2), "i", &[x], |g, p| {
            let v = p[0];
            let inner = g.parallel(Expr::Int(3), "i", &[v], |g, q| {
                let r = g.call("reindex", &[q[0].into(), Arg::List(vec![]), row("i")], &[])?;
                Ok(vec![r.into()])
            })?;
            Ok(vec![inner[0].into()])
        })
        .expect("builds");
    b.output(out[0]);
    let g = b.finish();
    let text = print_graph(&g);
    assert!(text.contains("($i_2, "), "{text}");
    assert!(text.contains("[$i_2 * 2]"), "{text}");
    let parsed = parse(&text);
    assert_eq!(print_graph(&parsed), text);
    let input = Tensor::new(DType::F32, vec![5], vec![1.0, 2.0, 3.0, 4.0, 5.0]).expect("tensor");
    let expected = run(&g, std::slice::from_ref(&input), &HashMap::new()).expect("runs");
    let found = run(&parsed, &[input], &HashMap::new()).expect("runs");
    assert_eq!(found[0].data, expected[0].data);
    assert_eq!(found[0].data, vec![1.0, 3.0, 5.0, 1.0, 3.0, 5.0]);
}
