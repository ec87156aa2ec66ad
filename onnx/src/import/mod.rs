//! ONNX model → `uop_graph` graph: [`import`].
//!
//! The model's graph inputs become graph inputs (symbolic dims kept, names mapped to
//! legal uop names), initializers and `Constant`s become tensors known at import
//! (constants of the graph where a value of the graph needs them), and each node is
//! translated by its entry in the [op registry](crate::registry) into calls of uop's
//! macro ops. Every op is checked against the registry before anything is built, so
//! an unsupported op is reported first, naming op, node and opset.

mod cx;
mod error;
mod int_inputs;
pub(crate) mod value;

use std::collections::{HashMap, HashSet};

use uop_codegen::index::Expr;
use uop_codegen::uop::DType;
use uop_graph::{Graph, GraphBuilder, Ref, ValueType, default_registry};

use crate::data::{ElemType, HostTensor};
use crate::decode::decode_model;
use crate::names::NameMap;
use crate::proto::tensor_shape_proto::dimension::Value as DimValue;
use crate::proto::type_proto::Value as TypeValue;
use crate::proto::{GraphProto, ModelProto, NodeProto, ValueInfoProto};
use crate::registry;

pub(crate) use cx::{CErr, CResult, Env, Im, NodeIn, exprs_arg, ints_arg};
pub use error::ImportError;
use value::{Known, Val};

/// How to import.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ImportOptions {
    /// Graph inputs bound to constants at import, by ONNX name: inputs an op needs
    /// to know when the graph is built (a Reshape's shape, a Slice's starts, Pad's
    /// pads...), given from the data the model will run on. They are no longer
    /// inputs of the imported graph.
    pub constants: HashMap<String, HostTensor>,
    /// Float initializers, by name, imported as graph inputs (after the model's own
    /// inputs, in this order) instead of constants: to differentiate with respect to
    /// the weights, or to change them without importing again. An initializer an op
    /// needs when the graph is built is `ImportError::NeedsConstant` naming it.
    pub initializer_inputs: Vec<String>,
}

/// A graph input or output of an imported model.
#[derive(Clone, Debug, PartialEq)]
pub struct Port {
    /// The ONNX name.
    pub onnx: String,
    /// The name in the graph (a legal uop name).
    pub uop: String,
    /// The ONNX element type (what a caller gives or gets).
    pub elem: ElemType,
    /// The shape, in the graph's dimension names.
    pub shape: Vec<Expr>,
    /// For an integer input used as indices into an axis of this size: negative
    /// values `-size..0` are wrapped (`+ size`) when the input is given
    /// ([`Imported::graph_inputs`]), as ONNX counts them from the end.
    pub wrap: Option<i64>,
    /// For an integer input: the graph computes with its values in its float type
    /// (not only as indices), so in an f32 graph they must lie within ±2^24, where
    /// f32 holds every integer ([`Imported::graph_inputs`] checks).
    pub arithmetic: bool,
}

impl Port {
    /// The data `t` given for this input as the graph's tensor of type `dtype`:
    /// negative indices wrapped ([`Port::wrap`]), an integer the graph computes with
    /// in f32 ([`Port::arithmetic`]; `float` the graph's float type) checked exact
    /// there, integers held in a float type checked exact in it.
    pub fn graph_tensor(
        &self,
        t: &HostTensor,
        dtype: DType,
        float: DType,
    ) -> Result<uop_codegen::tensor::Tensor, String> {
        let mut t = std::borrow::Cow::Borrowed(t);
        if let (Some(size), crate::data::HostData::Int(v)) = (self.wrap, &t.data) {
            let v = v
                .iter()
                .map(|&x| if (-size..0).contains(&x) { x + size } else { x })
                .collect();
            t.to_mut().data = crate::data::HostData::Int(v);
        }
        if self.arithmetic && dtype == DType::I32 {
            t.to_graph_as(float)?;
        }
        t.to_graph_as(dtype)
    }
}

