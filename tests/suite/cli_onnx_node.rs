//! The ONNX backend node tests (`tests/onnx/node/`, onnx 1.23.2) checked from the
//! command line, as a user runs a model: each case's `.pb` inputs converted to `.npy`
//! files in a scratch directory (numpy's `float32`, `float64`, `int64`, `int32` and
//! `bool`), `uop run model.onnx --input NAME=FILE.npy ... --output NAME=FILE.npy`
//! run, and every output file compared with the stored one: floats within rtol 1e-3
//! and atol 1e-5 (ONNX's runner), integers and bools exactly, shapes exactly. Inputs
//! the model needs at import (a Reshape's shape, a Slice's starts) are given like any
//! other and bound by `uop run`.
//!
//! Every committed case runs, one process each, on as many threads as there are
//! cores: about 4 s of CPU for the 534 cases (a process takes a few milliseconds;
//! `docs/onnx.md` has the count and the cost). A case `tests/onnx/node.txt` lists
//! that fails from the command line fails the test.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::common;
use common::{scratch, stderr};
use uop::codegen::tensor::Tensor;
use uop::codegen::uop::DType;
use uop::npy::{read_npy_as, read_npy_bool, write_npy, write_npy_bytes_wide};
use uop::onnx::{ElemType, HostData, HostTensor, decode_model, decode_tensor};

/// The control-flow cases the issue names: each must pass.
const CONTROL_FLOW: [&str; 6] = [
    "test_if",
    "test_loop11",
    "test_scan_sum",
    "test_scan9_sum",
    "test_scan9_scalar",
    "test_scan9_multi_state",
];

fn node_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/node")
}

/// The committed cases, sorted.
fn cases() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(node_dir())
        .expect("tests/onnx/node")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub(crate) fn read_pb(path: &Path) -> Result<HostTensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let t = decode_tensor(&bytes).map_err(|e| e.to_string())?;
    HostTensor::from_proto(&t)
}

/// Writes `t` as the `.npy` file numpy would save it as.
pub(crate) fn write_host(path: &Path, t: &HostTensor) -> Result<(), String> {
    let (dtype, data) = match &t.data {
        HostData::Float(v) => (
            if t.elem == ElemType::Double {
                DType::F64
            } else {
                DType::F32
            },
            v.clone(),
        ),
        HostData::Int(v) => (DType::I32, v.iter().map(|&x| x as f64).collect()),
    };
    let tensor = Tensor {
        dtype,
        shape: t.shape.clone(),
        data,
    };
    match t.elem {
        ElemType::Int64 | ElemType::Bool => {
            let bytes = write_npy_bytes_wide("npy", &tensor, t.elem == ElemType::Bool)
                .map_err(|e| e.to_string())?;
            std::fs::write(path, bytes).map_err(|e| e.to_string())
        }
        _ => write_npy(path, &tensor).map_err(|e| e.to_string()),
    }
}

/// Reads an output `.npy` file back as the type the test expects.
pub(crate) fn read_output(path: &Path, elem: ElemType) -> Result<(Vec<usize>, HostData), String> {
    let t = match elem {
        ElemType::Bool => read_npy_bool(path),
        ElemType::Float => read_npy_as(path, DType::F32),
        ElemType::Double => read_npy_as(path, DType::F64),
        _ => read_npy_as(path, DType::I32),
    }
    .map_err(|e| e.to_string())?;
    let data = if elem.is_float() {
        HostData::Float(t.data)
    } else {
        HostData::Int(t.data.iter().map(|&v| v as i64).collect())
    };
    Ok((t.shape, data))
}

/// Floats within rtol 1e-3 + atol 1e-5 (NaN matches NaN), integers exactly.
fn compare(want: &HostTensor, shape: &[usize], got: &HostData) -> Result<(), String> {
    if want.shape != shape {
        return Err(format!("shape {shape:?}, expected {:?}", want.shape));
    }
    match (&want.data, got) {
        (HostData::Float(w), HostData::Float(g)) => {
            for (i, (a, b)) in w.iter().zip(g).enumerate() {
                let ok =
                    (a.is_nan() && b.is_nan()) || a == b || (a - b).abs() <= 1e-5 + 1e-3 * a.abs();
                if !ok {
                    return Err(format!("element {i}: {b}, expected {a}"));
                }
            }
            Ok(())
        }
        (HostData::Int(w), HostData::Int(g)) if w == g => Ok(()),
        _ => Err("the values differ".into()),
    }
}

