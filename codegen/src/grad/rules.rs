//! One gradient rule per micro op, each written in micro ops with the [`Builder`]
//! that holds the gradient program.
//!
//! A rule receives `g`, the gradient of the loss with respect to a node's output,
//! and returns one contribution per operand that wants a gradient; the caller sums
//! contributions over all consumers. Forward values a rule reads are the replayed
//! (or supplied) forward nodes, so `exp` reads `y` and never recomputes `exp(x)` twice.
//!
//! Conventions shared with torch, where the math leaves a choice:
//! - ties of `maximum` / `minimum` split the gradient evenly between the operands,
//!   ties of `reduce_max` / `reduce_min` and of `max` / `min` scatters split it
//!   evenly among all elements that reach the extreme;
//! - `floor`, `ceil`, `sign`, comparisons, `argmax` / `argmin` have zero gradient;
//! - conditions of `where`, index tensors of `select`, scalars and `$params` get none;
//! - reads that fell outside their source (a `reindex` fill, an out-of-range
//!   `select` index, a dropped scatter target) pass no gradient back.

use std::f64::consts::PI;

use crate::index::Expr;
use crate::uop::{
    Accum, BinaryOp, Builder, NodeId, Operand, Program, ReduceOp, UnaryOp, Uop, UopError,
};

type Result<T> = std::result::Result<T, UopError>;

/// What a rule needs: the gradient program being built and where each forward
/// value lives in it.
pub(super) struct Ctx<'a> {
    /// Holds the gradient program.
    pub b: &'a mut Builder,
    /// The program being differentiated.
    pub forward: &'a Program,
    /// For each forward node, the node of the gradient program holding its value.
    pub value: &'a [NodeId],
}

impl Ctx<'_> {
    fn val(&self, n: NodeId) -> NodeId {
        self.value[n.0]
    }

    fn operand(&self, o: &Operand) -> Operand {
        match o {
            Operand::Node(n) => Operand::Node(self.val(*n)),
            other => other.clone(),
        }
    }

    fn shape(&self, forward: NodeId) -> Vec<Expr> {
        self.forward.node(forward).shape.clone()
    }

    fn mul(&mut self, a: impl Into<Operand>, b: impl Into<Operand>) -> Result<NodeId> {
        self.b.binary(BinaryOp::Mul, a, b)
    }

    fn neg(&mut self, x: NodeId) -> Result<NodeId> {
        self.b.unary(UnaryOp::Neg, x)
    }

    /// `x` of a shape with size 1 on `axes`, repeated along those axes to `shape`.
    fn broadcast(&mut self, x: NodeId, axes: &[usize], shape: Vec<Expr>) -> Result<NodeId> {
        let index = (0..shape.len())
            .map(|k| {
                if axes.contains(&k) {
                    Expr::Int(0)
                } else {
                    Expr::Index(k)
                }
            })
            .collect();
        self.b.reindex_exprs(x, shape, &[], index, 0.0)
    }

    /// A tensor shaped like `like` holding the scalar operand `v` everywhere (a tensor
    /// operand is returned as is). Element-wise uops need one tensor operand, so a
    /// `$param` that must become a tensor is chosen by a `where` on both sides.
    fn as_tensor(&mut self, v: &Operand, like: NodeId) -> Result<NodeId> {
        match v {
            Operand::Node(n) => Ok(*n),
            scalar => self.b.where_(like, scalar.clone(), scalar.clone()),
        }
    }

    /// A tensor of `shape` holding the value of the size expression `size`: an
    /// `iota` of length `size + 1` read at position `size`.
    fn size_value(&mut self, size: Expr, shape: Vec<Expr>) -> Result<NodeId> {
        let ramp = self
            .b
            .iota_exprs(vec![size.clone() + Expr::Int(1)], &[], 0)?;
        self.b.reindex_exprs(ramp, shape, &[], vec![size], 0.0)
    }
}

