//! Long graph text builds the right graph (issue 40, item 7), inline calls
//! included, and the scoping rules the name lookups follow.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Graph, RunOptions, default_registry, run_with};

/// `input x`, a function (so it is a graph file), then `t1 = add(x, 1)`,
/// `t2 = add(t1, 1)`, ... and `output tN`.
fn chain(n: usize) -> String {
    let mut src = String::from("input x: f32[]\nfn f(v) { return v }\nt1 = add(x, 1)\n");
    for i in 2..=n {
        src.push_str(&format!("t{i} = add(t{}, 1)\n", i - 1));
    }
    src.push_str(&format!("output t{n}\n"));
    src
}

/// `input x`, `fn f(v) { w = mul(v, 1); return w }`, then `t1 = f(x)`,
/// `t2 = f(t1)`, ... and `output tN`: N inline calls.
fn calls(n: usize) -> String {
    let mut src = String::from("input x: f32[]\nfn f(v) { w = mul(v, 1); return w }\nt1 = f(x)\n");
    for i in 2..=n {
        src.push_str(&format!("t{i} = f(t{})\n", i - 1));
    }
    src.push_str(&format!("output t{n}\n"));
    src
}

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn a_chain_of_50000_statements_builds_the_chain() {
    let n = 50_000;
    let g = parse(&chain(n));
    let printed = print_graph(&g);
    assert_eq!(printed.lines().count(), n + 2, "input, {n} adds, output");
    assert!(printed.starts_with("input x: f32[]\nt1 = add(x, 1)\nt2 = add(t1, 1)\n"));
    assert!(printed.ends_with(&format!("t{n} = add(t{}, 1)\noutput t{n}\n", n - 1)));
    let x = Tensor::filled(DType::F32, Vec::new(), 0.5);
    let options = RunOptions {
        max_iterations: Some(1),
    };
    let r = run_with(&g, &[x], &HashMap::new(), &options).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs[0].data[0], 50_000.5);
}

/// Parses and prints `n` chained statements and `n` inline calls. Each inline call
/// used to copy the scope's later entries out and back (quadratic); a name is now
/// found through an index whatever the text's length.
fn parse_and_print(n: usize) {
    let g = parse(&chain(n));
    assert_eq!(print_graph(&g).lines().count(), n + 2);
    let g = parse(&calls(n));
    let printed = print_graph(&g);
    assert_eq!(printed.lines().count(), n + 2, "input, {n} muls, output");
    assert!(
        printed.contains(&format!("t{n} = mul(t{}, 1)", n - 1)),
        "{}",
        &printed[printed.len() - 200..]
    );
}

#[test]
fn chains_and_inline_calls_of_20000_statements_parse() {
    parse_and_print(20_000);
}

/// 100,000 statements (issue 40 item 7: under 5 s in all; about 2 s each for the
/// chain and the calls on a busy 2-core machine, a quadratic parser took minutes):
/// `cargo test --profile fast-build -p uop-graph --test suite -- --ignored text_scale`.
#[test]
#[ignore]
fn chains_and_inline_calls_of_100000_statements_parse() {
    let t = std::time::Instant::now();
    parse_and_print(100_000);
    eprintln!("100,000 statements twice: {:?}", t.elapsed());
}

/// The scoping rules: a body may reuse an outer name, which is
/// the outer value again after the body; a name defined twice in one scope is
/// an error naming the first line; a body does not see names defined after it.
#[test]
fn the_name_index_keeps_the_scoping_rules() {
    let g = parse(
        "input x: f32[]\ny = add(x, 1)\nfn f(v) { y = mul(v, 3); return y }\nz = f(x)\nw = add(y, z)\noutput w",
    );
    let x = Tensor::filled(DType::F32, Vec::new(), 2.0);
    let r = run_with(&g, &[x], &HashMap::new(), &RunOptions::default())
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(r.outputs[0].data[0], 9.0, "(2 + 1) + 2 * 3");

    let e = parse_graph(
        "input x: f32[]\ny = add(x, 1)\nz = exp(x)\ny = add(x, 2)\noutput y",
        default_registry(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.contains("`y` is already defined on line 2"), "{e}");

    let e = parse_graph(
        "input x: f32[]\nfn f(v) { return add(v, later) }\nlater = exp(x)\nz = f(x)\noutput z",
        default_registry(),
    )
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(e.contains("unknown name `later`"), "{e}");
}
