//! Values as ranges of one arena in generated graph code (`docs/graph-aot.md`,
//! *Memory*): a graph function keeps its intermediates in one `Vec<T>` laid out by
//! the memory plan, and a value is a [`Loc`], an `(offset, len)` range of it. A
//! kernel call borrows its inputs and outputs from the arena with [`split`], which
//! checks that no output overlaps an input or another output and that every range
//! is inside the arena, so safe code can hand one buffer to a kernel as `&` and
//! `&mut` at once, and a plan the code does not follow is an error, never UB.

use super::error::KernelError;
use super::place::{Item, Kept};

/// The arena's alignment in bytes: every group starts at a multiple of it (the
/// graph layer's memory plan uses this one).
pub const ALIGN: usize = 64;

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

/// Rows `start..start + rows` (rows of `row` elements) of the value at `loc`: one
/// chunk of it, or one row of a `parallel`'s output.
///
/// # Errors
///
/// [`KernelError::Graph`] naming the node when the rows are not inside `loc`.
pub fn rows_at(
    graph: &'static str,
    node: &'static str,
    loc: Loc,
    start: usize,
    rows: usize,
    row: usize,
) -> Result<Loc, KernelError> {
    let inside = (|| {
        let from = start.checked_mul(row)?;
        let len = rows.checked_mul(row)?;
        (from.checked_add(len)? <= loc.len).then(|| Loc::new(loc.offset + from, len))
    })();
    inside.ok_or_else(|| KernelError::Graph {
        graph,
        node,
        message: format!(
            "rows {start}..{start}+{rows} of {row} elements are not within a value of {} elements",
            loc.len
        ),
    })
}

/// Copies `value` into the arena at `dst`.
///
/// # Errors
///
/// [`KernelError::Graph`] naming the node when `dst` is not inside the arena or
/// its length is not the value's.
pub fn copy_in<T: Copy>(
    graph: &'static str,
    node: &'static str,
    arena: &mut [T],
    dst: Loc,
    value: &[T],
) -> Result<(), KernelError> {
    let out = at_mut(graph, node, arena, dst)?;
    if out.len() != value.len() {
        return Err(KernelError::Graph {
            graph,
            node,
            message: format!("a value of {} elements does not fit {dst}", value.len()),
        });
    }
    out.copy_from_slice(value);
    Ok(())
}

/// Copies the arena's value at `src` to `dst` (nothing when they are the same
/// range: a value already where it goes).
///
/// # Errors
///
/// [`KernelError::Graph`] naming the node when a range is not inside the arena,
/// the lengths differ, or the ranges overlap without being the same.
pub fn copy_within<T: Copy>(
    graph: &'static str,
    node: &'static str,
    arena: &mut [T],
    dst: Loc,
    src: Loc,
) -> Result<(), KernelError> {
    if dst == src {
        return at(graph, node, arena, src).map(|_| ());
    }
    let ([from], [to]) = split(graph, node, arena, [src], [dst])?;
    if from.len() != to.len() {
        return Err(KernelError::Graph {
            graph,
            node,
            message: format!("{src} does not fit {dst}"),
        });
    }
    to.copy_from_slice(from);
    Ok(())
}

/// The cells of an f32 arena holding an i32 value, read as that value: an f32
/// graph keeps its i32 values (loop counters, index vectors) in its one arena,
/// each cell the bits of one i32.
pub fn ints(cells: &[f32]) -> &[i32] {
    // SAFETY: f32 and i32 have the same size and alignment, and every bit pattern
    // is a valid i32; the slice borrows the same memory for the same lifetime.
    unsafe { std::slice::from_raw_parts(cells.as_ptr().cast::<i32>(), cells.len()) }
}

/// [`ints`], to write.
pub fn ints_mut(cells: &mut [f32]) -> &mut [i32] {
    // SAFETY: as in `ints`; the exclusive borrow of `cells` becomes the result's.
    unsafe { std::slice::from_raw_parts_mut(cells.as_mut_ptr().cast::<i32>(), cells.len()) }
}

