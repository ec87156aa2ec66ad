//! Every micro op's gradient rule against central finite differences in f64
//! (`uop_codegen::grad::fd`: step 1e-6, tolerance 1e-6 + 1e-5 relative), on random
//! shapes and random points away from kinks, and the gradients of gradients of
//! exp, mul, div, softmax, layernorm, matmul and conv2d written in micro ops.
//!
//! Each program is checked twice: recomputing every forward value, and with the
//! outputs supplied by the caller (the `GradSpec::supplied` path).

use std::collections::HashMap;

use rand::{Rng, SeedableRng, rngs::StdRng};
use uop_codegen::grad::fd::{FdOptions, check_gradient, check_second_order};
use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};

/// How the values of an input are drawn.
#[derive(Clone, Copy, Debug)]
enum Domain {
    /// Distinct values in [-2, 2), at least 0.02 from every integer (kinks of abs,
    /// sign, floor and ceil sit at integers; distinct values keep max / min away from ties).
    Any,
    /// Distinct values in [0.5, 2.5): for log, sqrt, rsqrt, recip, divisors and pow bases.
    Positive,
    /// Integers in [-1, limit], so that -1 and `limit` are out of range (select indices).
    Index(usize),
}

/// Draws the inputs of one case. Float values follow one shuffled Weyl sequence
/// across all inputs, so no two values of a case are closer than about 1/(count).
struct Draw {
    rng: StdRng,
    phase: f64,
    n: f64,
}

impl Draw {
    fn new(seed: u64) -> Self {
        let mut rng = StdRng::seed_from_u64(seed);
        let phase = rng.random_range(0.0..1.0);
        Draw { rng, phase, n: 0.0 }
    }

    fn next_unit(&mut self) -> f64 {
        self.n += 1.0;
        (self.phase + self.n * 0.618_033_988_749_895).fract()
    }

    fn tensor(&mut self, dtype: DType, shape: Vec<usize>, domain: Domain) -> Tensor {
        let count: usize = shape.iter().product();
        let mut data = Vec::with_capacity(count);
        for _ in 0..count {
            data.push(match domain {
                Domain::Any => {
                    let v = -2.0 + 4.0 * self.next_unit();
                    if (v - v.round()).abs() < 0.02 {
                        v + 0.05
                    } else {
                        v
                    }
                }
                Domain::Positive => 0.5 + 2.0 * self.next_unit(),
                Domain::Index(limit) => self.rng.random_range(-1..=limit as i64) as f64,
            });
        }
        Tensor { dtype, shape, data }
    }
}

/// Concrete input shapes from named sizes.
fn input_shapes(p: &Program, dims: &HashMap<String, usize>) -> Vec<Vec<usize>> {
    p.inputs
        .iter()
        .map(|i| {
            p.node(*i)
                .shape
                .iter()
                .map(|d| match d {
                    Expr::Int(v) => *v as usize,
                    Expr::Name(n) => dims[n],
                    other => panic!("unexpected input dim {other}"),
                })
                .collect()
        })
        .collect()
}

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Checks the first-order gradient of `src` with respect to every float input at
/// `cases` random points with random sizes in 1..=4 for every named dim (sizes in
/// `fixed` are used as given), both recomputing and supplying the outputs.
fn check(
    src: &str,
    domains: &[Domain],
    fixed: &[(&str, usize)],
    params: &[(&str, i64)],
    cases: u64,
) {
    let program = parse(src);
    assert_eq!(program.inputs.len(), domains.len(), "one domain per input");
    let params: HashMap<String, i64> = params.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let wrt: Vec<_> = program
        .inputs
        .iter()
        .copied()
        .filter(|i| program.node(*i).dtype.is_float())
        .collect();
    for case in 0..cases {
        let mut rng = StdRng::seed_from_u64(1000 + case);
        let mut dims: HashMap<String, usize> = HashMap::new();
        for i in &program.inputs {
            for d in &program.node(*i).shape {
                if let Expr::Name(n) = d {
                    let fixed_size = fixed.iter().find(|(f, _)| f == n).map(|(_, v)| *v);
                    dims.entry(n.clone())
                        .or_insert_with(|| fixed_size.unwrap_or_else(|| rng.random_range(1..=4)));
                }
            }
        }
        let mut draw = Draw::new(case);
        let inputs: Vec<Tensor> = input_shapes(&program, &dims)
            .into_iter()
            .zip(&program.inputs)
            .zip(domains)
            .map(|((shape, id), domain)| draw.tensor(program.node(*id).dtype, shape, *domain))
            .collect();
        let options = FdOptions {
            seed: case,
            ..FdOptions::default()
        };
        for supplied in [vec![], program.outputs.clone()] {
            if let Err(e) = check_gradient(&program, &wrt, &supplied, &inputs, &params, &options) {
                panic!(
                    "case {case} (dims {dims:?}, supplied {}): {e}\n{src}",
                    supplied.len()
                );
            }
        }
    }
}

