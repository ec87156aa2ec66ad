//! Bad attributes and operand shapes of the element-wise, reduction and nn ops are
//! rejected when the op is built, with a message naming the op, the attribute and the
//! offending value — through the Rust API and in `.uop` text. Symbolic sizes that
//! cannot be compared at build time become run-time size assertions instead.

use std::collections::HashMap;

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::parse_program;
use uop_codegen::uop::{Builder, DType, NodeId};
use uop_ops::elementwise::{self, GeluApproximate};
use uop_ops::nn::{self, Reduction};
use uop_ops::{OpError, reduce};

fn input(b: &mut Builder, name: &str, dims: &[&str]) -> NodeId {
    b.input(name, DType::F32, dims).expect("valid input")
}

/// The error of a `.uop` program that must not parse, as text.
fn text_error(src: &str) -> String {
    match parse_program(src, &uop_ops::registry()) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e.to_string(),
    }
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "`{part}` missing from the message:\n{message}"
        );
    }
}

fn attr_error(e: OpError, op: &str, attr: &str, value: &str) {
    match &e {
        OpError::Attr {
            op: o,
            attr: a,
            value: v,
            ..
        } => {
            assert_eq!((*o, *a, v.as_str()), (op, attr, value), "{e}");
        }
        other => panic!("expected an attribute error, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Element-wise

#[test]
fn shapes_that_do_not_broadcast_are_rejected() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["2", "3"]);
    let y = input(&mut b, "y", &["4", "3"]);
    let e = elementwise::add(&mut b, x, y).unwrap_err();
    assert_mentions(&e.to_string(), &["add", "[2, 3]", "[4, 3]", "2 vs 4"]);

    let msg = text_error("input x: f32[2, 3]\ninput y: f32[4, 3]\nz = mul(x, y)\noutput z\n");
    assert_mentions(&msg, &["mul", "[2, 3]", "[4, 3]", "line 3"]);
    let msg = text_error(
        "input c: f32[3]\ninput x: f32[2, 3]\ninput y: f32[5]\nz = where(c, x, y)\noutput z\n",
    );
    assert_mentions(&msg, &["where", "[2, 3]", "[5]"]);
}

#[test]
fn leaky_relu_needs_a_finite_alpha() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["N"]);
    let e = elementwise::leaky_relu(&mut b, x, f64::INFINITY).unwrap_err();
    attr_error(e, "leaky_relu", "alpha", "inf");
    let msg = text_error("input x: f32[N]\ny = leaky_relu(x, alpha=nan)\noutput y\n");
    assert_mentions(&msg, &["leaky_relu", "alpha=NaN", "finite"]);
}

#[test]
fn gelu_knows_two_forms() {
    assert_eq!(
        GeluApproximate::from_name("tanh"),
        Some(GeluApproximate::Tanh)
    );
    assert_eq!(GeluApproximate::from_name("erf"), None);
    let msg = text_error("input x: f32[N]\ny = gelu(x, approximate=\"fast\")\noutput y\n");
    assert_mentions(
        &msg,
        &["gelu", "approximate=\"fast\"", "\"none\" or \"tanh\""],
    );
}

#[test]
fn clip_needs_a_bound() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["N"]);
    let e = elementwise::clip(&mut b, x, None, None).unwrap_err();
    attr_error(e, "clip", "min", "none");
    let msg = text_error("input x: f32[N]\ny = clip(x)\noutput y\n");
    assert_mentions(&msg, &["clip", "min", "max"]);
    let msg = text_error("input x: f32[N]\ny = clip(x, low=0)\noutput y\n");
    assert_mentions(&msg, &["clip", "low"]);
}

#[test]
fn a_tensor_bound_of_clip_must_broadcast() {
    let msg = text_error("input x: f32[2, 3]\ninput lo: f32[4]\ny = clip(x, min=lo)\noutput y\n");
    assert_mentions(&msg, &["clip", "[2, 3]", "[4]"]);
}

// ---------------------------------------------------------------------------
// Reductions

