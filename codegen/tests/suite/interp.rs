//! Specification of the reference interpreter: every micro op on small tensors
//! whose expected values are worked out by hand and written down literally.
//!
//! When these tests and the interpreter disagree, the interpreter is wrong: every
//! other execution path is checked against it, so its semantics are pinned here.

use std::collections::HashMap;

use uop_codegen::interp::{self, RunError};
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{
    Accum, BinaryOp, BindError, Builder, DType, NodeId, Operand, Program, ReduceOp, UnaryOp,
    UopError,
};

const F32: DType = DType::F32;

fn f32_tensor(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(F32, shape.to_vec(), data.to_vec()).expect("test data matches its shape")
}

fn i32_tensor(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::I32, shape.to_vec(), data.to_vec()).expect("test data matches its shape")
}

fn params(pairs: &[(&str, i64)]) -> HashMap<String, i64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Runs a one-output program and returns that output.
fn run_one(program: &Program, inputs: &[Tensor], ps: &[(&str, i64)]) -> Tensor {
    let mut out = interp::run(program, inputs, &params(ps)).expect("the program runs");
    assert_eq!(out.len(), 1, "one output expected");
    out.remove(0)
}

/// Checks shape and values; NaN must meet NaN, infinities must match exactly, and
/// finite values agree to f32 precision (hand-written decimals of transcendental results).
#[track_caller]
fn assert_values(t: &Tensor, shape: &[usize], expected: &[f64]) {
    assert_eq!(t.shape, shape, "shape");
    assert_eq!(t.data.len(), expected.len(), "number of elements");
    for (k, (&got, &want)) in t.data.iter().zip(expected).enumerate() {
        let ok = if want.is_nan() {
            got.is_nan()
        } else if want.is_infinite() {
            got == want
        } else {
            (got - want).abs() <= 1e-6 * want.abs().max(1.0)
        };
        assert!(
            ok,
            "element {k}: got {got}, expected {want} (all: {:?})",
            t.data
        );
    }
}

/// A program `x -> f(x)` over a single f32 input of the given dims.
fn program_of(dims: &[&str], f: impl FnOnce(&mut Builder, NodeId) -> NodeId) -> Program {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, dims).expect("valid input");
    let y = f(&mut b, x);
    b.combine(&[x], &[y]).expect("valid program")
}

// ---------------------------------------------------------------- input, constants, params

#[test]
fn an_input_can_be_an_output_unchanged() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let p = b.combine(&[x], &[x]).unwrap();
    let out = run_one(&p, &[f32_tensor(&[3], &[1.0, -2.0, 0.25])], &[]);
    assert_values(&out, &[3], &[1.0, -2.0, 0.25]);
}

#[test]
fn constant_operands_broadcast_on_either_side() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let left = b.binary(BinaryOp::Sub, Operand::Const(10.0), x).unwrap();
    let right = b.binary(BinaryOp::Sub, x, Operand::Const(10.0)).unwrap();
    let p = b.combine(&[x], &[left, right]).unwrap();
    let out = interp::run(&p, &[f32_tensor(&[3], &[1.0, 2.0, 3.0])], &params(&[])).unwrap();
    assert_values(&out[0], &[3], &[9.0, 8.0, 7.0]);
    assert_values(&out[1], &[3], &[-9.0, -8.0, -7.0]);
}

#[test]
fn param_operands_are_their_integer_value() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let n = b.param("n").unwrap();
    let left = b.binary(BinaryOp::Div, n.clone(), x).unwrap();
    let right = b.binary(BinaryOp::Mul, x, n).unwrap();
    let p = b.combine(&[x], &[left, right]).unwrap();
    let out = interp::run(
        &p,
        &[f32_tensor(&[3], &[1.0, 2.0, -4.0])],
        &params(&[("n", 6)]),
    )
    .unwrap();
    assert_values(&out[0], &[3], &[6.0, 3.0, -1.5]);
    assert_values(&out[1], &[3], &[6.0, 12.0, -24.0]);
}

// ---------------------------------------------------------------- reindex

#[test]
fn reindex_broadcasts_a_vector_along_a_new_axis() {
    let p = program_of(&["N"], |b, x| {
        b.reindex(x, &["2", "dA0"], &[x], &["i1"]).unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[3], &[1.0, 2.0, 3.0])], &[]);
    assert_values(&out, &[2, 3], &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
}

#[test]
fn reindex_transposes() {
    let p = program_of(&["M", "N"], |b, x| {
        b.reindex(x, &["dA1", "dA0"], &[x], &["i1", "i0"]).unwrap()
    });
    // [[1, 2, 3], [4, 5, 6]] transposed.
    let out = run_one(&p, &[f32_tensor(&[2, 3], &[1., 2., 3., 4., 5., 6.])], &[]);
    assert_values(&out, &[3, 2], &[1., 4., 2., 5., 3., 6.]);
}

#[test]
fn reindex_slices_the_middle() {
    let p = program_of(&["N"], |b, x| {
        b.reindex(x, &["dA0 - 2"], &[x], &["i0 + 1"]).unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[5], &[10., 11., 12., 13., 14.])], &[]);
    assert_values(&out, &[3], &[11., 12., 13.]);
}

#[test]
fn reindex_flips_with_da0_minus_1_minus_i0() {
    let p = program_of(&["N"], |b, x| {
        b.reindex(x, &["dA0"], &[x], &["dA0 - 1 - i0"]).unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[4], &[1., 2., 3., 4.])], &[]);
    assert_values(&out, &[4], &[4., 3., 2., 1.]);
}

