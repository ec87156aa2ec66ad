//! Interval (bounds) analysis of index expressions: given ranges of the loop
//! indices, dimensions and parameters, the range of values an expression can take.
//! Bound-check elimination uses it to prove accesses in range.
//!
//! The analysis is sound, not exact: every value the expression evaluates to
//! (without error) under bindings inside the given ranges lies in the computed
//! interval, which may be wider than necessary. Bounds that would overflow `i64`
//! saturate at `i64::MIN` / `i64::MAX`; a value that evaluates successfully fits in
//! `i64`, so a saturated bound is still a bound.

use std::collections::HashMap;

use super::ast::{DimRef, Expr, IndexOp};
use super::eval::{floor_div, floor_mod};

/// A closed range of integers `[lo, hi]`: both ends included, `lo <= hi`.
///
/// Closed rather than half-open (DESIGN.md §3 speaks of `[low, high)` for loop
/// ranges) so that every `i64`, including `i64::MAX`, and the full range can be
/// represented; convert a loop range `[start, end)` with [`Interval::from_half_open`].
/// An end at `i64::MIN` / `i64::MAX` means "unbounded on that side".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Interval {
    /// The smallest possible value.
    pub lo: i64,
    /// The largest possible value.
    pub hi: i64,
}

impl Interval {
    /// Every `i64`: nothing is known.
    pub const FULL: Interval = Interval {
        lo: i64::MIN,
        hi: i64::MAX,
    };

    /// `[lo, hi]`, or `None` when it would be empty (`lo > hi`).
    pub fn new(lo: i64, hi: i64) -> Option<Interval> {
        (lo <= hi).then_some(Interval { lo, hi })
    }

    /// The single value `v`.
    pub fn point(v: i64) -> Interval {
        Interval { lo: v, hi: v }
    }

    /// The values of a loop running over `[start, end)`, or `None` when the loop is empty.
    pub fn from_half_open(start: i64, end: i64) -> Option<Interval> {
        Interval::new(start, end.checked_sub(1)?)
    }

    /// True when `v` lies in the interval.
    pub fn contains(&self, v: i64) -> bool {
        self.lo <= v && v <= self.hi
    }

    /// True when every value of `self` lies in `outer`.
    pub fn is_within(&self, outer: Interval) -> bool {
        outer.lo <= self.lo && self.hi <= outer.hi
    }

    /// The smallest interval holding both.
    pub fn hull(self, other: Interval) -> Interval {
        Interval {
            lo: self.lo.min(other.lo),
            hi: self.hi.max(other.hi),
        }
    }

    /// The interval of all `f(x, y)` for `x` in `self`, `y` in `other`, for an `f`
    /// whose extremes over a box lie at its corners.
    fn corners(self, other: Interval, f: impl Fn(i64, i64) -> i64) -> Interval {
        let values = [
            f(self.lo, other.lo),
            f(self.lo, other.hi),
            f(self.hi, other.lo),
            f(self.hi, other.hi),
        ];
        let lo = values.iter().copied().min().unwrap_or(i64::MIN);
        let hi = values.iter().copied().max().unwrap_or(i64::MAX);
        Interval { lo, hi }
    }

    /// The negative and the positive part, leaving out 0 (divisors).
    fn nonzero_parts(self) -> [Option<Interval>; 2] {
        [
            Interval::new(self.lo, self.hi.min(-1)),
            Interval::new(self.lo.max(1), self.hi),
        ]
    }
}

/// Ranges of the variables of index expressions, for [`Expr::interval`].
///
/// `None` means the variable's range is unknown; it is then taken as unbounded.
/// An empty interval (`lo > hi`) is treated the same way.
pub trait IntervalEnv {
    /// Range of loop index `i{n}`.
    fn index(&self, n: usize) -> Option<Interval>;
    /// Range of a named dimension.
    fn name(&self, name: &str) -> Option<Interval>;
    /// Range of a `$param`.
    fn param(&self, name: &str) -> Option<Interval>;
    /// Range of a shape-source reference `dA0`.
    fn dim(&self, _d: DimRef) -> Option<Interval> {
        None
    }
}

/// A plain map-backed [`IntervalEnv`]; anything not listed is unbounded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ranges {
    /// Loop index ranges by loop number.
    pub indices: HashMap<usize, Interval>,
    /// Named dimensions.
    pub names: HashMap<String, Interval>,
    /// `$params`.
    pub params: HashMap<String, Interval>,
    /// Shape-source dimensions.
    pub dims: HashMap<DimRef, Interval>,
}

impl IntervalEnv for Ranges {
    fn index(&self, n: usize) -> Option<Interval> {
        self.indices.get(&n).copied()
    }
    fn name(&self, name: &str) -> Option<Interval> {
        self.names.get(name).copied()
    }
    fn param(&self, name: &str) -> Option<Interval> {
        self.params.get(name).copied()
    }
    fn dim(&self, d: DimRef) -> Option<Interval> {
        self.dims.get(&d).copied()
    }
}

