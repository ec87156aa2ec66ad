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
//! renumbered. Substituted values are substituted again, so chains of element-wise
//! temporaries collapse into one expression — up to a budget: a value of more than
//! 4096 nodes or nested more than 256 deep ([`MAX_NODES`], [`MAX_DEPTH`]) is stored, not
//! substituted, so a long chain becomes a few bounded expressions (backends and
//! printers walk expressions recursively) rather than one unbounded one.
//!
//! Cost: one forward walk over each statement list, O(program size + the size of the
//! substituted expressions) plus O(log n) per dependence checked; no rescans.

use std::collections::{HashMap, HashSet};

use crate::loops::{Access, LoopProgram, Stmt, Subscript, TensorId, TensorKind, Value, VarId};

use super::walk::{block_accesses, drop_unused_temps, value_loads, value_reads_var};

/// The most nodes a substituted value may have.
const MAX_NODES: usize = 4096;
/// The deepest a substituted value may nest.
const MAX_DEPTH: usize = 256;

/// Substitutes single-use temporaries (see the module docs).
pub fn subst(p: &LoopProgram) -> LoopProgram {
    let uses = Uses::new(p);
    let mut out = p.clone();
    for b in 0..out.blocks.len() {
        let vars = all_vars(&out, b);
        for level in 0..=out.blocks[b].loops.len() {
            let stmts = std::mem::take(stmts_at(&mut out, b, level));
            let kept = substitute_list(p, &uses, &vars, (b, level), stmts);
            *stmts_at(&mut out, b, level) = kept;
        }
    }
    drop_unused_temps(&mut out);
    out
}

fn stmts_at(p: &mut LoopProgram, block: usize, level: usize) -> &mut Vec<Stmt> {
    super::walk::stmts_at_mut(&mut p.blocks[block], level)
}

/// A statement's place: block, level, position in the level's list.
type Place = (usize, usize, usize);

/// Where each tensor is accessed in the original program.
struct Uses {
    /// Per tensor, its writes.
    writes: HashMap<TensorId, Vec<Place>>,
    /// Per tensor, its reads with their subscripts.
    reads: HashMap<TensorId, Vec<(Place, Vec<Subscript>)>>,
    /// Per (block, level, tensor), the positions of statements writing it, ascending.
    writes_in: HashMap<(usize, usize, TensorId), Vec<usize>>,
    /// Per (block, level, variable), the positions of statements updating it, ascending.
    updates_in: HashMap<(usize, usize, VarId), Vec<usize>>,
}

impl Uses {
    fn new(p: &LoopProgram) -> Self {
        let mut u = Uses {
            writes: HashMap::new(),
            reads: HashMap::new(),
            writes_in: HashMap::new(),
            updates_in: HashMap::new(),
        };
        for (b, block) in p.blocks.iter().enumerate() {
            for a in block_accesses(block) {
                let place = (b, a.level, a.stmt);
                if a.write {
                    u.writes.entry(a.access.tensor).or_default().push(place);
                    u.writes_in
                        .entry((b, a.level, a.access.tensor))
                        .or_default()
                        .push(a.stmt);
                } else {
                    u.reads
                        .entry(a.access.tensor)
                        .or_default()
                        .push((place, a.access.index));
                }
            }
            for (level, stmts) in super::walk::levels(block) {
                for (k, s) in stmts.iter().enumerate() {
                    if let Stmt::Update { var, .. } = s {
                        u.updates_in.entry((b, level, *var)).or_default().push(k);
                    }
                }
            }
        }
        u
    }
}

/// True when `positions` (ascending) holds one strictly between `lo` and `hi`.
fn any_between(positions: Option<&Vec<usize>>, lo: usize, hi: usize) -> bool {
    positions.is_some_and(|ps| {
        let k = ps.partition_point(|&x| x <= lo);
        ps.get(k).is_some_and(|&x| x < hi)
    })
}

/// One statement list after substitution: walks it forward, replacing loads of the
/// temporaries chosen so far and choosing each store that qualifies.
fn substitute_list(
    p: &LoopProgram,
    uses: &Uses,
    vars: &[VarId],
    (block, level): (usize, usize),
    stmts: Vec<Stmt>,
) -> Vec<Stmt> {
    // Chosen temporaries: their value and how many reads are still to come.
    let mut chosen: HashMap<TensorId, (Value, usize)> = HashMap::new();
    let mut kept = Vec::with_capacity(stmts.len());
    for (k, mut s) in stmts.into_iter().enumerate() {
        if !chosen.is_empty() {
            replace_in_stmt(&mut s, &mut chosen);
        }
        if let Stmt::Store { access, value } = &s
            && let Some(reads) = candidate(p, uses, vars, (block, level, k), access, value)
        {
            let Stmt::Store { access, value } = s else {
                unreachable!("matched above")
            };
            chosen.insert(access.tensor, (value, reads));
            continue;
        }
        kept.push(s);
    }
    kept
}