/// Zeros of `shape`, depending on no input: the first element of a one-element iota.
pub(super) fn zeros(b: &mut Builder, shape: Vec<Expr>) -> Result<NodeId> {
    let zero = b.iota_exprs(vec![Expr::Int(1)], &[], 0)?;
    b.reindex_exprs(zero, shape, &[], vec![Expr::Int(0)], 0.0)
}

/// The contributions of forward node `id`, whose output gradient is `g`, to the
/// gradients of its operands, as `(forward operand, gradient node)` pairs. Only
/// operands for which `wants` holds receive one.
pub(super) fn contributions(
    cx: &mut Ctx<'_>,
    id: NodeId,
    g: NodeId,
    wants: &dyn Fn(NodeId) -> bool,
) -> Result<Vec<(NodeId, NodeId)>> {
    let node = cx.forward.node(id).clone();
    let y = cx.val(id);
    let mut out = Vec::new();
    match &node.op {
        Uop::Input | Uop::Iota { .. } => {}
        Uop::Reindex { x, index, .. } => {
            if wants(*x) {
                // Every read of x[j] sends g back to j; reads that took the fill reach no j.
                let shape = cx.shape(*x);
                let gx =
                    cx.b.reindex_reduce_exprs(g, shape, &[], index.clone(), Accum::Add)?;
                out.push((*x, gx));
            }
        }
        Uop::ReindexReduce { x, index, op } => {
            if wants(*x) {
                out.push((*x, reindex_reduce(cx, *x, index, *op, y, g)?));
            }
        }
        Uop::Unary { op, x } => {
            if wants(*x)
                && let Some(gx) = unary(cx, *op, cx.val(*x), y, g)?
            {
                out.push((*x, gx));
            }
        }
        Uop::Binary { op, a, b } => {
            let wa = a.node().filter(|n| wants(*n));
            let wb = b.node().filter(|n| wants(*n));
            if wa.is_some() || wb.is_some() {
                let (va, vb) = (cx.operand(a), cx.operand(b));
                let (ga, gb) = binary(cx, *op, &va, &vb, y, g, wa.is_some(), wb.is_some())?;
                out.extend(wa.zip(ga));
                out.extend(wb.zip(gb));
            }
        }
        Uop::Where { c, a, b } => {
            let c = cx.operand(c);
            if let Some(a) = a.node().filter(|n| wants(*n)) {
                out.push((a, cx.b.where_(c.clone(), g, 0.0)?));
            }
            if let Some(b) = b.node().filter(|n| wants(*n)) {
                out.push((b, cx.b.where_(c, 0.0, g)?));
            }
        }
        Uop::Reduce { op, axes, x } => {
            if wants(*x)
                && let Some(gx) = reduce(cx, *op, axes, *x, y, g)?
            {
                out.push((*x, gx));
            }
        }
        Uop::Select { axis, x, index } => {
            if wants(*x) {
                out.push((*x, select(cx, *axis, *x, *index, g)?));
            }
        }
    }
    Ok(out)
}