/// An imported model.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The graph: runs on every stage of the graph layer.
    pub graph: Graph,
    /// The graph's inputs in order (the model's inputs less initializers and the
    /// inputs bound as constants).
    pub inputs: Vec<Port>,
    /// The graph's outputs in order.
    pub outputs: Vec<Port>,
    /// ONNX names of inputs, outputs and dimensions to uop names and back.
    pub names: NameMap,
    /// The default domain's opset the model imports.
    pub opset: i64,
}

impl Imported {
    /// The graph's input tensors from ONNX tensors given by ONNX input name (each
    /// converted: bool to 0/1; int64 to i32 where every value fits, or, for an
    /// integer input the graph holds as data, to the float type where every value is
    /// exact).
    pub fn graph_inputs(
        &self,
        given: &HashMap<String, HostTensor>,
    ) -> Result<Vec<uop_codegen::tensor::Tensor>, ImportError> {
        let types = self
            .graph
            .input_node()
            .map(|n| n.outputs.as_slice())
            .unwrap_or_default();
        self.inputs
            .iter()
            .enumerate()
            .map(|(k, p)| {
                let t = given
                    .get(&p.onnx)
                    .ok_or_else(|| ImportError::Model(format!("no data for input `{}`", p.onnx)))?;
                if t.elem != p.elem {
                    return Err(ImportError::Type {
                        tensor: p.onnx.clone(),
                        message: format!(
                            "the model takes {}, the data is {}",
                            p.elem.name(),
                            t.elem.name()
                        ),
                    });
                }
                let dtype = types.get(k).map_or(self.graph.dtype, |t| t.dtype);
                p.graph_tensor(t, dtype, self.graph.dtype)
                    .map_err(|message| ImportError::Type {
                        tensor: p.onnx.clone(),
                        message,
                    })
            })
            .collect()
    }

    /// The graph's outputs read back as the model's ONNX types.
    pub fn model_outputs(&self, outputs: &[uop_codegen::tensor::Tensor]) -> Vec<HostTensor> {
        outputs
            .iter()
            .zip(&self.outputs)
            .map(|(t, p)| HostTensor::from_graph(t, p.elem))
            .collect()
    }
}

/// The highest default-domain opset the importer knows.
pub const MAX_OPSET: i64 = 28;

/// Imports the `.onnx` bytes `bytes`.
pub fn import(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    let model = decode_model(bytes)?;
    import_model(&model, options)
}

