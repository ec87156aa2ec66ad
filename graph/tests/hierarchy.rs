//! The definition hierarchy (DESIGN.md §16): Feldspar's two flat programs, loop
//! invariants hoisted, state-dependent values kept inside, nesting, the memory
//! guard, and the errors.

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::{
    Call, CallValue, Graph, GraphBuilder, Interface, Node, NodeId, Op, Ref, Source, SubId,
    ValueType, hierarchy, print_hierarchy,
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

/// `v <- exp(y) * v, i <- i + 1` while `i < 5`, from `(x, 0)`.
fn power_loop() -> Graph {
    let mut g = GraphBuilder::new(DType::F32);
    let x = g.input("x", DType::F32, &[]).expect("x");
    let y = g.input("y", DType::F32, &[]).expect("y");
    let zero = g.scalar(0.0);
    let out = g
        .while_loop(
            &[x, zero],
            |g, s| Ok(vec![g.call("lt", &[s[1].into(), 5.0.into()], &[])?.into()]),
            |g, s| {
                let e = g.op("exp", &[y])?;
                let v = g.op("mul", &[e, s[0]])?;
                let i = g.call("add", &[s[1].into(), 1.0.into()], &[])?;
                Ok(vec![v.into(), i.into()])
            },
        )
        .expect("while");
    g.output(out[0]);
    g.finish()
}

#[test]
fn a_loop_invariant_inside_a_while_body_is_placed_at_the_top_level() {
    let g = power_loop();
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
