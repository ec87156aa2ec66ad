//! Gradients of every macro op of the library against central finite differences.
//!
//! Each golden case (`tests/golden/cases/<group>/<case>`: a program calling the op
//! by name, its inputs as `.npy`) is converted to f64 and its gradient with respect
//! to every float input is checked by `grad::fd::check_gradient`: step 1e-6,
//! tolerance `1e-6 + 1e-5 * max(|analytic|, |numeric|)`, the loss `sum(s_y * y)`
//! over the float outputs with seeded random `s_y` in [-1, 1). At most
//! [`SAMPLE`] elements of each input are perturbed (seeded per case), which keeps
//! the whole sweep to a few seconds.
//!
//! The points are the golden inputs, moved off kinks and ties (see [`kink_free`]):
//! relu, abs, leaky_relu, clip, max / min reductions, max_pool, maximum / minimum,
//! comparisons, floor / ceil / sign and argmax / argmin are differentiable there, so
//! central differences are exact up to rounding.
//!
//! Ops whose outputs are integer-valued (argmax, argmin, comparisons, floor, ceil,
//! sign) must give exactly zero gradients; `one_hot` takes only an integer index,
//! which has no gradient at all. Gradients of gradients are checked through exp,
//! mul, div, softmax, layernorm, matmul and conv2d.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use uop::codegen::grad::fd::{FdOptions, check_gradient, check_second_order};
use uop::codegen::grad::{GradError, GradSpec, gradient, to_f64};
use uop::codegen::tensor::Tensor;
use uop::codegen::text::parse_program;
use uop::codegen::uop::{DType, NodeId, Program};
use uop::npy::read_npy;

/// Elements perturbed per input (all of them for smaller inputs).
const SAMPLE: usize = 6;

/// Ops whose outputs are integer-valued: their gradient is zero wherever it exists.
const ZERO_GRADIENT: &[&str] = &[
    "argmax", "argmin", "eq", "ne", "lt", "le", "gt", "ge", "floor", "ceil", "sign",
];

/// One golden case, ready to differentiate.
struct Case {
    /// `group/case`.
    name: String,
    program: Program,
    inputs: Vec<Tensor>,
    params: HashMap<String, i64>,
    /// The macro and micro ops the program calls, by name.
    calls: BTreeSet<String>,
}

impl Case {
    fn float_inputs(&self) -> Vec<NodeId> {
        self.program
            .inputs
            .iter()
            .copied()
            .filter(|i| self.program.node(*i).dtype.is_float())
            .collect()
    }

    /// A seed for the finite-difference check, fixed per case.
    fn seed(&self) -> u64 {
        self.name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
        })
    }
}

fn case_dirs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cases");
    let mut out = Vec::new();
    for group in std::fs::read_dir(&root).expect("tests/golden/cases exists") {
        let group = group.expect("directory entry").path();
        for case in std::fs::read_dir(&group).into_iter().flatten() {
            let case = case.expect("directory entry").path();
            if case.join("program.uop").exists() {
                out.push(case);
            }
        }
    }
    out.sort();
    out
}

/// Every golden case, with its inputs in f64 and moved off kinks.
fn cases() -> Vec<Case> {
    let registry = uop::ops::registry();
    case_dirs()
        .iter()
        .map(|dir| {
            let name = format!(
                "{}/{}",
                dir.parent()
                    .and_then(Path::file_name)
                    .unwrap_or_default()
                    .to_string_lossy(),
                dir.file_name().unwrap_or_default().to_string_lossy()
            );
            let src = std::fs::read_to_string(dir.join("program.uop")).expect("program.uop");
            let program = parse_program(&src, &registry).unwrap_or_else(|e| panic!("{name}: {e}"));
            let params = std::fs::read_to_string(dir.join("params.txt"))
                .map(|t| {
                    t.split_whitespace()
                        .filter_map(|kv| kv.split_once('='))
                        .map(|(k, v)| (k.to_string(), v.parse().expect("integer param")))
                        .collect()
                })
                .unwrap_or_default();
            let mut inputs: Vec<Tensor> = program
                .inputs
                .iter()
                .map(|i| {
                    let file = dir
                        .join("inputs")
                        .join(format!("{}.npy", program.node(*i).name));
                    let mut t = read_npy(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
                    if t.dtype.is_float() {
                        t.dtype = DType::F64;
                    }
                    t
                })
                .collect();
            kink_free(&mut inputs);
            let calls = called(&src);
            Case {
                name,
                program: to_f64(&program),
                inputs,
                params,
                calls,
            }
        })
        .collect()
}

/// The names of the ops `src` calls: every identifier followed by `(`.
fn called(src: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut word = String::new();
    for c in src.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        if c == '(' && !word.is_empty() {
            out.insert(word.clone());
        }
        word.clear();
    }
    out
}

