//! The definition hierarchy (DESIGN.md §16): Feldspar's two flat programs, loop
//! invariants hoisted, state-dependent values kept inside, nesting, the memory
//! guard, and the errors.

use crate::fixtures;
use fixtures::invariant_loop;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::{
    Arg, Call, CallValue, Graph, GraphBuilder, HierarchyError, Interface, Item, Node, NodeId, Op,
    Ref, Source, SubId, ValueType, hierarchy, print_hierarchy,
};

fn id(n: u32) -> NodeId {
    NodeId(n)
}

fn r(n: u32) -> Ref {
    Ref::new(NodeId(n), 0)
}

fn scalar() -> ValueType {
    ValueType::scalar(DType::F32)
}

fn input(n: u32) -> Node {
    Node::new(
        id(n),
        Op::Input { names: Vec::new() },
        Vec::new(),
        vec![scalar()],
    )
}

fn constant(n: u32, v: f64) -> Node {
    Node::new(
        id(n),
        Op::Const(Tensor::filled(DType::F32, Vec::new(), v)),
        Vec::new(),
        vec![scalar()],
    )
}

fn add(n: u32, args: Vec<CallValue>, inputs: Vec<Ref>) -> Node {
    Node::new(
        id(n),
        Op::Call(Call::new("add", args)),
        inputs,
        vec![scalar()],
    )
}

fn no_inline(n: u32, name: &str, input: u32, output: u32, arg: u32) -> Node {
    Node::new(
        id(n),
        Op::NoInline {
            name: name.into(),
            body: Interface {
                input: id(input),
                outputs: vec![Source::Ref(r(output))],
            },
        },
        vec![r(arg)],
        vec![scalar()],
    )
}

/// Seed 003's flat programs keep their ids v1..v5; v0 (ids are never 0 here) is
/// %10, and the constants the seed writes inline are nodes %11 (1) and %12 (2 or 0).
fn graph(nodes: Vec<Node>) -> Graph {
    let interface = Interface {
        input: id(10),
        outputs: vec![Source::Ref(r(4))],
    };
    Graph::from_nodes(DType::F32, interface, nodes)
}

fn printed(g: &Graph) -> String {
    print_hierarchy(g, &hierarchy(g).expect("a hierarchy"))
}

#[test]
fn seed_program_one_places_the_addition_in_g_and_both_calls_at_the_top() {
    // main v0 = v4; f v1 = v5; g v2 = v3; v3 = v0 + v2; v4 = f 1; v5 = g 2
    let g = graph(vec![
        input(10),
        input(1),
        input(2),
        add(
            3,
            vec![CallValue::Input(0), CallValue::Input(1)],
            vec![r(10), r(2)],
        ),
        constant(12, 2.0),
        no_inline(5, "g", 2, 3, 12),
        constant(11, 1.0),
        no_inline(4, "f", 1, 5, 11),
    ]);
    assert_eq!(
        printed(&g),
        "\
input(%10: f32[])
%12 = const 2.0
%5 = call(g, %12)
  fn g(%2: f32[])
    %3 = add(%10, %2)
    return %3
%11 = const 1.0
%4 = call(f, %11)
  fn f(%1: f32[])
    return %5
output %4
"
    );
}

#[test]
fn seed_program_two_moves_v5_into_f_by_the_caveat() {
    // main v0 = v4; f v1 = v5; g v2 = v3; v3 = v1 + 2; v4 = f 0; v5 = g 1
    let g = graph(vec![
        input(10),
        input(1),
        input(2),
        add(
            3,
            vec![CallValue::Input(0), CallValue::Float(2.0)],
            vec![r(1)],
        ),
        constant(11, 1.0),
        no_inline(5, "g", 2, 3, 11),
        constant(12, 0.0),
        no_inline(4, "f", 1, 5, 12),
    ]);
    let h = hierarchy(&g).expect("a hierarchy");
    let f = Some(SubId {
        super_node: id(4),
        branch: 0,
    });
    assert_eq!(h.scope_of(id(3)), Some(f));
    assert_eq!(h.scope_of(id(5)), Some(f));
    assert_eq!(
        print_hierarchy(&g, &h),
        "\
input(%10: f32[])
%11 = const 1.0
%12 = const 0.0
%4 = call(f, %12)
  fn f(%1: f32[])
    %3 = add(%1, 2.0)
    %5 = call(g, %11)
      fn g(%2: f32[])
        return %3
    return %5
output %4
"
    );
}

