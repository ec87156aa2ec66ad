//! The `split-joins` decision of kernel formation (`docs/graph-kernels.md` rule 5):
//! an element-wise join of two independent branches that each hold a contraction
//! gets a kernel of its own, so that the branches' kernels do not wait
//! for each other (two streams run them side by side, DESIGN.md §18). Dependent
//! branches (a residual) and light branches fuse as before; the decision can be
//! switched off; the bits are the same either way.

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::kernels::{KernelOptions, form_kernels, joins, print_kernels};
use uop_graph::pass::{PrepareOptions, prepare};
use uop_graph::text::parse_graph;
use uop_graph::{Checks, Graph, default_registry, run, verify};

fn parse(src: &str) -> Graph {
    parse_graph(src, default_registry()).unwrap_or_else(|e| panic!("{e}"))
}

/// The kernels' summary and note lines of `print_kernels`, with the split-joins
/// decision on or off; checks that the fused graph verifies and computes the bits
/// of the unfused one.
fn kernels(src: &str, split_joins: bool, inputs: &[Tensor]) -> Vec<String> {
    let g = parse(src);
    let options = KernelOptions {
        split_joins,
        ..KernelOptions::default()
    };
    let (fused, _) = form_kernels(&g, &options).expect("kernels form");
    verify(&fused, Checks::NONE).expect("verifies");
    let params = HashMap::new();
    let before = run(&g, inputs, &params).expect("runs");
    let after = run(&fused, inputs, &params).expect("runs");
    assert_eq!(after, before, "same values");
    print_kernels(&fused)
        .lines()
        .filter(|l| l.starts_with("kernel") || l.starts_with("  #"))
        .map(str::to_string)
        .collect()
}

const TOWERS: &str = "\
input x: f32[B, D]
input w0: f32[D, D]
input w1: f32[D, D]
a = relu(matmul(x, w0))
b = relu(matmul(x, w1))
y = add(a, b)
output y
";

fn tower_inputs() -> Vec<Tensor> {
    vec![
        Tensor::random(DType::F32, vec![3, 4], 1),
        Tensor::random(DType::F32, vec![4, 4], 2),
        Tensor::random(DType::F32, vec![4, 4], 3),
    ]
}

#[test]
fn the_join_of_two_towers_is_a_kernel_of_its_own() {
    assert_eq!(
        kernels(TOWERS, true, &tower_inputs()),
        [
            "kernel k0 = {%2 matmul, %3 relu}",
            "kernel k1 = {%4 matmul, %5 relu}",
            "kernel k2 = {%6 add}",
            "  # split-joins: %6 add joins %3 and %5, independent branches with a \
             contraction each: kept out of their kernels",
        ]
    );
}

#[test]
fn without_the_decision_the_join_is_fused_into_the_first_towers_kernel() {
    // The first tower's kernel then waits for the second: the critical path of
    // two streams holds one tower and the other's last kernel.
    assert_eq!(
        kernels(TOWERS, false, &tower_inputs()),
        [
            "kernel k0 = {%4 matmul, %5 relu}",
            "kernel k1 = {%2 matmul, %3 relu, %6 add}",
        ]
    );
}

#[test]
fn a_residual_join_of_dependent_branches_stays_fused() {
    // h reads g's kernel: the branches are not independent, so the add is h's
    // epilogue as before.
    let src = "\
input x: f32[N, N]
input w: f32[N, N]
g = relu(matmul(x, w))
h = matmul(g, w)
r = add(h, g)
output r
";
    let inputs = [
        Tensor::random(DType::F32, vec![3, 3], 4),
        Tensor::random(DType::F32, vec![3, 3], 5),
    ];
    assert_eq!(
        kernels(src, true, &inputs),
        [
            "kernel k0 = {%2 matmul, %3 relu}",
            "kernel k1 = {%4 matmul, %5 add}",
        ]
    );
}

#[test]
fn a_join_of_a_heavy_and_a_light_branch_stays_fused() {
    // exp(x) · 2 is light (element-wise only; recomputed inside the kernel).
    let src = "\
input x: f32[N, N]
input w: f32[N, N]
m = matmul(x, w)
e = mul(exp(x), 2)
r = add(m, e)
output r
";
    let inputs = [
        Tensor::random(DType::F32, vec![3, 3], 6),
        Tensor::random(DType::F32, vec![3, 3], 7),
    ];
    assert_eq!(
        kernels(src, true, &inputs),
        ["kernel k0 = {%2 matmul, %3 exp, %4 mul, %5 add}"]
    );
}

#[test]
fn joins_of_independent_reductions_stay_fused() {
    // Four reductions joined by a tree of adds: reductions are not heavy (on two
    // streams the split kernels did not beat one fused kernel), so the adds merge all
    // four branches into one kernel, with the decision on or off.
    let src = "\
input x: f32[N]
c0 = mul(x, sum(exp(x)))
c1 = mul(x, sum(sin(x)))
c2 = mul(x, sum(cos(x)))
c3 = mul(x, sum(tanh(x)))
j0 = add(c0, c1)
j1 = add(c2, c3)
y = add(j0, j1)
output y
";
    let inputs = [Tensor::random(DType::F32, vec![5], 8)];
    let one = [
        "kernel k0 = {%2 exp, %3 sum, %4 mul, %5 sin, %6 sum, %7 mul, %8 cos, %9 sum, \
          %10 mul, %11 tanh, %12 sum, %13 mul, %14 add, %15 add, %16 add}",
    ];
    assert_eq!(kernels(src, true, &inputs), one);
    assert_eq!(kernels(src, false, &inputs), one);
}

#[test]
fn joins_of_independent_contractions_are_split_and_the_join_tree_is_one_kernel() {
    // Four matmul branches joined by a tree of adds: each keeps its own kernel and
    // the three adds, light, form one kernel.
    let src = "\
input x: f32[N, N]
input w: f32[N, N]
c0 = matmul(x, w)
c1 = matmul(exp(x), w)
c2 = matmul(sin(x), w)
c3 = matmul(cos(x), w)
j0 = add(c0, c1)
j1 = add(c2, c3)
y = add(j0, j1)
output y
";
    let inputs = [
        Tensor::random(DType::F32, vec![3, 3], 8),
        Tensor::random(DType::F32, vec![3, 3], 9),
    ];
    let got = kernels(src, true, &inputs);
    let summaries: Vec<&String> = got.iter().filter(|l| l.starts_with("kernel")).collect();
    assert_eq!(summaries.len(), 5, "{got:#?}");
    assert_eq!(
        summaries[4], "kernel k4 = {%9 add, %10 add, %11 add}",
        "{got:#?}"
    );
    assert_eq!(got.iter().filter(|l| l.contains("split-joins:")).count(), 2);
}

#[test]
fn the_prepare_pipeline_switches_the_decision_off_by_name() {
    let g = parse(TOWERS);
    let count = |options: &PrepareOptions| {
        let (prepared, _) = prepare(g.clone(), options).expect("prepares");
        prepared
            .nodes()
            .iter()
            .filter(|n| matches!(n.op, uop_graph::Op::Kernel(_)))
            .count()
    };
    assert_eq!(count(&PrepareOptions::default()), 3);
    let off = PrepareOptions {
        disabled: vec![joins::NAME.to_string()],
        ..PrepareOptions::default()
    };
    assert_eq!(count(&off), 2);
    let unknown = PrepareOptions {
        disabled: vec!["split-join".to_string()],
        ..PrepareOptions::default()
    };
    let err = prepare(g.clone(), &unknown).expect_err("an unknown name");
    assert!(err.to_string().contains("split-join"), "{err}");
}