/// Imports a decoded model.
pub fn import_model(model: &ModelProto, options: &ImportOptions) -> Result<Imported, ImportError> {
    let opset = default_opset(model)?;
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| ImportError::Model("the model has no graph".into()))?;
    check_ops(graph, opset)?;
    let float = float_type(graph)?;
    let registry = default_registry();
    let mut env = Env {
        scopes: vec![HashMap::new()],
        float,
        opset,
        input_of: HashMap::new(),
        names: NameMap::new(&registry),
        wraps: HashMap::new(),
        as_float: HashSet::new(),
    };
    let mut g = GraphBuilder::new(float);
    let initializers = read_initializers(graph, &mut env)?;
    let index_feeders = int_inputs::index_feeders(graph);
    let mut inputs = Vec::new();
    for vi in &graph.input {
        let name = vi.name.clone().unwrap_or_default();
        if initializers.contains(&name) {
            continue;
        }
        if let Some(t) = options.constants.get(&name) {
            env.set(&name, Val::Known(Known::from_host(t)));
            continue;
        }
        let (elem, shape) = tensor_type(vi, &mut env.names)?;
        let uop = env.names.map(&name);
        // Integers that can reach an index operand are i32; others are data, held
        // in the float type (see `int_inputs`).
        let dtype = if elem.is_int() && index_feeders.contains(&name) {
            DType::I32
        } else {
            float
        };
        let r = g
            .input_type(&uop, ValueType::new(dtype, shape.clone()))
            .map_err(|e| ImportError::Model(format!("input `{name}`: {e}")))?;
        env.input_of.insert(r, name.clone());
        env.set(&name, Val::Graph(r, elem));
        inputs.push(Port {
            onnx: name,
            uop,
            elem,
            shape,
            wrap: None,
            arithmetic: false,
        });
    }
    for name in &options.initializer_inputs {
        let t = graph
            .initializer
            .iter()
            .find(|t| t.name.as_deref() == Some(name))
            .ok_or_else(|| ImportError::Model(format!("the model has no initializer `{name}`")))?;
        let elem =
            ElemType::from_code(t.data_type.unwrap_or(0)).map_err(|message| ImportError::Type {
                tensor: name.clone(),
                message,
            })?;
        if !elem.is_float() {
            return Err(ImportError::Type {
                tensor: name.clone(),
                message: "only float initializers can be graph inputs".into(),
            });
        }
        let shape: Vec<Expr> = t.dims.iter().map(|&d| Expr::Int(d)).collect();
        let uop = env.names.map(name);
        let r = g
            .input_type(&uop, ValueType::new(float, shape.clone()))
            .map_err(|e| ImportError::Model(format!("initializer `{name}`: {e}")))?;
        env.input_of.insert(r, name.clone());
        env.set(name, Val::Graph(r, elem));
        inputs.push(Port {
            onnx: name.clone(),
            uop,
            elem,
            shape,
            wrap: None,
            arithmetic: false,
        });
    }
    let mut im = Im {
        g: &mut g,
        env: &mut env,
    };
    import_nodes(&mut im, &graph.node)?;
    let mut outputs = Vec::new();
    let mut named = HashSet::new();
    for vi in &graph.output {
        let name = vi.name.clone().unwrap_or_default();
        let v = im
            .env
            .get(&name)
            .cloned()
            .ok_or_else(|| ImportError::Model(format!("output `{name}` is never computed")))?;
        let declared = declared_elem(vi)?;
        let (r, elem) =
            output_ref(&mut im, &v, declared).map_err(|e| node_error("output", &name, opset, e))?;
        let uop = im.env.names.map(&name);
        if !im.env.input_of.contains_key(&r) && named.insert(r) {
            im.g.name(r, &uop)
                .map_err(|e| ImportError::Model(e.message))?;
        }
        im.g.output(r);
        let shape =
            im.g.type_of(r)
                .map_err(|e| ImportError::Model(e.message))?
                .shape
                .clone();
        outputs.push(Port {
            onnx: name,
            uop,
            elem,
            shape,
            wrap: None,
            arithmetic: false,
        });
    }
    let graph_input = g.graph().interface.input;
    for (k, p) in inputs.iter_mut().enumerate() {
        p.wrap = env.wraps.get(&Ref::new(graph_input, k)).copied().flatten();
        p.arithmetic = env.as_float.contains(&Ref::new(graph_input, k));
    }
    Ok(Imported {
        graph: g.finish(),
        inputs,
        outputs,
        names: env.names,
        opset,
    })
}

/// The value of a graph output and the ONNX type it is read back as.
fn output_ref(im: &mut Im, v: &Val, declared: Option<ElemType>) -> CResult<(Ref, ElemType)> {
    let elem = match v {
        Val::Graph(_, e) => *e,
        Val::Known(c) => c.elem,
    };
    let r = im.graph(v)?;
    Ok((r, declared.unwrap_or(elem)))
}

/// Translates `nodes` in order into the builder, defining their outputs in the
/// innermost scope.
pub(crate) fn import_nodes(im: &mut Im, nodes: &[NodeProto]) -> Result<(), ImportError> {
    for node in nodes {
        let op = node.op_type.clone().unwrap_or_default();
        let label = node_label(node);
        let opset = im.env.opset;
        let entry = registry::lookup(&op, node.domain.as_deref().unwrap_or(""), opset)
            .ok_or_else(|| unsupported(&op, node, opset))?;
        let mut inputs = Vec::with_capacity(node.input.len());
        for name in &node.input {
            if name.is_empty() {
                inputs.push(None);
                continue;
            }
            let v = im.env.get(name).cloned().ok_or_else(|| ImportError::Node {
                op: op.clone(),
                node: label.clone(),
                opset,
                message: format!("input `{name}` is not defined before the node"),
            })?;
            inputs.push(Some(v));
        }
        let n = NodeIn {
            proto: node,
            inputs,
        };
        let outs = (entry.convert)(im, &n).map_err(|e| match e {
            CErr::NeedsConstant { input, slot } => ImportError::NeedsConstant {
                input,
                slot,
                op: op.clone(),
                node: label.clone(),
            },
            CErr::Msg(message) => ImportError::Node {
                op: op.clone(),
                node: label.clone(),
                opset,
                message,
            },
        })?;
        for (k, name) in node.output.iter().enumerate() {
            if name.is_empty() {
                continue;
            }
            let v = outs.get(k).cloned().ok_or_else(|| ImportError::Node {
                op: op.clone(),
                node: label.clone(),
                opset,
                message: format!("output {k} (`{name}`) is not supported"),
            })?;
            name_value(im, &v, name);
            im.env.set(name, v);
        }
    }
    Ok(())
}

