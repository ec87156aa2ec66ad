//! Loop fusion's rules, one per test: what may be merged, what must not be, and
//! that a merge never changes a result (every test runs both programs on data).

use std::collections::HashMap;

use uop_codegen::index::{Expr, parse_expr};
use uop_codegen::interp;
use uop_codegen::loops::{
    self, Access, Block, Carried, Loop, LoopId, LoopProgram, Schedule, Stmt, Subscript, TensorDecl,
    TensorId, TensorKind, Value, VarId,
};
use uop_codegen::pass;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{Accum, BinaryOp, Builder, DType, Program, UnaryOp};

const F32: DType = DType::F32;

fn e(s: &str) -> Expr {
    parse_expr(s).unwrap_or_else(|d| panic!("{s}: {d}"))
}

fn access(t: usize, index: &[&str]) -> Access {
    Access {
        tensor: TensorId(t),
        index: index.iter().map(|s| Subscript::Expr(e(s))).collect(),
        checked: false,
    }
}

fn load(t: usize, index: &[&str]) -> Value {
    Value::Load {
        access: access(t, index),
        fill: 0.0,
    }
}

fn lp(id: usize, start: i64, end: i64) -> Loop {
    Loop {
        id: LoopId(id),
        start: Expr::Int(start),
        end: Expr::Int(end),
        carried: Vec::new(),
        stmts: Vec::new(),
        schedule: Schedule::default(),
    }
}

fn decl(name: &str, shape: &[i64], kind: TensorKind) -> TensorDecl {
    TensorDecl {
        name: name.into(),
        shape: shape.iter().map(|&v| Expr::Int(v)).collect(),
        dtype: F32,
        kind,
        row_local: None,
    }
}

/// `x: [10, 5, 2]` in, `y: [10, 5]` and `z: [10, 2]` out, with the given blocks.
fn xyz_program(blocks: Vec<Block>) -> LoopProgram {
    LoopProgram {
        dtype: F32,
        params: Vec::new(),
        tensors: vec![
            decl("x", &[10, 5, 2], TensorKind::Input),
            decl("y", &[10, 5], TensorKind::Output),
            decl("z", &[10, 2], TensorKind::Output),
        ],
        inputs: vec![TensorId(0)],
        outputs: vec![TensorId(1), TensorId(2)],
        blocks,
        assertions: Vec::new(),
    }
}

/// Runs `before` and `after` on the same data and requires identical outputs.
fn same_results(before: &LoopProgram, after: &LoopProgram, inputs: &[Tensor]) {
    let none = HashMap::new();
    let want = interp::run_loops(before, inputs, &none).unwrap();
    let got = interp::run_loops(after, inputs, &none).unwrap();
    assert_eq!(got, want, "before:\n{before}\nafter:\n{after}");
}

fn x_data() -> Tensor {
    let values = (0..100)
        .map(|k| ((k * 37 % 101) as f64 - 50.0) * 0.113)
        .collect();
    Tensor::new(F32, vec![10, 5, 2], values).unwrap()
}

/// Carried variables make `j` (holding `a`) and `k` (updating it) pivots of the
/// first nest, and `k` and `j` pivots of the second:
///
/// ```text
/// for i in 0..10 { for j in 2..5 { a = 0; for k in 0..2 { a += x[i,j,k] }; y[i,j] = a } }
/// for i in 0..10 { for k in 0..2 { b = 0; for j in 2..5 { b += x[i,j,k] }; z[i,k] = b } }
/// ```
///
/// The loops match one to one by range (L1:M1, L2:M3, L3:M2), but matching them
/// would move `j` across the pivot `k`: not fused.
#[test]
fn carried_variables_make_pivots_that_block_reordering() {
    let (a, b) = (VarId(0), VarId(1));
    let mut y_nest = vec![lp(0, 0, 10), lp(1, 2, 5), lp(2, 0, 2)];
    y_nest[1].carried.push(Carried {
        var: a,
        op: Accum::Add,
    });
    y_nest[1].stmts.push(Stmt::Store {
        access: access(1, &["i0", "i1"]),
        value: Value::Var(a),
    });
    y_nest[2].stmts.push(Stmt::Update {
        var: a,
        op: Accum::Add,
        value: load(0, &["i0", "i1", "i2"]),
    });
    let mut z_nest = vec![lp(3, 0, 10), lp(4, 0, 2), lp(5, 2, 5)];
    z_nest[1].carried.push(Carried {
        var: b,
        op: Accum::Add,
    });
    z_nest[1].stmts.push(Stmt::Store {
        access: access(2, &["i3", "i4"]),
        value: Value::Var(b),
    });
    z_nest[2].stmts.push(Stmt::Update {
        var: b,
        op: Accum::Add,
        value: load(0, &["i3", "i5", "i4"]),
    });
    let p = xyz_program(vec![
        Block {
            loops: y_nest,
            carried: vec![],
            stmts: vec![],
        },
        Block {
            loops: z_nest,
            carried: vec![],
            stmts: vec![],
        },
    ]);
    let fused = pass::fuse(&p);
    assert_eq!(fused, p, "nothing may change:\n{fused}");
}

