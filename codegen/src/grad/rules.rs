//! One gradient rule per micro op, each written in micro ops with the [`Builder`]
//! that holds the gradient program.
//!
//! A rule receives `g`, the gradient of the loss with respect to a node's output,
//! and returns one contribution per operand that wants a gradient; the caller sums
//! contributions over all consumers. Forward values a rule reads are the replayed
//! (or supplied) forward nodes, so `exp` reads `y` and never recomputes `exp(x)` twice.
//!
//! Conventions shared with torch, where the math leaves a choice:
//! - ties of `maximum` / `minimum` between two tensors split the gradient evenly
//!   between them; a tie with a number or `$param` gives the tensor none (so
//!   `relu(x) = maximum(x, 0)` has gradient 0 at 0, torch's `relu`);
//!   ties of `reduce_max` / `reduce_min` and of `max` / `min` scatters split it
//!   evenly among all elements that reach the extreme;
//! - `floor`, `ceil`, `sign`, comparisons, `argmax` / `argmin` have zero gradient;
//! - conditions of `where`, index tensors of `select`, scalars and `$params` get none;
//! - reads that fell outside their source (a `reindex` fill, an out-of-range
//!   `select` index, a dropped scatter target) pass no gradient back.

use std::f64::consts::PI;

use std::collections::BTreeMap;

