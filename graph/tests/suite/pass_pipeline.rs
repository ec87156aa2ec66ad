//! The prepare pipeline (DESIGN.md §17): its order, options and report, the rewrite
//! limit, the verifier after every pass, and the differential property: every pass
//! alone and the whole pipeline keep the interpreter's results on random graphs and on
//! the example graphs.

use crate::pass_support;

use std::collections::HashMap;

use pass_support::{assert_same_results, only, parse, prepared, same_results};
use uop_codegen::pass::PassList;
use uop_codegen::tensor::Tensor;
use uop_graph::pass::{
    Budget, Classes, Pass, PassFailure, PrepareError, PrepareOptions, PrintAfter, Status,
    pass_names, pipeline, prepare, prepare_with,
};
use uop_graph::random::{RandomOptions, random_graph, reproducer};
use uop_graph::text::print_graph;
use uop_graph::{Checks, Graph, Kind, Op, hierarchy, run, verify};

/// A graph with something for every pass.
const RICH: &str = "\
input x: f32[N]
input s: f32[]
one = const(f32, [], 1.0)
a = mul(x, one)
b = exp(a)
c = exp(x)
d = add(b, c)
kc = const(f32, [2], 1.0, 2.0)
k = add(kc, 3)
e = reduce_sum(k, [0])
fn th(v) { return mul(v, e) }
fn el(v) { return neg(v) }
r = if(1, th, el, d)
unused = tanh(x)
fn more(v, i) { return lt(i, 3) }
fn step(v, i) { return add(v, s), add(i, 1) }
w, n = while(more, step, r, 0)
output w, n
";

#[test]
fn the_pipeline_is_in_the_documented_order_and_every_pass_says_what_it_guarantees() {
    assert_eq!(
        pass_names(),
        [
            "simplify", "fold", "cse", "dead", "kernels", "consts", "loops", "memory"
        ]
    );
    assert!(pipeline().iter().all(|p| p.doc.len() > 20));
    assert_eq!(pipeline()[3].establishes, Checks::DEAD);
    assert_eq!(pipeline()[5].establishes, Checks::CONSTS_FIRST);
}

#[test]
fn the_whole_pipeline_prepares_a_graph_that_computes_the_same() {
    let g = parse(RICH);
    // With kernels: the same results, every call in a kernel.
    let (fused, report) = prepared(
        &g,
        &PrepareOptions {
            verify: true,
            ..PrepareOptions::default()
        },
    );
    assert_same_results(&g, &fused);
    assert_eq!(report.pass("kernels").map(|p| p.rewrites), Some(4));
    assert!(
        fused.nodes().iter().all(|n| !matches!(n.op, Op::Call(_))),
        "{}",
        print_graph(&fused)
    );
    // Without kernels the prepared graph still prints as text: the other passes' work.
    let (after, report) = prepared(
        &g,
        &PrepareOptions {
            verify: true,
            disabled: vec!["kernels".into()],
            ..PrepareOptions::default()
        },
    );
    assert_same_results(&g, &after);
    verify(&after, Checks::DEAD | Checks::CONSTS_FIRST).expect("dead-free, consts first");
    assert_eq!(
        print_graph(&after),
        "\
input x: f32[N]
input s: f32[]
e = const(f32, [1], 9.0)
t17 = 0.0
b = exp(x)
d = add(b, b)
t12 = mul(d, e)
fn w_cond(v, i) {
  t19 = lt(i, 3)
  return t19
}
fn w_body(v, i) {
  t21 = add(v, s)
  t22 = add(i, 1)
  return t21, t22
}
w, n = while(w_cond, w_body, t12, t17)
output w, n
"
    );
    let rewrites: Vec<(&str, usize)> = report.passes.iter().map(|p| (p.name, p.rewrites)).collect();
    assert_eq!(
        rewrites,
        [
            ("simplify", 2),
            ("fold", 2),
            ("cse", 2),
            ("dead", 8),
            ("kernels", 0),
            ("consts", 2),
            ("loops", 0),
            ("memory", 0)
        ]
    );
    assert_eq!(report.rewrites, rewrites.iter().map(|r| r.1).sum::<usize>());
}

#[test]
fn unknown_pass_names_are_errors_listing_the_graph_passes() {
    let g = parse("input x: f32[N]\noutput x\n");
    let options = PrepareOptions {
        disabled: vec!["fuse".into()],
        ..PrepareOptions::default()
    };
    let err = prepare(g.clone(), &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        "unknown pass `fuse`; the passes are: simplify, fold, cse, dead, kernels, consts, loops, memory"
    );
    let options = PrepareOptions {
        print_after: PrintAfter::Named(vec!["fuse".into()]),
        ..PrepareOptions::default()
    };
    assert!(matches!(
        prepare(g, &options),
        Err(PrepareError::UnknownPass(_))
    ));
}

