//! `.onnx` models on the command line: one loader every command uses, and the
//! translation between the names and element types a user speaks (ONNX's) and the
//! imported graph's.
//!
//! A file is an ONNX model when its name ends in `.onnx` (any case): the extension
//! decides, not the content, so that a `.uop` file that fails to parse is reported
//! as text and a truncated model as a model. The model is imported by
//! [`uop_onnx::import`]; an input an op needs when the graph is built (a Reshape's
//! shape, a Slice's starts, Pad's pads...) is bound from the `.npy` file given for it
//! with `--input` (the data the model runs on) and is then no longer an input of the
//! graph. Users name inputs, outputs and dimensions by their ONNX names (`input.1`,
//! `onnx::MatMul_12`, `batch size`); [`OnnxModel::declarations`] lists the inputs
//! under those names, and [`OnnxModel::graph_inputs`] / [`OnnxModel::outputs`]
//! convert data between ONNX's types (`int64`, `bool`) and the graph's.

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::{DType, Program};
use uop_onnx::{ElemType, HostData, HostTensor, ImportError, ImportOptions, Imported};

use super::{CliError, fail};
use crate::npy::{NpyErrorKind, read_npy_as, read_npy_bool, write_npy_bytes, write_npy_bytes_wide};

/// An imported `.onnx` model.
pub(crate) struct OnnxModel {
    /// The imported graph, its ports and name map.
    pub imported: Imported,
    /// The model's inputs bound as constants at import (ONNX names), in the order
    /// the importer asked for them.
    pub bound: Vec<String>,
    /// With [`Weights::Inputs`]: the float initializers that are graph inputs (the
    /// last ones), with their values.
    pub weights: Vec<(String, HostTensor)>,
}

/// Whether a model's float initializers are constants (the default) or graph inputs
/// (for `uop grad`: gradients with respect to the weights).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Weights {
    /// Constants of the graph.
    Constants,
    /// Graph inputs, but for those an op needs when the graph is built.
    Inputs,
}

/// Whether `path` names an ONNX model: its extension is `.onnx`, in any case.
pub(crate) fn is_onnx(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// The largest model read: protobuf's own limit on one message (2 GiB); a model
/// with more keeps its weights in external data, which the importer refuses anyway.
const MAX_MODEL: u64 = 2 << 30;

/// How a command lets the user give an input's value at import.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Constants {
    /// `--input NAME=FILE.npy` (run, grad, import).
    Input,
    /// The command has no `--input`: the model must be bound with `uop import`.
    None,
}

/// Reads and imports the model at `path`; `given` are the `--input NAME=FILE`
/// assignments (ONNX names), from which inputs needed at import are bound.
pub(crate) fn load(
    path: &Path,
    given: &[(String, PathBuf)],
    how: Constants,
) -> Result<OnnxModel, CliError> {
    load_weights(path, given, how, Weights::Constants)
}

/// [`load`], with the float initializers as `weights` says.
pub(crate) fn load_weights(
    path: &Path,
    given: &[(String, PathBuf)],
    how: Constants,
    weights: Weights,
) -> Result<OnnxModel, CliError> {
    let bytes = read_model(path)?;
    let named = |e: ImportError| CliError(format!("{}: {e}", path.display()));
    let model = uop_onnx::decode_model(&bytes).map_err(|e| named(e.into()))?;
    let mut options = ImportOptions::default();
    if weights == Weights::Inputs {
        options.initializer_inputs = float_initializers(&model);
    }
    let mut bound = Vec::new();
    loop {
        match uop_onnx::import_model(&model, &options) {
            Ok(imported) => {
                let weights = weight_values(&model, &options.initializer_inputs)
                    .map_err(|m| CliError(format!("{}: {m}", path.display())))?;
                return Ok(OnnxModel {
                    imported,
                    bound,
                    weights,
                });
            }
            Err(ImportError::NeedsConstant { input, .. })
                if options.initializer_inputs.contains(&input) =>
            {
                // A weight an op needs at build time (a shape, Clip's bounds) stays
                // a constant.
                options.initializer_inputs.retain(|n| *n != input);
            }
            Err(ImportError::NeedsConstant {
                input,
                slot,
                op,
                node,
            }) => {
                let file = given.iter().find(|(n, _)| *n == input).map(|(_, f)| f);
                let Some(file) = file.filter(|_| how == Constants::Input) else {
                    return fail(needs_constant(path, &input, &slot, &op, &node, how));
                };
                if options.constants.contains_key(&input) {
                    // Bound already and still asked for: the importer's own problem.
                    return fail(format!(
                        "{}: input `{input}` is bound and still needed at import",
                        path.display()
                    ));
                }
                let elem = declared_elem(&model, &input)
                    .map_err(|m| CliError(format!("{}: input `{input}`: {m}", path.display())))?;
                let t = read_host(file, &input, elem)?;
                options.constants.insert(input.clone(), t);
                bound.push(input);
            }
            Err(e) => return Err(named(e)),
        }
    }
}