#[test]
fn reindex_takes_every_second_element() {
    let p = program_of(&["N"], |b, x| {
        b.reindex(x, &["(dA0 + 1) / 2"], &[x], &["2 * i0"]).unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[5], &[0., 1., 2., 3., 4.])], &[]);
    assert_values(&out, &[3], &[0., 2., 4.]);
}

#[test]
fn reindex_tiles_with_modulo() {
    let p = program_of(&["N"], |b, x| {
        b.reindex(x, &["2 * dA0"], &[x], &["i0 % dA0"]).unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[3], &[7., 8., 9.])], &[]);
    assert_values(&out, &[6], &[7., 8., 9., 7., 8., 9.]);
}

#[test]
fn reindex_out_of_range_reads_give_the_fill_on_both_sides() {
    // out[i] = x[i - 1]: i = 0 reads x[-1] (negative), i = 4 reads x[3] (past the end).
    let p = program_of(&["N"], |b, x| {
        b.reindex_fill(x, &["dA0 + 2"], &[x], &["i0 - 1"], -7.0)
            .unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[3], &[1., 2., 3.])], &[]);
    assert_values(&out, &[5], &[-7., 1., 2., 3., -7.]);
}

#[test]
fn reindex_default_fill_is_zero() {
    let p = program_of(&["N"], |b, x| {
        b.reindex(x, &["dA0"], &[x], &["i0 + 2"]).unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[3], &[1., 2., 3.])], &[]);
    assert_values(&out, &[3], &[3., 0., 0.]);
}

#[test]
fn reindex_uses_params_in_shape_and_index() {
    // Sliding windows of width $k: out[i0, i1] = x[i0 + i1 + $s].
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    b.param("k").unwrap();
    b.param("s").unwrap();
    let y = b
        .reindex(x, &["dA0 - $k + 1 - $s", "$k"], &[x], &["i0 + i1 + $s"])
        .unwrap();
    let p = b.combine(&[x], &[y]).unwrap();
    let out = run_one(
        &p,
        &[f32_tensor(&[5], &[1., 2., 3., 4., 5.])],
        &[("k", 2), ("s", 1)],
    );
    assert_values(&out, &[3, 2], &[2., 3., 3., 4., 4., 5.]);
}

#[test]
fn reindex_to_and_from_rank_0() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let picked = b.reindex(x, &[], &[], &["1"]).unwrap();
    let spread = b.reindex(picked, &["3"], &[], &[]).unwrap();
    let p = b.combine(&[x], &[picked, spread]).unwrap();
    let out = interp::run(&p, &[f32_tensor(&[2], &[5., 6.])], &params(&[])).unwrap();
    assert_values(&out[0], &[], &[6.]);
    assert_values(&out[1], &[3], &[6., 6., 6.]);
}

// ---------------------------------------------------------------- reindex_reduce

#[test]
fn reindex_reduce_add_sums_collisions_and_drops_out_of_range_targets() {
    // Targets i0 / 2 - 1 for i0 = 0..6 are -1, -1, 0, 0, 1, 1: the first two are dropped.
    let p = program_of(&["N"], |b, x| {
        b.reindex_reduce(x, &["2"], &[x], &["i0 / 2 - 1"], Accum::Add)
            .unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[6], &[1., 2., 3., 4., 5., 6.])], &[]);
    assert_values(&out, &[2], &[7., 11.]);
}

#[test]
fn reindex_reduce_add_drops_targets_past_the_end() {
    // Targets i0 - 1: -1 and 3 fall outside [0, 3).
    let p = program_of(&["N"], |b, x| {
        b.reindex_reduce(x, &["3"], &[x], &["i0 - 1"], Accum::Add)
            .unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[5], &[1., 2., 3., 4., 5.])], &[]);
    assert_values(&out, &[3], &[2., 3., 4.]);
}

#[test]
fn reindex_reduce_add_collapses_an_axis() {
    // out[i1] += x[i0, i1]: column sums.
    let p = program_of(&["M", "N"], |b, x| {
        b.reindex_reduce(x, &["dA1"], &[x], &["i1"], Accum::Add)
            .unwrap()
    });
    let out = run_one(
        &p,
        &[f32_tensor(&[2, 3], &[1., 2., 3., 10., 20., 30.])],
        &[],
    );
    assert_values(&out, &[3], &[11., 22., 33.]);
}

#[test]
fn reindex_reduce_max_keeps_the_largest_and_untouched_cells_stay_at_minus_infinity() {
    // Targets i0 % 2: cell 0 gets 3, 4, -5; cell 1 gets -1, 1, 9; cell 2 nothing.
    let p = program_of(&["N"], |b, x| {
        b.reindex_reduce(x, &["3"], &[x], &["i0 % 2"], Accum::Max)
            .unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[6], &[3., -1., 4., 1., -5., 9.])], &[]);
    assert_values(&out, &[3], &[4., 9., f64::NEG_INFINITY]);
}

#[test]
fn reindex_reduce_min_keeps_the_smallest_and_untouched_cells_stay_at_plus_infinity() {
    let p = program_of(&["N"], |b, x| {
        b.reindex_reduce(x, &["3"], &[x], &["i0 % 2"], Accum::Min)
            .unwrap()
    });
    let out = run_one(&p, &[f32_tensor(&[6], &[3., -1., 4., 1., -5., 9.])], &[]);
    assert_values(&out, &[3], &[-5., -1., f64::INFINITY]);
}

// ---------------------------------------------------------------- unary

/// Applies `op` to each input and compares with the hand-computed results.
#[track_caller]
fn check_unary(op: UnaryOp, cases: &[(f64, f64)]) {
    let p = program_of(&["N"], |b, x| b.unary(op, x).unwrap());
    let xs: Vec<f64> = cases.iter().map(|c| c.0).collect();
    let want: Vec<f64> = cases.iter().map(|c| c.1).collect();
    let out = run_one(&p, &[f32_tensor(&[xs.len()], &xs)], &[]);
    assert_values(&out, &[xs.len()], &want);
}