impl Expr {
    /// An interval holding every value this expression takes for variables within
    /// the ranges of `env`; `None` when nothing is known (no bound on either side).
    ///
    /// ```
    /// use uop_codegen::index::{parse_expr, Interval, Ranges};
    /// let mut env = Ranges::default();
    /// env.indices.insert(0, Interval::from_half_open(0, 10).unwrap());
    /// let e = parse_expr("2 * i0 + 1").unwrap();
    /// assert_eq!(e.interval(&env), Some(Interval { lo: 1, hi: 19 }));
    /// assert_eq!(parse_expr("i0 + N").unwrap().interval(&env), None);
    /// ```
    pub fn interval(&self, env: &impl IntervalEnv) -> Option<Interval> {
        let range = self.range(env);
        (range != Interval::FULL).then_some(range)
    }

    fn range(&self, env: &impl IntervalEnv) -> Interval {
        let known = |r: Option<Interval>| r.filter(|r| r.lo <= r.hi).unwrap_or(Interval::FULL);
        match self {
            Expr::Int(v) => Interval::point(*v),
            Expr::Index(n) => known(env.index(*n)),
            Expr::Dim(d, _) => known(env.dim(*d)),
            Expr::Param(p) => known(env.param(p)),
            Expr::Name(n) => known(env.name(n)),
            Expr::Neg(a) => {
                let a = a.range(env);
                Interval {
                    lo: a.hi.saturating_neg(),
                    hi: a.lo.saturating_neg(),
                }
            }
            Expr::Bin(op, a, b) => {
                let (a, b) = (a.range(env), b.range(env));
                match op {
                    IndexOp::Add => Interval {
                        lo: a.lo.saturating_add(b.lo),
                        hi: a.hi.saturating_add(b.hi),
                    },
                    IndexOp::Sub => Interval {
                        lo: a.lo.saturating_sub(b.hi),
                        hi: a.hi.saturating_sub(b.lo),
                    },
                    IndexOp::Mul => a.corners(b, i64::saturating_mul),
                    IndexOp::Div => divide(a, b),
                    IndexOp::Mod => modulo(a, b),
                    IndexOp::Min => Interval {
                        lo: a.lo.min(b.lo),
                        hi: a.hi.min(b.hi),
                    },
                    IndexOp::Max => Interval {
                        lo: a.lo.max(b.lo),
                        hi: a.hi.max(b.hi),
                    },
                }
            }
        }
    }
}

/// Floor division: over divisors of one sign, `a / b` is monotone in each operand,
/// so its extremes are at the corners. A zero divisor gives no value at all.
fn divide(a: Interval, b: Interval) -> Interval {
    // The only overflow, i64::MIN / -1, is 2^63: saturate.
    let div = |x, y| floor_div(x, y).unwrap_or(i64::MAX);
    b.nonzero_parts()
        .into_iter()
        .flatten()
        .map(|part| a.corners(part, div))
        .reduce(Interval::hull)
        .unwrap_or(Interval::FULL)
}

/// Floor modulo: the result has the sign of the divisor and is smaller than it in
/// magnitude; it is `a` itself when `a` already lies in `[0, b)` (or `(b, 0]`).
fn modulo(a: Interval, b: Interval) -> Interval {
    b.nonzero_parts()
        .into_iter()
        .flatten()
        .map(|part| modulo_one_sign(a, part))
        .reduce(Interval::hull)
        .unwrap_or(Interval::FULL)
}