/// An i32 value as the cells of an f32 arena (to copy it in: a copy of `f32`s
/// moves their bits unchanged).
pub fn cells(ints: &[i32]) -> &[f32] {
    // SAFETY: as in `ints`, the other way round: every bit pattern is a valid f32.
    unsafe { std::slice::from_raw_parts(ints.as_ptr().cast::<f32>(), ints.len()) }
}

/// Copies `value` into row `row` (of `value.len()` elements) of the arena's value
/// at `dst`: one iteration's result of a `parallel`.
///
/// # Errors
///
/// As [`rows_at`] and [`copy_in`].
pub fn copy_row_in<T: Copy>(
    graph: &'static str,
    node: &'static str,
    arena: &mut [T],
    dst: Loc,
    row: usize,
    value: &[T],
) -> Result<(), KernelError> {
    let to = rows_at(graph, node, dst, row, 1, value.len())?;
    copy_in(graph, node, arena, to, value)
}

/// [`copy_row_in`] from the arena's value at `src`.
///
/// # Errors
///
/// As [`rows_at`] and [`copy_within`].
pub fn copy_row_within<T: Copy>(
    graph: &'static str,
    node: &'static str,
    arena: &mut [T],
    dst: Loc,
    row: usize,
    src: Loc,
) -> Result<(), KernelError> {
    let to = rows_at(graph, node, dst, row, 1, src.len)?;
    copy_within(graph, node, arena, to, src)
}

/// One group of the memory plan as a placement item: live over steps
/// `start..=end`, as large as its largest member (`lens`, in elements of
/// `elem_bytes` bytes), rounded up to [`ALIGN`] bytes.
///
/// # Errors
///
/// [`KernelError::TooLarge`] naming the arena when the bytes overflow.
pub fn item(
    graph: &'static str,
    start: usize,
    end: usize,
    lens: &[usize],
    elem_bytes: usize,
) -> Result<Item, KernelError> {
    let largest = lens.iter().copied().max().unwrap_or(0);
    let size = largest
        .checked_mul(elem_bytes)
        .and_then(|b| b.checked_next_multiple_of(ALIGN))
        .ok_or(too_large(graph))?;
    Ok(Item { start, end, size })
}

/// The element offset of every group and the arena's length in elements, placed
/// by `kept` (placing again only when the items differ from the last call's).
///
/// # Errors
///
/// [`KernelError::TooLarge`] naming the arena when an offset overflows.
pub fn placed<const G: usize>(
    graph: &'static str,
    kept: &mut Kept,
    items: &[Item; G],
    elem_bytes: usize,
) -> Result<([usize; G], usize), KernelError> {
    let p = kept.place(items).ok_or(too_large(graph))?;
    let elem = elem_bytes.max(1);
    let mut offsets = [0usize; G];
    for (o, placed) in offsets.iter_mut().zip(&p.offsets) {
        *o = placed / elem;
    }
    Ok((offsets, p.arena / elem))
}

/// `buf` grown to `len` elements (new ones zero; no allocation once it has held
/// `len`), as the arena of one call.
///
/// # Errors
///
/// [`KernelError::TooLarge`] naming the arena when the memory cannot be had.
pub fn grow<'a, T: Copy + Default>(
    graph: &'static str,
    buf: &'a mut Vec<T>,
    len: usize,
) -> Result<&'a mut [T], KernelError> {
    if len > buf.len() {
        buf.try_reserve_exact(len - buf.len())
            .map_err(|_| too_large(graph))?;
        buf.resize(len, T::default());
    }
    Ok(&mut buf[..len])
}

