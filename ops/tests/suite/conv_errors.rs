//! Bad attributes and shapes of the linalg, conv and pool ops: each is rejected
//! when the op is built, with an error naming the op, the attribute and the
//! value — through the Rust API and through `.uop` text. Where sizes are
//! symbolic the same rules become size assertions, checked when the program runs.

use std::collections::HashMap;

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{check_round_trip, parse_program};
use uop_codegen::uop::{Builder, DType, NodeId};
use uop_ops::OpError;
use uop_ops::conv::{ConvOptions, ConvTransposeOptions, conv_transpose2d, conv1d, conv2d};
use uop_ops::linalg::{linear, matmul};
use uop_ops::pool::{AvgPoolOptions, MaxPoolOptions, avg_pool2d, max_pool2d};

fn input(b: &mut Builder, name: &str, dims: &[&str]) -> NodeId {
    b.input(name, DType::F32, dims).expect("valid input")
}

/// An `x [1, 4, 5, 5]` and `w [6, 2, 3, 3]` pair (grouped by 2) in a fresh builder.
fn conv_inputs() -> (Builder, NodeId, NodeId) {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["1", "4", "5", "5"]);
    let w = input(&mut b, "w", &["6", "2", "3", "3"]);
    (b, x, w)
}

fn grouped(options: ConvOptions) -> ConvOptions {
    ConvOptions {
        groups: 2,
        ..options
    }
}

fn expect_attr(result: Result<NodeId, OpError>, op: &str, attr: &str, value: &str) -> String {
    match result {
        Err(e @ OpError::Attr { .. }) => {
            let OpError::Attr {
                op: o,
                attr: a,
                value: v,
                ..
            } = &e
            else {
                unreachable!()
            };
            assert_eq!((*o, *a, v.as_str()), (op, attr, value), "{e}");
            e.to_string()
        }
        other => panic!("expected an error about {op} {attr}={value}, got {other:?}"),
    }
}

fn expect_operand(result: Result<NodeId, OpError>, op: &str) -> String {
    match result {
        Err(e @ OpError::Operand { .. }) => {
            assert!(e.to_string().starts_with(&format!("{op}: ")), "{e}");
            e.to_string()
        }
        other => panic!("expected an operand error of {op}, got {other:?}"),
    }
}

/// Parses `src` with the op library; the error message must contain every `needle`.
fn text_error(src: &str, needles: &[&str]) {
    let e = parse_program(src, &uop_ops::registry()).expect_err("the program is invalid");
    let message = e.to_string();
    for needle in needles {
        assert!(message.contains(needle), "`{needle}` not in:\n{message}");
    }
}

#[test]
fn stride_and_dilation_must_be_positive_and_padding_non_negative() {
    let (mut b, x, w) = conv_inputs();
    let bad_stride = ConvOptions {
        stride: vec![1, 0],
        ..ConvOptions::default()
    };
    let message = expect_attr(
        conv2d(&mut b, x, w, None, &grouped(bad_stride)),
        "conv2d",
        "stride",
        "0",
    );
    assert_eq!(message, "conv2d: stride=0: must be positive");
    let bad_dilation = ConvOptions {
        dilation: vec![-1],
        ..ConvOptions::default()
    };
    expect_attr(
        conv2d(&mut b, x, w, None, &grouped(bad_dilation)),
        "conv2d",
        "dilation",
        "-1",
    );
    let bad_padding = ConvOptions {
        padding: vec![-2],
        ..ConvOptions::default()
    };
    let message = expect_attr(
        conv2d(&mut b, x, w, None, &grouped(bad_padding)),
        "conv2d",
        "padding",
        "-2",
    );
    assert!(message.contains("non-negative"), "{message}");
}

