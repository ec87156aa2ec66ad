//! Differentiating a custom op: write the forward op in micro ops, get its gradient
//! program (micro ops again), check it against finite differences.
//!
//! The op is scaled dot-product attention,
//! `out[t, e] = sum_s softmax_s(scale * sum_d q[t, d] k[s, d]) v[s, e]`, built here
//! with the `Builder`; `attention.uop` next to this file is the same op in the text
//! format, for `uop grad` and `uop print --stage grad`.
//!
//! Run with `cargo run --example custom_op`.

use std::collections::HashMap;
use std::error::Error;

use uop::codegen::grad::fd::{FdOptions, check_gradient, check_second_order};
use uop::codegen::grad::{GradSpec, gradient};
use uop::codegen::tensor::Tensor;
use uop::codegen::text::{Registry, parse_program, print_program};
use uop::codegen::uop::{BinaryOp, Builder, DType, NodeId, Program, ReduceOp, UnaryOp, UopError};

/// The custom op: attention of queries `q: [T, D]` over keys `k: [S, D]` and values
/// `v: [S, E]`, giving `[T, E]`.
fn attention(
    b: &mut Builder,
    q: NodeId,
    k: NodeId,
    v: NodeId,
    scale: f64,
) -> Result<NodeId, UopError> {
    // Pair every query with every key along a third axis, multiply, sum over D.
    let qq = b.reindex(q, &["dA0", "dB0", "dA1"], &[q, k], &["i0", "i2"])?;
    let kk = b.reindex(k, &["dA0", "dB0", "dA1"], &[q, k], &["i1", "i2"])?;
    let prod = b.binary(BinaryOp::Mul, qq, kk)?;
    let dot3 = b.reduce(ReduceOp::Sum, &[2], prod)?;
    let dot = b.reindex(dot3, &["dA0", "dA1"], &[dot3], &["i0", "i1", "0"])?;
    let scores = b.binary(BinaryOp::Mul, dot, scale)?;
    // A numerically stable softmax over the keys.
    let m = b.reduce(ReduceOp::Max, &[1], scores)?;
    let mb = b.reindex(m, &["dA0", "dA1"], &[scores], &["i0", "0"])?;
    let shifted = b.binary(BinaryOp::Sub, scores, mb)?;
    let e = b.unary(UnaryOp::Exp, shifted)?;
    let total = b.reduce(ReduceOp::Sum, &[1], e)?;
    let tb = b.reindex(total, &["dA0", "dA1"], &[e], &["i0", "0"])?;
    let p = b.binary(BinaryOp::Div, e, tb)?;
    // Weighted sum of the values: [T, S, E] summed over S.
    let pp = b.reindex(p, &["dA0", "dA1", "dB1"], &[p, v], &["i0", "i1"])?;
    let vv = b.reindex(v, &["dA0", "dA1", "dB1"], &[p, v], &["i1", "i2"])?;
    let pv = b.binary(BinaryOp::Mul, pp, vv)?;
    let sum = b.reduce(ReduceOp::Sum, &[1], pv)?;
    b.reindex(sum, &["dA0", "dA2"], &[sum], &["i0", "0", "i1"])
}

fn forward_program(dtype: DType) -> Result<Program, UopError> {
    let mut b = Builder::new(dtype);
    let q = b.input("q", dtype, &["T", "D"])?;
    let k = b.input("k", dtype, &["S", "D"])?;
    let v = b.input("v", dtype, &["S", "E"])?;
    let out = attention(&mut b, q, k, v, 0.5)?;
    b.set_name(out, "out")?;
    b.combine(&[q, k, v], &[out])
}

fn main() -> Result<(), Box<dyn Error>> {
    let forward = forward_program(DType::F64)?;
    let wrt = forward.inputs.clone();
    let out = forward.outputs[0];

    // The caller passes the seed g_out and the forward output it already has.
    let spec = GradSpec {
        seeds: vec![out],
        wrt: wrt.clone(),
        supplied: vec![out],
    };
    let grad = gradient(&forward, &spec)?;
    println!("gradient program:\n{}", print_program(&grad.program));
    let names = |ids: &[NodeId]| -> Vec<String> {
        ids.iter().map(|i| forward.node(*i).name.clone()).collect()
    };
    println!(
        "reads: inputs {:?}, seeds of {:?}, supplied {:?}\n",
        names(&grad.required.inputs),
        names(&grad.required.seeds),
        names(&grad.required.supplied)
    );

    // Evaluate it on concrete data: T = 2 queries, S = 3 keys, D = 2, E = 2; the
    // seed picks the loss out[0, 0] + out[1, 1].
    let q_val = Tensor::new(DType::F64, vec![2, 2], vec![0.5, -1.0, 1.5, 0.25])?;
    let k_val = Tensor::new(
        DType::F64,
        vec![3, 2],
        vec![1.0, 0.0, -0.5, 2.0, 0.75, 0.75],
    )?;
    let v_val = Tensor::new(DType::F64, vec![3, 2], vec![1.0, 2.0, -1.0, 0.5, 0.0, 3.0])?;
    let seed = Tensor::new(DType::F64, vec![2, 2], vec![1.0, 0.0, 0.0, 1.0])?;
    let params = HashMap::new();
    let inputs = [q_val, k_val, v_val];
    let g = grad.run(&forward, &inputs, std::slice::from_ref(&seed), &params)?;
    for (input, value) in ["q", "k", "v"].iter().zip(&g) {
        println!("d(out[0,0] + out[1,1]) / d{input} = {:?}", value.data);
    }
    println!();

    // Check against central finite differences, then the gradient of the gradient.
    let options = FdOptions::default();
    let first = check_gradient(&forward, &wrt, &[out], &inputs, &params, &options)?;
    println!(
        "first order: {} elements agree with finite differences (max error {:.1e})",
        first.checked, first.max_error
    );
    let second = check_second_order(&forward, &wrt, &inputs, &params, &options)?;
    println!(
        "second order: {} elements agree with finite differences (max error {:.1e})",
        second.checked, second.max_error
    );

    // The text version of the op (used by `uop grad`) has the same gradient.
    let text = parse_program(include_str!("attention.uop"), &Registry::new())?;
    let text = uop::codegen::grad::to_f64(&text);
    let text_spec = GradSpec {
        seeds: text.outputs.clone(),
        wrt: text.inputs.clone(),
        supplied: vec![],
    };
    let g_text = gradient(&text, &text_spec)?.run(&text, &inputs, &[seed], &params)?;
    for (a, b) in g.iter().zip(&g_text) {
        let diff = a.max_abs_diff(b).ok_or("gradient shapes differ")?;
        if diff > 1e-12 {
            return Err(format!("the .uop version differs by {diff}").into());
        }
    }
    println!("attention.uop gives the same gradient");
    Ok(())
}
