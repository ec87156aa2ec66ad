//! A value keeps the name the user wrote (issue 40, item 1): inlining renames the
//! callee's values, never the caller's; outputs are named as the `output` line
//! names them; a generated name never takes a name the user wrote.

use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

fn output_names(g: &Graph) -> Vec<String> {
    (0..g.interface.outputs.len())
        .map(|k| g.output_name(k))
        .collect()
}

/// The example written four ways: newlines, `;`, CRLF, two calls.
#[test]
fn an_inline_call_gives_its_result_the_callers_name() {
    let fun = "fn f(v) { w = mul(v, 2); return w }";
    for src in [
        format!("input x: f32[3]\n{fun}\ny = f(x)\noutput y\n"),
        format!("input x: f32[3]; {fun}; y = f(x); output y"),
        format!("input x: f32[3]\r\n{fun}\r\ny = f(x)\r\noutput y\r\n"),
    ] {
        let g = parse(&src);
        assert_eq!(output_names(&g), ["y"], "{src:?}");
        assert_eq!(
            print_graph(&g),
            "input x: f32[3]\ny = mul(x, 2)\noutput y\n"
        );
    }
    let g = parse(&format!(
        "input x: f32[3]\n{fun}\ny = f(x)\nz = f(y)\noutput y, z"
    ));
    assert_eq!(output_names(&g), ["y", "z"]);
}

#[test]
fn a_call_node_is_named_by_the_caller() {
    let g = parse(
        "input x: f32[3]\nfn f(v) { w = mul(v, 2); return w }\ny = call(f, x)\nz = call(f, y)\noutput y, z",
    );
    assert_eq!(output_names(&g), ["y", "z"]);
}

#[test]
fn values_an_inlined_body_keeps_inside_never_take_the_callers_names() {
    // `z` is the callee's inside `f` and the caller's at the top level: the
    // caller's `z`, defined after the calls, keeps its name in the printed text.
    let g = parse(
        "input x: f32[3]
fn f(v) { z = exp(v); w = mul(z, 2); return w }
y = f(x)
z = f(y)
w = add(z, 1)
output y, z, w",
    );
    assert_eq!(output_names(&g), ["y", "z", "w"]);
    let text = print_graph(&g);
    assert_eq!(
        text,
        "input x: f32[3]
z_2 = exp(x)
y = mul(z_2, 2)
z_3 = exp(y)
z = mul(z_3, 2)
w = add(z, 1)
output y, z, w
"
    );
    // Printing what it parsed gives the same text again.
    assert_eq!(print_graph(&parse(&text)), text);
}

#[test]
fn an_output_named_otherwise_than_its_value_keeps_the_outputs_name() {
    // `f` returns its parameter: `y` is another name of the input `x`.
    let g = parse("input x: f32[3]\nfn f(v) { return v }\ny = f(x)\noutput y, x");
    assert_eq!(output_names(&g), ["y", "x"]);
    let text = print_graph(&g);
    assert_eq!(text, "input x: f32[3]\ny = x\noutput y, x\n");
    let again = parse(&text);
    assert_eq!(output_names(&again), ["y", "x"]);
    assert_eq!(print_graph(&again), text);
}

#[test]
fn a_generated_name_never_takes_a_users_name() {
    // The nested `exp` is node 3: its generated name would be `t3`, which the user
    // gave another value.
    let g = parse("input x: f32[3]\nt4 = exp(x)\nt3 = add(exp(t4), 1)\noutput t4, t3");
    assert_eq!(
        print_graph(&g),
        "input x: f32[3]\nt4 = exp(x)\nt3_2 = exp(t4)\nt3 = add(t3_2, 1)\noutput t4, t3\n"
    );
    assert_eq!(output_names(&g), ["t4", "t3"]);
}

#[test]
fn a_function_returning_one_value_twice_names_it_once() {
    let g = parse("input x: f32[3]\nfn f(v) { w = exp(v); return w, w }\na, b = f(x)\noutput a, b");
    assert_eq!(output_names(&g), ["a", "b"]);
    let again = parse(&print_graph(&g));
    assert_eq!(output_names(&again), ["a", "b"]);
}