const NAN: f64 = f64::NAN;
const INF: f64 = f64::INFINITY;

#[test]
fn unary_neg_and_abs() {
    check_unary(UnaryOp::Neg, &[(1.5, -1.5), (-2.0, 2.0), (0.0, 0.0)]);
    check_unary(UnaryOp::Abs, &[(1.5, 1.5), (-2.0, 2.0), (0.0, 0.0)]);
}

#[test]
fn unary_exp_and_log() {
    check_unary(
        UnaryOp::Exp,
        &[(0.0, 1.0), (1.0, std::f64::consts::E), (-1.0, 0.367_879_44)],
    );
    check_unary(
        UnaryOp::Log,
        &[
            (1.0, 0.0),
            (0.0, -INF),
            (-1.0, NAN),
            (10.0, std::f64::consts::LN_10),
        ],
    );
}

#[test]
fn unary_sqrt_rsqrt_recip() {
    check_unary(UnaryOp::Sqrt, &[(4.0, 2.0), (0.0, 0.0), (-1.0, NAN)]);
    check_unary(UnaryOp::Rsqrt, &[(4.0, 0.5), (0.25, 2.0), (0.0, INF)]);
    check_unary(UnaryOp::Recip, &[(4.0, 0.25), (-0.5, -2.0), (0.0, INF)]);
}

#[test]
fn unary_tanh_and_sigmoid() {
    check_unary(
        UnaryOp::Tanh,
        &[(0.0, 0.0), (0.5, 0.462_117_16), (-0.5, -0.462_117_16)],
    );
    check_unary(
        UnaryOp::Sigmoid,
        &[
            (0.0, 0.5),
            (2.0, 0.880_797_08),
            (-2.0, 0.119_202_92),
            (-100.0, 0.0),
        ],
    );
}

#[test]
fn unary_sin_cos() {
    check_unary(UnaryOp::Sin, &[(0.0, 0.0), (1.0, 0.841_470_98)]);
    check_unary(UnaryOp::Cos, &[(0.0, 1.0), (1.0, 0.540_302_31)]);
}

#[test]
fn unary_erf() {
    check_unary(
        UnaryOp::Erf,
        &[
            (0.0, 0.0),
            (0.5, 0.520_499_88),
            (1.0, 0.842_700_79),
            (-1.0, -0.842_700_79),
        ],
    );
}

#[test]
fn unary_floor_and_ceil_round_negatives_away_from_and_towards_zero() {
    check_unary(
        UnaryOp::Floor,
        &[(1.5, 1.0), (-1.5, -2.0), (-2.0, -2.0), (-0.25, -1.0)],
    );
    check_unary(
        UnaryOp::Ceil,
        &[(1.2, 2.0), (-1.5, -1.0), (-2.0, -2.0), (-0.25, 0.0)],
    );
}

#[test]
fn unary_sign_of_zero_is_zero_and_nan_stays_nan() {
    check_unary(
        UnaryOp::Sign,
        &[
            (-3.0, -1.0),
            (0.0, 0.0),
            (-0.0, 0.0),
            (2.5, 1.0),
            (NAN, NAN),
        ],
    );
}

// ---------------------------------------------------------------- binary

/// `op(a, b)` on the fixed vectors a = [1, -2, 3, 0.5], b = [2, 2, -1, 0.5].
#[track_caller]
fn check_binary(op: BinaryOp, want: &[f64]) {
    let mut b = Builder::new(F32);
    let x = b.input("a", F32, &["N"]).unwrap();
    let y = b.input("b", F32, &["N"]).unwrap();
    let z = b.binary(op, x, y).unwrap();
    let p = b.combine(&[x, y], &[z]).unwrap();
    let out = run_one(
        &p,
        &[
            f32_tensor(&[4], &[1., -2., 3., 0.5]),
            f32_tensor(&[4], &[2., 2., -1., 0.5]),
        ],
        &[],
    );
    assert_values(&out, &[4], want);
}

#[test]
fn binary_arithmetic() {
    check_binary(BinaryOp::Add, &[3., 0., 2., 1.]);
    check_binary(BinaryOp::Sub, &[-1., -4., 4., 0.]);
    check_binary(BinaryOp::Mul, &[2., -4., -3., 0.25]);
    check_binary(BinaryOp::Div, &[0.5, -1., -3., 1.]);
    check_binary(
        BinaryOp::Pow,
        &[1., 4., 1.0 / 3.0, std::f64::consts::FRAC_1_SQRT_2],
    );
}

#[test]
fn binary_maximum_and_minimum() {
    check_binary(BinaryOp::Maximum, &[2., 2., 3., 0.5]);
    check_binary(BinaryOp::Minimum, &[1., -2., -1., 0.5]);
}

#[test]
fn binary_comparisons_give_one_or_zero() {
    check_binary(BinaryOp::Eq, &[0., 0., 0., 1.]);
    check_binary(BinaryOp::Ne, &[1., 1., 1., 0.]);
    check_binary(BinaryOp::Lt, &[1., 1., 0., 0.]);
    check_binary(BinaryOp::Le, &[1., 1., 0., 1.]);
    check_binary(BinaryOp::Gt, &[0., 0., 1., 0.]);
    check_binary(BinaryOp::Ge, &[0., 0., 1., 1.]);
}