/// `g * f'(x)`, or `None` where the derivative is zero everywhere it exists.
fn unary(cx: &mut Ctx<'_>, op: UnaryOp, x: NodeId, y: NodeId, g: NodeId) -> Result<Option<NodeId>> {
    let gx = match op {
        UnaryOp::Neg => cx.neg(g)?,
        UnaryOp::Abs => {
            let s = cx.b.unary(UnaryOp::Sign, x)?;
            cx.mul(g, s)?
        }
        UnaryOp::Exp => cx.mul(g, y)?,
        UnaryOp::Log => cx.b.binary(BinaryOp::Div, g, x)?,
        UnaryOp::Sqrt => {
            // d sqrt(x) = 1 / (2 y)
            let two_y = cx.mul(y, 2.0)?;
            cx.b.binary(BinaryOp::Div, g, two_y)?
        }
        UnaryOp::Rsqrt => {
            // d x^(-1/2) = -x^(-3/2) / 2 = -y^3 / 2
            let y2 = cx.mul(y, y)?;
            let y3 = cx.mul(y2, y)?;
            let d = cx.mul(y3, -0.5)?;
            cx.mul(g, d)?
        }
        UnaryOp::Recip => {
            // d (1/x) = -y^2
            let y2 = cx.mul(y, y)?;
            let t = cx.mul(g, y2)?;
            cx.neg(t)?
        }
        UnaryOp::Tanh => {
            let y2 = cx.mul(y, y)?;
            let d = cx.b.binary(BinaryOp::Sub, 1.0, y2)?;
            cx.mul(g, d)?
        }
        UnaryOp::Sigmoid => {
            let one_minus = cx.b.binary(BinaryOp::Sub, 1.0, y)?;
            let d = cx.mul(y, one_minus)?;
            cx.mul(g, d)?
        }
        UnaryOp::Sin => {
            let c = cx.b.unary(UnaryOp::Cos, x)?;
            cx.mul(g, c)?
        }
        UnaryOp::Cos => {
            let s = cx.b.unary(UnaryOp::Sin, x)?;
            let t = cx.mul(g, s)?;
            cx.neg(t)?
        }
        UnaryOp::Erf => {
            // d erf(x) = 2/sqrt(pi) * exp(-x^2)
            let x2 = cx.mul(x, x)?;
            let nx2 = cx.neg(x2)?;
            let e = cx.b.unary(UnaryOp::Exp, nx2)?;
            let d = cx.mul(e, 2.0 / PI.sqrt())?;
            cx.mul(g, d)?
        }
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Sign => return Ok(None),
    };
    Ok(Some(gx))
}

/// Contributions `(to a, to b)` of an element-wise binary op; only the wanted sides
/// are built. `a` and `b` are operands of the gradient program, `y` the op's value.
#[allow(clippy::too_many_arguments)]
fn binary(
    cx: &mut Ctx<'_>,
    op: BinaryOp,
    a: &Operand,
    b: &Operand,
    y: NodeId,
    g: NodeId,
    want_a: bool,
    want_b: bool,
) -> Result<(Option<NodeId>, Option<NodeId>)> {
    let mut ga = None;
    let mut gb = None;
    match op {
        BinaryOp::Add => {
            ga = want_a.then_some(g);
            gb = want_b.then_some(g);
        }
        BinaryOp::Sub => {
            ga = want_a.then_some(g);
            if want_b {
                gb = Some(cx.neg(g)?);
            }
        }
        BinaryOp::Mul => {
            if want_a {
                ga = Some(cx.mul(g, b.clone())?);
            }
            if want_b {
                gb = Some(cx.mul(g, a.clone())?);
            }
        }
        BinaryOp::Div => {
            if want_a {
                ga = Some(cx.b.binary(BinaryOp::Div, g, b.clone())?);
            }
            if want_b {
                // d(a/b)/db = -a / b^2
                let bb = cx.mul(b.clone(), b.clone())?;
                let ga_ = cx.mul(g, a.clone())?;
                let q = cx.b.binary(BinaryOp::Div, ga_, bb)?;
                gb = Some(cx.neg(q)?);
            }
        }
        BinaryOp::Pow => {
            if want_a {
                // d(a^b)/da = b * a^(b-1)
                let b_minus_1 = match b {
                    Operand::Const(v) => Operand::Const(v - 1.0),
                    other => {
                        let bt = cx.as_tensor(other, y)?;
                        Operand::Node(cx.b.binary(BinaryOp::Sub, bt, 1.0)?)
                    }
                };
                let p = cx.b.binary(BinaryOp::Pow, a.clone(), b_minus_1)?;
                let d = cx.mul(b.clone(), p)?;
                ga = Some(cx.mul(g, d)?);
            }
            if want_b {
                // d(a^b)/db = y * ln(a)
                let ln_a = match a {
                    Operand::Const(v) => Operand::Const(v.ln()),
                    other => {
                        let at = cx.as_tensor(other, y)?;
                        Operand::Node(cx.b.unary(UnaryOp::Log, at)?)
                    }
                };
                let d = cx.mul(y, ln_a)?;
                gb = Some(cx.mul(g, d)?);
            }
        }
        BinaryOp::Maximum | BinaryOp::Minimum => {
            // The share of `a`: 1 where it wins, 1/2 on a tie (like torch), else 0.
            let wins = if op == BinaryOp::Maximum {
                BinaryOp::Gt
            } else {
                BinaryOp::Lt
            };
            let win = cx.b.binary(wins, a.clone(), b.clone())?;
            let tie = cx.b.binary(BinaryOp::Eq, a.clone(), b.clone())?;
            let half_tie = cx.mul(tie, 0.5)?;
            let share_a = cx.b.binary(BinaryOp::Add, win, half_tie)?;
            if want_a {
                ga = Some(cx.mul(g, share_a)?);
            }
            if want_b {
                let share_b = cx.b.binary(BinaryOp::Sub, 1.0, share_a)?;
                gb = Some(cx.mul(g, share_b)?);
            }
        }
        BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => {
        }
    }
    Ok((ga, gb))
}

