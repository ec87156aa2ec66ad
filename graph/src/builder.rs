//! [`GraphBuilder`]: graphs from Rust, with the same power as the text format.
//!
//! Values are [`Ref`]s. A sub-function is a closure that receives its parameters and
//! returns its results; it may use any value built before it (closures over the
//! enclosing scopes). Every node is typed as it is added, so a mistake is reported
//! where it is made.

use std::sync::Arc;

use thiserror::Error;
use uop_codegen::index::{Expr, parse_expr};
use uop_codegen::tensor::Tensor;
use uop_codegen::text::Registry;
use uop_codegen::uop::DType;

use crate::infer::expected_types;
use crate::ir::{
    Call, CallValue, Flags, Graph, Interface, ListItem, Node, NodeId, Op, Ref, ScanAxis, Source,
    ValueType,
};

/// Why a node could not be added.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct BuildError {
    /// What went wrong, naming the op or construct.
    pub message: String,
}

impl BuildError {
    /// An error with `message`.
    pub fn new(message: impl Into<String>) -> Self {
        BuildError {
            message: message.into(),
        }
    }
}

type Result<T> = std::result::Result<T, BuildError>;

/// An argument of [`GraphBuilder::call`].
#[derive(Clone, Debug, PartialEq)]
pub enum Arg {
    /// A tensor.
    Tensor(Ref),
    /// An integer.
    Int(i64),
    /// A number.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A string.
    Str(String),
    /// A `$param` (its name, without `$`).
    Param(String),
    /// A list of index expressions or tensors.
    List(Vec<Item>),
}

/// An item of an [`Arg::List`].
#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// An index expression.
    Expr(Expr),
    /// A tensor (`sources=[a, b]`).
    Tensor(Ref),
}

impl From<Ref> for Arg {
    fn from(r: Ref) -> Self {
        Arg::Tensor(r)
    }
}

impl From<f64> for Arg {
    fn from(v: f64) -> Self {
        Arg::Float(v)
    }
}

impl From<i64> for Arg {
    fn from(v: i64) -> Self {
        Arg::Int(v)
    }
}

impl Arg {
    /// A list of index expressions written as text (`["M", "K", "N"]`, `["i0 + 1"]`).
    pub fn exprs(items: &[&str]) -> Result<Arg> {
        items
            .iter()
            .map(|s| {
                parse_expr(s)
                    .map(Item::Expr)
                    .map_err(|d| BuildError::new(format!("`{s}`: {}", d.headline())))
            })
            .collect::<Result<Vec<_>>>()
            .map(Arg::List)
    }
}

/// The body of a sub-function: given the builder and the parameters, build the body
/// and return its results.
pub type Body<'a> = Box<dyn FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>> + 'a>;

/// Builds a [`Graph`] node by node.
///
/// ```
/// use uop_graph::{GraphBuilder, Source};
/// use uop_codegen::uop::DType;
///
/// // v <- y * v, i <- i + 1 while i < 5, from v = 1, i = 0
/// let mut g = GraphBuilder::new(DType::F32);
/// let y = g.input("y", DType::F32, &[])?;
/// let one = g.scalar(1.0);
/// let zero = g.scalar(0.0);
/// let out = g.while_loop(
///     &[one, zero],
///     |g, s| Ok(vec![g.call("lt", &[s[1].into(), 5.0.into()], &[])?.into()]),
///     |g, s| {
///         let v = g.call("mul", &[y.into(), s[0].into()], &[])?;
///         let i = g.call("add", &[s[1].into(), 1.0.into()], &[])?;
///         Ok(vec![v.into(), i.into()])
///     },
/// )?;
/// g.output(out[0]);
/// let graph = g.finish();
/// assert_eq!(graph.interface.outputs.len(), 1);
/// # Ok::<(), uop_graph::BuildError>(())
/// ```
pub struct GraphBuilder {
    graph: Graph,
    /// `$name`s of the enclosing `parallel` bodies being built, innermost last.
    bound: Vec<(String, Ref)>,
}

impl GraphBuilder {
    /// A builder for a graph of float type `dtype` over the macro-op library.
    pub fn new(dtype: DType) -> Self {
        GraphBuilder::from_graph(Graph::new(dtype))
    }