#[test]
fn disabled_passes_are_reported_and_class_flags_skip_passes_with_nothing_to_do() {
    let g = parse("input x: f32[N]\ny = exp(x)\noutput y\n");
    let options = PrepareOptions {
        disabled: vec!["cse".into()],
        verify: true,
        ..PrepareOptions::default()
    };
    let (_, report) = prepare(g, &options).unwrap();
    let status: Vec<(&str, Status)> = report.passes.iter().map(|p| (p.name, p.status)).collect();
    assert_eq!(
        status,
        [
            ("simplify", Status::Ran),
            ("fold", Status::Ran),
            ("cse", Status::Disabled),
            ("dead", Status::Ran),
            ("kernels", Status::Ran),
            ("consts", Status::Skipped),
            ("loops", Status::Skipped),
            ("memory", Status::Ran),
        ]
    );
    // A graph of inputs only: only `dead` (any node may be dead) runs.
    let (_, report) = prepare(
        parse("input x: f32[N]\noutput x\n"),
        &PrepareOptions::default(),
    )
    .unwrap();
    let ran: Vec<&str> = report
        .passes
        .iter()
        .filter(|p| p.status == Status::Ran)
        .map(|p| p.name)
        .collect();
    assert_eq!(ran, ["dead"]);
}

#[test]
fn print_after_prints_the_chosen_passes_and_time_passes_fills_the_table() {
    let g = parse(RICH);
    let options = PrepareOptions {
        print_after: PrintAfter::Named(vec!["fold".into(), "dead".into()]),
        time_passes: true,
        ..PrepareOptions::default()
    };
    let (after, report) = prepare(g.clone(), &options).unwrap();
    let names: Vec<&str> = report.printed.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, ["fold", "dead"]);
    assert!(report.printed[0].1.contains("e = const(f32, [1], 9.0)"));
    assert!(
        report.printed[0].1.contains("unused = tanh(x)"),
        "dead has not run yet"
    );
    assert!(!report.printed[1].1.contains("unused"));
    let options = PrepareOptions {
        print_after: PrintAfter::All,
        ..PrepareOptions::default()
    };
    let (_, all) = prepare(g, &options).unwrap();
    assert_eq!(all.printed.len(), 8);
    assert_eq!(all.printed[7].1, print_graph(&after));
    let table = report.table();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 10, "{table}");
    assert!(
        lines[0].starts_with("pass")
            && lines[0].contains("nodes")
            && lines[0].contains("kernels")
            && lines[0].contains("changed")
    );
    assert!(
        lines[4].starts_with("dead") && lines[4].contains("yes"),
        "{table}"
    );
    assert!(lines[7].starts_with("loops") && lines[7].contains("skipped"));
    assert!(lines[8].starts_with("memory") && lines[8].contains(" no "));
    assert!(lines[9].starts_with("total"));
    assert!(
        report
            .passes
            .iter()
            .any(|p| p.wall > std::time::Duration::ZERO)
    );
}

/// A pass that breaks the graph on purpose: it gives the first Call a wrong type.
fn break_types(
    graph: &mut Graph,
    budget: &mut Budget,
    _: &PrepareOptions,
) -> Result<(), PassFailure> {
    let mut nodes = graph.nodes().to_vec();
    let Some(call) = nodes.iter_mut().find(|n| matches!(n.op, Op::Call(_))) else {
        return Ok(());
    };
    call.outputs[0].shape.push(uop_codegen::index::Expr::Int(7));
    budget.spend();
    *graph = Graph::from_nodes(graph.dtype, graph.interface.clone(), nodes);
    Ok(())
}

static BROKEN: &[Pass] = &[Pass {
    name: "break",
    doc: "gives the first call a wrong output type (a test of the verifier)",
    classes: Classes::Kinds(&[Kind::Call]),
    establishes: Checks::NONE,
    run: break_types,
}];

#[test]
fn a_verifier_failure_after_a_pass_names_the_pass() {
    let g = parse("input x: f32[N]\ny = exp(x)\noutput y\n");
    let options = PrepareOptions {
        verify: true,
        ..PrepareOptions::default()
    };
    let err = prepare_with(PassList::new(BROKEN), g.clone(), &options).unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("after pass `break` the graph does not verify:\n%2:"),
        "{text}"
    );
    // Without verification the broken graph comes back.
    let options = PrepareOptions {
        verify: false,
        ..PrepareOptions::default()
    };
    assert!(prepare_with(PassList::new(BROKEN), g.clone(), &options).is_ok());
    // A broken input is reported before any pass runs.
    let (broken, _) = prepare_with(PassList::new(BROKEN), g, &options).unwrap();
    let options = PrepareOptions {
        verify: true,
        ..PrepareOptions::default()
    };
    let err = prepare(broken, &options).unwrap_err();
    assert!(matches!(err, PrepareError::Input(_)), "{err}");
}

