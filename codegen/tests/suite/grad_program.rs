//! The gradient program as a program: its inputs and outputs and their names,
//! what it reads (the `|g(y)|x|y| -> |g(x)|` bitmask), zeros for unreached inputs,
//! errors for requests that make no sense, the text round trip, the loop IR
//! agreeing with the interpreter, and the size of the loop IR of the matmul and
//! conv2d gradients before and after optimization.

use std::collections::HashMap;

use uop_codegen::grad::{GradError, GradInput, GradRole, GradSpec, gradient};
use uop_codegen::interp;
use uop_codegen::loops::{self, TensorKind};
use uop_codegen::pass::{self, PassOptions};
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, check_round_trip, parse_program, print_program};
use uop_codegen::uop::{DType, NodeId, Program};

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}"))
}

fn t(shape: &[usize], data: &[f64]) -> Tensor {
    Tensor::new(DType::F32, shape.to_vec(), data.to_vec()).expect("data matches shape")
}

fn id(p: &Program, name: &str) -> NodeId {
    p.find(name).unwrap_or_else(|| panic!("no node `{name}`"))
}

#[test]
fn inputs_are_forward_inputs_then_seeds_then_supplied_values() {
    let f = parse("input x: f32[N]\ninput w: f32[N]\ny = mul(exp(x), w)\noutput y\n");
    let (x, w, y) = (id(&f, "x"), id(&f, "w"), id(&f, "y"));
    let spec = GradSpec {
        seeds: vec![y],
        wrt: vec![x],
        supplied: vec![],
    };
    let g = gradient(&f, &spec).expect("gradient");
    assert_eq!(
        print_program(&g.program),
        "input x: f32[N]\ninput w: f32[N]\ninput g_y: f32[N]\nt2 = exp(x)\nt4 = mul(g_y, w)\ng_x = mul(t4, t2)\noutput g_x\n"
    );
    let role = |role, forward| GradInput {
        role,
        forward,
        reads_data: true,
    };
    assert_eq!(
        g.inputs,
        vec![
            role(GradRole::Input, x),
            role(GradRole::Input, w),
            role(GradRole::Seed, y)
        ]
    );
}

#[test]
fn supplying_exps_output_makes_its_input_unnecessary() {
    let f = parse("input x: f32[N]\ny = exp(x)\noutput y\n");
    let (x, y) = (id(&f, "x"), id(&f, "y"));
    let recompute = gradient(
        &f,
        &GradSpec {
            seeds: vec![y],
            wrt: vec![x],
            supplied: vec![],
        },
    )
    .expect("gradient");
    assert_eq!(recompute.required.inputs, vec![x]);
    assert_eq!(recompute.required.supplied, Vec::<NodeId>::new());
    let supplied = gradient(
        &f,
        &GradSpec {
            seeds: vec![y],
            wrt: vec![x],
            supplied: vec![y],
        },
    )
    .expect("gradient");
    assert_eq!(supplied.required.inputs, Vec::<NodeId>::new());
    assert_eq!(supplied.required.seeds, vec![y]);
    assert_eq!(supplied.required.supplied, vec![y]);
    // The same numbers either way.
    let params = HashMap::new();
    let x_val = [t(&[3], &[0.0, 1.0, -1.0])];
    let seed = [t(&[3], &[1.0, 2.0, 3.0])];
    assert_eq!(
        recompute.run(&f, &x_val, &seed, &params).expect("runs"),
        supplied.run(&f, &x_val, &seed, &params).expect("runs")
    );
}

#[test]
fn an_unreached_input_gets_zeros_and_is_kept_only_for_its_shape() {
    let f = parse("input x: f32[N, 2]\ny = floor(x)\noutput y\n");
    let (x, y) = (id(&f, "x"), id(&f, "y"));
    let g = gradient(
        &f,
        &GradSpec {
            seeds: vec![y],
            wrt: vec![x],
            supplied: vec![],
        },
    )
    .expect("gradient");
    // The seed is not read; x gives the size N but its data is not read either.
    assert_eq!(
        g.inputs,
        vec![GradInput {
            role: GradRole::Input,
            forward: x,
            reads_data: false
        }]
    );
    assert!(g.required.inputs.is_empty() && g.required.seeds.is_empty());
    let out = interp::run(&g.program, &[t(&[3, 2], &[1.5; 6])], &HashMap::new()).expect("runs");
    assert_eq!(out[0], t(&[3, 2], &[0.0; 6]));
}