fn modulo_one_sign(a: Interval, b: Interval) -> Interval {
    if b.lo == b.hi {
        let k = b.lo;
        // Within one period of k, `a % k` increases with `a`.
        if let (Some(q_lo), Some(q_hi)) = (floor_div(a.lo, k), floor_div(a.hi, k))
            && q_lo == q_hi
            && let (Some(lo), Some(hi)) = (floor_mod(a.lo, k), floor_mod(a.hi, k))
        {
            return Interval { lo, hi };
        }
    }
    if b.lo > 0 {
        if a.lo >= 0 && a.hi < b.lo {
            a
        } else if a.lo >= 0 {
            // For a >= 0, a % b <= a.
            Interval {
                lo: 0,
                hi: a.hi.min(b.hi - 1),
            }
        } else {
            Interval {
                lo: 0,
                hi: b.hi - 1,
            }
        }
    } else if a.hi <= 0 && a.lo > b.hi {
        a
    } else if a.hi <= 0 {
        // For a <= 0 and b < 0, a % b >= a.
        Interval {
            lo: a.lo.max(b.lo + 1),
            hi: 0,
        }
    } else {
        Interval {
            lo: b.lo + 1,
            hi: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::parse_expr;

    /// i0 in [0, 9], i1 in [-3, 4], N in [1, 100], $k in [1, 5], dA0 in [2, 2]; M unknown.
    fn env() -> Ranges {
        let mut env = Ranges::default();
        env.indices.insert(0, Interval { lo: 0, hi: 9 });
        env.indices.insert(1, Interval { lo: -3, hi: 4 });
        env.names.insert("N".into(), Interval { lo: 1, hi: 100 });
        env.params.insert("k".into(), Interval { lo: 1, hi: 5 });
        env.dims
            .insert(DimRef { source: 0, axis: 0 }, Interval::point(2));
        env
    }

    fn range(src: &str) -> Option<(i64, i64)> {
        let e = parse_expr(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        e.interval(&env()).map(|r| (r.lo, r.hi))
    }

    #[test]
    fn leaves_come_from_the_environment() {
        assert_eq!(range("i0"), Some((0, 9)));
        assert_eq!(range("$k"), Some((1, 5)));
        assert_eq!(range("dA0[=dB0]"), Some((2, 2)));
        assert_eq!(range("-7"), Some((-7, -7)));
        assert_eq!(range("M"), None);
        assert_eq!(range("i5"), None);
    }

    #[test]
    fn sums_and_differences_add_bounds() {
        assert_eq!(range("i0 + i1"), Some((-3, 13)));
        assert_eq!(range("i0 - i1"), Some((-4, 12)));
        assert_eq!(range("-i1"), Some((-4, 3)));
        assert_eq!(range("N - $k + 1"), Some((-3, 100)));
    }

    #[test]
    fn products_take_every_sign_case() {
        assert_eq!(range("i0 * 3"), Some((0, 27)));
        assert_eq!(range("i0 * -3"), Some((-27, 0)));
        assert_eq!(range("i1 * i1"), Some((-12, 16)));
        assert_eq!(range("i1 * (i1 - 10)"), Some((-52, 39)));
    }

    #[test]
    fn floor_division_and_modulo() {
        assert_eq!(range("i1 / 2"), Some((-2, 2)));
        assert_eq!(range("i1 / -2"), Some((-2, 1)));
        assert_eq!(range("i0 / $k"), Some((0, 9)));
        assert_eq!(range("i1 % 3"), Some((0, 2)));
        assert_eq!(range("i1 % -3"), Some((-2, 0)));
        assert_eq!(range("i0 % 10"), Some((0, 9)));
        assert_eq!(range("(i0 + 20) % 10"), Some((0, 9)));
        assert_eq!(range("(i0 + 30) % 40"), Some((30, 39)));
        assert_eq!(range("i0 % N"), Some((0, 9)));
        assert_eq!(range("i0 % $k"), Some((0, 4)));
        // The divisor may be zero: only the non-zero divisors produce values.
        assert_eq!(range("20 / i1"), Some((-20, 20)));
        assert_eq!(range("i0 % i1"), Some((-2, 3)));
        assert_eq!(range("i0 / 0"), None);
    }

    #[test]
    fn min_and_max_bound_each_side() {
        assert_eq!(range("min(i0, i1)"), Some((-3, 4)));
        assert_eq!(range("max(i0, i1)"), Some((0, 9)));
        assert_eq!(range("max(i1, 0)"), Some((0, 4)));
        // Half-bounded: min(M, 5) is at most 5 even though M is unknown.
        assert_eq!(range("min(M, 5)"), Some((i64::MIN, 5)));
        assert_eq!(range("max(M, 5)"), Some((5, i64::MAX)));
    }

    #[test]
    fn bounds_saturate_instead_of_overflowing() {
        let mut env = Ranges::default();
        env.indices.insert(
            0,
            Interval {
                lo: 0,
                hi: i64::MAX,
            },
        );
        let e = parse_expr("i0 * 2 + 1").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            e.interval(&env),
            Some(Interval {
                lo: 1,
                hi: i64::MAX
            })
        );
        let e = parse_expr("-(i0 - 9223372036854775807 - 1)").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            e.interval(&env),
            Some(Interval {
                lo: 1,
                hi: i64::MAX
            })
        );
    }

    #[test]
    fn empty_or_missing_ranges_are_unbounded() {
        let mut env = Ranges::default();
        env.indices.insert(0, Interval { lo: 5, hi: 4 });
        assert_eq!(Expr::Index(0).interval(&env), None);
        assert_eq!(Interval::from_half_open(3, 3), None);
        assert_eq!(
            Interval::from_half_open(0, 3),
            Some(Interval { lo: 0, hi: 2 })
        );
    }

    #[test]
    fn interval_helpers() {
        let a = Interval { lo: 0, hi: 9 };
        assert!(a.contains(0) && a.contains(9) && !a.contains(10));
        assert!(Interval::point(3).is_within(a));
        assert!(!a.is_within(Interval::point(3)));
        assert_eq!(a.hull(Interval::point(-1)), Interval { lo: -1, hi: 9 });
        assert_eq!(Interval::new(1, 0), None);
    }
}
