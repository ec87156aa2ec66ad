//! `dead` (DESIGN.md §17): one reverse sweep; RETAIN, Sink, graph outputs and the
//! graph's Input node kept; a dead super node goes with its sub-functions.

use crate::pass_support;

use pass_support::{check, only, prepared};
use uop_codegen::uop::DType;
use uop_graph::text::print_graph;
use uop_graph::{Checks, Flags, GraphBuilder, verify};

#[test]
fn dead_chains_and_dead_super_nodes_go_in_one_sweep() {
    let report = check(
        &["dead"],
        "\
input x: f32[N]
input unused: f32[N]
a = exp(x)
b = neg(a)
c = tanh(b)
fn th(v) { return exp(v) }
fn el(v) {
  fn more(u, i) { return lt(i, 2) }
  fn step(u, i) { return mul(u, a), add(i, 1) }
  w, k = while(more, step, v, 0)
  return w
}
r = if(reduce_sum(x, [0]), th, el, x)
fn keep(v) {
  d = sin(v)
  return exp(v)
}
y = call(keep, a)
output y
",
        "\
input x: f32[N]
input unused: f32[N]
a = exp(x)
fn keep(v) {
  t19 = exp(v)
  return t19
}
y = call(keep, a)
output y
",
    );
    // Units: `d` inside `keep`; `r` with both branches and the nested while; its
    // condition; `c`, `b`; the while's initial 0 (a Const).
    assert_eq!(report.pass("dead").map(|p| p.rewrites), Some(6));
}

#[test]
fn sinks_retain_flags_and_outputs_are_kept() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let kept = b.op("exp", &[x]).unwrap();
    b.sink(&[kept]).unwrap();
    let flagged = b.op("neg", &[x]).unwrap();
    let gone = b.op("tanh", &[flagged]).unwrap();
    b.output(x);
    let mut g = b.finish();
    let id = flagged.node;
    let pos = g.position(id).unwrap();
    // Flag `neg` RETAIN through a rebuilt graph (flags are plain data).
    let mut nodes = g.nodes().to_vec();
    nodes[pos].flags = Flags::RETAIN;
    g = uop_graph::Graph::from_nodes(g.dtype, g.interface.clone(), nodes);
    let (after, report) = prepared(&g, &only(&["dead"]));
    assert_eq!(report.pass("dead").map(|p| p.rewrites), Some(1));
    assert!(after.node(gone.node).is_none());
    assert!(after.node(kept.node).is_some() && after.node(id).is_some());
    verify(&after, Checks::DEAD).expect("no dead node left");
    assert_eq!(
        print_graph(&after),
        "input x: f32[N]\nt2 = exp(x)\nsink(t2)\nt4 = neg(x)\noutput x\n"
    );
}

#[test]
fn a_graph_without_dead_nodes_is_unchanged() {
    let (text, report) = pass_support::after(&["dead"], "input x: f32[N]\ny = exp(x)\noutput y\n");
    assert_eq!(text, "input x: f32[N]\ny = exp(x)\noutput y\n");
    let dead = report.pass("dead").expect("ran");
    assert!(!dead.changed && !dead.skipped());
}