#[test]
fn the_rewrite_limit_stops_after_exactly_that_many_rewrites() {
    let g = parse(RICH);
    let (_, full) = prepared(
        &g,
        &PrepareOptions {
            verify: true,
            ..PrepareOptions::default()
        },
    );
    let total = full.rewrites;
    assert!(total >= 10, "{total}");
    for k in 0..=total + 1 {
        let options = PrepareOptions {
            rewrite_limit: Some(k),
            verify: true,
            ..PrepareOptions::default()
        };
        let (after, report) = prepared(&g, &options);
        assert_eq!(report.rewrites, k.min(total), "limit {k}");
        assert_eq!(
            report.passes.iter().map(|p| p.rewrites).sum::<usize>(),
            k.min(total)
        );
        assert_same_results(&g, &after);
        if k >= total {
            assert_eq!(
                print_graph(&after),
                print_graph(&prepared(&g, &PrepareOptions::default()).0)
            );
        }
    }
}

#[test]
fn the_example_graphs_give_their_numbers_after_prepare() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/graphs");
    let mut checked = 0;
    for entry in std::fs::read_dir(dir).expect("examples/graphs") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|e| e != "uop") {
            continue;
        }
        let src = std::fs::read_to_string(&path).expect("readable");
        let g = parse(&src);
        let (after, _) = prepared(
            &g,
            &PrepareOptions {
                verify: true,
                ..PrepareOptions::default()
            },
        );
        assert_same_results(&g, &after);
        checked += 1;
    }
    assert!(checked >= 4);
    // NNC's while: 0.34 · 1.11⁵ and the counter 5.
    let g = parse(&std::fs::read_to_string(format!("{dir}/power_loop.uop")).expect("readable"));
    let (after, _) = prepare(
        g,
        &PrepareOptions {
            verify: true,
            ..PrepareOptions::default()
        },
    )
    .unwrap();
    let scalar = |v: f64| Tensor::filled(uop_codegen::uop::DType::F32, vec![], v);
    let out = run(&after, &[scalar(0.34), scalar(1.11)], &HashMap::new()).expect("runs");
    assert!(
        (out[0].data[0] - 0.5729198).abs() < 1e-6,
        "{:?}",
        out[0].data
    );
    assert_eq!(out[1].data, [5.0]);
}

/// What goes wrong with `g` through `options`, if anything.
fn differential_problem(g: &Graph, options: &PrepareOptions) -> Option<String> {
    let (after, _) = match prepare(g.clone(), options) {
        Ok(r) => r,
        Err(e) => return Some(e.to_string()),
    };
    for seed in [5, 6] {
        if let Err(e) = same_results(g, &after, seed) {
            return Some(e);
        }
    }
    None
}

#[test]
fn every_pass_alone_and_the_pipeline_keep_the_results_of_random_graphs() {
    let random = RandomOptions::default();
    let mut runs: HashMap<&str, usize> = HashMap::new();
    let mut rewrites: HashMap<&str, usize> = HashMap::new();
    let mut graphs = 0;
    for seed in 0..150 {
        let g = random_graph(seed, &random).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        if hierarchy(&g).is_err() {
            continue;
        }
        if !matches!(same_results(&g, &g, 5), Ok(true)) {
            continue;
        }
        graphs += 1;
        let mut configs: Vec<(&str, PrepareOptions)> =
            pass_names().into_iter().map(|p| (p, only(&[p]))).collect();
        configs.push((
            "all",
            PrepareOptions {
                verify: true,
                ..PrepareOptions::default()
            },
        ));
        for (name, options) in configs {
            if let Some(problem) = differential_problem(&g, &options) {
                let repro = reproducer(
                    &g,
                    &|g| differential_problem(g, &options).is_some(),
                    &format!("seed {seed}, {name}: {problem}"),
                );
                panic!("seed {seed}, {name}: {problem}\nreproducer:\n{repro}");
            }
            let (_, report) = prepare(g.clone(), &options).expect("checked above");
            *runs.entry(name).or_default() += 1;
            *rewrites.entry(name).or_default() += report.rewrites;
        }
    }
    assert!(graphs >= 80, "only {graphs} graphs ran");
    // The property is not vacuous: the passes rewrote these graphs.
    for name in ["fold", "cse", "dead", "consts", "all"] {
        assert!(
            rewrites.get(name).copied().unwrap_or(0) > 20,
            "{name}: {rewrites:?}"
        );
    }
}
