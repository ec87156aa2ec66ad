//! End-to-end models against onnxruntime: each model under `tests/onnx/e2e/`
//! (written by `tests/onnx/gen_e2e_models.py` with onnxruntime 1.32's outputs, so
//! no Python runs here) is imported once and run on every one of its data sets on
//! the graph interpreter (the oracle) and on the executor (Cranelift; compiled once,
//! every data set run on the same executable, so a symbolic batch takes several
//! sizes): every output is within rtol 1e-4 and atol 1e-4 of onnxruntime's. The
//! graph printed as text and parsed back (what `uop import` writes) runs on the
//! executor too and gives the same numbers bit for bit.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use uop_codegen::tensor::Tensor;
use uop_exec::{ExecOptions, compile_with};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{RunOptions, default_registry, run_with};
use uop_onnx::{HostData, HostTensor, ImportOptions, Imported, decode_tensor, import};

/// The relative and absolute tolerance against onnxruntime.
const RTOL: f64 = 1e-4;
const ATOL: f64 = 1e-4;

/// The committed models, each checked by a test below (a model added without one,
/// or gone missing, fails [`every_committed_model_is_tested`]).
const MODELS: &[&str] = &[
    "mlp_classifier",
    "resnet_blocks",
    "rnn_loop",
    "rnn_scan",
    "silero_vad",
    "transformer_block",
];

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/onnx/e2e")
}

/// A stored tensor and its name.
fn read_tensor(path: &Path) -> (String, HostTensor) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = decode_tensor(&bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let host = HostTensor::from_proto(&t).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (t.name.unwrap_or_default(), host)
}

/// One data set: the model's inputs by ONNX name and onnxruntime's outputs in order.
struct DataSet {
    inputs: HashMap<String, HostTensor>,
    outputs: Vec<HostTensor>,
}

fn data_sets(dir: &Path) -> Vec<DataSet> {
    let mut sets = Vec::new();
    loop {
        let ds = dir.join(format!("test_data_set_{}", sets.len()));
        if !ds.is_dir() {
            return sets;
        }
        let files = |kind: &str| {
            (0..)
                .map(|k| ds.join(format!("{kind}_{k}.pb")))
                .take_while(|p| p.exists())
                .map(|p| read_tensor(&p))
                .collect::<Vec<_>>()
        };
        let inputs = files("input").into_iter().collect();
        let outputs = files("output").into_iter().map(|(_, t)| t).collect();
        sets.push(DataSet { inputs, outputs });
    }
}

/// Checks `got` against onnxruntime's `want`, naming the first element off.
fn assert_close(what: &str, want: &HostTensor, got: &HostTensor) {
    assert_eq!(got.shape, want.shape, "{what}: shape");
    let (HostData::Float(w), HostData::Float(g)) = (&want.data, &got.data) else {
        assert_eq!(got.data, want.data, "{what}: integer data");
        return;
    };
    let mut worst = 0f64;
    for (i, (a, b)) in w.iter().zip(g).enumerate() {
        let err = (a - b).abs();
        assert!(
            err <= ATOL + RTOL * a.abs(),
            "{what}: element {i} is {b}, onnxruntime gives {a}"
        );
        worst = worst.max(err);
    }
    eprintln!(
        "  {what}: {} values, largest difference {worst:.2e}",
        w.len()
    );
}

fn run_interpreter(graph: &uop_graph::Graph, inputs: &[Tensor]) -> Vec<Tensor> {
    let options = RunOptions {
        max_iterations: Some(100_000),
    };
    run_with(graph, inputs, &HashMap::new(), &options)
        .expect("the interpreter runs")
        .outputs
}

fn compile(name: &str, graph: &uop_graph::Graph) -> uop_exec::Executable {
    let options = ExecOptions {
        max_iterations: Some(100_000),
        ..ExecOptions::default()
    };
    compile_with(graph, &options).unwrap_or_else(|e| panic!("{name}: compile: {e}"))
}

/// Runs model `name` on every stage and each of its `expected_sets` data sets.
fn check_model(name: &str, expected_sets: usize) {
    let dir = e2e_dir().join(name);
    let bytes = std::fs::read(dir.join("model.onnx")).expect("model.onnx reads");
    let model: Imported =
        import(&bytes, &ImportOptions::default()).unwrap_or_else(|e| panic!("{name}: import: {e}"));
    let text = print_graph(&model.graph);
    let reparsed = parse_graph(&text, default_registry())
        .unwrap_or_else(|e| panic!("{name}: the printed graph parses: {e}\n{text}"));
    let exe = compile(name, &model.graph);
    let exe_from_text = compile(name, &reparsed);
    let sets = data_sets(&dir);
    assert_eq!(sets.len(), expected_sets, "{name}: data sets");
    for (s, set) in sets.iter().enumerate() {
        let inputs = model
            .graph_inputs(&set.inputs)
            .unwrap_or_else(|e| panic!("{name}: inputs: {e}"));
        let interpreted = run_interpreter(&model.graph, &inputs);
        let executed = exe
            .run(&inputs)
            .unwrap_or_else(|e| panic!("{name}: executor: {e}"));
        assert_eq!(set.outputs.len(), model.outputs.len(), "{name}: outputs");
        for (engine, outputs) in [("interpreter", &interpreted), ("executor", &executed)] {
            for (k, got) in model.model_outputs(outputs).iter().enumerate() {
                let what = format!("{name} set {s} {engine} `{}`", model.outputs[k].onnx);
                assert_close(&what, &set.outputs[k], got);
            }
        }
        let from_text = exe_from_text
            .run(&inputs)
            .unwrap_or_else(|e| panic!("{name}: executor on the printed text: {e}"));
        assert_eq!(
            executed, from_text,
            "{name} set {s}: the graph read back from its text gives other numbers"
        );
    }
}

#[test]
fn every_committed_model_is_tested() {
    let mut found: Vec<String> = std::fs::read_dir(e2e_dir())
        .expect("tests/onnx/e2e lists")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, MODELS);
}

#[test]
fn transformer_block_matches_onnxruntime() {
    check_model("transformer_block", 2);
}

#[test]
fn rnn_scan_matches_onnxruntime() {
    check_model("rnn_scan", 1);
}

#[test]
fn rnn_loop_matches_onnxruntime() {
    check_model("rnn_loop", 1);
}

#[test]
fn resnet_blocks_matches_onnxruntime() {
    check_model("resnet_blocks", 1);
}

#[test]
fn mlp_classifier_matches_onnxruntime() {
    check_model("mlp_classifier", 2);
}

#[test]
fn silero_vad_matches_onnxruntime() {
    check_model("silero_vad", 2);
}