/// The names of the model's float initializers that are not also graph inputs
/// (those are inputs with a default already).
fn float_initializers(model: &uop_onnx::proto::ModelProto) -> Vec<String> {
    let Some(g) = &model.graph else {
        return Vec::new();
    };
    g.initializer
        .iter()
        .filter(|t| matches!(t.data_type, Some(1) | Some(11)))
        .filter_map(|t| t.name.clone())
        .filter(|n| !g.input.iter().any(|vi| vi.name.as_ref() == Some(n)))
        .collect()
}

/// The values of the initializers `names`, in order.
fn weight_values(
    model: &uop_onnx::proto::ModelProto,
    names: &[String],
) -> Result<Vec<(String, HostTensor)>, String> {
    let inits = model.graph.iter().flat_map(|g| &g.initializer);
    names
        .iter()
        .map(|n| {
            let t = inits
                .clone()
                .find(|t| t.name.as_ref() == Some(n))
                .ok_or_else(|| format!("no initializer `{n}`"))?;
            Ok((n.clone(), HostTensor::from_proto(t)?))
        })
        .collect()
}

/// The error for an input needed at import that the user did not give.
fn needs_constant(
    path: &Path,
    input: &str,
    slot: &str,
    op: &str,
    node: &str,
    how: Constants,
) -> String {
    let what = format!(
        "{}: input `{input}` must be known when the model is imported (it is the {slot} of \
         {op} node `{node}`)",
        path.display()
    );
    match how {
        Constants::Input => format!("{what}: give its data with --input {input}=FILE.npy"),
        Constants::None => format!(
            "{what}: bind it with `uop import {} --input {input}=FILE.npy -o MODEL.uop` and use \
             MODEL.uop",
            path.display()
        ),
    }
}