#[test]
fn maximum_and_minimum_propagate_nan_from_either_side() {
    let mut b = Builder::new(F32);
    let x = b.input("a", F32, &["N"]).unwrap();
    let y = b.input("b", F32, &["N"]).unwrap();
    let hi = b.binary(BinaryOp::Maximum, x, y).unwrap();
    let lo = b.binary(BinaryOp::Minimum, x, y).unwrap();
    let p = b.combine(&[x, y], &[hi, lo]).unwrap();
    let out = interp::run(
        &p,
        &[
            f32_tensor(&[3], &[NAN, 1., 1.]),
            f32_tensor(&[3], &[1., NAN, 2.]),
        ],
        &params(&[]),
    )
    .unwrap();
    assert_values(&out[0], &[3], &[NAN, NAN, 2.]);
    assert_values(&out[1], &[3], &[NAN, NAN, 1.]);
}

#[test]
fn comparisons_with_nan_are_false_except_ne() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let eq = b.binary(BinaryOp::Eq, x, x).unwrap();
    let ne = b.binary(BinaryOp::Ne, x, x).unwrap();
    let lt = b.binary(BinaryOp::Lt, x, 0.0).unwrap();
    let p = b.combine(&[x], &[eq, ne, lt]).unwrap();
    let out = interp::run(&p, &[f32_tensor(&[2], &[NAN, -1.])], &params(&[])).unwrap();
    assert_values(&out[0], &[2], &[0., 1.]);
    assert_values(&out[1], &[2], &[1., 0.]);
    assert_values(&out[2], &[2], &[0., 1.]);
}

#[test]
fn pow_with_a_scalar_on_either_side() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let squared = b.binary(BinaryOp::Pow, x, 2.0).unwrap();
    let two_to = b.binary(BinaryOp::Pow, 2.0, x).unwrap();
    let p = b.combine(&[x], &[squared, two_to]).unwrap();
    let out = interp::run(&p, &[f32_tensor(&[3], &[-3., 0., 0.5])], &params(&[])).unwrap();
    assert_values(&out[0], &[3], &[9., 0., 0.25]);
    assert_values(&out[1], &[3], &[0.125, 1., std::f64::consts::SQRT_2]);
}

// ---------------------------------------------------------------- where

#[test]
fn where_picks_a_where_the_condition_is_nonzero() {
    let mut b = Builder::new(F32);
    let c = b.input("c", F32, &["N"]).unwrap();
    let x = b.input("x", F32, &["N"]).unwrap();
    let y = b.input("y", F32, &["N"]).unwrap();
    let both = b.where_(c, x, y).unwrap();
    let scalar_a = b.where_(c, 5.0, y).unwrap();
    let scalar_b = b.where_(c, x, Operand::Const(-5.0)).unwrap();
    let p = b.combine(&[c, x, y], &[both, scalar_a, scalar_b]).unwrap();
    let out = interp::run(
        &p,
        &[
            // NaN != 0, so NaN counts as true.
            f32_tensor(&[4], &[1., 0., -2., NAN]),
            f32_tensor(&[4], &[10., 11., 12., 13.]),
            f32_tensor(&[4], &[20., 21., 22., 23.]),
        ],
        &params(&[]),
    )
    .unwrap();
    assert_values(&out[0], &[4], &[10., 21., 12., 13.]);
    assert_values(&out[1], &[4], &[5., 21., 5., 5.]);
    assert_values(&out[2], &[4], &[10., -5., 12., 13.]);
}

// ---------------------------------------------------------------- reduce

/// Reduces `x = [[3, 1, 3], [0, 0, -1]]` over `axes` with `op`.
#[track_caller]
fn check_reduce_2x3(op: ReduceOp, axes: &[usize], shape: &[usize], want: &[f64]) {
    let p = program_of(&["M", "N"], |b, x| b.reduce(op, axes, x).unwrap());
    let out = run_one(&p, &[f32_tensor(&[2, 3], &[3., 1., 3., 0., 0., -1.])], &[]);
    assert_values(&out, shape, want);
}

#[test]
fn reduce_sum_over_one_axis_all_axes_and_no_axes() {
    check_reduce_2x3(ReduceOp::Sum, &[1], &[2, 1], &[7., -1.]);
    check_reduce_2x3(ReduceOp::Sum, &[0], &[1, 3], &[3., 1., 2.]);
    check_reduce_2x3(ReduceOp::Sum, &[0, 1], &[1, 1], &[6.]);
    check_reduce_2x3(ReduceOp::Sum, &[], &[2, 3], &[3., 1., 3., 0., 0., -1.]);
}

#[test]
fn reduce_prod_with_zeros() {
    check_reduce_2x3(ReduceOp::Prod, &[1], &[2, 1], &[9., 0.]);
    check_reduce_2x3(ReduceOp::Prod, &[0], &[1, 3], &[0., 0., -3.]);
    check_reduce_2x3(ReduceOp::Prod, &[1, 0], &[1, 1], &[0.]);
}

#[test]
fn reduce_max_min_mean() {
    check_reduce_2x3(ReduceOp::Max, &[1], &[2, 1], &[3., 0.]);
    check_reduce_2x3(ReduceOp::Min, &[1], &[2, 1], &[1., -1.]);
    check_reduce_2x3(ReduceOp::Max, &[0, 1], &[1, 1], &[3.]);
    check_reduce_2x3(ReduceOp::Min, &[0, 1], &[1, 1], &[-1.]);
    check_reduce_2x3(ReduceOp::Mean, &[1], &[2, 1], &[7. / 3., -1. / 3.]);
    check_reduce_2x3(ReduceOp::Mean, &[0], &[1, 3], &[1.5, 0.5, 1.]);
}

