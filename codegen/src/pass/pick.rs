//! Pick: a sum over a loop that adds a value only at the iteration whose index equals
//! a value that does not move with the loop — a one-hot selection, as picking row `t`
//! of `x` by `reduce_sum(where(eq(iota(.., 0), t), x, 0), [0])` lowers:
//!
//! ```text
//! for i0 in 0..T { for i1 in 0..H { row[0, i1] += where(i0 == t[], x[i0, i1], 0.0) } }
//! ```
//!
//! runs that one iteration instead, reading the row where `t` says:
//!
//! ```text
//! for i1 in 0..H { row[0, i1] += where(t[] == floor(t[]), where(t[] >= 0, where(t[] < T,
//!     x[floor(t[]), i1] ?? 0.0, 0.0), 0.0), 0.0) }
//! ```
//!
//! (O(H) instead of O(T·H): a loop body picking a row of a loop-invariant tensor by
//! its trip count, a gradient reading its tape, no longer scans every row.)
//!
//! Guarantee: results are unchanged wherever the loop's index values are exact in
//! the program's float type (the loop runs fewer than 2^24 iterations in an f32
//! program, 2^53 in an f64 one): every other iteration added `0.0`, which leaves
//! the sum as it was, and the picked iteration is the one whose index equals the
//! value — none when the value is not an integer in the loop's range (the guards),
//! or NaN. Past 2^24 an f32 index is rounded, so that several iterations can equal
//! one value; the original adds all of them, the pick the one the value names.
//!
//! The pattern, checked before anything changes: a loop with no carried variables
//! whose body
//! — its statements and those of the loops inside it, which carry nothing either
//! and whose ranges do not use it — is nothing but sums (`+=` into an element, or a
//! carried variable of a loop outside it) of `where(i == v, x, 0.0)` (or
//! `v == i`): `i` the loop's variable, `v` the same value in every statement,
//! which neither uses `i` nor reads a tensor the block writes; the sums' targets do
//! not use `i`, and `x` uses `i` only as a whole subscript of a load (which becomes
//! the data-dependent subscript `floor(v)`, checked). The loop is then removed as
//! `cleanup` removes a loop running once: its statements run just before those of
//! the level around it.
//!
//! Cost: O(S · V) per loop for the checks and the rewrite, S the statements under it
//! and V the size of their values.

use crate::index::Expr;
use crate::loops::{Access, Block, LoopProgram, Stmt, Subscript, Value};
use crate::uop::{Accum, BinaryOp, UnaryOp};

use super::walk::{range_mentions, stmt_accesses};

/// Picks the one iteration of every one-hot sum (see the module docs).
pub fn pick(p: &LoopProgram) -> LoopProgram {
    let blocks = p
        .blocks
        .iter()
        .map(|b| {
            let mut b = b.clone();
            pick_block(&mut b);
            b
        })
        .collect();
    LoopProgram {
        blocks,
        ..p.clone()
    }
}

fn pick_block(b: &mut Block) {
    let mut d = 0;
    while d < b.loops.len() {
        match one_hot(b, d) {
            Some(v) => collapse(b, d, &v),
            None => d += 1,
        }
    }
}

/// The value `v` of loop `d`'s one-hot sums, when the loop matches the pattern.
fn one_hot(b: &Block, d: usize) -> Option<Value> {
    let l = &b.loops[d];
    let k = l.id.0;
    let inner = &b.loops[d..];
    if inner.iter().any(|m| !m.carried.is_empty())
        || inner[1..].iter().any(|m| range_mentions(m, k))
    {
        return None;
    }
    let written: Vec<usize> = written_tensors(b);
    let mut picked: Option<Value> = None;
    let mut any = false;
    for m in inner {
        for s in &m.stmts {
            any = true;
            let (value, target_free) = match s {
                Stmt::Accumulate {
                    access,
                    op: Accum::Add,
                    value,
                } => (value, !access_mentions(access, k)),
                Stmt::Update {
                    op: Accum::Add,
                    value,
                    ..
                } => (value, true),
                _ => return None,
            };
            if !target_free {
                return None;
            }
            let Value::Where(c, x, zero) = value else {
                return None;
            };
            if !matches!(zero.as_ref(), Value::Const(z) if z.to_bits() == 0.0_f64.to_bits()) {
                return None;
            }
            let v = equal_to_index(c, k)?;
            if value_mentions(v, k) || reads_any(v, &written) || !only_whole_subscripts(x, k) {
                return None;
            }
            match &picked {
                Some(p) if p != v => return None,
                Some(_) => {}
                None => picked = Some(v.clone()),
            }
        }
    }
    if any { picked } else { None }
}

/// `v` when `c` is `i == v` or `v == i`, `i` loop `k`'s variable.
fn equal_to_index(c: &Value, k: usize) -> Option<&Value> {
    let Value::Binary(BinaryOp::Eq, a, b) = c else {
        return None;
    };
    let is_index = |v: &Value| matches!(v, Value::Index(Expr::Index(n)) if *n == k);
    if is_index(a) {
        Some(b)
    } else if is_index(b) {
        Some(a)
    } else {
        None
    }
}