#[test]
fn outputs_without_a_seed_contribute_nothing() {
    let f = parse("input x: f32[N]\na = exp(x)\nb = sin(x)\noutput a, b\n");
    let (x, a) = (id(&f, "x"), id(&f, "a"));
    let g = gradient(
        &f,
        &GradSpec {
            seeds: vec![a],
            wrt: vec![x],
            supplied: vec![],
        },
    )
    .expect("gradient");
    assert!(!print_program(&g.program).contains("sin"));
    let out = g
        .run(&f, &[t(&[1], &[0.0])], &[t(&[1], &[2.0])], &HashMap::new())
        .expect("runs");
    assert_eq!(out[0].data, vec![2.0]);
}

#[test]
fn a_seed_passed_straight_through_becomes_a_separate_output_per_input() {
    let f = parse("input a: f32[N]\ninput b: f32[N]\ny = add(a, b)\noutput y\n");
    let spec = GradSpec {
        seeds: f.outputs.clone(),
        wrt: f.inputs.clone(),
        supplied: vec![],
    };
    let g = gradient(&f, &spec).expect("gradient");
    let text = print_program(&g.program);
    assert!(text.contains("output g_a, g_b"), "{text}");
    let out = g
        .run(
            &f,
            &[t(&[2], &[0.0, 0.0]), t(&[2], &[0.0, 0.0])],
            &[t(&[2], &[5.0, 6.0])],
            &HashMap::new(),
        )
        .expect("runs");
    assert_eq!(out[0].data, vec![5.0, 6.0]);
    assert_eq!(out[1].data, vec![5.0, 6.0]);
}

#[test]
fn gradient_names_avoid_forward_names() {
    let f = parse("input x: f32[N]\ng_x = exp(x)\ng_y = sin(g_x)\noutput g_y\n");
    let spec = GradSpec {
        seeds: f.outputs.clone(),
        wrt: f.inputs.clone(),
        supplied: vec![],
    };
    let g = gradient(&f, &spec).expect("gradient");
    let text = print_program(&g.program);
    assert!(text.contains("input g_g_y: f32[N]"), "{text}");
    assert!(text.contains("output g_x_1"), "{text}");
    check_round_trip(&g.program).expect("the gradient program round-trips through text");
}

#[test]
fn output_sizes_that_are_expressions_become_asserted_seed_dimensions() {
    let f = parse(
        "input x: f32[N]\ninput k: f32[K]\nxx = reindex(x, [N - K + 1, K], [i0 + i1])\nkk = reindex(k, [N - K + 1, K], [i1])\ny = reduce_sum(mul(xx, kk), [1])\noutput y\n",
    );
    let spec = GradSpec {
        seeds: f.outputs.clone(),
        wrt: f.inputs.clone(),
        supplied: vec![],
    };
    let g = gradient(&f, &spec).expect("gradient");
    let text = print_program(&g.program);
    assert!(text.contains("input g_y: f32[g_y_0, 1]"), "{text}");
    assert!(text.contains("assert g_y_0 == N - K + 1"), "{text}");
    check_round_trip(&g.program).expect("round trip");
    let params = HashMap::new();
    let x = t(&[4], &[1.0, 2.0, 3.0, 4.0]);
    let k = t(&[2], &[1.0, -1.0]);
    // A seed of the wrong size is caught by the assertion.
    let err = g
        .run(
            &f,
            &[x.clone(), k.clone()],
            &[t(&[2, 1], &[1.0, 1.0])],
            &params,
        )
        .expect_err("wrong seed size");
    assert!(err.to_string().contains("g_y_0 == N - K + 1"), "{err}");
    let out = g
        .run(&f, &[x, k], &[t(&[3, 1], &[1.0, 1.0, 1.0])], &params)
        .expect("runs");
    // d/dx of sum_j (x[j] - x[j+1]) over j = 0..3
    assert_eq!(out[0].data, vec![1.0, 0.0, 0.0, -1.0]);
    assert_eq!(out[1].data, vec![6.0, 9.0]);
}