#[test]
fn a_per_axis_list_has_one_value_or_one_per_spatial_axis() {
    let (mut b, x, w) = conv_inputs();
    let options = ConvOptions {
        padding: vec![1, 1, 1],
        ..ConvOptions::default()
    };
    let message = expect_attr(
        conv2d(&mut b, x, w, None, &grouped(options)),
        "conv2d",
        "padding",
        "[1, 1, 1]",
    );
    assert!(message.contains("one value or 2"), "{message}");
}

#[test]
fn groups_must_divide_the_channels() {
    let (mut b, x, w) = conv_inputs();
    let three = ConvOptions {
        groups: 3,
        ..ConvOptions::default()
    };
    let message = expect_attr(conv2d(&mut b, x, w, None, &three), "conv2d", "groups", "3");
    assert_eq!(
        message,
        "conv2d: groups=3: does not divide the 4 input channels of x"
    );
    let zero = ConvOptions {
        groups: 0,
        ..ConvOptions::default()
    };
    expect_attr(conv2d(&mut b, x, w, None, &zero), "conv2d", "groups", "0");

    // 4 input channels split in 4 groups, but 6 output channels cannot be.
    let w1 = input(&mut b, "w1", &["6", "1", "3", "3"]);
    let four = ConvOptions {
        groups: 4,
        ..ConvOptions::default()
    };
    let message = expect_attr(conv2d(&mut b, x, w1, None, &four), "conv2d", "groups", "4");
    assert!(message.contains("6 output channels"), "{message}");
}

#[test]
fn in_channels_of_x_and_w_must_agree() {
    let (mut b, x, w) = conv_inputs();
    // Without groups, w [6, 2, 3, 3] takes 2 channels but x has 4.
    let message = expect_operand(
        conv2d(&mut b, x, w, None, &ConvOptions::default()),
        "conv2d",
    );
    assert!(
        message.contains("x [1, 4, 5, 5] has 4 channels") && message.contains("groups=1"),
        "{message}"
    );
    let wt = input(&mut b, "wt", &["3", "2", "3", "3"]);
    let message = expect_operand(
        conv_transpose2d(&mut b, x, wt, None, &ConvTransposeOptions::default()),
        "conv_transpose2d",
    );
    assert!(message.contains("in-channels differ"), "{message}");
}

#[test]
fn a_kernel_larger_than_the_padded_input_is_rejected() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["1", "1", "4", "4"]);
    let w = input(&mut b, "w", &["1", "1", "3", "3"]);
    let dilated = ConvOptions {
        dilation: vec![2],
        ..ConvOptions::default()
    };
    let message = expect_operand(conv2d(&mut b, x, w, None, &dilated), "conv2d");
    assert!(
        message.contains("the kernel spans 5") && message.contains("padded input 4"),
        "{message}"
    );
    // Padding by one makes room for it.
    let padded = ConvOptions {
        padding: vec![1],
        ..dilated
    };
    assert!(conv2d(&mut b, x, w, None, &padded).is_ok());

    let message = expect_attr(
        max_pool2d(&mut b, x, &MaxPoolOptions::new([5])),
        "max_pool2d",
        "kernel",
        "5",
    );
    assert!(message.contains("padded input 4"), "{message}");
}

#[test]
fn convolutions_check_ranks_and_bias_sizes() {
    let (mut b, x, w) = conv_inputs();
    let message = expect_operand(
        conv1d(&mut b, x, w, None, &ConvOptions::default()),
        "conv1d",
    );
    assert!(message.contains("x must have rank 3"), "{message}");
    let bias = input(&mut b, "bias", &["5"]);
    let message = expect_operand(
        conv2d(&mut b, x, w, Some(bias), &grouped(ConvOptions::default())),
        "conv2d",
    );
    assert!(message.contains("bias [5] has 5 values"), "{message}");
}

