//! How an access moves when one loop advances: the analysis the schedule passes use
//! to find unit-stride loops, loop-invariant loads and injective stores.
//!
//! Subscripts are read as affine functions of a loop variable where they are one
//! (`i2 + i5 - 1` has coefficient 1 in `i2`); anything else that mentions the
//! variable (`i0 / 2`, a data-dependent subscript) is [`Stride::Other`].
//!
//! Cost: O(expression size) per query.

use crate::index::{Expr, IndexOp};
use crate::loops::{Access, Loop, LoopProgram, Stmt, Subscript, Value};

/// The movement of one access along one loop, in elements of the innermost axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stride {
    /// The access does not depend on the loop: a broadcast.
    Zero,
    /// Only the last subscript moves, by one element per iteration.
    Unit,
    /// Anything else: a larger or unknown step.
    Other,
}

/// The coefficient of loop variable `n` in `e` when `e` is affine in it (other
/// terms may be anything that does not mention it); `None` otherwise.
pub fn coefficient(e: &Expr, n: usize) -> Option<i64> {
    let mentions = |x: &Expr| x.indices().contains(&n);
    match e {
        Expr::Index(m) => Some(i64::from(*m == n)),
        Expr::Int(_) | Expr::Dim(..) | Expr::Param(_) | Expr::Name(_) => Some(0),
        Expr::Neg(x) => coefficient(x, n)?.checked_neg(),
        Expr::Bin(IndexOp::Add, a, b) => coefficient(a, n)?.checked_add(coefficient(b, n)?),
        Expr::Bin(IndexOp::Sub, a, b) => coefficient(a, n)?.checked_sub(coefficient(b, n)?),
        Expr::Bin(IndexOp::Mul, a, b) => match (a.as_int(), b.as_int()) {
            (Some(k), _) => coefficient(b, n)?.checked_mul(k),
            (_, Some(k)) => coefficient(a, n)?.checked_mul(k),
            _ if !mentions(a) && !mentions(b) => Some(0),
            _ => None,
        },
        Expr::Bin(_, a, b) => (!mentions(a) && !mentions(b)).then_some(0),
    }
}

/// True when `v` mentions loop variable `n` anywhere (index values, subscripts).
pub fn value_mentions(v: &Value, n: usize) -> bool {
    match v {
        Value::Load { access, .. } => access_mentions(access, n),
        Value::Var(_) | Value::Const(_) | Value::Param(_) => false,
        Value::Index(e) => e.indices().contains(&n),
        Value::Unary(_, x) => value_mentions(x, n),
        Value::Binary(_, a, b) => value_mentions(a, n) || value_mentions(b, n),
        Value::Where(c, a, b) => {
            value_mentions(c, n) || value_mentions(a, n) || value_mentions(b, n)
        }
    }
}

/// True when any subscript of `a` mentions loop variable `n`.
pub fn access_mentions(a: &Access, n: usize) -> bool {
    a.index.iter().any(|s| match s {
        Subscript::Expr(e) => e.indices().contains(&n),
        Subscript::Value(v) => value_mentions(v, n),
    })
}

/// How `a` moves along loop `n`.
pub fn stride(a: &Access, n: usize) -> Stride {
    if !access_mentions(a, n) {
        return Stride::Zero;
    }
    let Some((last, rest)) = a.index.split_last() else {
        return Stride::Other;
    };
    let rest_moves = rest.iter().any(|s| match s {
        Subscript::Expr(e) => e.indices().contains(&n),
        Subscript::Value(_) => true,
    });
    match last {
        Subscript::Expr(e) if !rest_moves && coefficient(e, n) == Some(1) => Stride::Unit,
        _ => Stride::Other,
    }
}

/// True when `a` names a different element for every combination of the loop
/// variables `loops`: each of them is the only loop of `loops` in one subscript of
/// its own, with a non-zero coefficient there.
pub fn injective(a: &Access, loops: &[usize]) -> bool {
    let mut seen = Vec::new();
    for s in &a.index {
        let Subscript::Expr(e) = s else {
            if loops.iter().any(|&n| access_mentions(a, n)) {
                return false;
            }
            continue;
        };
        let here: Vec<usize> = loops
            .iter()
            .copied()
            .filter(|&n| e.indices().contains(&n))
            .collect();
        match here.as_slice() {
            [] => {}
            [n] if coefficient(e, *n).is_some_and(|c| c != 0) => seen.push(*n),
            _ => return false,
        }
    }
    loops.iter().all(|n| seen.contains(n))
}