/// The gradient of `reduce(op, axes, x)` with value `y`, or `None` for argmax / argmin.
fn reduce(
    cx: &mut Ctx<'_>,
    op: ReduceOp,
    axes: &[usize],
    x_fwd: NodeId,
    y: NodeId,
    g: NodeId,
) -> Result<Option<NodeId>> {
    let shape = cx.shape(x_fwd);
    let x = cx.val(x_fwd);
    let gb = cx.broadcast(g, axes, shape.clone())?;
    let gx = match op {
        ReduceOp::Sum => gb,
        ReduceOp::Mean => {
            let count = axes
                .iter()
                .map(|&a| shape[a].clone())
                .reduce(|p, s| p * s)
                .unwrap_or(Expr::Int(1))
                .simplify();
            let n = cx.size_value(count, shape.clone())?;
            cx.b.binary(BinaryOp::Div, gb, n)?
        }
        ReduceOp::Prod => {
            // d prod / dx_k = product of the other elements. Without zeros that is y / x_k;
            // with one zero only the zero element gets (the product of the nonzero ones);
            // with two or more every element gets 0. `zeros == is_zero` selects exactly
            // the elements whose "product of the others" is the product of nonzeros.
            let is_zero = cx.b.binary(BinaryOp::Eq, x, 0.0)?;
            let zeros = cx.b.reduce(ReduceOp::Sum, axes, is_zero)?;
            let nonzero = cx.b.where_(is_zero, 1.0, x)?;
            let prod_nonzero = cx.b.reduce(ReduceOp::Prod, axes, nonzero)?;
            let zeros_b = cx.broadcast(zeros, axes, shape.clone())?;
            let prod_b = cx.broadcast(prod_nonzero, axes, shape.clone())?;
            let others = cx.b.binary(BinaryOp::Div, prod_b, nonzero)?;
            let contrib = cx.mul(gb, others)?;
            let selected = cx.b.binary(BinaryOp::Eq, zeros_b, is_zero)?;
            cx.b.where_(selected, contrib, 0.0)?
        }
        ReduceOp::Max | ReduceOp::Min => {
            // Every element equal to the extreme gets an even share (like torch.amax).
            let yb = cx.broadcast(y, axes, shape.clone())?;
            let hit = cx.b.binary(BinaryOp::Eq, x, yb)?;
            let hits = cx.b.reduce(ReduceOp::Sum, axes, hit)?;
            let hits_b = cx.broadcast(hits, axes, shape.clone())?;
            let share = cx.b.binary(BinaryOp::Div, gb, hits_b)?;
            cx.b.where_(hit, share, 0.0)?
        }
        ReduceOp::Argmax | ReduceOp::Argmin => return Ok(None),
    };
    Ok(Some(gx))
}