/// `check` with sizes drawn at random and 6 cases.
fn check_random(src: &str, domains: &[Domain]) {
    check(src, domains, &[], &[], 6);
}

use Domain::{Any, Index, Positive};

#[test]
fn unary_ops_match_finite_differences() {
    for (op, domain) in [
        ("neg", Any),
        ("abs", Any),
        ("exp", Any),
        ("log", Positive),
        ("sqrt", Positive),
        ("rsqrt", Positive),
        ("recip", Positive),
        ("tanh", Any),
        ("sigmoid", Any),
        ("sin", Any),
        ("cos", Any),
        ("erf", Any),
        ("floor", Any),
        ("ceil", Any),
        ("sign", Any),
    ] {
        check_random(
            &format!("input x: f32[A, B]\ny = {op}(x)\noutput y\n"),
            &[domain],
        );
    }
}

#[test]
fn binary_ops_match_finite_differences_in_both_operands() {
    for (op, da, db) in [
        ("add", Any, Any),
        ("sub", Any, Any),
        ("mul", Any, Any),
        ("div", Any, Positive),
        ("pow", Positive, Any),
        ("maximum", Any, Any),
        ("minimum", Any, Any),
        ("eq", Any, Any),
        ("ne", Any, Any),
        ("lt", Any, Any),
        ("le", Any, Any),
        ("gt", Any, Any),
        ("ge", Any, Any),
    ] {
        check_random(
            &format!("input a: f32[A, B]\ninput b: f32[A, B]\ny = {op}(a, b)\noutput y\n"),
            &[da, db],
        );
    }
}

#[test]
fn binary_ops_with_a_scalar_or_param_operand() {
    for body in [
        "mul(x, 2.5)",
        "mul(-1.5, x)",
        "sub(0.5, x)",
        "div(x, 1.5)",
        "div(1.5, x)",
        "pow(x, 3.0)",
        "pow(x, 0.5)",
        "pow(2.0, x)",
        "maximum(x, 1.2)",
        "minimum(0.7, x)",
        "mul(x, $p)",
        "pow(x, $p)",
        "pow($p, x)",
        "div($p, x)",
    ] {
        check(
            &format!("param p\ninput x: f32[A, B]\ny = {body}\noutput y\n"),
            &[Positive],
            &[],
            &[("p", 3)],
            4,
        );
    }
}

#[test]
fn where_routes_by_condition_with_tensor_and_scalar_branches() {
    for body in [
        "where(gt(c, 0.0), a, b)",
        "where(gt(c, 0.0), a, 0.5)",
        "where(gt(c, 0.0), 2.0, b)",
        "where(gt(c, 0.0), mul(a, b), sin(a))",
    ] {
        check_random(
            &format!(
                "input c: f32[A, B]\ninput a: f32[A, B]\ninput b: f32[A, B]\ny = {body}\noutput y\n"
            ),
            &[Any, Any, Any],
        );
    }
}

#[test]
fn every_reduce_over_every_axis_set() {
    for op in ["sum", "mean", "prod", "max", "min", "argmax", "argmin"] {
        for axes in ["[0]", "[1]", "[2]", "[0, 2]", "[0, 1, 2]"] {
            check(
                &format!("input x: f32[A, B, C]\ny = reduce_{op}(x, {axes})\noutput y\n"),
                &[Any],
                &[],
                &[],
                3,
            );
        }
    }
}

