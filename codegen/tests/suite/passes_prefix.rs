//! Prefix fusion, one rule per test: a nest whose loops match the outer loops of
//! another nest joins it, its statements keeping their level — legal exactly when
//! every conflicting access of the later nest reads or writes, in the same
//! iteration of the loops enclosing it, what the earlier nest finished at the same
//! or a deeper level. Every test runs the program before and after on data.

use std::collections::HashMap;

use uop_codegen::compile::{CompileOptions, compile};
use uop_codegen::index::{Expr, parse_expr};
use uop_codegen::interp;
use uop_codegen::loops::{
    Access, Block, Carried, Loop, LoopId, LoopProgram, Schedule, Stmt, Subscript, TensorDecl,
    TensorId, TensorKind, Value, VarId,
};
use uop_codegen::pass::{self, PassOptions};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{Accum, BinaryOp, Builder, DType, Program, ReduceOp, UnaryOp};

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

fn store(t: usize, index: &[&str], value: Value) -> Stmt {
    Stmt::Store {
        access: access(t, index),
        value,
    }
}

fn update(var: VarId, value: Value) -> Stmt {
    Stmt::Update {
        var,
        op: Accum::Add,
        value,
    }
}

fn sum(var: VarId) -> Carried {
    Carried {
        var,
        op: Accum::Add,
    }
}

fn lp(id: usize, end: i64) -> Loop {
    Loop {
        id: LoopId(id),
        start: Expr::Int(0),
        end: Expr::Int(end),
        carried: Vec::new(),
        stmts: Vec::new(),
        schedule: Schedule::default(),
    }
}