    /// A builder whose calls name ops of `registry`.
    pub fn with_registry(dtype: DType, registry: Arc<Registry>) -> Self {
        GraphBuilder::from_graph(Graph::with_registry(dtype, registry))
    }

    /// Continues building `graph` (new nodes are appended).
    pub fn from_graph(graph: Graph) -> Self {
        GraphBuilder {
            graph,
            bound: Vec::new(),
        }
    }

    /// The graph so far.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// The graph.
    pub fn finish(self) -> Graph {
        self.graph
    }

    /// The type of a value.
    pub fn type_of(&self, r: Ref) -> Result<&ValueType> {
        self.graph
            .type_of(r)
            .ok_or_else(|| BuildError::new(format!("{r} is not a value of this graph")))
    }

    /// Declares a `$param`.
    pub fn param(&mut self, name: &str) -> Result<()> {
        if self.graph.params.iter().any(|p| p == name) {
            return Err(BuildError::new(format!("${name} is declared twice")));
        }
        self.graph.params.push(name.to_string());
        Ok(())
    }

    /// Adds a size equality checked at run time.
    pub fn assert_equal(&mut self, a: Expr, b: Expr) {
        self.graph.assertions.push((a, b));
    }

    /// Declares a graph input; each dim is a name or a non-negative integer.
    pub fn input(&mut self, name: &str, dtype: DType, dims: &[&str]) -> Result<Ref> {
        let shape = dims
            .iter()
            .map(|d| {
                parse_expr(d)
                    .map_err(|e| BuildError::new(format!("input `{name}`: {}", e.headline())))
            })
            .collect::<Result<Vec<_>>>()?;
        self.input_type(name, ValueType::new(dtype, shape))
    }

    /// Declares a graph input of type `ty`.
    pub fn input_type(&mut self, name: &str, ty: ValueType) -> Result<Ref> {
        if ty.dtype.is_float() && ty.dtype != self.graph.dtype {
            return Err(BuildError::new(format!(
                "input `{name}` is {}, but the graph's float type is {}",
                ty.dtype.name(),
                self.graph.dtype.name()
            )));
        }
        let id = self.graph.interface.input;
        let node = self
            .graph
            .node_mut(id)
            .ok_or_else(|| BuildError::new("the graph has no Input node"))?;
        let Op::Input { names } = &mut node.op else {
            return Err(BuildError::new(
                "the graph's interface input is not an Input node",
            ));
        };
        if names.iter().any(|n| n == name) {
            return Err(BuildError::new(format!("input `{name}` is declared twice")));
        }
        names.push(name.to_string());
        node.outputs.push(ty);
        node.names.push(Some(name.to_string()));
        Ok(Ref::new(id, node.outputs.len() - 1))
    }

    /// A constant tensor.
    pub fn constant(&mut self, t: Tensor) -> Ref {
        let ty = ValueType::new(
            t.dtype,
            t.shape.iter().map(|&d| Expr::Int(d as i64)).collect(),
        );
        self.push(Op::Const(t), Vec::new(), vec![ty])
    }

    /// A rank-0 constant of the graph's float type.
    pub fn scalar(&mut self, v: f64) -> Ref {
        let dtype = self.graph.dtype;
        let t = Tensor::filled(dtype, Vec::new(), dtype.round(v));
        self.constant(t)
    }

    /// A call of op `op` (micro or macro) with positional `args` and named `attrs`.
    pub fn call(&mut self, op: &str, args: &[Arg], attrs: &[(&str, Arg)]) -> Result<Ref> {
        let (call, inputs) = self.call_node(op, args, attrs);
        self.add(Op::Call(call), inputs)
    }