#[test]
fn argmax_and_argmin_break_ties_towards_the_first() {
    // Row 0 has its maximum 3 at positions 0 and 2; row 1 has 0 at positions 0 and 1.
    check_reduce_2x3(ReduceOp::Argmax, &[1], &[2, 1], &[0., 0.]);
    check_reduce_2x3(ReduceOp::Argmin, &[1], &[2, 1], &[1., 2.]);
    check_reduce_2x3(ReduceOp::Argmax, &[0], &[1, 3], &[0., 0., 0.]);
    check_reduce_2x3(ReduceOp::Argmin, &[0], &[1, 3], &[1., 1., 1.]);
}

#[test]
fn argmax_over_no_axes_is_zero_everywhere() {
    check_reduce_2x3(ReduceOp::Argmax, &[], &[2, 3], &[0.; 6]);
}

/// x[i0][i1][i2] with x[0] = [[1, 2, 3], [9, 0, 9]] and x[1] = [[4, 8, 1], [2, 8, 5]].
fn cube() -> Tensor {
    f32_tensor(
        &[2, 2, 3],
        &[1., 2., 3., 9., 0., 9., 4., 8., 1., 2., 8., 5.],
    )
}

#[track_caller]
fn check_reduce_cube(op: ReduceOp, axes: &[usize], shape: &[usize], want: &[f64]) {
    let p = program_of(&["A", "B", "C"], |b, x| b.reduce(op, axes, x).unwrap());
    let out = run_one(&p, &[cube()], &[]);
    assert_values(&out, shape, want);
}

#[test]
fn reduce_over_several_axes() {
    check_reduce_cube(ReduceOp::Sum, &[0, 2], &[1, 2, 1], &[19., 33.]);
    check_reduce_cube(ReduceOp::Max, &[1, 2], &[2, 1, 1], &[9., 8.]);
    check_reduce_cube(ReduceOp::Mean, &[0, 1, 2], &[1, 1, 1], &[52. / 12.]);
}

#[test]
fn argmax_over_several_axes_gives_the_row_major_position_within_them() {
    // i0 = 0: the first 9 is at (i1, i2) = (1, 0), position 1 * 3 + 0 = 3.
    // i0 = 1: the first 8 is at (0, 1), position 1.
    check_reduce_cube(ReduceOp::Argmax, &[1, 2], &[2, 1, 1], &[3., 1.]);
    // i1 = 0: over (i0, i2) the values are [1, 2, 3, 4, 8, 1]: 8 at position 1 * 3 + 1 = 4.
    // i1 = 1: [9, 0, 9, 2, 8, 5]: the first 9 at position 0.
    check_reduce_cube(ReduceOp::Argmax, &[0, 2], &[1, 2, 1], &[4., 0.]);
    // Axes given out of order mean the same axes.
    check_reduce_cube(ReduceOp::Argmax, &[2, 0], &[1, 2, 1], &[4., 0.]);
    // Over everything: the minimum 0 is at (0, 1, 1), position 0 * 6 + 1 * 3 + 1 = 4.
    check_reduce_cube(ReduceOp::Argmin, &[0, 1, 2], &[1, 1, 1], &[4.]);
}

// ---------------------------------------------------------------- select

#[test]
fn select_gathers_along_the_last_axis_and_out_of_range_reads_zero() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "N"]).unwrap();
    let idx = b.input("idx", DType::I32, &["M", "K"]).unwrap();
    let y = b.select(1, x, idx).unwrap();
    let p = b.combine(&[x, idx], &[y]).unwrap();
    let out = run_one(
        &p,
        &[
            f32_tensor(&[2, 3], &[10., 11., 12., 20., 21., 22.]),
            i32_tensor(&[2, 2], &[2., 0., -1., 3.]),
        ],
        &[],
    );
    assert_values(&out, &[2, 2], &[12., 10., 0., 0.]);
}

#[test]
fn select_gathers_along_the_first_axis() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "N"]).unwrap();
    let idx = b.input("idx", DType::I32, &["K", "N"]).unwrap();
    let y = b.select(0, x, idx).unwrap();
    let p = b.combine(&[x, idx], &[y]).unwrap();
    let out = run_one(
        &p,
        &[
            f32_tensor(&[2, 3], &[10., 11., 12., 20., 21., 22.]),
            i32_tensor(&[1, 3], &[1., 0., 2.]),
        ],
        &[],
    );
    assert_values(&out, &[1, 3], &[20., 11., 0.]);
}

// ---------------------------------------------------------------- iota

#[test]
fn iota_gives_the_index_along_its_axis() {
    let mut b = Builder::new(F32);
    let cols = b.iota(&["2", "3"], &[], 1).unwrap();
    let rows = b.iota(&["2", "3"], &[], 0).unwrap();
    let p = b.combine(&[], &[cols, rows]).unwrap();
    let out = interp::run(&p, &[], &params(&[])).unwrap();
    assert_values(&out[0], &[2, 3], &[0., 1., 2., 0., 1., 2.]);
    assert_values(&out[1], &[2, 3], &[0., 0., 0., 1., 1., 1.]);
}

#[test]
fn iota_shape_from_a_source_and_a_param_makes_a_one_hot_mask() {
    // one_hot[i0, i1] = (i1 == x[i0]) over $classes columns.
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    b.param("classes").unwrap();
    let col = b.iota(&["dA0", "$classes"], &[x], 1).unwrap();
    let wide = b.reindex(x, &["dA0", "$classes"], &[x], &["i0"]).unwrap();
    let hot = b.binary(BinaryOp::Eq, col, wide).unwrap();
    let p = b.combine(&[x], &[hot]).unwrap();
    let out = run_one(&p, &[f32_tensor(&[3], &[2., 0., 5.])], &[("classes", 3)]);
    assert_values(&out, &[3, 3], &[0., 0., 1., 1., 0., 0., 0., 0., 0.]);
}