#[test]
fn output_padding_must_be_smaller_than_the_stride_or_the_dilation() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["1", "2", "3", "3"]);
    let w = input(&mut b, "w", &["2", "3", "3", "3"]);
    let options = ConvTransposeOptions {
        stride: vec![2],
        output_padding: vec![0, 2],
        ..ConvTransposeOptions::default()
    };
    let message = expect_attr(
        conv_transpose2d(&mut b, x, w, None, &options),
        "conv_transpose2d",
        "output_padding",
        "2",
    );
    assert!(
        message.contains("stride (2) or the dilation (1)"),
        "{message}"
    );
    // PyTorch allows it when the dilation is larger.
    let dilated = ConvTransposeOptions {
        dilation: vec![3],
        ..options
    };
    assert!(conv_transpose2d(&mut b, x, w, None, &dilated).is_ok());
}

#[test]
fn transposed_padding_may_not_swallow_the_output() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["1", "1", "2", "2"]);
    let w = input(&mut b, "w", &["1", "1", "2", "2"]);
    // (2-1)*1 - 2*2 + (2-1) + 1 = -1
    let options = ConvTransposeOptions {
        padding: vec![2],
        ..ConvTransposeOptions::default()
    };
    let message = expect_attr(
        conv_transpose2d(&mut b, x, w, None, &options),
        "conv_transpose2d",
        "padding",
        "2",
    );
    assert!(message.contains("output of size -1"), "{message}");
}

#[test]
fn matmul_needs_equal_inner_dimensions_and_no_scalars() {
    let mut b = Builder::new(DType::F32);
    let a = input(&mut b, "a", &["2", "3"]);
    let c = input(&mut b, "c", &["4", "5"]);
    let message = expect_operand(matmul(&mut b, a, c), "matmul");
    assert_eq!(
        message,
        "matmul: inner dimensions differ: a [2, 3] has 3 columns, b [4, 5] has 4 rows"
    );
    let batch_a = input(&mut b, "ba", &["2", "3", "4"]);
    let batch_c = input(&mut b, "bc", &["3", "4", "5"]);
    let message = expect_operand(matmul(&mut b, batch_a, batch_c), "matmul");
    assert!(message.contains("do not broadcast"), "{message}");
    let scalar = input(&mut b, "s", &[]);
    expect_operand(matmul(&mut b, scalar, c), "matmul");

    let w = input(&mut b, "w", &["4", "2"]);
    let message = expect_operand(linear(&mut b, a, w, None), "linear");
    assert!(message.contains("in-features differ"), "{message}");
}

#[test]
fn pooling_padding_is_at_most_half_the_kernel() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["1", "1", "6", "6"]);
    let options = AvgPoolOptions {
        padding: vec![2],
        ..AvgPoolOptions::new([3])
    };
    let message = expect_attr(
        avg_pool2d(&mut b, x, &options),
        "avg_pool2d",
        "padding",
        "2",
    );
    assert!(
        message.contains("at most half the kernel size 3"),
        "{message}"
    );
    let options = MaxPoolOptions {
        stride: Some(vec![0]),
        ..MaxPoolOptions::new([2, 2])
    };
    expect_attr(max_pool2d(&mut b, x, &options), "max_pool2d", "stride", "0");
}

