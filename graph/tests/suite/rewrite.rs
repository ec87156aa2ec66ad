//! The rewrite utilities (DESIGN.md §15), each on the cases seed 001 describes; the
//! verifier runs after every call.

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::infer::expected_types;
use uop_graph::rewrite::{CACHE_SIZE, Unrewired};
use uop_graph::{
    Call, CallValue, Checks, ConstCache, ConsumerFlags, Graph, GraphBuilder, Kind, KindFilter,
    Node, NodeId, Op, OutputMap, OutputTarget, Reader, Ref, RewriteError, Source, append_nodes,
    change_multi_output_refs, change_output_refs, const_of, insert_nodes, move_nodes, node_must_be,
    replace_node_with, replace_nodes, single_consumer_all, unique_consumer, verify,
};

/// Panics with the verifier's report unless `g` verifies.
fn checked(g: &Graph) {
    if let Err(e) = verify(g, Checks::NONE) {
        panic!("the graph does not verify:\n{e}");
    }
}

/// A call of `op` on `inputs` (in order) with id `id`, typed against `g`.
fn call(g: &Graph, id: NodeId, op: &str, inputs: &[Ref]) -> Node {
    let args = (0..inputs.len()).map(CallValue::Input).collect();
    let mut n = Node::new(
        id,
        Op::Call(Call::new(op, args)),
        inputs.to_vec(),
        Vec::new(),
    );
    n.outputs = expected_types(g, &n).expect("typed");
    n.names = vec![None; n.outputs.len()];
    n
}

/// The ids in list order.
fn ids(g: &Graph) -> Vec<u32> {
    g.nodes().iter().map(|n| n.id.0).collect()
}

fn inputs(g: &Graph, id: NodeId) -> Vec<Ref> {
    g.node(id).expect("node").inputs.clone()
}

// ---------------------------------------------------------------- look-ups

#[test]
fn node_must_be_checks_the_kind_and_const_of_reads_output_0_of_a_const() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let two = b.scalar(2.0);
    let m = b.op("mul", &[x, two]).unwrap();
    b.output(m);
    let g = b.finish();
    checked(&g);
    assert_eq!(
        node_must_be(&g, m.node, Kind::Call).map(|n| n.id),
        Some(m.node)
    );
    assert!(node_must_be(&g, m.node, Kind::Const).is_none());
    assert!(node_must_be(&g, NodeId(99), Kind::Call).is_none());
    assert_eq!(const_of(&g, two).map(|t| t.data.clone()), Some(vec![2.0]));
    assert!(
        const_of(&g, Ref::new(two.node, 1)).is_none(),
        "output 1 of a Const"
    );
    assert!(const_of(&g, m).is_none(), "not a Const");
    assert!(const_of(&g, x).is_none(), "an Input");
}

/// `x: f32[N]`, `c = 2`, `a = exp(x)`, `m = mul(a, c)`, `n = add(m, x)`, output `n`.
/// Ids: %2 c, %3 a, %4 m, %5 n.
fn consumer_graph() -> Graph {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let c = b.scalar(2.0);
    let a = b.op("exp", &[x]).unwrap();
    let m = b.op("mul", &[a, c]).unwrap();
    let n = b.op("add", &[m, x]).unwrap();
    b.output(n);
    let g = b.finish();
    assert_eq!(ids(&g), [1, 2, 3, 4, 5]);
    checked(&g);
    g
}

