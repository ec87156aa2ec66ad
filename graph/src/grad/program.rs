//! Micro-op programs written into the gradient graph as calls: the gradient
//! program of each forward call, and the small programs the graph-level rules need
//! (zeros, copies, tape rows, sums over iterations, selectors), built on a scratch
//! [`Builder`] so every shape rule is the builder's.

use std::collections::HashMap;

use uop_codegen::index::Expr;
use uop_codegen::uop::{
    BinaryOp, Builder, DType, NodeId as UopId, Operand, Program, ReduceOp, Uop, UopError,
};

use super::{Ctx, GradError};
use crate::builder::{Arg, Item};
use crate::infer::{fresh_dims, substitute, with_fresh_names};
use crate::ir::{NodeId, Ref, ValueType};

/// A scratch program over inputs of given types: sizes that are neither integers
/// nor plain names stand as fresh names (`_dim0`), which [`Ctx::emit`] puts back.
pub(crate) struct Scratch {
    /// The builder.
    pub b: Builder,
    /// The inputs, in order.
    pub inputs: Vec<UopId>,
    /// Every declared input (hidden ones carrying dims included).
    declared: Vec<UopId>,
    /// Fresh name -> the size it stands for.
    back: HashMap<String, Expr>,
    /// Size -> fresh name.
    fresh: HashMap<Expr, String>,
}

impl Scratch {
    /// A shape in the scratch program's names.
    pub fn shape(&self, shape: &[Expr]) -> Vec<Expr> {
        with_fresh_names(shape, &self.fresh)
    }
}

fn uop(e: UopError) -> GradError {
    GradError::Graph(format!("building a gradient program: {e}"))
}

