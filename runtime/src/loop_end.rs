//! Custom loop ends of `chunk` loops in generated graph code (DESIGN.md §20, the
//! seed's `nn_loopend_fp`): a graph function with chunk loops takes a
//! [`LoopEnds`], called at the end of every iteration of every loop with the loop's
//! chunk node and its level's [`LoopCounts`]; it decides whether the loop runs
//! again. [`DefaultLoopEnds`] is the standard one (the next chunk while rows
//! remain). The counts behave as the graph interpreter's loop stack: a level's
//! counts live for the whole call (an inner loop's `prev_outer_batches` grows over
//! the outer loop's iterations), a chunk reads its rows from `prev_batches`, and a
//! graph output's chunk goes at `prev_batches + prev_outer_batches` of the
//! innermost level.

use super::error::KernelError;

/// The counts of one loop level (the seed's `nn_loopcounts`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopCounts {
    /// Iterations before the current one.
    pub itercount: u64,
    /// Rows the loop gave before the current iteration.
    pub prev_batches: u64,
    /// Rows in the current iteration.
    pub current_batches: u64,
    /// The rows of the chunk node's input: when `prev_batches + current_batches >=
    /// total_batches` this is the last iteration (unless a loop end goes on).
    pub total_batches: u64,
    /// Rows of the earlier runs of this level, in the iterations of the loops around
    /// it.
    pub prev_outer_batches: u64,
}

/// What a loop end decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopControl {
    /// Run the loop again (from its chunk node).
    Again,
    /// The loop is done.
    Done,
}

/// The loop-end functions of a graph's chunk loops, with state of their own.
pub trait LoopEnds {
    /// Decides whether the loop of chunk node `chunk` (as the printed graph names
    /// it, `%3`) runs again, updating `counts` for the next iteration (or resetting
    /// them for the next time the level starts). An error stops the call and is
    /// reported naming the chunk node.
    ///
    /// # Errors
    ///
    /// Whatever stops the loop, as a message.
    fn loop_end(
        &mut self,
        chunk: &'static str,
        counts: &mut LoopCounts,
    ) -> Result<LoopControl, String>;

    /// True when every row of every looped graph output is written (the standard
    /// loop end). Otherwise the graph function zeroes those outputs first, so rows no
    /// iteration wrote are zero, as in the interpreter.
    fn covers_all_rows(&self) -> bool {
        false
    }
}

