//! Traversals of loop-IR blocks shared by the passes: every access with the *level* of
//! the statement it sits in, and rewrites of index expressions, tensors and values.
//!
//! A statement's *level* is the number of loops enclosing it: block-level statements
//! are at level 0, the statements of `loops[d]` at level `d + 1`. Two statements at
//! levels `l1` and `l2` share the loops `loops[..min(l1, l2)]`.

use std::collections::{HashMap, HashSet};

use crate::index::Expr;
use crate::loops::{
    Access, Block, Loop, LoopId, LoopProgram, Schedule, Stmt, Subscript, TensorDecl, TensorId,
    TensorKind, Value,
};

/// One tensor access of a block, where it sits and whether it writes.
#[derive(Clone, Debug)]
pub struct AccessAt {
    /// The access (a copy).
    pub access: Access,
    /// Level of the statement holding it.
    pub level: usize,
    /// Position of that statement within its level's statement list.
    pub stmt: usize,
    /// True for the target of a store or accumulate.
    pub write: bool,
}

/// The statement lists of a block with their levels, outermost first.
pub fn levels(block: &Block) -> Vec<(usize, &Vec<Stmt>)> {
    std::iter::once((0, &block.stmts))
        .chain(
            block
                .loops
                .iter()
                .enumerate()
                .map(|(d, l)| (d + 1, &l.stmts)),
        )
        .collect()
}

/// The number of statements of a block, at all levels.
pub fn stmt_count(block: &Block) -> usize {
    block.stmts.len() + block.loops.iter().map(|l| l.stmts.len()).sum::<usize>()
}

/// The statement list at `level`, mutably.
pub fn stmts_at_mut(block: &mut Block, level: usize) -> &mut Vec<Stmt> {
    match level {
        0 => &mut block.stmts,
        l => &mut block.loops[l - 1].stmts,
    }
}

/// Calls `f(access, write)` on every access of `stmt`: its target (a write) and
/// every load of its value and of data-dependent subscripts (reads).
pub fn stmt_accesses(stmt: &Stmt, f: &mut impl FnMut(&Access, bool)) {
    match stmt {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            f(access, true);
            subscript_loads(access, f);
            value_loads(value, f);
        }
        Stmt::Update { value, .. } => value_loads(value, f),
    }
}

fn subscript_loads(access: &Access, f: &mut impl FnMut(&Access, bool)) {
    for s in &access.index {
        if let Subscript::Value(v) = s {
            value_loads(v, f);
        }
    }
}

/// Calls `f(access, false)` on every load inside `v`, including loads in subscripts.
pub fn value_loads(v: &Value, f: &mut impl FnMut(&Access, bool)) {
    match v {
        Value::Load { access, .. } => {
            f(access, false);
            subscript_loads(access, f);
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => value_loads(x, f),
        Value::Binary(_, a, b) => {
            value_loads(a, f);
            value_loads(b, f);
        }
        Value::Where(c, a, b) => {
            value_loads(c, f);
            value_loads(a, f);
            value_loads(b, f);
        }
    }
}

/// The loads that are operands of `v`, in order (down through unary, binary and
/// `where`, not into subscripts): what a backend may read from a panel instead.
pub fn operand_loads<'v>(v: &'v Value, out: &mut Vec<&'v Value>) {
    match v {
        Value::Load { .. } => out.push(v),
        Value::Unary(_, x) => operand_loads(x, out),
        Value::Binary(_, a, b) => {
            operand_loads(a, out);
            operand_loads(b, out);
        }
        Value::Where(c, a, b) => {
            operand_loads(c, out);
            operand_loads(a, out);
            operand_loads(b, out);
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
    }
}

/// Every access of `block` with its level and statement position.
pub fn block_accesses(block: &Block) -> Vec<AccessAt> {
    let mut out = Vec::new();
    for (level, stmts) in levels(block) {
        for (k, s) in stmts.iter().enumerate() {
            stmt_accesses(s, &mut |a, write| {
                out.push(AccessAt {
                    access: a.clone(),
                    level,
                    stmt: k,
                    write,
                })
            });
        }
    }
    out
}

/// True when `v` reads the carried variable `var`.
pub fn value_reads_var(v: &Value, var: crate::loops::VarId) -> bool {
    match v {
        Value::Var(x) => *x == var,
        Value::Load { access, .. } => access_reads_var(access, var),
        Value::Const(_) | Value::Param(_) | Value::Index(_) => false,
        Value::Unary(_, x) => value_reads_var(x, var),
        Value::Binary(_, a, b) => value_reads_var(a, var) || value_reads_var(b, var),
        Value::Where(c, a, b) => {
            value_reads_var(c, var) || value_reads_var(a, var) || value_reads_var(b, var)
        }
    }
}

fn access_reads_var(a: &Access, var: crate::loops::VarId) -> bool {
    a.index.iter().any(|s| match s {
        Subscript::Value(v) => value_reads_var(v, var),
        Subscript::Expr(_) => false,
    })
}

/// True when `stmt` reads the carried variable `var` (in its value or subscripts).
pub fn stmt_reads_var(stmt: &Stmt, var: crate::loops::VarId) -> bool {
    match stmt {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            access_reads_var(access, var) || value_reads_var(value, var)
        }
        Stmt::Update { value, .. } => value_reads_var(value, var),
    }
}