// ---------------------------------------------------------------- cast

#[test]
fn cast_to_i32_truncates_toward_zero_saturates_and_sends_nan_to_0() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let i = b.cast(x, DType::I32).unwrap();
    let p = b.combine(&[x], &[i]).unwrap();
    assert_eq!(p.node(i).dtype, DType::I32);
    let xs = [2.7, -2.7, 0.5, -0.5, 3e9, -3e9, f64::INFINITY, f64::NAN];
    let out = run_one(&p, &[f32_tensor(&[8], &xs)], &[]);
    assert_eq!(out.dtype, DType::I32);
    let (lo, hi) = (f64::from(i32::MIN), f64::from(i32::MAX));
    assert_values(&out, &[8], &[2., -2., 0., 0., hi, lo, hi, 0.]);
}

#[test]
fn cast_from_i32_is_exact_in_f64_and_rounds_beyond_2_to_the_24_in_f32() {
    for (dtype, want) in [(F32, 16_777_216.), (DType::F64, 16_777_217.)] {
        let mut b = Builder::new(dtype);
        let k = b.input("k", DType::I32, &["N"]).unwrap();
        let f = b.cast(k, dtype).unwrap();
        let y = b.binary(BinaryOp::Add, f, 0.0).unwrap();
        let p = b.combine(&[k], &[y]).unwrap();
        let out = run_one(&p, &[i32_tensor(&[2], &[-7., 16_777_217.])], &[]);
        assert_eq!(out.data, [-7., want], "{dtype}");
        // The loop-IR interpreter and every pass agree.
        let case = uop_codegen::testing::Case {
            inputs: vec![i32_tensor(&[2], &[-7., 16_777_217.])],
            params: params(&[]),
        };
        let opts = uop_codegen::testing::CheckOptions::default();
        uop_codegen::testing::check_program(&p, &case, &opts).expect("the lowerings agree");
    }
}

#[test]
fn cast_to_its_own_type_is_the_value_and_other_types_are_errors() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    assert_eq!(b.cast(x, F32).unwrap(), x);
    let err = b.cast(x, DType::F64).unwrap_err();
    assert!(matches!(err, UopError::DType { .. }), "{err}");
    assert!(err.to_string().contains("i32 or f32"), "{err}");
}

// ---------------------------------------------------------------- rank 0 and f64

#[test]
fn rank_0_tensors_flow_through_elementwise_ops_and_reductions() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &[]).unwrap();
    let y = b.input("y", F32, &[]).unwrap();
    let sum = b.binary(BinaryOp::Add, x, y).unwrap();
    let neg = b.unary(UnaryOp::Neg, sum).unwrap();
    let kept = b.reduce(ReduceOp::Sum, &[], neg).unwrap();
    let arg = b.reduce(ReduceOp::Argmax, &[], neg).unwrap();
    let p = b.combine(&[x, y], &[kept, arg]).unwrap();
    let out = interp::run(
        &p,
        &[f32_tensor(&[], &[1.5]), f32_tensor(&[], &[2.0])],
        &params(&[]),
    )
    .unwrap();
    assert_values(&out[0], &[], &[-3.5]);
    assert_values(&out[1], &[], &[0.]);
}

#[test]
fn f64_programs_keep_double_precision_and_f32_programs_round() {
    let build = |dtype: DType| {
        let mut b = Builder::new(dtype);
        let x = b.input("x", dtype, &["N"]).unwrap();
        let y = b.binary(BinaryOp::Add, x, 0.2).unwrap();
        b.combine(&[x], &[y]).unwrap()
    };
    let wide = build(DType::F64);
    let x64 = Tensor::new(DType::F64, vec![1], vec![0.1]).unwrap();
    let out = run_one(&wide, &[x64], &[]);
    assert_eq!(out.dtype, DType::F64);
    assert_eq!(out.data, vec![0.1 + 0.2]);

    let narrow = build(F32);
    let out = run_one(&narrow, &[f32_tensor(&[1], &[0.1])], &[]);
    assert_eq!(out.dtype, F32);
    assert_eq!(out.data, vec![(0.1f32 + 0.2f32) as f64]);
}

// ---------------------------------------------------------------- run-time errors

/// `out = a + b` over a shared dim `N`, plus a fixed-size input `c: [3]`.
fn two_inputs_sharing_n() -> Program {
    let mut b = Builder::new(F32);
    let a = b.input("a", F32, &["N", "2"]).unwrap();
    let c = b.input("c", F32, &["N", "2"]).unwrap();
    let y = b.binary(BinaryOp::Add, a, c).unwrap();
    b.combine(&[a, c], &[y]).unwrap()
}

#[test]
fn a_wrong_number_of_inputs_is_reported() {
    let p = two_inputs_sharing_n();
    let err = interp::run(&p, &[Tensor::zeros(F32, vec![1, 2])], &params(&[])).unwrap_err();
    assert_eq!(
        err,
        RunError::Bind(BindError::InputCount {
            expected: 2,
            found: 1
        })
    );
    assert_eq!(err.to_string(), "the program takes 2 inputs, 1 were given");
}

#[test]
fn a_wrong_rank_names_the_input_and_both_shapes() {
    let p = two_inputs_sharing_n();
    let err = interp::run(
        &p,
        &[Tensor::zeros(F32, vec![1, 2]), Tensor::zeros(F32, vec![2])],
        &params(&[]),
    )
    .unwrap_err();
    assert!(matches!(err, RunError::Bind(BindError::Input { ref input, .. }) if input == "c"));
    let msg = err.to_string();
    assert!(msg.contains("input `c`"), "{msg}");
    assert!(msg.contains("expected rank 2"), "{msg}");
    assert!(msg.contains("[N, 2]"), "{msg}");
}