    /// The [`Call`] and the node inputs that [`Self::call`] would add (tensors
    /// deduplicated in order of first use, then the `$names` bound by enclosing
    /// `parallel` bodies that the call mentions), without adding anything.
    pub fn call_node(&self, op: &str, args: &[Arg], attrs: &[(&str, Arg)]) -> (Call, Vec<Ref>) {
        let mut inputs: Vec<Ref> = Vec::new();
        let mut input = |r: Ref| match inputs.iter().position(|x| *x == r) {
            Some(k) => k,
            None => {
                inputs.push(r);
                inputs.len() - 1
            }
        };
        let mut params = Vec::new();
        let mut value = |a: &Arg| match a {
            Arg::Tensor(r) => CallValue::Input(input(*r)),
            Arg::Int(v) => CallValue::Int(*v),
            Arg::Float(v) => CallValue::Float(*v),
            Arg::Bool(v) => CallValue::Bool(*v),
            Arg::Str(v) => CallValue::Str(v.clone()),
            Arg::Param(p) => {
                params.push(p.clone());
                CallValue::Param(p.clone())
            }
            Arg::List(items) => CallValue::List(
                items
                    .iter()
                    .map(|i| match i {
                        Item::Expr(e) => {
                            expr_params(e, &mut params);
                            ListItem::Expr(e.clone())
                        }
                        Item::Tensor(r) => ListItem::Input(input(*r)),
                    })
                    .collect(),
            ),
        };
        let args: Vec<CallValue> = args.iter().map(&mut value).collect();
        let attrs: Vec<(String, CallValue)> = attrs
            .iter()
            .map(|(n, a)| (n.to_string(), value(a)))
            .collect();
        let mut call = Call {
            op: op.to_string(),
            args,
            attrs,
            bind: Vec::new(),
        };
        for p in params {
            if call.bind.iter().any(|(n, _)| *n == p) {
                continue;
            }
            if let Some((_, r)) = self.bound.iter().rev().find(|(n, _)| *n == p) {
                let k = input(*r);
                call.bind.push((p, k));
            }
        }
        (call, inputs)
    }

    /// A call whose arguments are all tensors.
    pub fn op(&mut self, op: &str, args: &[Ref]) -> Result<Ref> {
        let args: Vec<Arg> = args.iter().map(|r| Arg::Tensor(*r)).collect();
        self.call(op, &args, &[])
    }

    /// Gives output `r` a name (used when printing).
    pub fn name(&mut self, r: Ref, name: &str) -> Result<()> {
        let node = self
            .graph
            .node_mut(r.node)
            .filter(|n| r.output < n.outputs.len())
            .ok_or_else(|| BuildError::new(format!("{r} is not a value of this graph")))?;
        node.names[r.output] = Some(name.to_string());
        Ok(())
    }

    /// Adds a graph output.
    pub fn output(&mut self, s: impl Into<Source>) {
        self.graph.interface.outputs.push(s.into());
    }

    /// Adds a graph output the source names `name` (`output y`): the output keeps
    /// that name whatever the value is named ([`Graph::output_name`]).
    pub fn output_named(&mut self, s: impl Into<Source>, name: &str) {
        let k = self.graph.interface.outputs.len();
        self.graph.output_names.resize(k, None);
        self.graph.output_names.push(Some(name.to_string()));
        self.graph.interface.outputs.push(s.into());
    }

    /// A sub-function: an Input node with parameters `names` of `types`, then the
    /// body `body` builds; returns the interface for a super node.
    pub fn sub_function(
        &mut self,
        names: Vec<String>,
        types: Vec<ValueType>,
        body: Body<'_>,
    ) -> Result<Interface> {
        if names.len() != types.len() {
            return Err(BuildError::new(format!(
                "{} parameter names for {} types",
                names.len(),
                types.len()
            )));
        }
        let n = types.len();
        let id = self.graph.fresh_id();
        let mut node = Node::new(
            id,
            Op::Input {
                names: names.clone(),
            },
            Vec::new(),
            types,
        );
        node.names = names.into_iter().map(Some).collect();
        self.graph.push(node);
        let params: Vec<Ref> = (0..n).map(|k| Ref::new(id, k)).collect();
        let outputs = body(self, &params)?;
        Ok(Interface { input: id, outputs })
    }

    /// Adds a node of kind `op` reading `inputs`, typed by the rules of its kind.
    pub fn add(&mut self, op: Op, inputs: Vec<Ref>) -> Result<Ref> {
        Ok(self
            .add_multi(op, inputs)?
            .into_iter()
            .next()
            .unwrap_or(Ref::new(NodeId(0), 0)))
    }

