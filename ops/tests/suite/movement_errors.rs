//! How the movement and indexing ops reject bad attributes and shapes, through the
//! Rust API and in `.uop` text; where sizes are symbolic, which checks become size
//! assertions; and how the text layer accepts parameters positionally or by name.

use std::collections::HashMap;

use uop_codegen::index::Expr;
use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{parse_program, print_program};
use uop_codegen::uop::{Builder, DType, NodeId};
use uop_ops::OpError;
use uop_ops::indexing::{cumsum, gather, index_select, one_hot, tril, triu};
use uop_ops::movement::{
    PadMode, concat, expand, flip, pad, pad_mode, permute, reshape, slice, transpose,
};

fn builder() -> Builder {
    Builder::new(DType::F32)
}

fn input(b: &mut Builder, name: &str, dims: &[&str]) -> NodeId {
    b.input(name, DType::F32, dims).expect("valid input")
}

fn sizes(values: &[i64]) -> Vec<Expr> {
    values.iter().map(|&v| Expr::Int(v)).collect()
}

/// The message of a `.uop` program that must fail to build.
fn text_error(src: &str) -> String {
    match parse_program(src, &uop_ops::registry()) {
        Ok(p) => panic!("expected an error, got\n{}", print_program(&p)),
        Err(e) => e.message().to_string(),
    }
}

/// The printed program of `src`.
fn printed(src: &str) -> String {
    let p = parse_program(src, &uop_ops::registry()).unwrap_or_else(|e| panic!("{e}"));
    print_program(&p)
}

fn assert_contains(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "`{part}` missing from the message: {message}"
        );
    }
}

/// An `Attr` error of `op` about `attr` with the offending `value`.
fn assert_attr(e: OpError, op: &str, attr: &str, value: &str) {
    match &e {
        OpError::Attr {
            op: o,
            attr: a,
            value: v,
            ..
        } => assert_eq!((*o, *a, v.as_str()), (op, attr, value), "{e}"),
        other => panic!("expected an attribute error, got {other:?}"),
    }
}

// --- reshape ---------------------------------------------------------------

#[test]
fn reshape_allows_one_inferred_size() {
    let mut b = builder();
    let x = input(&mut b, "x", &["2", "6"]);
    let e = reshape(&mut b, x, &sizes(&[-1, 3, -1])).unwrap_err();
    assert_attr(e.clone(), "reshape", "shape", "[-1, 3, -1]");
    assert!(e.to_string().contains("only one size may be -1"), "{e}");

    let m = text_error("input x: f32[2, 6]\ny = reshape(x, [-1, 3, -1])\noutput y\n");
    assert_contains(
        &m,
        &["reshape", "shape=[-1, 3, -1]", "only one size may be -1"],
    );
}

#[test]
fn reshape_rejects_an_incompatible_element_count() {
    let mut b = builder();
    let x = input(&mut b, "x", &["2", "3"]);
    let e = reshape(&mut b, x, &sizes(&[4, 2])).unwrap_err();
    assert_attr(e.clone(), "reshape", "shape", "[4, 2]");
    assert_contains(&e.to_string(), &["has 8 elements", "[2, 3] has 6"]);
    // An inferred size must divide the count exactly.
    let e = reshape(&mut b, x, &sizes(&[4, -1])).unwrap_err();
    assert_attr(e, "reshape", "shape", "[4, -1]");

    let m = text_error("input x: f32[2, 3]\ny = reshape(x, shape=[5])\noutput y\n");
    assert_contains(&m, &["reshape", "shape=[5]", "has 5 elements"]);
}

#[test]
fn reshape_rejects_negative_sizes_and_an_ambiguous_inferred_size() {
    let mut b = builder();
    let x = input(&mut b, "x", &["0", "3"]);
    let e = reshape(&mut b, x, &sizes(&[-2, 0])).unwrap_err();
    assert_attr(e, "reshape", "shape", "[-2, 0]");
    let e = reshape(&mut b, x, &sizes(&[0, -1])).unwrap_err();
    assert!(e.to_string().contains("ambiguous"), "{e}");
}