/// Rewrites every index expression of `block` (loop ranges, subscripts, index values).
pub fn map_block_exprs(block: &mut Block, f: &mut impl FnMut(&Expr) -> Expr) {
    for l in &mut block.loops {
        l.start = f(&l.start);
        l.end = f(&l.end);
    }
    for_each_stmt_mut(block, &mut |s| map_stmt_exprs(s, f));
}

/// Calls `f` on every statement of `block`.
pub fn for_each_stmt_mut(block: &mut Block, f: &mut impl FnMut(&mut Stmt)) {
    for s in &mut block.stmts {
        f(s);
    }
    for l in &mut block.loops {
        for s in &mut l.stmts {
            f(s);
        }
    }
}

/// Rewrites the index expressions of one statement.
pub fn map_stmt_exprs(s: &mut Stmt, f: &mut impl FnMut(&Expr) -> Expr) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            map_access_exprs(access, f);
            map_value_exprs(value, f);
        }
        Stmt::Update { value, .. } => map_value_exprs(value, f),
    }
}

fn map_access_exprs(a: &mut Access, f: &mut impl FnMut(&Expr) -> Expr) {
    for s in &mut a.index {
        match s {
            Subscript::Expr(e) => *e = f(e),
            Subscript::Value(v) => map_value_exprs(v, f),
        }
    }
}

fn map_value_exprs(v: &mut Value, f: &mut impl FnMut(&Expr) -> Expr) {
    match v {
        Value::Load { access, .. } => map_access_exprs(access, f),
        Value::Index(e) => *e = f(e),
        Value::Var(_) | Value::Const(_) | Value::Param(_) => {}
        Value::Unary(_, x) => map_value_exprs(x, f),
        Value::Binary(_, a, b) => {
            map_value_exprs(a, f);
            map_value_exprs(b, f);
        }
        Value::Where(c, a, b) => {
            map_value_exprs(c, f);
            map_value_exprs(a, f);
            map_value_exprs(b, f);
        }
    }
}

/// Calls `f` on every access of `s` (targets and loads, nested ones included).
pub fn map_stmt_accesses(s: &mut Stmt, f: &mut impl FnMut(&mut Access)) {
    match s {
        Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
            map_access(access, f);
            map_value_accesses(value, f);
        }
        Stmt::Update { value, .. } => map_value_accesses(value, f),
    }
}

fn map_access(a: &mut Access, f: &mut impl FnMut(&mut Access)) {
    for s in &mut a.index {
        if let Subscript::Value(v) = s {
            map_value_accesses(v, f);
        }
    }
    f(a);
}

