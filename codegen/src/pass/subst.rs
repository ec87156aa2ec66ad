//! Variable substitution: a temporary stored once and read only right after, in the
//! same loop at the same index, is replaced by the stored expression and never
//! allocated.
//!
//! Guarantee: results are bit-identical. A temporary `t` is substituted only when
//! - it has exactly one write in the program, a `t[idx] = value` known in range
//!   (an out-of-range store would be skipped and the read would see the fill);
//! - every load of `t` is in a later statement of the same statement list (same
//!   block, same loop, same iteration) with subscripts identical to `idx`;
//! - no statement between the store and the last such read writes a tensor or
//!   updates a carried variable that `value` reads, so `value` means the same there;
//! - `t` has the program's float type and `value` is already rounded to it, so the
//!   store's rounding is the identity (an i32 temporary truncates and is kept).
//!
//! The tensor is then dropped from [`LoopProgram::tensors`] and the remaining tensors
//! renumbered. Substitution repeats until nothing changes, so chains of element-wise
//! temporaries collapse into one expression.

use std::collections::HashSet;

use crate::loops::{Access, LoopProgram, Stmt, Subscript, TensorId, TensorKind, Value, VarId};

use super::walk::{
    AccessAt, block_accesses, drop_unused_temps, levels, stmt_accesses, stmts_at_mut, value_loads,
    value_reads_var,
};

/// Substitutes single-use temporaries (see the module docs).
pub fn subst(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    while let Some(site) = find_candidate(&out) {
        apply(&mut out, &site);
    }
    drop_unused_temps(&mut out);
    out
}

/// Where a substitutable temporary is stored.
struct Site {
    tensor: TensorId,
    block: usize,
    level: usize,
    stmt: usize,
}

fn find_candidate(p: &LoopProgram) -> Option<Site> {
    let per_block: Vec<_> = p.blocks.iter().map(block_accesses).collect();
    (0..p.tensors.len()).find_map(|t| candidate(p, &per_block, TensorId(t)))
}

fn candidate(p: &LoopProgram, per_block: &[Vec<AccessAt>], t: TensorId) -> Option<Site> {
    let decl = &p.tensors[t.0];
    if decl.kind != TensorKind::Temp || decl.dtype != p.dtype {
        return None;
    }
    let mut writes = Vec::new();
    let mut reads = Vec::new();
    for (b, accesses) in per_block.iter().enumerate() {
        for a in accesses.iter().filter(|a| a.access.tensor == t) {
            if a.write {
                writes.push((b, a));
            } else {
                reads.push((b, a));
            }
        }
    }
    let [(block, w)] = writes.as_slice() else {
        return None;
    };
    let (block, level, stmt) = (*block, w.level, w.stmt);
    let stmts = levels(&p.blocks[block])
        .into_iter()
        .find(|(l, _)| *l == level)?
        .1;
    let Stmt::Store { access, value } = &stmts[stmt] else {
        return None;
    };
    if access.checked || !access.index.iter().all(|s| matches!(s, Subscript::Expr(_))) {
        return None;
    }
    if reads.is_empty()
        || !reads.iter().all(|(b, r)| {
            *b == block && r.level == level && r.stmt > stmt && r.access.index == access.index
        })
        || !rounded(value, p)
    {
        return None;
    }
    let last = reads.iter().map(|(_, r)| r.stmt).max()?;
    let mut deps: HashSet<TensorId> = HashSet::new();
    value_loads(value, &mut |a, _| {
        deps.insert(a.tensor);
    });
    let vars = all_vars(p, block);
    let var_deps: Vec<VarId> = vars
        .into_iter()
        .filter(|&v| value_reads_var(value, v))
        .collect();
    for s in &stmts[stmt + 1..last] {
        let mut clobbers = false;
        stmt_accesses(s, &mut |a, write| {
            clobbers |= write && deps.contains(&a.tensor)
        });
        if let Stmt::Update { var, .. } = s {
            clobbers |= var_deps.contains(var);
        }
        if clobbers {
            return None;
        }
    }
    Some(Site {
        tensor: t,
        block,
        level,
        stmt,
    })
}

fn all_vars(p: &LoopProgram, block: usize) -> Vec<VarId> {
    let b = &p.blocks[block];
    b.carried
        .iter()
        .chain(b.loops.iter().flat_map(|l| &l.carried))
        .map(|c| c.var)
        .collect()
}

/// True when `v` is already rounded to the program's float type (every operator
/// result is; a load is when its tensor has that type).
fn rounded(v: &Value, p: &LoopProgram) -> bool {
    match v {
        Value::Load { access, .. } => p
            .tensors
            .get(access.tensor.0)
            .is_some_and(|t| t.dtype == p.dtype),
        Value::Var(_)
        | Value::Const(_)
        | Value::Param(_)
        | Value::Index(_)
        | Value::Unary(..)
        | Value::Binary(..) => true,
        Value::Where(_, a, b) => rounded(a, p) && rounded(b, p),
    }
}

fn apply(p: &mut LoopProgram, site: &Site) {
    let stmts = stmts_at_mut(&mut p.blocks[site.block], site.level);
    let Stmt::Store { value, .. } = stmts.remove(site.stmt) else {
        return;
    };
    for s in &mut stmts[site.stmt..] {
        replace_in_stmt(s, site.tensor, &value);
    }
}

fn replace_in_stmt(s: &mut Stmt, t: TensorId, with: &Value) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            replace_in_access(access, t, with);
            replace_in_value(value, t, with);
        }
        Stmt::Update { value, .. } => replace_in_value(value, t, with),
    }
}

fn replace_in_access(a: &mut Access, t: TensorId, with: &Value) {
    for s in &mut a.index {
        if let Subscript::Value(v) = s {
            replace_in_value(v, t, with);
        }
    }
}

fn replace_in_value(v: &mut Value, t: TensorId, with: &Value) {
    match v {
        Value::Load { access, .. } if access.tensor == t => *v = with.clone(),
        Value::Load { access, .. } => replace_in_access(access, t, with),
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => replace_in_value(x, t, with),
        Value::Binary(_, a, b) => {
            replace_in_value(a, t, with);
            replace_in_value(b, t, with);
        }
        Value::Where(c, a, b) => {
            replace_in_value(c, t, with);
            replace_in_value(a, t, with);
            replace_in_value(b, t, with);
        }
    }
}