/// The gradient of the scatter `y = reindex_reduce(x, index, op)`.
fn reindex_reduce(
    cx: &mut Ctx<'_>,
    x_fwd: NodeId,
    index: &[Expr],
    op: Accum,
    y: NodeId,
    g: NodeId,
) -> Result<NodeId> {
    let shape = cx.shape(x_fwd);
    let y_shape = cx.b.shape(y).to_vec();
    // x[i] went to y[index(i)]; a dropped target gathers the fill 0: no gradient.
    let g_at =
        cx.b.reindex_exprs(g, shape.clone(), &[], index.to_vec(), 0.0)?;
    match op {
        Accum::Add => Ok(g_at),
        Accum::Mul => Err(UopError::BadExpr {
            op: "reindex_reduce".into(),
            message: "a product scatter has no gradient rule (the builder does not build one)"
                .into(),
        }),
        Accum::Max | Accum::Min => {
            // Elements that reached their target's extreme share its gradient evenly.
            let x = cx.val(x_fwd);
            let y_at =
                cx.b.reindex_exprs(y, shape.clone(), &[], index.to_vec(), 0.0)?;
            let hit = cx.b.binary(BinaryOp::Eq, x, y_at)?;
            let hits =
                cx.b.reindex_reduce_exprs(hit, y_shape, &[], index.to_vec(), Accum::Add)?;
            // Dropped targets read 1 here (and 0 from g_at), so they give 0, not 0/0.
            let hits_at = cx.b.reindex_exprs(hits, shape, &[], index.to_vec(), 1.0)?;
            let share = cx.b.binary(BinaryOp::Div, g_at, hits_at)?;
            cx.b.where_(hit, share, 0.0)
        }
    }
}

/// The gradient of `y = select(axis, x, index)` with respect to `x`.
///
/// A scatter cannot take a data-dependent index, so the gradient compares the index
/// against every position of `axis` (a one-hot tensor of rank + 1, the extra last axis
/// running over `x`'s axis) and sums over `y`'s axis.
fn select(
    cx: &mut Ctx<'_>,
    axis: usize,
    x_fwd: NodeId,
    index_fwd: NodeId,
    g: NodeId,
) -> Result<NodeId> {
    let x_shape = cx.shape(x_fwd);
    let index = cx.val(index_fwd);
    let y_shape = cx.b.shape(index).to_vec();
    let rank = x_shape.len();
    // Selecting from `iota + 1` turns the (i32 or float) index into a float position + 1,
    // and an out-of-range index into 0, which matches no position below.
    let ramp = cx.b.iota_exprs(x_shape.clone(), &[], axis)?;
    let ramp1 = cx.b.binary(BinaryOp::Add, ramp, 1.0)?;
    let pos1 = cx.b.select(axis, ramp1, index)?;

    let mut wide = y_shape.clone();
    wide.push(x_shape[axis].clone());
    let keep: Vec<Expr> = (0..rank).map(Expr::Index).collect();
    let pos1_w =
        cx.b.reindex_exprs(pos1, wide.clone(), &[], keep.clone(), 0.0)?;
    let target = cx.b.iota_exprs(wide.clone(), &[], rank)?;
    let target1 = cx.b.binary(BinaryOp::Add, target, 1.0)?;
    let one_hot = cx.b.binary(BinaryOp::Eq, pos1_w, target1)?;
    let g_w = cx.b.reindex_exprs(g, wide, &[], keep, 0.0)?;
    let routed = cx.b.where_(one_hot, g_w, 0.0)?;
    let summed = cx.b.reduce(ReduceOp::Sum, &[axis], routed)?;
    // summed[.., 0 at axis, .., j] is the gradient of x[.., j at axis, ..].
    let mut back: Vec<Expr> = (0..rank)
        .map(|k| {
            if k == axis {
                Expr::Int(0)
            } else {
                Expr::Index(k)
            }
        })
        .collect();
    back.push(Expr::Index(axis));
    cx.b.reindex_exprs(summed, x_shape, &[], back, 0.0)
}