#[test]
fn unique_consumer_is_the_only_reader_whose_other_inputs_are_consts() {
    let g = consumer_graph();
    let (x, a, m, n) = (NodeId(1), NodeId(3), NodeId(4), NodeId(5));
    let none = ConsumerFlags::NONE;
    // mul(a, 2) is a's only reader, and reads only a and a Const.
    assert_eq!(unique_consumer(&g, a, KindFilter::Any, none), Some(m));
    assert_eq!(
        unique_consumer(&g, a, KindFilter::One(Kind::Call), none),
        Some(m)
    );
    assert_eq!(unique_consumer(&g, a, Kind::Call.into(), none), Some(m));
    assert_eq!(
        unique_consumer(&g, a, KindFilter::One(Kind::While), none),
        None
    );
    let set = [Kind::While, Kind::Call];
    assert_eq!(unique_consumer(&g, a, KindFilter::Set(&set), none), Some(m));
    assert_eq!(
        unique_consumer(&g, a, KindFilter::Set(&[Kind::Case]), none),
        None
    );
    // add(m, x) is m's only reader but also reads x, an Input: only without the check.
    assert_eq!(unique_consumer(&g, m, KindFilter::Any, none), None);
    assert_eq!(
        unique_consumer(&g, m, KindFilter::Any, ConsumerFlags::NO_INPUT_CHECK),
        Some(n)
    );
    // x has two readers.
    assert_eq!(
        unique_consumer(&g, x, KindFilter::Any, ConsumerFlags::NO_INPUT_CHECK),
        None
    );
    // n is read by the graph's output only: no consumer node.
    assert_eq!(
        unique_consumer(&g, n, KindFilter::Any, ConsumerFlags::NO_INPUT_CHECK),
        None
    );
    assert_eq!(unique_consumer(&g, NodeId(99), KindFilter::Any, none), None);
}

#[test]
fn unique_consumer_looks_at_every_output_of_the_producer() {
    // A two-output call(F) whose outputs are read by two different nodes.
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let f = b
        .no_inline("F", &[x, x], |b, p| {
            Ok(vec![
                b.op("exp", &[p[0]])?.into(),
                b.op("neg", &[p[1]])?.into(),
            ])
        })
        .unwrap();
    let both = b.op("add", &[f[0], f[1]]).unwrap();
    let one = b.op("exp", &[f[0]]).unwrap();
    let other = b.op("neg", &[f[1]]).unwrap();
    let s = b.op("add", &[one, other]).unwrap();
    let t = b.op("add", &[s, both]).unwrap();
    b.output(t);
    let g = b.finish();
    checked(&g);
    // f is read by `both`, `one` and `other`: no unique consumer.
    let flags = ConsumerFlags::NO_INPUT_CHECK;
    assert_eq!(unique_consumer(&g, f[0].node, KindFilter::Any, flags), None);
    assert!(!single_consumer_all(&g, f[0].node, both.node));
    // In a graph where only `both` reads f, it is f's unique consumer.
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let f = b
        .no_inline("F", &[x, x], |b, p| {
            Ok(vec![
                b.op("exp", &[p[0]])?.into(),
                b.op("neg", &[p[1]])?.into(),
            ])
        })
        .unwrap();
    let both = b.op("add", &[f[0], f[1]]).unwrap();
    b.output(both);
    let g = b.finish();
    checked(&g);
    assert_eq!(
        unique_consumer(&g, f[0].node, KindFilter::Any, ConsumerFlags::NONE),
        Some(both.node)
    );
    assert!(single_consumer_all(&g, f[0].node, both.node));
}

#[test]
fn single_consumer_all_means_the_consumer_reads_the_producer_and_nobody_else_does() {
    let g = consumer_graph();
    let (x, c, a, m, n) = (NodeId(1), NodeId(2), NodeId(3), NodeId(4), NodeId(5));
    assert!(single_consumer_all(&g, a, m));
    assert!(single_consumer_all(&g, c, m));
    assert!(single_consumer_all(&g, m, n), "no input check here");
    assert!(!single_consumer_all(&g, a, n), "n does not read a");
    assert!(!single_consumer_all(&g, x, a), "x is read by a and n");
    // A graph output is a reader too.
    let mut g2 = consumer_graph();
    g2.interface.outputs.push(Source::Ref(Ref::new(m, 0)));
    assert!(!single_consumer_all(&g2, m, n));
}

// ---------------------------------------------------------------- constants