/// Moves the float inputs of a case off kinks and ties, keeping every value's sign
/// and order: non-finite values (the `-inf` rows of a logsumexp case) become finite,
/// then, over all float elements of the case in ascending order, each value is
/// raised to at least `1e-5` above the previous one (so no two are closer than ten
/// steps: max / min / max_pool / maximum / comparisons see no ties, and clip
/// bounds given as tensors are not hit), and further by `2e-4` while it is within
/// `1e-4` of a multiple of 1/4 (zero for relu, abs, leaky_relu, sign; integers for
/// floor and ceil; the round clip bounds of the golden cases).
fn kink_free(inputs: &mut [Tensor]) {
    let mut all: Vec<(f64, usize, usize)> = Vec::new();
    for (t, tensor) in inputs.iter_mut().enumerate() {
        if !tensor.dtype.is_float() {
            continue;
        }
        for (k, v) in tensor.data.iter_mut().enumerate() {
            if !v.is_finite() {
                *v = -3.0 + 0.37 * k as f64;
            }
            all.push((*v, t, k));
        }
    }
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let near_kink = |v: f64| ((v * 4.0).round() / 4.0 - v).abs() < 1e-4;
    let mut previous = f64::NEG_INFINITY;
    for (v, t, k) in all {
        let mut moved = v.max(previous + 1e-5);
        while near_kink(moved) {
            moved += 2e-4;
        }
        inputs[t].data[k] = moved;
        previous = moved;
    }
}

fn options(case: &Case) -> FdOptions {
    FdOptions {
        seed: case.seed(),
        sample: Some(SAMPLE),
        ..FdOptions::default()
    }
}

