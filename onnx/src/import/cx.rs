//! The state of an import ([`Env`]: the values by ONNX name, the float type, the
//! opset) and what every op translation works with ([`Im`]: the builder and the
//! environment; [`NodeIn`]: one node's inputs and attributes).

use std::collections::{HashMap, HashSet};

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;
use uop_graph::{Arg, BuildError, GraphBuilder, Item, Ref};

use crate::data::ElemType;
use crate::names::NameMap;
use crate::proto::{AttributeProto, GraphProto, NodeProto, TensorProto};

use super::value::{KData, Known, Val};

/// Why one node could not be translated (the caller adds op, node and opset).
#[derive(Debug)]
pub(crate) enum CErr {
    /// A message.
    Msg(String),
    /// Graph input `input` feeds argument `slot`, which must be known at import.
    NeedsConstant { input: String, slot: String },
}

impl From<String> for CErr {
    fn from(m: String) -> Self {
        CErr::Msg(m)
    }
}

impl From<&str> for CErr {
    fn from(m: &str) -> Self {
        CErr::Msg(m.to_string())
    }
}

impl From<BuildError> for CErr {
    fn from(e: BuildError) -> Self {
        CErr::Msg(e.message)
    }
}

pub(crate) type CResult<T> = Result<T, CErr>;

/// The import's state besides the builder.
pub(crate) struct Env {
    /// Values by ONNX name, innermost scope (subgraph) last.
    pub scopes: Vec<HashMap<String, Val>>,
    /// The graph's float type and the ONNX type it stands for.
    pub float: DType,
    /// The default domain's opset.
    pub opset: i64,
    /// The ONNX name of each graph input's value.
    pub input_of: HashMap<Ref, String>,
    /// ONNX names to uop names.
    pub names: NameMap,
    /// For graph inputs used as indices: the size of the axis they index (negative
    /// indices are wrapped at the boundary), or `None` when uses disagree.
    pub wraps: HashMap<Ref, Option<i64>>,
    /// Integer graph inputs the graph casts to its float type for arithmetic.
    pub as_float: HashSet<Ref>,
}

impl Env {
    /// The value named `name`, innermost scope first.
    pub fn get(&self, name: &str) -> Option<&Val> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Defines `name` in the innermost scope.
    pub fn set(&mut self, name: &str, v: Val) {
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.to_string(), v);
        }
    }

    /// The ONNX type standing for the float type.
    pub fn float_elem(&self) -> ElemType {
        if self.float == DType::F64 {
            ElemType::Double
        } else {
            ElemType::Float
        }
    }
}

/// The builder and the environment, as op translations see them.
pub(crate) struct Im<'a> {
    pub g: &'a mut GraphBuilder,
    pub env: &'a mut Env,
}

/// One node: its proto, a name for messages, and its inputs (`None` for an omitted
/// optional input).
pub(crate) struct NodeIn<'p> {
    pub proto: &'p NodeProto,
    pub inputs: Vec<Option<Val>>,
}

