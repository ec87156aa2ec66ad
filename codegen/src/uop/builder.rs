//! Building micro-op graphs: one method per uop, each checking shapes and
//! expressions as it goes, and [`Builder::combine`] to cut a [`Program`] out.

use std::collections::{HashMap, HashSet};

use crate::index::{DimRef, Expr, is_plain_name, list, parse_expr};

use super::error::UopError;
use super::graph::{Node, NodeId, Operand, Program, Uop};
use super::ops::{Accum, BinaryOp, DType, ReduceOp, UnaryOp};

type Result<T> = std::result::Result<T, UopError>;

/// Builds a graph of uops for one float type.
///
/// ```
/// use uop_codegen::uop::{Builder, DType, BinaryOp, ReduceOp};
/// // matmul written with micro ops, NNC style: `dA0` is axis 0 of the first shape source.
/// let mut b = Builder::new(DType::F32);
/// let a = b.input("a", DType::F32, &["M", "K"])?;
/// let w = b.input("b", DType::F32, &["K", "N"])?;
/// let aa = b.reindex(a, &["dA0", "dA1", "dB1"], &[a, w], &["i0", "i1"])?;
/// let bb = b.reindex(w, &["dA0", "dB0", "dB1"], &[a, w], &["i1", "i2"])?;
/// let prod = b.binary(BinaryOp::Mul, aa, bb)?;
/// let c = b.reduce(ReduceOp::Sum, &[1], prod)?;
/// let program = b.combine(&[a, w], &[c])?;
/// assert_eq!(program.node(program.outputs[0]).shape.len(), 3);
/// # Ok::<(), uop_codegen::uop::UopError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    dtype: DType,
    params: Vec<String>,
    /// Named dimensions declared by inputs, with the input that declared each first.
    dims: HashMap<String, String>,
    nodes: Vec<Node>,
    /// Whether each node's name was given (true) or is a placeholder (false).
    named: Vec<bool>,
    /// Whether an unnamed node's placeholder is a hint ([`Builder::name_hint`]).
    hinted: Vec<bool>,
    /// The node of each given name.
    by_name: HashMap<String, NodeId>,
    assertions: Vec<(Expr, Expr)>,
}

/// Where an expression appears, which decides what it may mention.
#[derive(Clone, Copy)]
enum Context {
    /// A size: literals, named dims, params, shape sources.
    Size,
    /// An index over an iteration space of this rank.
    Index(usize),
}

impl Builder {
    /// An empty graph whose float tensors are `dtype` (f32 or f64).
    pub fn new(dtype: DType) -> Self {
        assert!(dtype.is_float(), "a program's float type is f32 or f64");
        Builder {
            dtype,
            params: Vec::new(),
            dims: HashMap::new(),
            nodes: Vec::new(),
            named: Vec::new(),
            hinted: Vec::new(),
            by_name: HashMap::new(),
            assertions: Vec::new(),
        }
    }