    /// Adds a node of kind `op` reading `inputs` and returns all its outputs.
    pub fn add_multi(&mut self, op: Op, inputs: Vec<Ref>) -> Result<Vec<Ref>> {
        for r in &inputs {
            self.type_of(*r)?;
        }
        let id = self.graph.fresh_id();
        let probe = Node::new(id, op, inputs, Vec::new());
        let kind = probe.op.kind();
        let outputs = expected_types(&self.graph, &probe)
            .map_err(|m| BuildError::new(format!("{kind}: {m}")))?;
        let n = outputs.len();
        let node = Node {
            outputs,
            names: vec![None; n],
            ..probe
        };
        self.graph.push(node);
        Ok((0..n).map(|k| Ref::new(id, k)).collect())
    }

    fn push(&mut self, op: Op, inputs: Vec<Ref>, outputs: Vec<ValueType>) -> Ref {
        let id = self.graph.fresh_id();
        self.graph.push(Node::new(id, op, inputs, outputs));
        Ref::new(id, 0)
    }

    fn types(&self, refs: &[Ref]) -> Result<Vec<ValueType>> {
        refs.iter().map(|r| self.type_of(*r).cloned()).collect()
    }

    /// `while(cond, body, init...)`: the final state.
    pub fn while_loop(
        &mut self,
        init: &[Ref],
        cond: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
        body: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
    ) -> Result<Vec<Ref>> {
        let types = self.types(init)?;
        let names = param_names(types.len());
        let cond = self.sub_function(names.clone(), types.clone(), Box::new(cond))?;
        let body = self.sub_function(names, types, Box::new(body))?;
        self.add_multi(Op::While { cond, body }, init.to_vec())
    }

    /// `if(c, then, else, args...)`.
    pub fn if_then_else(
        &mut self,
        c: Ref,
        args: &[Ref],
        then: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
        else_: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
    ) -> Result<Vec<Ref>> {
        let types = self.types(args)?;
        let names = param_names(types.len());
        let then = self.sub_function(names.clone(), types.clone(), Box::new(then))?;
        let else_ = self.sub_function(names, types, Box::new(else_))?;
        let mut inputs = vec![c];
        inputs.extend_from_slice(args);
        self.add_multi(Op::If { then, else_ }, inputs)
    }

    /// `case(sel, [branches], args...)`.
    pub fn case(&mut self, sel: Ref, args: &[Ref], branches: Vec<Body<'_>>) -> Result<Vec<Ref>> {
        let types = self.types(args)?;
        let names = param_names(types.len());
        let branches = branches
            .into_iter()
            .map(|b| self.sub_function(names.clone(), types.clone(), b))
            .collect::<Result<Vec<_>>>()?;
        let mut inputs = vec![sel];
        inputs.extend_from_slice(args);
        self.add_multi(Op::Case { branches }, inputs)
    }

    /// `parallel(count, body, args...)`: inside `body`, `$index` is the iteration
    /// (usable in index expressions of calls); the body receives `args` only.
    pub fn parallel(
        &mut self,
        count: Expr,
        index: &str,
        args: &[Ref],
        body: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
    ) -> Result<Vec<Ref>> {
        let mut types = vec![ValueType::scalar(DType::I32)];
        types.extend(self.types(args)?);
        let mut names = vec![index.to_string()];
        names.extend(param_names(args.len()));
        let index_name = index.to_string();
        let body = self.sub_function(
            names,
            types,
            Box::new(move |g: &mut GraphBuilder, params: &[Ref]| {
                g.bound.push((index_name, params[0]));
                let out = body(g, &params[1..]);
                g.bound.pop();
                out
            }),
        )?;
        self.add_multi(
            Op::Parallel {
                count,
                index: index.to_string(),
                body,
            },
            args.to_vec(),
        )
    }

