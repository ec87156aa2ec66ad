//! Loops that may run in chunks: the structural half of what the `chunk` pass
//! marks and the verifier checks of [`Schedule::chunked`](crate::loops::Schedule::chunked).

use crate::loops::{Loop, Stmt};

use super::walk::stmt_accesses;

/// True for a loop `for i { y[..] = f(i) }` whose iterations may be computed in
/// chunks before any of the chunk's values is stored: it carries nothing, and its
/// one statement is an unchecked plain store of a value that does not read the
/// stored tensor (in the value or in a data-dependent subscript, which would see a
/// chunk's stores late).
pub fn chunkable(l: &Loop) -> bool {
    let [store @ Stmt::Store { access, .. }] = l.stmts.as_slice() else {
        return false;
    };
    let mut reads_target = false;
    stmt_accesses(store, &mut |a, write| {
        reads_target |= !write && a.tensor == access.tensor;
    });
    l.carried.is_empty() && !access.checked && !reads_target
}