#[test]
fn reshape_over_symbolic_sizes_records_a_size_assertion() {
    let src = "input x: f32[N]\ninput w: f32[M]\ny = reshape(x, [M, 3])\noutput y\n";
    let p = parse_program(src, &uop_ops::registry()).expect("builds");
    assert_eq!(p.assertions.len(), 1, "{:?}", p.assertions);
    // Factors common to both sides cancel: no assertion, no division.
    assert_eq!(
        printed("input x: f32[B, N, 4]\ny = reshape(x, [B, -1])\noutput y\n"),
        "input x: f32[B, N, 4]\ny = reindex(x, [B, 4 * N], [i0, i1 / 4, i1 % 4])\noutput y\n"
    );
}

#[test]
fn an_inferred_size_that_does_not_divide_fails_when_bound() {
    let src = "input x: f32[N, 3]\ny = reshape(x, [2, -1])\noutput y\n";
    let p = parse_program(src, &uop_ops::registry()).expect("builds");
    assert_eq!(p.assertions.len(), 1, "{:?}", p.assertions);
    let run = |n: usize| {
        let x = Tensor::new(DType::F32, vec![n, 3], vec![0.0; 3 * n]).expect("tensor");
        interp::run(&p, &[x], &HashMap::new())
    };
    assert_eq!(run(4).expect("12 elements split in two").len(), 1);
    assert!(run(3).is_err(), "9 elements cannot be split in two");
}

#[test]
fn shape_sizes_must_name_input_dimensions() {
    let m = text_error("input x: f32[3, 4]\ny = reshape(x, [Q, 3])\noutput y\n");
    assert_contains(
        &m,
        &[
            "reshape",
            "shape=[Q, 3]",
            "`Q` is not a dimension of any input",
        ],
    );
    let m = text_error("input x: f32[3, 1]\ny = expand(x, [3, i0])\noutput y\n");
    assert_contains(
        &m,
        &["expand", "shape=[3, i0]", "`i0` cannot be used in a size"],
    );
}

#[test]
fn reshape_to_and_from_rank_0() {
    assert_eq!(
        printed("input x: f32[1, 1]\ny = reshape(x, [])\noutput y\n"),
        "input x: f32[1, 1]\ny = reindex(x, [], [0, 0])\noutput y\n"
    );
    assert_eq!(
        printed("input x: f32[]\ny = reshape(x, -1)\noutput y\n"),
        "input x: f32[]\ny = reindex(x, [1], [])\noutput y\n"
    );
}

// --- permute, transpose, flip ----------------------------------------------

#[test]
fn permute_rejects_repeated_and_missing_dims() {
    let mut b = builder();
    let x = input(&mut b, "x", &["2", "3", "4"]);
    let e = permute(&mut b, x, &[0, -3, 1]).unwrap_err();
    assert_attr(e.clone(), "permute", "dims", "[0, -3, 1]");
    assert!(e.to_string().contains("repeated"), "{e}");
    let e = permute(&mut b, x, &[1, 0]).unwrap_err();
    assert_attr(e, "permute", "dims", "[1, 0]");
    let e = permute(&mut b, x, &[0, 1, 3]).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");

    let m = text_error("input x: f32[2, 3]\ny = permute(x, dims=[1, 1])\noutput y\n");
    assert_contains(&m, &["permute", "dims=[1, 1]", "repeated"]);
}