/// Removes loop `d`, whose sums pick the iteration `v` names.
fn collapse(b: &mut Block, d: usize, v: &Value) {
    let removed = b.loops.remove(d);
    let k = removed.id.0;
    let (start, end) = (removed.start.clone(), removed.end.clone());
    let at = |s: &mut Stmt| {
        let value = match s {
            Stmt::Accumulate { value, .. } | Stmt::Update { value, .. } => value,
            Stmt::Store { .. } => return,
        };
        let Value::Where(_, x, _) = value else {
            return;
        };
        let mut x = std::mem::replace(x.as_mut(), Value::Const(0.0));
        subscript(&mut x, k, v);
        *value = guarded(v, x, &start, &end);
    };
    let mut stmts = removed.stmts;
    stmts.iter_mut().for_each(at);
    for m in &mut b.loops[d..] {
        m.stmts.iter_mut().for_each(at);
    }
    let outer = match d {
        0 => &mut b.stmts,
        _ => &mut b.loops[d - 1].stmts,
    };
    let after = std::mem::take(outer);
    outer.extend(stmts);
    outer.extend(after);
}

/// `x` where `v` is an integer in `start..end`, else `0.0`.
fn guarded(v: &Value, x: Value, start: &Expr, end: &Expr) -> Value {
    let zero = || Box::new(Value::Const(0.0));
    let bin = |op, a: Value, b: Value| Value::Binary(op, Box::new(a), Box::new(b));
    let integral = bin(
        BinaryOp::Eq,
        v.clone(),
        Value::Unary(UnaryOp::Floor, Box::new(v.clone())),
    );
    let above = bin(BinaryOp::Ge, v.clone(), Value::Index(start.clone()));
    let below = bin(BinaryOp::Lt, v.clone(), Value::Index(end.clone()));
    let inside = Value::Where(Box::new(below), Box::new(x), zero());
    let inside = Value::Where(Box::new(above), Box::new(inside), zero());
    Value::Where(Box::new(integral), Box::new(inside), zero())
}

/// Replaces every whole subscript `i_k` of `x`'s loads by `floor(v)` (checked).
fn subscript(x: &mut Value, k: usize, v: &Value) {
    match x {
        Value::Load { access, .. } => {
            for s in &mut access.index {
                if matches!(s, Subscript::Expr(Expr::Index(n)) if *n == k) {
                    *s = Subscript::Value(Box::new(v.clone()));
                    access.checked = true;
                } else if let Subscript::Value(inner) = s {
                    subscript(inner, k, v);
                }
            }
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, a) => subscript(a, k, v),
        Value::Binary(_, a, b) => {
            subscript(a, k, v);
            subscript(b, k, v);
        }
        Value::Where(c, a, b) => {
            subscript(c, k, v);
            subscript(a, k, v);
            subscript(b, k, v);
        }
    }
}

/// Whether `x` uses loop `k`'s variable only as whole subscripts of loads.
fn only_whole_subscripts(x: &Value, k: usize) -> bool {
    match x {
        Value::Load { access, .. } => access.index.iter().all(|s| match s {
            Subscript::Expr(Expr::Index(_)) => true,
            Subscript::Expr(e) => !e.indices().contains(&k),
            Subscript::Value(v) => only_whole_subscripts(v, k),
        }),
        Value::Var(_) | Value::Const(_) | Value::Param(_) => true,
        Value::Index(e) => !e.indices().contains(&k),
        Value::Unary(_, a) => only_whole_subscripts(a, k),
        Value::Binary(_, a, b) => only_whole_subscripts(a, k) && only_whole_subscripts(b, k),
        Value::Where(c, a, b) => {
            only_whole_subscripts(c, k)
                && only_whole_subscripts(a, k)
                && only_whole_subscripts(b, k)
        }
    }
}

/// Whether `v` uses loop `k`'s variable anywhere.
fn value_mentions(v: &Value, k: usize) -> bool {
    match v {
        Value::Load { access, .. } => access_mentions(access, k),
        Value::Var(_) | Value::Const(_) | Value::Param(_) => false,
        Value::Index(e) => e.indices().contains(&k),
        Value::Unary(_, a) => value_mentions(a, k),
        Value::Binary(_, a, b) => value_mentions(a, k) || value_mentions(b, k),
        Value::Where(c, a, b) => {
            value_mentions(c, k) || value_mentions(a, k) || value_mentions(b, k)
        }
    }
}

fn access_mentions(a: &Access, k: usize) -> bool {
    a.index.iter().any(|s| match s {
        Subscript::Expr(e) => e.indices().contains(&k),
        Subscript::Value(v) => value_mentions(v, k),
    })
}

/// Whether `v` reads a variable or one of the tensors `written`.
fn reads_any(v: &Value, written: &[usize]) -> bool {
    match v {
        Value::Load { access, .. } => {
            written.contains(&access.tensor.0)
                || access.index.iter().any(|s| match s {
                    Subscript::Expr(_) => false,
                    Subscript::Value(i) => reads_any(i, written),
                })
        }
        Value::Var(_) => true,
        Value::Const(_) | Value::Param(_) | Value::Index(_) => false,
        Value::Unary(_, a) => reads_any(a, written),
        Value::Binary(_, a, b) => reads_any(a, written) || reads_any(b, written),
        Value::Where(c, a, b) => {
            reads_any(c, written) || reads_any(a, written) || reads_any(b, written)
        }
    }
}

/// The tensors the block's statements write.
fn written_tensors(b: &Block) -> Vec<usize> {
    let mut out = Vec::new();
    let stmts = b.loops.iter().flat_map(|l| &l.stmts).chain(&b.stmts);
    for s in stmts {
        stmt_accesses(s, &mut |a: &Access, write: bool| {
            if write && !out.contains(&a.tensor.0) {
                out.push(a.tensor.0);
            }
        });
    }
    out
}