    /// `scan(count, body, init..., xs...)`: a sequential loop of `count` iterations
    /// (an integer, dimension name or `$param`; every scanned input has `count`
    /// positions on its axis). `body` receives the index (rank-0 i32, also `$index`
    /// in index expressions), the state, then one slice of each scanned input (its
    /// axis removed, at the position [`ScanAxis::position`] gives); it returns the
    /// next state, then one value for each axis of `stacked`. The outputs are the
    /// final state, then the stacked values.
    pub fn scan(
        &mut self,
        count: Expr,
        index: &str,
        init: &[Ref],
        xs: &[(Ref, ScanAxis)],
        stacked: &[ScanAxis],
        body: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
    ) -> Result<Vec<Ref>> {
        let mut inputs = init.to_vec();
        inputs.extend(xs.iter().map(|(r, _)| *r));
        let scanned: Vec<ScanAxis> = xs.iter().map(|(_, a)| *a).collect();
        let shape = crate::scan::ScanShape {
            count: &count,
            carried: init.len(),
            scanned: &scanned,
            stacked,
        };
        let types = crate::scan::body_params(&shape, &self.types(&inputs)?)
            .map_err(|m| BuildError::new(format!("scan: {m}")))?;
        let mut names = vec![index.to_string()];
        names.extend(param_names(types.len() - 1));
        let index_name = index.to_string();
        let body = self.sub_function(
            names,
            types,
            Box::new(move |g: &mut GraphBuilder, params: &[Ref]| {
                g.bound.push((index_name, params[0]));
                let out = body(g, params);
                g.bound.pop();
                out
            }),
        )?;
        self.add_multi(
            Op::Scan {
                count,
                index: index.to_string(),
                carried: init.len(),
                scanned,
                stacked: stacked.to_vec(),
                body,
            },
            inputs,
        )
    }

    /// `call(F, args...)`: a function kept as a unit of its own.
    pub fn no_inline(
        &mut self,
        name: &str,
        args: &[Ref],
        body: impl FnOnce(&mut GraphBuilder, &[Ref]) -> Result<Vec<Source>>,
    ) -> Result<Vec<Ref>> {
        let types = self.types(args)?;
        let body = self.sub_function(param_names(types.len()), types, Box::new(body))?;
        self.add_multi(
            Op::NoInline {
                name: name.to_string(),
                body,
            },
            args.to_vec(),
        )
    }

    /// `chunk(x, size=C)`.
    pub fn chunk(&mut self, x: Ref, size: Expr) -> Result<Ref> {
        self.add(Op::Chunk { axis: 0, size }, vec![x])
    }

    /// `chunk(x, g, ..., size=C)`: several values with the same rows chunked together;
    /// one output per value.
    pub fn chunk_many(&mut self, values: &[Ref], size: Expr) -> Result<Vec<Ref>> {
        self.add_multi(Op::Chunk { axis: 0, size }, values.to_vec())
    }

    /// `sum_chunks(v)`: `v` summed over the iterations of the chunk loop.
    pub fn sum_chunks(&mut self, v: Ref) -> Result<Ref> {
        self.add(Op::SumChunks, vec![v])
    }

    /// A Sink reading `values` (kept alive; RETAIN).
    pub fn sink(&mut self, values: &[Ref]) -> Result<NodeId> {
        let r = self.add_multi(Op::Sink, values.to_vec())?;
        debug_assert!(r.is_empty());
        let id = self
            .graph
            .nodes()
            .last()
            .map(|n| n.id)
            .ok_or_else(|| BuildError::new("no node"))?;
        if let Some(n) = self.graph.node_mut(id) {
            n.flags = n.flags | Flags::RETAIN;
        }
        Ok(id)
    }

    /// Pushes a `$name` bound to `index` for the calls built until [`Self::unbind`]
    /// (what [`Self::parallel`] does around its body; for parsers building bodies
    /// through [`Self::sub_function`]).
    pub fn bind(&mut self, name: &str, index: Ref) {
        self.bound.push((name.to_string(), index));
    }

    /// Pops the innermost binding.
    pub fn unbind(&mut self) {
        self.bound.pop();
    }
}

/// Default parameter names `p0`, `p1`, ...
fn param_names(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("p{k}")).collect()
}

/// Collects the `$params` an expression mentions.
pub(crate) fn expr_params(e: &Expr, out: &mut Vec<String>) {
    match e {
        Expr::Param(p) => out.push(p.clone()),
        Expr::Neg(a) => expr_params(a, out),
        Expr::Bin(_, a, b) => {
            expr_params(a, out);
            expr_params(b, out);
        }
        _ => {}
    }
}