fn nest(loops: Vec<Loop>) -> Block {
    Block {
        loops,
        carried: Vec::new(),
        stmts: Vec::new(),
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

/// Tensors: `x: [4, 3]` in (0), `t: [4]` temp (1), `y: [4]` out (2), `s: [1]` temp (3).
fn program(blocks: Vec<Block>) -> LoopProgram {
    LoopProgram {
        dtype: F32,
        params: Vec::new(),
        tensors: vec![
            decl("x", &[4, 3], TensorKind::Input),
            decl("t", &[4], TensorKind::Temp),
            decl("y", &[4], TensorKind::Output),
            decl("s", &[1], TensorKind::Temp),
        ],
        inputs: vec![TensorId(0)],
        outputs: vec![TensorId(2)],
        blocks,
        assertions: Vec::new(),
    }
}

fn x_data() -> Tensor {
    let values = (0..12)
        .map(|k| ((k * 37 % 13) as f64 - 6.0) * 0.713)
        .collect();
    Tensor::new(F32, vec![4, 3], values).unwrap()
}

/// Runs `before` and `after` on the same data and requires identical outputs.
fn same_results(before: &LoopProgram, after: &LoopProgram, inputs: &[Tensor]) {
    let none = HashMap::new();
    let want = interp::run_loops(before, inputs, &none).unwrap();
    let got = interp::run_loops(after, inputs, &none).unwrap();
    assert_eq!(got, want, "before:\n{before}\nafter:\n{after}");
}

/// `for i0 { v = 0; for i1 { v += x[i0, i1] }; t[i0] = v }`: row sums of `x`.
fn row_sums() -> Block {
    let v = VarId(0);
    let mut loops = vec![lp(0, 4), lp(1, 3)];
    loops[0].carried.push(sum(v));
    loops[1].stmts.push(update(v, load(0, &["i0", "i1"])));
    loops[0].stmts.push(store(1, &["i0"], Value::Var(v)));
    nest(loops)
}

/// `for i9 { y[i9] = value }`: a consumer with one loop.
fn one_loop_consumer(value: Value) -> Block {
    let mut l = lp(9, 4);
    l.stmts.push(store(2, &["i9"], value));
    nest(vec![l])
}

fn fused(p: &LoopProgram) -> LoopProgram {
    let f = pass::fuse(p);
    same_results(p, &f, &[x_data()]);
    f
}

#[test]
fn a_consumer_of_a_reduction_at_its_kept_loop_joins_the_reduction() {
    let p = program(vec![
        row_sums(),
        one_loop_consumer(Value::Unary(UnaryOp::Exp, Box::new(load(1, &["i9"])))),
    ]);
    let f = fused(&p);
    assert_eq!(f.blocks.len(), 1, "{f}");
    // The consumer's statement runs after the row's loop, right after the store.
    assert_eq!(
        f.block_text(&f.blocks[0]),
        "block {\n  for i0 in 0..4 {\n    v0 = 0.0 (+)\n    for i1 in 0..3 {\n      \
         v0 += x[i0, i1]\n    }\n    t[i0] = v0\n    y[i0] = exp(t[i0])\n  }\n}\n"
    );
    // And substitution then removes the temporary.
    let opt = pass::optimize(&p, &PassOptions::default()).unwrap();
    same_results(&p, &opt, &[x_data()]);
    assert!(opt.to_string().contains("y[i0] = exp(v0)"), "{opt}");
    assert!(!opt.tensors.iter().any(|t| t.name == "t"), "{opt}");
}

#[test]
fn a_consumer_reading_the_reduction_at_another_index_does_not_fuse() {
    // y[i] = t[3 - i]: row 3's sum is not finished when row 0's consumer would run.
    let p = program(vec![row_sums(), one_loop_consumer(load(1, &["3 - i9"]))]);
    assert_eq!(fused(&p).blocks.len(), 2);
    // Nor a shifted read (in range only for some rows, so it keeps its check).
    let mut shifted = access(1, &["i9 + 1"]);
    shifted.checked = true;
    let p = program(vec![
        row_sums(),
        one_loop_consumer(Value::Load {
            access: shifted,
            fill: 0.0,
        }),
    ]);
    assert_eq!(fused(&p).blocks.len(), 2);
}

#[test]
fn a_consumer_reading_a_running_total_does_not_fuse() {
    // `s[0]` holds a running total over rows, stored after each row: inside the
    // shared row loop the consumer would read the total so far, not the final one.
    let v = VarId(0);
    let mut loops = vec![lp(0, 4), lp(1, 3)];
    loops[1].stmts.push(update(v, load(0, &["i0", "i1"])));
    loops[0].stmts.push(store(3, &["0"], Value::Var(v)));
    let mut totals = nest(loops);
    totals.carried.push(sum(v));
    let p = program(vec![totals, one_loop_consumer(load(3, &["0"]))]);
    assert_eq!(fused(&p).blocks.len(), 2);
}

#[test]
fn a_consumer_of_a_block_level_result_inside_a_loop_does_not_fuse() {
    // The full sum is stored once, after the whole nest; a consumer reading it in a
    // loop cannot share that loop.
    let v = VarId(0);
    let mut totals = nest(vec![lp(0, 4), lp(1, 3)]);
    totals.carried.push(sum(v));
    totals.loops[1]
        .stmts
        .push(update(v, load(0, &["i0", "i1"])));
    totals.stmts.push(store(3, &["0"], Value::Var(v)));
    let p = program(vec![totals, one_loop_consumer(load(3, &["0"]))]);
    assert_eq!(fused(&p).blocks.len(), 2);
}

#[test]
fn a_block_level_consumer_of_a_full_reduction_joins_its_block_statements() {
    let v = VarId(0);
    let mut totals = nest(vec![lp(0, 4), lp(1, 3)]);
    totals.carried.push(sum(v));
    totals.loops[1]
        .stmts
        .push(update(v, load(0, &["i0", "i1"])));
    totals.stmts.push(store(3, &["0"], Value::Var(v)));
    let scale = Block {
        loops: Vec::new(),
        carried: Vec::new(),
        stmts: vec![store(
            2,
            &["1"],
            Value::Binary(
                BinaryOp::Mul,
                Box::new(load(3, &["0"])),
                Box::new(Value::Const(0.5)),
            ),
        )],
    };
    let p = program(vec![totals, scale]);
    let f = fused(&p);
    assert_eq!(f.blocks.len(), 1, "{f}");
    assert_eq!(f.blocks[0].stmts.len(), 2, "{f}");
}

#[test]
fn an_earlier_shallower_nest_joins_a_deeper_one_when_it_is_read_at_its_level() {
    // t[i] = exp(x[i, 0]), then y[i] = row sum * t[i]: `t` is stored and read at
    // the row level, so the producer's statement can run after the row's sum loop.
    let mut producer = lp(5, 4);
    producer.stmts.push(store(
        1,
        &["i5"],
        Value::Unary(UnaryOp::Exp, Box::new(load(0, &["i5", "0"]))),
    ));
    let v = VarId(0);
    let mut loops = vec![lp(0, 4), lp(1, 3)];
    loops[0].carried.push(sum(v));
    loops[1].stmts.push(update(v, load(0, &["i0", "i1"])));
    loops[0].stmts.push(store(
        2,
        &["i0"],
        Value::Binary(
            BinaryOp::Mul,
            Box::new(Value::Var(v)),
            Box::new(load(1, &["i0"])),
        ),
    ));
    let p = program(vec![nest(vec![producer]), nest(loops)]);
    let f = fused(&p);
    assert_eq!(f.blocks.len(), 1, "{f}");
    let text = f.to_string();
    assert!(
        text.contains("    }\n    t[i5] = exp(x[i5, 0])\n    y[i5] = v0 * t[i5]\n"),
        "{text}"
    );
}

#[test]
fn an_earlier_shallower_nest_read_inside_the_deeper_loop_does_not_fuse() {
    // y[i] = sum_j x[i, j] * t[i]: the read of `t` sits inside the `j` loop, which
    // would run before the producer's statement of the same row.
    let mut producer = lp(5, 4);
    producer.stmts.push(store(
        1,
        &["i5"],
        Value::Unary(UnaryOp::Exp, Box::new(load(0, &["i5", "0"]))),
    ));
    let v = VarId(0);
    let mut loops = vec![lp(0, 4), lp(1, 3)];
    loops[0].carried.push(sum(v));
    loops[1].stmts.push(update(
        v,
        Value::Binary(
            BinaryOp::Mul,
            Box::new(load(0, &["i0", "i1"])),
            Box::new(load(1, &["i0"])),
        ),
    ));
    loops[0].stmts.push(store(2, &["i0"], Value::Var(v)));
    let p = program(vec![nest(vec![producer]), nest(loops)]);
    assert_eq!(fused(&p).blocks.len(), 2);
}

#[test]
fn a_later_overwrite_of_what_the_deeper_nest_read_fuses_only_at_the_same_index() {
    // t[i] = x[i, 2]; y[i] = sum_j x[i, j] * t[i]; then t is overwritten and added to
    // y. The overwrite of t[i] may run right after row i's reads of t[i], not
    // before row 3 - i has read its t.
    let fill = || {
        let mut l = lp(6, 4);
        l.stmts.push(store(1, &["i6"], load(0, &["i6", "2"])));
        nest(vec![l])
    };
    let reader = || {
        let v = VarId(0);
        let mut loops = vec![lp(0, 4), lp(1, 3)];
        loops[0].carried.push(sum(v));
        loops[1].stmts.push(update(
            v,
            Value::Binary(
                BinaryOp::Mul,
                Box::new(load(0, &["i0", "i1"])),
                Box::new(load(1, &["i0"])),
            ),
        ));
        loops[0].stmts.push(store(2, &["i0"], Value::Var(v)));
        nest(loops)
    };
    let overwrite = |index: &str| {
        let mut l = lp(9, 4);
        l.stmts
            .push(store(1, &[index], Value::Index(e("i9 * 10 + 1"))));
        nest(vec![l])
    };
    let add_t = || {
        let mut l = lp(12, 4);
        l.stmts.push(Stmt::Accumulate {
            access: access(2, &["i12"]),
            op: Accum::Add,
            value: load(1, &["i12"]),
        });
        nest(vec![l])
    };
    let same = program(vec![fill(), reader(), overwrite("i9"), add_t()]);
    let f = fused(&same);
    // `fill` cannot join: the reader reads `t` inside its column loop.
    assert_eq!(f.blocks.len(), 2, "{f}");
    let text = f.block_text(&f.blocks[1]);
    assert!(
        text.contains("    y[i0] = v0\n    t[i0] = (i0 * 10 + 1)\n    y[i0] += t[i0]\n"),
        "{text}"
    );
    let shifted = program(vec![fill(), reader(), overwrite("3 - i9"), add_t()]);
    assert_eq!(fused(&shifted).blocks.len(), 4);
}

// ---- macro-op shaped programs, through the whole pipeline (matmul's is in
// passes_targets.rs) ----

fn ramp(shape: &[usize], seed: usize) -> Tensor {
    let n: usize = shape.iter().product();
    let values = (0..n)
        .map(|k| (((k * 7 + seed * 13) % 23) as f64 - 11.0) * 0.37)
        .collect();
    Tensor::new(F32, shape.to_vec(), values).unwrap()
}

/// Optimizes `program`, checks it against the reference and returns it.
fn optimized(program: &Program, inputs: &[Tensor]) -> LoopProgram {
    let none = HashMap::new();
    let out = compile(program, &CompileOptions::default()).unwrap();
    let want = interp::run(program, inputs, &none).unwrap();
    assert_eq!(
        interp::run_loops(&out, inputs, &none).unwrap(),
        want,
        "{out}"
    );
    out
}

fn counts(p: &LoopProgram) -> (usize, usize) {
    let s = pass::stats(p, &HashMap::new(), &HashMap::new());
    (s.blocks, s.temporaries)
}

#[test]
fn a_full_sum_and_its_rank_0_consumer_are_one_block() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N", "M"]).unwrap();
    let s = b.reduce(ReduceOp::Sum, &[0, 1], x).unwrap();
    let s0 = b.reindex(s, &[], &[], &["0", "0"]).unwrap();
    let y = b.unary(UnaryOp::Sqrt, s0).unwrap();
    let p = optimized(&b.combine(&[x], &[y]).unwrap(), &[ramp(&[3, 4], 1)]);
    assert_eq!(counts(&p), (1, 0), "{p}");
    assert!(p.to_string().contains("\n  t3[] = sqrt(v0)\n"), "{p}");
}

#[test]
fn an_element_wise_op_on_a_kept_axis_result_joins_the_reduction() {
    // exp(mean) over [N, 1, M]: the size-1 loop is dropped before matching.
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N", "C", "M"]).unwrap();
    let m = b.reduce(ReduceOp::Mean, &[1], x).unwrap();
    let r = b.unary(UnaryOp::Exp, m).unwrap();
    let p = optimized(&b.combine(&[x], &[r]).unwrap(), &[ramp(&[2, 3, 4], 1)]);
    assert_eq!(counts(&p), (1, 0), "{p}");
}
