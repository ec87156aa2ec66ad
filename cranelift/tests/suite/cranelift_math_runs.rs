//! Math over runs of lanes (`plan::math_runs`, JIT only): element-wise loops and
//! softmax rows calling `exp`, `log`, `tanh`, `sigmoid` and `erf`, against the
//! interpreter at lengths below, at and around the 256-lane run, so whole runs,
//! the vectors after the last run and the scalar tail all run.
//! `cranelift_contraction::every_level_of_the_runtime_code_matches_the_interpreter`
//! runs these again under `UOP_CPU=avx2` and `UOP_CPU=baseline`.

use std::collections::HashMap;

use uop_codegen::interp;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::{Registry, parse_program};
use uop_codegen::uop::{DType, Program};
use uop_cranelift::{self as cranelift, Options};

fn parse(src: &str) -> Program {
    parse_program(src, &Registry::new()).unwrap_or_else(|e| panic!("{e}\n{src}"))
}

/// Values in [-6, 6), positive ones only for `log`.
fn data(n: usize, seed: usize, positive: bool) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let x = ((i * 7919 + seed * 104_729) % 1200) as f64 / 100.0 - 6.0;
            if positive { x.abs() + 1e-3 } else { x }
        })
        .collect()
}

/// Runs `src` on inputs of `shapes` through the interpreter and the JIT; every
/// output agrees within 1e-6 of the larger of 1 and the value (the polynomials'
/// few ulps, grown through a sum of a softmax row).
fn check(src: &str, shapes: &[Vec<usize>], positive: bool) {
    let program = parse(src);
    let inputs: Vec<Tensor> = shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let n = shape.iter().product();
            Tensor::new(DType::F32, shape.clone(), data(n, k, positive)).expect("sized")
        })
        .collect();
    let params = HashMap::new();
    let expected = interp::run(&program, &inputs, &params).expect("interpreter runs");
    let kernel = cranelift::compile_program(&program, &Options::default()).expect("compiles");
    let got = kernel.run(&inputs, &params).expect("kernel runs");
    for (e, g) in expected.iter().zip(&got) {
        assert_eq!(e.shape, g.shape);
        for (i, (a, b)) in e.data.iter().zip(&g.data).enumerate() {
            assert!(
                (a.is_nan() && b.is_nan()) || (a - b).abs() <= 1e-6 * a.abs().max(1.0),
                "{src}\nshapes {shapes:?}, element {i}: interpreter {a} vs cranelift {b}"
            );
        }
    }
}

/// Lengths around a run of 256 lanes and its vectors of 4.
const LENGTHS: [usize; 8] = [3, 255, 256, 257, 259, 512, 700, 1030];

const SOFTMAX: &str = "\
input x: f32[B, N]
m = reduce_max(x, [1])
e = exp(sub(x, reindex(m, [B, N], [i0, 0])))
s = reduce_sum(e, [1])
y = div(e, reindex(s, [B, N], [i0, 0]))
output y
";

/// gelu through tanh, as the bench's chain spells it with sigmoid.
const GELU: &str = "\
input x: f32[N]
u = add(mul(x, 0.8), 0.1)
inner = mul(add(u, mul(mul(mul(u, u), u), 0.044715)), 0.7978845608)
y = mul(mul(u, 0.5), add(tanh(inner), 1.0))
output y
";

#[test]
fn math_runs_match_the_interpreter_at_lengths_around_a_run() {
    for f in ["exp", "tanh", "sigmoid", "erf", "log"] {
        let src = format!("input x: f32[N]\ny = mul({f}(mul(x, 0.5)), {f}(x))\noutput y\n");
        for n in LENGTHS {
            check(&src, &[vec![n]], f == "log");
        }
    }
    for n in LENGTHS {
        check(GELU, &[vec![n]], false);
        check(SOFTMAX, &[vec![3, n]], false);
    }
    // A math call inside another's argument: its buffer feeds the outer call.
    let nested = "input x: f32[N]\ny = tanh(add(exp(mul(x, 0.1)), x))\noutput y\n";
    for n in LENGTHS {
        check(nested, &[vec![n]], false);
    }
}

#[test]
fn the_jit_calls_the_host_levels_math_and_an_object_file_none() {
    let symbol = uop_runtime::math_runs::host_level().symbol;
    for src in [GELU, SOFTMAX] {
        let optimized = cranelift::optimized(&parse(src)).expect("optimizes");
        let jit = cranelift::emit_jit_clif(&optimized, &Options::default()).expect("translates");
        assert!(jit.contains(symbol), "{jit}");
        let object = cranelift::emit_clif(&optimized, "k", &Options::default()).expect("emits");
        assert!(!object.contains("uop_vmath"), "{object}");
    }
    // f64 programs call the interpreter's functions, lane by lane, as before.
    let optimized = cranelift::optimized(&parse(&GELU.replace("f32", "f64"))).expect("optimizes");
    let jit = cranelift::emit_jit_clif(&optimized, &Options::default()).expect("translates");
    assert!(!jit.contains("uop_vmath"), "{jit}");
}
