//! Bound-check elimination: marks an access `checked: false` when every subscript is
//! proven inside its axis for all sizes the program accepts; every other access keeps
//! its check (and its fill semantics).
//!
//! Guarantee: an access is unmarked only if, for every binding that passes the
//! program's checks (sizes non-negative, `[=]` assertions holding) and every
//! iteration in which the access runs, `0 <= subscript < size` on every axis. No
//! access is ever marked checked, so results are unchanged.
//!
//! The argument is symbolic. A subscript is put in linear form over *atoms* (named
//! dims, `$params`, loop variables, opaque subterms). Its lower and upper bounds are
//! found by replacing each loop variable with its first or last value, `start` or
//! `end - 1`, by the sign of its coefficient; `x % k` lies in `[0, k)`, `min` and
//! `max` give either operand's bound where that is sound (and the smaller or larger
//! of two bounds differing by a literal otherwise), and `x / k` is bounded
//! when `x`'s bound is a literal. The goals `low >= 0` and `size - 1 - high >= 0` are
//! then proved from the facts that named dims and axis sizes are non-negative and
//! that every enclosing loop runs at least once (`end - start - 1 >= 0`, as the
//! access would not run otherwise), adding up to two such facts. Sizes are compared
//! through [`ShapeGroups`], so `C` and `CW` asserted equal cancel. In doubt — a
//! data-dependent subscript, a product of loop variables, a stride with symbolic
//! bounds — the check stays.
//!
//! This covers the reindex patterns of the uop library: `i` over `0..N` on an axis
//! of size `N`; the window `i + k` with `i` over `0..N - K + 1` and `k` over `0..K`
//! (convolution); broadcasts (`0` on a size-1 axis); slices (`i + 2` over
//! `0..N - 2`); flips (`N - 1 - i`). Padding (`i - 1` over `0..N + 2`) is rightly
//! kept checked.
//!
//! Cost: O(A · R · (t · 16² + 16 · (L + R)²)) — per access axis, at most
//! `MAX_CANDIDATES` bounds, `MAX_FUEL` range levels, pairs of facts.

use std::collections::{BTreeMap, HashMap};

use crate::index::{Expr, IndexOp, floor_div};
use crate::loops::{Access, Block, Loop, LoopProgram, Subscript, TensorDecl};

use super::shape_groups::ShapeGroups;
use super::walk::{map_stmt_accesses, stmts_at_mut};

/// Most alternative bounds kept for one expression (each `min` doubles them).
const MAX_CANDIDATES: usize = 16;
/// How deep loop ranges depending on outer loop variables are followed.
const MAX_FUEL: usize = 8;

/// Unmarks the accesses proven in range (see the module docs).
pub fn bounds(p: &LoopProgram) -> LoopProgram {
    let groups = ShapeGroups::new(p);
    let mut out = p.clone();
    for block in &mut out.blocks {
        prove_block(block, &p.tensors, &groups);
    }
    out
}

fn prove_block(block: &mut Block, tensors: &[TensorDecl], groups: &ShapeGroups) {
    let headers: Vec<Loop> = block
        .loops
        .iter()
        .map(|l| Loop {
            stmts: Vec::new(),
            carried: Vec::new(),
            ..l.clone()
        })
        .collect();
    for level in 0..=headers.len() {
        let ctx = Context::new(&headers[..level], groups);
        for s in stmts_at_mut(block, level) {
            map_stmt_accesses(s, &mut |a| {
                if a.checked && ctx.in_range(a, tensors) {
                    a.checked = false;
                }
            });
        }
    }
}

/// A linear form `c + Σ coef · atom`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Lin {
    c: i64,
    terms: BTreeMap<Expr, i64>,
}

impl Lin {
    fn constant(c: i64) -> Lin {
        Lin {
            c,
            terms: BTreeMap::new(),
        }
    }

    fn atom(e: Expr) -> Lin {
        Lin {
            c: 0,
            terms: BTreeMap::from([(e, 1)]),
        }
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.c)
    }

    /// `self + k · other`.
    fn add_scaled(&self, other: &Lin, k: i64) -> Option<Lin> {
        let mut out = self.clone();
        out.c = out.c.checked_add(other.c.checked_mul(k)?)?;
        for (atom, coef) in &other.terms {
            let entry = out.terms.entry(atom.clone()).or_insert(0);
            *entry = entry.checked_add(coef.checked_mul(k)?)?;
        }
        out.terms.retain(|_, c| *c != 0);
        Some(out)
    }

    fn scale(&self, k: i64) -> Option<Lin> {
        Lin::constant(0).add_scaled(self, k)
    }
}