/// Gives a graph value computed by a node the legal form of its ONNX name (a hint
/// for printing: the printer keeps names unique and avoids reserved words), unless
/// it already has one or is a graph input.
fn name_value(im: &mut Im, v: &Val, onnx: &str) {
    let Val::Graph(r, _) = v else { return };
    if im.env.input_of.contains_key(r) {
        return;
    }
    let unnamed =
        im.g.graph()
            .node(r.node)
            .and_then(|n| n.names.get(r.output))
            .is_some_and(Option::is_none);
    if unnamed {
        let _ = im.g.name(*r, &crate::names::legal_base(onnx));
    }
}

fn node_error(op: &str, node: &str, opset: i64, e: CErr) -> ImportError {
    match e {
        CErr::NeedsConstant { input, slot } => ImportError::NeedsConstant {
            input,
            slot,
            op: op.into(),
            node: node.into(),
        },
        CErr::Msg(message) => ImportError::Node {
            op: op.into(),
            node: node.into(),
            opset,
            message,
        },
    }
}

/// A node's name for messages: its name, else its first output.
pub(crate) fn node_label(node: &NodeProto) -> String {
    match node.name.as_deref() {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => node.output.first().cloned().unwrap_or_default(),
    }
}

fn unsupported(op: &str, node: &NodeProto, opset: i64) -> ImportError {
    let domain = node.domain.as_deref().unwrap_or("");
    let known = registry::OPS.iter().find(|o| o.name == op);
    let hint = match known {
        _ if !domain.is_empty() && domain != "ai.onnx" => {
            format!(": domain `{domain}` is not supported")
        }
        Some(o) => format!(": supported from opset {}", o.since),
        None => String::new(),
    };
    ImportError::UnsupportedOp {
        op: op.to_string(),
        node: node_label(node),
        opset,
        hint,
    }
}

/// Every node of `graph` and of its subgraphs has an entry in the registry.
fn check_ops(graph: &GraphProto, opset: i64) -> Result<(), ImportError> {
    for node in &graph.node {
        let op = node.op_type.as_deref().unwrap_or("");
        if registry::lookup(op, node.domain.as_deref().unwrap_or(""), opset).is_none() {
            return Err(unsupported(op, node, opset));
        }
        for a in &node.attribute {
            for g in a.g.iter().chain(&a.graphs) {
                check_ops(g, opset)?;
            }
        }
    }
    Ok(())
}

/// The opset of the default domain; 0 when the model imports none (a model of other
/// domains only: each of its ops is then reported as unsupported, naming its domain).
fn default_opset(model: &ModelProto) -> Result<i64, ImportError> {
    let v = model
        .opset_import
        .iter()
        .find(|o| matches!(o.domain.as_deref(), None | Some("") | Some("ai.onnx")))
        .and_then(|o| o.version)
        .unwrap_or(0);
    if !(0..=MAX_OPSET).contains(&v) {
        return Err(ImportError::Model(format!(
            "opset {v} is not supported (1 to {MAX_OPSET})"
        )));
    }
    Ok(v)
}