/// Calls `f` on every load of `v`.
pub fn map_value_accesses(v: &mut Value, f: &mut impl FnMut(&mut Access)) {
    match v {
        Value::Load { access, .. } => map_access(access, f),
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
        Value::Unary(_, x) => map_value_accesses(x, f),
        Value::Binary(_, a, b) => {
            map_value_accesses(a, f);
            map_value_accesses(b, f);
        }
        Value::Where(c, a, b) => {
            map_value_accesses(c, f);
            map_value_accesses(a, f);
            map_value_accesses(b, f);
        }
    }
}

/// Renames loop variables: every `Index(n)` with a replacement in `rename` becomes it.
pub fn rename_loops(block: &mut Block, rename: &impl Fn(usize) -> Option<usize>) {
    map_block_exprs(block, &mut |e| {
        e.map_leaves(&mut |leaf| match leaf {
            Expr::Index(n) => rename(*n).map(Expr::Index),
            _ => None,
        })
    });
}

/// Removes temporaries no statement accesses, renumbering the remaining tensors so
/// `tensors`, `inputs`, `outputs` and every access stay consistent. Inputs and
/// outputs are part of the calling convention and are always kept.
pub fn drop_unused_temps(p: &mut LoopProgram) {
    let mut used = vec![false; p.tensors.len()];
    for b in &p.blocks {
        for a in block_accesses(b) {
            if let Some(u) = used.get_mut(a.access.tensor.0) {
                *u = true;
            }
        }
    }
    let keep: Vec<bool> = p
        .tensors
        .iter()
        .zip(&used)
        .map(|(t, &u)| u || t.kind != TensorKind::Temp)
        .collect();
    if keep.iter().all(|&k| k) {
        return;
    }
    let mut new_id = vec![None; p.tensors.len()];
    let mut next = 0;
    for (k, &kept) in keep.iter().enumerate() {
        if kept {
            new_id[k] = Some(next);
            next += 1;
        }
    }
    let old = std::mem::take(&mut p.tensors);
    p.tensors = old
        .into_iter()
        .zip(&keep)
        .filter_map(|(t, &k)| k.then_some(t))
        .collect();
    // Kept tensors always have a new id; the fallback never triggers.
    let map = |t: TensorId| TensorId(new_id.get(t.0).copied().flatten().unwrap_or(t.0));
    p.inputs = p.inputs.iter().map(|&t| map(t)).collect();
    p.outputs = p.outputs.iter().map(|&t| map(t)).collect();
    for b in &mut p.blocks {
        for_each_stmt_mut(b, &mut |s| {
            map_stmt_accesses(s, &mut |a| a.tensor = map(a.tensor))
        });
    }
}

/// Replaces loop variable `id` by the expression `value` everywhere in `block`.
pub fn rename_loops_to(block: &mut Block, id: usize, value: &Expr) {
    map_block_exprs(block, &mut |e| {
        e.map_leaves(&mut |leaf| match leaf {
            Expr::Index(n) if *n == id => Some(value.clone()),
            _ => None,
        })
    });
}

/// True when the first block touching `t` overwrites every element of it
/// before anything reads it: an unchecked store whose subscripts are the indices of
/// loops running exactly over `t`'s axes (`0..size`), and no other access to `t`
/// in that block but loads, in later statements of the same loop, of the element
/// just stored. Otherwise a kernel must zero-fill `t` first, as the reference
/// interpreter starts every tensor at zero.
pub fn fully_written_first(p: &LoopProgram, t: TensorId) -> bool {
    (0..p.blocks.len())
        .find_map(|k| fully_written_first_in(p, k, t))
        .unwrap_or(false)
}