/// The linear form of `e`; non-linear subterms become atoms.
fn linear(e: &Expr) -> Option<Lin> {
    Some(match e {
        Expr::Int(v) => Lin::constant(*v),
        Expr::Neg(a) => linear(a)?.scale(-1)?,
        Expr::Bin(IndexOp::Add, a, b) => linear(a)?.add_scaled(&linear(b)?, 1)?,
        Expr::Bin(IndexOp::Sub, a, b) => linear(a)?.add_scaled(&linear(b)?, -1)?,
        Expr::Bin(IndexOp::Mul, a, b) => {
            let (la, lb) = (linear(a)?, linear(b)?);
            match (la.as_constant(), lb.as_constant()) {
                (Some(k), _) => lb.scale(k)?,
                (_, Some(k)) => la.scale(k)?,
                _ => Lin::atom(e.clone()),
            }
        }
        _ => Lin::atom(e.clone()),
    })
}

fn has_index(e: &Expr) -> bool {
    e.any(&mut |x| matches!(x, Expr::Index(_)))
}

/// The loops enclosing one statement list: ranges and the facts they give.
struct Context<'g> {
    groups: &'g ShapeGroups,
    /// Per loop variable: first and last value.
    ranges: HashMap<usize, (Expr, Expr)>,
    /// Facts `f >= 0`: each enclosing loop runs at least once.
    facts: Vec<Lin>,
}

impl<'g> Context<'g> {
    fn new(loops: &[Loop], groups: &'g ShapeGroups) -> Self {
        let mut ranges = HashMap::new();
        let mut facts = Vec::new();
        for l in loops {
            let (start, end) = (groups.canonical(&l.start), groups.canonical(&l.end));
            let last = (end.clone() - Expr::Int(1)).simplify();
            if let Some(f) = linear(&end).and_then(|e| {
                e.add_scaled(&linear(&start)?, -1)?
                    .add_scaled(&Lin::constant(1), -1)
            }) {
                facts.push(f);
            }
            ranges.insert(l.id.0, (start, last));
        }
        Context {
            groups,
            ranges,
            facts,
        }
    }

    /// True when every subscript of `a` is proven inside its axis.
    fn in_range(&self, a: &Access, tensors: &[TensorDecl]) -> bool {
        let Some(decl) = tensors.get(a.tensor.0) else {
            return false;
        };
        if decl.shape.len() != a.index.len() {
            return false;
        }
        let mut facts = self.facts.clone();
        for size in &decl.shape {
            if let Some(f) = linear(&self.groups.canonical(size)) {
                facts.push(f);
            }
        }
        a.index.iter().zip(&decl.shape).all(|(s, size)| match s {
            Subscript::Expr(e) => self.axis_in_range(e, size, &facts),
            Subscript::Value(_) => false,
        })
    }

    fn axis_in_range(&self, e: &Expr, size: &Expr, facts: &[Lin]) -> bool {
        let (Some(e), Some(size)) = (
            linear(&self.groups.canonical(e)),
            linear(&self.groups.canonical(size)),
        ) else {
            return false;
        };
        let low_ok = self
            .bound(&e, false, MAX_FUEL)
            .iter()
            .any(|low| provably_nonneg(low, facts));
        low_ok
            && self.bound(&e, true, MAX_FUEL).iter().any(|high| {
                size.add_scaled(high, -1)
                    .and_then(|g| g.add_scaled(&Lin::constant(1), -1))
                    .is_some_and(|g| provably_nonneg(&g, facts))
            })
    }

    /// Candidate bounds of `l` (upper if `upper`), each valid on its own, free of loop
    /// variables; empty when none is found.
    fn bound(&self, l: &Lin, upper: bool, fuel: usize) -> Vec<Lin> {
        let mut candidates = vec![Lin::constant(l.c)];
        for (atom, &k) in &l.terms {
            let atom_bounds = self.bound_atom(atom, upper == (k > 0), fuel);
            let mut next = Vec::new();
            for c in &candidates {
                for b in &atom_bounds {
                    if let Some(sum) = c.add_scaled(b, k) {
                        next.push(sum);
                    }
                }
            }
            next.truncate(MAX_CANDIDATES);
            if next.is_empty() {
                return next;
            }
            candidates = next;
        }
        candidates
    }

    fn bound_expr(&self, e: &Expr, upper: bool, fuel: usize) -> Vec<Lin> {
        linear(e).map_or_else(Vec::new, |l| self.bound(&l, upper, fuel))
    }