impl Ctx<'_> {
    /// A scratch program with inputs of `types`; `extra` are further types whose
    /// sizes the program may name.
    pub(crate) fn scratch(
        &self,
        types: &[ValueType],
        extra: &[ValueType],
    ) -> Result<Scratch, GradError> {
        let mut b = Builder::new(self.fwd.dtype);
        let mut params: Vec<&str> = self.fwd.params.iter().map(String::as_str).collect();
        params.extend(self.tapes.iter().map(|t| t.param.as_str()));
        params.extend(self.bound.iter().map(String::as_str));
        for p in params {
            if !b.params().iter().any(|q| q == p) {
                b.param(p).map_err(uop)?;
            }
        }
        let all: Vec<ValueType> = types.iter().chain(extra).cloned().collect();
        let fresh = fresh_dims(&all);
        let mut inputs = Vec::new();
        for (k, t) in types.iter().enumerate() {
            let shape = with_fresh_names(&t.shape, &fresh);
            inputs.push(
                b.input_exprs(&format!("_in{k}"), t.dtype, shape)
                    .map_err(uop)?,
            );
        }
        let mut declared = inputs.clone();
        let mut names: Vec<String> = self.dims.iter().map(|(n, _)| n.clone()).collect();
        names.extend(fresh.values().cloned());
        names.sort();
        for (k, n) in names.into_iter().enumerate() {
            if !b.has_dim(&n) {
                let id = b
                    .input_exprs(&format!("_dims{k}"), DType::I32, vec![Expr::name(n)])
                    .map_err(uop)?;
                declared.push(id);
            }
        }
        let back = fresh.iter().map(|(e, n)| (n.clone(), e.clone())).collect();
        Ok(Scratch {
            b,
            inputs,
            declared,
            back,
            fresh,
        })
    }

    /// Writes the scratch program's `outputs` into the gradient graph, input k
    /// reading `inputs[k]`.
    pub(crate) fn finish(
        &mut self,
        s: Scratch,
        inputs: &[Ref],
        outputs: &[UopId],
    ) -> Result<Vec<Ref>, GradError> {
        let program = s.b.combine(&s.declared, outputs).map_err(uop)?;
        let mut given: Vec<Option<Ref>> = inputs.iter().copied().map(Some).collect();
        given.resize(program.inputs.len(), None);
        self.emit(&program, &given, &s.back)
    }

    /// In the loop of a chunked gradient graph: the `reindex` nodes of `program`
    /// that broadcast a value computed before the loop (a weight) over the looped
    /// rows. Written with the batch axis as 1 instead (the element-wise ops reading
    /// them broadcast it): the batch's size would be the whole batch's, not the
    /// chunk's. Only those read by element-wise ops alone and not returned.
    fn row_expansions(
        &self,
        program: &Program,
        at: &HashMap<UopId, Ref>,
        back: &HashMap<String, Expr>,
    ) -> Vec<UopId> {
        let Some((batch, chunk)) = &self.looping else {
            return Vec::new();
        };
        let mut elementwise_only: HashMap<UopId, bool> = HashMap::new();
        for node in &program.nodes {
            let element_wise = matches!(
                node.op,
                Uop::Unary { .. } | Uop::Binary { .. } | Uop::Where { .. }
            );
            for n in node.op.inputs() {
                *elementwise_only.entry(n).or_insert(true) &= element_wise;
            }
        }
        let mut out = Vec::new();
        for (k, node) in program.nodes.iter().enumerate() {
            let id = UopId(k);
            let Uop::Reindex { x, index, .. } = &node.op else {
                continue;
            };
            let from_before = at.get(x).is_some_and(|r| !self.depends_on(*r, *chunk));
            let rows = node
                .shape
                .first()
                .is_some_and(|d| substitute(d, back) == *batch);
            let reads_rows = index.iter().any(|e| {
                let mut hit = false;
                e.visit(&mut |v| hit |= *v == Expr::Index(0));
                hit
            });
            if from_before
                && rows
                && !reads_rows
                && elementwise_only.get(&id).copied().unwrap_or(false)
                && !program.outputs.contains(&id)
            {
                out.push(id);
            }
        }
        out
    }

    /// True when gradient-graph value `r` depends on node `on`.
    fn depends_on(&self, r: Ref, on: NodeId) -> bool {
        let g = self.b.graph();
        let mut stack = vec![r.node];
        let mut seen = std::collections::HashSet::new();
        while let Some(n) = stack.pop() {
            if n == on {
                return true;
            }
            if !seen.insert(n) {
                continue;
            }
            if let Some(node) = g.node(n) {
                stack.extend(node.uses().iter().map(|u| u.node));
            }
        }
        false
    }

    /// Writes `program` into the gradient graph as calls of micro ops: its input k
    /// reads `inputs[k]` (`None`: only its shape matters, it must not be read);
    /// fresh size names are replaced as `back` says. Returns its outputs.
    pub(crate) fn emit(
        &mut self,
        program: &Program,
        inputs: &[Option<Ref>],
        back: &HashMap<String, Expr>,
    ) -> Result<Vec<Ref>, GradError> {
        let mut at: HashMap<UopId, Ref> = HashMap::new();
        for (k, id) in program.inputs.iter().enumerate() {
            if let Some(Some(r)) = inputs.get(k) {
                at.insert(*id, *r);
            }
        }
        let list =
            |es: &[Expr]| Arg::List(es.iter().map(|e| Item::Expr(substitute(e, back))).collect());
        let expands = self.row_expansions(program, &at, back);
        for (k, node) in program.nodes.iter().enumerate() {
            let id = UopId(k);
            if node.op == Uop::Input {
                continue;
            }
            let tensor = |n: &UopId| {
                at.get(n).copied().map(Arg::Tensor).ok_or_else(|| {
                    GradError::Graph(format!(
                        "a gradient program reads `{}`, which has no value",
                        program.node(*n).name
                    ))
                })
            };
            let operand = |o: &Operand| match o {
                Operand::Node(n) => tensor(n),
                Operand::Const(v) => Ok(Arg::Float(*v)),
                Operand::Param(p) => Ok(Arg::Param(p.clone())),
            };
            let (op, args, attrs): (String, Vec<Arg>, Vec<(&str, Arg)>) = match &node.op {
                Uop::Input => continue,
                Uop::Reindex { x, index, fill } => {
                    let mut attrs = Vec::new();
                    if fill.to_bits() != 0f64.to_bits() {
                        attrs.push(("fill", Arg::Float(*fill)));
                    }
                    let mut shape = node.shape.clone();
                    if expands.contains(&id) {
                        shape[0] = Expr::Int(1);
                    }
                    (
                        "reindex".into(),
                        vec![tensor(x)?, list(&shape), list(index)],
                        attrs,
                    )
                }
                Uop::ReindexReduce { x, index, op } => (
                    "reindex_reduce".into(),
                    vec![tensor(x)?, list(&node.shape), list(index)],
                    vec![("op", Arg::Str(op.to_string()))],
                ),
                Uop::Unary { op, x } => (op.name().into(), vec![tensor(x)?], Vec::new()),
                Uop::Binary { op, a, b } => {
                    (op.name().into(), vec![operand(a)?, operand(b)?], Vec::new())
                }
                Uop::Where { c, a, b } => (
                    "where".into(),
                    vec![operand(c)?, operand(a)?, operand(b)?],
                    Vec::new(),
                ),
                Uop::Reduce { axes, x, .. } => {
                    let axes: Vec<Expr> = axes.iter().map(|&a| Expr::Int(a as i64)).collect();
                    (
                        node.op.kind().into(),
                        vec![tensor(x)?, list(&axes)],
                        Vec::new(),
                    )
                }
                Uop::Select { axis, x, index } => (
                    "select".into(),
                    vec![tensor(x)?, tensor(index)?],
                    vec![("axis", Arg::Int(*axis as i64))],
                ),
                Uop::Iota { axis } => (
                    "iota".into(),
                    vec![list(&node.shape), Arg::Int(*axis as i64)],
                    Vec::new(),
                ),
                Uop::Cast { x } => (
                    "cast".into(),
                    vec![tensor(x)?, Arg::Str(node.dtype.cast_target().into())],
                    Vec::new(),
                ),
            };
            let r = self.b.call(&op, &args, &attrs).map_err(GradError::build)?;
            at.insert(id, r);
        }
        program
            .outputs
            .iter()
            .map(|o| {
                at.get(o)
                    .copied()
                    .ok_or_else(|| GradError::Graph("a gradient program returns an input".into()))
            })
            .collect()
    }

    /// Zeros of type `ty`.
    pub(crate) fn zeros(&mut self, ty: &ValueType) -> Result<Ref, GradError> {
        let mut s = self.scratch(&[], std::slice::from_ref(ty))?;
        let shape = s.shape(&ty.shape);
        let one = s.b.iota_exprs(vec![Expr::Int(1)], &[], 0).map_err(uop)?;
        let z =
            s.b.reindex_exprs(one, shape, &[], vec![Expr::Int(0)], 0.0)
                .map_err(uop)?;
        Ok(self.finish(s, &[], &[z])?[0])
    }

    /// A copy of `x` (of type `ty`): a node of its own.
    pub(crate) fn copy(&mut self, x: Ref, ty: &ValueType) -> Result<Ref, GradError> {
        let mut s = self.scratch(std::slice::from_ref(ty), &[])?;
        let shape = s.shape(&ty.shape);
        let index = (0..shape.len()).map(Expr::Index).collect();
        let c =
            s.b.reindex_exprs(s.inputs[0], shape, &[], index, 0.0)
                .map_err(uop)?;
        Ok(self.finish(s, &[x], &[c])?[0])
    }

    /// `tape` with row `k` (a rank-0 count) replaced by `x`.
    pub(crate) fn tape_write(
        &mut self,
        tape: Ref,
        k: Ref,
        x: Ref,
        row: &ValueType,
        rows: &Expr,
    ) -> Result<Ref, GradError> {
        let tape_ty = stacked(row, rows);
        let scalar = ValueType::scalar(self.fwd.dtype);
        let mut s = self.scratch(&[tape_ty.clone(), scalar, row.clone()], &[])?;
        let shape = s.shape(&tape_ty.shape);
        let b = &mut s.b;
        let (t, kin, xin) = (s.inputs[0], s.inputs[1], s.inputs[2]);
        let at = b.iota_exprs(shape.clone(), &[], 0).map_err(uop)?;
        let kk = b
            .reindex_exprs(kin, shape.clone(), &[], vec![], 0.0)
            .map_err(uop)?;
        let here = b.binary(BinaryOp::Eq, at, kk).map_err(uop)?;
        let index = (1..shape.len()).map(Expr::Index).collect();
        let xx = b.reindex_exprs(xin, shape, &[], index, 0.0).map_err(uop)?;
        let w = b.where_(here, xx, t).map_err(uop)?;
        Ok(self.finish(s, &[tape, k, x], &[w])?[0])
    }

    /// Row `k` (a rank-0 count) of `tape`.
    pub(crate) fn tape_read(
        &mut self,
        tape: Ref,
        k: Ref,
        row: &ValueType,
        rows: &Expr,
    ) -> Result<Ref, GradError> {
        let tape_ty = stacked(row, rows);
        let scalar = ValueType::scalar(self.fwd.dtype);
        let mut s = self.scratch(&[tape_ty.clone(), scalar], std::slice::from_ref(row))?;
        let shape = s.shape(&tape_ty.shape);
        let row_shape = s.shape(&row.shape);
        let b = &mut s.b;
        let (t, kin) = (s.inputs[0], s.inputs[1]);
        let at = b.iota_exprs(shape.clone(), &[], 0).map_err(uop)?;
        let kk = b.reindex_exprs(kin, shape, &[], vec![], 0.0).map_err(uop)?;
        let here = b.binary(BinaryOp::Eq, at, kk).map_err(uop)?;
        let w = b.where_(here, t, 0.0).map_err(uop)?;
        let sum = b.reduce(ReduceOp::Sum, &[0], w).map_err(uop)?;
        let mut index = vec![Expr::Int(0)];
        index.extend((0..row_shape.len()).map(Expr::Index));
        let r = b
            .reindex_exprs(sum, row_shape, &[], index, 0.0)
            .map_err(uop)?;
        Ok(self.finish(s, &[tape, k], &[r])?[0])
    }

    /// The sum over axis 0 of `x`, whose type is `row` stacked `rows` times.
    pub(crate) fn sum_rows(
        &mut self,
        x: Ref,
        row: &ValueType,
        rows: &Expr,
    ) -> Result<Ref, GradError> {
        let ty = stacked(row, rows);
        let mut s = self.scratch(std::slice::from_ref(&ty), std::slice::from_ref(row))?;
        let row_shape = s.shape(&row.shape);
        let b = &mut s.b;
        let sum = b.reduce(ReduceOp::Sum, &[0], s.inputs[0]).map_err(uop)?;
        let mut index = vec![Expr::Int(0)];
        index.extend((0..row_shape.len()).map(Expr::Index));
        let r = b
            .reindex_exprs(sum, row_shape, &[], index, 0.0)
            .map_err(uop)?;
        Ok(self.finish(s, &[x], &[r])?[0])
    }

    /// Row `$index` of `x` (whose type is `row` stacked), inside a `parallel` body
    /// whose index `$index` is bound.
    pub(crate) fn row_at(
        &mut self,
        x: Ref,
        row: &ValueType,
        rows: &Expr,
        index: &str,
    ) -> Result<Ref, GradError> {
        let ty = stacked(row, rows);
        let mut s = self.scratch(std::slice::from_ref(&ty), std::slice::from_ref(row))?;
        let row_shape = s.shape(&row.shape);
        let mut at = vec![Expr::Param(index.to_string())];
        at.extend((0..row_shape.len()).map(Expr::Index));
        let r =
            s.b.reindex_exprs(s.inputs[0], row_shape, &[], at, 0.0)
                .map_err(uop)?;
        Ok(self.finish(s, &[x], &[r])?[0])
    }

    /// `sel` with negative values (a pass-through) replaced by `to`.
    pub(crate) fn pass_through_as(&mut self, sel: Ref, to: usize) -> Result<Ref, GradError> {
        let ty = self.type_of(sel)?;
        let mut s = self.scratch(std::slice::from_ref(&ty), &[])?;
        let b = &mut s.b;
        let x = s.inputs[0];
        let neg = b.binary(BinaryOp::Lt, x, 0.0).map_err(uop)?;
        let w = b.where_(neg, to as f64, x).map_err(uop)?;
        Ok(self.finish(s, &[sel], &[w])?[0])
    }

    /// `a + 1` or `a - 1` for a rank-0 count.
    pub(crate) fn step(&mut self, a: Ref, by: f64) -> Result<Ref, GradError> {
        self.b
            .call("add", &[Arg::Tensor(a), Arg::Float(by)], &[])
            .map_err(GradError::build)
    }

    /// `a < b` (b a number or a `$param`) as a value of the float type.
    pub(crate) fn less(&mut self, a: Ref, b: Arg) -> Result<Ref, GradError> {
        self.b
            .call("lt", &[Arg::Tensor(a), b], &[])
            .map_err(GradError::build)
    }
}

/// `row` stacked `rows` times on a new axis 0.
pub(crate) fn stacked(row: &ValueType, rows: &Expr) -> ValueType {
    let mut shape = vec![rows.clone()];
    shape.extend(row.shape.iter().cloned());
    ValueType::new(row.dtype, shape)
}