#[test]
fn reduction_axes_must_exist_and_not_repeat() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["2", "3"]);
    attr_error(
        reduce::sum(&mut b, x, Some(&[2]), false).unwrap_err(),
        "sum",
        "axis",
        "2",
    );
    attr_error(
        reduce::mean(&mut b, x, Some(&[-3]), false).unwrap_err(),
        "mean",
        "axis",
        "-3",
    );
    attr_error(
        reduce::max(&mut b, x, Some(&[1, -1]), true).unwrap_err(),
        "max",
        "axis",
        "[1, -1]",
    );
    attr_error(
        reduce::argmin(&mut b, x, Some(5), false).unwrap_err(),
        "argmin",
        "axis",
        "5",
    );

    let msg = text_error("input x: f32[2, 3]\ny = prod(x, axis=[0, 4])\noutput y\n");
    assert_mentions(&msg, &["prod", "axis=4", "rank 2", "column 18"]);
    let msg = text_error("input x: f32[2, 3]\ny = min(x, axis=[0, 0])\noutput y\n");
    assert_mentions(&msg, &["min", "axis=[0, 0]", "repeated"]);
}

#[test]
fn an_empty_axis_list_is_rejected_rather_than_guessed() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["2", "3"]);
    attr_error(
        reduce::sum(&mut b, x, Some(&[]), false).unwrap_err(),
        "sum",
        "axis",
        "[]",
    );
    let msg = text_error("input x: f32[2, 3]\ny = logsumexp(x, axis=[])\noutput y\n");
    assert_mentions(&msg, &["logsumexp", "axis=[]", "omit `axis`"]);
}

#[test]
fn argmax_takes_a_single_axis() {
    let msg = text_error("input x: f32[2, 3]\ny = argmax(x, axis=[0, 1])\noutput y\n");
    assert_mentions(&msg, &["argmax", "axis", "integer"]);
}

#[test]
fn var_needs_a_finite_correction() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["N"]);
    attr_error(
        reduce::var(&mut b, x, None, f64::NAN, false).unwrap_err(),
        "var",
        "correction",
        "NaN",
    );
    let msg = text_error("input x: f32[N]\ny = std(x, correction=inf)\noutput y\n");
    assert_mentions(&msg, &["std", "correction=inf", "finite"]);
    let msg = text_error("input x: f32[N]\ny = var(x, correction=\"one\")\noutput y\n");
    assert_mentions(&msg, &["var", "correction", "number"]);
}

#[test]
fn keepdim_must_be_a_boolean() {
    let msg = text_error("input x: f32[N]\ny = sum(x, keepdim=1)\noutput y\n");
    assert_mentions(&msg, &["sum", "keepdim"]);
}

// ---------------------------------------------------------------------------
// Neural-network ops

#[test]
fn softmax_axis_must_exist() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["B", "N"]);
    attr_error(
        nn::softmax(&mut b, x, 2).unwrap_err(),
        "softmax",
        "axis",
        "2",
    );
    attr_error(
        nn::log_softmax(&mut b, x, -3).unwrap_err(),
        "log_softmax",
        "axis",
        "-3",
    );
    let msg = text_error("input x: f32[B, N]\ny = softmax(x, axis=5)\noutput y\n");
    assert_mentions(&msg, &["softmax", "axis=5", "rank 2", "column 21"]);
    // The text layer names the op once.
    assert!(!msg.contains("softmax: softmax"), "{msg}");
}

#[test]
fn layernorm_checks_gamma_beta_and_eps() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["4", "6"]);
    let g = input(&mut b, "g", &["5"]);
    let beta = input(&mut b, "beta", &["6"]);
    let e = nn::layernorm(&mut b, x, g, beta, &[-1], 1e-5).unwrap_err();
    assert_mentions(&e.to_string(), &["layernorm", "gamma", "[5]", "[6]"]);
    let e = nn::layernorm(&mut b, x, beta, beta, &[-1], -1.0).unwrap_err();
    attr_error(e, "layernorm", "eps", "-1");
    let e = nn::layernorm(&mut b, x, beta, beta, &[], 1e-5).unwrap_err();
    attr_error(e, "layernorm", "axis", "[]");

    let msg = text_error(
        "input x: f32[2, 3, 5]\ninput g: f32[3, 5]\ninput b: f32[5]\n\
         y = layernorm(x, g, b, axis=[1, 2])\noutput y\n",
    );
    assert_mentions(&msg, &["layernorm", "beta", "[5]", "[3, 5]"]);
    let msg = text_error(
        "input x: f32[2, 3]\ninput g: f32[3]\ny = layernorm(x, g, g, axis=2)\noutput y\n",
    );
    assert_mentions(&msg, &["layernorm", "axis=2"]);
    let msg = text_error("input x: f32[2, 3]\ninput g: f32[3]\ny = layernorm(x, g)\noutput y\n");
    assert_mentions(&msg, &["layernorm", "argument 3 is missing"]);
}

