//! Shared by the `pass_*` tests: graph text through passes, printed back (the
//! Cranelift filetests style), the verifier after every pass, and the graph
//! interpreter's results before and after compared bit for bit.
#![allow(dead_code)]

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_graph::pass::{PrepareOptions, Report, pass_names, prepare};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{Checks, Graph, default_registry, run, verify};

/// `src` parsed (panics with the parse error).
pub fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Options running only `passes`, verified after each.
pub fn only(passes: &[&str]) -> PrepareOptions {
    PrepareOptions {
        disabled: pass_names()
            .into_iter()
            .filter(|n| !passes.contains(n))
            .map(str::to_string)
            .collect(),
        verify: true,
        ..PrepareOptions::default()
    }
}

/// `g` through `options`; the result verified (with the checks the passes promise).
pub fn prepared(g: &Graph, options: &PrepareOptions) -> (Graph, Report) {
    let (after, report) = prepare(g.clone(), options).unwrap_or_else(|e| panic!("{e}"));
    let mut checks = Checks::NONE;
    for p in &report.passes {
        if p.status != uop_graph::pass::Status::Disabled && options.rewrite_limit.is_none() {
            match p.name {
                "dead" => checks |= Checks::DEAD,
                "consts" => checks |= Checks::CONSTS_FIRST,
                "loops" => checks |= Checks::PARTITIONS,
                _ => {}
            }
        }
    }
    if let Err(e) = verify(&after, checks) {
        panic!(
            "the prepared graph does not verify:\n{e}\n{}",
            print_graph(&after)
        );
    }
    (after, report)
}

/// The graph text `src` through `passes` (alone), printed; the interpreter gives the
/// same results before and after.
pub fn after(passes: &[&str], src: &str) -> (String, Report) {
    let g = parse(src);
    let (out, report) = prepared(&g, &only(passes));
    assert_same_results(&g, &out);
    (print_graph(&out), report)
}

/// Asserts `src` through `passes` prints as `expected`.
#[track_caller]
pub fn check(passes: &[&str], src: &str, expected: &str) -> Report {
    let (text, report) = after(passes, src);
    assert_eq!(
        text, expected,
        "\n--- input\n{src}--- after {passes:?}\n{text}--- expected\n{expected}"
    );
    report
}

/// Inputs for `g`'s Input node: symbolic sizes are 3, values random (seeded).
pub fn inputs_for(g: &Graph, seed: u64) -> Vec<Tensor> {
    uop_graph::random::random_inputs(g, 3, seed)
}

/// The bits of every value, with `-0` read as `+0` (`x + 0 → x` keeps a `-0` that IEEE
/// addition turns into `+0`; see `pass` docs).
pub fn bits(ts: &[Tensor]) -> Vec<(Vec<usize>, Vec<u64>)> {
    ts.iter()
        .map(|t| {
            let b = t
                .data
                .iter()
                .map(|v| if *v == 0.0 { 0 } else { v.to_bits() })
                .collect();
            (t.shape.clone(), b)
        })
        .collect()
}

/// The interpreter's results of `a` and `b` on the same inputs, when `a` runs: equal
/// bit for bit. Returns false when `a` does not run on them.
pub fn same_results(a: &Graph, b: &Graph, seed: u64) -> Result<bool, String> {
    let inputs = inputs_for(a, seed);
    let params = HashMap::new();
    let Ok(expected) = run(a, &inputs, &params) else {
        return Ok(false);
    };
    let found = run(b, &inputs, &params).map_err(|e| format!("the result does not run: {e}"))?;
    if bits(&found) != bits(&expected) {
        return Err(format!(
            "different results:\nbefore {:?}\nafter  {:?}",
            expected.iter().map(|t| &t.data).collect::<Vec<_>>(),
            found.iter().map(|t| &t.data).collect::<Vec<_>>()
        ));
    }
    Ok(true)
}

/// Asserts that `a` runs and that `b` gives its results.
#[track_caller]
pub fn assert_same_results(a: &Graph, b: &Graph) {
    for seed in [1, 2] {
        match same_results(a, b, seed) {
            Ok(true) => {}
            Ok(false) => panic!("the graph does not run:\n{}", print_graph(a)),
            Err(e) => panic!(
                "{e}\n--- before\n{}--- after\n{}",
                print_graph(a),
                print_graph(b)
            ),
        }
    }
}