/// The number of reads of the tensor `access` stores at `place` when it may be
/// substituted there by `value` (see the module docs), else `None`.
fn candidate(
    p: &LoopProgram,
    uses: &Uses,
    vars: &[VarId],
    place: Place,
    access: &Access,
    value: &Value,
) -> Option<usize> {
    let (block, level, stmt) = place;
    let t = access.tensor;
    let decl = p.tensors.get(t.0)?;
    if decl.kind != TensorKind::Temp || decl.dtype != p.dtype {
        return None;
    }
    if uses.writes.get(&t)?.as_slice() != [place] {
        return None;
    }
    if access.checked || !access.index.iter().all(|s| matches!(s, Subscript::Expr(_))) {
        return None;
    }
    let reads = uses.reads.get(&t)?;
    if reads.is_empty()
        || !reads
            .iter()
            .all(|(r, index)| r.0 == block && r.1 == level && r.2 > stmt && *index == access.index)
        || !rounded(value, p)
        || !within_budget(value)
    {
        return None;
    }
    let last = reads.iter().map(|(r, _)| r.2).max()?;
    let mut deps: HashSet<TensorId> = HashSet::new();
    value_loads(value, &mut |a, _| {
        deps.insert(a.tensor);
    });
    if deps
        .iter()
        .any(|&d| any_between(uses.writes_in.get(&(block, level, d)), stmt, last))
    {
        return None;
    }
    if vars.iter().any(|&v| {
        value_reads_var(value, v)
            && any_between(uses.updates_in.get(&(block, level, v)), stmt, last)
    }) {
        return None;
    }
    Some(reads.len())
}

/// True when `v` is small and shallow enough to be substituted ([`MAX_NODES`],
/// [`MAX_DEPTH`]).
fn within_budget(v: &Value) -> bool {
    fn walk(v: &Value, depth: usize, nodes: &mut usize) -> bool {
        *nodes += 1;
        if depth > MAX_DEPTH || *nodes > MAX_NODES {
            return false;
        }
        match v {
            Value::Load { access, .. } => access.index.iter().all(|s| match s {
                Subscript::Value(x) => walk(x, depth + 1, nodes),
                Subscript::Expr(_) => true,
            }),
            Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => true,
            Value::Unary(_, x) => walk(x, depth + 1, nodes),
            Value::Binary(_, a, b) => walk(a, depth + 1, nodes) && walk(b, depth + 1, nodes),
            Value::Where(c, a, b) => {
                walk(c, depth + 1, nodes) && walk(a, depth + 1, nodes) && walk(b, depth + 1, nodes)
            }
        }
    }
    walk(v, 1, &mut 0)
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

fn replace_in_stmt(s: &mut Stmt, chosen: &mut HashMap<TensorId, (Value, usize)>) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            replace_in_access(access, chosen);
            replace_in_value(value, chosen);
        }
        Stmt::Update { value, .. } => replace_in_value(value, chosen),
    }
}

fn replace_in_access(a: &mut Access, chosen: &mut HashMap<TensorId, (Value, usize)>) {
    for s in &mut a.index {
        if let Subscript::Value(v) = s {
            replace_in_value(v, chosen);
        }
    }
}

/// Replaces every load of a chosen temporary by its value: a copy, or the value
/// itself at its last read. Inserted values are not walked again (they were
/// substituted when chosen).
fn replace_in_value(v: &mut Value, chosen: &mut HashMap<TensorId, (Value, usize)>) {
    match v {
        Value::Load { access, .. } => {
            if let Some((with, left)) = chosen.get_mut(&access.tensor) {
                *left = left.saturating_sub(1);
                *v = if *left == 0 {
                    let t = access.tensor;
                    chosen
                        .remove(&t)
                        .map_or(Value::Const(0.0), |(with, _)| with)
                } else {
                    with.clone()
                };
            } else {
                replace_in_access(access, chosen);
            }
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => replace_in_value(x, chosen),
        Value::Binary(_, a, b) => {
            replace_in_value(a, chosen);
            replace_in_value(b, chosen);
        }
        Value::Where(c, a, b) => {
            replace_in_value(c, chosen);
            replace_in_value(a, chosen);
            replace_in_value(b, chosen);
        }
    }
}
