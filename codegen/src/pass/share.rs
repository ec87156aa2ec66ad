//! Line-aligned shares: an inner [`[parallel]`](crate::loops::Schedule::parallel)
//! loop (a column sum's columns, shared out while each thread walks every row)
//! whose block writes one tensor at unit stride along it, at an offset free of the
//! other loops, gets that write as its argument, `[parallel(lines y[0, i1])]`
//! ([`Schedule::lines`](crate::loops::Schedule::lines)). Threads then share the
//! loop out at multiples of the target's
//! [`share_step`](crate::target::Target::share_step) iterations counted from that
//! write's first cache line boundary, so two threads rarely write one line in every
//! row; without it they take equal parts. Which write may be named is
//! [`line_aligned`](crate::loops::analysis::line_aligned); the pass names the
//! block's first write ([`line_write`](crate::loops::analysis::line_write)). It
//! runs after `rows`, which decides which temporaries are row buffers (each
//! thread's own, never aligned to).
//!
//! Cost: O(A_b) per block.

use crate::loops::LoopProgram;
use crate::loops::analysis::line_write;

/// Names the write an inner `[parallel]` loop's shares align to (see the module docs).
pub fn share(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    for (k, b) in p.blocks.iter().enumerate() {
        let Some(d) = b.loops.iter().position(|l| l.schedule.parallel) else {
            continue;
        };
        if d > 0
            && let Some(w) = line_write(p, b, d)
            && let Ok(w) = u8::try_from(w)
        {
            out.blocks[k].loops[d].schedule.lines = Some(w);
        }
    }
    out
}