#[test]
fn a_loop_invariant_inside_a_while_body_is_placed_at_the_top_level() {
    let g = invariant_loop();
    assert_eq!(
        printed(&g),
        "\
input(%1 x: f32[], %1.1 y: f32[])
%2 = const 0.0
%6 = exp(%1.1)
%9, %9.1 = while(%1, %2)
  fn cond(%3 p0: f32[], %3.1 p1: f32[])
    %4 = lt(%3.1, 5.0)
    return %4
  fn body(%5 p0: f32[], %5.1 p1: f32[])
    %7 = mul(%6, %5)
    %8 = add(%5.1, 1.0)
    return %7, %8
output %9
"
    );
}

fn body_of(super_node: NodeId) -> Option<SubId> {
    Some(SubId {
        super_node,
        branch: 1,
    })
}

/// The node computing `r`'s value in a built graph, located by op name.
fn node_named(g: &Graph, op: &str) -> NodeId {
    let found: Vec<NodeId> = g
        .nodes()
        .iter()
        .filter(|n| matches!(&n.op, Op::Call(c) if c.op == op))
        .map(|n| n.id)
        .collect();
    assert_eq!(found.len(), 1, "one {op} node");
    found[0]
}

#[test]
fn values_that_depend_on_the_loop_state_stay_in_the_body_and_the_condition() {
    let g = invariant_loop();
    let h = hierarchy(&g).expect("a hierarchy");
    let w = id(9);
    assert_eq!(h.scope_of(node_named(&g, "mul")), Some(body_of(w)));
    assert_eq!(h.scope_of(node_named(&g, "add")), Some(body_of(w)));
    assert_eq!(
        h.scope_of(node_named(&g, "lt")),
        Some(Some(SubId {
            super_node: w,
            branch: 0
        }))
    );
    assert_eq!(h.scope_of(node_named(&g, "exp")), Some(None));
    // The Input nodes are the sub-functions' parameter lists.
    assert_eq!(h.scope_of(id(5)), Some(body_of(w)));
    assert_eq!(
        h.top.iter().map(|e| e.node).collect::<Vec<_>>(),
        [id(2), id(6), w]
    );
    assert_eq!(h.top[2].subs.len(), 2);
    assert_eq!(h.top[2].subs[1].input, id(5));
}

#[test]
fn a_case_inside_a_while_body_nests_and_each_value_goes_to_its_innermost_scope() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &[]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let zero = g.scalar(0.0);
    let out = g
        .while_loop(
            &[x, zero],
            |g, s| Ok(vec![g.call("lt", &[s[1].into(), 4.0.into()], &[])?.into()]),
            |g, s| {
                let (v, i) = (s[0], s[1]);
                let sel = g.call("lt", &[v.into(), 1.0.into()], &[])?;
                let r = g.case(
                    sel,
                    &[v],
                    vec![
                        // branch 0: neg(y) is invariant (hoisted out of the loop), sqrt(i)
                        // depends on the body only and is used only here (branch guard)
                        Box::new(move |g: &mut GraphBuilder, p: &[Ref]| {
                            let a = g.op("neg", &[y])?;
                            let b = g.op("sqrt", &[i])?;
                            let c = g.op("mul", &[p[0], a])?;
                            let d = g.op("sub", &[c, b])?;
                            Ok(vec![d.into()])
                        }),
                        Box::new(|_: &mut GraphBuilder, p: &[Ref]| Ok(vec![p[0].into()])),
                    ],
                )?;
                let i = g.call("add", &[i.into(), 1.0.into()], &[])?;
                Ok(vec![r[0].into(), i.into()])
            },
        )
        .expect("while");
    g.output(out[0]);
    let g = g.finish();
    assert_eq!(
        printed(&g),
        "\
input(%1 x: f32[], %1.1 y: f32[])
%2 = const 0.0
%8 = neg(%1.1)
%15, %15.1 = while(%1, %2)
  fn cond(%3 p0: f32[], %3.1 p1: f32[])
    %4 = lt(%3.1, 4.0)
    return %4
  fn body(%5 p0: f32[], %5.1 p1: f32[])
    %6 = lt(%5, 1.0)
    %13 = case(%6, %5)
      fn branch0(%7 p0: f32[])
        %9 = sqrt(%5.1)
        %10 = mul(%7, %8)
        %11 = sub(%10, %9)
        return %11
      fn branch1(%12 p0: f32[])
        return %12
    %14 = add(%5.1, 1.0)
    return %13, %14
output %15
"
    );
}

