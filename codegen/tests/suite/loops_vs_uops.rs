//! The loop IR produced by `loops::lower`, run by the loop-IR interpreter, gives
//! bit-identical results to the reference (uop-level) interpreter: for every uop kind,
//! on random shapes (sizes 0 and 1 included) and random data (NaN, ±inf, ±0 and ties
//! included), in f32 and f64. Also: the printed form of a small matmul.

use std::collections::HashMap;

use rand::{Rng, SeedableRng, rngs::StdRng};
use uop_codegen::interp::{self, RunError};
use uop_codegen::loops::{self, Access, LoopId, Value};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{
    Accum, BinaryOp, BindError, Builder, DType, NodeId, Operand, Program, ReduceOp, UnaryOp,
};

const SEEDS: u64 = 64;
const FLOATS: [DType; 2] = [DType::F32, DType::F64];

/// Dimension names, one per axis.
const DIMS: [&str; 4] = ["A", "B", "C", "D"];

/// Bitwise equality, except that any NaN equals any NaN.
fn same_bits(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

/// Runs `program` both ways and requires identical outputs; returns the outputs.
fn check(
    program: &Program,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
    what: &str,
) -> Vec<Tensor> {
    let lowered = loops::lower(program);
    let expected = match interp::run(program, inputs, params) {
        Ok(outputs) => outputs,
        // argmax / argmin of nothing is an error both ways.
        Err(RunError::EmptyAxis { .. }) => match interp::run_loops(&lowered, inputs, params) {
            Err(RunError::Bind(BindError::EmptyAxis { .. })) => return Vec::new(),
            other => panic!("{what}: the reference refuses an empty axis, loops give {other:?}"),
        },
        Err(e) => panic!("{what}: reference interpreter failed: {e}"),
    };
    let got = interp::run_loops(&lowered, inputs, params)
        .unwrap_or_else(|e| panic!("{what}: loop interpreter failed: {e}\n{lowered}"));
    assert_eq!(got.len(), expected.len(), "{what}: output count");
    for (k, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(g.shape, e.shape, "{what}: shape of output {k}\n{lowered}");
        assert_eq!(g.dtype, e.dtype, "{what}: type of output {k}");
        for (at, (x, y)) in g.data.iter().zip(&e.data).enumerate() {
            assert!(
                same_bits(*x, *y),
                "{what}: output {k} element {at}: loops give {x:?}, reference {y:?}\n\
                 inputs: {inputs:?}\n{lowered}"
            );
        }
    }
    expected
}

/// Random sizes in 0..=3, with 0 rare and 1 common, so empty and broadcast-like
/// shapes both turn up.
fn random_shape(rng: &mut StdRng, rank: usize) -> Vec<usize> {
    (0..rank)
        .map(|_| match rng.random_range(0..10) {
            0 => 0,
            1..=3 => 1,
            4..=6 => 2,
            _ => 3,
        })
        .collect()
}

/// Float data with the awkward values mixed in: NaN, ±inf, ±0 and repeated small
/// integers (ties for argmax / argmin and comparisons).
fn tricky_data(dtype: DType, shape: &[usize], rng: &mut StdRng) -> Tensor {
    let n: usize = shape.iter().product();
    let data = (0..n)
        .map(|_| match rng.random_range(0..20) {
            0 => f64::NAN,
            1 => f64::INFINITY,
            2 => f64::NEG_INFINITY,
            3 => -0.0,
            4..=7 => rng.random_range(-2..=2) as f64,
            _ => rng.random_range(-3.0..3.0),
        })
        .collect();
    Tensor::new(dtype, shape.to_vec(), data).expect("data matches the shape")
}

fn no_params() -> HashMap<String, i64> {
    HashMap::new()
}

#[test]
fn every_unary_op_matches() {
    for &dtype in &FLOATS {
        for &op in UnaryOp::ALL {
            for seed in 0..SEEDS {
                let mut rng = StdRng::seed_from_u64(seed);
                let rank = rng.random_range(0..=3);
                let shape = random_shape(&mut rng, rank);
                let mut b = Builder::new(dtype);
                let x = b.input("x", dtype, &DIMS[..rank]).unwrap();
                let y = b.unary(op, x).unwrap();
                let program = b.combine(&[x], &[y]).unwrap();
                let x = tricky_data(dtype, &shape, &mut rng);
                check(
                    &program,
                    &[x],
                    &no_params(),
                    &format!("{op} {dtype} seed {seed}"),
                );
            }
        }
    }
}

/// The ways an element-wise operand can be given.
#[derive(Clone, Copy, Debug)]
enum Form {
    Tensor,
    Const,
    Param,
}

const FORMS: [(Form, Form); 5] = [
    (Form::Tensor, Form::Tensor),
    (Form::Tensor, Form::Const),
    (Form::Const, Form::Tensor),
    (Form::Tensor, Form::Param),
    (Form::Param, Form::Tensor),
];

/// Declares the operand `name` in `form`; tensors get `data` pushed to `inputs`.
fn operand(
    b: &mut Builder,
    form: Form,
    name: &str,
    rank: usize,
    declared: &mut Vec<NodeId>,
    rng: &mut StdRng,
) -> Operand {
    match form {
        Form::Tensor => {
            let n = b.input(name, b.dtype(), &DIMS[..rank]).unwrap();
            declared.push(n);
            Operand::Node(n)
        }
        Form::Const => Operand::Const(match rng.random_range(0..4) {
            0 => 0.1,
            1 => f64::NAN,
            2 => -0.0,
            _ => rng.random_range(-2..=2) as f64,
        }),
        Form::Param => b.param(name).unwrap(),
    }
}

#[test]
fn every_binary_op_with_tensor_scalar_and_param_operands_matches() {
    for &dtype in &FLOATS {
        for &op in BinaryOp::ALL {
            for (fa, fb) in FORMS {
                for seed in 0..SEEDS / 2 {
                    let mut rng = StdRng::seed_from_u64(seed);
                    let rank = rng.random_range(0..=3);
                    let shape = random_shape(&mut rng, rank);
                    let mut b = Builder::new(dtype);
                    let mut declared = Vec::new();
                    let a = operand(&mut b, fa, "a", rank, &mut declared, &mut rng);
                    let c = operand(&mut b, fb, "b", rank, &mut declared, &mut rng);
                    let y = b.binary(op, a, c).unwrap();
                    let program = b.combine(&declared, &[y]).unwrap();
                    let inputs: Vec<Tensor> = declared
                        .iter()
                        .map(|_| tricky_data(dtype, &shape, &mut rng))
                        .collect();
                    let params = program
                        .params
                        .iter()
                        .map(|p| (p.clone(), rng.random_range(-3..=3)))
                        .collect();
                    check(
                        &program,
                        &inputs,
                        &params,
                        &format!("{op} {fa:?} {fb:?} {dtype} seed {seed}"),
                    );
                }
            }
        }
    }
}

#[test]
fn where_with_every_operand_form_matches() {
    let forms = [Form::Tensor, Form::Const, Form::Param];
    for &dtype in &FLOATS {
        for seed in 0..SEEDS * 4 {
            let mut rng = StdRng::seed_from_u64(seed);
            let rank = rng.random_range(0..=3);
            let shape = random_shape(&mut rng, rank);
            let mut b = Builder::new(dtype);
            let mut declared = Vec::new();
            // The condition is always a tensor here so the shape is defined; the
            // branches take every form.
            let c = operand(&mut b, Form::Tensor, "c", rank, &mut declared, &mut rng);
            let fa = forms[rng.random_range(0..3)];
            let fb = forms[rng.random_range(0..3)];
            let x = operand(&mut b, fa, "x", rank, &mut declared, &mut rng);
            let y = operand(&mut b, fb, "y", rank, &mut declared, &mut rng);
            let w = b.where_(c, x, y).unwrap();
            let program = b.combine(&declared, &[w]).unwrap();
            let inputs: Vec<Tensor> = declared
                .iter()
                .map(|_| tricky_data(dtype, &shape, &mut rng))
                .collect();
            let params = program
                .params
                .iter()
                .map(|p| (p.clone(), rng.random_range(-3..=3)))
                .collect();
            check(
                &program,
                &inputs,
                &params,
                &format!("where {dtype} seed {seed}"),
            );
        }
    }
}

#[test]
fn every_reduction_over_random_axis_subsets_matches() {
    for &dtype in &FLOATS {
        for &op in ReduceOp::ALL {
            for seed in 0..SEEDS * 3 {
                let mut rng = StdRng::seed_from_u64(seed);
                let rank = rng.random_range(0..=4);
                let shape = random_shape(&mut rng, rank);
                // Every subset turns up: none, some, all (seed 0 and 1 force the extremes).
                let axes: Vec<usize> = match seed {
                    0 => (0..rank).collect(),
                    1 => vec![],
                    _ => (0..rank).filter(|_| rng.random_bool(0.5)).collect(),
                };
                let mut b = Builder::new(dtype);
                let x = b.input("x", dtype, &DIMS[..rank]).unwrap();
                let r = b.reduce(op, &axes, x).unwrap();
                let program = b.combine(&[x], &[r]).unwrap();
                let x = tricky_data(dtype, &shape, &mut rng);
                check(
                    &program,
                    &[x],
                    &no_params(),
                    &format!("reduce_{op} {axes:?} of {shape:?} {dtype} seed {seed}"),
                );
            }
        }
    }
}

#[test]
fn argmax_and_argmin_take_the_first_extreme_and_the_first_nan() {
    let cases: [(&[f64], f64, f64); 4] = [
        (&[1.0, 3.0, 3.0, -1.0, -1.0], 1.0, 3.0),
        (&[1.0, f64::NAN, 5.0, f64::NAN], 1.0, 1.0),
        (&[f64::NEG_INFINITY, f64::NEG_INFINITY], 0.0, 0.0),
        (&[-0.0, 0.0], 0.0, 0.0),
    ];
    for (data, argmax, argmin) in cases {
        for (op, want) in [(ReduceOp::Argmax, argmax), (ReduceOp::Argmin, argmin)] {
            let mut b = Builder::new(DType::F64);
            let x = b.input("x", DType::F64, &["N"]).unwrap();
            let r = b.reduce(op, &[0], x).unwrap();
            let program = b.combine(&[x], &[r]).unwrap();
            let x = Tensor::new(DType::F64, vec![data.len()], data.to_vec()).unwrap();
            let out = check(&program, &[x], &no_params(), &format!("{op} of {data:?}"));
            assert_eq!(out[0].data, vec![want], "{op} of {data:?}");
        }
    }
    // Of nothing there is no first extreme: an error both ways (`check` requires it).
    for op in [ReduceOp::Argmax, ReduceOp::Argmin] {
        let mut b = Builder::new(DType::F64);
        let x = b.input("x", DType::F64, &["N"]).unwrap();
        let r = b.reduce(op, &[0], x).unwrap();
        let program = b.combine(&[x], &[r]).unwrap();
        let x = Tensor::new(DType::F64, vec![0], vec![]).unwrap();
        assert!(check(&program, &[x], &no_params(), &format!("{op} of []")).is_empty());
    }
}

/// A random index expression over `i0..i{rank}` for an axis of size `dim`, often
/// reaching outside it.
fn random_index(rng: &mut StdRng, out_rank: usize, dim: &str) -> String {
    let i = if out_rank == 0 {
        "0".to_string()
    } else {
        format!("i{}", rng.random_range(0..out_rank))
    };
    match rng.random_range(0..7) {
        0 => i,
        1 => format!("{i} - 1"),
        2 => format!("{i} + 1"),
        3 => format!("{dim} - 1 - {i}"),
        4 => format!("{i} / 2"),
        5 => format!("{i} % 2 + $p"),
        _ => format!("{i} * 2 - 1"),
    }
}

#[test]
fn reindex_with_out_of_range_reads_and_fill_matches() {
    for &dtype in &FLOATS {
        for seed in 0..SEEDS * 6 {
            let mut rng = StdRng::seed_from_u64(seed);
            let rank_x = rng.random_range(0..=3);
            let rank_out = rng.random_range(0..=3);
            let shape_x = random_shape(&mut rng, rank_x);
            let mut b = Builder::new(dtype);
            b.param("p").unwrap();
            let x = b.input("x", dtype, &DIMS[..rank_x]).unwrap();
            // The output is at most one bigger than a dim of x on each axis.
            let out_shape: Vec<String> = (0..rank_out)
                .map(|_| match (rank_x, rng.random_range(0..3)) {
                    (0, _) | (_, 0) => rng.random_range(0..=3).to_string(),
                    (_, 1) => DIMS[rng.random_range(0..rank_x)].to_string(),
                    _ => format!("{} + 1", DIMS[rng.random_range(0..rank_x)]),
                })
                .collect();
            let index: Vec<String> = (0..rank_x)
                .map(|k| random_index(&mut rng, rank_out, DIMS[k]))
                .collect();
            let fill = [0.0, 0.1, -7.0, f64::NAN, f64::INFINITY][rng.random_range(0..5)];
            let shape: Vec<&str> = out_shape.iter().map(String::as_str).collect();
            let index: Vec<&str> = index.iter().map(String::as_str).collect();
            let y = b.reindex_fill(x, &shape, &[], &index, fill).unwrap();
            let program = b.combine(&[x], &[y]).unwrap();
            let params = HashMap::from([("p".to_string(), rng.random_range(-1..=1))]);
            let x = tricky_data(dtype, &shape_x, &mut rng);
            check(
                &program,
                &[x],
                &params,
                &format!("reindex {shape:?} {index:?} fill {fill} {dtype} seed {seed}"),
            );
        }
    }
}

#[test]
fn reindex_reduce_with_collisions_and_dropped_targets_matches() {
    for &dtype in &FLOATS {
        for op in [Accum::Add, Accum::Max, Accum::Min] {
            for seed in 0..SEEDS * 3 {
                let mut rng = StdRng::seed_from_u64(seed);
                let rank_x = rng.random_range(0..=3);
                let rank_out = rng.random_range(0..=3);
                let shape_x = random_shape(&mut rng, rank_x);
                let mut b = Builder::new(dtype);
                b.param("p").unwrap();
                let x = b.input("x", dtype, &DIMS[..rank_x]).unwrap();
                let out_shape: Vec<String> = (0..rank_out)
                    .map(|_| rng.random_range(0..=3).to_string())
                    .collect();
                // Halving and modulo collide, shifts drop targets off either edge.
                let index: Vec<String> = out_shape
                    .iter()
                    .map(|n| random_index(&mut rng, rank_x, n))
                    .collect();
                let shape: Vec<&str> = out_shape.iter().map(String::as_str).collect();
                let index: Vec<&str> = index.iter().map(String::as_str).collect();
                let y = b.reindex_reduce(x, &shape, &[], &index, op).unwrap();
                let program = b.combine(&[x], &[y]).unwrap();
                let params = HashMap::from([("p".to_string(), rng.random_range(-1..=1))]);
                let x = tricky_data(dtype, &shape_x, &mut rng);
                check(
                    &program,
                    &[x],
                    &params,
                    &format!("reindex_reduce {op} {shape:?} {index:?} {dtype} seed {seed}"),
                );
            }
        }
    }
}

#[test]
fn select_with_out_of_range_i32_and_float_indices_matches() {
    for &dtype in &FLOATS {
        for index_type in [DType::I32, dtype] {
            for seed in 0..SEEDS * 3 {
                let mut rng = StdRng::seed_from_u64(seed);
                let rank = rng.random_range(1..=3);
                let axis = rng.random_range(0..rank);
                let shape_x = random_shape(&mut rng, rank);
                let mut shape_i = shape_x.clone();
                shape_i[axis] = rng.random_range(0..=3);
                let dims_x: Vec<&str> = DIMS[..rank].to_vec();
                let mut dims_i = dims_x.clone();
                dims_i[axis] = "S";
                let mut b = Builder::new(dtype);
                let x = b.input("x", dtype, &dims_x).unwrap();
                let index = b.input("index", index_type, &dims_i).unwrap();
                let y = b.select(axis, x, index).unwrap();
                let program = b.combine(&[x, index], &[y]).unwrap();
                let n = shape_x[axis] as i64;
                let positions: Vec<f64> = (0..shape_i.iter().product::<usize>())
                    .map(|_| match (index_type, rng.random_range(0..6)) {
                        (DType::I32, _) => rng.random_range(-1..=n) as f64,
                        (_, 0) => f64::NAN,
                        (_, 1) => f64::INFINITY,
                        _ => rng.random_range(-1.5..n as f64 + 1.0),
                    })
                    .collect();
                let inputs = [
                    tricky_data(dtype, &shape_x, &mut rng),
                    Tensor::new(index_type, shape_i.clone(), positions).unwrap(),
                ];
                check(
                    &program,
                    &inputs,
                    &no_params(),
                    &format!("select axis {axis} {index_type} {dtype} seed {seed}"),
                );
            }
        }
    }
}

#[test]
fn iota_matches_on_every_axis() {
    for &dtype in &FLOATS {
        for seed in 0..SEEDS {
            let mut rng = StdRng::seed_from_u64(seed);
            let rank = rng.random_range(1..=4);
            let shape = random_shape(&mut rng, rank);
            let axis = rng.random_range(0..rank);
            let mut b = Builder::new(dtype);
            let x = b.input("x", dtype, &DIMS[..rank]).unwrap();
            let sizes: Vec<String> = (0..rank).map(|k| format!("dA{k}")).collect();
            let sizes: Vec<&str> = sizes.iter().map(String::as_str).collect();
            let iota = b.iota(&sizes, &[x], axis).unwrap();
            // Added to x so the program uses its input.
            let y = b.binary(BinaryOp::Add, x, iota).unwrap();
            let program = b.combine(&[x], &[iota, y]).unwrap();
            let x = tricky_data(dtype, &shape, &mut rng);
            check(
                &program,
                &[x],
                &no_params(),
                &format!("iota axis {axis} {dtype} seed {seed}"),
            );
        }
    }
}

#[test]
fn rank_zero_tensors_flow_through_every_kind_of_block() {
    for &dtype in &FLOATS {
        for seed in 0..SEEDS {
            let mut rng = StdRng::seed_from_u64(seed);
            let mut b = Builder::new(dtype);
            let s = b.input("s", dtype, &[]).unwrap();
            let v = b.input("v", dtype, &["N"]).unwrap();
            let e = b.unary(UnaryOp::Exp, s).unwrap();
            let kept = b.reduce(ReduceOp::Sum, &[], e).unwrap();
            // Rank 0 -> rank 1 (a broadcast) and back (a sum over the only axis).
            let spread = b.reindex(kept, &["dA0"], &[v], &[]).unwrap();
            let prod = b.binary(BinaryOp::Mul, spread, v).unwrap();
            let total = b.reduce(ReduceOp::Argmin, &[0], prod).unwrap();
            let picked = b.reindex_fill(v, &[], &[], &["1"], -1.0).unwrap();
            let scattered = b.reindex_reduce(v, &[], &[], &[], Accum::Max).unwrap();
            let program = b
                .combine(&[s, v], &[kept, total, picked, scattered])
                .unwrap();
            let n = rng.random_range(0..=3);
            let inputs = [
                tricky_data(dtype, &[], &mut rng),
                tricky_data(dtype, &[n], &mut rng),
            ];
            check(
                &program,
                &inputs,
                &no_params(),
                &format!("rank 0 {dtype} seed {seed}"),
            );
        }
    }
}

#[test]
fn an_input_returned_as_an_output_is_copied() {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let y = b.unary(UnaryOp::Abs, x).unwrap();
    let program = b.combine(&[x], &[x, y]).unwrap();
    let lowered = loops::lower(&program);
    assert_eq!(lowered.outputs.len(), 2);
    assert_ne!(
        lowered.outputs[0], lowered.inputs[0],
        "an input is never written"
    );
    assert_eq!(lowered.tensors[lowered.outputs[0].0].name, "x_out");
    let x = Tensor::random(DType::F32, vec![5], 7);
    let out = check(
        &program,
        std::slice::from_ref(&x),
        &no_params(),
        "copy of an input",
    );
    assert_eq!(out[0], x);
}

#[test]
fn a_chain_of_uops_matches() {
    // softmax over the last axis: every block reads the previous ones' temporaries.
    for &dtype in &FLOATS {
        for seed in 0..SEEDS {
            let mut rng = StdRng::seed_from_u64(seed);
            let shape = random_shape(&mut rng, 2);
            let mut b = Builder::new(dtype);
            let x = b.input("x", dtype, &["R", "C"]).unwrap();
            let m = b.reduce(ReduceOp::Max, &[1], x).unwrap();
            let mb = b.reindex(m, &["dA0", "dA1"], &[x], &["i0", "0"]).unwrap();
            let d = b.binary(BinaryOp::Sub, x, mb).unwrap();
            let e = b.unary(UnaryOp::Exp, d).unwrap();
            let s = b.reduce(ReduceOp::Sum, &[1], e).unwrap();
            let sb = b.reindex(s, &["dA0", "dA1"], &[x], &["i0", "0"]).unwrap();
            let y = b.binary(BinaryOp::Div, e, sb).unwrap();
            let program = b.combine(&[x], &[y, m]).unwrap();
            let x = Tensor::random(dtype, shape, seed);
            check(
                &program,
                &[x],
                &no_params(),
                &format!("softmax {dtype} seed {seed}"),
            );
        }
    }
}

#[test]
fn a_fused_expression_rounds_after_every_operation_like_separate_uops() {
    // What fusion will produce: three uops in one statement, with no store between
    // them to round the intermediates. It must still match the unfused program.
    for &dtype in &FLOATS {
        let mut b = Builder::new(dtype);
        let x = b.input("x", dtype, &["N"]).unwrap();
        let e = b.unary(UnaryOp::Exp, x).unwrap();
        let m = b.binary(BinaryOp::Mul, e, 3.0).unwrap();
        let y = b.binary(BinaryOp::Add, m, 0.1).unwrap();
        let program = b.combine(&[x], &[y]).unwrap();

        let mut b = Builder::new(dtype);
        let x = b.input("x", dtype, &["N"]).unwrap();
        let e = b.unary(UnaryOp::Exp, x).unwrap();
        let mut fused = loops::lower(&b.combine(&[x], &[e]).unwrap());
        let loops::Stmt::Store { value, .. } = &mut fused.blocks[0].loops[0].stmts[0] else {
            panic!("a unary op lowers to a store");
        };
        let times_three = Value::Binary(
            BinaryOp::Mul,
            Box::new(value.clone()),
            Box::new(Value::Const(3.0)),
        );
        *value = Value::Binary(
            BinaryOp::Add,
            Box::new(times_three),
            Box::new(Value::Const(0.1)),
        );

        let x = Tensor::random(dtype, vec![64], 3);
        let expected = interp::run(&program, std::slice::from_ref(&x), &no_params()).unwrap();
        let got = interp::run_loops(&fused, &[x], &no_params()).unwrap();
        assert_eq!(got, expected, "{dtype}\n{fused}");
    }
}

#[test]
fn the_loop_interpreter_reports_a_broken_in_range_promise() {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let y = b.reindex(x, &["dA0"], &[x], &["i0 + 1"]).unwrap();
    let program = b.combine(&[x], &[y]).unwrap();
    let mut lowered = loops::lower(&program);
    let loops::Stmt::Store { value, .. } = &mut lowered.blocks[0].loops[0].stmts[0] else {
        panic!("a reindex lowers to a store");
    };
    let Value::Load { access, .. } = value else {
        panic!("a reindex stores a load");
    };
    assert!(access.checked, "a shifted read needs a bounds check");
    access.checked = false;
    let x = Tensor::random(DType::F32, vec![3], 1);
    let err = interp::run_loops(&lowered, &[x], &no_params()).unwrap_err();
    assert!(
        matches!(err, RunError::InvalidLoops { block: 0, .. }),
        "{err}"
    );
}

/// Whether the value stored by the first statement of the innermost loop of `block`
/// is a load still marked for a bounds check.
fn stored_load_is_checked(block: &loops::Block) -> bool {
    let loops::Stmt::Store { value, .. } = &block.loops.last().unwrap().stmts[0] else {
        panic!("expected a store");
    };
    let Value::Load {
        access: Access { checked, .. },
        ..
    } = value
    else {
        panic!("expected a load");
    };
    *checked
}

#[test]
fn lowering_numbers_loops_and_variables_uniquely_and_checks_only_what_may_fall_outside() {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["M", "N"]).unwrap();
    let y = b.reduce(ReduceOp::Argmax, &[1], x).unwrap();
    let s = b.reduce(ReduceOp::Sum, &[0, 1], x).unwrap();
    let transposed = b.reindex(x, &["dA1", "dA0"], &[x], &["i1", "i0"]).unwrap();
    let shifted = b
        .reindex(x, &["dA0", "dA1"], &[x], &["i0 + 1", "i1"])
        .unwrap();
    let program = b.combine(&[x], &[y, s, transposed, shifted]).unwrap();
    let lowered = loops::lower(&program);

    let ids: Vec<LoopId> = lowered
        .blocks
        .iter()
        .flat_map(|b| b.loops.iter().map(|l| l.id))
        .collect();
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(ids.len(), unique.len(), "loop ids are unique: {ids:?}");
    let vars: Vec<_> = lowered
        .blocks
        .iter()
        .flat_map(|b| {
            b.carried
                .iter()
                .chain(b.loops.iter().flat_map(|l| &l.carried))
        })
        .map(|c| c.var)
        .collect();
    assert_eq!(
        vars.len(),
        3,
        "argmax carries one variable per block, the sum one: {vars:?}"
    );
    let mut unique = vars.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(
        vars.len(),
        unique.len(),
        "variable ids are unique: {vars:?}"
    );

    // A transpose reads x at the loop variables running over x's own axes: in range
    // by construction. A shifted read may fall off the end.
    let n = lowered.blocks.len();
    assert!(!stored_load_is_checked(&lowered.blocks[n - 2]), "transpose");
    assert!(stored_load_is_checked(&lowered.blocks[n - 1]), "shift");
    let text = lowered.to_string();
    assert!(text.contains("= x[i7, i6]\n"), "{text}");
    assert!(text.contains("= x[i8 + 1, i9] ?? 0.0\n"), "{text}");
}