/// [`fully_written_first`] when block `first` is the first block touching `t`, in
/// the time of that one block: `Some(answer)`, or `None` when block `first` does
/// not touch `t` at all.
pub fn fully_written_first_in(p: &LoopProgram, first: usize, t: TensorId) -> Option<bool> {
    let shape = &p.tensors[t.0].shape;
    let b = p.blocks.get(first)?;
    // Every access to `t`: (level, statement position, access, write).
    let lists = levels(b);
    let mut touching = Vec::new();
    for &(level, stmts) in &lists {
        for (k, s) in stmts.iter().enumerate() {
            stmt_accesses(s, &mut |a, write| {
                if a.tensor == t {
                    touching.push((level, k, a.clone(), write));
                }
            });
        }
    }
    let &(depth, at, ref access, write) = touching.first()?;
    if !write {
        return Some(false);
    }
    let store_is_plain = matches!(lists[depth].1[at], Stmt::Store { .. });
    let later_reads_of_it = touching[1..]
        .iter()
        .all(|(l, k, a, write)| !write && *l == depth && *k > at && a == access);
    if !store_is_plain || !later_reads_of_it || access.checked {
        return Some(false);
    }
    // The loops enclosing the store (depth 0 = block level, none).
    let enclosing = &b.loops[..depth];
    let mut seen = Vec::new();
    for (s, size) in access.index.iter().zip(shape) {
        // Subscript 0 covers an axis of size 1 (a kept reduced axis).
        if *s == Subscript::Expr(Expr::Int(0)) && *size == Expr::Int(1) {
            continue;
        }
        let Subscript::Expr(Expr::Index(n)) = s else {
            return Some(false);
        };
        let Some(l) = enclosing.iter().find(|l| l.id.0 == *n) else {
            return Some(false);
        };
        if seen.contains(n) || l.start != Expr::Int(0) || l.end != *size {
            return Some(false);
        }
        seen.push(*n);
    }
    // Every enclosing loop must index an axis, or some element is written twice
    // and another never.
    Some(seen.len() == enclosing.len())
}

/// Names for the tensors a pass declares: `base`, or `base_2`, `base_3`, … , the
/// first that no tensor of the program and no name given before has.
///
/// Built once per pass (O(T)); each name costs O(1) expected, however many copies
/// of one tensor a pass makes (the `k`-th `w_t` does not try `w_t_2` … `w_t_k`
/// again: names are only ever added, so the first free suffix never goes down).
#[derive(Debug, Default)]
pub struct FreshNames {
    taken: HashSet<String>,
    /// Per base, the first suffix not yet known to be taken.
    next: HashMap<String, usize>,
}

impl FreshNames {
    /// The names of `tensors`, taken.
    pub fn new(tensors: &[TensorDecl]) -> Self {
        FreshNames {
            taken: tensors.iter().map(|t| t.name.clone()).collect(),
            next: HashMap::new(),
        }
    }

    /// A fresh name from `base`, now taken.
    pub fn fresh(&mut self, base: &str) -> String {
        let name = if self.taken.contains(base) {
            let k = self.next.entry(base.to_string()).or_insert(2);
            while self.taken.contains(&format!("{base}_{k}")) {
                *k += 1;
            }
            format!("{base}_{k}")
        } else {
            base.to_string()
        };
        self.taken.insert(name.clone());
        name
    }
}

/// A loop with no statements and no carried variables of its own: one that may be
/// moved among such loops.
pub fn quiet(l: &Loop) -> bool {
    l.carried.is_empty() && l.stmts.is_empty()
}

/// Whether `l`'s range (start or end) uses the variable of loop `n`.
pub fn range_mentions(l: &Loop, n: usize) -> bool {
    l.start.indices().contains(&n) || l.end.indices().contains(&n)
}

/// The first loop id above every loop of `p`: where a pass adding loops numbers
/// them from (see [`fresh_loops`]).
pub fn first_free_loop(p: &LoopProgram) -> usize {
    p.blocks
        .iter()
        .flat_map(|b| b.loops.iter().map(|l| l.id.0 + 1))
        .max()
        .unwrap_or(0)
}

/// Fresh loops `0..size`, one per axis of `shape`.
pub fn fresh_loops(shape: &[Expr], next_loop: &mut usize) -> Vec<Loop> {
    shape
        .iter()
        .map(|size| {
            let id = LoopId(*next_loop);
            *next_loop += 1;
            Loop {
                id,
                start: Expr::Int(0),
                end: size.clone(),
                carried: Vec::new(),
                stmts: Vec::new(),
                schedule: Schedule::default(),
            }
        })
        .collect()
}
