//! NNC's `while` and `case..of` tests (issue 19) written in graph text and run by the
//! graph interpreter; and the hierarchy of a parsed graph.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::text::parse_graph;
use uop_graph::{Graph, RunOptions, default_registry, hierarchy, print_hierarchy, run_with};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

fn scalar(v: f32) -> Tensor {
    Tensor::filled(DType::F32, Vec::new(), f64::from(v))
}

fn run1(g: &Graph, inputs: &[f32]) -> Vec<f32> {
    let inputs: Vec<Tensor> = inputs.iter().map(|&v| scalar(v)).collect();
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    let r = run_with(g, &inputs, &HashMap::new(), &options).unwrap_or_else(|e| panic!("{e}"));
    r.outputs.iter().map(|t| t.data[0] as f32).collect()
}

const NNC_WHILE: &str = "\
input x: f32[]
input y: f32[]
fn more(v, i) { return lt(i, 5) }
fn step(v, i) { return mul(y, v), add(i, 1) }
v5, n = while(more, step, 1, 0)
out = mul(x, v5)
output out, n
";

#[test]
fn nnc_while_in_text() {
    let g = parse(NNC_WHILE);
    let mut v = 1.0f32;
    for _ in 0..5 {
        v *= 1.11f32;
    }
    let r = run1(&g, &[0.34, 1.11]);
    assert_eq!(r, [0.34f32 * v, 5.0]);
    assert!((r[0] - 0.572_919_8).abs() < 1e-6);
}

const NNC_CASE: &str = "\
fn zero(v) { return mul(v, 0) }
fn half(v) { return add(mul(v, 0.5), 0.5) }
fn flat(v) { return add(mul(v, 0), 1.5) }
fn selector(v) { return where(lt(v, 0), 0, where(lt(v, 1), -1, where(lt(v, 2), 1, 2))) }
";

#[test]
fn nnc_case_in_text() {
    let src = format!(
        "input x: f32[]\n{NNC_CASE}r = case(selector(x), [zero, half, flat], x)\noutput r\n"
    );
    let g = parse(&src);
    for (x, expected) in [
        (-1.0f32, 0.0f32),
        (0.76, 0.76),
        (1.226, 1.226f32 * 0.5 + 0.5),
        (2.1, 1.5),
    ] {
        assert_eq!(run1(&g, &[x]), [expected], "x = {x}");
    }
}

#[test]
fn nnc_case_inside_a_while_in_text() {
    let src = format!(
        "input x: f32[]\n{NNC_CASE}\
fn more(v, i) {{ return lt(i, 4) }}
fn step(v, i) {{
    w = case(selector(v), [zero, half, flat], v)
    return w, add(i, 1)
}}
v4, n = while(more, step, x, 0)
out = mul(v4, 0.3)
output out
"
    );
    let g = parse(&src);
    let mut v = 1.226f32;
    for _ in 0..4 {
        v = v * 0.5 + 0.5;
    }
    let r = run1(&g, &[1.226]);
    assert_eq!(r, [v * 0.3f32]);
    assert!((r[0] - 0.304_237_5).abs() < 1e-6);
    assert_eq!(run1(&g, &[0.8]), [0.8f32 * 0.3f32]);
}

#[test]
fn a_parsed_loop_hoists_its_invariant() {
    let g = parse(
        "\
input x: f32[]
input y: f32[]
fn more(v, i) { return lt(i, 5) }
fn step(v, i) { return mul(exp(y), v), add(i, 1) }
v5, n = while(more, step, x, 0)
output v5
",
    );
    let h = hierarchy(&g).unwrap_or_else(|e| panic!("{e}"));
    let text = print_hierarchy(&g, &h);
    // exp(y) is at the top level (not indented), the product inside the body.
    let exp = text.lines().find(|l| l.contains("exp(")).expect("exp");
    assert!(!exp.starts_with(' '), "{text}");
    let mul = text.lines().find(|l| l.contains("mul(")).expect("mul");
    assert!(mul.starts_with("    %"), "{text}");
}