#[test]
fn matmul_prints_readably() {
    let mut b = Builder::new(DType::F32);
    let a = b.input("a", DType::F32, &["M", "K"]).unwrap();
    let w = b.input("b", DType::F32, &["K", "N"]).unwrap();
    let aa = b
        .reindex(a, &["dA0", "dA1", "dB1"], &[a, w], &["i0", "i1"])
        .unwrap();
    let bb = b
        .reindex(w, &["dA0", "dB0", "dB1"], &[a, w], &["i1", "i2"])
        .unwrap();
    let prod = b.binary(BinaryOp::Mul, aa, bb).unwrap();
    let c = b.reduce(ReduceOp::Sum, &[1], prod).unwrap();
    b.set_name(c, "c").unwrap();
    let program = b.combine(&[a, w], &[c]).unwrap();
    let text = loops::lower(&program).to_string();
    let expected = "\
input  a: f32[M, K]
input  b: f32[K, N]
output c: f32[M, 1, N]
temp   t2: f32[M, K, N]
temp   t3: f32[M, K, N]
temp   t4: f32[M, K, N]
block 0 {
  for i0 in 0..M {
    for i1 in 0..K {
      for i2 in 0..N {
        t2[i0, i1, i2] = a[i0, i1]
      } } }
}
block 1 {
  for i3 in 0..M {
    for i4 in 0..K {
      for i5 in 0..N {
        t3[i3, i4, i5] = b[i4, i5]
      } } }
}
block 2 {
  for i6 in 0..M {
    for i7 in 0..K {
      for i8 in 0..N {
        t4[i6, i7, i8] = t2[i6, i7, i8] * t3[i6, i7, i8]
      } } }
}
block 3 {
  for i9 in 0..M {
    for i10 in 0..N {
      v0 = 0.0 (+)
      for i11 in 0..K {
        v0 += t4[i9, i11, i10]
      }
      c[i9, 0, i10] = v0
    } }
}
";
    assert_eq!(text, expected, "got:\n{text}");
}