#[test]
fn reindex_transposes_broadcasts_repeats_skips_and_fills() {
    for (body, domain) in [
        // transpose
        ("reindex(x, [N, M], [i1, i0])", Any),
        // broadcast: every element read N times
        ("reindex(x, [M, N, 2], [i0, i1])", Any),
        // every-other column, wrapped: repeats and skips at once (diagonal reads: below)
        ("reindex(x, [M, M], [i0 % M, (i1 * 2) % N])", Any),
        // repeats through modulo
        ("reindex(x, [M, 3 * N], [i0, i1 % N])", Any),
        // skips: every other column
        ("reindex(x, [M, (N + 1) / 2], [i0, 2 * i1])", Any),
        // out of range on both sides, filled with a constant
        ("reindex(x, [M + 2, N], [i0 - 1, i1], fill=0.5)", Any),
        ("reindex(x, [M, N + 3], [i0, N - i1], fill=-1.0)", Any),
    ] {
        check_random(
            &format!("input x: f32[M, N]\ny = {body}\noutput y\n"),
            &[domain],
        );
    }
}

/// Reindexes of an intermediate value (not an input): where the index map can be
/// solved for the output position the gradient is a gather, summed over the output
/// axes left free (broadcast axes, the kernel axes of a window), instead of a scatter.
#[test]
fn reindex_of_an_intermediate_as_a_gather() {
    for body in [
        // relabelings: transpose, a size-1 axis dropped and added, reversal, shift
        "reindex(s, [N, M], [i1, i0])",
        "reindex(reindex(s, [M, 1, N], [i0, i2]), [M, N], [i0, 0, i1])",
        "reindex(s, [M, N], [M - 1 - i0, i1])",
        "reindex(s, [M + 2, N], [i0 - 1, i1], fill=0.5)",
        // broadcasts, leading and trailing
        "reindex(s, [3, M, N], [i1, i2])",
        "reindex(s, [M, 2, N, 2], [i0, i2])",
        // windows: plain, strided (solved for the kernel axis), dilated, negated
        "reindex(s, [M - 1, N - 1, 2, 2], [i0 + i2, i1 + i3])",
        "reindex(s, [(M + 1) / 2, N, 2], [2 * i0 + i2, i1])",
        "reindex(s, [M, N, 2], [i0 + 2 * i2 - 1, i1])",
        "reindex(s, [M, N, 3], [i0 - i2 + 1, i1])",
        // not solvable (a modulo, a stride without a unit term): the scatter
        "reindex(s, [M, N, M], [i0, i2 % N])",
        "reindex(s, [M, (N + 1) / 2], [i0, 2 * i1])",
    ] {
        check_random(
            &format!("input x: f32[M, N]\ns = sin(x)\ny = {body}\noutput y\n"),
            &[Any],
        );
    }
}

#[test]
fn reindex_diagonal_of_a_square_input() {
    check_random(
        "input x: f32[N, N]\ny = reindex(x, [N], [i0, i0])\noutput y\n",
        &[Any],
    );
}

#[test]
fn reindex_reduce_add_max_min_with_collisions_and_dropped_targets() {
    for op in ["add", "max", "min"] {
        for (shape, index) in [
            ("[N, 2]", "[i0, i1 % 2]"),
            ("[3]", "[(i0 * M + i1) % 3]"),
            ("[N, M]", "[i0, i1 - 1]"),
            ("[M, N]", "[i1, i0]"),
        ] {
            check_random(
                &format!(
                    "input x: f32[N, M]\ny = reindex_reduce(x, {shape}, {index}, op=\"{op}\")\noutput y\n"
                ),
                &[Any],
            );
        }
    }
}

#[test]
fn select_with_in_and_out_of_range_indices() {
    for axis in [0, 1] {
        let (x_shape, i_shape) = if axis == 0 {
            ("[A, B]", "[C, B]")
        } else {
            ("[A, B]", "[A, C]")
        };
        check(
            &format!(
                "input x: f32{x_shape}\ninput idx: i32{i_shape}\ny = select(x, idx, axis={axis})\noutput y\n"
            ),
            &[Any, Index(3)],
            &[("A", 3), ("B", 3)],
            &[],
            6,
        );
    }
    // A float index holding non-integers is floored; it gets no gradient.
    check(
        "input x: f32[A, B]\ninput idx: f32[A, C]\ny = select(x, mul(idx, 1.5), axis=1)\noutput y\n",
        &[Any, Positive],
        &[("B", 4)],
        &[],
        4,
    );
}

#[test]
fn iota_and_constants_feed_gradients_without_receiving_any() {
    check_random(
        "input x: f32[A, B]\ny = add(mul(x, iota([A, B], 1)), iota([A, B], 0))\noutput y\n",
        &[Any],
    );
}