/// The graph's float type: f64 when the model's floats are all double, or when it
/// has no floats but integers (integer arithmetic is then exact up to 2^53), else
/// f32.
fn float_type(graph: &GraphProto) -> Result<DType, ImportError> {
    let mut codes: Vec<i32> = Vec::new();
    for vi in graph
        .input
        .iter()
        .chain(&graph.output)
        .chain(&graph.value_info)
    {
        if let Some(TypeValue::TensorType(t)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
            codes.extend(t.elem_type);
        }
    }
    codes.extend(graph.initializer.iter().filter_map(|t| t.data_type));
    let float = codes.contains(&1);
    let double = codes.contains(&11);
    match (float, double) {
        (true, true) => Err(ImportError::Model(
            "the model mixes float and double tensors; a uop graph has one float type".into(),
        )),
        (false, true) => Ok(DType::F64),
        (false, false)
            if codes
                .iter()
                .any(|&c| ElemType::from_code(c).is_ok_and(ElemType::is_int)) =>
        {
            Ok(DType::F64)
        }
        _ => Ok(DType::F32),
    }
}

/// Initializers as known tensors; returns their names.
fn read_initializers(graph: &GraphProto, env: &mut Env) -> Result<HashSet<String>, ImportError> {
    if let Some(s) = graph.sparse_initializer.first() {
        let name = s
            .values
            .as_ref()
            .and_then(|v| v.name.clone())
            .unwrap_or_default();
        return Err(ImportError::Type {
            tensor: name,
            message: "sparse initializers are not supported".into(),
        });
    }
    let mut names = HashSet::new();
    for t in &graph.initializer {
        let name = t.name.clone().unwrap_or_default();
        let h = HostTensor::from_proto(t).map_err(|message| ImportError::Type {
            tensor: name.clone(),
            message,
        })?;
        env.set(&name, Val::Known(Known::from_host(&h)));
        names.insert(name);
    }
    Ok(names)
}

/// The declared element type of a value, if it declares a tensor type.
fn declared_elem(vi: &ValueInfoProto) -> Result<Option<ElemType>, ImportError> {
    let name = vi.name.clone().unwrap_or_default();
    match vi.r#type.as_ref().and_then(|t| t.value.as_ref()) {
        None => Ok(None),
        Some(TypeValue::TensorType(t)) => match t.elem_type {
            None | Some(0) => Ok(None),
            Some(code) => {
                ElemType::from_code(code)
                    .map(Some)
                    .map_err(|message| ImportError::Type {
                        tensor: name,
                        message,
                    })
            }
        },
        Some(other) => Err(ImportError::Type {
            tensor: name,
            message: format!(
                "{} values are not supported (tensors only)",
                type_kind(other)
            ),
        }),
    }
}

fn type_kind(t: &TypeValue) -> &'static str {
    match t {
        TypeValue::TensorType(_) => "tensor",
        TypeValue::SequenceType(_) => "sequence",
        TypeValue::MapType(_) => "map",
        TypeValue::OptionalType(_) => "optional",
        TypeValue::SparseTensorType(_) => "sparse tensor",
        TypeValue::OpaqueType(_) => "opaque",
    }
}

/// The element type and shape of a graph input (dims: numbers, mapped `dim_param`s,
/// or a fresh name for an unknown size).
fn tensor_type(
    vi: &ValueInfoProto,
    names: &mut NameMap,
) -> Result<(ElemType, Vec<Expr>), ImportError> {
    let name = vi.name.clone().unwrap_or_default();
    let elem = declared_elem(vi)?.ok_or_else(|| ImportError::Type {
        tensor: name.clone(),
        message: "the input declares no element type".into(),
    })?;
    let Some(TypeValue::TensorType(t)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
        return Err(ImportError::Type {
            tensor: name,
            message: "the input declares no type".into(),
        });
    };
    let shape = t.shape.as_ref().ok_or_else(|| ImportError::Type {
        tensor: name.clone(),
        message: "the input declares no shape (its rank must be known)".into(),
    })?;
    let dims = shape
        .dim
        .iter()
        .enumerate()
        .map(|(k, d)| match &d.value {
            Some(DimValue::DimValue(v)) if (0..=i64::from(i32::MAX)).contains(v) => {
                Ok(Expr::Int(*v))
            }
            Some(DimValue::DimValue(v)) => Err(ImportError::Type {
                tensor: name.clone(),
                message: format!("dimension {k} ({v}) is out of range"),
            }),
            Some(DimValue::DimParam(p)) if !p.is_empty() => Ok(Expr::Name(names.map(p))),
            _ => Ok(Expr::Name(names.map(&format!("{name}_dim{k}")))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((elem, dims))
}