#[test]
fn zero_and_the_infinities_are_shared_and_prepended() {
    let mut g = consumer_graph();
    let mut cache = ConstCache::new();
    let z = cache.zero(&mut g);
    checked(&g);
    // After the graph's Input node, before the first other node.
    assert_eq!(ids(&g), [1, z.node.0, 2, 3, 4, 5]);
    assert_eq!(z.node, NodeId(6));
    assert_eq!(
        const_of(&g, z).map(|t| (t.shape.clone(), t.data.clone())),
        Some((vec![], vec![0.0]))
    );
    assert_eq!(cache.zero(&mut g), z);
    assert_eq!(cache.const_scalar(&mut g, 0.0), z);
    let ninf = cache.neg_inf(&mut g);
    let inf = cache.inf(&mut g);
    checked(&g);
    assert_eq!((cache.neg_inf(&mut g), cache.inf(&mut g)), (ninf, inf));
    assert_eq!(
        const_of(&g, ninf).map(|t| t.data[0]),
        Some(f64::NEG_INFINITY)
    );
    assert_eq!(const_of(&g, inf).map(|t| t.data[0]), Some(f64::INFINITY));
    // -0.0 is not 0.
    assert_ne!(cache.const_scalar(&mut g, -0.0), z);
    // An i32 zero is another node.
    let iz = cache.const_scalar_of(&mut g, DType::I32, 0.0);
    assert_ne!(iz, z);
    assert_eq!(const_of(&g, iz).map(|t| t.dtype), Some(DType::I32));
    assert_eq!(cache.const_scalar_of(&mut g, DType::I32, 0.0), iz);
    checked(&g);
    // Prepended consts keep a consts-first graph consts-first.
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let two = b.scalar(2.0);
    let m = b.op("mul", &[x, two]).unwrap();
    b.output(m);
    let mut g = b.finish();
    cache = ConstCache::new();
    cache.const_scalar(&mut g, 3.0);
    assert_eq!(verify(&g, Checks::CONSTS_FIRST), Ok(()));
}

#[test]
fn other_values_are_shared_best_effort() {
    let mut g = consumer_graph();
    let mut cache = ConstCache::new();
    let z = cache.zero(&mut g);
    let half = cache.const_scalar(&mut g, 0.5);
    assert_eq!(cache.const_scalar(&mut g, 0.5), half);
    // f32 rounding: 0.1 and 0.1 as f32 are one value.
    let tenth = cache.const_scalar(&mut g, 0.1);
    assert_eq!(cache.const_scalar(&mut g, 0.1f32 as f64), tenth);
    // CACHE_SIZE newer values push 0.5 out; 0 stays.
    for k in 0..CACHE_SIZE {
        cache.const_scalar(&mut g, 10.0 + k as f64);
    }
    assert_eq!(cache.cached(&g, 0.5), None);
    let again = cache.const_scalar(&mut g, 0.5);
    assert_ne!(again, half);
    assert_eq!(cache.zero(&mut g), z);
    checked(&g);
}

#[test]
fn purge_forgets_a_const_whose_data_changed() {
    let mut g = consumer_graph();
    let mut cache = ConstCache::new();
    let z = cache.zero(&mut g);
    // The seed: change a Const's data only when nothing else reads it, then purge.
    // Here the new data comes in as a node with the same id.
    let three = Node::new(
        z.node,
        Op::Const(Tensor::filled(DType::F32, vec![], 3.0)),
        Vec::new(),
        g.node(z.node).unwrap().outputs.clone(),
    );
    replace_nodes(&mut g, None, Some(three), &[z.node]).unwrap();
    checked(&g);
    assert_eq!(cache.cached(&g, 0.0), Some(z.node));
    cache.purge_const_cache(z.node);
    assert_eq!(cache.cached(&g, 0.0), None);
    let z2 = cache.zero(&mut g);
    assert_ne!(z2, z);
    assert_eq!(const_of(&g, z2).map(|t| t.data[0]), Some(0.0));
    checked(&g);
}

#[test]
fn a_cached_const_that_changed_or_went_is_never_handed_out() {
    let mut g = consumer_graph();
    let mut cache = ConstCache::new();
    let half = cache.const_scalar(&mut g, 0.5);
    // Removed (as `dead` would) without a purge.
    replace_nodes(&mut g, None, None, &[half.node]).unwrap();
    checked(&g);
    let half2 = cache.const_scalar(&mut g, 0.5);
    assert_ne!(half2, half);
    assert!(g.node(half2.node).is_some());
    checked(&g);
}

// ---------------------------------------------------------------- rewiring

/// `x: f32[]`; A = call(A, x×6) and B = call(B, x×6), identities with six outputs;
/// readers `exp(A.k)` for k = 0..5; C = call(C) returning A.1 from outside (a
/// closure); outputs: the sum of C, the readers and B.0, and A.0.
struct Six {
    g: Graph,
    a: NodeId,
    b: NodeId,
    readers: Vec<NodeId>,
    c: NodeId,
}