#[test]
fn shared_values_and_several_outputs() {
    check_random(
        "input x: f32[A, B]\ninput w: f32[A, B]\ne = exp(x)\np = mul(e, w)\ns = reduce_sum(p, [1])\nq = div(p, reindex(s, [A, B], [i0, 0]))\noutput q, s, e\n",
        &[Any, Any],
    );
}

// ---------------------------------------------------------------- second order

const SOFTMAX: &str = "input x: f32[B, N]
m = reduce_max(x, [1])
e = exp(sub(x, reindex(m, [B, N], [i0, 0])))
s = reduce_sum(e, [1])
y = div(e, reindex(s, [B, N], [i0, 0]))
output y
";

const LAYERNORM: &str = "input x: f32[B, N]
input gamma: f32[N]
input beta: f32[N]
mu = reduce_mean(x, [1])
xc = sub(x, reindex(mu, [B, N], [i0, 0]))
var = reduce_mean(mul(xc, xc), [1])
r = rsqrt(add(var, 0.00001))
xn = mul(xc, reindex(r, [B, N], [i0, 0]))
y = add(mul(xn, reindex(gamma, [B, N], [i1])), reindex(beta, [B, N], [i1]))
output y
";

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

/// Gradient of the gradient at a random point with the given sizes.
fn check_second(src: &str, domains: &[Domain], dims: &[(&str, usize)]) {
    let program = parse(src);
    let dims: HashMap<String, usize> = dims.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    for case in 0..2 {
        let mut draw = Draw::new(77 + case);
        let inputs: Vec<Tensor> = input_shapes(&program, &dims)
            .into_iter()
            .zip(domains)
            .map(|(shape, d)| draw.tensor(DType::F64, shape, *d))
            .collect();
        let options = FdOptions {
            seed: case,
            ..FdOptions::default()
        };
        let report = check_second_order(
            &program,
            &program.inputs,
            &inputs,
            &HashMap::new(),
            &options,
        )
        .unwrap_or_else(|e| panic!("case {case}: {e}\n{src}"));
        assert!(report.checked > 0, "something was checked");
    }
}

#[test]
fn second_order_exp_mul_div() {
    check_second(
        "input x: f32[N]\ny = exp(x)\noutput y\n",
        &[Any],
        &[("N", 4)],
    );
    check_second(
        "input a: f32[N]\ninput b: f32[N]\ny = mul(a, b)\noutput y\n",
        &[Any, Any],
        &[("N", 4)],
    );
    check_second(
        "input a: f32[N]\ninput b: f32[N]\ny = div(a, b)\noutput y\n",
        &[Any, Positive],
        &[("N", 4)],
    );
}

#[test]
fn second_order_through_gathers() {
    // The gradient of a window of an intermediate is a gather; its gradient a scatter.
    check_second(
        "input x: f32[M, N]\ny = reindex(mul(x, x), [M - 1, N - 1, 2, 2], [i0 + i2, i1 + i3])\noutput y\n",
        &[Any],
        &[("M", 3), ("N", 4)],
    );
    check_second(
        "input x: f32[M, N]\ny = reindex(exp(x), [3, N, M], [i2, i1])\noutput y\n",
        &[Any],
        &[("M", 2), ("N", 3)],
    );
}

#[test]
fn second_order_softmax() {
    check_second(SOFTMAX, &[Any], &[("B", 2), ("N", 3)]);
}

#[test]
fn second_order_layernorm() {
    check_second(LAYERNORM, &[Any, Any, Any], &[("B", 2), ("N", 3)]);
}

#[test]
fn second_order_matmul() {
    check_second(MATMUL, &[Any, Any], &[("M", 2), ("K", 3), ("N", 2)]);
}

#[test]
fn second_order_conv2d() {
    check_second(
        CONV2D,
        &[Any, Any],
        &[
            ("N", 1),
            ("C", 2),
            ("H", 4),
            ("W", 3),
            ("O", 2),
            ("KH", 2),
            ("KW", 2),
        ],
    );
}

#[test]
fn first_order_softmax_layernorm_matmul_conv2d_on_random_shapes() {
    check_random(SOFTMAX, &[Any]);
    check_random(LAYERNORM, &[Any, Any, Any]);
    check_random(MATMUL, &[Any, Any]);
    check(CONV2D, &[Any, Any], &[("H", 4), ("W", 5)], &[], 4);
}