#[test]
fn requests_that_make_no_sense_are_errors() {
    let f = parse(
        "input x: f32[N]\ninput i: i32[N]\ny = select(reindex(x, [N, 1], [i0]), reindex(i, [N, 1], [i0]), axis=1)\noutput y\n",
    );
    let (x, i, y) = (id(&f, "x"), id(&f, "i"), id(&f, "y"));
    let ask = |seeds: Vec<NodeId>, wrt: Vec<NodeId>| {
        gradient(
            &f,
            &GradSpec {
                seeds,
                wrt,
                supplied: vec![],
            },
        )
        .map(|_| ())
    };
    assert_eq!(
        ask(vec![y], vec![y]),
        Err(GradError::NotAnInput("y".into()))
    );
    assert_eq!(
        ask(vec![x], vec![x]),
        Err(GradError::NotAnOutput("x".into()))
    );
    assert!(matches!(
        ask(vec![y], vec![i]),
        Err(GradError::NotFloat {
            dtype: DType::I32,
            ..
        })
    ));
    assert!(matches!(
        ask(vec![y], vec![x, x]),
        Err(GradError::Duplicate { list: "wrt", .. })
    ));
    assert_eq!(ask(vec![y], vec![]), Err(GradError::NothingWanted));
    assert_eq!(
        ask(vec![y], vec![NodeId(99)]),
        Err(GradError::NoSuchNode(99))
    );
    assert_eq!(
        GradError::NotAnInput("y".into()).to_string(),
        "`y` is not an input of the program; gradients are taken with respect to inputs"
    );
}

/// The text of the gradient of `src` w.r.t. every input, every output seeded.
fn gradient_text(src: &str) -> String {
    let f = parse(src);
    let spec = GradSpec {
        seeds: f.outputs.clone(),
        wrt: f.inputs.clone(),
        supplied: vec![],
    };
    print_program(&gradient(&f, &spec).expect("gradient").program)
}

#[test]
fn solvable_reindexes_are_undone_by_gathers_not_scatters() {
    // A permutation of an input: read the seed back, no zero-reset, no accumulation.
    assert_eq!(
        gradient_text("input x: f32[M, N]\ny = reindex(x, [N, M], [i1, i0])\noutput y\n"),
        "input g_y: f32[N, M]\ng_x = reindex(g_y, [M, N], [i1, i0])\noutput g_x\n"
    );
    // A broadcast of an intermediate: a sum over the broadcast axis.
    assert_eq!(
        gradient_text(
            "input x: f32[M, N]\ns = sin(x)\ny = reindex(s, [3, M, N], [i1, i2])\noutput y\n"
        ),
        "input x: f32[M, N]\ninput g_y: f32[3, M, N]\nt2 = reduce_sum(g_y, [0])\n\
         t3 = reindex(t2, [M, N], [0, i0, i1])\nt4 = cos(x)\ng_x = mul(t3, t4)\noutput g_x\n"
    );
    // A window of an intermediate: gather the seed at `p - k` for every kernel offset
    // `k`, sum over the offsets (reads before the start or past the end give 0).
    let window = gradient_text(
        "input x: f32[M, N]\ns = sin(x)\ny = reindex(s, [M - 1, N - 1, 2, 2], [i0 + i2, i1 + i3])\noutput y\n",
    );
    assert!(
        window.contains("t3 = reindex(t2, [M, N, 2, 2], [i0 - i2, i1 - i3, i2, i3])\nt4 = reduce_sum(t3, [2, 3])"),
        "{window}"
    );
    assert!(!window.contains("reindex_reduce"), "{window}");
    // The gradient of an input that is summed stays a scatter: it accumulates straight
    // into the output, where a reduction would need a copy dropping the summed axes.
    assert!(
        gradient_text("input x: f32[M, N]\ny = reindex(x, [3, M, N], [i1, i2])\noutput y\n")
            .contains("g_x = reindex_reduce(g_y, [M, N], [i1, i2])")
    );
}

const MATMUL: &str = "input a: f32[M, K]
input b: f32[K, N]
aa = reindex(a, [M, K, N], [i0, i1])
bb = reindex(b, [M, K, N], [i1, i2])
c3 = reduce_sum(mul(aa, bb), [1])
c = reindex(c3, [M, N], [i0, 0, i1])
output c
";

