//! Broken indexes, which only crate-internal code can make.

use uop_codegen::uop::DType;

use crate::ir::NodeId;
use crate::{Checks, Graph, GraphBuilder, verify};

/// `x: f32[N]`, `%2 = exp(x)`, `%3 = neg(%2)`, output `%3`.
fn small() -> Graph {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).expect("input");
    let e = b.op("exp", &[x]).expect("exp");
    let n = b.op("neg", &[e]).expect("neg");
    b.output(n);
    let g = b.finish();
    assert_eq!(verify(&g, Checks::ALL), Ok(()));
    g
}

fn report(g: &Graph) -> String {
    verify(g, Checks::NONE)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn a_stale_position_index_is_named() {
    let mut g = small();
    g.position.insert(NodeId(2), 2);
    g.position.insert(NodeId(3), 1);
    g.position.insert(NodeId(9), 3);
    assert_eq!(
        report(&g),
        "%2: at position 1, but the position index says 2\n\
         %3: at position 2, but the position index says 1\n\
         %9: in the position index (at 3) but not in the list"
    );
    let mut g = small();
    g.position.remove(&NodeId(3));
    assert_eq!(
        report(&g),
        "%3: at position 2, missing from the position index"
    );
}

#[test]
fn a_stale_consumer_index_is_named() {
    let mut g = small();
    g.consumers.get_mut(&NodeId(2)).expect("read").clear();
    g.consumers.entry(NodeId(3)).or_default().insert(NodeId(2));
    assert_eq!(
        report(&g),
        "%2: the consumer index lists () as its readers, but (%3) read it\n\
         %3: the consumer index lists (%2) as its readers, but () read it"
    );
}

#[test]
fn types_are_checked_even_with_broken_indexes() {
    // The position index points %2 at %3's place; the type check must not use it.
    let mut g = small();
    g.position.insert(NodeId(2), 2);
    g.nodes[2].outputs[0].dtype = DType::I32;
    let text = report(&g);
    assert!(
        text.contains("%3: call has output types (i32[N]), but its inputs give (f32[N])"),
        "{text}"
    );
}

#[test]
fn the_next_fresh_id_must_be_above_every_id() {
    let mut g = small();
    g.next_id = 3;
    assert_eq!(
        report(&g),
        "the next fresh id %3 is not above the largest id %3"
    );
}
