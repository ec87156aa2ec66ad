//! Graph text to graphs: the constructs of DESIGN.md §13.2 build the nodes they name.

use uop_graph::text::parse_graph;
use uop_graph::{Graph, Op, Source, default_registry};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

fn kinds(g: &Graph) -> Vec<&'static str> {
    g.nodes().iter().map(|n| n.op.kind()).collect()
}

#[test]
fn the_design_example_builds_a_while_and_a_case() {
    let g = parse(
        "input x: f32[]
input y: f32[]
fn more(z, i) { return lt(i, 5) }
fn step(z, i) { return mul(y, z), add(i, 1) }
z5, n = while(more, step, x, 0)
fn halve(v) { return mul(v, 0.5) }
sel = where(lt(z5, 1), -1, 0)
r = case(sel, [halve], z5)
output r, n",
    );
    assert_eq!(
        kinds(&g),
        [
            "input", "const", "input", "call", "input", "call", "call", "while", "call", "call",
            "input", "call", "case"
        ]
    );
    let w = &g.nodes()[7];
    let Op::While { cond, body } = &w.op else {
        panic!("{:?}", w.op)
    };
    // The condition's and the body's parameters are named as written.
    assert_eq!(
        g.node(cond.input).map(|n| n.names.clone()),
        Some(vec![Some("z".into()), Some("i".into())])
    );
    assert_eq!(body.outputs.len(), 2);
    assert_eq!(w.name(0), Some("z5"));
    assert_eq!(w.name(1), Some("n"));
    assert_eq!(g.interface.outputs.len(), 2);
    assert_eq!(g.interface.outputs[1], Source::Ref(w.output(1)));
}
