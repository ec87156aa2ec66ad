//! What the node-test runner needs: the manifest and one case's run.

use std::collections::HashMap;
use std::path::Path;

use uop_exec::{ExecOptions, compile_with};
use uop_graph::text::{parse_graph, print_graph};
use uop_graph::{RunOptions, default_registry, run_with};
use uop_onnx::{
    HostData, HostTensor, ImportError, ImportOptions, decode_model, decode_tensor, import_model,
};

/// The node tests in `dir` (one folder each), sorted by name.
pub fn case_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("the node-test directory {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// `tests/onnx/node.txt`: one case a line, `NAME [input:A,B]`, or `PREFIX*`;
/// `# min-cases N` sets the least number of committed cases (an empty corpus fails).
pub struct Manifest {
    entries: Vec<Entry>,
    /// The least number of committed cases.
    pub min_cases: usize,
}

/// One manifest line.
pub struct Entry {
    pattern: String,
    /// With `input:A,B`: the graph inputs that stay inputs; every other one is bound
    /// to the test's data at import (tract's `input:`). Empty: any input an op needs
    /// as a constant is bound.
    pub inputs: Vec<String>,
}

impl Manifest {
    /// Reads the manifest.
    pub fn read(path: &Path) -> Result<Manifest, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut entries = Vec::new();
        let mut min_cases = 0;
        for line in text.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("# min-cases ") {
                min_cases = n
                    .trim()
                    .parse()
                    .map_err(|_| format!("bad min-cases line `{line}`"))?;
                continue;
            }
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let mut words = line.split_whitespace();
            let pattern = words.next().unwrap_or_default().to_string();
            let mut inputs = Vec::new();
            for w in words {
                match w.strip_prefix("input:") {
                    Some(list) => inputs.extend(list.split(',').map(str::to_string)),
                    None => return Err(format!("unknown annotation `{w}` in `{line}`")),
                }
            }
            entries.push(Entry { pattern, inputs });
        }
        Ok(Manifest { entries, min_cases })
    }

    /// The entry matching case `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| matches(&e.pattern, name))
    }

    /// Patterns that match no committed case.
    pub fn unmatched(&self, cases: &[String]) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| !cases.iter().any(|c| matches(&e.pattern, c)))
            .map(|e| e.pattern.clone())
            .collect()
    }
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// The op types a case's model uses (subgraphs included), each once.
pub fn case_ops(dir: &Path) -> Vec<String> {
    fn walk(g: &uop_onnx::proto::GraphProto, out: &mut Vec<String>) {
        for n in &g.node {
            let op = n.op_type.clone().unwrap_or_default();
            if !out.contains(&op) {
                out.push(op);
            }
            for a in &n.attribute {
                for sub in a.g.iter().chain(&a.graphs) {
                    walk(sub, out);
                }
            }
        }
    }
    let mut out = Vec::new();
    let model = std::fs::read(dir.join("model.onnx"))
        .ok()
        .and_then(|b| decode_model(&b).ok());
    if let Some(g) = model.as_ref().and_then(|m| m.graph.as_ref()) {
        walk(g, &mut out);
    }
    out
}

/// The result of one case.
pub enum Outcome {
    /// Every output matched.
    Pass,
    /// Why not.
    Fail(String),
}

/// Imports the case in `dir` and runs it on the graph interpreter (the oracle) and on
/// the executor (Cranelift), comparing both with the stored outputs; `keep` as in
/// [`Entry::inputs`].
pub fn run_case(dir: &Path, keep: Option<&[String]>) -> Outcome {
    match try_case(dir, keep.unwrap_or(&[])) {
        Ok(()) => Outcome::Pass,
        Err(e) => Outcome::Fail(e),
    }
}

fn read_tensor(path: &Path) -> Result<HostTensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let t = decode_tensor(&bytes).map_err(|e| e.to_string())?;
    HostTensor::from_proto(&t)
}

/// A case imported: the model, the graph's input tensors, the test's data set.
pub struct Loaded {
    /// The decoded model.
    pub model: uop_onnx::proto::ModelProto,
    /// The imported graph.
    pub imported: uop_onnx::Imported,
    /// The graph's inputs from the test data.
    pub inputs: Vec<uop_codegen::tensor::Tensor>,
}

