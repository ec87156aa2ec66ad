//! Realigned chunks: a long reduction run in pieces (`[split]` and `[pieces]` on
//! the one loop of a block, a full sum) may start each piece's whole chunks where
//! the element of one of its loads starts a cache line, so that no vector load of
//! it straddles two lines (a 64 MB sum from a buffer 16 bytes off a line: 1.6 →
//! 1.2 ms). This pass chooses that load, the first load of an input that is
//! [`alignable`] (the one definition, which the verifier checks too), and names it
//! in the `split` mark's argument, `[split(aligned x[i0])]`
//! ([`Schedule::aligned`](crate::loops::Schedule::aligned)). A short split loop,
//! such as a row of a softmax, is left alone: it would pay more for the alignment
//! than it gains. It runs after `parallel`, which marks the pieces.
//!
//! Cost: O(e) per block, `e` the size of the loop's statements.

use crate::loops::analysis::{alignable, load_position, loads};
use crate::loops::{LoopProgram, TensorKind};

/// Names, in the `split` mark of every loop run in pieces, the first unit-stride
/// load of an input as the load its chunks are aligned to.
pub fn align(p: &LoopProgram) -> LoopProgram {
    let mut out = p.clone();
    let input = |t: crate::loops::TensorId| p.tensors[t.0].kind == TensorKind::Input;
    for b in &mut out.blocks {
        if let [l] = b.loops.as_mut_slice()
            && l.schedule.split
            && l.schedule.pieces
            && let Some(a) = loads(l)
                .into_iter()
                .find(|a| input(a.tensor) && alignable(l, a))
        {
            l.schedule.aligned = load_position(l, &a);
        }
    }
    out
}