/// The same two nests accumulating straight into `y` and `z` have no carried
/// variables: only the innermost loops are pivots, the second nest may run as
/// `i, j, k` (each `z[i, k]` still sees its `j` in ascending order), and the two
/// fuse into one.
#[test]
fn the_same_nests_accumulating_into_tensors_fuse() {
    let mut y_nest = vec![lp(0, 0, 10), lp(1, 2, 5), lp(2, 0, 2)];
    y_nest[2].stmts.push(Stmt::Accumulate {
        access: access(1, &["i0", "i1"]),
        op: Accum::Add,
        value: load(0, &["i0", "i1", "i2"]),
    });
    let mut z_nest = vec![lp(3, 0, 10), lp(4, 0, 2), lp(5, 2, 5)];
    z_nest[2].stmts.push(Stmt::Accumulate {
        access: access(2, &["i3", "i4"]),
        op: Accum::Add,
        value: load(0, &["i3", "i5", "i4"]),
    });
    let p = xyz_program(vec![
        Block {
            loops: y_nest,
            carried: vec![],
            stmts: vec![],
        },
        Block {
            loops: z_nest,
            carried: vec![],
            stmts: vec![],
        },
    ]);
    let fused = pass::fuse(&p);
    assert_eq!(fused.blocks.len(), 1, "{fused}");
    let text = fused.to_string();
    assert!(
        text.contains("for i0 in 0..10 {\n    for i1 in 2..5 {\n      for i2 in 0..2 {"),
        "{text}"
    );
    assert!(text.contains("z[i0, i2] += x[i0, i1, i2]"), "{text}");
    same_results(&p, &fused, &[x_data()]);
}

fn builder() -> Builder {
    Builder::new(F32)
}

fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n).map(|k| (k as f64 * 0.7).sin() * 3.0).collect();
    Tensor::new(F32, shape.to_vec(), values).unwrap()
}

/// Fuses the lowering of `program`, checks the results against the reference and
/// returns the number of blocks before and after.
fn fuse_checked(program: &Program, inputs: &[Tensor]) -> (usize, usize, LoopProgram) {
    let lowered = loops::lower(program);
    let fused = pass::fuse(&lowered);
    let none = HashMap::new();
    let want = interp::run(program, inputs, &none).unwrap();
    assert_eq!(
        interp::run_loops(&fused, inputs, &none).unwrap(),
        want,
        "{fused}"
    );
    (lowered.blocks.len(), fused.blocks.len(), fused)
}

#[test]
fn an_element_wise_chain_fuses_into_one_nest() {
    let mut b = builder();
    let x = b.input("x", F32, &["N", "M"]).unwrap();
    let y = b.unary(UnaryOp::Exp, x).unwrap();
    let z = b.binary(BinaryOp::Mul, y, x).unwrap();
    let w = b.unary(UnaryOp::Neg, z).unwrap();
    let p = b.combine(&[x], &[w]).unwrap();
    assert_eq!(fuse_checked(&p, &[ramp(&[3, 4])]).1, 1);
}

#[test]
fn a_shifted_read_of_a_fused_candidate_forbids_fusing() {
    // y[i] = t[i + 1] reads what the producer writes one iteration later.
    let mut b = builder();
    let x = b.input("x", F32, &["N"]).unwrap();
    let t = b.unary(UnaryOp::Exp, x).unwrap();
    let y = b.reindex(t, &["dA0"], &[x], &["i0 + 1"]).unwrap();
    let p = b.combine(&[x], &[y]).unwrap();
    assert_eq!(fuse_checked(&p, &[ramp(&[6])]).1, 2);
}