fn six() -> Six {
    let mut bld = GraphBuilder::new(DType::F32);
    let x = bld.input("x", DType::F32, &[]).unwrap();
    let identity = |bld: &mut GraphBuilder, name: &str| {
        bld.no_inline(name, &[x; 6], |_, p| {
            Ok(p.iter().map(|r| (*r).into()).collect())
        })
        .unwrap()
    };
    let a = identity(&mut bld, "A");
    let b = identity(&mut bld, "B");
    let readers: Vec<Ref> = (0..6).map(|k| bld.op("exp", &[a[k]]).unwrap()).collect();
    let c = bld
        .no_inline("C", &[x], |_, _| Ok(vec![a[1].into()]))
        .unwrap();
    let mut sum = c[0];
    for r in readers.iter().chain(&b[..1]) {
        sum = bld.op("add", &[sum, *r]).unwrap();
    }
    bld.output(sum);
    bld.output(a[0]);
    let g = bld.finish();
    checked(&g);
    assert_eq!(verify(&g, Checks::DEAD), Ok(()));
    Six {
        a: a[0].node,
        b: b[0].node,
        readers: readers.iter().map(|r| r.node).collect(),
        c: c[0].node,
        g,
    }
}

/// What the results of sub-function 0 of `id` read.
fn results(g: &Graph, id: NodeId) -> Vec<Source> {
    g.node(id).unwrap().op.interfaces()[0].outputs.clone()
}

#[test]
fn the_nibble_pattern_0xf321_keeps_0_to_2_leaves_3_and_errs_from_4() {
    let map = OutputMap::from_nibbles(0xF321);
    let targets: Vec<OutputTarget> = (0..6).map(|i| map.target(i)).collect();
    use OutputTarget::*;
    assert_eq!(targets, [To(0), To(1), To(2), Leave, Error, Error]);
    assert_eq!(map.target(16), Error);
    assert_eq!(OutputMap::from_nibbles(0x3 << 60).target(15), To(2));

    let Six {
        mut g,
        a,
        b,
        readers,
        c,
    } = six();
    let err = change_output_refs(&mut g, None, a, b, &map).unwrap_err();
    // Every valid replacement is done: readers of A.0..A.2, C's result A.1 and graph
    // output 1 (A.0); A.3 is left; A.4 and A.5 are errors, left as they were.
    assert_eq!(
        err,
        RewriteError::Unrewired {
            old: a,
            done: 5,
            left: vec![
                Unrewired {
                    reader: Reader::Node(readers[4]),
                    read: Ref::new(a, 4),
                    reason: "the map makes output 4 an error".into()
                },
                Unrewired {
                    reader: Reader::Node(readers[5]),
                    read: Ref::new(a, 5),
                    reason: "the map makes output 5 an error".into()
                },
            ],
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "5 references to {a} rewired, 2 not: {} reads {a}.4 (the map makes output 4 an error); \
             {} reads {a}.5 (the map makes output 5 an error)",
            readers[4], readers[5]
        )
    );
    checked(&g);
    let read: Vec<Ref> = readers.iter().map(|&r| inputs(&g, r)[0]).collect();
    assert_eq!(
        read,
        [
            Ref::new(b, 0),
            Ref::new(b, 1),
            Ref::new(b, 2),
            Ref::new(a, 3),
            Ref::new(a, 4),
            Ref::new(a, 5)
        ]
    );
    assert_eq!(results(&g, c), [Source::Ref(Ref::new(b, 1))]);
    assert_eq!(g.interface.outputs[1], Source::Ref(Ref::new(b, 0)));
    assert_eq!(g.consumers(a), vec![readers[3], readers[4], readers[5]]);
}

#[test]
fn rewiring_from_a_node_on_leaves_earlier_readers_and_the_graph_outputs() {
    let Six {
        mut g,
        a,
        b,
        readers,
        c,
    } = six();
    let done = change_output_refs(&mut g, Some(readers[2]), a, b, &OutputMap::same(6)).unwrap();
    // Readers 2..5 and C: five references.
    assert_eq!(done, 5);
    checked(&g);
    assert_eq!(inputs(&g, readers[1]), [Ref::new(a, 1)]);
    assert_eq!(inputs(&g, readers[2]), [Ref::new(b, 2)]);
    assert_eq!(results(&g, c), [Source::Ref(Ref::new(b, 1))]);
    assert_eq!(g.interface.outputs[1], Source::Ref(Ref::new(a, 0)));
}

