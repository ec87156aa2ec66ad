//! Rows that may be jammed: the one definition of what the `jam` pass marks and
//! the verifier checks of [`Schedule::jammed`](crate::loops::Schedule::jammed).

use crate::index::Expr;
use crate::loops::{Loop, Stmt, Subscript};

use super::walk::value_loads;

/// True for a nest `for r { for c { y[..] op= f(r, c) } }` whose rows can be
/// jammed: `r` carries nothing and has no statements of its own; `c` carries
/// nothing and its one statement accumulates into an element that does not move
/// with `r`, from a value that does not read the accumulated tensor; and `c`'s
/// range does not depend on `r`. Combining several rows' values into each element
/// in turn is then the same sequence of operations on it as the nest's.
pub fn jammable(r: &Loop, c: &Loop) -> bool {
    let [Stmt::Accumulate { access, value, .. }] = c.stmts.as_slice() else {
        return false;
    };
    let moves_with_r = |e: &Expr| e.indices().contains(&r.id.0);
    let mut reads_target = false;
    value_loads(value, &mut |a, _| {
        reads_target |= a.tensor == access.tensor;
    });
    r.carried.is_empty()
        && r.stmts.is_empty()
        && c.carried.is_empty()
        && !moves_with_r(&c.start)
        && !moves_with_r(&c.end)
        && access.index.iter().all(|s| match s {
            Subscript::Expr(e) => !moves_with_r(e),
            Subscript::Value(_) => false,
        })
        && !reads_target
}