    fn bound_atom(&self, atom: &Expr, upper: bool, fuel: usize) -> Vec<Lin> {
        if !has_index(atom) {
            return vec![Lin::atom(atom.clone())];
        }
        if fuel == 0 {
            return Vec::new();
        }
        let fuel = fuel - 1;
        match atom {
            Expr::Index(n) => match self.ranges.get(n) {
                Some((first, last)) => {
                    self.bound_expr(if upper { last } else { first }, upper, fuel)
                }
                None => Vec::new(),
            },
            Expr::Bin(IndexOp::Mod, _, k) => match k.as_int() {
                Some(k) if k > 0 => vec![Lin::constant(if upper { k - 1 } else { 0 })],
                _ => Vec::new(),
            },
            Expr::Bin(IndexOp::Div, a, k) => match k.as_int() {
                // Floor division by a positive literal is monotone.
                Some(k) if k > 0 => self
                    .bound_expr(a, upper, fuel)
                    .iter()
                    .filter_map(|b| floor_div(b.as_constant()?, k).map(Lin::constant))
                    .collect(),
                _ => Vec::new(),
            },
            Expr::Bin(IndexOp::Min, a, b) if upper => {
                let mut v = self.bound_expr(a, true, fuel);
                v.extend(self.bound_expr(b, true, fuel));
                v
            }
            Expr::Bin(IndexOp::Max, a, b) if !upper => {
                let mut v = self.bound_expr(a, false, fuel);
                v.extend(self.bound_expr(b, false, fuel));
                v
            }
            // A lower bound of `min` (upper of `max`) must bound both operands: take
            // the smaller (larger) of two bounds whose difference is a literal.
            Expr::Bin(op @ (IndexOp::Min | IndexOp::Max), a, b) => {
                let (ba, bb) = (
                    self.bound_expr(a, upper, fuel),
                    self.bound_expr(b, upper, fuel),
                );
                let mut out = Vec::new();
                for la in &ba {
                    for lb in &bb {
                        if let Some(d) = la.add_scaled(lb, -1).and_then(|d| d.as_constant()) {
                            let a_wins = (d <= 0) == (*op == IndexOp::Min);
                            out.push(if a_wins { la.clone() } else { lb.clone() });
                        }
                    }
                }
                out.truncate(MAX_CANDIDATES);
                out
            }
            _ => Vec::new(),
        }
    }
}

/// How far `subscript` reaches outside an axis of `size` over the loops `loops` (all
/// of which enclose it): `(below, above)`, two expressions free of loop variables
/// such that whenever the subscript is evaluated, `-below <= subscript <= size - 1 +
/// above`, and that are non-negative for every binding the program accepts. `0`
/// where that side is proven in range. `None` when a side's reach is not bounded or
/// its sign is not proven (a `$param` shift, a product of loop variables).
///
/// The bounds are those [`bounds`] proves with, plus one relaxation it does not need:
/// `c · (a / k)` with `k` dividing `c` is bounded by `c/k · a` (and `c/k · (a - k + 1)`),
/// which covers strided windows, whose loop ends are `(size - window) / stride + 1`.
/// A reach whose sign follows only from the loops running at least once (`$kh - 1`
/// for a loop over `0..$kh`) is clamped to `max(reach, 0)`: it is only used where
/// the loops run, and sizes built from it must not turn negative where they do not.
pub(super) fn overhang(
    loops: &[Loop],
    groups: &ShapeGroups,
    subscript: &Expr,
    size: &Expr,
) -> Option<(Expr, Expr)> {
    let ctx = Context::new(loops, groups);
    let size = linear(&groups.canonical(size))?;
    let e = linear(&groups.canonical(subscript))?;
    let mut facts = ctx.facts.clone();
    facts.push(size.clone());
    let candidates = |upper: bool| {
        let mut v = ctx.bound(&e, upper, MAX_FUEL);
        let relaxed: Vec<Lin> = v.iter().filter_map(|b| relax_divisions(b, upper)).collect();
        v.extend(relaxed);
        v
    };
    // below = -low; above = high - (size - 1).
    let below: Vec<Lin> = candidates(false)
        .iter()
        .filter_map(|low| low.scale(-1))
        .collect();
    let above: Vec<Lin> = candidates(true)
        .iter()
        .filter_map(|high| high.add_scaled(&size, -1)?.add_scaled(&Lin::constant(1), 1))
        .collect();
    Some((reach(&below, &facts)?, reach(&above, &facts)?))
}

/// The smallest proven reach among candidate reaches (see [`overhang`]).
fn reach(candidates: &[Lin], facts: &[Lin]) -> Option<Expr> {
    if candidates
        .iter()
        .any(|r| r.scale(-1).is_some_and(|n| provably_nonneg(&n, facts)))
    {
        return Some(Expr::Int(0));
    }
    let r = candidates.iter().find(|r| provably_nonneg(r, facts))?;
    let e = lin_expr(r);
    Some(if provably_nonneg(r, &[]) {
        e
    } else {
        Expr::bin(IndexOp::Max, e, Expr::Int(0))
    })
}