#[test]
fn rewiring_to_a_missing_later_or_too_small_node_is_an_error_for_that_reference() {
    let Six {
        mut g,
        a,
        b,
        readers,
        ..
    } = six();
    assert_eq!(
        change_output_refs(&mut g, Some(NodeId(99)), a, b, &OutputMap::same(6)),
        Err(RewriteError::Missing(NodeId(99)))
    );
    let before = g.nodes().to_vec();
    let err = change_output_refs(&mut g, None, a, NodeId(99), &OutputMap::same(1)).unwrap_err();
    let RewriteError::Unrewired { done: 0, left, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(left[0].reason, "%99 is not in the graph");
    assert_eq!(g.nodes(), &before[..]);
    // The readers' own outputs come after them: only the graph output can read them.
    let r5 = readers[5];
    let map = OutputMap::new(vec![OutputTarget::To(0)]);
    let err = change_output_refs(&mut g, None, a, r5, &map).unwrap_err();
    let RewriteError::Unrewired { done, left, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(*done, 1, "graph output 1 now reads {r5}");
    assert_eq!(
        left[0].reason,
        format!("{r5} does not come before {}", readers[0])
    );
    assert_eq!(g.interface.outputs[1], Source::Ref(Ref::new(r5, 0)));
    checked(&g);
    // B has six outputs: output 6 does not exist.
    let map = OutputMap::new(vec![OutputTarget::To(6)]);
    let err = change_output_refs(&mut g, None, a, b, &map).unwrap_err();
    let RewriteError::Unrewired { left, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(left[0].reason, format!("{b} has 6 outputs"));
    checked(&g);
}

#[test]
fn change_multi_output_refs_takes_a_table_with_holes() {
    let Six {
        mut g,
        a,
        b,
        readers,
        c,
    } = six();
    let x = Ref::new(NodeId(1), 0);
    // A.0 -> x, A.1 left, A.2 -> B.2, A.3.. past the table: left.
    let done =
        change_multi_output_refs(&mut g, None, a, &[Some(x), None, Some(Ref::new(b, 2))]).unwrap();
    assert_eq!(done, 3, "reader 0, reader 2 and graph output 1");
    checked(&g);
    let read: Vec<Ref> = readers.iter().map(|&r| inputs(&g, r)[0]).collect();
    assert_eq!(
        read,
        [
            x,
            Ref::new(a, 1),
            Ref::new(b, 2),
            Ref::new(a, 3),
            Ref::new(a, 4),
            Ref::new(a, 5)
        ]
    );
    assert_eq!(results(&g, c), [Source::Ref(Ref::new(a, 1))]);
    assert_eq!(g.interface.outputs[1], Source::Ref(x));
}

// ---------------------------------------------------------------- splicing

/// `x: f32[N]`, `%2 = neg(x)`, `%3 = exp(%2)`, `%4 = sqrt(x)`, `%5 = mul(%3, %4)`.
fn chain() -> Graph {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let n = b.op("neg", &[x]).unwrap();
    let e = b.op("exp", &[n]).unwrap();
    let s = b.op("sqrt", &[x]).unwrap();
    let m = b.op("mul", &[e, s]).unwrap();
    b.output(m);
    let g = b.finish();
    assert_eq!(ids(&g), [1, 2, 3, 4, 5]);
    checked(&g);
    g
}

#[test]
fn replace_nodes_puts_the_new_node_where_the_first_removed_was_and_may_take_an_id() {
    // exp(neg(x)) -> one node that inherits exp's id %3; mul keeps reading %3.
    let mut g = chain();
    let x = Ref::new(NodeId(1), 0);
    let new = call(&g, NodeId(3), "sigmoid", &[x]);
    replace_nodes(&mut g, None, Some(new), &[NodeId(2), NodeId(3)]).unwrap();
    checked(&g);
    assert_eq!(ids(&g), [1, 3, 4, 5]);
    assert_eq!(g.position(NodeId(3)), Some(1));
    assert_eq!(g.position(NodeId(2)), None);
    assert_eq!(inputs(&g, NodeId(3)), [x]);
    assert_eq!(g.consumers(NodeId(3)), [NodeId(5)]);
    assert_eq!(g.consumers(NodeId(1)), [NodeId(3), NodeId(4)]);
}

#[test]
fn replace_nodes_leaves_the_nodes_between_the_removed_ones() {
    // Remove %3 and %5 (with %4 between them); the new node %6 = exp(x) * sqrt(x)
    // cannot go where %3 was (it reads %4): an error, and nothing changes.
    let mut g = chain();
    let before = g.nodes().to_vec();
    let x = Ref::new(NodeId(1), 0);
    g.interface.outputs.clear();
    let new = call(
        &g,
        NodeId(6),
        "mul",
        &[Ref::new(NodeId(2), 0), Ref::new(NodeId(4), 0)],
    );
    assert_eq!(
        replace_nodes(&mut g, None, Some(new), &[NodeId(3), NodeId(5)]),
        Err(RewriteError::BadReference {
            node: NodeId(6),
            read: Ref::new(NodeId(4), 0)
        })
    );
    assert_eq!(g.nodes(), &before[..]);
    // A new node reading only earlier nodes goes in; %4 stays after it.
    let new = call(&g, NodeId(5), "exp", &[x]);
    replace_nodes(&mut g, Some(NodeId(2)), Some(new), &[NodeId(3), NodeId(5)]).unwrap();
    checked(&g);
    assert_eq!(ids(&g), [1, 2, 5, 4]);
    assert_eq!(g.consumers(NodeId(2)), Vec::<NodeId>::new());
}

#[test]
fn replace_nodes_without_a_new_node_only_removes() {
    let mut g = chain();
    // Make %4 (sqrt) dead first: mul reads x instead.
    let x = Ref::new(NodeId(1), 0);
    change_multi_output_refs(&mut g, None, NodeId(4), &[Some(x)]).unwrap();
    checked(&g);
    replace_nodes(&mut g, None, None, &[NodeId(4)]).unwrap();
    checked(&g);
    assert_eq!(ids(&g), [1, 2, 3, 5]);
    assert_eq!(verify(&g, Checks::DEAD), Ok(()));
}

#[test]
fn replace_nodes_refuses_misuse_and_changes_nothing() {
    let mut g = chain();
    let before = g.nodes().to_vec();
    let x = Ref::new(NodeId(1), 0);
    let fails = |g: &mut Graph, anchor, new: Option<Node>, removed: &[NodeId]| {
        let e = replace_nodes(g, anchor, new, removed).unwrap_err();
        assert_eq!(g.nodes(), &before[..], "{e}");
        checked(g);
        e
    };
    assert_eq!(
        fails(&mut g, None, None, &[]),
        RewriteError::NothingToRemove
    );
    assert_eq!(
        fails(&mut g, None, None, &[NodeId(9)]),
        RewriteError::Missing(NodeId(9))
    );
    assert_eq!(
        fails(&mut g, Some(NodeId(9)), None, &[NodeId(2)]),
        RewriteError::Missing(NodeId(9))
    );
    assert_eq!(
        fails(&mut g, Some(NodeId(3)), None, &[NodeId(2)]),
        RewriteError::BeforeAnchor {
            node: NodeId(2),
            anchor: NodeId(3)
        }
    );
    assert_eq!(
        fails(&mut g, None, None, &[NodeId(3), NodeId(2)]),
        RewriteError::OutOfOrder {
            node: NodeId(2),
            previous: NodeId(3)
        }
    );
    assert_eq!(
        fails(&mut g, None, None, &[NodeId(3), NodeId(3)]),
        RewriteError::OutOfOrder {
            node: NodeId(3),
            previous: NodeId(3)
        }
    );
    // %3 is read by mul %5, which stays.
    let e = fails(&mut g, None, None, &[NodeId(3)]);
    assert_eq!(
        e,
        RewriteError::StillRead {
            reader: Reader::Node(NodeId(5)),
            read: Ref::new(NodeId(3), 0)
        }
    );
    assert_eq!(e.to_string(), "%5 reads %3, which the splice removes");
    // %5 is the graph's output.
    assert_eq!(
        fails(&mut g, None, None, &[NodeId(5)]),
        RewriteError::StillRead {
            reader: Reader::GraphOutput(0),
            read: Ref::new(NodeId(5), 0)
        }
    );
    // The new node may not take the id of a node that stays, nor id 0.
    let gc = g.clone();
    assert_eq!(
        fails(
            &mut g,
            None,
            Some(call(&gc, NodeId(4), "exp", &[x])),
            &[NodeId(3)]
        ),
        RewriteError::IdTaken(NodeId(4))
    );
    assert_eq!(
        fails(
            &mut g,
            None,
            Some(call(&gc, NodeId(0), "exp", &[x])),
            &[NodeId(3)]
        ),
        RewriteError::ZeroId
    );
    // The new node may not read what is removed.
    assert_eq!(
        fails(
            &mut g,
            None,
            Some(call(&gc, NodeId(3), "exp", &[Ref::new(NodeId(2), 0)])),
            &[NodeId(2), NodeId(3)]
        ),
        RewriteError::BadReference {
            node: NodeId(3),
            read: Ref::new(NodeId(2), 0)
        }
    );
    // A new node with fewer outputs than its id's readers read.
    let mut empty = call(&gc, NodeId(3), "exp", &[x]);
    empty.outputs.clear();
    empty.names.clear();
    assert_eq!(
        fails(&mut g, None, Some(empty), &[NodeId(3)]),
        RewriteError::StillRead {
            reader: Reader::Node(NodeId(5)),
            read: Ref::new(NodeId(3), 0)
        }
    );
    // The graph's Input node is named by the graph's interface.
    assert_eq!(
        fails(&mut g, None, None, &[NodeId(1)]),
        RewriteError::StillRead {
            reader: Reader::Node(NodeId(2)),
            read: Ref::new(NodeId(1), 0)
        }
    );
}

#[test]
fn an_input_node_named_by_an_interface_cannot_be_removed() {
    // call(F, x) whose body ignores its parameter: its Input node is unread, but named.
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &[]).unwrap();
    let f = b
        .no_inline("F", &[x], |_, _| Ok(vec![Source::Scalar(1.0)]))
        .unwrap();
    b.output(f[0]);
    let mut g = b.finish();
    checked(&g);
    assert_eq!(
        replace_nodes(&mut g, None, None, &[NodeId(2)]),
        Err(RewriteError::InputStillNamed {
            node: NodeId(2),
            by: "noinline %3".into()
        })
    );
    let mut g2 = Graph::new(DType::F32);
    assert_eq!(
        replace_nodes(&mut g2, None, None, &[NodeId(1)])
            .unwrap_err()
            .to_string(),
        "%1 cannot be removed: the graph's interface names it as its Input node"
    );
    checked(&g);
}

#[test]
fn replace_node_with_puts_several_nodes_where_one_was() {
    // %3 = exp(%2) -> %a = exp(x), %3 = neg(%a): two nodes, the last taking %3's id.
    let mut g = chain();
    let x = Ref::new(NodeId(1), 0);
    let a = g.fresh_id();
    let first = call(&g, a, "exp", &[x]);
    let mut second = first.clone();
    second.id = NodeId(3);
    second.op = Op::Call(Call::new("neg", vec![CallValue::Input(0)]));
    second.inputs = vec![Ref::new(a, 0)];
    let n = replace_node_with(&mut g, None, Some(NodeId(3)), vec![first, second]).unwrap();
    assert_eq!(n, 2);
    checked(&g);
    assert_eq!(ids(&g), [1, 2, a.0, 3, 4, 5]);
    assert_eq!(g.consumers(NodeId(3)), [NodeId(5)]);
    assert_eq!(g.consumers(NodeId(2)), Vec::<NodeId>::new());
    // Without a removed node it inserts before the anchor.
    let c = g.fresh_id();
    let konst = Node::new(
        c,
        Op::Const(Tensor::filled(DType::F32, vec![], 2.0)),
        Vec::new(),
        vec![uop_graph::ValueType::scalar(DType::F32)],
    );
    assert_eq!(
        replace_node_with(&mut g, Some(NodeId(2)), None, vec![konst]),
        Ok(1)
    );
    checked(&g);
    assert_eq!(ids(&g), [1, c.0, 2, a.0, 3, 4, 5]);
}

#[test]
fn insert_nodes_inserts_before_the_anchor_or_at_the_head() {
    let mut g = chain();
    let x = Ref::new(NodeId(1), 0);
    let t = g.fresh_id();
    let u = g.fresh_id();
    let tanh = call(&g, t, "tanh", &[x]);
    let mut twice = tanh.clone();
    twice.id = u;
    twice.inputs = vec![Ref::new(t, 0)];
    assert_eq!(
        insert_nodes(&mut g, Some(NodeId(4)), vec![tanh, twice]),
        Ok(2)
    );
    checked(&g);
    assert_eq!(ids(&g), [1, 2, 3, t.0, u.0, 4, 5]);
    assert_eq!(g.consumers(t), [u]);
    // At the head, only what reads nothing can go.
    let c = g.fresh_id();
    let konst = Node::new(
        c,
        Op::Const(Tensor::filled(DType::F32, vec![], 2.0)),
        Vec::new(),
        vec![uop_graph::ValueType::scalar(DType::F32)],
    );
    let bad_id = g.fresh_id();
    let bad = call(&g, bad_id, "exp", &[x]);
    assert_eq!(
        insert_nodes(&mut g, None, vec![bad]),
        Err(RewriteError::BadReference {
            node: bad_id,
            read: x
        })
    );
    assert_eq!(insert_nodes(&mut g, None, vec![konst.clone()]), Ok(1));
    checked(&g);
    assert_eq!(g.nodes()[0].id, c);
    // The same id twice is refused.
    let mut again = konst;
    again.id = NodeId(5);
    assert_eq!(
        insert_nodes(&mut g, None, vec![again]),
        Err(RewriteError::IdTaken(NodeId(5)))
    );
    checked(&g);
}

#[test]
fn append_nodes_puts_a_sink_at_the_end() {
    let mut g = chain();
    let s = g.fresh_id();
    let mut sink = Node::new(
        s,
        Op::Sink,
        vec![Ref::new(NodeId(3), 0), Ref::new(NodeId(4), 0)],
        vec![],
    );
    sink.flags = uop_graph::Flags::RETAIN;
    assert_eq!(append_nodes(&mut g, vec![sink]), Ok(1));
    assert_eq!(verify(&g, Checks::DEAD), Ok(()));
    assert_eq!(ids(&g), [1, 2, 3, 4, 5, s.0]);
    assert_eq!(g.consumers(NodeId(4)), [NodeId(5), s]);
}

// ---------------------------------------------------------------- moving

#[test]
fn move_nodes_moves_consts_to_the_front_keeping_ids_and_refuses_to_break_references() {
    let mut b = GraphBuilder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let a = b.op("exp", &[x]).unwrap();
    let c = b.scalar(2.0);
    let m = b.op("mul", &[a, c]).unwrap();
    b.output(m);
    let mut g = b.finish();
    checked(&g);
    assert_eq!(ids(&g), [1, 2, 3, 4]);
    // A Const reads nothing: it may move before its readers.
    move_nodes(&mut g, Some(a.node), &[c.node]).unwrap();
    checked(&g);
    assert_eq!(ids(&g), [1, 3, 2, 4]);
    assert_eq!(inputs(&g, m.node), vec![a, c]);
    // `exp` cannot move after its reader, nor `mul` before what it reads.
    let before = ids(&g);
    assert_eq!(
        move_nodes(&mut g, None, &[a.node]),
        Err(RewriteError::BadReference {
            node: m.node,
            read: a
        })
    );
    assert_eq!(
        move_nodes(&mut g, Some(c.node), &[m.node]),
        Err(RewriteError::BadReference {
            node: m.node,
            read: a
        })
    );
    assert_eq!(
        move_nodes(&mut g, Some(a.node), &[a.node]),
        Err(RewriteError::MovedAnchor(a.node))
    );
    assert_eq!(
        move_nodes(&mut g, None, &[m.node, a.node]),
        Err(RewriteError::OutOfOrder {
            node: a.node,
            previous: m.node
        })
    );
    assert_eq!(ids(&g), before, "errors leave the graph as it was");
    checked(&g);
    // Moving to the end (the last node, already there) is a no-op that verifies.
    move_nodes(&mut g, None, &[m.node]).unwrap();
    assert_eq!(ids(&g), before);
}
