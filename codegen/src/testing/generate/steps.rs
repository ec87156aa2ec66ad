//! The generator's steps: one method per kind of uop it builds.

use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};

use super::program::{Generator, dim_ref};
use crate::index::{DimRef, Expr, IndexOp};
use crate::uop::{Accum, BinaryOp, DType, NodeId, Operand, ReduceOp, UnaryOp};

impl Generator<'_> {
    /// A reindex made of a per-axis transform of each axis of `x`, new broadcast
    /// axes and a permutation.
    pub(super) fn reindex(&mut self, x: NodeId) -> Option<NodeId> {
        let xs = self.shape(x);
        // Output axes as (size) slots; index expressions use `Index(slot)` until the
        // slots are permuted into their final positions.
        let mut slots: Vec<Expr> = Vec::new();
        let mut index: Vec<Expr> = Vec::new();
        for (k, size_k) in xs.iter().enumerate() {
            let size = if self.rng.random_bool(0.5) {
                dim_ref(0, k)
            } else {
                size_k.clone()
            };
            let s = slots.len();
            let i = Expr::Index(s);
            let off = Expr::Int(self.rng.random_range(-2..=2));
            let c = Expr::Int(self.rng.random_range(1..=3));
            match self.rng.random_range(0..10) {
                // identity
                0 | 1 => {
                    slots.push(size);
                    index.push(i);
                }
                // shift / crop / pad: reads before the start or past the end give the fill
                2 => {
                    slots.push(size + Expr::Int(self.rng.random_range(-1..=2)));
                    index.push(i + off);
                }
                // flip
                3 => {
                    slots.push(size.clone());
                    index.push(size - Expr::Int(1) - i);
                }
                // stride 2
                4 => {
                    slots.push(Expr::bin(IndexOp::Div, size + Expr::Int(1), Expr::Int(2)));
                    index.push(Expr::Int(2) * i + Expr::Int(self.rng.random_range(0..=1)));
                }
                // upsample
                5 => {
                    slots.push(Expr::Int(2) * size);
                    index.push(Expr::bin(IndexOp::Div, i, Expr::Int(2)));
                }
                // wrap around
                6 => {
                    slots.push(size + Expr::Int(self.rng.random_range(0..=2)));
                    index.push(Expr::bin(IndexOp::Mod, i, c));
                }
                // shift by a param, clamped so the size stays non-negative
                7 => {
                    let p = self.param_expr().unwrap_or(Expr::Int(1));
                    slots.push(Expr::bin(IndexOp::Max, size - p.clone(), Expr::Int(0)));
                    index.push(i + p);
                }
                // a window (convolution style): two output axes read one input axis
                8 => {
                    let w = self.param_expr().unwrap_or(c);
                    slots.push(size - w.clone() + Expr::Int(1));
                    slots.push(w);
                    index.push(i + Expr::Index(s + 1));
                }
                // drop the axis: read one fixed position
                _ => {
                    let at = if self.rng.random_bool(0.3) {
                        self.param_expr().unwrap_or(Expr::Int(0))
                    } else {
                        Expr::Int(self.rng.random_range(-1..=1))
                    };
                    index.push(at);
                }
            }
        }
        for _ in 0..self.rng.random_range(0..=2) {
            if self.rng.random_bool(0.4) {
                let size = self.new_axis_size();
                slots.push(size);
            }
        }
        let mut order: Vec<usize> = (0..slots.len()).collect();
        if self.rng.random_bool(0.4) {
            order.shuffle(&mut self.rng);
        }
        let mut position = vec![0; slots.len()];
        for (pos, &slot) in order.iter().enumerate() {
            position[slot] = pos;
        }
        let shape = order.iter().map(|&s| slots[s].clone()).collect();
        let index = index
            .iter()
            .map(|e| {
                e.map_leaves(&mut |leaf| match leaf {
                    Expr::Index(s) => Some(Expr::Index(position[*s])),
                    _ => None,
                })
            })
            .collect();
        let fill = *[0.0, 0.0, 1.0, -1.5].choose(&mut self.rng).unwrap_or(&0.0);
        let made = self.st.b.reindex_exprs(x, shape, &[x], index, fill);
        self.keep(made)
    }

    /// Reindexes `y` to exactly `target`: each axis of `y` reads an output axis
    /// (the same position when it exists) or a fixed position.
    pub(super) fn conform(&mut self, y: NodeId, target: &[Expr]) -> Option<NodeId> {
        if self.st.b.shape(y) == target {
            return Some(y);
        }
        let ry = self.st.b.shape(y).len();
        let index = (0..ry)
            .map(|k| {
                if target.is_empty() {
                    Expr::Int(0)
                } else if k < target.len() && self.rng.random_bool(0.8) {
                    let i = Expr::Index(k);
                    if self.rng.random_bool(0.2) {
                        i + Expr::Int(self.rng.random_range(-1..=1))
                    } else {
                        i
                    }
                } else if self.rng.random_bool(0.5) {
                    Expr::Index(self.rng.random_range(0..target.len()))
                } else {
                    Expr::Int(0)
                }
            })
            .collect();
        let made = self.st.b.reindex_exprs(y, target.to_vec(), &[], index, 0.0);
        self.keep(made)
    }

    pub(super) fn scatter(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let xs = self.shape(x);
        let mut shape = Vec::new();
        let mut index = Vec::new();
        for (k, size) in xs.iter().enumerate() {
            let i = Expr::Index(k);
            match self.rng.random_range(0..6) {
                // keep, possibly shifted: targets past either end are dropped
                0 | 1 => {
                    shape.push(size.clone());
                    index.push(i + Expr::Int(self.rng.random_range(-1..=1)));
                }
                // collapse the axis: everything along it collides
                2 => {}
                // pairs collide
                3 => {
                    shape.push(Expr::bin(
                        IndexOp::Div,
                        size.clone() + Expr::Int(1),
                        Expr::Int(2),
                    ));
                    index.push(Expr::bin(IndexOp::Div, i, Expr::Int(2)));
                }
                // wrap into a few cells
                4 => {
                    let c = self.rng.random_range(1..=3);
                    shape.push(Expr::Int(c));
                    index.push(Expr::bin(IndexOp::Mod, i, Expr::Int(c)));
                }
                // flip
                _ => {
                    shape.push(dim_ref(0, k));
                    index.push(dim_ref(0, k) - Expr::Int(1) - i);
                }
            }
        }
        if self.rng.random_bool(0.25) {
            // A new axis hit at one position (sometimes outside it: all dropped).
            let c = self.rng.random_range(1..=3);
            shape.push(Expr::Int(c));
            index.push(Expr::Int(self.rng.random_range(0..=c)));
        }
        let mut order: Vec<usize> = (0..shape.len()).collect();
        if self.rng.random_bool(0.3) {
            order.shuffle(&mut self.rng);
        }
        let shape = order.iter().map(|&k| shape[k].clone()).collect();
        let index = order.iter().map(|&k| index[k].clone()).collect();
        let op = *[Accum::Add, Accum::Add, Accum::Max, Accum::Min]
            .choose(&mut self.rng)
            .unwrap_or(&Accum::Add);
        let made = self.st.b.reindex_reduce_exprs(x, shape, &[x], index, op);
        let y = self.keep(made)?;
        if op != Accum::Add && self.rng.random_bool(0.5) {
            // Untouched cells hold ±inf; clamp so later arithmetic stays finite.
            let lo = self.st.b.binary(BinaryOp::Maximum, y, -4.0);
            let lo = self.keep(lo)?;
            let hi = self.st.b.binary(BinaryOp::Minimum, lo, 4.0);
            return self.keep(hi);
        }
        Some(y)
    }

    pub(super) fn unary(&mut self) -> Option<NodeId> {
        let mut x = self.pick();
        let op = *UnaryOp::ALL.choose(&mut self.rng)?;
        if matches!(op, UnaryOp::Log | UnaryOp::Sqrt | UnaryOp::Rsqrt) && self.rng.random_bool(0.6)
        {
            // Mostly keep the argument in the domain; sometimes let NaN through.
            let a = self.st.b.unary(UnaryOp::Abs, x);
            x = self.keep(a)?;
        }
        let made = self.st.b.unary(op, x);
        self.keep(made)
    }

    pub(super) fn binary(&mut self) -> Option<NodeId> {
        let op = *BinaryOp::ALL.choose(&mut self.rng)?;
        let x = self.pick();
        let (a, b): (Operand, Operand) = match self.rng.random_range(0..10) {
            0..=6 => {
                let y = self.pick();
                let xs = self.shape(x);
                let y = self.conform(y, &xs)?;
                (x.into(), y.into())
            }
            7 | 8 => (x.into(), self.scalar()),
            _ => (self.scalar(), x.into()),
        };
        let made = self.st.b.binary(op, a, b);
        self.keep(made)
    }

    pub(super) fn where_(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let xs = self.shape(x);
        let cond = if self.rng.random_bool(0.7) {
            let cmp =
                *[BinaryOp::Gt, BinaryOp::Lt, BinaryOp::Ge, BinaryOp::Eq].choose(&mut self.rng)?;
            let rhs = self.scalar();
            let c = self.st.b.binary(cmp, x, rhs);
            self.keep(c)?
        } else {
            x
        };
        let branch = |g: &mut Self| -> Option<Operand> {
            if g.rng.random_bool(0.7) {
                let y = g.pick();
                Some(g.conform(y, &xs)?.into())
            } else {
                Some(g.scalar())
            }
        };
        let a = branch(self)?;
        let b = branch(self)?;
        let made = self.st.b.where_(cond, a, b);
        self.keep(made)
    }

    pub(super) fn reduce(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let rank = self.st.b.shape(x).len();
        let op = *ReduceOp::ALL.choose(&mut self.rng)?;
        let mut axes: Vec<usize> = match self.rng.random_range(0..6) {
            0 => (0..rank).collect(),
            1 => vec![],
            _ => (0..rank).filter(|_| self.rng.random_bool(0.5)).collect(),
        };
        axes.shuffle(&mut self.rng);
        let made = self.st.b.reduce(op, &axes, x);
        self.keep(made)
    }

    /// `select` with a new i32 index input whose dims are `x`'s where they are plain.
    pub(super) fn select(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let xs = self.shape(x);
        if xs.is_empty() {
            return None;
        }
        let axis = self.rng.random_range(0..xs.len());
        let mut dims = Vec::new();
        for (k, d) in xs.iter().enumerate() {
            let dim = if k == axis {
                if self.rng.random_bool(0.5) {
                    Expr::Int(self.rng.random_range(1..=3))
                } else {
                    self.input_dim()
                }
            } else if matches!(d, Expr::Name(_) | Expr::Int(_)) {
                d.clone()
            } else {
                self.input_dim()
            };
            dims.push(dim);
        }
        let name = format!("idx{}", self.st.inputs.len());
        let idx = self.st.b.input_exprs(&name, DType::I32, dims).ok()?;
        if !self.fits(idx) {
            return None;
        }
        self.st.inputs.push(idx);
        let mut target = self.shape(idx);
        target[axis] = xs[axis].clone();
        let x = self.conform(x, &target)?;
        let made = self.st.b.select(axis, x, idx);
        self.keep(made)
    }

    pub(super) fn iota(&mut self) -> Option<NodeId> {
        let (shape, sources) = if self.rng.random_bool(0.7) {
            let x = self.pick();
            let rank = self.st.b.shape(x).len();
            (
                (0..rank).map(|k| dim_ref(0, k)).collect::<Vec<_>>(),
                vec![x],
            )
        } else {
            let rank = self.rng.random_range(1..=self.cfg.max_rank.max(1));
            ((0..rank).map(|_| self.new_axis_size()).collect(), vec![])
        };
        if shape.is_empty() {
            return None;
        }
        let axis = self.rng.random_range(0..shape.len());
        let made = self.st.b.iota_exprs(shape, &sources, axis);
        let i = self.keep(made)?;
        if self.rng.random_bool(0.5) {
            // A mask: compare the position with a value, as one-hot encodings do.
            let x = self.pick();
            let is = self.shape(i);
            let x = self.conform(x, &is)?;
            let m = self.st.b.binary(BinaryOp::Eq, i, x);
            return self.keep(m);
        }
        Some(i)
    }

    /// An outer product of two tensors over the axes of both (NNC's matmul form,
    /// `dA`/`dB` references), optionally contracting one pair of axes of equal size
    /// (`dAk[=dBm]`), then a reduction.
    pub(super) fn contract(&mut self) -> Option<NodeId> {
        let x = self.pick();
        let y = self.pick();
        let (xs, ys) = (self.shape(x), self.shape(y));
        let pair = self.contractible_pair(&xs, &ys);
        let mut shape: Vec<Expr> = (0..xs.len()).map(|k| dim_ref(0, k)).collect();
        let mut y_index = Vec::new();
        for m in 0..ys.len() {
            match pair {
                Some((k, pm)) if pm == m => {
                    shape[k] = Expr::Dim(
                        DimRef { source: 0, axis: k },
                        Some(DimRef { source: 1, axis: m }),
                    );
                    y_index.push(Expr::Index(k));
                }
                _ => {
                    y_index.push(Expr::Index(shape.len()));
                    shape.push(dim_ref(1, m));
                }
            }
        }
        let x_index = (0..xs.len()).map(Expr::Index).collect();
        let made = self
            .st
            .b
            .reindex_exprs(x, shape.clone(), &[x, y], x_index, 0.0);
        let xx = self.keep(made)?;
        let made = self
            .st
            .b
            .reindex_exprs(y, shape.clone(), &[x, y], y_index, 0.0);
        let yy = self.keep(made)?;
        let op =
            *[BinaryOp::Mul, BinaryOp::Mul, BinaryOp::Add, BinaryOp::Sub].choose(&mut self.rng)?;
        let made = self.st.b.binary(op, xx, yy);
        let prod = self.keep(made)?;
        let axes: Vec<usize> = match pair {
            Some((k, _)) => vec![k],
            None => (0..shape.len())
                .filter(|_| self.rng.random_bool(0.3))
                .collect(),
        };
        let made = self.st.b.reduce(ReduceOp::Sum, &axes, prod);
        self.keep(made)
    }

    /// Axes `(k, m)` of two shapes that are plain dims equal under every witness,
    /// so a `[=]` assertion between them can hold.
    pub(super) fn contractible_pair(&mut self, xs: &[Expr], ys: &[Expr]) -> Option<(usize, usize)> {
        let plain = |e: &Expr| matches!(e, Expr::Name(_) | Expr::Int(_));
        let mut pairs = Vec::new();
        for (k, a) in xs.iter().enumerate() {
            for (m, b) in ys.iter().enumerate() {
                let equal = plain(a)
                    && plain(b)
                    && self
                        .samples
                        .iter()
                        .all(|s| matches!((a.eval(s), b.eval(s)), (Ok(u), Ok(v)) if u == v));
                if equal {
                    pairs.push((k, m));
                }
            }
        }
        pairs.choose(&mut self.rng).copied()
    }
}