/// The one axis of `a` whose subscript mentions loop `n`, when there is exactly one
/// and it moves by one element per iteration (`n` plus terms free of it).
pub fn unit_axis(a: &Access, n: usize) -> Option<usize> {
    let mut axes = a.index.iter().enumerate().filter(|(_, s)| match s {
        Subscript::Expr(e) => e.indices().contains(&n),
        Subscript::Value(_) => true,
    });
    let (axis, Subscript::Expr(e)) = axes.next()? else {
        return None;
    };
    (axes.next().is_none() && coefficient(e, n) == Some(1)).then_some(axis)
}

/// The two accesses of a nest `for r { for c { dst[..] = src[..] } }` that only
/// copies one tensor of the program's float type into another across (a
/// transpose): both unchecked, `dst` contiguous along `c` and `src` along `r`, each
/// loop index in one subscript of each access with coefficient 1, on different axes
/// of `dst` (so no two iterations write one element), and `c`'s range free of `r`.
/// The element at `(r + i, c + j)` is then a fixed stride times `i` and `j` away from
/// the one at `(r, c)` in either tensor, so the nest may be copied by tiles.
pub fn transpose_copy<'l>(
    p: &LoopProgram,
    r: &Loop,
    c: &'l Loop,
) -> Option<(&'l Access, &'l Access)> {
    if !r.carried.is_empty() || !c.carried.is_empty() || !r.stmts.is_empty() {
        return None;
    }
    let [
        Stmt::Store {
            access: dst,
            value: Value::Load { access: src, .. },
        },
    ] = c.stmts.as_slice()
    else {
        return None;
    };
    let plain =
        |a: &Access| !a.checked && p.tensors.get(a.tensor.0).map(|t| t.dtype) == Some(p.dtype);
    let last = |a: &Access| a.index.len().checked_sub(1);
    let (rn, cn) = (r.id.0, c.id.0);
    let ranges_fixed = ![&c.start, &c.end].iter().any(|e| e.indices().contains(&rn));
    let fits = plain(dst)
        && plain(src)
        && dst.tensor != src.tensor
        && ranges_fixed
        && unit_axis(dst, cn).is_some_and(|a| Some(a) == last(dst))
        && unit_axis(dst, rn).is_some_and(|a| Some(a) != last(dst))
        && unit_axis(src, rn).is_some_and(|a| Some(a) == last(src))
        && unit_axis(src, cn).is_some();
    fits.then_some((dst, src))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::parse_expr;
    use crate::loops::TensorId;

    fn access(subscripts: &[&str]) -> Access {
        Access {
            tensor: TensorId(0),
            index: subscripts
                .iter()
                .map(|s| Subscript::Expr(parse_expr(s).expect("valid expression")))
                .collect(),
            checked: false,
        }
    }

    #[test]
    fn coefficients_of_affine_subscripts() {
        let e = |s: &str| parse_expr(s).expect("valid expression");
        assert_eq!(coefficient(&e("i2 + i5 - 1"), 2), Some(1));
        assert_eq!(coefficient(&e("i0 * K + i1"), 0), None, "a symbolic factor");
        assert_eq!(coefficient(&e("2 * i0 - i1"), 0), Some(2));
        assert_eq!(coefficient(&e("2 * i0 - i1"), 1), Some(-1));
        assert_eq!(coefficient(&e("i0 / 2"), 0), None);
        assert_eq!(coefficient(&e("N / 2"), 0), Some(0));
    }

    #[test]
    fn strides_of_a_matmul() {
        let (a, b, c) = (
            access(&["i0", "i1"]),
            access(&["i1", "i2"]),
            access(&["i0", "i2"]),
        );
        assert_eq!(stride(&a, 1), Stride::Unit);
        assert_eq!(stride(&a, 2), Stride::Zero);
        assert_eq!(stride(&b, 1), Stride::Other);
        assert_eq!(stride(&b, 2), Stride::Unit);
        assert!(injective(&c, &[0, 2]));
        assert!(!injective(&c, &[0, 1, 2]), "i1 does not move c");
    }

    #[test]
    fn sums_of_two_loops_in_one_subscript_are_not_injective() {
        assert!(!injective(&access(&["i0 + i1"]), &[0, 1]));
        assert!(injective(&access(&["i0 + i1", "i2"]), &[2]));
        assert_eq!(stride(&access(&["i0 + 1", "0"]), 0), Stride::Other);
    }
}