/// `l` with every `c · (a / k)` (`k > 0` a literal dividing `c`) replaced by a
/// linear bound on the same side (upper if `upper`); `None` when there is none.
fn relax_divisions(l: &Lin, upper: bool) -> Option<Lin> {
    let mut out = Lin::constant(l.c);
    let mut relaxed = false;
    for (atom, &c) in &l.terms {
        let term = match atom {
            Expr::Bin(IndexOp::Div, a, k) => match (k.as_int(), linear(a)) {
                (Some(k), Some(a)) if k > 0 && c % k == 0 => {
                    relaxed = true;
                    // k · (a / k) lies in [a - k + 1, a].
                    let exact = upper == (c > 0);
                    let a = if exact {
                        a
                    } else {
                        a.add_scaled(&Lin::constant(1 - k), 1)?
                    };
                    a.scale(c / k)?
                }
                _ => Lin::atom(atom.clone()).scale(c)?,
            },
            _ => Lin::atom(atom.clone()).scale(c)?,
        };
        out = out.add_scaled(&term, 1)?;
    }
    relaxed.then_some(out)
}

/// `l` as an index expression.
fn lin_expr(l: &Lin) -> Expr {
    l.terms
        .iter()
        .fold(Expr::Int(l.c), |e, (atom, &k)| {
            e + Expr::Int(k) * atom.clone()
        })
        .simplify()
}

/// True when `g >= 0` follows from named dims being non-negative and the `facts`
/// (each `>= 0`), using at most two facts.
fn provably_nonneg(g: &Lin, facts: &[Lin]) -> bool {
    let obvious = |r: &Lin| {
        r.c >= 0
            && r.terms
                .iter()
                .all(|(atom, &k)| k >= 0 && matches!(atom, Expr::Name(_)))
    };
    if obvious(g) {
        return true;
    }
    for (i, f) in facts.iter().enumerate() {
        let Some(r) = g.add_scaled(f, -1) else {
            continue;
        };
        if obvious(&r) {
            return true;
        }
        for f2 in &facts[i..] {
            if r.add_scaled(f2, -1).is_some_and(|r2| obvious(&r2)) {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::parse_expr;
    use crate::loops::{LoopId, Schedule};

    fn e(s: &str) -> Expr {
        parse_expr(s).unwrap_or_else(|d| panic!("{s}: {d}"))
    }

    fn header(id: usize, start: &str, end: &str) -> Loop {
        Loop {
            id: LoopId(id),
            start: e(start),
            end: e(end),
            carried: Vec::new(),
            stmts: Vec::new(),
            schedule: Schedule::default(),
        }
    }

    /// Whether `subscript` is proven inside an axis of `size` under `loops`.
    fn proven(loops: &[Loop], subscript: &str, size: &str) -> bool {
        let groups = ShapeGroups::default();
        let ctx = Context::new(loops, &groups);
        let facts = ctx.facts.clone();
        ctx.axis_in_range(&e(subscript), &e(size), &facts)
    }

    #[test]
    fn a_loop_over_the_axis_is_in_range() {
        assert!(proven(&[header(0, "0", "N")], "i0", "N"));
        assert!(!proven(&[header(0, "0", "N + 1")], "i0", "N"));
    }

    #[test]
    fn convolution_windows_are_in_range() {
        let loops = [header(1, "0", "H - $kh + 1"), header(3, "0", "$kh")];
        assert!(proven(&loops, "i1 + i3", "H"));
        assert!(!proven(&loops, "i1 + i3 + 1", "H"));
    }

    #[test]
    fn padding_keeps_its_check_and_slices_and_flips_do_not() {
        assert!(!proven(&[header(0, "0", "N + 2")], "i0 - 1", "N"));
        assert!(proven(&[header(0, "0", "N - 2")], "i0 + 2", "N"));
        assert!(proven(&[header(0, "0", "N")], "N - 1 - i0", "N"));
        assert!(proven(&[header(0, "0", "4")], "0", "1"));
    }

    #[test]
    fn modulo_division_and_min_are_bounded() {
        assert!(proven(&[header(0, "0", "N")], "i0 % 3", "3"));
        assert!(proven(&[header(0, "0", "6")], "i0 / 2", "3"));
        assert!(!proven(&[header(0, "0", "7")], "i0 / 2", "3"));
        assert!(proven(&[header(0, "0", "N")], "min(i0, 2)", "N"));
        assert!(!proven(&[header(0, "0", "N")], "max(i0, 2)", "N"));
    }

    #[test]
    fn a_parameter_of_unknown_sign_is_not_trusted() {
        assert!(!proven(&[header(0, "0", "$k")], "i0", "N"));
        assert!(!proven(&[header(0, "0", "N")], "i0 + $k", "N"));
    }
}