use crate::index::{Expr, IndexOp, equal_sizes};
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
        self.reindex(x, shape, index, 0.0)
    }

    /// `reindex(x, shape, index, fill)`, read straight from `x`'s own source when `x`
    /// is itself a reindex and every read of `x` is in range by construction (each
    /// subscript a loop index over an axis of the same size, or 0 on an axis of size
    /// 1): then the outer fill is never used and the two index maps compose. Rules
    /// chain relabelings (the adjoint of a dropped axis, then a broadcast back), and
    /// the optimizer substitutes only temporaries read where they are stored, so an
    /// unfused chain would leave a copy of every link.
    fn reindex(
        &mut self,
        x: NodeId,
        shape: Vec<Expr>,
        index: Vec<Expr>,
        fill: f64,
    ) -> Result<NodeId> {
        let inner = self.b.node(x).clone();
        if let Uop::Reindex {
            x: source,
            index: inner_index,
            fill: inner_fill,
        } = &inner.op
        {
            let in_range = index.iter().zip(&inner.shape).all(|(e, size)| match e {
                Expr::Index(j) => shape.get(*j).is_some_and(|s| equal_sizes(s, size)),
                Expr::Int(0) => *size == Expr::Int(1),
                _ => false,
            });
            if in_range {
                let composed = inner_index
                    .iter()
                    .map(|e| {
                        e.map_leaves(&mut |leaf| match leaf {
                            Expr::Index(k) => index.get(*k).cloned(),
                            _ => None,
                        })
                        .simplify()
                    })
                    .collect();
                return self
                    .b
                    .reindex_exprs(*source, shape, &[], composed, *inner_fill);
            }
        }
        self.b.reindex_exprs(x, shape, &[], index, fill)
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
        // A cast has an i32 side: nothing to differentiate (truncation is flat).
        Uop::Input | Uop::Iota { .. } | Uop::Cast { .. } => {}
        Uop::Reindex { x, index, .. } => {
            if wants(*x) {
                out.push((*x, reindex(cx, id, *x, index, g)?));
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
            let wins = if op == BinaryOp::Maximum {
                BinaryOp::Gt
            } else {
                BinaryOp::Lt
            };
            if a.node().is_none() || b.node().is_none() {
                // Against a number or `$param`, the number wins a tie: the tensor's
                // share is 1 only where it is strictly the extreme, so
                // relu(x) = maximum(x, 0) has gradient 0 at 0, like torch's relu.
                if want_a {
                    let win = cx.b.binary(wins, a.clone(), b.clone())?;
                    ga = Some(cx.mul(g, win)?);
                }
                if want_b {
                    let win = cx.b.binary(wins, b.clone(), a.clone())?;
                    gb = Some(cx.mul(g, win)?);
                }
                return Ok((ga, gb));
            }
            // Between two tensors, the share of `a`: 1 where it wins, 1/2 on a tie
            // (like torch's maximum), else 0.
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
    let g_at = cx.reindex(g, shape.clone(), index.to_vec(), 0.0)?;
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
            let y_at = cx.reindex(y, shape.clone(), index.to_vec(), 0.0)?;
            let hit = cx.b.binary(BinaryOp::Eq, x, y_at)?;
            let hits =
                cx.b.reindex_reduce_exprs(hit, y_shape, &[], index.to_vec(), Accum::Add)?;
            // Dropped targets read 1 here (and 0 from g_at), so they give 0, not 0/0.
            let hits_at = cx.reindex(hits, shape, index.to_vec(), 1.0)?;
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
    let pos1_w = cx.reindex(pos1, wide.clone(), keep.clone(), 0.0)?;
    let target = cx.b.iota_exprs(wide.clone(), &[], rank)?;
    let target1 = cx.b.binary(BinaryOp::Add, target, 1.0)?;
    let one_hot = cx.b.binary(BinaryOp::Eq, pos1_w, target1)?;
    let g_w = cx.reindex(g, wide, keep, 0.0)?;
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
    cx.reindex(summed, x_shape, back, 0.0)
}

/// The gradient of `y = reindex(x, index)` (forward node `id`) with respect to `x`.
///
/// Every read of `x[p]` sends `g` back to `p`; reads that took the fill reach no `p`.
/// In general that is a scatter (`reindex_reduce` with `+`), which the loop IR runs
/// as a zero-reset plus an accumulation. When the index map can be solved for the
/// output position (see [`Inverse`]) the same sum is a gather instead: `gx[p]` reads
/// `g` at the solved position and sums over the axes left free, which lowers to one
/// loop nest with a carried sum (or to a plain copy for a permutation).
fn reindex(cx: &mut Ctx<'_>, id: NodeId, x: NodeId, index: &[Expr], g: NodeId) -> Result<NodeId> {
    let x_shape = cx.shape(x);
    let y_shape = cx.shape(id);
    let inverse = Inverse::of(index, &x_shape, y_shape.len());
    // The gradient of an input is an output of the gradient program: a sum lowered
    // as a reduction lands in a temporary with the summed axes kept (size 1) and
    // needs a copy dropping them, while a scatter accumulates straight into the
    // output, in a loop nest the optimizer fuses with its neighbours'. So an input
    // takes the gather only when nothing is summed (a relabeling: one copy).
    let is_input = cx.forward.node(x).op == Uop::Input;
    let Some(inv) = inverse.filter(|inv| !is_input || inv.free.is_empty()) else {
        return cx
            .b
            .reindex_reduce_exprs(g, x_shape, &[], index.to_vec(), Accum::Add);
    };
    let rank = x_shape.len();
    if inv.broadcast_only {
        // Free axes are axes of g itself: sum them in place, then relabel.
        let base = if inv.free.is_empty() {
            g
        } else {
            cx.b.reduce(ReduceOp::Sum, &inv.free, g)?
        };
        let read = inv.read(|_| Expr::Int(0));
        let base_shape = cx.b.shape(base).to_vec();
        let identity = read.len() == rank
            && (0..rank).all(|k| {
                equal_sizes(&base_shape[k], &x_shape[k])
                    && (read[k] == Expr::Index(k)
                        || (read[k] == Expr::Int(0) && x_shape[k] == Expr::Int(1)))
            });
        if identity {
            return Ok(base);
        }
        return cx.reindex(base, x_shape, read, 0.0);
    }
    // Free axes that a solved subscript also depends on: gather g into x's axes
    // followed by the free ones, sum those, drop them.
    let mut wide = x_shape.clone();
    wide.extend(inv.free.iter().map(|&j| y_shape[j].clone()));
    let read = inv.read(|pos| Expr::Index(rank + pos));
    let gathered = cx.reindex(g, wide.clone(), read, 0.0)?;
    let free_axes: Vec<usize> = (rank..wide.len()).collect();
    let summed = cx.b.reduce(ReduceOp::Sum, &free_axes, gathered)?;
    let drop = (0..wide.len())
        .map(|a| {
            if a < rank {
                Expr::Index(a)
            } else {
                Expr::Int(0)
            }
        })
        .collect();
    cx.reindex(summed, x_shape, drop, 0.0)
}

/// A reindex index map solved for the output position.
///
/// It exists when every subscript of `x` is `c * iA + (other terms) + const` with
/// `c = ±1`, where no output axis appears in two subscripts (a subscript without
/// any index must be the literal 0 on an axis of literal size 1). Then an element
/// `x[p]` is read exactly at the output positions with `iA = c * (p_k - others -
/// const)` for every subscript `k`, the remaining ("free") output axes taking every
/// value: a permutation, a broadcast, a slice, a pad, a convolution window.
struct Inverse {
    /// Per output axis: how it is solved, if it is.
    solved: Vec<Option<Solved>>,
    /// Output axes not solved for, ascending.
    free: Vec<usize>,
    /// No solved subscript mentions a free axis (they are pure broadcast axes).
    broadcast_only: bool,
}

/// Output axis `a` solved from subscript `k`: `a = c * (p_k - sum(others) - constant)`.
struct Solved {
    k: usize,
    c: i64,
    others: Vec<(usize, i64)>,
    constant: Expr,
}

impl Inverse {
    fn of(index: &[Expr], x_shape: &[Expr], y_rank: usize) -> Option<Inverse> {
        let mut solved: Vec<Option<Solved>> = (0..y_rank).map(|_| None).collect();
        let mut seen = vec![false; y_rank];
        let mut broadcast_only = true;
        for (k, e) in index.iter().enumerate() {
            let (terms, constant) = linear(e)?;
            if terms.is_empty() {
                // A fixed position: only x[.., 0, ..] is read, which is all of x
                // only on an axis of size 1.
                if x_shape[k] != Expr::Int(1) || constant.simplify() != Expr::Int(0) {
                    return None;
                }
                continue;
            }
            for &j in terms.keys() {
                if j >= y_rank || seen[j] {
                    return None;
                }
                seen[j] = true;
            }
            let (&a, &c) = terms.iter().find(|(_, c)| c.abs() == 1)?;
            let others: Vec<(usize, i64)> = terms
                .iter()
                .filter(|(j, _)| **j != a)
                .map(|(j, c)| (*j, *c))
                .collect();
            broadcast_only &= others.is_empty();
            solved[a] = Some(Solved {
                k,
                c,
                others,
                constant,
            });
        }
        let free = (0..y_rank).filter(|j| solved[*j].is_none()).collect();
        Some(Inverse {
            solved,
            free,
            broadcast_only,
        })
    }

    /// Where to read `g` for each output axis, as expressions over the gather space
    /// (`x`'s axes, then the free axes): a solved axis from its subscript's position
    /// and the free axes it depends on, free axis number `pos` at `free_at(pos)`.
    fn read(&self, free_at: impl Fn(usize) -> Expr) -> Vec<Expr> {
        let free_expr = |j: usize| -> Expr {
            let pos = self.free.iter().position(|f| *f == j).unwrap_or(0);
            free_at(pos)
        };
        self.solved
            .iter()
            .enumerate()
            .map(|(j, s)| match s {
                None => free_expr(j),
                Some(s) => {
                    let mut e = Expr::Index(s.k) - s.constant.clone();
                    for &(b, cb) in &s.others {
                        e = e - Expr::Int(cb) * free_expr(b);
                    }
                    (Expr::Int(s.c) * e).simplify()
                }
            })
            .collect()
    }
}

/// `e` as `sum(coefficient * iJ) + constant`, where the constant mentions no loop
/// index; `None` if `e` is not linear in the loop indices with literal coefficients.
fn linear(e: &Expr) -> Option<(BTreeMap<usize, i64>, Expr)> {
    if e.indices().is_empty() {
        return Some((BTreeMap::new(), e.clone()));
    }
    let scaled = |(terms, c): (BTreeMap<usize, i64>, Expr), by: i64| {
        let terms = terms
            .into_iter()
            .map(|(j, t)| Some((j, t.checked_mul(by)?)))
            .collect::<Option<BTreeMap<_, _>>>()?;
        Some((terms, Expr::Int(by) * c))
    };
    match e {
        Expr::Index(j) => Some((BTreeMap::from([(*j, 1)]), Expr::Int(0))),
        Expr::Neg(a) => scaled(linear(a)?, -1),
        Expr::Bin(op @ (IndexOp::Add | IndexOp::Sub), a, b) => {
            let (mut terms, ca) = linear(a)?;
            let sign = if *op == IndexOp::Add { 1 } else { -1 };
            let (tb, cb) = scaled(linear(b)?, sign)?;
            for (j, t) in tb {
                let sum = terms.get(&j).copied().unwrap_or(0).checked_add(t)?;
                terms.insert(j, sum);
            }
            terms.retain(|_, t| *t != 0);
            Some((terms, ca + cb))
        }
        Expr::Bin(IndexOp::Mul, a, b) => {
            let (factor, other) = if a.indices().is_empty() {
                (a, b)
            } else {
                (b, a)
            };
            let by = factor.simplify().as_int()?;
            scaled(linear(other)?, by)
        }
        _ => None,
    }
}