impl NodeIn<'_> {
    /// The op type.
    pub fn op(&self) -> &str {
        self.proto.op_type.as_deref().unwrap_or("")
    }

    /// How many outputs the model uses (trailing empty names dropped).
    pub fn outputs_used(&self) -> usize {
        let o = &self.proto.output;
        o.iter().rposition(|n| !n.is_empty()).map_or(0, |k| k + 1)
    }

    /// True when output `k` is used.
    pub fn wants_output(&self, k: usize) -> bool {
        self.proto.output.get(k).is_some_and(|n| !n.is_empty())
    }

    /// Input `k`, which must be present.
    pub fn input(&self, k: usize) -> CResult<&Val> {
        self.inputs
            .get(k)
            .and_then(Option::as_ref)
            .ok_or_else(|| CErr::Msg(format!("input {k} is missing")))
    }

    /// Input `k` if present.
    pub fn opt(&self, k: usize) -> Option<&Val> {
        self.inputs.get(k).and_then(Option::as_ref)
    }

    fn attr(&self, name: &str) -> Option<&AttributeProto> {
        self.proto
            .attribute
            .iter()
            .find(|a| a.name.as_deref() == Some(name))
    }

    /// An int attribute.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.attr(name).and_then(|a| a.i)
    }

    /// An int attribute with a default.
    pub fn int_or(&self, name: &str, default: i64) -> i64 {
        self.int(name).unwrap_or(default)
    }

    /// A float attribute with a default.
    pub fn float_or(&self, name: &str, default: f64) -> f64 {
        self.attr(name).and_then(|a| a.f).map_or(default, f64::from)
    }

    /// An ints attribute, if given.
    pub fn ints(&self, name: &str) -> Option<Vec<i64>> {
        self.attr(name).map(|a| a.ints.clone())
    }

    /// A per-spatial-axis ints attribute (kernel, strides, pads...): `count` values,
    /// each in `min..=2^31` (so that size arithmetic cannot overflow), or `default`
    /// when absent.
    pub fn spatial(&self, name: &str, count: usize, min: i64, default: i64) -> CResult<Vec<i64>> {
        let v = self.ints(name).unwrap_or_else(|| vec![default; count]);
        if v.len() != count {
            return Err(CErr::Msg(format!(
                "`{name}` has {} values, {count} expected",
                v.len()
            )));
        }
        if let Some(x) = v.iter().find(|&&x| x < min || x > 1 << 31) {
            return Err(CErr::Msg(format!("`{name}` value {x} is out of range")));
        }
        Ok(v)
    }

    /// A floats attribute, if given.
    pub fn floats(&self, name: &str) -> Option<Vec<f64>> {
        self.attr(name)
            .map(|a| a.floats.iter().map(|&x| f64::from(x)).collect())
    }

    /// A string attribute, if given.
    pub fn string(&self, name: &str) -> Option<String> {
        self.attr(name)
            .and_then(|a| a.s.as_ref())
            .map(|s| String::from_utf8_lossy(s).into_owned())
    }

    /// A tensor attribute, if given.
    pub fn tensor(&self, name: &str) -> Option<&TensorProto> {
        self.attr(name).and_then(|a| a.t.as_ref())
    }

    /// A graph attribute, if given.
    pub fn graph(&self, name: &str) -> Option<&GraphProto> {
        self.attr(name).and_then(|a| a.g.as_ref())
    }

    /// Names of the attributes given.
    pub fn attr_names(&self) -> impl Iterator<Item = &str> {
        self.proto
            .attribute
            .iter()
            .filter_map(|a| a.name.as_deref())
    }
}

