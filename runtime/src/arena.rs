//! Values as ranges of one arena in generated graph code (`docs/graph-aot.md`,
//! *Memory*): a graph function keeps its intermediates in one `Vec<T>` laid out by
//! the memory plan, and a value is a [`Loc`], an `(offset, len)` range of it. A
//! kernel call borrows its inputs and outputs from the arena with [`split`], which
//! checks that no output overlaps an input or another output and that every range
//! is inside the arena, so safe code can hand one buffer to a kernel as `&` and
//! `&mut` at once, and a plan the code does not follow is an error, never UB.

use super::error::KernelError;

/// A value's range in an arena: `len` elements from element `offset`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Loc {
    /// The first element.
    pub offset: usize,
    /// The number of elements.
    pub len: usize,
}

impl Loc {
    /// `len` elements from `offset`.
    pub const fn new(offset: usize, len: usize) -> Loc {
        Loc { offset, len }
    }

    /// One past the last element; `None` when it overflows.
    fn end(self) -> Option<usize> {
        self.offset.checked_add(self.len)
    }

    /// True when both hold a common element (an empty range holds none).
    fn overlaps(self, other: Loc) -> bool {
        self.len > 0
            && other.len > 0
            && self.offset < other.offset.saturating_add(other.len)
            && other.offset < self.offset.saturating_add(self.len)
    }
}

impl core::fmt::Display for Loc {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(
            f,
            "elements {}..{}",
            self.offset,
            self.offset.saturating_add(self.len)
        )
    }
}

/// What [`split`] gives: the inputs' slices and the outputs' slices.
pub type Split<'a, T, const I: usize, const O: usize> = ([&'a [T]; I], [&'a mut [T]; O]);

/// The value at `loc` of `arena`, read-only.
///
/// # Errors
///
/// [`KernelError::Graph`] naming `value` when the range is not inside the arena.
pub fn at<'a, T>(
    graph: &'static str,
    value: &'static str,
    arena: &'a [T],
    loc: Loc,
) -> Result<&'a [T], KernelError> {
    let len = arena.len();
    loc.end()
        .and_then(|end| arena.get(loc.offset..end))
        .ok_or_else(|| outside(graph, value, "the value", loc, len))
}

/// The value at `loc` of `arena`, to write.
///
/// # Errors
///
/// [`KernelError::Graph`] naming `value` when the range is not inside the arena.
pub fn at_mut<'a, T>(
    graph: &'static str,
    value: &'static str,
    arena: &'a mut [T],
    loc: Loc,
) -> Result<&'a mut [T], KernelError> {
    let len = arena.len();
    loc.end()
        .and_then(|end| arena.get_mut(loc.offset..end))
        .ok_or_else(|| outside(graph, value, "the value", loc, len))
}