fn too_large(graph: &'static str) -> KernelError {
    KernelError::TooLarge {
        kernel: graph,
        buffer: "the arena",
    }
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

    #[test]
    fn groups_are_placed_in_elements_and_kept() {
        let items = [
            item("g", 0, 1, &[10, 16], 4).expect("fits"),
            item("g", 1, 2, &[3], 4).expect("fits"),
            item("g", 2, 3, &[], 4).expect("fits"),
        ];
        // 64 bytes, 64 bytes (12 rounded up), 0 bytes.
        assert_eq!(items.map(|i| i.size), [64, 64, 0]);
        let mut kept = Kept::new();
        let (offsets, len) = placed("g", &mut kept, &items, 4).expect("placed");
        // The first two are live at step 1 together: 32 elements.
        assert_eq!(len, 32);
        assert_ne!(offsets[0], offsets[1]);
        assert_eq!(placed("g", &mut kept, &items, 4), Ok((offsets, len)));
        let e = item("g", 0, 1, &[usize::MAX / 2], 4).expect_err("overflow");
        assert_eq!(
            e.to_string(),
            "g: the shape of `the arena` has too many elements"
        );
    }

    #[test]
    fn the_arena_grows_and_keeps_its_memory() {
        let mut buf: Vec<f32> = Vec::new();
        assert_eq!(grow("g", &mut buf, 8).expect("grows").len(), 8);
        let capacity = buf.capacity();
        assert_eq!(grow("g", &mut buf, 4).expect("fits").len(), 4);
        assert_eq!(buf.capacity(), capacity);
        assert!(grow("g", &mut buf, usize::MAX).is_err());
    }

    #[test]
    fn copies_and_rows_inside_the_arena() {
        let mut a = arena();
        copy_in("g", "%1", &mut a, Loc::new(0, 2), &[7.0, 8.0]).expect("fits");
        assert_eq!(a[..3], [7.0, 8.0, 2.0]);
        assert!(copy_in("g", "%1", &mut a, Loc::new(0, 3), &[7.0]).is_err());
        copy_within("g", "%1", &mut a, Loc::new(8, 2), Loc::new(0, 2)).expect("apart");
        assert_eq!(a[8..], [7.0, 8.0]);
        copy_within("g", "%1", &mut a, Loc::new(8, 2), Loc::new(8, 2)).expect("in place");
        assert!(copy_within("g", "%1", &mut a, Loc::new(1, 2), Loc::new(0, 2)).is_err());
        assert!(copy_within("g", "%1", &mut a, Loc::new(0, 2), Loc::new(5, 3)).is_err());
        assert_eq!(
            rows_at("g", "%2", Loc::new(4, 6), 1, 2, 2),
            Ok(Loc::new(6, 4))
        );
        let e = rows_at("g", "%2", Loc::new(4, 6), 2, 2, 2).expect_err("outside");
        assert_eq!(
            e.to_string(),
            "g: %2: rows 2..2+2 of 2 elements are not within a value of 6 elements"
        );
        assert!(rows_at("g", "%2", Loc::new(0, 6), usize::MAX, 2, 2).is_err());
        copy_row_in("g", "%3", &mut a, Loc::new(4, 4), 1, &[1.0, 2.0]).expect("row 1");
        assert_eq!(a[6..8], [1.0, 2.0]);
        copy_row_within("g", "%3", &mut a, Loc::new(4, 4), 0, Loc::new(0, 2)).expect("row 0");
        assert_eq!(a[4..6], [7.0, 8.0]);
        assert!(copy_row_in("g", "%3", &mut a, Loc::new(4, 4), 2, &[1.0, 2.0]).is_err());
    }
}

#[cfg(test)]
mod int_tests {
    use super::*;

    #[test]
    fn i32_values_round_trip_through_the_cells_of_an_f32_arena() {
        let values = [0, -1, i32::MIN, i32::MAX, 0x7fc0_0001];
        let mut arena = [0.0f32; 6];
        arena[1..].copy_from_slice(cells(&values));
        assert_eq!(ints(&arena[1..]), values);
        ints_mut(&mut arena[..2])[0] = 7;
        assert_eq!(ints(&arena[..1]), [7]);
    }
}