#[test]
fn a_fixed_dim_mismatch_names_the_input() {
    let p = two_inputs_sharing_n();
    let err = interp::run(
        &p,
        &[
            Tensor::zeros(F32, vec![1, 3]),
            Tensor::zeros(F32, vec![1, 2]),
        ],
        &params(&[]),
    )
    .unwrap_err();
    assert!(matches!(err, RunError::Bind(BindError::Input { ref input, .. }) if input == "a"));
    let msg = err.to_string();
    assert!(msg.contains("expected shape [N, 2]"), "{msg}");
    assert!(msg.contains("[1, 3]"), "{msg}");
}

#[test]
fn a_shared_dim_with_different_sizes_names_both_inputs() {
    let p = two_inputs_sharing_n();
    let err = interp::run(
        &p,
        &[
            Tensor::zeros(F32, vec![4, 2]),
            Tensor::zeros(F32, vec![5, 2]),
        ],
        &params(&[]),
    )
    .unwrap_err();
    assert_eq!(
        err,
        RunError::Bind(BindError::DimConflict {
            name: "N".into(),
            first_input: "a".into(),
            first: 4,
            second_input: "c".into(),
            second: 5,
        })
    );
    assert_eq!(
        err.to_string(),
        "dimension `N` is 4 in input `a` but 5 in input `c`"
    );
}

#[test]
fn a_failing_size_assertion_is_reported_with_both_values() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let y = b.input("y", F32, &["M"]).unwrap();
    let xy = b.reindex(x, &["dA0[=dB0]"], &[x, y], &["i0"]).unwrap();
    let sum = b.binary(BinaryOp::Add, xy, 0.0).unwrap();
    let p = b.combine(&[x, y], &[sum]).unwrap();
    assert_eq!(p.assertions.len(), 1);
    let ok = interp::run(
        &p,
        &[Tensor::zeros(F32, vec![3]), Tensor::zeros(F32, vec![3])],
        &params(&[]),
    );
    assert!(ok.is_ok());
    let err = interp::run(
        &p,
        &[Tensor::zeros(F32, vec![3]), Tensor::zeros(F32, vec![4])],
        &params(&[]),
    )
    .unwrap_err();
    assert!(matches!(err, RunError::Bind(BindError::Assertion { .. })));
    assert_eq!(err.to_string(), "size assertion `N == M` fails: 3 != 4");
}

#[test]
fn a_missing_param_is_named() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    b.param("k").unwrap();
    let y = b.reindex(x, &["$k"], &[], &["i0"]).unwrap();
    let p = b.combine(&[x], &[y]).unwrap();
    let err = interp::run(&p, &[Tensor::zeros(F32, vec![2])], &params(&[])).unwrap_err();
    assert_eq!(err, RunError::Bind(BindError::MissingParam("k".into())));
    assert!(err.to_string().contains("`$k`"), "{err}");
}

#[test]
fn an_input_of_the_wrong_dtype_is_named() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let idx = b.input("idx", DType::I32, &["N"]).unwrap();
    let y = b.select(0, x, idx).unwrap();
    let p = b.combine(&[x, idx], &[y]).unwrap();

    let err = interp::run(
        &p,
        &[
            Tensor::zeros(DType::F64, vec![2]),
            Tensor::zeros(DType::I32, vec![2]),
        ],
        &params(&[]),
    )
    .unwrap_err();
    assert_eq!(
        err,
        RunError::InputType {
            input: "x".into(),
            expected: F32,
            found: DType::F64
        }
    );
    assert_eq!(err.to_string(), "input `x` must be f32, got f64");

    let err = interp::run(
        &p,
        &[Tensor::zeros(F32, vec![2]), Tensor::zeros(F32, vec![2])],
        &params(&[]),
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "input `idx` must be i32, got f32");
}

#[test]
fn a_negative_size_is_an_error_not_a_panic() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let y = b.reindex(x, &["dA0 - 3"], &[x], &["i0"]).unwrap();
    let p = b.combine(&[x], &[y]).unwrap();
    let err = interp::run(&p, &[Tensor::zeros(F32, vec![2])], &params(&[])).unwrap_err();
    assert!(matches!(err, RunError::Bind(BindError::Size { .. })));
    assert!(err.to_string().contains("negative size"), "{err}");
}

#[test]
fn an_index_division_by_zero_is_an_error_not_a_panic() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    b.param("d").unwrap();
    let y = b.reindex(x, &["dA0"], &[x], &["i0 / $d"]).unwrap();
    let p = b.combine(&[x], &[y]).unwrap();
    let err = interp::run(&p, &[Tensor::zeros(F32, vec![2])], &params(&[("d", 0)])).unwrap_err();
    assert!(matches!(err, RunError::Eval { .. }));
    assert!(err.to_string().contains("division by zero"), "{err}");
}

// ---------------------------------------------------------------- builder errors

#[test]
fn a_shape_mismatch_names_both_shapes() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "K"]).unwrap();
    let y = b.input("y", F32, &["K", "M"]).unwrap();
    let err = b.binary(BinaryOp::Add, x, y).unwrap_err();
    assert!(matches!(err, UopError::ShapeMismatch { .. }));
    let msg = err.to_string();
    assert!(msg.contains("`x` [M, K]"), "{msg}");
    assert!(msg.contains("`y` [K, M]"), "{msg}");
}