#[test]
fn transpose_and_flip_reject_axes_out_of_range() {
    let mut b = builder();
    let x = input(&mut b, "x", &["2", "3"]);
    assert_attr(
        transpose(&mut b, x, 0, 2).unwrap_err(),
        "transpose",
        "dim1",
        "2",
    );
    assert_attr(
        transpose(&mut b, x, -3, 0).unwrap_err(),
        "transpose",
        "dim0",
        "-3",
    );
    assert_attr(flip(&mut b, x, &[0, 5]).unwrap_err(), "flip", "axis", "5");
    assert_attr(
        flip(&mut b, x, &[1, -1]).unwrap_err(),
        "flip",
        "axis",
        "[1, -1]",
    );

    let m = text_error("input x: f32[2, 3]\ny = transpose(x, 0, 4)\noutput y\n");
    assert_contains(
        &m,
        &["transpose", "dim1=4", "out of range for a tensor of rank 2"],
    );
}

// --- expand ----------------------------------------------------------------

#[test]
fn expand_changes_only_size_1_axes() {
    let mut b = builder();
    let x = input(&mut b, "x", &["3", "1"]);
    let e = expand(&mut b, x, &sizes(&[4, 5])).unwrap_err();
    assert_attr(e.clone(), "expand", "shape", "[4, 5]");
    assert!(
        e.to_string()
            .contains("cannot expand axis 0 of size 3 to 4"),
        "{e}"
    );
    let e = expand(&mut b, x, &sizes(&[5])).unwrap_err();
    assert!(e.to_string().contains("fewer axes"), "{e}");
    let e = expand(&mut b, x, &sizes(&[-1, 3, 2])).unwrap_err();
    assert!(e.to_string().contains("new leading axis 0"), "{e}");

    let m = text_error("input x: f32[3, 1]\ny = expand(x, [2, 2])\noutput y\n");
    assert_contains(
        &m,
        &[
            "expand",
            "shape=[2, 2]",
            "cannot expand axis 0 of size 3 to 2",
        ],
    );
}

#[test]
fn expand_of_a_symbolic_size_records_an_assertion() {
    let src = "input x: f32[N, 1]\ninput w: f32[M]\ny = expand(x, [M, 4])\noutput y\n";
    let p = parse_program(src, &uop_ops::registry()).expect("builds");
    assert_eq!(p.assertions.len(), 1, "{:?}", p.assertions);
}

// --- pad -------------------------------------------------------------------

#[test]
fn pad_needs_pairs_for_existing_axes() {
    let mut b = builder();
    let x = input(&mut b, "x", &["3", "4"]);
    let e = pad(&mut b, x, &[1, 2, 3], 0.0).unwrap_err();
    assert_attr(e.clone(), "pad", "pads", "[1, 2, 3]");
    assert!(e.to_string().contains("even length up to 4"), "{e}");
    let e = pad(&mut b, x, &[1, 1, 1, 1, 1, 1], 0.0).unwrap_err();
    assert_attr(e, "pad", "pads", "[1, 1, 1, 1, 1, 1]");
    let e = pad(&mut b, x, &[-3, -2], 0.0).unwrap_err();
    assert!(e.to_string().contains("negative size (-1)"), "{e}");

    let m = text_error("input x: f32[3, 4]\ny = pad(x, [1])\noutput y\n");
    assert_contains(&m, &["pad", "pads=[1]", "even length"]);
}

#[test]
fn pad_modes_other_than_constant_take_no_value_and_no_crop() {
    let mut b = builder();
    let x = input(&mut b, "x", &["3", "4"]);
    let e = pad_mode(&mut b, x, &[-1, 1], PadMode::Reflect, 0.0).unwrap_err();
    assert_attr(e, "pad", "pads", "[-1, 1]");
    let e = pad_mode(&mut b, x, &[1, 1], PadMode::Circular, 2.0).unwrap_err();
    assert_attr(e, "pad", "value", "2");

    let m = text_error("input x: f32[3]\ny = pad(x, [1, 1], mode=\"mirror\")\noutput y\n");
    assert_contains(&m, &["pad", "mode=\"mirror\"", "\"reflect\""]);
}

// --- slice -----------------------------------------------------------------