impl Im<'_> {
    /// The default domain's opset.
    pub fn opset(&self) -> i64 {
        self.env.opset
    }

    /// Input `k` of `n` as a tensor known at import, or the error naming what it
    /// would take (a graph input to give as a constant).
    pub fn known(&self, n: &NodeIn, k: usize, slot: &str) -> CResult<Known> {
        match n.input(k)? {
            Val::Known(c) => Ok(c.clone()),
            Val::Graph(r, _) => match self.env.input_of.get(r) {
                Some(input) => Err(CErr::NeedsConstant {
                    input: input.clone(),
                    slot: slot.to_string(),
                }),
                None => Err(CErr::Msg(format!(
                    "the {slot} (input {k}) must be known when the model is imported, but it is computed at run time"
                ))),
            },
        }
    }

    /// Optional input `k` as integers known at import.
    pub fn opt_ints(&self, n: &NodeIn, k: usize, slot: &str) -> CResult<Option<Vec<i64>>> {
        if n.opt(k).is_none() {
            return Ok(None);
        }
        let v = self.known(n, k, slot)?.int_values();
        Ok(Some(v.map_err(|m| format!("{slot}: {m}"))?))
    }

    /// The shape of a value.
    pub fn shape(&self, v: &Val) -> CResult<Vec<Expr>> {
        match v {
            Val::Graph(r, _) => Ok(self.g.type_of(*r)?.shape.clone()),
            Val::Known(c) => Ok(c.shape.iter().map(|&d| Expr::Int(d as i64)).collect()),
        }
    }

    /// The rank of a value.
    pub fn rank(&self, v: &Val) -> CResult<usize> {
        Ok(self.shape(v)?.len())
    }

    /// The shape of a value, every size a number.
    pub fn static_shape(&self, v: &Val) -> CResult<Vec<usize>> {
        self.shape(v)?
            .iter()
            .map(|d| {
                d.as_int()
                    .and_then(|x| usize::try_from(x).ok())
                    .ok_or_else(|| CErr::Msg(format!("needs static sizes, the input has `{d}`")))
            })
            .collect()
    }

    /// A value as a graph value of its own type (a known tensor becomes a constant:
    /// floats and bools of the float type, integers i32).
    pub fn graph(&mut self, v: &Val) -> CResult<Ref> {
        match v {
            Val::Graph(r, _) => Ok(*r),
            Val::Known(c) => {
                let dtype = if c.elem.is_int() {
                    DType::I32
                } else {
                    self.env.float
                };
                self.constant(c, dtype)
            }
        }
    }

    /// A value as a graph value of the float type (bools as 0/1; integers known at
    /// import converted; i32 values of the graph cast, exactly in f64 and up to 2^24
    /// in f32: a graph input cast here is marked, and [`Imported::graph_inputs`]
    /// checks its values fit).
    ///
    /// [`Imported::graph_inputs`]: crate::Imported::graph_inputs
    pub fn float(&mut self, v: &Val) -> CResult<Ref> {
        match v {
            Val::Known(c) => self.constant(c, self.env.float),
            Val::Graph(r, _) => {
                if self.g.type_of(*r)?.dtype != DType::I32 {
                    return Ok(*r);
                }
                if self.env.input_of.contains_key(r) {
                    self.env.as_float.insert(*r);
                }
                self.call("cast", &[(*r).into(), Arg::Str("float".into())], &[])
            }
        }
    }

    /// A value as an i32 index tensor into an axis of `size` (when static: a graph
    /// input's negative indices are then wrapped at the boundary).
    pub fn index(&mut self, v: &Val, size: Option<i64>) -> CResult<Ref> {
        let r = self.graph(v)?;
        if self.env.input_of.contains_key(&r) {
            let w = self.env.wraps.entry(r).or_insert(size);
            if *w != size {
                *w = None;
            }
        }
        if self.g.type_of(r)?.dtype != DType::I32 {
            // Integers computed in the float type (ArgMax's, integer arithmetic's)
            // are integral: the cast is exact.
            return self.call("cast", &[r.into(), Arg::Str("i32".into())], &[]);
        }
        Ok(r)
    }

    /// A constant of `c`'s values in `dtype`.
    pub fn constant(&mut self, c: &Known, dtype: DType) -> CResult<Ref> {
        let data = match (&c.data, dtype) {
            (KData::Float(v), DType::I32) => v
                .iter()
                .map(|&x| {
                    if x.fract() == 0.0 && i32::try_from(x as i64).is_ok() {
                        Ok(x)
                    } else {
                        Err(CErr::Msg(format!("{x} is not an i32 value")))
                    }
                })
                .collect::<CResult<Vec<_>>>()?,
            (KData::Float(v), _) => v.iter().map(|&x| dtype.round(x)).collect(),
            (KData::Int(_), DType::I32) => crate::data::ints_to_i32(&c.int_values()?)?,
            (KData::Int(_), _) => c.float_values()?,
        };
        let t = Tensor::new(dtype, c.shape.clone(), data).map_err(|e| e.to_string())?;
        Ok(self.g.constant(t))
    }

    /// A call of a uop op.
    pub fn call(&mut self, op: &str, args: &[Arg], attrs: &[(&str, Arg)]) -> CResult<Ref> {
        Ok(self.g.call(op, args, attrs)?)
    }

    /// A call whose arguments are all tensors.
    pub fn op(&mut self, op: &str, args: &[Ref]) -> CResult<Ref> {
        Ok(self.g.op(op, args)?)
    }

    /// `op(a, s)` for a number `s`.
    pub fn with_scalar(&mut self, op: &str, a: Ref, s: f64) -> CResult<Ref> {
        self.call(op, &[a.into(), Arg::Float(s)], &[])
    }

    /// `op(s, a)` for a number `s`.
    pub fn scalar_with(&mut self, op: &str, s: f64, a: Ref) -> CResult<Ref> {
        self.call(op, &[Arg::Float(s), a.into()], &[])
    }

    /// `reshape(x, shape)`.
    pub fn reshape(&mut self, x: Ref, shape: &[Expr]) -> CResult<Ref> {
        if self.g.type_of(x)?.shape == shape {
            return Ok(x);
        }
        let list = Arg::List(shape.iter().cloned().map(Item::Expr).collect());
        self.call("reshape", &[x.into(), list], &[])
    }

    /// `permute(x, dims)` (the identity permutation is `x`).
    pub fn permute(&mut self, x: Ref, dims: &[usize]) -> CResult<Ref> {
        if dims.iter().enumerate().all(|(k, &d)| k == d) {
            return Ok(x);
        }
        let list = ints_arg(&dims.iter().map(|&d| d as i64).collect::<Vec<_>>());
        self.call("permute", &[x.into(), list], &[])
    }

    /// A float result of the node.
    pub fn fval(&self, r: Ref) -> Val {
        Val::Graph(r, self.env.float_elem())
    }
}

/// A list argument of integers.
pub(crate) fn ints_arg(v: &[i64]) -> Arg {
    Arg::List(v.iter().map(|&x| Item::Expr(Expr::Int(x))).collect())
}

/// A list argument of index expressions.
pub(crate) fn exprs_arg(v: &[Expr]) -> Arg {
    Arg::List(v.iter().cloned().map(Item::Expr).collect())
}
