//! numpy broadcasting of element-wise operands, one rule for the whole project: the
//! `.uop` text format applies it to every element-wise op (`add` ... `pow`,
//! `maximum`, `minimum`, the comparisons and `where`) whatever the registry, and the
//! macro ops of `uop-ops` call the same functions. The micro ops themselves
//! ([`Builder::binary`], [`Builder::where_`]) take equal shapes; broadcasting is
//! explicit `reindex` nodes in the program, so a printed program parses back as it is.
//!
//! Shapes align at the last axis and size-1 axes repeat. Two symbolic sizes that
//! cannot be proven equal are taken to be equal, and that is checked when the program
//! runs (a size assertion); a symbolic size that is 1 at run time is not broadcast:
//! declare it as 1.

use crate::index::{Expr, equal_sizes, list};

use super::{Builder, NodeId, Operand, UopError};

fn is_one(e: &Expr) -> bool {
    e.as_int() == Some(1)
}

fn no_broadcast(op: &str, message: String) -> UopError {
    UopError::Broadcast {
        op: op.to_string(),
        message,
    }
}

impl Builder {
    /// The numpy broadcast of two shapes, recording a size assertion for two symbolic
    /// sizes that must be equal (see the module docs).
    ///
    /// # Errors
    ///
    /// [`UopError::Broadcast`] when two literal sizes differ and neither is 1.
    pub fn broadcast_shapes(
        &mut self,
        op: &str,
        x: &[Expr],
        y: &[Expr],
    ) -> Result<Vec<Expr>, UopError> {
        let rank = x.len().max(y.len());
        let pad = |s: &[Expr]| -> Vec<Expr> {
            std::iter::repeat_n(Expr::Int(1), rank - s.len())
                .chain(s.iter().cloned())
                .collect()
        };
        let (px, py) = (pad(x), pad(y));
        let mut out = Vec::with_capacity(rank);
        for (a, c) in px.iter().zip(&py) {
            if equal_sizes(a, c) || is_one(c) {
                out.push(a.clone());
            } else if is_one(a) {
                out.push(c.clone());
            } else if let (Some(u), Some(v)) = (a.as_int(), c.as_int()) {
                return Err(no_broadcast(
                    op,
                    format!(
                        "shapes {} and {} do not broadcast ({u} vs {v})",
                        list(x),
                        list(y)
                    ),
                ));
            } else {
                self.assert_equal(a.clone(), c.clone())?;
                out.push(a.clone());
            }
        }
        Ok(out)
    }

    /// Repeats `x` along its size-1 axes (and new leading axes) to `shape`, which must
    /// be a broadcast of `x`'s shape as [`Builder::broadcast_shapes`] computes it (a
    /// symbolic size that differs from the target's is read as it is: the assertion
    /// is recorded). Returns `x` itself when its shape already is `shape`.
    ///
    /// # Errors
    ///
    /// [`UopError::Broadcast`] when `x` has more axes than `shape`.
    pub fn broadcast_to(
        &mut self,
        op: &str,
        x: NodeId,
        shape: &[Expr],
    ) -> Result<NodeId, UopError> {
        let xs = self.shape(x).to_vec();
        if xs == shape {
            return Ok(x);
        }
        let Some(offset) = shape.len().checked_sub(xs.len()) else {
            return Err(no_broadcast(
                op,
                format!("cannot broadcast shape {} to {}", list(&xs), list(shape)),
            ));
        };
        let index = xs
            .iter()
            .enumerate()
            .map(|(k, d)| {
                if is_one(d) && !is_one(&shape[offset + k]) {
                    Expr::Int(0)
                } else {
                    Expr::Index(offset + k)
                }
            })
            .collect();
        self.reindex_exprs(x, shape.to_vec(), &[], index, 0.0)
    }

    /// Brings the tensor operands to their common broadcast shape; numbers and
    /// `$params` pass through (the micro ops take them with any shape). Operands of
    /// one shape already come back unchanged, so nothing is added then.
    ///
    /// # Errors
    ///
    /// As [`Builder::broadcast_shapes`].
    pub fn broadcast_operands(
        &mut self,
        op: &str,
        operands: &[Operand],
    ) -> Result<Vec<Operand>, UopError> {
        let nodes: Vec<NodeId> = operands.iter().filter_map(Operand::node).collect();
        let Some((&first, rest)) = nodes.split_first() else {
            return Ok(operands.to_vec());
        };
        let first_shape = self.shape(first).to_vec();
        if rest
            .iter()
            .all(|&n| self.shape(n) == first_shape.as_slice())
        {
            return Ok(operands.to_vec());
        }
        let mut shape = first_shape;
        for &n in rest {
            let other = self.shape(n).to_vec();
            shape = self.broadcast_shapes(op, &shape, &other)?;
        }
        operands
            .iter()
            .map(|o| match o {
                Operand::Node(n) => self.broadcast_to(op, *n, &shape).map(Operand::Node),
                other => Ok(other.clone()),
            })
            .collect()
    }
}