impl<F> LoopEnds for F
where
    F: FnMut(&'static str, &mut LoopCounts) -> Result<LoopControl, String>,
{
    fn loop_end(
        &mut self,
        chunk: &'static str,
        counts: &mut LoopCounts,
    ) -> Result<LoopControl, String> {
        self(chunk, counts)
    }
}

/// The standard loop end of every loop: [`default_loop_end`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultLoopEnds;

impl LoopEnds for DefaultLoopEnds {
    fn loop_end(
        &mut self,
        _: &'static str,
        counts: &mut LoopCounts,
    ) -> Result<LoopControl, String> {
        Ok(default_loop_end(counts))
    }

    fn covers_all_rows(&self) -> bool {
        true
    }
}

/// The standard loop end (the seed's `nn_loopend_default`): while rows remain,
/// count the iteration, advance `prev_batches` by `current_batches` and loop again;
/// else add the level's rows to `prev_outer_batches`, reset `itercount` and
/// `prev_batches`, and end the loop.
pub fn default_loop_end(counts: &mut LoopCounts) -> LoopControl {
    let new_batches = counts.prev_batches.saturating_add(counts.current_batches);
    if new_batches < counts.total_batches {
        counts.itercount += 1;
        counts.prev_batches = new_batches;
        LoopControl::Again
    } else {
        counts.prev_outer_batches = counts.prev_outer_batches.saturating_add(new_batches);
        counts.itercount = 0;
        counts.prev_batches = 0;
        LoopControl::Done
    }
}

fn loop_error(graph: &'static str, node: &'static str, message: String) -> KernelError {
    KernelError::Graph {
        graph,
        node,
        message,
    }
}

/// Starts an iteration of the loop of chunk node `node` over `total` rows in chunks
/// of `size`: its level's counts get the rows of this chunk (`size`, or fewer for
/// the last) and `total`; returns the chunk's first row and its rows.
///
/// # Errors
///
/// [`KernelError::Graph`] for a chunk size of 0, or when a loop end asked for
/// another iteration past the end of the input.
pub fn chunk_begin(
    graph: &'static str,
    node: &'static str,
    size: usize,
    total: usize,
    counts: &mut LoopCounts,
) -> Result<(usize, usize), KernelError> {
    if size == 0 {
        return Err(loop_error(
            graph,
            node,
            "the chunk size is 0: a chunk has at least 1 row".into(),
        ));
    }
    let prev = counts.prev_batches;
    let start = usize::try_from(prev)
        .ok()
        .filter(|&p| p < total || (p == 0 && total == 0))
        .ok_or_else(|| {
            loop_error(
                graph,
                node,
                format!(
                    "the loop went on past the end of the input ({total} rows, row {prev} asked for): its loop-end function asked for another iteration"
                ),
            )
        })?;
    let rows = size.min(total - start);
    counts.current_batches = rows as u64;
    counts.total_batches = total as u64;
    Ok((start, rows))
}

/// The end of an iteration of the loop of chunk node `node`: `true` when `ends`
/// asks for another one.
///
/// # Errors
///
/// [`KernelError::Graph`] naming the chunk node when the loop end fails.
pub fn loop_again(
    graph: &'static str,
    node: &'static str,
    ends: &mut dyn LoopEnds,
    counts: &mut LoopCounts,
) -> Result<bool, KernelError> {
    match ends.loop_end(node, counts) {
        Ok(control) => Ok(control == LoopControl::Again),
        Err(e) => Err(loop_error(graph, node, format!("loop-end function: {e}"))),
    }
}

/// The row of the graph outputs at which the current chunk goes:
/// `prev_batches + prev_outer_batches` of the innermost level.
///
/// # Errors
///
/// [`KernelError::Overflow`] when it is not a `usize`.
pub fn output_row(graph: &'static str, counts: &LoopCounts) -> Result<usize, KernelError> {
    counts
        .prev_batches
        .checked_add(counts.prev_outer_batches)
        .and_then(|r| usize::try_from(r).ok())
        .ok_or(KernelError::Overflow { kernel: graph })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_loop_end_runs_5_rows_in_chunks_of_2_three_times() {
        let mut c = LoopCounts::default();
        let mut seen = Vec::new();
        loop {
            seen.push(chunk_begin("g", "%2", 2, 5, &mut c).unwrap());
            if !loop_again("g", "%2", &mut DefaultLoopEnds, &mut c).unwrap() {
                break;
            }
        }
        assert_eq!(seen, [(0, 2), (2, 2), (4, 1)]);
        assert_eq!(c.prev_outer_batches, 5);
        assert_eq!(output_row("g", &c), Ok(5));
    }

    #[test]
    fn an_empty_input_runs_once_and_going_past_the_end_is_an_error() {
        let mut c = LoopCounts::default();
        assert_eq!(chunk_begin("g", "%2", 2, 0, &mut c), Ok((0, 0)));
        c.prev_batches = 3;
        let e = chunk_begin("g", "%2", 2, 3, &mut c)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("past the end of the input (3 rows, row 3"),
            "{e}"
        );
        assert!(chunk_begin("g", "%2", 0, 3, &mut LoopCounts::default()).is_err());
        let mut fail = |_: &'static str, _: &mut LoopCounts| Err("out of tokens".to_string());
        let e = loop_again("g", "%2", &mut fail, &mut c)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("%2") && e.contains("loop-end function: out of tokens"),
            "{e}"
        );
    }
}