#[test]
fn slice_needs_a_positive_step_and_an_axis_in_range() {
    let mut b = builder();
    let x = input(&mut b, "x", &["5"]);
    assert_attr(
        slice(&mut b, x, 0, 0, None, 0).unwrap_err(),
        "slice",
        "step",
        "0",
    );
    assert_attr(
        slice(&mut b, x, 0, 4, Some(0), -1).unwrap_err(),
        "slice",
        "step",
        "-1",
    );
    assert_attr(
        slice(&mut b, x, 1, 0, None, 1).unwrap_err(),
        "slice",
        "axis",
        "1",
    );

    let m = text_error("input x: f32[5]\ny = slice(x, 0, 0, 5, 0)\noutput y\n");
    assert_contains(&m, &["slice", "step=0", "must be at least 1"]);
    let m = text_error("input x: f32[5]\ny = slice(x, axis=-2)\noutput y\n");
    assert_contains(&m, &["slice", "axis=-2", "out of range"]);
}

#[test]
fn slice_of_a_symbolic_size_clamps_with_min_and_max() {
    assert_eq!(
        printed("input x: f32[N]\ny = slice(x, 0, 1, -1)\noutput y\n"),
        "input x: f32[N]\ny = reindex(x, [max(max(N - 1, 0) - min(N, 1), 0)], [i0 + min(N, 1)])\noutput y\n"
    );
}

// --- concat ----------------------------------------------------------------

#[test]
fn concat_needs_matching_shapes_off_the_axis() {
    let mut b = builder();
    let x = input(&mut b, "x", &["2", "3"]);
    let y = input(&mut b, "y", &["4", "5"]);
    let e = concat(&mut b, &[x, y], 0).unwrap_err();
    assert_contains(
        &e.to_string(),
        &[
            "concat",
            "tensor 2 has shape [4, 5]",
            "[2, 3]",
            "differ on axis 1",
        ],
    );
    let z = input(&mut b, "z", &["2"]);
    let e = concat(&mut b, &[x, z], 0).unwrap_err();
    assert!(e.to_string().contains("ranks differ"), "{e}");
    assert_attr(
        concat(&mut b, &[x, x], 2).unwrap_err(),
        "concat",
        "axis",
        "2",
    );
    assert!(concat(&mut b, &[], 0).is_err());

    let m =
        text_error("input x: f32[2, 3]\ninput y: f32[2, 4]\nz = concat(x, y, axis=0)\noutput z\n");
    assert_contains(&m, &["concat", "differ on axis 1"]);
}

#[test]
fn concat_of_symbolic_sizes_records_an_assertion() {
    let src = "input x: f32[B, N]\ninput y: f32[C, M]\nz = concat(x, y, axis=1)\noutput z\n";
    let p = parse_program(src, &uop_ops::registry()).expect("builds");
    assert_eq!(p.assertions.len(), 1, "{:?}", p.assertions);
}

// --- indexing ops ----------------------------------------------------------

fn index_input(b: &mut Builder, dims: &[&str]) -> NodeId {
    b.input("index", DType::I32, dims).expect("valid input")
}

#[test]
fn gather_needs_an_i32_index_of_the_same_rank() {
    let mut b = builder();
    let x = input(&mut b, "x", &["3", "4"]);
    let i = index_input(&mut b, &["3"]);
    let e = gather(&mut b, x, i, 1).unwrap_err();
    assert_contains(&e.to_string(), &["gather", "rank 1", "rank 2"]);
    let wide = index_input_named(&mut b, "wide", &["3", "5"]);
    let e = gather(&mut b, x, wide, 0).unwrap_err();
    assert_contains(
        &e.to_string(),
        &["axis 1 of the index (5) is larger than x's (4)"],
    );
    let e = gather(&mut b, x, x, 1).unwrap_err();
    assert_contains(&e.to_string(), &["i32", "found f32"]);
    let ok = index_input_named(&mut b, "ok", &["3", "4"]);
    assert_attr(
        gather(&mut b, x, ok, -3).unwrap_err(),
        "gather",
        "axis",
        "-3",
    );

    let m =
        text_error("input x: f32[3, 4]\ninput index: i32[3]\ny = gather(x, index, 0)\noutput y\n");
    assert_contains(&m, &["gather", "the ranks must be equal"]);
}

