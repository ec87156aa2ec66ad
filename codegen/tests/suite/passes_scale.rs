//! Large programs: the optimizer's work stays bounded (near-linear passes, bounded
//! expressions) and its results stay exact. Nothing here is timed (speed is measured by
//! `uop stats --time` and the benches); the tests check shapes of the output that a
//! quadratic or exponential implementation would not reach in a test's lifetime, and
//! that the results equal the reference interpreter's.

use std::collections::HashMap;

use uop_codegen::index::parse_expr;
use uop_codegen::interp;
use uop_codegen::loops::{self, LoopProgram, Stmt, Value};
use uop_codegen::pass::{self, PassOptions};
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};

fn optimized(src: &str) -> (uop_codegen::uop::Program, LoopProgram) {
    let program = parse_program(src, &Registry::new()).expect("valid program");
    let lowered = loops::lower(&program);
    let opt = pass::optimize(&lowered, &PassOptions::default()).expect("valid options");
    (program, opt)
}

fn depth(v: &Value) -> usize {
    1 + match v {
        Value::Unary(_, x) => depth(x),
        Value::Binary(_, a, b) => depth(a).max(depth(b)),
        Value::Where(c, a, b) => depth(c).max(depth(a)).max(depth(b)),
        _ => 0,
    }
}

fn deepest(p: &LoopProgram) -> usize {
    p.blocks
        .iter()
        .flat_map(|b| b.stmts.iter().chain(b.loops.iter().flat_map(|l| &l.stmts)))
        .map(|s| match s {
            Stmt::Store { value, .. } | Stmt::Accumulate { value, .. } => depth(value),
            Stmt::Update { value, .. } => depth(value),
        })
        .max()
        .unwrap_or(0)
}

fn same_as_interpreter(program: &uop_codegen::uop::Program, opt: &LoopProgram, inputs: &[Tensor]) {
    let none = HashMap::new();
    let want = interp::run(program, inputs, &none).expect("the interpreter runs it");
    let got = interp::run_loops(opt, inputs, &none).expect("the loop interpreter runs it");
    assert_eq!(got, want);
}

/// A chain of 5,000 element-wise lines fuses into one nest, and substitution stores
/// a temporary every 256 links instead of building one expression 5,000 deep.
#[test]
fn a_long_element_wise_chain_fuses_into_one_nest_of_bounded_expressions() {
    let n = 5000;
    let mut src = String::from("input x0: f32[N]\n");
    for k in 1..=n {
        // Alternate two cheap, exact ops so the values stay finite and distinct.
        let op = if k % 2 == 0 { "neg" } else { "abs" };
        src.push_str(&format!("x{k} = {op}(x{})\n", k - 1));
    }
    src.push_str(&format!("output x{n}\n"));
    let (program, opt) = optimized(&src);
    assert_eq!(opt.blocks.len(), 1);
    assert!(deepest(&opt) <= 257, "deepest expression {}", deepest(&opt));
    let stores = opt.blocks[0].loops[0].stmts.len();
    assert!(
        (n / 256..=n / 128).contains(&stores),
        "{stores} statements for a chain of {n}"
    );
    let x = Tensor::new(
        uop_codegen::uop::DType::F32,
        vec![4],
        vec![1.5, -2.0, 0.0, 3.25],
    )
    .expect("valid tensor");
    same_as_interpreter(&program, &opt, &[x]);
}

/// `x2 = x1 * x1`, `x3 = x2 * x2`, ...: substituting every link would double the
/// expression each time (2^40 nodes); the node budget keeps temporaries instead.
#[test]
fn a_chain_that_doubles_its_expression_stays_small() {
    let mut src = String::from("input x0: f32[N]\nx1 = sqrt(abs(x0))\n");
    for k in 2..=40 {
        src.push_str(&format!("x{k} = maximum(x{}, x{})\n", k - 1, k - 1));
    }
    src.push_str("output x40\n");
    let (program, opt) = optimized(&src);
    assert_eq!(opt.blocks.len(), 1);
    assert!(
        opt.to_string().len() < 1_000_000,
        "the printed program exploded"
    );
    let x = Tensor::new(uop_codegen::uop::DType::F32, vec![3], vec![4.0, -9.0, 0.5])
        .expect("valid tensor");
    same_as_interpreter(&program, &opt, &[x]);
}

/// 3,000 independent outputs of the same shape fuse into one nest.
#[test]
fn many_independent_outputs_fuse_into_one_nest() {
    let n = 3000;
    let mut src = String::from("input x: f32[N]\n");
    for k in 0..n {
        src.push_str(&format!("y{k} = mul(x, {k}.0)\n"));
    }
    let names: Vec<String> = (0..n).map(|k| format!("y{k}")).collect();
    src.push_str(&format!("output {}\n", names.join(", ")));
    let (program, opt) = optimized(&src);
    assert_eq!(opt.blocks.len(), 1);
    let x =
        Tensor::new(uop_codegen::uop::DType::F32, vec![2], vec![1.0, -0.5]).expect("valid tensor");
    same_as_interpreter(&program, &opt, &[x]);
}