const CONV2D: &str = "input x: f32[N, C, H, W]
input w: f32[O, C, KH, KW]
xx = reindex(x, [N, O, H - KH + 1, W - KW + 1, C, KH, KW], [i0, i4, i2 + i5, i3 + i6])
ww = reindex(w, [N, O, H - KH + 1, W - KW + 1, C, KH, KW], [i1, i4, i5, i6])
s = reduce_sum(mul(xx, ww), [4, 5, 6])
y = reindex(s, [N, O, H - KH + 1, W - KW + 1], [i0, i1, i2, i3, 0, 0, 0])
output y
";

/// Size of a gradient program: uop nodes, then (blocks, temporaries) of its loop IR
/// as lowered and after `pass::optimize`.
#[derive(Debug, PartialEq)]
struct Sizes {
    nodes: usize,
    lowered: (usize, usize),
    optimized: (usize, usize),
}

/// The [`Sizes`] of the gradient of `src` w.r.t. all inputs, every output seeded.
fn gradient_sizes(src: &str) -> Sizes {
    let f = parse(src);
    let spec = GradSpec {
        seeds: f.outputs.clone(),
        wrt: f.inputs.clone(),
        supplied: vec![],
    };
    let g = gradient(&f, &spec).expect("gradient");
    let lowered = loops::lower(&g.program);
    let optimized = pass::optimize(&lowered, &PassOptions::default()).expect("optimize");
    let size = |lp: &loops::LoopProgram| {
        let temps = lp
            .tensors
            .iter()
            .filter(|t| t.kind == TensorKind::Temp)
            .count();
        (lp.blocks.len(), temps)
    };
    Sizes {
        nodes: g.program.nodes.len(),
        lowered: size(&lowered),
        optimized: size(&optimized),
    }
}

/// What the gradient rules hand the optimizer and what it makes of it (NNC's
/// backward passes: 5 blocks for matmul, 3 for convolution). The adjoint of the
/// reindex dropping the reduced axes is a relabeling reindex, composed with the
/// broadcast back into the product space, so the seed is read in place; the
/// gradients of the inputs are scatters: a zero-reset each, and both accumulations
/// fused into the forward loop nest.
#[test]
fn size_of_matmul_and_conv2d_gradient_loop_ir() {
    // matmul: a, b, g_c; aa, bb; the seed broadcast; two products; two scatters
    // (each a zero-reset block and an accumulation block when lowered).
    assert_eq!(
        gradient_sizes(MATMUL),
        Sizes {
            nodes: 10,
            lowered: (9, 5),
            optimized: (3, 0),
        }
    );
    // conv2d: the same shape of program over the seven-axis convolution space.
    assert_eq!(
        gradient_sizes(CONV2D),
        Sizes {
            nodes: 10,
            lowered: (9, 5),
            optimized: (3, 0),
        }
    );
}

#[test]
fn lowered_gradient_programs_match_the_interpreter() {
    let params = HashMap::new();
    for (src, shapes) in [
        (MATMUL, vec![vec![2, 3], vec![3, 2]]),
        (CONV2D, vec![vec![1, 2, 4, 3], vec![2, 2, 2, 2]]),
    ] {
        let f = parse(src);
        let spec = GradSpec {
            seeds: f.outputs.clone(),
            wrt: f.inputs.clone(),
            supplied: vec![],
        };
        let g = gradient(&f, &spec).expect("gradient");
        let inputs: Vec<Tensor> = shapes
            .into_iter()
            .enumerate()
            .map(|(k, s)| Tensor::random(DType::F32, s, k as u64))
            .collect();
        let outs = interp::run(&f, &inputs, &params).expect("forward");
        let seeds: Vec<Tensor> = outs
            .iter()
            .map(|o| Tensor::random(DType::F32, o.shape.clone(), 9))
            .collect();
        let args = g.arguments(&f, &inputs, &seeds, &params).expect("args");
        let by_uops = interp::run(&g.program, &args, &params).expect("uops");
        let by_loops = interp::run_loops(&loops::lower(&g.program), &args, &params).expect("loops");
        for (a, b) in by_uops.iter().zip(&by_loops) {
            assert_eq!(a.max_abs_diff(b), Some(0.0));
        }
    }
}
