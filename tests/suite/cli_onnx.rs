//! ONNX models on the command line: `uop run`, `bench --graph`, `import`, `print`,
//! `grad`, `emit` and `ops --onnx` take `.onnx` files and speak ONNX names (`input.1`,
//! `onnx::MatMul_12`) and types; bad input is a clear `error:` with no file left
//! behind. The model is `examples/onnx/mlp.onnx` (`examples/onnx/gen_models.py`):
//! `probabilities = softmax(logits)`, `logits = relu(input.1 @ W1 + b1) @ W2 + b2`
//! over a symbolic `batch_size`.

use std::path::{Path, PathBuf};

use crate::common;
use common::{scratch, stderr, stdout, uop};
use uop::codegen::uop::DType;
use uop::npy::read_npy;

const MLP: &str = "examples/onnx/mlp.onnx";
const MLP_INPUT: &str = "examples/onnx/mlp_input.npy";

/// numpy's result on `mlp_input.npy` (printed by the generator).
const MLP_OUTPUT: [f64; 6] = [
    0.23100817, 0.55009276, 0.21889903, 0.27339864, 0.42485625, 0.3017451,
];

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn node_case(name: &str) -> PathBuf {
    root().join("tests/onnx/node").join(name)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn ok(o: &std::process::Output) {
    assert!(o.status.success(), "{}", stderr(o));
}

/// The first line of stderr of a failed command, checked to be an `error:` with
/// exit code 1.
fn error_line(o: &std::process::Output) -> String {
    assert_eq!(o.status.code(), Some(1), "{}", stderr(o));
    let e = stderr(o);
    assert!(e.starts_with("error: "), "{e}");
    e.lines().next().unwrap_or_default().to_string()
}

#[test]
fn run_takes_onnx_names_and_gives_numpys_result() {
    let dir = scratch("onnx-run-mlp");
    let out = dir.join("p.npy");
    let o = uop(&[
        "run",
        MLP,
        "--input",
        &format!("input.1={MLP_INPUT}"),
        "--output",
        &format!("probabilities={}", s(&out)),
    ]);
    ok(&o);
    let p = read_npy(&out).expect("the output file");
    assert_eq!(p.shape, [2, 3]);
    for (got, want) in p.data.iter().zip(MLP_OUTPUT) {
        assert!((got - want).abs() < 1e-6, "{got} against {want}");
    }
    // Printed under its ONNX name when not written.
    let o = uop(&["run", MLP, "--input", &format!("input.1={MLP_INPUT}")]);
    ok(&o);
    assert!(
        stdout(&o).starts_with("probabilities: f32[2, 3]"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn random_inputs_take_the_symbolic_batch_by_its_onnx_name() {
    let o = uop(&["run", MLP, "--random", "1", "--dim", "batch_size=5"]);
    ok(&o);
    assert!(
        stdout(&o).starts_with("probabilities: f32[5, 3]"),
        "{}",
        stdout(&o)
    );
    let o = uop(&["run", MLP, "--random", "1"]);
    assert!(
        error_line(&o).contains("--dim batch_size=SIZE"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_input_needed_at_import_is_bound_from_the_data_given() {
    let case = node_case("test_reshape_reordered_all_dims");
    let dir = scratch("onnx-run-reshape");
    let data = convert_inputs(&case, &dir);
    let o = uop(&[
        "run",
        &s(&case.join("model.onnx")),
        "--input",
        &format!("data={}", data[0]),
        "--input",
        &format!("shape={}", data[1]),
    ]);
    ok(&o);
    assert!(
        stdout(&o).starts_with("reshaped: f32[4, 2, 3]"),
        "{}",
        stdout(&o)
    );
    let o = uop(&[
        "run",
        &s(&case.join("model.onnx")),
        "--input",
        &format!("data={}", data[0]),
    ]);
    let e = error_line(&o);
    assert!(
        e.contains("input `shape` must be known when the model is imported")
            && e.contains("--input shape=FILE.npy"),
        "{e}"
    );
}

#[test]
fn bench_times_a_model_with_the_usual_json_keys() {
    let o = uop(&[
        "bench",
        "--graph",
        MLP,
        "--dim",
        "batch_size=4",
        "--reps",
        "2",
        "--json",
    ]);
    ok(&o);
    let line = stdout(&o);
    for key in [
        "\"file\"",
        "\"backend\"",
        "\"ms\"",
        "\"first_ms\"",
        "\"reps\"",
        "\"kernels\"",
        "\"dims\": {\"batch_size\": 4}",
    ] {
        assert!(line.contains(key), "{key} in {line}");
    }
}

#[test]
fn ops_onnx_lists_the_importers_registry() {
    let o = uop(&["ops", "--onnx"]);
    ok(&o);
    let out = stdout(&o);
    let n = uop::onnx::registry::OPS.len();
    assert!(out.starts_with(&format!("ONNX ops ({n} of {n};")), "{out}");
    assert_eq!(out.lines().count(), n + 1);
    assert!(
        out.contains("  Loop ") && out.contains("opsets 11-28"),
        "{out}"
    );
    let o = uop(&["ops", "--onnx", "reshape"]);
    ok(&o);
    assert!(stdout(&o).starts_with("ONNX ops (1 of"), "{}", stdout(&o));
}

#[test]
fn print_takes_a_model_at_every_graph_stage() {
    for stage in [
        "graph",
        "hierarchy",
        "prepared",
        "kernels",
        "schedule",
        "partitions",
        "grad",
    ] {
        let o = uop(&["print", MLP, "--stage", stage]);
        ok(&o);
        assert!(!stdout(&o).is_empty(), "--stage {stage}");
    }
    let o = uop(&["print", MLP, "--stage", "memory", "--dim", "batch_size=8"]);
    ok(&o);
    let o = uop(&["print", MLP, "--stage", "graph"]);
    assert!(
        stdout(&o).contains("input input_1: f32[batch_size, 4]"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn emit_writes_a_models_rust_module() {
    let o = uop(&["emit", MLP, "--target", "rust"]);
    ok(&o);
    assert!(stdout(&o).contains("pub fn "), "{}", stdout(&o));
}

#[test]
fn grad_differentiates_inputs_and_weights_by_onnx_name() {
    let dir = scratch("onnx-grad");
    let seed = dir.join("seed.npy");
    // d/dW of probabilities[:, 0]: a seed picking the first class.
    let t = uop::codegen::tensor::Tensor::new(
        DType::F32,
        vec![2, 3],
        vec![1.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    )
    .unwrap();
    common::write(&dir, "seed.npy", &t);
    let gw = dir.join("gw.npy");
    let o = uop(&[
        "grad",
        MLP,
        "--input",
        &format!("input.1={MLP_INPUT}"),
        "--seed",
        &format!("probabilities={}", s(&seed)),
        "--grad",
        &format!("onnx::MatMul_13={}", s(&gw)),
        "--grad",
        "fc2.bias",
        "--grad",
        "input.1",
    ]);
    ok(&o);
    let w = read_npy(&gw).expect("the weight's gradient");
    assert_eq!(w.shape, [8, 3]);
    assert!(w.data.iter().any(|&v| v != 0.0));
    let out = stdout(&o);
    assert!(out.contains("g_fc2.bias: f32[3]"), "{out}");
    assert!(out.contains("g_input.1: f32[2, 4]"), "{out}");
    // d softmax_0 / d b2 = p0 (e0 - p): for each row, p0 (1 - p0) on class 0; the
    // logits, seeded with ones, add 1 per row.
    let b = out
        .split("g_fc2.bias: f32[3]\n")
        .nth(1)
        .and_then(|r| r.lines().next())
        .unwrap_or_default()
        .trim_matches(['[', ']'])
        .split(',')
        .map(|v| v.trim().parse::<f64>().unwrap())
        .collect::<Vec<_>>();
    let (p0, q0) = (MLP_OUTPUT[0], MLP_OUTPUT[3]);
    let want = p0 * (1.0 - p0) + q0 * (1.0 - q0) + 2.0;
    assert!((b[0] - want).abs() < 1e-5, "{} against {want}", b[0]);
    let o = uop(&[
        "grad",
        MLP,
        "--random",
        "1",
        "--dim",
        "batch_size=1",
        "--grad",
        "nope",
    ]);
    assert!(error_line(&o).contains("--grad nope"), "{}", stderr(&o));
}

/// Writes the `.npy` files of a node test's inputs to `dir`; their paths.
fn convert_inputs(case: &Path, dir: &Path) -> Vec<String> {
    let bytes = std::fs::read(case.join("model.onnx")).unwrap();
    let model = uop::onnx::decode_model(&bytes).unwrap();
    let graph = model.graph.unwrap();
    (0..graph.input.len())
        .map(|k| {
            let pb = std::fs::read(case.join(format!("test_data_set_0/input_{k}.pb"))).unwrap();
            let h =
                uop::onnx::HostTensor::from_proto(&uop::onnx::decode_tensor(&pb).unwrap()).unwrap();
            let (dtype, data) = match &h.data {
                uop::onnx::HostData::Float(v) => (DType::F32, v.clone()),
                uop::onnx::HostData::Int(v) => (DType::I32, v.iter().map(|&x| x as f64).collect()),
            };
            let t = uop::codegen::tensor::Tensor {
                dtype,
                shape: h.shape,
                data,
            };
            common::write(dir, &format!("input_{k}.npy"), &t)
        })
        .collect()
}

/// The renames the header of `uop import`'s text lists: ONNX name to uop name.
fn renames(text: &str) -> Vec<(String, String)> {
    let Some(line) = text
        .lines()
        .find_map(|l| l.strip_prefix("# ONNX names renamed in this text: "))
    else {
        return Vec::new();
    };
    line.split("; ")
        .filter_map(|pair| pair.split_once(" -> "))
        .map(|(a, b)| (a.trim_matches('"').to_string(), b.to_string()))
        .collect()
}

/// `uop import` → `uop run MODEL.uop` gives what `uop run MODEL.onnx` gives, on
/// `model` with the inputs `inputs` (ONNX names and files); `bound` are given to
/// `import` instead, as constants.
fn round_trip(tag: &str, model: &Path, inputs: &[(String, String)], bound: &[&str]) {
    let dir = scratch(&format!("onnx-import-{tag}"));
    let text_file = dir.join("model.uop");
    let mut import = vec!["import".to_string(), s(model), "-o".into(), s(&text_file)];
    for (name, file) in inputs.iter().filter(|(n, _)| bound.contains(&n.as_str())) {
        import.extend(["--input".into(), format!("{name}={file}")]);
    }
    let o = uop(&import.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&o);
    let text = std::fs::read_to_string(&text_file).expect("the text is written");
    let renamed = renames(&text);
    let uop_name = |n: &str| {
        renamed
            .iter()
            .find(|(a, _)| a == n)
            .map_or(n.to_string(), |(_, b)| b.clone())
    };
    let mut from_model = vec!["run".to_string(), s(model)];
    let mut from_text = vec!["run".to_string(), s(&text_file)];
    for (name, file) in inputs {
        from_model.extend(["--input".into(), format!("{name}={file}")]);
        if !bound.contains(&name.as_str()) {
            from_text.extend(["--input".into(), format!("{}={file}", uop_name(name))]);
        }
    }
    let a = uop(&from_model.iter().map(String::as_str).collect::<Vec<_>>());
    let b = uop(&from_text.iter().map(String::as_str).collect::<Vec<_>>());
    ok(&a);
    ok(&b);
    // The printed outputs: the same values under the same (or renamed) names.
    let strip = |t: String| -> Vec<String> {
        t.lines()
            .map(|l| match l.split_once(": f") {
                Some((_, rest)) => format!("f{rest}"),
                None => l.to_string(),
            })
            .collect()
    };
    assert_eq!(
        strip(stdout(&a)),
        strip(stdout(&b)),
        "{tag}: the model and its text disagree\n{text}"
    );
}

#[test]
fn import_writes_text_that_runs_to_the_same_results() {
    let mlp_inputs = [("input.1".to_string(), MLP_INPUT.to_string())];
    round_trip("mlp", &root().join(MLP), &mlp_inputs, &[]);
    for (case, bound) in [
        ("test_add", &[][..]),
        ("test_reshape_reordered_all_dims", &["shape"][..]),
        ("test_slice", &["starts", "ends", "axes", "steps"][..]),
        ("test_loop11", &["trip_count", "cond"][..]),
        ("test_scan9_sum", &[][..]),
        ("test_gemm_default_single_elem_vector_bias", &[][..]),
        ("test_layer_normalization_2d_axis0", &[][..]),
    ] {
        let dir = node_case(case);
        let scratch_dir = scratch(&format!("onnx-import-data-{case}"));
        let files = convert_inputs(&dir, &scratch_dir);
        let bytes = std::fs::read(dir.join("model.onnx")).unwrap();
        let model = uop::onnx::decode_model(&bytes).unwrap();
        let names: Vec<(String, String)> = model
            .graph
            .unwrap()
            .input
            .iter()
            .map(|vi| vi.name.clone().unwrap_or_default())
            .zip(files)
            .collect();
        round_trip(case, &dir.join("model.onnx"), &names, bound);
    }
}

/// Runs `args` expecting an error that mentions every one of `words`, with
/// `written` not created.
fn fails_without_output(args: &[&str], words: &[&str], written: &Path) {
    let o = uop(args);
    let e = error_line(&o);
    for w in words {
        assert!(e.contains(w), "`{w}` in: {e}");
    }
    assert!(!written.exists(), "{} is left behind", written.display());
}

#[test]
fn bad_models_and_data_are_clear_errors_and_leave_no_file() {
    let dir = scratch("onnx-errors");
    let out = dir.join("out.npy");
    let output = format!("probabilities={}", s(&out));
    let input = format!("input.1={MLP_INPUT}");
    let bytes = std::fs::read(root().join(MLP)).unwrap();

    // A truncated model.
    let cut = dir.join("cut.onnx");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    fails_without_output(
        &["run", &s(&cut), "--input", &input, "--output", &output],
        &["cut.onnx"],
        &out,
    );
    let text = dir.join("cut.uop");
    fails_without_output(&["import", &s(&cut), "-o", &s(&text)], &["cut.onnx"], &text);

    // An op the importer does not know: `Softmax` renamed in place.
    let mut odd = bytes.clone();
    // The op type is the string of length 7 (the node's name is `/Softmax`).
    let at = odd
        .windows(8)
        .position(|w| w == b"\x07Softmax")
        .expect("the model has a Softmax");
    odd[at + 1..at + 8].copy_from_slice(b"Softmix");
    let odd_path = dir.join("odd.onnx");
    std::fs::write(&odd_path, &odd).unwrap();
    fails_without_output(
        &["run", &s(&odd_path), "--input", &input, "--output", &output],
        &["unsupported op Softmix", "/Softmax", "opset 17"],
        &out,
    );

    // A .npy of the wrong dtype.
    let ints = uop::codegen::tensor::Tensor::new(DType::I32, vec![2, 4], vec![1.0; 8]).unwrap();
    let ints = common::write(&dir, "ints.npy", &ints);
    fails_without_output(
        &[
            "run",
            MLP,
            "--input",
            &format!("input.1={ints}"),
            "--output",
            &output,
        ],
        &["input `input.1` is FLOAT", "holds int32"],
        &out,
    );

    // Data whose shape is not the model's.
    let wide = uop::codegen::tensor::Tensor::new(DType::F32, vec![2, 5], vec![0.5; 10]).unwrap();
    let wide = common::write(&dir, "wide.npy", &wide);
    fails_without_output(
        &[
            "run",
            MLP,
            "--input",
            &format!("input.1={wide}"),
            "--output",
            &output,
        ],
        &["input `input.1` has shape [2, 5]", "[batch_size, 4]"],
        &out,
    );

    // A missing input.
    fails_without_output(
        &["run", MLP, "--output", &output],
        &["input `input.1` is not given", "--input input.1=FILE.npy"],
        &out,
    );

    // An input the model needs at import, not given.
    let case = node_case("test_reshape_reordered_all_dims");
    let data = convert_inputs(&case, &dir);
    let reshaped = format!("reshaped={}", s(&out));
    fails_without_output(
        &[
            "run",
            &s(&case.join("model.onnx")),
            "--input",
            &format!("data={}", data[0]),
            "--output",
            &reshaped,
        ],
        &["input `shape` must be known when the model is imported"],
        &out,
    );
}

#[test]
fn a_dimension_uops_text_cannot_spell_is_given_by_its_onnx_name() {
    let dir = scratch("onnx-dim-names");
    // `batch_size` renamed in place to a name of the same length (the protobuf stays
    // valid): `batch.size` is `batch_size` in the graph.
    let mut odd = std::fs::read(root().join(MLP)).unwrap();
    assert!(odd.windows(10).any(|w| w == b"batch_size"));
    while let Some(at) = odd.windows(10).position(|w| w == b"batch_size") {
        odd[at..at + 10].copy_from_slice(b"batch.size");
    }
    let model = dir.join("dotted.onnx");
    std::fs::write(&model, &odd).unwrap();
    let o = uop(&["run", &s(&model), "--random", "1", "--dim", "batch.size=3"]);
    ok(&o);
    assert!(
        stdout(&o).starts_with("probabilities: f32[3, 3]"),
        "{}",
        stdout(&o)
    );
    let o = uop(&[
        "print",
        &s(&model),
        "--stage",
        "memory",
        "--dim",
        "batch.size=64",
    ]);
    ok(&o);
}
