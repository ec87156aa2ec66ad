//! The accesses of a loop's body by position: the order in which a mark's argument
//! names the loads or writes it is about ([`LoadSet`]).

use crate::loops::{Access, LoadSet, Loop};

use super::walk::stmt_accesses;

/// The loads (`write == false`) or writes of the body of `loops[0]`, where `loops`
/// are a loop and the loops inside it, outermost first: the statements of each
/// loop in turn, the innermost loop's first, each statement's accesses in
/// [`stmt_accesses`] order. Position `k` of a [`LoadSet`] is the `k`-th of these.
///
/// Innermost first because marks name the loads of the innermost loop (a tile's
/// reduction, a split loop): a mark's argument names a load by its printed form,
/// which reads back as its first position, so that position must be the innermost
/// loop's even when a loop outside reads the same element after it.
pub fn body_accesses(loops: &[Loop], write: bool) -> Vec<Access> {
    let mut out = Vec::new();
    for l in loops.iter().rev() {
        for s in &l.stmts {
            stmt_accesses(s, &mut |a, w| {
                if w == write {
                    out.push(a.clone());
                }
            });
        }
    }
    out
}

/// The accesses of `set` among [`body_accesses`]`(loops, write)`, ascending by
/// position (a position past the body's accesses names nothing).
pub fn named(loops: &[Loop], write: bool, set: LoadSet) -> Vec<Access> {
    body_accesses(loops, write)
        .into_iter()
        .enumerate()
        .filter(|(k, _)| set.contains(*k))
        .map(|(_, a)| a)
        .collect()
}