#[test]
fn argmax_select_and_scatter_print_their_checks() {
    let mut b = Builder::new(DType::F32);
    let x = b.input("x", DType::F32, &["N"]).unwrap();
    let index = b.input("index", DType::I32, &["S"]).unwrap();
    let arg = b.reduce(ReduceOp::Argmax, &[0], x).unwrap();
    let picked = b.select(0, x, index).unwrap();
    let halves = b
        .reindex_reduce(x, &["dA0 / 2"], &[x], &["i0 / 2"], Accum::Add)
        .unwrap();
    let iota = b.iota(&["dA0"], &[x], 0).unwrap();
    let mean = b.reduce(ReduceOp::Mean, &[0], iota).unwrap();
    let program = b
        .combine(&[x, index], &[arg, picked, halves, mean])
        .unwrap();
    let text = loops::lower(&program).to_string();
    let expected = "\
input  x: f32[N]
input  index: i32[S]
output t2: f32[1]
output t3: f32[S]
output t4: f32[N / 2]
output t6: f32[1]
temp   t5: f32[N]
temp   t2_max: f32[1]
assert min(N, 1) == 1
block 0 {
  v0 = -inf (max)
  for i0 in 0..N {
    v0 max= x[i0]
  }
  t2_max[0] = v0
}
block 1 {
  v1 = inf (min)
  for i1 in 0..N {
    v1 min= where(x[i1] == t2_max[0], i1, where(x[i1] != x[i1], i1, inf))
  }
  t2[0] = v1
}
block 2 {
  for i2 in 0..S {
    t3[i2] = x[floor(index[i2])] ?? 0.0
  }
}
block 3 {
  for i3 in 0..N / 2 {
    t4[i3] = 0.0
  }
}
block 4 {
  for i4 in 0..N {
    t4[i4 / 2]? += x[i4]
  }
}
block 5 {
  for i5 in 0..N {
    t5[i5] = i5
  }
}
block 6 {
  v2 = 0.0 (+)
  for i6 in 0..N {
    v2 += t5[i6]
  }
  t6[0] = v2 / N
}
";
    assert_eq!(text, expected, "got:\n{text}");
}