/// The model's bytes: at most [`MAX_MODEL`].
fn read_model(path: &Path) -> Result<Vec<u8>, CliError> {
    let cannot = |e: std::io::Error| CliError(format!("cannot read {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let mut bytes = Vec::new();
    file.take(MAX_MODEL + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_MODEL {
        return fail(format!(
            "{}: the model is larger than 2 GiB, the most a protobuf message holds",
            path.display()
        ));
    }
    Ok(bytes)
}

/// The declared element type of the model's graph input `name`.
fn declared_elem(model: &uop_onnx::proto::ModelProto, name: &str) -> Result<ElemType, String> {
    use uop_onnx::proto::type_proto::Value;
    let vi = model
        .graph
        .iter()
        .flat_map(|g| &g.input)
        .find(|vi| vi.name.as_deref() == Some(name))
        .ok_or("the model has no such input")?;
    match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        Some(Value::TensorType(t)) => ElemType::from_code(t.elem_type.unwrap_or(0)),
        _ => Err("the input is not a tensor".into()),
    }
}

/// numpy's name of the `.npy` dtype an ONNX element type is given as.
fn numpy_of(elem: ElemType) -> &'static str {
    match elem {
        ElemType::Float => "float32",
        ElemType::Double => "float64",
        ElemType::Int32 => "int32 or int64",
        ElemType::Int64 => "int64 or int32",
        ElemType::Bool => "bool",
        _ => "integer",
    }
}

/// Reads `file`, the data of ONNX input `name` of type `elem`, checking its dtype.
pub(crate) fn read_host(file: &Path, name: &str, elem: ElemType) -> Result<HostTensor, CliError> {
    let t = match elem {
        ElemType::Bool => read_npy_bool(file),
        e if e.is_int() => read_npy_as(file, DType::I32),
        ElemType::Float => read_npy_as(file, DType::F32),
        _ => read_npy_as(file, DType::F64),
    }
    .map_err(|e| match e.kind {
        NpyErrorKind::UnsupportedDType(holds) => CliError(format!(
            "{}: input `{name}` is {} (a {} .npy), but the file holds {holds}",
            file.display(),
            elem.name(),
            numpy_of(elem),
        )),
        _ => CliError(e.to_string()),
    })?;
    let wrong = |holds: &str| {
        CliError(format!(
            "{}: input `{name}` is {} (a {} .npy), but the file holds {holds}",
            file.display(),
            elem.name(),
            numpy_of(elem),
        ))
    };
    let data = match (elem, t.dtype) {
        (ElemType::Float, DType::F32) | (ElemType::Double, DType::F64) => {
            HostData::Float(t.data.clone())
        }
        (ElemType::Bool, DType::I32) if t.data.iter().all(|&v| v == 0.0 || v == 1.0) => {
            HostData::Int(t.data.iter().map(|&v| v as i64).collect())
        }
        (ElemType::Bool, DType::I32) => return Err(wrong("integers other than 0 and 1")),
        (e, DType::I32) if e.is_int() => HostData::Int(t.data.iter().map(|&v| v as i64).collect()),
        (_, d) => return Err(wrong(numpy_name(d))),
    };
    Ok(HostTensor {
        elem,
        shape: t.shape,
        data,
    })
}

fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::F32 => "float32",
        DType::F64 => "float64",
        DType::I32 => "int32",
    }
}

impl OnnxModel {
    /// The graph's inputs as a program declaring them under their ONNX names, their
    /// dimensions under ONNX's names too: what `--input`, `--dim` and `--random` read
    /// (shared with `.uop` files).
    pub(crate) fn declarations(&self) -> Program {
        let mut p = super::source::declarations(&self.imported.graph);
        for (node, port) in p.nodes.iter_mut().zip(&self.imported.inputs) {
            node.name = port.onnx.clone();
            node.shape = port.shape.iter().map(|d| self.onnx_dim(d)).collect();
        }
        p
    }

    /// [`declarations`](Self::declarations) without the weights: the inputs a user
    /// gives (the weights' values are the model's).
    pub(crate) fn given_declarations(&self) -> Program {
        let mut p = self.declarations();
        let keep = p.inputs.len().saturating_sub(self.weights.len());
        p.inputs.truncate(keep);
        p
    }

    /// A dimension in ONNX's names.
    fn onnx_dim(&self, d: &Expr) -> Expr {
        match d {
            Expr::Name(n) => Expr::Name(self.imported.names.onnx(n).unwrap_or(n).to_string()),
            other => other.clone(),
        }
    }

    /// `NAME=VALUE` arguments (`--dim`) with each ONNX dimension name that was
    /// renamed replaced by the graph's name; the others as given.
    pub(crate) fn uop_assignments(&self, args: &[String]) -> Vec<String> {
        args.iter()
            .map(|a| match a.split_once('=') {
                Some((name, value)) => match self.imported.names.uop(name) {
                    Some(u) => format!("{u}={value}"),
                    None => a.clone(),
                },
                None => a.clone(),
            })
            .collect()
    }

    /// The ONNX names of the graph's outputs, in order.
    pub(crate) fn output_names(&self) -> Vec<String> {
        self.imported
            .outputs
            .iter()
            .map(|p| p.onnx.clone())
            .collect()
    }