#[test]
fn text_errors_name_the_op_attribute_and_value() {
    let conv = "input x: f32[1, 4, 5, 5]\ninput w: f32[6, 2, 3, 3]\n";
    text_error(
        &format!("{conv}y = conv2d(x, w, groups=3)\noutput y\n"),
        &["conv2d", "groups=3", "does not divide"],
    );
    text_error(
        &format!("{conv}y = conv2d(x, w, groups=2, stride=[1, 0])\noutput y\n"),
        &["conv2d", "stride=0", "positive"],
    );
    text_error(
        &format!("{conv}y = conv2d(x, w, groups=2, dilation=3)\noutput y\n"),
        &["conv2d", "kernel spans 7"],
    );
    text_error(
        "input x: f32[1, 2, 3, 3]\ninput w: f32[2, 3, 3, 3]\n\
         y = conv_transpose2d(x, w, stride=2, output_padding=2)\noutput y\n",
        &["conv_transpose2d", "output_padding=2", "smaller than"],
    );
    text_error(
        "input x: f32[1, 1, 4, 4]\ny = max_pool2d(x, 3, padding=2)\noutput y\n",
        &["max_pool2d", "padding=2", "at most half"],
    );
    text_error(
        "input x: f32[1, 1, 4, 4]\ny = avg_pool2d(x, [2, 2, 2])\noutput y\n",
        &["avg_pool2d", "kernel=[2, 2, 2]", "one value or 2"],
    );
    text_error(
        "input a: f32[2, 3]\ninput b: f32[4]\ny = matmul(a, b)\noutput y\n",
        &["matmul", "inner dimensions differ"],
    );
    text_error(
        "input x: f32[2, 3]\ninput w: f32[4, 3]\ninput b: f32[4]\n\
         y = linear(x, w, b, bias=b)\noutput y\n",
        &["bias is given twice"],
    );
}

#[test]
fn symbolic_sizes_become_size_assertions_checked_at_run_time() {
    let src = "input x: f32[N, C, H, W]\ninput w: f32[O, CG, 3, 3]\n\
               y = conv2d(x, w, groups=2)\noutput y\n";
    let program = parse_program(src, &uop_ops::registry()).expect("valid program");
    check_round_trip(&program).expect("the assertions print and parse back");
    let run = |x: &[usize], w: &[usize]| {
        let inputs = [
            Tensor::zeros(DType::F32, x.to_vec()),
            Tensor::zeros(DType::F32, w.to_vec()),
        ];
        interp::run(&program, &inputs, &HashMap::new())
    };
    let ok = run(&[1, 4, 5, 5], &[6, 2, 3, 3]).expect("consistent shapes run");
    assert_eq!(ok[0].shape, vec![1, 6, 3, 3]);
    // C = 4 but CG * groups = 3 * 2.
    assert!(run(&[1, 4, 5, 5], &[6, 3, 3, 3]).is_err());
    // 5 output channels do not split in 2 groups.
    assert!(run(&[1, 4, 5, 5], &[5, 2, 3, 3]).is_err());
    // H = 2 is smaller than the 3x3 kernel: an error, not an empty output.
    let e = run(&[1, 4, 2, 5], &[6, 2, 3, 3]).expect_err("kernel larger than the input");
    assert!(e.to_string().contains("min("), "{e}");
}

#[test]
fn sizes_that_overflow_say_so_instead_of_wrapping() {
    let registry = uop_ops::registry();
    for (src, what) in [
        (
            "input x: f32[1, 1, 4, 4]\ninput w: f32[1, 1, 3, 3]\ny = conv2d(x, w, padding=4611686018427387904)\noutput y\n",
            "the padding on both sides (2 × 4611686018427387904) overflows",
        ),
        (
            "input x: f32[1, 1, 4, 4]\ninput w: f32[1, 1, 3, 3]\ny = conv2d(x, w, padding=4611686018427387903)\noutput y\n",
            "the padded input (size 4 + 2 × padding 4611686018427387903) overflows",
        ),
        (
            "input x: f32[1, 1, 4, 4]\ninput w: f32[1, 1, 3, 3]\ny = conv2d(x, w, dilation=9223372036854775807)\noutput y\n",
            "the kernel's span (size 3, dilation 9223372036854775807) overflows",
        ),
        (
            "input x: f32[1, 1, 4, 4]\ninput w: f32[1, 1, 3, 3]\ny = conv_transpose2d(x, w, stride=9223372036854775807)\noutput y\n",
            "overflows 64-bit sizes",
        ),
    ] {
        let e = parse_program(src, &registry).expect_err(src).to_string();
        assert!(e.contains(what), "{e}");
        assert!(!e.contains("-9223372036854775"), "{e}");
    }
}