fn index_input_named(b: &mut Builder, name: &str, dims: &[&str]) -> NodeId {
    b.input(name, DType::I32, dims).expect("valid input")
}

#[test]
fn index_select_needs_a_1d_index() {
    let mut b = builder();
    let x = input(&mut b, "x", &["3", "4"]);
    let i = index_input(&mut b, &["2", "2"]);
    let e = index_select(&mut b, x, i, 0).unwrap_err();
    assert_contains(&e.to_string(), &["index_select", "must be 1-D", "[2, 2]"]);
    let m = text_error(
        "input x: f32[3, 4]\ninput index: i32[2]\ny = index_select(x, index, axis=2)\noutput y\n",
    );
    assert_contains(&m, &["index_select", "axis=2", "out of range"]);
}

#[test]
fn cumsum_needs_an_axis_in_range() {
    let mut b = builder();
    let x = input(&mut b, "x", &["3"]);
    assert_attr(cumsum(&mut b, x, 1).unwrap_err(), "cumsum", "axis", "1");
    let m = text_error("input x: f32[3]\ny = cumsum(x)\noutput y\n");
    assert_contains(&m, &["cumsum", "attribute `axis` is required"]);
}

#[test]
fn one_hot_needs_a_positive_class_count_and_an_i32_index() {
    let mut b = builder();
    let i = index_input(&mut b, &["4"]);
    assert_attr(
        one_hot(&mut b, i, 0).unwrap_err(),
        "one_hot",
        "num_classes",
        "0",
    );
    assert_attr(
        one_hot(&mut b, i, -1).unwrap_err(),
        "one_hot",
        "num_classes",
        "-1",
    );
    let x = input(&mut b, "x", &["4"]);
    assert!(
        one_hot(&mut b, x, 3)
            .unwrap_err()
            .to_string()
            .contains("i32")
    );

    let m = text_error("input i: i32[4]\ny = one_hot(i, num_classes=0)\noutput y\n");
    assert_contains(&m, &["one_hot", "num_classes=0", "at least 1"]);
}

#[test]
fn tril_and_triu_need_a_matrix() {
    let mut b = builder();
    let x = input(&mut b, "x", &["4"]);
    assert_contains(
        &tril(&mut b, x, 0).unwrap_err().to_string(),
        &["tril", "[4]", "at least 2 axes"],
    );
    assert!(triu(&mut b, x, 1).unwrap_err().to_string().contains("triu"));
}

// --- positional or named parameters ------------------------------------------

#[test]
fn parameters_may_be_positional_or_named_but_not_both() {
    let positional = printed("input x: f32[6, 4]\ny = slice(x, 0, 1, 5, 2)\noutput y\n");
    let named =
        printed("input x: f32[6, 4]\ny = slice(x, axis=0, start=1, end=5, step=2)\noutput y\n");
    assert_eq!(positional, named);
    assert_eq!(
        printed("input x: f32[2, 3]\ny = reshape(x, [3, 2])\noutput y\n"),
        printed("input x: f32[2, 3]\ny = reshape(x, shape=[3, 2])\noutput y\n"),
    );

    let m = text_error("input x: f32[2, 3]\ny = flip(x, 0, axis=1)\noutput y\n");
    assert_contains(
        &m,
        &[
            "flip",
            "`axis` is given both as argument 2 and as an attribute",
        ],
    );
    let m = text_error("input x: f32[2, 3]\ny = reshape(x, 1.5)\noutput y\n");
    assert_contains(
        &m,
        &["argument 2 must be a [list] of sizes, found the number 1.5"],
    );
    let m = text_error("input x: f32[2, 3]\ny = permute(x)\noutput y\n");
    assert_contains(
        &m,
        &["attribute `dims` is required", "usage: permute(x, dims)"],
    );
}