/// Runs case `name` through `uop run` in `dir` (its scratch directory).
fn run_case(name: &str, dir: &Path) -> Result<(), String> {
    let case = node_dir().join(name);
    let model_path = case.join("model.onnx");
    let bytes = std::fs::read(&model_path).map_err(|e| e.to_string())?;
    let model = decode_model(&bytes).map_err(|e| e.to_string())?;
    let graph = model.graph.as_ref().ok_or("no graph")?;
    let data = case.join("test_data_set_0");
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut args: Vec<String> = vec!["run".into(), model_path.display().to_string()];
    for (k, vi) in graph.input.iter().enumerate() {
        let t = read_pb(&data.join(format!("input_{k}.pb")))?;
        let file = dir.join(format!("input_{k}.npy"));
        write_host(&file, &t)?;
        let name = vi.name.clone().unwrap_or_default();
        args.extend(["--input".into(), format!("{name}={}", file.display())]);
    }
    let mut wants = Vec::new();
    for (k, vi) in graph.output.iter().enumerate() {
        let want = read_pb(&data.join(format!("output_{k}.pb")))?;
        let file = dir.join(format!("output_{k}.npy"));
        let name = vi.name.clone().unwrap_or_default();
        args.extend(["--output".into(), format!("{name}={}", file.display())]);
        wants.push((name, want, file));
    }
    let out = common::uop_in(dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
    if !out.status.success() {
        return Err(stderr(&out).lines().next().unwrap_or_default().to_string());
    }
    for (name, want, file) in &wants {
        let (shape, got) = read_output(file, want.elem)?;
        compare(want, &shape, &got).map_err(|e| format!("output `{name}`: {e}"))?;
    }
    Ok(())
}

/// Runs `names` on as many threads as the machine has cores; the failures, by name.
fn run_all(names: &[String], scratch_name: &str) -> Vec<(String, String)> {
    let root = scratch(scratch_name);
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let k = {
                        let mut n = next.lock().unwrap();
                        *n += 1;
                        *n - 1
                    };
                    let Some(name) = names.get(k) else { break };
                    if let Err(e) = run_case(name, &root.join(name)) {
                        failures.lock().unwrap().push((name.clone(), e));
                    }
                }
            });
        }
    });
    let mut f = failures.into_inner().unwrap();
    f.sort();
    f
}

/// The cases `tests/onnx/node.txt` lists as passing (names, or `PREFIX*`).
fn listed() -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx/node.txt");
    std::fs::read_to_string(path)
        .expect("tests/onnx/node.txt")
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_whitespace().next().map(str::to_string))
        .collect()
}

/// Every committed case: at least 480 pass, the six control-flow cases and every
/// case `tests/onnx/node.txt` lists among them; prints the count.
#[test]
fn the_node_tests_pass_from_the_command_line() {
    let all = cases();
    assert!(all.len() >= 534, "{} cases committed", all.len());
    let start = std::time::Instant::now();
    let failures = run_all(&all, "onnx-node-all");
    let passed = all.len() - failures.len();
    // Past the harness's capture, so every run shows the count.
    let line = format!(
        "onnx node tests from the command line: {passed} of {} pass ({:.1} s wall)\n",
        all.len(),
        start.elapsed().as_secs_f64()
    );
    let _ = std::io::Write::write_all(&mut std::io::stdout().lock(), line.as_bytes());
    let patterns = listed();
    let is_listed = |name: &str| {
        patterns.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => name.starts_with(prefix),
            None => p == name,
        })
    };
    let listed_failures: Vec<_> = failures.iter().filter(|(n, _)| is_listed(n)).collect();
    assert!(
        listed_failures.is_empty(),
        "cases tests/onnx/node.txt lists fail from the command line:\n{listed_failures:#?}"
    );
    for name in CONTROL_FLOW {
        assert!(
            !failures.iter().any(|(n, _)| n == name),
            "{name} fails from the command line"
        );
    }
    assert!(
        passed >= 480,
        "{passed} of {} pass: {failures:#?}",
        all.len()
    );
}