    /// The float type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// A node built so far.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0]
    }

    /// The symbolic shape of a node.
    pub fn shape(&self, id: NodeId) -> &[Expr] {
        &self.nodes[id.0].shape
    }

    /// Declared parameters.
    pub fn params(&self) -> &[String] {
        &self.params
    }

    /// True when `name` is a dimension declared by some input.
    pub fn has_dim(&self, name: &str) -> bool {
        self.dims.contains_key(name)
    }

    /// Declares an integer `$param` and returns it as an operand.
    pub fn param(&mut self, name: &str) -> Result<Operand> {
        if !is_plain_name(name) {
            return Err(UopError::BadExpr {
                op: "param".into(),
                message: format!("`{name}` is not a valid parameter name"),
            });
        }
        if self.params.iter().any(|p| p == name) {
            return Err(UopError::Duplicate(format!("${name}")));
        }
        self.params.push(name.to_string());
        Ok(Operand::Param(name.to_string()))
    }

    /// Gives a node a name (used by `.uop` text, and printed).
    pub fn set_name(&mut self, id: NodeId, name: &str) -> Result<()> {
        if self.by_name.contains_key(name) {
            return Err(UopError::Duplicate(name.to_string()));
        }
        if self.named[id.0] {
            self.by_name.remove(&self.nodes[id.0].name);
        }
        self.nodes[id.0].name = name.to_string();
        self.named[id.0] = true;
        self.by_name.insert(name.to_string(), id);
        Ok(())
    }

    /// Suggests a name for a node nobody named, after what it computes (a macro op's
    /// `max`, `shifted`, `exps`, `sum`): [`Builder::combine`] gives it that name
    /// instead of `t{k}`, with a suffix (`sum_1`) where the name is taken or not one
    /// a `.uop` text may give a tensor (a micro op, a keyword, a dimension). A node
    /// that has a name or a hint keeps it: the first suggestion wins, so a helper's
    /// name for what it made is not overwritten by a caller that got that node back.
    pub fn name_hint(&mut self, id: NodeId, hint: &str) -> Result<()> {
        let mut chars = hint.chars();
        let identifier = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !identifier {
            return Err(UopError::BadExpr {
                op: "name hint".into(),
                message: format!("`{hint}` is not a valid tensor name"),
            });
        }
        if !self.named[id.0] && !self.hinted[id.0] {
            self.nodes[id.0].name = hint.to_string();
            self.hinted[id.0] = true;
        }
        Ok(())
    }

    /// Looks a named node up.
    pub fn find(&self, name: &str) -> Option<NodeId> {
        self.by_name.get(name).copied()
    }

    fn push(&mut self, op: Uop, shape: Vec<Expr>, dtype: DType) -> NodeId {
        let id = NodeId(self.nodes.len());
        self.nodes.push(Node {
            name: format!("t{}", id.0),
            op,
            shape,
            dtype,
        });
        self.named.push(false);
        self.hinted.push(false);
        id
    }

    /// Declares an input. Each dim is a name (shared names must agree at run time)
    /// or a non-negative integer.
    pub fn input(&mut self, name: &str, dtype: DType, dims: &[&str]) -> Result<NodeId> {
        let dims = dims
            .iter()
            .map(|d| {
                parse_expr(d).map_err(|diag| UopError::Syntax {
                    op: format!("input `{name}`"),
                    diag,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        self.input_exprs(name, dtype, dims)
    }

    /// Declares an input of rank `rank` whose dims are named `{name}_0`, `{name}_1`, ...
    pub fn input_rank(&mut self, name: &str, rank: usize) -> Result<NodeId> {
        let dims = (0..rank)
            .map(|k| Expr::name(format!("{name}_{k}")))
            .collect();
        self.input_exprs(name, self.dtype, dims)
    }

    /// Declares an input with dims given as expressions (each a `Name` or a non-negative `Int`).
    pub fn input_exprs(&mut self, name: &str, dtype: DType, dims: Vec<Expr>) -> Result<NodeId> {
        let op = format!("input `{name}`");
        if dtype.is_float() && dtype != self.dtype {
            return Err(UopError::DType {
                op,
                what: "a float input".into(),
                expected: self.dtype.name().into(),
                found: dtype.name().into(),
            });
        }
        for d in &dims {
            match d {
                Expr::Int(v) if *v >= 0 => {}
                Expr::Name(n) if is_plain_name(n) => {
                    self.dims
                        .entry(n.clone())
                        .or_insert_with(|| name.to_string());
                }
                other => {
                    return Err(UopError::BadExpr {
                        op,
                        message: format!(
                            "dimension `{other}` must be a name or a non-negative integer"
                        ),
                    });
                }
            }
        }
        let id = self.push(Uop::Input, dims, dtype);
        self.set_name(id, name)?;
        Ok(id)
    }

    fn parse_all(&self, op: &str, srcs: &[&str]) -> Result<Vec<Expr>> {
        srcs.iter()
            .map(|s| {
                parse_expr(s).map_err(|diag| UopError::Syntax {
                    op: op.to_string(),
                    diag,
                })
            })
            .collect()
    }

    /// Resolves `dA0` references against `sources`, checks every variable exists in
    /// `context`, records `[=]` assertions, and simplifies.
    fn resolve(
        &mut self,
        op: &str,
        e: &Expr,
        sources: &[NodeId],
        context: Context,
    ) -> Result<Expr> {
        let mut error = None;
        let mut asserts = Vec::new();
        let resolved = e.map_leaves(&mut |leaf| match leaf {
            Expr::Dim(d, eq) => {
                let size = self.source_dim(op, *d, sources);
                if let Some(eq) = eq {
                    match (&size, self.source_dim(op, *eq, sources)) {
                        (Ok(a), Ok(b)) => asserts.push((a.clone(), b)),
                        (_, Err(err)) => error = Some(err),
                        _ => {}
                    }
                }
                match size {
                    Ok(s) => Some(s),
                    Err(err) => {
                        error = Some(err);
                        None
                    }
                }
            }
            Expr::Param(p) if !self.params.contains(p) => {
                error = Some(UopError::BadExpr {
                    op: op.into(),
                    message: format!("parameter `${p}` is not declared"),
                });
                None
            }
            Expr::Name(n) if !self.dims.contains_key(n) => {
                error = Some(UopError::BadExpr {
                    op: op.into(),
                    message: format!("`{n}` is not a dimension of any input"),
                });
                None
            }
            Expr::Index(n) => {
                match context {
                    Context::Size => {
                        error = Some(UopError::BadExpr {
                            op: op.into(),
                            message: format!("a size cannot depend on the index `i{n}`"),
                        })
                    }
                    Context::Index(rank) if *n >= rank => {
                        error = Some(UopError::BadExpr {
                            op: op.into(),
                            message: format!(
                                "`i{n}` is out of range: the iteration space has rank {rank}"
                            ),
                        })
                    }
                    Context::Index(_) => {}
                }
                None
            }
            _ => None,
        });
        if let Some(err) = error {
            return Err(err);
        }
        for (a, b) in asserts {
            let (a, b) = (a.simplify(), b.simplify());
            if a != b && !self.assertions.contains(&(a.clone(), b.clone())) {
                self.assertions.push((a, b));
            }
        }
        Ok(resolved.simplify())
    }

    fn source_dim(&self, op: &str, d: DimRef, sources: &[NodeId]) -> Result<Expr> {
        let Some(src) = sources.get(d.source) else {
            return Err(UopError::BadExpr {
                op: op.into(),
                message: format!(
                    "`{d}` names shape source {}, but only {} given",
                    d.source + 1,
                    sources.len()
                ),
            });
        };
        let shape = &self.nodes[src.0].shape;
        shape.get(d.axis).cloned().ok_or_else(|| UopError::BadExpr {
            op: op.into(),
            message: format!(
                "`{d}` names axis {} of `{}`, which has rank {}",
                d.axis,
                self.nodes[src.0].name,
                shape.len()
            ),
        })
    }

    fn resolve_shape(&mut self, op: &str, shape: &[Expr], sources: &[NodeId]) -> Result<Vec<Expr>> {
        shape
            .iter()
            .map(|e| self.resolve(op, e, sources, Context::Size))
            .collect()
    }

    fn resolve_index(
        &mut self,
        op: &str,
        index: &[Expr],
        sources: &[NodeId],
        rank: usize,
    ) -> Result<Vec<Expr>> {
        index
            .iter()
            .map(|e| self.resolve(op, e, sources, Context::Index(rank)))
            .collect()
    }

    /// `reindex` with fill 0, expressions as text (see [`Builder::reindex_exprs`]).
    pub fn reindex(
        &mut self,
        x: NodeId,
        shape: &[&str],
        sources: &[NodeId],
        index: &[&str],
    ) -> Result<NodeId> {
        self.reindex_fill(x, shape, sources, index, 0.0)
    }

    /// `reindex` with an explicit fill value, expressions as text.
    pub fn reindex_fill(
        &mut self,
        x: NodeId,
        shape: &[&str],
        sources: &[NodeId],
        index: &[&str],
        fill: f64,
    ) -> Result<NodeId> {
        let shape = self.parse_all("reindex", shape)?;
        let index = self.parse_all("reindex", index)?;
        self.reindex_exprs(x, shape, sources, index, fill)
    }

    /// `out[i] = x[index(i)]` over `shape`; reads outside `x` give `fill`.
    ///
    /// `shape` and `index` may use `dA0`-style references to the axes of `sources`
    /// (`A` is `sources[0]`); `index` has one expression per axis of `x`, over the
    /// output indices `i0..`.
    pub fn reindex_exprs(
        &mut self,
        x: NodeId,
        shape: Vec<Expr>,
        sources: &[NodeId],
        index: Vec<Expr>,
        fill: f64,
    ) -> Result<NodeId> {
        let op = "reindex";
        let rank_x = self.nodes[x.0].shape.len();
        if index.len() != rank_x {
            return Err(UopError::RankMismatch {
                op: op.into(),
                what: "the index list".into(),
                expected: rank_x,
                found: index.len(),
            });
        }
        let shape = self.resolve_shape(op, &shape, sources)?;
        let index = self.resolve_index(op, &index, sources, shape.len())?;
        let dtype = self.nodes[x.0].dtype;
        Ok(self.push(Uop::Reindex { x, index, fill }, shape, dtype))
    }

    /// `reindex_reduce` with expressions as text (see [`Builder::reindex_reduce_exprs`]).
    pub fn reindex_reduce(
        &mut self,
        x: NodeId,
        shape: &[&str],
        sources: &[NodeId],
        index: &[&str],
        op: Accum,
    ) -> Result<NodeId> {
        let shape = self.parse_all("reindex_reduce", shape)?;
        let index = self.parse_all("reindex_reduce", index)?;
        self.reindex_reduce_exprs(x, shape, sources, index, op)
    }

    /// Scatter: `out[index(i)] op= x[i]` for every `i` of `x`; `out` has `shape` and
    /// starts at the identity of `op`. `index` has one expression per output axis,
    /// over the indices of `x`; targets outside `out` are dropped.
    pub fn reindex_reduce_exprs(
        &mut self,
        x: NodeId,
        shape: Vec<Expr>,
        sources: &[NodeId],
        index: Vec<Expr>,
        op: Accum,
    ) -> Result<NodeId> {
        let name = "reindex_reduce";
        if op == Accum::Mul {
            return Err(UopError::BadExpr {
                op: name.into(),
                message: "op must be \"add\", \"max\" or \"min\"".into(),
            });
        }
        self.expect_float(name, "x", x)?;
        if index.len() != shape.len() {
            return Err(UopError::RankMismatch {
                op: name.into(),
                what: "the index list".into(),
                expected: shape.len(),
                found: index.len(),
            });
        }
        let shape = self.resolve_shape(name, &shape, sources)?;
        let rank_x = self.nodes[x.0].shape.len();
        let index = self.resolve_index(name, &index, sources, rank_x)?;
        Ok(self.push(Uop::ReindexReduce { x, index, op }, shape, self.dtype))
    }

    fn expect_float(&self, op: &str, what: &str, x: NodeId) -> Result<()> {
        let found = self.nodes[x.0].dtype;
        if found != self.dtype {
            return Err(UopError::DType {
                op: op.into(),
                what: format!("{what} (`{}`)", self.nodes[x.0].name),
                expected: self.dtype.name().into(),
                found: found.name().into(),
            });
        }
        Ok(())
    }

    /// `op(x)` element-wise.
    pub fn unary(&mut self, op: UnaryOp, x: NodeId) -> Result<NodeId> {
        self.expect_float(op.name(), "the operand", x)?;
        let shape = self.nodes[x.0].shape.clone();
        Ok(self.push(Uop::Unary { op, x }, shape, self.dtype))
    }

    /// The common shape of element-wise operands; scalars adapt to it.
    fn elementwise_shape(&self, op: &str, operands: &[&Operand]) -> Result<Vec<Expr>> {
        let mut shape: Option<(NodeId, Vec<Expr>)> = None;
        for operand in operands {
            match operand {
                Operand::Node(n) => {
                    self.expect_float(op, "an operand", *n)?;
                    let s = &self.nodes[n.0].shape;
                    match &shape {
                        None => shape = Some((*n, s.clone())),
                        Some((first, first_shape)) if first_shape != s => {
                            return Err(UopError::ShapeMismatch {
                                op: op.into(),
                                left: format!(
                                    "`{}` {}",
                                    self.nodes[first.0].name,
                                    list(first_shape)
                                ),
                                right: format!("`{}` {}", self.nodes[n.0].name, list(s)),
                            });
                        }
                        Some(_) => {}
                    }
                }
                Operand::Param(p) if !self.params.contains(p) => {
                    return Err(UopError::BadExpr {
                        op: op.into(),
                        message: format!("parameter `${p}` is not declared"),
                    });
                }
                Operand::Param(_) | Operand::Const(_) => {}
            }
        }
        shape.map(|(_, s)| s).ok_or_else(|| UopError::BadExpr {
            op: op.into(),
            message: "at least one operand must be a tensor".into(),
        })
    }

    /// `op(a, b)` element-wise: tensor operands of equal shape, or a scalar / `$param` on one side.
    pub fn binary(
        &mut self,
        op: BinaryOp,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Result<NodeId> {
        let (a, b) = (a.into(), b.into());
        let shape = self.elementwise_shape(op.name(), &[&a, &b])?;
        Ok(self.push(Uop::Binary { op, a, b }, shape, self.dtype))
    }

    /// `c != 0 ? a : b` element-wise.
    pub fn where_(
        &mut self,
        c: impl Into<Operand>,
        a: impl Into<Operand>,
        b: impl Into<Operand>,
    ) -> Result<NodeId> {
        let (c, a, b) = (c.into(), a.into(), b.into());
        let shape = self.elementwise_shape("where", &[&c, &a, &b])?;
        Ok(self.push(Uop::Where { c, a, b }, shape, self.dtype))
    }

    /// Reduces `axes` of `x` (rank kept, reduced axes become 1). Axes may be given in
    /// any order but not repeated.
    pub fn reduce(&mut self, op: ReduceOp, axes: &[usize], x: NodeId) -> Result<NodeId> {
        let name = format!("reduce_{}", op.name());
        self.expect_float(&name, "the operand", x)?;
        let rank = self.nodes[x.0].shape.len();
        let mut sorted = axes.to_vec();
        sorted.sort_unstable();
        for (k, &axis) in sorted.iter().enumerate() {
            if axis >= rank {
                return Err(UopError::BadAxis {
                    op: name,
                    axis: axis as i64,
                    rank,
                });
            }
            if k > 0 && sorted[k - 1] == axis {
                return Err(UopError::RepeatedAxis {
                    op: name,
                    axis: axis as i64,
                });
            }
        }
        let mut shape = self.nodes[x.0].shape.clone();
        for &axis in &sorted {
            shape[axis] = Expr::Int(1);
        }
        Ok(self.push(
            Uop::Reduce {
                op,
                axes: sorted,
                x,
            },
            shape,
            self.dtype,
        ))
    }

    /// Gather along `axis`: `out[i] = x[i with i[axis] = index[i]]`, with the shape of
    /// `index`, which must match `x` on every other axis. Out-of-range indices read 0.
    pub fn select(&mut self, axis: usize, x: NodeId, index: NodeId) -> Result<NodeId> {
        let op = "select";
        self.expect_float(op, "x", x)?;
        let xs = &self.nodes[x.0].shape;
        let is = &self.nodes[index.0].shape;
        if axis >= xs.len() {
            return Err(UopError::BadAxis {
                op: op.into(),
                axis: axis as i64,
                rank: xs.len(),
            });
        }
        let other_axes_match = xs.len() == is.len()
            && xs
                .iter()
                .zip(is)
                .enumerate()
                .all(|(k, (a, b))| k == axis || a == b);
        if !other_axes_match {
            return Err(UopError::ShapeMismatch {
                op: op.into(),
                left: format!("x {}", list(xs)),
                right: format!("index {} (must match x except on axis {axis})", list(is)),
            });
        }
        let shape = is.clone();
        Ok(self.push(Uop::Select { axis, x, index }, shape, self.dtype))
    }

    /// `x` converted to `dtype`, the program's float type or i32: i32 to float exactly
    /// (f32 rounds beyond 2^24), float to i32 truncated toward zero (saturating, NaN
    /// to 0). A cast to `x`'s own type is `x`.
    pub fn cast(&mut self, x: NodeId, dtype: DType) -> Result<NodeId> {
        if dtype != DType::I32 && dtype != self.dtype {
            return Err(UopError::DType {
                op: "cast".into(),
                what: "the target type".into(),
                expected: format!("i32 or {}", self.dtype.name()),
                found: dtype.name().into(),
            });
        }
        if self.nodes[x.0].dtype == dtype {
            return Ok(x);
        }
        let shape = self.nodes[x.0].shape.clone();
        Ok(self.push(Uop::Cast { x }, shape, dtype))
    }

    /// Records that two sizes must be equal at run time (what `dA0[=dB1]` records, and the
    /// `.uop` text's `assert a == b`). The sizes may mention named dims, `$params` and literals.
    pub fn assert_equal(&mut self, a: Expr, b: Expr) -> Result<()> {
        let a = self.resolve("assert", &a, &[], Context::Size)?;
        let b = self.resolve("assert", &b, &[], Context::Size)?;
        if a != b && !self.assertions.contains(&(a.clone(), b.clone())) {
            self.assertions.push((a, b));
        }
        Ok(())
    }

    /// `iota` with a textual shape.
    pub fn iota(&mut self, shape: &[&str], sources: &[NodeId], axis: usize) -> Result<NodeId> {
        let shape = self.parse_all("iota", shape)?;
        self.iota_exprs(shape, sources, axis)
    }

    /// A tensor of `shape` whose value is the index along `axis`.
    pub fn iota_exprs(
        &mut self,
        shape: Vec<Expr>,
        sources: &[NodeId],
        axis: usize,
    ) -> Result<NodeId> {
        let shape = self.resolve_shape("iota", &shape, sources)?;
        if axis >= shape.len() {
            return Err(UopError::BadAxis {
                op: "iota".into(),
                axis: axis as i64,
                rank: shape.len(),
            });
        }
        Ok(self.push(Uop::Iota { axis }, shape, self.dtype))
    }

    /// Cuts a program out of the graph: the declared `inputs` (in this order, unused
    /// ones kept and reported by [`Program::unused_inputs`]) and everything `outputs`
    /// need. An output that depends on an input not listed is an error.
    pub fn combine(&self, inputs: &[NodeId], outputs: &[NodeId]) -> Result<Program> {
        let err = |m: String| Err(UopError::Combine(m));
        if outputs.is_empty() {
            return err("the program has no outputs".into());
        }
        let mut seen = HashSet::new();
        for i in inputs {
            if self.nodes[i.0].op != Uop::Input {
                return err(format!("`{}` is not an input", self.nodes[i.0].name));
            }
            if !seen.insert(*i) {
                return err(format!("input `{}` is listed twice", self.nodes[i.0].name));
            }
        }
        let mut seen = HashSet::new();
        for o in outputs {
            if !seen.insert(*o) {
                return err(format!("output `{}` is listed twice", self.nodes[o.0].name));
            }
        }
        let seen_inputs: HashSet<NodeId> = inputs.iter().copied().collect();
        let mut live = vec![false; self.nodes.len()];
        for o in outputs {
            live[o.0] = true;
        }
        for i in (0..self.nodes.len()).rev() {
            if live[i] {
                for n in self.nodes[i].op.inputs() {
                    live[n.0] = true;
                }
            }
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if live[i] && node.op == Uop::Input && !seen_inputs.contains(&NodeId(i)) {
                return err(format!(
                    "an output depends on input `{}`, which is not among the declared inputs",
                    node.name
                ));
            }
        }
        // Declared inputs first, then the live nodes in build order.
        let order: Vec<usize> = inputs
            .iter()
            .map(|i| i.0)
            .chain((0..self.nodes.len()).filter(|&i| live[i] && self.nodes[i].op != Uop::Input))
            .collect();
        let mut new_id = vec![usize::MAX; self.nodes.len()];
        for (k, &old) in order.iter().enumerate() {
            new_id[old] = k;
        }
        let mut taken: HashSet<String> = order
            .iter()
            .filter(|&&i| self.named[i])
            .map(|&i| self.nodes[i].name.clone())
            .collect();
        if order.iter().any(|&i| self.hinted[i]) {
            // Names the text format keeps for other things: a hint never takes them.
            taken.extend(crate::text::micro_ops().into_iter().map(|m| m.name));
            taken.extend(crate::text::KEYWORDS.iter().map(|k| k.to_string()));
            taken.extend(self.dims.keys().cloned());
        }
        let mut fresh = FreshNames {
            taken,
            next_suffix: HashMap::new(),
        };
        let mut nodes = Vec::with_capacity(order.len());
        for (k, &old) in order.iter().enumerate() {
            let node = &self.nodes[old];
            let name = if self.named[old] {
                node.name.clone()
            } else {
                let base = if self.hinted[old] {
                    node.name.clone()
                } else {
                    format!("t{k}")
                };
                fresh.take(&base)
            };
            nodes.push(Node {
                name,
                op: node.op.map_nodes(&|n| NodeId(new_id[n.0])),
                shape: node.shape.clone(),
                dtype: node.dtype,
            });
        }
        Ok(Program {
            dtype: self.dtype,
            params: self.params.clone(),
            nodes,
            inputs: (0..inputs.len()).map(NodeId).collect(),
            outputs: outputs.iter().map(|o| NodeId(new_id[o.0])).collect(),
            assertions: self.assertions.clone(),
        })
    }
}

/// Hands out unique node names: `base` (`t{k}` or a hint), or `{base}_{n}` with the
/// first `n` not taken. Names are only ever added, so the search for a base resumes
/// where it stopped last time: a hint used by `k` nodes costs O(k) in all, not O(k²).
struct FreshNames {
    taken: HashSet<String>,
    next_suffix: HashMap<String, usize>,
}

impl FreshNames {
    fn take(&mut self, base: &str) -> String {
        let name = if self.taken.contains(base) {
            let n = self.next_suffix.entry(base.to_string()).or_insert(1);
            loop {
                let candidate = format!("{base}_{n}");
                *n += 1;
                if !self.taken.contains(&candidate) {
                    break candidate;
                }
            }
        } else {
            base.to_string()
        };
        self.taken.insert(name.clone());
        name
    }
}
