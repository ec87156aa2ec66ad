//! Jammed rows: a nest `… R C` whose innermost loop `C` accumulates into an element
//! that does not move with `R` (a column sum, `y[c] += x[r, c]`) may run several
//! rows of `R` at a time, each element of `y` loaded once per group of rows, the
//! rows' values combined into it in row order. The innermost loop is marked
//! [`[jammed]`](crate::loops::Schedule::jammed) where
//! [`jammable`](crate::loops::analysis::jammable) holds (its one definition, which
//! the verifier checks too); how many rows a group takes is the target's
//! ([`Target::jam_rows`](crate::target::Target::jam_rows)).
//!
//! Cost: O(e) per block, `e` the size of the innermost loop's statement.

use crate::loops::LoopProgram;
use crate::loops::analysis::jammable;

/// Marks the innermost loop of every nest whose rows are [`jammable`] `[jammed]`.
pub fn jam(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for b in &mut out.blocks {
        if let [.., r, c] = b.loops.as_mut_slice()
            && jammable(r, c)
        {
            c.schedule.jammed = true;
        }
    }
    out
}
