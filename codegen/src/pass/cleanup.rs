//! Cleanup: folds index expressions and `where`s with identical branches, removes
//! loops that do nothing and blocks with no statements.
//!
//! Guarantee: results are unchanged. Concretely:
//! - every index expression (loop ranges, subscripts, index values) is replaced by
//!   its [`Expr::simplify`](crate::index::Expr::simplify) form, which has the same value wherever it is defined;
//! - a loop running exactly once (`for i in c..c + 1`, literals) is removed: its
//!   variable becomes the literal `c`, its carried variables move to the enclosing
//!   level (they were reset once per enclosing iteration anyway) and its statements
//!   run just before the enclosing level's own statements, which is when they ran;
//! - `where(c, a, a)` becomes `a` (the same value whatever `c` is, and reading
//!   `c` has no effect: a checked load out of range reads its fill); the two
//!   branches must be identical, constants and the fills of checked loads bit for
//!   bit (`0.0` and `-0.0` are not). A tensor read only by such a condition is then
//!   not read at all, so backends do not take it as a parameter;
//! - innermost loops holding no statements and no carried variables are removed
//!   (running them had no effect);
//! - blocks left without any statement are removed.
//!
//! Cost: O(E · simplify + L · E_b) per block — two folds of every index expression,
//! one rename per loop removed — plus one comparison of the two branches per
//! `where` (bounded by the smaller branch): O(E · D) at worst, D the nesting depth
//! of `where`s in one value (at most 256).

use crate::loops::{Access, Block, LoopProgram, Stmt, Subscript, Value};

use super::walk::{for_each_stmt_mut, levels, map_block_exprs, rename_loops_to};

/// Simplifies and prunes every block (see the module docs).
pub fn cleanup(p: &LoopProgram) -> LoopProgram {
    let blocks = p
        .blocks
        .iter()
        .filter_map(|b| {
            let b = clean_block(b.clone());
            let has_stmts = levels(&b).iter().any(|(_, s)| !s.is_empty());
            has_stmts.then_some(b)
        })
        .collect();
    LoopProgram {
        blocks,
        ..p.clone()
    }
}

fn clean_block(mut b: Block) -> Block {
    map_block_exprs(&mut b, &mut |e| e.simplify());
    remove_loops_running_once(&mut b);
    map_block_exprs(&mut b, &mut |e| e.simplify());
    for_each_stmt_mut(&mut b, &mut |s| match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            fold_access_wheres(access);
            fold_wheres(value);
        }
        Stmt::Update { value, .. } => fold_wheres(value),
    });
    while b
        .loops
        .last()
        .is_some_and(|l| l.stmts.is_empty() && l.carried.is_empty())
    {
        b.loops.pop();
    }
    b
}

/// Removes every loop of `b` whose range is literally one iteration (see the module
/// docs): also used by fusion, so that a size-1 axis does not keep two nests apart.
pub(super) fn remove_loops_running_once(b: &mut Block) {
    let mut d = 0;
    while d < b.loops.len() {
        let l = &b.loops[d];
        let once = match (l.start.simplify().as_int(), l.end.simplify().as_int()) {
            (Some(s), Some(e)) => e.checked_sub(s) == Some(1),
            _ => false,
        };
        if !once {
            d += 1;
            continue;
        }
        let removed = b.loops.remove(d);
        let (id, value) = (removed.id.0, removed.start.clone());
        let (carried, stmts) = match d {
            0 => (&mut b.carried, &mut b.stmts),
            _ => {
                let parent = &mut b.loops[d - 1];
                (&mut parent.carried, &mut parent.stmts)
            }
        };
        carried.extend(removed.carried);
        let after = std::mem::take(stmts);
        stmts.extend(removed.stmts);
        stmts.extend(after);
        // After the move, so the moved statements see the literal too.
        rename_loops_to(b, id, &value);
    }
}

/// Replaces every `where(c, a, b)` in `v` whose branches are [`identical`] by `a`,
/// innermost first (so `where(c, where(d, a, a), a)` becomes `a`).
fn fold_wheres(v: &mut Value) {
    match v {
        Value::Load { access, .. } => fold_access_wheres(access),
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => fold_wheres(x),
        Value::Binary(_, a, b) => {
            fold_wheres(a);
            fold_wheres(b);
        }
        Value::Where(c, a, b) => {
            fold_wheres(c);
            fold_wheres(a);
            fold_wheres(b);
            if identical(a, b) {
                let a = std::mem::replace(a.as_mut(), Value::Const(0.0));
                *v = a;
            }
        }
    }
}

fn fold_access_wheres(a: &mut Access) {
    for s in &mut a.index {
        if let Subscript::Value(v) = s {
            fold_wheres(v);
        }
    }
}

/// Whether `a` and `b` compute the same bits: the same tree, constants and fills
/// compared bit for bit (`==` on floats would equate `0.0` and `-0.0`).
fn identical(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // An unchecked load never reads its fill.
        (Value::Load { access: x, fill: f }, Value::Load { access: y, fill: g }) => {
            (!x.checked || f.to_bits() == g.to_bits()) && identical_access(x, y)
        }
        (Value::Const(x), Value::Const(y)) => x.to_bits() == y.to_bits(),
        (Value::Unary(o, x), Value::Unary(p, y)) => o == p && identical(x, y),
        (Value::Binary(o, x1, x2), Value::Binary(p, y1, y2)) => {
            o == p && identical(x1, y1) && identical(x2, y2)
        }
        (Value::Where(c, x1, x2), Value::Where(d, y1, y2)) => {
            identical(c, d) && identical(x1, y1) && identical(x2, y2)
        }
        // Variables, params and index values hold no float literal.
        (Value::Var(_), _) | (Value::Param(_), _) | (Value::Index(_), _) => a == b,
        _ => false,
    }
}

fn identical_access(a: &Access, b: &Access) -> bool {
    a.tensor == b.tensor
        && a.checked == b.checked
        && a.index.len() == b.index.len()
        && a.index.iter().zip(&b.index).all(|(s, t)| match (s, t) {
            (Subscript::Expr(x), Subscript::Expr(y)) => x == y,
            (Subscript::Value(x), Subscript::Value(y)) => identical(x, y),
            _ => false,
        })
}