/// 1,000 chained matrix products (micro ops: two broadcasts, a product, a sum over
/// the inner axis, a reindex dropping it): each fuses into one nest with no
/// temporary of its own, and chains of nests of different depths fuse in
/// near-linear time (`fuse` used to take minutes here: every merge re-swept the
/// unrelated pairs). The results equal the interpreter's.
#[test]
fn a_long_chain_of_matrix_products_fuses_into_one_nest_each() {
    let n = 1000;
    let mut src = String::from("input x0: f32[N, N]\ninput w: f32[N, N]\n");
    for k in 1..=n {
        let x = k - 1;
        src.push_str(&format!(
            "a{k} = reindex(x{x}, [N, N, N], [i0, i1])\n\
             b{k} = reindex(w, [N, N, N], [i1, i2])\n\
             s{k} = reduce_sum(mul(a{k}, b{k}), [1])\n\
             x{k} = reindex(s{k}, [N, N], [i0, 0, i1])\n"
        ));
    }
    src.push_str(&format!("output x{n}\n"));
    let (program, opt) = optimized(&src);
    assert_eq!(opt.blocks.len(), n, "one nest per product");
    // Only the chain's links stay (x1 .. x{n-1}); a, b, the products and s do not.
    let temporaries = opt
        .tensors
        .iter()
        .filter(|t| t.kind == loops::TensorKind::Temp)
        .count();
    assert_eq!(temporaries, n - 1);
    let f32s = |v: Vec<f64>| {
        Tensor::new(uop_codegen::uop::DType::F32, vec![2, 2], v).expect("valid tensor")
    };
    // A contraction (spectral radius 0.75): the values shrink, exactly representable.
    let x0 = f32s(vec![1.0, -2.0, 0.5, 4.0]);
    let w = f32s(vec![0.5, 0.25, 0.25, 0.5]);
    same_as_interpreter(&program, &opt, &[x0, w]);
}

/// 1,000 chained convolutions (3×3, padding 1) with one weight: each reads its padded input and a
/// copy of the weight with the output channels last (named `w_t`, `w_t_2`, …:
/// each name found in constant time, not by trying every suffix taken before, as
/// the `channels` pass used to, cubic here), tiled along those channels. The
/// results equal the interpreter's.
#[test]
fn a_long_chain_of_convolutions_is_tiled_along_channels_each() {
    let n = 1000;
    let mut src = String::from("input x0: f32[B, C, H, W]\ninput w: f32[C, C, 3, 3]\n");
    for k in 1..=n {
        // `conv2d(x, w, padding=1)` in micro ops, as the macro op writes it.
        let x = k - 1;
        src.push_str(&format!(
            "a{k} = reindex(x{x}, [B, C, H, W, C, 3, 3], [i0, i4, i2 + i5 - 1, i3 + i6 - 1])\n\
             b{k} = reindex(w, [B, C, H, W, C, 3, 3], [i1, i4, i5, i6])\n\
             s{k} = reduce_sum(mul(a{k}, b{k}), [4, 5, 6])\n\
             x{k} = reindex(s{k}, [B, C, H, W], [i0, i1, i2, i3, 0, 0, 0])\n"
        ));
    }
    src.push_str(&format!("output x{n}\n"));
    let (program, opt) = optimized(&src);
    // Per convolution: the weight's copy, the padded image's fill and interior,
    // the convolution.
    assert_eq!(opt.blocks.len(), 4 * n);
    let copies: Vec<&str> = opt
        .tensors
        .iter()
        .filter(|t| t.name.starts_with("w_t"))
        .map(|t| t.name.as_str())
        .collect();
    let want: Vec<String> = std::iter::once("w_t".to_string())
        .chain((2..=n).map(|k| format!("w_t_{k}")))
        .collect();
    assert_eq!(copies, want);
    let channel_tiles = opt
        .blocks
        .iter()
        .flat_map(|b| &b.loops)
        .filter(|l| l.schedule.tile.is_some_and(|t| !t.block_reduction))
        .count();
    assert_eq!(channel_tiles, n);
    let f32s = |shape: Vec<usize>, v: Vec<f64>| {
        Tensor::new(uop_codegen::uop::DType::F32, shape, v).expect("valid tensor")
    };
    let x0 = f32s(
        vec![1, 2, 3, 4],
        (0..24).map(|k| f64::from(k % 7) - 3.0).collect(),
    );
    // Centre weights `[[0.6, 0.8], [0.8, -0.6]]` (a rotation: the values neither
    // vanish nor blow up over 1,000 links) and a small corner weight, so the
    // windows and the padding count.
    let mut w = vec![0.0; 36];
    for (o, c, v) in [(0, 0, 0.6), (0, 1, 0.8), (1, 0, 0.8), (1, 1, -0.6)] {
        w[(o * 2 + c) * 9 + 4] = v;
        w[(o * 2 + c) * 9] = 0.001;
    }
    same_as_interpreter(&program, &opt, &[x0, f32s(vec![2, 2, 3, 3], w)]);
}

/// `(i0 + ... + i14)^15` is not multiplied out (15^15 terms): the simplified form
/// stays about as large as the input.
#[test]
fn a_power_of_a_long_sum_simplifies_without_expanding() {
    let sum: Vec<String> = (0..15).map(|k| format!("i{k}")).collect();
    let factor = format!("({})", sum.join(" + "));
    let src = vec![factor; 15].join(" * ");
    let simplified = parse_expr(&src).expect("valid expression").simplify();
    let printed = simplified.to_string();
    assert!(
        printed.len() < 20 * src.len(),
        "{} characters from {}",
        printed.len(),
        src.len()
    );
}
