//! i32 values ahead of time (issue 40): a graph of f32 keeps its i32 values (a
//! `while` carrying an index vector) in its arena's cells, read and written as i32
//! (`rt::graph::ints`, `ints_mut`, `cells`); a graph of f64, whose cells are twice
//! as wide, refuses them with an error naming the value. (That the emitted code
//! compiles and matches the interpreter: the suite's `graph_aot`.)

use uop_codegen::backend::rust::RustOptions;
use uop_graph::default_registry;
use uop_graph::emit::emit_graph;
use uop_graph::grad::{GraphGradSpec, TapeMode, gradient};
use uop_graph::text::parse_graph;

const I32_STATE: &str = "input x: T[N]\ninput idx: i32[M]\n\
fn more(i, v) { return lt(reduce_sum(v, [0]), 50) }\n\
fn step(i, v) { return reindex(i, [M], [(i0 + 1) % M]), add(mul(v, 2), reduce_sum(select(v, i, axis=0), [0])) }\n\
j, y = while(more, step, idx, x)\noutput j, y\n";

#[test]
fn an_i32_while_state_lives_in_the_cells_of_an_f32_arena() {
    let src = I32_STATE.replace('T', "f32");
    let g = parse_graph(&src, default_registry()).expect("parses");
    let rust = emit_graph("ic", &g, Some(&src), &RustOptions::default()).expect("emits");
    assert!(
        rust.contains("j_out: &mut [i32],"),
        "the index vector is an i32 output"
    );
    assert!(
        rust.contains("rt::graph::cells(idx)"),
        "copied into the arena's cells"
    );
    assert!(
        rust.contains("rt::graph::ints(i_2)"),
        "read by the kernels as i32"
    );
    assert!(
        rust.contains("rt::graph::ints_mut(t13)"),
        "written by a kernel as i32"
    );
    let spec = GraphGradSpec {
        tape: TapeMode::Recompute,
        ..GraphGradSpec::all(&g)
    };
    let grad = gradient(&g, &spec).expect("the recompute tape takes an i32 state");
    emit_graph("ic_grad", &grad.graph, None, &RustOptions::default())
        .expect("the gradient emits too");
}

#[test]
fn an_f64_arena_refuses_i32_values_naming_them() {
    let src = I32_STATE.replace('T', "f64");
    let g = parse_graph(&src, default_registry()).expect("parses");
    let e = emit_graph("ic", &g, Some(&src), &RustOptions::default())
        .expect_err("f64 cells are twice an i32")
        .to_string();
    assert!(
        e.contains("is i32 in a graph of f64: ahead of time, the arena of a graph of f64 holds no i32 values"),
        "{e}"
    );
}
