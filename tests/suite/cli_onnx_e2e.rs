//! The end-to-end ONNX models (`tests/onnx/e2e/`, with onnxruntime 1.32's outputs)
//! from the command line, as a user runs them: `uop run MODEL.onnx --input
//! NAME=FILE.npy ...` gives onnxruntime's outputs within rtol 1e-4 and atol 1e-4,
//! and `uop import MODEL.onnx -o MODEL.uop` then `uop run MODEL.uop` (inputs under
//! the graph's names and types) gives the same numbers bit for bit. The in-process
//! checks of the same models (interpreter, executor, every data set) are
//! `onnx/tests/e2e.rs`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::cli_onnx_node::{read_output, read_pb, write_host};
use crate::common::{self, scratch, stderr};
use uop::npy::{read_npy_as, write_npy};
use uop::onnx::{HostData, HostTensor, ImportOptions, decode_model, import};

fn e2e_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/e2e")
}

/// Runs `uop` in `dir`, failing with its first error line.
fn uop(dir: &Path, args: &[String]) {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = common::uop_in(dir, &args);
    assert!(
        out.status.success(),
        "uop {}: {}",
        args.join(" "),
        stderr(&out)
    );
}

/// Within rtol 1e-4 + atol 1e-4 of onnxruntime's values.
fn assert_close(what: &str, want: &HostTensor, shape: &[usize], got: &HostData) {
    assert_eq!(want.shape, shape, "{what}: shape");
    let (HostData::Float(w), HostData::Float(g)) = (&want.data, got) else {
        panic!("{what}: the end-to-end models have float outputs");
    };
    for (i, (a, b)) in w.iter().zip(g).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 + 1e-4 * a.abs(),
            "{what}: element {i} is {b}, onnxruntime gives {a}"
        );
    }
}

/// Model `name` from `.onnx` and from its imported text, on data set 0.
fn check(name: &str) {
    let case = e2e_dir().join(name);
    let model_path = case.join("model.onnx");
    let bytes = std::fs::read(&model_path).expect("model.onnx");
    let proto = decode_model(&bytes).expect("decodes");
    let graph = proto.graph.as_ref().expect("a graph");
    let data = case.join("test_data_set_0");
    let dir = scratch(&format!("onnx-e2e-{name}"));
    // 1. `uop run MODEL.onnx` with the inputs under their ONNX names and types.
    let mut run = vec!["run".to_string(), model_path.display().to_string()];
    let mut given = HashMap::new();
    for (k, vi) in graph.input.iter().enumerate() {
        let t = read_pb(&data.join(format!("input_{k}.pb"))).expect("input .pb");
        let file = dir.join(format!("input_{k}.npy"));
        write_host(&file, &t).expect("writes the .npy");
        let onnx = vi.name.clone().unwrap_or_default();
        run.extend(["--input".into(), format!("{onnx}={}", file.display())]);
        given.insert(onnx, t);
    }
    let mut wants = Vec::new();
    for (k, vi) in graph.output.iter().enumerate() {
        let want = read_pb(&data.join(format!("output_{k}.pb"))).expect("output .pb");
        let file = dir.join(format!("onnx_{k}.npy"));
        let onnx = vi.name.clone().unwrap_or_default();
        run.extend(["--output".into(), format!("{onnx}={}", file.display())]);
        wants.push((onnx, want, file));
    }
    uop(&dir, &run);
    for (onnx, want, file) in &wants {
        let (shape, got) = read_output(file, want.elem).expect("reads the output");
        assert_close(&format!("{name} `{onnx}`"), want, &shape, &got);
    }
    // 2. `uop import`, then `uop run MODEL.uop` with the inputs as the graph
    // declares them (uop names; an integer input held as data in the float type).
    let text = dir.join("model.uop");
    uop(
        &dir,
        &[
            "import".into(),
            model_path.display().to_string(),
            "-o".into(),
            text.display().to_string(),
        ],
    );
    let imported = import(&bytes, &ImportOptions::default()).expect("imports");
    let tensors = imported.graph_inputs(&given).expect("converts the inputs");
    let mut run = vec!["run".to_string(), text.display().to_string()];
    for (k, (port, t)) in imported.inputs.iter().zip(&tensors).enumerate() {
        let file = dir.join(format!("graph_input_{k}.npy"));
        write_npy(&file, t).expect("writes the .npy");
        run.extend(["--input".into(), format!("{}={}", port.uop, file.display())]);
    }
    for (k, port) in imported.outputs.iter().enumerate() {
        let file = dir.join(format!("text_{k}.npy"));
        run.extend([
            "--output".into(),
            format!("{}={}", port.uop, file.display()),
        ]);
    }
    uop(&dir, &run);
    for (k, (onnx, _, from_onnx)) in wants.iter().enumerate() {
        let dtype = imported.graph.dtype;
        let a = read_npy_as(from_onnx, dtype).expect("reads");
        let b = read_npy_as(&dir.join(format!("text_{k}.npy")), dtype).expect("reads");
        assert_eq!(
            (a.shape, a.data),
            (b.shape, b.data),
            "{name} `{onnx}`: `uop import` then `uop run` gives other numbers"
        );
    }
}

#[test]
fn the_end_to_end_models_match_onnxruntime_from_the_command_line() {
    let mut names: Vec<String> = std::fs::read_dir(e2e_dir())
        .expect("tests/onnx/e2e")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.len() >= 6,
        "{} end-to-end models committed",
        names.len()
    );
    for name in &names {
        check(name);
    }
}