#[test]
fn every_macro_op_gradient_matches_finite_differences() {
    let start = std::time::Instant::now();
    let cases = cases();
    let mut failures = Vec::new();
    let mut checked_ops: BTreeSet<String> = BTreeSet::new();
    let mut elements = 0;
    let mut worst = (0.0f64, String::new());
    for case in &cases {
        let wrt = case.float_inputs();
        if wrt.is_empty() {
            continue;
        }
        match check_gradient(
            &case.program,
            &wrt,
            &[],
            &case.inputs,
            &case.params,
            &options(case),
        ) {
            Ok(report) => {
                elements += report.checked;
                checked_ops.extend(case.calls.iter().cloned());
                if report.max_error > worst.0 {
                    worst = (report.max_error, case.name.clone());
                }
            }
            Err(e) => failures.push(format!("{}: {e}", case.name)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // one_hot's only operand is an i32 index: see `integer_inputs_get_no_gradient`.
    let unchecked: Vec<String> = uop::ops::registry()
        .iter()
        .map(|op| op.name.clone())
        .filter(|op| op != "one_hot" && !checked_ops.contains(op))
        .collect();
    assert!(
        unchecked.is_empty(),
        "ops without a gradient check: {unchecked:?}"
    );
    eprintln!(
        "{} cases, {elements} elements, largest error {:e} ({}), {:?}",
        cases.len(),
        worst.0,
        worst.1,
        start.elapsed()
    );
}

/// The gradient of `program` with respect to its float inputs is exactly zero
/// (every float output seeded with ones) and finite differences agree.
fn assert_zero_gradient(name: &str, program: &Program, inputs: &[Tensor], seed: u64) {
    let params = HashMap::new();
    let wrt: Vec<NodeId> = program
        .inputs
        .iter()
        .copied()
        .filter(|i| program.node(*i).dtype.is_float())
        .collect();
    let outputs = uop::codegen::interp::run(program, inputs, &params).expect("forward");
    let (seeds, ones): (Vec<NodeId>, Vec<Tensor>) = program
        .outputs
        .iter()
        .zip(outputs)
        .filter(|(o, _)| program.node(**o).dtype.is_float())
        .map(|(o, t)| {
            let ones = vec![1.0; t.len()];
            (*o, Tensor { data: ones, ..t })
        })
        .unzip();
    let spec = GradSpec {
        seeds,
        wrt: wrt.clone(),
        supplied: vec![],
    };
    let grad = gradient(program, &spec).expect("gradient");
    for g in grad
        .run(program, inputs, &ones, &params)
        .expect("gradient run")
    {
        assert!(
            g.data.iter().all(|v| *v == 0.0),
            "{name}: nonzero gradient {:?}",
            g.data
        );
    }
    let options = FdOptions {
        seed,
        sample: Some(SAMPLE),
        ..FdOptions::default()
    };
    check_gradient(program, &wrt, &[], inputs, &params, &options)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
}

#[test]
fn integer_valued_outputs_have_zero_gradients() {
    let all = cases();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for case in &all {
        let only_zero = case
            .calls
            .iter()
            .all(|c| ZERO_GRADIENT.contains(&c.as_str()));
        if case.float_inputs().is_empty() || !only_zero {
            continue;
        }
        assert_zero_gradient(&case.name, &case.program, &case.inputs, case.seed());
        seen.extend(case.calls.iter().cloned());
    }
    // floor and ceil appear in the golden data only next to differentiable unary
    // ops; here they are alone, on the same input.
    let unary = all
        .iter()
        .find(|c| c.name == "elementwise/unary_micro_ops")
        .expect("the unary_micro_ops case");
    let src = "input x: f32[2, 7]\nf = floor(x)\nc = ceil(x)\noutput f, c\n";
    let program = to_f64(&parse_program(src, &uop::ops::registry()).expect("floor / ceil program"));
    assert_zero_gradient("floor, ceil", &program, &unary.inputs, 7);
    seen.extend(called(src));
    let missing: Vec<&&str> = ZERO_GRADIENT
        .iter()
        .filter(|op| !seen.contains(**op))
        .collect();
    assert!(missing.is_empty(), "no zero-gradient check of {missing:?}");
}

#[test]
fn integer_inputs_get_no_gradient() {
    let case = cases()
        .into_iter()
        .find(|c| c.name == "indexing/one_hot_matrix")
        .expect("the one_hot_matrix case");
    let index = case.program.inputs[0];
    let spec = GradSpec {
        seeds: case.program.outputs.clone(),
        wrt: vec![index],
        supplied: vec![],
    };
    assert_eq!(
        gradient(&case.program, &spec).map(|_| ()),
        Err(GradError::NotFloat {
            name: "index".into(),
            dtype: DType::I32
        })
    );
}

#[test]
fn second_order_through_representative_ops() {
    let start = std::time::Instant::now();
    let all = cases();
    // exp is a micro op: its case is written here, on a golden input.
    let unary = all
        .iter()
        .find(|c| c.name == "elementwise/unary_micro_ops")
        .expect("the unary_micro_ops case");
    let src = "input x: f32[2, 7]\ny = exp(x)\noutput y\n";
    let exp = Case {
        name: "exp".into(),
        program: to_f64(&parse_program(src, &uop::ops::registry()).expect("exp program")),
        inputs: unary.inputs.clone(),
        params: HashMap::new(),
        calls: called(src),
    };
    let mut checks: Vec<&Case> = vec![&exp];
    for op in ["mul", "div", "softmax", "layernorm", "matmul", "conv2d"] {
        let before = checks.len();
        checks.extend(all.iter().filter(|c| c.calls.contains(op)));
        assert!(checks.len() > before, "no golden case calls {op}");
    }
    let mut elements = 0;
    for case in checks {
        let report = check_second_order(
            &case.program,
            &case.float_inputs(),
            &case.inputs,
            &case.params,
            &options(case),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", case.name));
        elements += report.checked;
    }
    eprintln!("second order: {elements} elements, {:?}", start.elapsed());
}

/// The gradient of `op(x)` at the points `x`, all seeds 1, by the reference
/// interpreter.
fn gradient_at(op: &str, x: &[f64]) -> Vec<f64> {
    let src = format!("input x: f64[N]\ny = {op}\noutput y\n");
    let forward = parse_program(&src, &uop::ops::registry()).expect("parses");
    let spec = GradSpec {
        seeds: forward.outputs.clone(),
        wrt: forward.inputs.clone(),
        supplied: vec![],
    };
    let grad = gradient(&forward, &spec).expect("a gradient");
    let input = Tensor::new(DType::F64, vec![x.len()], x.to_vec()).expect("consistent");
    let seed = Tensor::new(DType::F64, vec![x.len()], vec![1.0; x.len()]).expect("consistent");
    let params = HashMap::new();
    grad.run(&forward, &[input], &[seed], &params)
        .expect("runs")[0]
        .data
        .clone()
}

/// At a kink the gradient is torch's: relu'(0) = 0, leaky_relu'(0) = the slope,
/// abs'(0) = 0, and `clip` (torch's `clamp`) passes it at a bound: 1.
#[test]
fn kinks_take_torchs_gradient() {
    assert_eq!(gradient_at("relu(x)", &[-1.0, 0.0, 1.0]), [0.0, 0.0, 1.0]);
    assert_eq!(
        gradient_at("leaky_relu(x, alpha=0.25)", &[-1.0, 0.0, 1.0]),
        [0.25, 0.25, 1.0]
    );
    assert_eq!(gradient_at("abs(x)", &[-2.0, 0.0, 3.0]), [-1.0, 0.0, 1.0]);
    assert_eq!(
        gradient_at("clip(x, min=-1.0, max=1.0)", &[-2.0, -1.0, 0.0, 1.0, 2.0]),
        [0.0, 1.0, 1.0, 1.0, 0.0]
    );
}
