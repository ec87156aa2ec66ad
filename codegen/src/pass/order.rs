//! Loop order: a reduction whose inner loop walks memory with a large stride while
//! the loop around it walks with unit stride is turned inside out, so the unit-stride
//! loop runs innermost and accumulates straight into the output.
//!
//! ```text
//! for j in 0..N {                      for j in 0..N { y[j] = 0.0 }
//!   v = 0.0 (+)                  =>    for i in 0..M {
//!   for i in 0..M { v += x[i, j] }       for j in 0..N { y[j] += x[i, j] }
//!   y[j] = v                           }
//! }
//! ```
//!
//! Every output element still combines the same values in the same order (the
//! reduction loop's), so results are bit for bit the same. The pattern: a block's
//! loops `O… C K…` where only `C` declares carried variables, only the innermost
//! `K` has statements and they are updates of `C`'s variables, and `C`'s
//! statements store each variable once, plainly (`y[..] = v`), at an element that
//! differs for every iteration of `O… C` and that the block reads nowhere. It is
//! applied when no load of the reduction is unit-stride in the innermost `K` and
//! one is in `C`.
//!
//! Cost: O(V_b · S_b · e + A_b · V_b) per block — carried variables against
//! statements and accesses.

use crate::loops::{Block, Carried, LoopProgram, Stmt, Value, VarId};

use super::stride::{Stride, injective, stride};
use super::walk::block_accesses;

/// Reorders every block that matches (see the module docs), splitting it in two:
/// the outputs set to the reductions' identities, then the accumulation.
pub fn order(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    out.blocks = p
        .blocks
        .iter()
        .flat_map(|b| interchange(b).unwrap_or_else(|| vec![b.clone()]))
        .collect();
    out
}

/// The two blocks that replace `b`, or `None` when it does not match.
fn interchange(b: &Block) -> Option<Vec<Block>> {
    if !b.carried.is_empty() || !b.stmts.is_empty() {
        return None;
    }
    // C: the one loop with carried variables; the loops after it are the reduction.
    let c = b.loops.iter().position(|l| !l.carried.is_empty())?;
    let (outer, rest) = b.loops.split_at(c);
    let (cl, reduce) = rest.split_first()?;
    let innermost = reduce.last()?;
    let quiet = |l: &crate::loops::Loop| l.carried.is_empty() && l.stmts.is_empty();
    if !outer.iter().all(quiet) || !reduce[..reduce.len() - 1].iter().all(quiet) {
        return None;
    }
    // Each carried variable: updated only in the innermost loop, stored once by C.
    let parallel: Vec<usize> = b.loops[..=c].iter().map(|l| l.id.0).collect();
    let mut stores = Vec::new();
    for carried in &cl.carried {
        let [Stmt::Store { access, value }] = stores_of(&cl.stmts, carried.var)[..] else {
            return None;
        };
        if *value != Value::Var(carried.var) || !injective(access, &parallel) {
            return None;
        }
        stores.push((carried, access.clone()));
    }
    if stores.len() != cl.stmts.len() {
        return None;
    }
    let mut accumulates = Vec::new();
    for s in &innermost.stmts {
        let Stmt::Update { var, op, value } = s else {
            return None;
        };
        let (carried, target) = stores.iter().find(|(c, _)| c.var == *var)?;
        if carried.op != *op || reads_carried(value, &cl.carried) {
            return None;
        }
        accumulates.push(Stmt::Accumulate {
            access: target.clone(),
            op: *op,
            value: value.clone(),
        });
    }
    // The block must not read what it writes (the new order interleaves them).
    let accesses = block_accesses(b);
    let written: Vec<_> = stores.iter().map(|(_, a)| a.tensor).collect();
    if accesses
        .iter()
        .any(|a| !a.write && written.contains(&a.access.tensor))
    {
        return None;
    }
    // Profitable: the reduction is strided, C is unit-stride for some load.
    let loads: Vec<_> = accesses.iter().filter(|a| !a.write).collect();
    let (k, cn) = (innermost.id.0, cl.id.0);
    if loads.iter().any(|a| stride(&a.access, k) == Stride::Unit)
        || !loads.iter().any(|a| stride(&a.access, cn) == Stride::Unit)
    {
        return None;
    }
    // Ranges: the reduction's may not depend on C (it moves outside C).
    if reduce
        .iter()
        .any(|l| l.start.indices().contains(&cn) || l.end.indices().contains(&cn))
    {
        return None;
    }
    let mut init_loops: Vec<_> = b.loops[..=c].to_vec();
    let last = init_loops.last_mut()?;
    last.carried.clear();
    last.stmts = stores
        .iter()
        .map(|(carried, access)| Stmt::Store {
            access: access.clone(),
            value: Value::Const(carried.op.identity()),
        })
        .collect();
    let mut loops: Vec<_> = outer.to_vec();
    loops.extend(reduce.iter().cloned());
    let mut moved = cl.clone();
    moved.carried.clear();
    moved.stmts = accumulates;
    if let Some(l) = loops.last_mut() {
        l.stmts.clear();
    }
    loops.push(moved);
    let init = Block {
        loops: init_loops,
        carried: Vec::new(),
        stmts: Vec::new(),
    };
    let accumulate = Block {
        loops,
        carried: Vec::new(),
        stmts: Vec::new(),
    };
    Some(vec![init, accumulate])
}

/// The statements of `stmts` that read `var`.
fn stores_of(stmts: &[Stmt], var: VarId) -> Vec<&Stmt> {
    stmts
        .iter()
        .filter(|s| super::walk::stmt_reads_var(s, var))
        .collect()
}

fn reads_carried(v: &Value, carried: &[Carried]) -> bool {
    carried
        .iter()
        .any(|c| super::walk::value_reads_var(v, c.var))
}