#[test]
fn a_read_of_a_reduction_inside_the_reduced_loop_forbids_fusing() {
    // The row sum is stored after the row's loop, so a consumer reading it for every
    // element of the row cannot share that loop.
    let mut b = builder();
    let x = b.input("x", F32, &["N", "M"]).unwrap();
    let s = b.reduce(uop_codegen::uop::ReduceOp::Sum, &[1], x).unwrap();
    let sb = b.reindex(s, &["dA0", "dA1"], &[x], &["i0", "0"]).unwrap();
    let p = b.combine(&[x], &[sb]).unwrap();
    assert_eq!(fuse_checked(&p, &[ramp(&[3, 4])]).1, 2);
}

#[test]
fn a_transposed_consumer_is_reordered_to_read_what_was_just_written() {
    // tt[i, j] = t[j, i]: pairing tt's j with t's i makes the read identical.
    let mut b = builder();
    let x = b.input("x", F32, &["N", "M"]).unwrap();
    let t = b.unary(UnaryOp::Exp, x).unwrap();
    let tt = b.reindex(t, &["dA1", "dA0"], &[x], &["i1", "i0"]).unwrap();
    let p = b.combine(&[x], &[tt]).unwrap();
    let (_, after, fused) = fuse_checked(&p, &[ramp(&[3, 4])]);
    assert_eq!(after, 1, "{fused}");
}

#[test]
fn reading_a_tensor_both_straight_and_transposed_forbids_fusing_the_sum() {
    // y = t + transpose(t): no pairing of loops makes both reads identical to the writes.
    let mut b = builder();
    let x = b.input("x", F32, &["N", "N"]).unwrap();
    let t = b.unary(UnaryOp::Exp, x).unwrap();
    let tt = b.reindex(t, &["dA1", "dA0"], &[x], &["i1", "i0"]).unwrap();
    let y = b.binary(BinaryOp::Add, t, tt).unwrap();
    let p = b.combine(&[x], &[y]).unwrap();
    let (before, after, fused) = fuse_checked(&p, &[ramp(&[4, 4])]);
    assert_eq!((before, after), (3, 2), "{fused}");
}

#[test]
fn merge_right_moves_a_producer_past_a_zero_reset() {
    // Scatter-add of t = exp(x) into 3 bins: the reset of the bins (3 iterations)
    // sits between the producer and the scatter (N iterations). The scatter cannot
    // move above the reset; the producer moves down into the scatter instead.
    let mut b = builder();
    let x = b.input("x", F32, &["N"]).unwrap();
    let t = b.unary(UnaryOp::Exp, x).unwrap();
    let bins = b
        .reindex_reduce(t, &["3"], &[], &["i0 % 3"], Accum::Add)
        .unwrap();
    let p = b.combine(&[x], &[bins]).unwrap();
    let (before, after, fused) = fuse_checked(&p, &[ramp(&[7])]);
    assert_eq!((before, after), (3, 2), "{fused}");
    let reset = fused.block_text(&fused.blocks[0]);
    assert!(reset.contains("= 0.0"), "the reset runs first:\n{fused}");
}

#[test]
fn independent_nests_over_asserted_equal_sizes_fuse() {
    // `M` is asserted equal to `N`, so loops over `0..N` and `0..M` match.
    let mut b = builder();
    let x = b.input("x", F32, &["N"]).unwrap();
    let y = b.input("y", F32, &["M"]).unwrap();
    let yy = b.reindex(y, &["dA0[=dB0]"], &[x, y], &["i0"]).unwrap();
    let ex = b.unary(UnaryOp::Exp, x).unwrap();
    let s = b.binary(BinaryOp::Add, ex, yy).unwrap();
    let p = b.combine(&[x, y], &[s]).unwrap();
    assert_eq!(fuse_checked(&p, &[ramp(&[5]), ramp(&[5])]).1, 1);
}

#[test]
fn nests_over_different_sizes_stay_apart() {
    let mut b = builder();
    let x = b.input("x", F32, &["N"]).unwrap();
    let y = b.input("y", F32, &["M"]).unwrap();
    let ex = b.unary(UnaryOp::Exp, x).unwrap();
    let ey = b.unary(UnaryOp::Exp, y).unwrap();
    let p = b.combine(&[x, y], &[ex, ey]).unwrap();
    assert_eq!(fuse_checked(&p, &[ramp(&[5]), ramp(&[3])]).1, 2);
}