/// A kernel call's `I` input and `O` output slices from one arena, given their
/// ranges: the outputs are carved out of the arena (`split_at_mut`) and each input
/// is read from the gap between them that holds it. Inputs may overlap each other.
///
/// # Errors
///
/// [`KernelError::Graph`] naming the node when a range is past the end of the
/// arena, two outputs overlap, or an input overlaps an output.
pub fn split<'a, T, const I: usize, const O: usize>(
    graph: &'static str,
    node: &'static str,
    arena: &'a mut [T],
    ins: [Loc; I],
    outs: [Loc; O],
) -> Result<Split<'a, T, I, O>, KernelError> {
    let len = arena.len();
    let error = |message: String| KernelError::Graph {
        graph,
        node,
        message,
    };
    let fits = |l: Loc| l.end().is_some_and(|end| end <= len);
    for (k, l) in ins.iter().enumerate() {
        if !fits(*l) {
            return Err(outside(graph, node, &format!("input {k}"), *l, len));
        }
    }
    for (k, l) in outs.iter().enumerate() {
        if !fits(*l) {
            return Err(outside(graph, node, &format!("output {k}"), *l, len));
        }
    }
    // Outputs by offset (an empty one is carved nowhere).
    let mut order: [usize; O] = core::array::from_fn(|k| k);
    order.sort_unstable_by_key(|&k| (outs[k].offset, outs[k].len, k));
    for (a, b) in order.iter().zip(order.iter().skip(1)) {
        if outs[*a].overlaps(outs[*b]) {
            let (a, b) = ((*a).min(*b), (*a).max(*b));
            return Err(error(format!(
                "output {a} ({}) overlaps output {b} ({})",
                outs[a], outs[b]
            )));
        }
    }
    for (i, li) in ins.iter().enumerate() {
        if let Some(o) = (0..O).find(|&o| li.overlaps(outs[o])) {
            return Err(error(format!(
                "input {i} ({li}) overlaps output {o} ({})",
                outs[o]
            )));
        }
    }
    // Carve: gap, output, gap, output, ..., gap. Every range is inside the arena
    // and the outputs are disjoint and sorted, so the cuts are in order.
    // No allocation: a kernel call of a steady-state call allocates nothing.
    let mut gaps: [(usize, &'a [T]); O] = [(0, &[]); O];
    let mut carved: [Option<&'a mut [T]>; O] = core::array::from_fn(|_| None);
    let mut rest = arena;
    let mut at = 0usize;
    for &k in &order {
        let l = outs[k];
        if l.len == 0 {
            continue;
        }
        let (gap, tail) = core::mem::take(&mut rest).split_at_mut(l.offset - at);
        let (out, tail) = tail.split_at_mut(l.len);
        gaps[k] = (at, gap);
        carved[k] = Some(out);
        rest = tail;
        at = l.offset + l.len;
    }
    let last: &'a [T] = rest;
    let mut inputs: [&'a [T]; I] = [&[]; I];
    for (slot, l) in inputs.iter_mut().zip(ins) {
        if l.len == 0 {
            continue;
        }
        // The gap holding it: the one after the outputs, or the one before the
        // first (non-empty) output that ends past it.
        let (start, gap) = order
            .iter()
            .find(|&&k| outs[k].len > 0 && outs[k].offset >= l.offset + l.len)
            .map_or((at, last), |&k| gaps[k]);
        let found = l
            .offset
            .checked_sub(start)
            .and_then(|from| gap.get(from..from + l.len));
        *slot = found.ok_or_else(|| error(format!("input ({l}) is not in one gap")))?;
    }
    let outputs = carved.map(Option::unwrap_or_default);
    Ok((inputs, outputs))
}

fn outside(
    graph: &'static str,
    node: &'static str,
    what: &str,
    loc: Loc,
    len: usize,
) -> KernelError {
    KernelError::Graph {
        graph,
        node,
        message: format!("{what} ({loc}) is not inside the arena of {len} elements"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arena() -> Vec<f32> {
        (0..10).map(|v| v as f32).collect()
    }

    #[test]
    fn inputs_come_from_the_gaps_and_outputs_are_carved_out() {
        let mut a = arena();
        // Outputs given out of order; inputs before, between and after them, two
        // inputs overlapping each other.
        let (ins, outs) = split::<f32, 3, 2>(
            "g",
            "%4",
            &mut a,
            [Loc::new(0, 2), Loc::new(4, 2), Loc::new(5, 5)],
            [Loc::new(6, 0), Loc::new(2, 2)],
        )
        .expect("apart");
        assert_eq!(
            ins,
            [&[0.0, 1.0][..], &[4.0, 5.0], &[5.0, 6.0, 7.0, 8.0, 9.0]]
        );
        assert!(outs[0].is_empty());
        outs[1].copy_from_slice(&[-1.0, -2.0]);
        assert_eq!(a[..5], [0.0, 1.0, -1.0, -2.0, 4.0]);
    }

    #[test]
    fn outputs_side_by_side_and_the_whole_arena() {
        let mut a = arena();
        let (ins, outs) = split::<f32, 1, 3>(
            "g",
            "%4",
            &mut a,
            [Loc::new(9, 1)],
            [Loc::new(3, 6), Loc::new(0, 1), Loc::new(1, 2)],
        )
        .expect("apart");
        assert_eq!(ins, [&[9.0][..]]);
        assert_eq!(
            (outs[0].len(), &*outs[1], outs[2].len()),
            (6, &[0.0][..], 2)
        );
        let (_, whole) =
            split::<f32, 0, 1>("g", "%1", &mut a, [], [Loc::new(0, 10)]).expect("fits");
        assert_eq!(whole[0].len(), 10);
        // An empty input or output anywhere inside (or at the end) is fine.
        let (ins, outs) =
            split::<f32, 1, 1>("g", "%1", &mut a, [Loc::new(10, 0)], [Loc::new(10, 0)])
                .expect("empty");
        assert!(ins[0].is_empty() && outs[0].is_empty());
    }

    #[test]
    fn an_input_overlapping_an_output_is_refused() {
        let mut a = arena();
        let e = split::<f32, 2, 1>(
            "g",
            "%4",
            &mut a,
            [Loc::new(0, 2), Loc::new(3, 3)],
            [Loc::new(5, 2)],
        )
        .expect_err("overlap");
        assert_eq!(
            e.to_string(),
            "g: %4: input 1 (elements 3..6) overlaps output 0 (elements 5..7)"
        );
        // The input inside the output, and the output inside the input.
        assert!(split::<f32, 1, 1>("g", "%4", &mut a, [Loc::new(5, 1)], [Loc::new(4, 3)]).is_err());
        assert!(split::<f32, 1, 1>("g", "%4", &mut a, [Loc::new(0, 9)], [Loc::new(4, 3)]).is_err());
    }

    #[test]
    fn overlapping_outputs_are_refused() {
        let mut a = arena();
        let e = split::<f32, 0, 3>(
            "g",
            "%7",
            &mut a,
            [],
            [Loc::new(6, 2), Loc::new(0, 2), Loc::new(1, 2)],
        )
        .expect_err("overlap");
        assert_eq!(
            e.to_string(),
            "g: %7: output 1 (elements 0..2) overlaps output 2 (elements 1..3)"
        );
        // One output twice.
        assert!(split::<f32, 0, 2>("g", "%7", &mut a, [], [Loc::new(4, 1); 2]).is_err());
    }

    #[test]
    fn a_range_past_the_arena_is_refused() {
        let mut a = arena();
        let e = split::<f32, 1, 1>("g", "%2", &mut a, [Loc::new(0, 1)], [Loc::new(8, 3)])
            .expect_err("past");
        assert_eq!(
            e.to_string(),
            "g: %2: output 0 (elements 8..11) is not inside the arena of 10 elements"
        );
        let e = split::<f32, 1, 0>("g", "%2", &mut a, [Loc::new(usize::MAX, 2)], [])
            .expect_err("overflow");
        assert!(e.to_string().contains("input 0"), "{e}");
        assert!(split::<f32, 0, 1>("g", "%2", &mut a, [], [Loc::new(11, 0)]).is_err());
    }

    #[test]
    fn one_value_at_its_range() {
        let mut a = arena();
        assert_eq!(at("g", "h", &a, Loc::new(8, 2)), Ok(&[8.0, 9.0][..]));
        at_mut("g", "h", &mut a, Loc::new(0, 1)).expect("inside")[0] = 5.0;
        assert_eq!(a[0], 5.0);
        let e = at("g", "h", &a, Loc::new(9, 2)).expect_err("past");
        assert_eq!(
            e.to_string(),
            "g: h: the value (elements 9..11) is not inside the arena of 10 elements"
        );
        assert!(at_mut("g", "h", &mut a, Loc::new(usize::MAX, 1)).is_err());
    }
}