#[test]
fn select_requires_the_index_to_match_x_off_the_gathered_axis() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "N"]).unwrap();
    let idx = b.input("idx", DType::I32, &["K", "K"]).unwrap();
    let err = b.select(1, x, idx).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("[M, N]") && msg.contains("[K, K]"), "{msg}");
}

#[test]
fn bad_axes_are_rejected() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "N"]).unwrap();
    assert_eq!(
        b.reduce(ReduceOp::Sum, &[2], x).unwrap_err(),
        UopError::BadAxis {
            op: "reduce_sum".into(),
            axis: 2,
            rank: 2
        }
    );
    let repeated = b.reduce(ReduceOp::Max, &[1, 1], x).unwrap_err();
    assert_eq!(
        repeated,
        UopError::RepeatedAxis {
            op: "reduce_max".into(),
            axis: 1
        }
    );
    assert_eq!(
        repeated.to_string(),
        "reduce_max: axis 1 is listed more than once"
    );
    let idx = b.input("idx", DType::I32, &["M", "N"]).unwrap();
    assert!(matches!(
        b.select(2, x, idx).unwrap_err(),
        UopError::BadAxis { axis: 2, .. }
    ));
    let err = b.iota(&["3"], &[], 1).unwrap_err();
    assert_eq!(
        err.to_string(),
        "iota: axis 1 is not valid for a tensor of rank 1"
    );
}

#[test]
fn an_index_list_of_the_wrong_length_is_rejected() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "N"]).unwrap();
    let err = b.reindex(x, &["dA0"], &[x], &["i0"]).unwrap_err();
    assert_eq!(
        err,
        UopError::RankMismatch {
            op: "reindex".into(),
            what: "the index list".into(),
            expected: 2,
            found: 1
        }
    );
    // For a scatter the index has one entry per *output* axis.
    let err = b
        .reindex_reduce(x, &["dA0"], &[x], &["i0", "i1"], Accum::Add)
        .unwrap_err();
    assert!(matches!(
        err,
        UopError::RankMismatch {
            expected: 1,
            found: 2,
            ..
        }
    ));
}

#[test]
fn an_unknown_dim_name_is_rejected() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let err = b.reindex(x, &["Q"], &[], &["i0"]).unwrap_err();
    assert!(matches!(err, UopError::BadExpr { .. }));
    assert!(err.to_string().contains("`Q` is not a dimension"), "{err}");
}

#[test]
fn a_dim_reference_beyond_the_sources_is_rejected() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let err = b.reindex(x, &["dB0"], &[x], &["i0"]).unwrap_err();
    assert!(err.to_string().contains("`dB0`"), "{err}");
    let err = b.reindex(x, &["dA1"], &[x], &["i0"]).unwrap_err();
    assert!(err.to_string().contains("rank 1"), "{err}");
}

#[test]
fn an_undeclared_param_is_rejected_in_expressions_and_operands() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let err = b.reindex(x, &["dA0"], &[x], &["i0 + $k"]).unwrap_err();
    assert!(
        err.to_string().contains("parameter `$k` is not declared"),
        "{err}"
    );
    let err = b
        .binary(BinaryOp::Add, x, Operand::Param("k".into()))
        .unwrap_err();
    assert!(
        err.to_string().contains("parameter `$k` is not declared"),
        "{err}"
    );
}

#[test]
fn an_index_beyond_the_rank_of_the_iteration_space_is_rejected() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["M", "N"]).unwrap();
    let err = b
        .reindex(x, &["dA0", "dA1"], &[x], &["i0", "i3"])
        .unwrap_err();
    assert!(err.to_string().contains("`i3` is out of range"), "{err}");
    assert!(err.to_string().contains("rank 2"), "{err}");
    // For a scatter the index runs over x, which has rank 2.
    let err = b
        .reindex_reduce(x, &["3"], &[], &["i2"], Accum::Add)
        .unwrap_err();
    assert!(err.to_string().contains("`i2` is out of range"), "{err}");
    // A size can never depend on an index.
    let err = b.reindex(x, &["i0", "2"], &[], &["i0", "i1"]).unwrap_err();
    assert!(
        err.to_string().contains("cannot depend on the index"),
        "{err}"
    );
}

#[test]
fn a_syntax_error_points_at_the_problem() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let err = b.reindex(x, &["dA0"], &[x], &["i0 +"]).unwrap_err();
    assert!(matches!(err, UopError::Syntax { .. }));
}

#[test]
fn combine_rejects_an_output_that_needs_an_undeclared_input() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let y = b.input("y", F32, &["N"]).unwrap();
    let z = b.binary(BinaryOp::Mul, x, y).unwrap();
    let err = b.combine(&[x], &[z]).unwrap_err();
    assert!(matches!(err, UopError::Combine(_)));
    assert!(err.to_string().contains("input `y`"), "{err}");
}

#[test]
fn combine_keeps_unused_inputs_and_reports_them() {
    let mut b = Builder::new(F32);
    let x = b.input("x", F32, &["N"]).unwrap();
    let unused = b.input("unused", F32, &["M"]).unwrap();
    let z = b.unary(UnaryOp::Exp, x).unwrap();
    let p = b.combine(&[x, unused], &[z]).unwrap();
    assert_eq!(p.inputs.len(), 2);
    let reported: Vec<&str> = p
        .unused_inputs()
        .iter()
        .map(|id| p.node(*id).name.as_str())
        .collect();
    assert_eq!(reported, vec!["unused"]);
    // The program still takes (and ignores) the unused input.
    let out = interp::run(
        &p,
        &[f32_tensor(&[1], &[0.]), f32_tensor(&[2], &[1., 2.])],
        &params(&[]),
    )
    .unwrap();
    assert_values(&out[0], &[1], &[1.]);
}