#[test]
fn parallel_bodies_and_no_inline_functions_see_enclosing_values_and_hoist_invariants() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["4"]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let stacked = g
        .parallel(Expr::Int(4), "i", &[x], |g, p| {
            let e = g.op("exp", &[y])?;
            let row = g.call(
                "reindex",
                &[
                    p[0].into(),
                    Arg::List(vec![Item::Expr(Expr::Int(1))]),
                    Arg::List(vec![Item::Expr(Expr::Param("i".into()))]),
                ],
                &[],
            )?;
            Ok(vec![g.op("mul", &[row, e])?.into()])
        })
        .expect("parallel");
    let called = g
        .no_inline("scale", &[stacked[0]], |g, p| {
            let two = g.op("add", &[y, y])?;
            Ok(vec![g.op("mul", &[p[0], two])?.into()])
        })
        .expect("call");
    g.output(called[0]);
    let g = g.finish();
    assert_eq!(
        printed(&g),
        "\
input(%1 x: f32[4], %1.1 y: f32[])
%3 = exp(%1.1)
%6 = parallel(4, %1)
  fn body(%2 i: i32[], %2.1 p0: f32[4])
    %4 = reindex(%2.1, [1], [$i])
    %5 = mul(%4, %3)
    return %5
%8 = add(%1.1, %1.1)
%10 = call(scale, %6)
  fn scale(%7 p0: f32[4, 1])
    %9 = mul(%7, %8)
    return %9
output %10
"
    );
}

/// `reindex(y, [shape], [])`: the rank-0 `y` broadcast to `shape`.
fn broadcast(g: &mut GraphBuilder, y: Ref, size: Expr) -> Result<Ref, uop_graph::BuildError> {
    broadcast_like(g, y, size, &[])
}

/// The same, with shape sources naming the sizes (`sources=[y, x]`).
fn broadcast_like(
    g: &mut GraphBuilder,
    y: Ref,
    size: Expr,
    sources: &[Ref],
) -> Result<Ref, uop_graph::BuildError> {
    let args = [
        y.into(),
        Arg::List(vec![Item::Expr(size)]),
        Arg::List(Vec::new()),
    ];
    if sources.is_empty() {
        return g.call("reindex", &args, &[]);
    }
    let sources = Arg::List(sources.iter().map(|r| Item::Tensor(*r)).collect());
    g.call("reindex", &args, &[("sources", sources)])
}

#[test]
fn an_inflating_invariant_used_only_in_a_while_body_stays_in_the_body() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["N"]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let zero = g.scalar(0.0);
    let out = g
        .while_loop(
            &[x, zero],
            |g, s| Ok(vec![g.call("lt", &[s[1].into(), 3.0.into()], &[])?.into()]),
            |g, s| {
                // y[] -> [N]: 4 bytes in, 4·N out: inflates, stays.
                let wide = broadcast_like(g, y, Expr::name("N"), &[y, x])?;
                // exp of [N] -> [N]: does not inflate, hoisted.
                let e = g.op("exp", &[x])?;
                let v = g.op("add", &[s[0], wide])?;
                let v = g.op("mul", &[v, e])?;
                let i = g.call("add", &[s[1].into(), 1.0.into()], &[])?;
                Ok(vec![v.into(), i.into()])
            },
        )
        .expect("while");
    g.output(out[0]);
    let g = g.finish();
    let h = hierarchy(&g).expect("a hierarchy");
    let w = g.nodes().last().expect("the while").id;
    assert_eq!(h.scope_of(node_named(&g, "reindex")), Some(body_of(w)));
    assert_eq!(h.scope_of(node_named(&g, "exp")), Some(None));
}

#[test]
fn an_inflating_value_also_used_outside_the_loop_is_hoisted() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["1024"]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let zero = g.scalar(0.0);
    let mut wide = None;
    let out = g
        .while_loop(
            &[x, zero],
            |g, s| Ok(vec![g.call("lt", &[s[1].into(), 3.0.into()], &[])?.into()]),
            |g, s| {
                let w = broadcast(g, y, Expr::Int(1024))?;
                wide = Some(w);
                let v = g.op("add", &[s[0], w])?;
                let i = g.call("add", &[s[1].into(), 1.0.into()], &[])?;
                Ok(vec![v.into(), i.into()])
            },
        )
        .expect("while");
    let wide = wide.expect("built");
    g.output(out[0]);
    g.output(wide);
    let g = g.finish();
    let h = hierarchy(&g).expect("a hierarchy");
    assert_eq!(h.scope_of(wide.node), Some(None));
}