#[test]
fn rmsnorm_checks_gamma_and_eps() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["4", "6"]);
    let g = input(&mut b, "g", &["4", "6"]);
    let e = nn::rmsnorm(&mut b, x, g, &[-1], None).unwrap_err();
    assert_mentions(&e.to_string(), &["rmsnorm", "gamma", "[4, 6]", "[6]"]);
    let msg =
        text_error("input x: f32[4, 6]\ninput g: f32[6]\ny = rmsnorm(x, g, eps=inf)\noutput y\n");
    assert_mentions(&msg, &["rmsnorm", "eps=inf"]);
}

#[test]
fn cross_entropy_checks_its_operands() {
    let mut b = Builder::new(DType::F32);
    let logits = input(&mut b, "logits", &["4", "3"]);
    let soft = input(&mut b, "soft", &["4", "3"]);
    let e = nn::cross_entropy(&mut b, logits, soft, Reduction::Mean).unwrap_err();
    assert_mentions(&e.to_string(), &["cross_entropy", "i32", "f32"]);

    let src = |logits: &str, target: &str, extra: &str| {
        format!(
            "input logits: f32[{logits}]\ninput target: i32[{target}]\n\
             loss = cross_entropy(logits, target{extra})\noutput loss\n"
        )
    };
    let msg = text_error(&src("2, 3, 4", "2", ""));
    assert_mentions(&msg, &["cross_entropy", "[B, C]", "[2, 3, 4]"]);
    let msg = text_error(&src("4, 3", "5", ""));
    assert_mentions(&msg, &["cross_entropy", "[5]", "[4, 3]", "batch"]);
    let msg = text_error(&src("4, 3", "4, 1", ""));
    assert_mentions(&msg, &["cross_entropy", "[B]", "[4, 1]"]);
    let msg = text_error(&src("4, 3", "4", ", reduction=\"avg\""));
    assert_mentions(&msg, &["cross_entropy", "reduction=\"avg\"", "\"mean\""]);
}

#[test]
fn mse_loss_operands_must_broadcast() {
    let mut b = Builder::new(DType::F32);
    let x = input(&mut b, "x", &["3", "5"]);
    let t = input(&mut b, "t", &["3", "4"]);
    let e = nn::mse_loss(&mut b, x, t, Reduction::Sum).unwrap_err();
    assert_mentions(&e.to_string(), &["mse_loss", "[3, 5]", "[3, 4]"]);
    let msg = text_error(
        "input x: f32[3, 5]\ninput t: f32[3, 5]\ny = mse_loss(x, t, reduction=\"max\")\noutput y\n",
    );
    assert_mentions(&msg, &["mse_loss", "reduction=\"max\""]);
}

// ---------------------------------------------------------------------------
// Symbolic sizes: asserted, and checked when the program runs

#[test]
fn symbolic_sizes_are_asserted_and_checked_at_run_time() {
    let src = "input x: f32[B, N]\ninput y: f32[M]\nz = add(x, y)\noutput z\n";
    let program = parse_program(src, &uop_ops::registry()).expect("parses");
    assert_eq!(program.assertions.len(), 1, "N == M is asserted");
    let params = HashMap::new();
    let x = Tensor::zeros(DType::F32, vec![2, 3]);
    let ok = interp::run(
        &program,
        &[x.clone(), Tensor::zeros(DType::F32, vec![3])],
        &params,
    );
    assert!(ok.is_ok(), "{ok:?}");
    let bad = interp::run(&program, &[x, Tensor::zeros(DType::F32, vec![4])], &params);
    assert!(bad.is_err(), "N = 3 and M = 4 must be refused");

    let src = "input x: f32[B, N]\ninput g: f32[K]\ny = layernorm(x, g, g)\noutput y\n";
    let program = parse_program(src, &uop_ops::registry()).expect("parses");
    assert_eq!(program.assertions.len(), 1, "K == N is asserted");
    let src = "input l: f32[B, C]\ninput t: i32[A]\ny = cross_entropy(l, t)\noutput y\n";
    let program = parse_program(src, &uop_ops::registry()).expect("parses");
    assert_eq!(program.assertions.len(), 1, "A == B is asserted");
}