/// Imports the case in `dir` (inputs an op needs at import bound from the test data;
/// with `keep`, every input but those) and converts its inputs.
pub fn load_case(dir: &Path, keep: &[String]) -> Result<Loaded, String> {
    let bytes = std::fs::read(dir.join("model.onnx")).map_err(|e| e.to_string())?;
    let model = decode_model(&bytes).map_err(|e| e.to_string())?;
    let graph = model.graph.as_ref().ok_or("no graph")?;
    let data = dir.join("test_data_set_0");
    let mut given = HashMap::new();
    for (k, vi) in graph.input.iter().enumerate() {
        let name = vi.name.clone().unwrap_or_default();
        let tensor = matches!(
            vi.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(uop_onnx::proto::type_proto::Value::TensorType(_))
        );
        if !tensor {
            // A sequence, optional or map: the importer reports it.
            continue;
        }
        let t = read_tensor(&data.join(format!("input_{k}.pb")))?;
        given.insert(name, t);
    }
    let mut options = ImportOptions::default();
    if !keep.is_empty() {
        for (name, t) in &given {
            if !keep.contains(name) {
                options.constants.insert(name.clone(), t.clone());
            }
        }
    }
    let imported = loop {
        match import_model(&model, &options) {
            Ok(m) => break m,
            Err(ImportError::NeedsConstant { input, .. })
                if keep.is_empty() && !options.constants.contains_key(&input) =>
            {
                let t = given.get(&input).ok_or("no data for the input")?.clone();
                options.constants.insert(input, t);
            }
            Err(e) => return Err(format!("import: {e}")),
        }
    };
    let inputs = imported.graph_inputs(&given).map_err(|e| e.to_string())?;
    Ok(Loaded {
        model,
        imported,
        inputs,
    })
}

fn try_case(dir: &Path, keep: &[String]) -> Result<(), String> {
    let Loaded {
        model,
        imported,
        inputs,
    } = load_case(dir, keep)?;
    let graph = model.graph.as_ref().ok_or("no graph")?;
    let data = dir.join("test_data_set_0");
    let run = run_with(
        &imported.graph,
        &inputs,
        &HashMap::new(),
        &RunOptions {
            max_iterations: Some(100_000),
        },
    )
    .map_err(|e| format!("run: {e}"))?;
    let tensors_out = graph.output.iter().all(|vi| {
        matches!(
            vi.r#type.as_ref().and_then(|t| t.value.as_ref()),
            Some(uop_onnx::proto::type_proto::Value::TensorType(_))
        )
    });
    if !tensors_out {
        return Err("an output is not a tensor".into());
    }
    let wants = (0..imported.outputs.len())
        .map(|k| read_tensor(&data.join(format!("output_{k}.pb"))))
        .collect::<Result<Vec<_>, _>>()?;
    let check = |engine: &str, outputs: &[uop_codegen::tensor::Tensor]| -> Result<(), String> {
        for (k, got) in imported.model_outputs(outputs).iter().enumerate() {
            compare(&wants[k], got)
                .map_err(|e| format!("{engine}: output {k} ({}): {e}", imported.outputs[k].onnx))?;
        }
        Ok(())
    };
    check("interpreter", &run.outputs)?;
    // What `uop import` will write: the graph as text, read back, gives the same.
    let text = print_graph(&imported.graph);
    let reparsed =
        parse_graph(&text, default_registry()).map_err(|e| format!("text: {e}\n{text}"))?;
    let again = run_with(
        &reparsed,
        &inputs,
        &HashMap::new(),
        &RunOptions {
            max_iterations: Some(100_000),
        },
    )
    .map_err(|e| format!("text: run: {e}"))?;
    check("text", &again.outputs)?;
    let options = ExecOptions {
        max_iterations: Some(100_000),
        ..ExecOptions::default()
    };
    let exe =
        compile_with(&imported.graph, &options).map_err(|e| format!("executor: compile: {e}"))?;
    let outputs = exe
        .run(&inputs)
        .map_err(|e| format!("executor: run: {e}"))?;
    check("executor", &outputs)
}

/// Floats within rtol 1e-3 + atol 1e-5 (NaN matches NaN), integers exactly.
fn compare(want: &HostTensor, got: &HostTensor) -> Result<(), String> {
    if want.shape != got.shape {
        return Err(format!("shape {:?}, expected {:?}", got.shape, want.shape));
    }
    match (&want.data, &got.data) {
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
        (HostData::Int(w), HostData::Int(g)) => match w.iter().zip(g).position(|(a, b)| a != b) {
            Some(i) => Err(format!("element {i}: {}, expected {}", g[i], w[i])),
            None => Ok(()),
        },
        _ => Err(format!(
            "type {}, expected {}",
            got.elem.name(),
            want.elem.name()
        )),
    }
}