#[test]
fn an_inflating_invariant_of_nested_loops_stays_in_the_innermost_body_using_it() {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &["8"]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let zero = g.scalar(0.0);
    let count = |g: &mut GraphBuilder, s: &[Ref]| -> Result<Vec<Source>, uop_graph::BuildError> {
        Ok(vec![g.call("lt", &[s[1].into(), 2.0.into()], &[])?.into()])
    };
    let out = g
        .while_loop(&[x, zero], count, |g, s| {
            let (v, i) = (s[0], s[1]);
            let inner = g.while_loop(&[v, zero], count, |g, t| {
                let w = broadcast(g, y, Expr::Int(8))?;
                let v = g.op("add", &[t[0], w])?;
                let j = g.call("add", &[t[1].into(), 1.0.into()], &[])?;
                Ok(vec![v.into(), j.into()])
            })?;
            let i = g.call("add", &[i.into(), 1.0.into()], &[])?;
            Ok(vec![inner[0].into(), i.into()])
        })
        .expect("while");
    g.output(out[0]);
    let g = g.finish();
    let h = hierarchy(&g).expect("a hierarchy");
    let whiles: Vec<NodeId> = g
        .nodes()
        .iter()
        .filter(|n| n.op.kind() == "while")
        .map(|n| n.id)
        .collect();
    let (inner, outer) = (whiles[0], whiles[1]);
    assert_eq!(h.scope_of(inner), Some(body_of(outer)));
    assert_eq!(h.scope_of(node_named(&g, "reindex")), Some(body_of(inner)));
    assert_eq!(
        h.enclosing(body_of(inner)),
        [body_of(inner).expect("sub"), body_of(outer).expect("sub")]
    );
}

fn neg(n: u32, of: u32) -> Node {
    Node::new(
        id(n),
        Op::Call(Call::new("neg", vec![CallValue::Input(0)])),
        vec![r(of)],
        vec![scalar()],
    )
}

#[test]
fn cyclic_locality_constraints_are_an_error_naming_the_super_nodes() {
    // %3 depends on the parameters of f (owned by %4) and g (owned by %5), and both
    // return it: %5 must be inside f and %4 inside g. The order of super nodes is the
    // list order, so the cycle shows as %5 reading f's value from after %4.
    let g = graph(vec![
        input(10),
        input(1),
        input(2),
        add(
            3,
            vec![CallValue::Input(0), CallValue::Input(1)],
            vec![r(1), r(2)],
        ),
        no_inline(4, "f", 1, 3, 10),
        no_inline(5, "g", 2, 3, 10),
    ]);
    let e = hierarchy(&g).expect_err("cyclic");
    assert!(matches!(e, HierarchyError::Locality { .. }), "{e:?}");
    assert_eq!(
        e.to_string(),
        "%5: sub-function 0's result 0 reads %3, local to sub-function 0 (body) of noinline %4, but comes after %4, outside it; \
         graph output 0 reads %4, local to sub-function 0 (body) of noinline %5"
    );
}

#[test]
fn a_value_of_both_a_condition_and_a_body_is_an_error() {
    // %3 reads the parameters of the condition and of the body, and the condition
    // returns it: the while reads a value of its body other than through the body.
    let while_node = Node::new(
        id(4),
        Op::While {
            cond: Interface {
                input: id(1),
                outputs: vec![Source::Ref(r(3))],
            },
            body: Interface {
                input: id(2),
                outputs: vec![Source::Ref(r(2))],
            },
        },
        vec![r(10)],
        vec![scalar()],
    );
    let g = graph(vec![
        input(10),
        input(1),
        input(2),
        add(
            3,
            vec![CallValue::Input(0), CallValue::Input(1)],
            vec![r(1), r(2)],
        ),
        while_node,
    ]);
    assert_eq!(
        hierarchy(&g).expect_err("siblings").to_string(),
        "%4: sub-function 0's result 0 reads %3, local to sub-function 1 (body) of while %4, other than through that sub-function's results"
    );
}

#[test]
fn a_value_read_outside_the_sub_function_it_must_live_in_is_an_error() {
    // %5 reads the parameters of f and of g; f's super node %4 comes before it, so
    // %5 would read f's parameter from outside f.
    let g = graph(vec![
        input(10),
        input(1),
        input(2),
        neg(3, 1),
        no_inline(4, "f", 1, 3, 10),
        add(
            5,
            vec![CallValue::Input(0), CallValue::Input(1)],
            vec![r(1), r(2)],
        ),
        no_inline(6, "g", 2, 2, 10),
    ]);
    assert_eq!(
        hierarchy(&g).expect_err("not visible").to_string(),
        "%5: input 0 reads %1, a parameter of sub-function 0 (body) of noinline %4, but comes after %4, outside it"
    );
}

#[test]
fn a_super_node_reading_its_own_parameters_is_an_error() {
    let g = graph(vec![
        input(10),
        input(1),
        neg(2, 1),
        no_inline(4, "f", 1, 2, 2),
    ]);
    assert_eq!(
        hierarchy(&g).expect_err("own parameters").to_string(),
        "%4: input 0 reads %2, local to sub-function 0 (body) of noinline %4, other than through that sub-function's results"
    );
}