    /// The graph's input tensors from the tensors gathered for
    /// [`declarations`](Self::declarations) (files read by [`read_host`], or random
    /// data): `bool` inputs made 0 / 1 (random data: positive is true), negative
    /// indices wrapped as ONNX counts them.
    pub(crate) fn graph_inputs(&self, gathered: &[Tensor]) -> Result<Vec<Tensor>, CliError> {
        let mut given: HashMap<String, HostTensor> = self.weights.iter().cloned().collect();
        for (t, port) in gathered.iter().zip(&self.imported.inputs) {
            let mut h = HostTensor::from_graph(t, port.elem);
            if port.elem == ElemType::Bool {
                h.data = HostData::Int(t.data.iter().map(|&v| i64::from(v > 0.0)).collect());
            }
            given.insert(port.onnx.clone(), h);
        }
        self.imported
            .graph_inputs(&given)
            .map_err(|e| CliError(e.to_string()))
    }

    /// Reads `file` for the graph input declared as `node` (an ONNX name) as the
    /// graph's tensor: the dtype checked against the model's ONNX type.
    pub(crate) fn read_input(&self, file: &Path, name: &str) -> Result<Tensor, CliError> {
        let k = self
            .imported
            .inputs
            .iter()
            .position(|p| p.onnx == name)
            .ok_or_else(|| CliError(format!("the model has no input `{name}`")))?;
        let port = &self.imported.inputs[k];
        let h = read_host(file, name, port.elem)?;
        let fits = h.shape.len() == port.shape.len()
            && h.shape.iter().zip(&port.shape).all(|(&n, d)| match d {
                Expr::Int(v) => usize::try_from(*v) == Ok(n),
                _ => true,
            });
        if !fits {
            let declared: Vec<String> = port
                .shape
                .iter()
                .map(|d| self.onnx_dim(d).to_string())
                .collect();
            return fail(format!(
                "{}: input `{name}` has shape {:?}, but the model declares [{}]",
                file.display(),
                h.shape,
                declared.join(", ")
            ));
        }
        // The graph's type of the input: an integer input held as data is in the
        // float type (uop_onnx::import's `int_inputs`).
        let dtype = self
            .imported
            .graph
            .input_node()
            .and_then(|n| n.outputs.get(k))
            .map_or(self.imported.graph.dtype, |t| t.dtype);
        port.graph_tensor(&h, dtype, self.imported.graph.dtype)
            .map_err(|m| CliError(format!("{}: input `{name}`: {m}", file.display())))
    }

    /// The graph's outputs as the model's types, each with the bytes of its `.npy`
    /// file: `int64` and `bool` outputs as numpy `int64` and `bool`, for printing as
    /// integers.
    pub(crate) fn outputs(&self, outputs: &[Tensor]) -> Vec<(Tensor, Option<ElemType>)> {
        self.imported
            .model_outputs(outputs)
            .into_iter()
            .map(|h| {
                let data = match &h.data {
                    HostData::Float(v) => v.clone(),
                    HostData::Int(v) => v.iter().map(|&x| x as f64).collect(),
                };
                let dtype = if h.elem.is_float() {
                    self.imported.graph.dtype
                } else {
                    DType::I32
                };
                let wide = (!h.elem.is_float()).then_some(h.elem);
                (
                    Tensor {
                        dtype,
                        shape: h.shape,
                        data,
                    },
                    wide,
                )
            })
            .collect()
    }
}

/// The bytes of the `.npy` file of an output read back by [`OnnxModel::outputs`].
pub(crate) fn npy_bytes(
    name: &str,
    t: &Tensor,
    elem: Option<ElemType>,
) -> Result<Vec<u8>, CliError> {
    match elem {
        None | Some(ElemType::Int32) => write_npy_bytes(name, t),
        Some(ElemType::Bool) => write_npy_bytes_wide(name, t, true),
        Some(_) => write_npy_bytes_wide(name, t, false),
    }
    .map_err(|e| CliError(e.to_string()))
}
