//! What generated graph code calls at run time: a whole graph emitted as one Rust
//! function (`uop_graph::emit`, DESIGN.md §21) keeps its intermediates in buffers of
//! a workspace the caller owns, computes its sizes with checked arithmetic, and
//! reports a `while` condition, `if` condition or `case` selector that is not one
//! value, or a selector out of range, as a [`KernelError::Graph`] naming the node.
//!
//! The size helpers work on `Option<i64>` (`None`: an overflow or a division by
//! zero earlier in the expression), so an emitted size expression is one nested
//! call; [`size`] turns the result into a `usize` or the error.

use std::sync::atomic::{AtomicU64, Ordering};

use super::error::KernelError;

pub use super::arena::{
    ALIGN, Loc, Split, at, at_mut, cells, copy_in, copy_row_in, copy_row_within, copy_within, grow,
    ints, ints_mut, item, placed, rows_at, split,
};
pub use super::loop_end::{
    DefaultLoopEnds, LoopControl, LoopCounts, LoopEnds, chunk_begin, default_loop_end, loop_again,
    output_row,
};

/// `buf` resized to `len` elements (new ones zero, none allocated once `buf` has
/// held `len` before), as the slice a kernel writes.
pub fn slot<T: Copy + Default>(buf: &mut Vec<T>, len: usize) -> &mut [T] {
    buf.resize(len, T::default());
    buf.as_mut_slice()
}

/// `buf` set to a copy of `value` (allocating only the first time it grows).
pub fn assign<T: Copy>(buf: &mut Vec<T>, value: &[T]) {
    buf.clear();
    buf.extend_from_slice(value);
}

/// Copies `value` into row `row` of `out` (rows of `value.len()` elements): one
/// iteration's result of a `parallel`.
///
/// # Errors
///
/// [`KernelError::Graph`] when the row is not inside `out`.
pub fn copy_row<T: Copy>(
    graph: &'static str,
    node: &'static str,
    out: &mut [T],
    row: usize,
    value: &[T],
) -> Result<(), KernelError> {
    let n = value.len();
    copy_at(out, row.checked_mul(n), value).ok_or_else(|| KernelError::Graph {
        graph,
        node,
        message: format!(
            "row {row} of {n} elements does not fit in an output of {} elements",
            out.len()
        ),
    })
}

/// Copies `value` into `out` from element `start`; `None` when it does not fit
/// (or `start` overflowed).
fn copy_at<T: Copy>(out: &mut [T], start: Option<usize>, value: &[T]) -> Option<()> {
    let start = start?;
    let dst = out.get_mut(start..start.checked_add(value.len())?)?;
    dst.copy_from_slice(value);
    Some(())
}

/// Copies a graph's result into the caller's output buffer.
///
/// # Errors
///
/// [`KernelError::Length`] when the lengths differ.
pub fn deliver<T: Copy>(
    graph: &'static str,
    output: &'static str,
    out: &mut [T],
    value: &[T],
) -> Result<(), KernelError> {
    same_len(graph, output, out, value)?;
    out.copy_from_slice(value);
    Ok(())
}

/// [`KernelError::Length`] unless the caller's output buffer `out` has the
/// value's length.
fn same_len<T>(
    graph: &'static str,
    output: &'static str,
    out: &[T],
    value: &[T],
) -> Result<(), KernelError> {
    if out.len() == value.len() {
        Ok(())
    } else {
        Err(KernelError::Length {
            kernel: graph,
            buffer: output,
            expected: value.len(),
            found: out.len(),
        })
    }
}

/// Zeroes a graph output that is a sum over the chunks of a `chunk` loop
/// (`sum_chunks`), before the loop adds every chunk's value ([`accumulate`]).
pub fn zero<T: Copy + Default>(out: &mut [T]) {
    out.fill(T::default());
}

/// Adds one chunk's value to a graph output that is a sum over the chunks of a
/// `chunk` loop (`sum_chunks`, e.g. a weight's gradient in a chunked gradient
/// graph), element by element.
///
/// # Errors
///
/// [`KernelError::Length`] when the lengths differ.
pub fn accumulate<T: Copy + std::ops::Add<Output = T>>(
    graph: &'static str,
    output: &'static str,
    out: &mut [T],
    value: &[T],
) -> Result<(), KernelError> {
    same_len(graph, output, out, value)?;
    for (o, v) in out.iter_mut().zip(value) {
        *o = *o + *v;
    }
    Ok(())
}

/// Rows `start..start + rows` of `value` (rows of `row` elements): one chunk.
///
/// # Errors
///
/// [`KernelError::Graph`] when the rows are not inside `value`.
pub fn rows<'a, T>(
    graph: &'static str,
    node: &'static str,
    value: &'a [T],
    start: usize,
    rows: usize,
    row: usize,
) -> Result<&'a [T], KernelError> {
    let len = value.len();
    row_range(start, rows, row)
        .and_then(|r| value.get(r))
        .ok_or_else(|| rows_outside(graph, node, start, rows, row, len))
}

/// Rows `start..start + rows` of the caller's output buffer `out` (rows of `row`
/// elements), for a kernel that writes one chunk of a graph output in place.
///
/// # Errors
///
/// [`KernelError::Graph`] when the rows are not inside `out`.
pub fn rows_mut<'a, T>(
    graph: &'static str,
    output: &'static str,
    out: &'a mut [T],
    start: usize,
    rows: usize,
    row: usize,
) -> Result<&'a mut [T], KernelError> {
    let len = out.len();
    row_range(start, rows, row)
        .and_then(|r| out.get_mut(r))
        .ok_or_else(|| rows_outside(graph, output, start, rows, row, len))
}

/// The element range of rows `start..start + rows` of `row` elements.
fn row_range(start: usize, rows: usize, row: usize) -> Option<std::ops::Range<usize>> {
    let a = start.checked_mul(row)?;
    Some(a..a.checked_add(rows.checked_mul(row)?)?)
}

fn rows_outside(
    graph: &'static str,
    node: &'static str,
    start: usize,
    rows: usize,
    row: usize,
    len: usize,
) -> KernelError {
    KernelError::Graph {
        graph,
        node,
        message: format!(
            "rows {start}..{start}+{rows} of {row} elements are not within a value of {len} elements"
        ),
    }
}

/// The elements of `rows` rows of `row` elements (a looped value's length).
///
/// # Errors
///
/// [`KernelError::TooLarge`] when the count overflows.
pub fn rows_len(
    graph: &'static str,
    value: &'static str,
    rows: usize,
    row: usize,
) -> Result<usize, KernelError> {
    rows.checked_mul(row).ok_or(KernelError::TooLarge {
        kernel: graph,
        buffer: value,
    })
}

/// Copies one chunk of a graph's result into rows `start..` (of `row` elements)
/// of the caller's output buffer.
///
/// # Errors
///
/// [`KernelError::Graph`] when the chunk does not fit there.
pub fn deliver_rows<T: Copy>(
    graph: &'static str,
    output: &'static str,
    out: &mut [T],
    start: usize,
    row: usize,
    value: &[T],
) -> Result<(), KernelError> {
    copy_at(out, start.checked_mul(row), value).ok_or_else(|| KernelError::Graph {
        graph,
        node: output,
        message: format!(
            "a chunk of {} elements at row {start} does not fit in an output of {} elements",
            value.len(),
            out.len()
        ),
    })
}

/// Nanoseconds spent in kernels called through [`clocked`], and their number.
static KERNEL_CLOCK: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// Runs `kernel` and adds its wall time to the kernel clock (see
/// [`kernel_clock`]). Graph functions emitted with the kernel clock on
/// (`GraphModule::clock_kernels`, for benchmarks) call every kernel through it.
pub fn clocked<R>(kernel: impl FnOnce() -> R) -> R {
    let start = std::time::Instant::now();
    let r = kernel();
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    KERNEL_CLOCK[0].fetch_add(ns, Ordering::Relaxed);
    KERNEL_CLOCK[1].fetch_add(1, Ordering::Relaxed);
    r
}

/// The kernel clock (nanoseconds in kernels, kernel calls) since the last call,
/// which resets it.
pub fn kernel_clock() -> (u64, u64) {
    (
        KERNEL_CLOCK[0].swap(0, Ordering::Relaxed),
        KERNEL_CLOCK[1].swap(0, Ordering::Relaxed),
    )
}

/// A value that can be a condition or selector.
pub trait Scalar: Copy {
    /// The value as f64 (exact for f32 and i32).
    fn as_f64(self) -> f64;
}

impl Scalar for f32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Scalar for f64 {
    fn as_f64(self) -> f64 {
        self
    }
}

impl Scalar for i32 {
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

/// The one value of a condition, selector or index (`what` says which).
///
/// # Errors
///
/// [`KernelError::Graph`] when `value` does not have exactly one element.
pub fn one_value<T: Scalar>(
    graph: &'static str,
    node: &'static str,
    what: &str,
    value: &[T],
) -> Result<f64, KernelError> {
    match value {
        [v] => Ok(v.as_f64()),
        _ => Err(KernelError::Graph {
            graph,
            node,
            message: format!("the {what} must be one value, got {} values", value.len()),
        }),
    }
}

/// The branch a `case` selector takes: `Some(k)` for branch `k = floor(selector)`,
/// `None` for a negative selector, which passes the arguments through.
///
/// # Errors
///
/// [`KernelError::Graph`] for a NaN selector, one at or beyond `branches`, or a
/// negative one when the arguments cannot pass through (`passes` false: their
/// types differ from the outputs').
pub fn branch(
    graph: &'static str,
    node: &'static str,
    selector: f64,
    branches: usize,
    passes: bool,
) -> Result<Option<usize>, KernelError> {
    let error = |message: String| KernelError::Graph {
        graph,
        node,
        message,
    };
    if selector.is_nan() {
        return Err(error("the selector is nan".into()));
    }
    let k = selector.floor();
    if k < 0.0 {
        return if passes {
            Ok(None)
        } else {
            Err(error(format!(
                "the selector is {selector}, which passes the arguments through, but their types differ from the outputs'"
            )))
        };
    }
    if k >= branches as f64 {
        return Err(error(format!(
            "the selector is {selector}, but there are {branches} branches"
        )));
    }
    Ok(Some(k as usize))
}

/// The integer value of a `parallel` index (a one-element i32 value), as the
/// `$param` of the kernels it binds.
///
/// # Errors
///
/// As [`one_value`].
pub fn index_param(
    graph: &'static str,
    node: &'static str,
    value: &[i32],
) -> Result<i64, KernelError> {
    match value {
        [v] => Ok(i64::from(*v)),
        _ => Err(KernelError::Graph {
            graph,
            node,
            message: format!("the index must be one value, got {} values", value.len()),
        }),
    }
}

/// Iteration `i` of a `parallel` as its i32 index value.
///
/// # Errors
///
/// [`KernelError::Graph`] beyond `i32::MAX`.
pub fn index_value(
    graph: &'static str,
    node: &'static str,
    i: usize,
) -> Result<[i32; 1], KernelError> {
    i32::try_from(i)
        .map(|v| [v])
        .map_err(|_| KernelError::Graph {
            graph,
            node,
            message: format!("iteration {i} is beyond the i32 index range"),
        })
}

/// A size expression's value as a `usize`.
///
/// # Errors
///
/// [`KernelError::Overflow`] for `None`, [`KernelError::NegativeSize`] below 0.
pub fn size(
    graph: &'static str,
    expr: &'static str,
    value: Option<i64>,
) -> Result<usize, KernelError> {
    let v = value.ok_or(KernelError::Overflow { kernel: graph })?;
    usize::try_from(v).map_err(|_| KernelError::NegativeSize {
        kernel: graph,
        size: expr,
        value: v,
    })
}

/// The number of elements of a value's shape.
///
/// # Errors
///
/// [`KernelError::TooLarge`] when it overflows.
pub fn elements(
    graph: &'static str,
    value: &'static str,
    shape: &[usize],
) -> Result<usize, KernelError> {
    super::check::elements(shape).ok_or(KernelError::TooLarge {
        kernel: graph,
        buffer: value,
    })
}

/// `a + b`, `None` on overflow.
pub fn add(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    a?.checked_add(b?)
}

/// `a - b`.
pub fn sub(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    a?.checked_sub(b?)
}

/// `a * b`.
pub fn mul(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    a?.checked_mul(b?)
}

/// `a / b` rounded towards negative infinity; `None` for `b == 0`.
pub fn div(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    let (a, b) = (a?, b?);
    let q = a.checked_div(b)?;
    if a % b != 0 && ((a < 0) != (b < 0)) {
        q.checked_sub(1)
    } else {
        Some(q)
    }
}

/// `a % b` with the sign of `b` (matching [`div`]); `None` for `b == 0`.
pub fn rem(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    let (a, b) = (a?, b?);
    let r = a.checked_rem(b)?;
    if r != 0 && ((r < 0) != (b < 0)) {
        r.checked_add(b)
    } else {
        Some(r)
    }
}

/// `min(a, b)`.
pub fn min(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a?.min(b?))
}

/// `max(a, b)`.
pub fn max(a: Option<i64>, b: Option<i64>) -> Option<i64> {
    Some(a?.max(b?))
}

/// `-a`.
pub fn neg(a: Option<i64>) -> Option<i64> {
    a?.checked_neg()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_floor_and_refuse_overflow() {
        assert_eq!(div(Some(-7), Some(2)), Some(-4));
        assert_eq!(rem(Some(-7), Some(2)), Some(1));
        assert_eq!(div(Some(7), Some(0)), None);
        assert_eq!(mul(Some(i64::MAX), Some(2)), None);
        assert_eq!(size("g", "N - 4", sub(Some(3), Some(4))).ok(), None);
        assert_eq!(size("g", "N", Some(3)), Ok(3));
    }

    #[test]
    fn a_selector_picks_a_branch_passes_through_or_is_refused() {
        assert_eq!(branch("g", "%3", 1.5, 2, true), Ok(Some(1)));
        assert_eq!(branch("g", "%3", -0.5, 2, true), Ok(None));
        let e = branch("g", "%3", 2.0, 2, true).expect_err("out of range");
        assert_eq!(
            e.to_string(),
            "g: %3: the selector is 2, but there are 2 branches"
        );
        assert!(branch("g", "%3", f64::NAN, 2, true).is_err());
        assert!(branch("g", "%3", -1.0, 2, false).is_err());
    }

    #[test]
    fn buffers_are_reused_and_rows_checked() {
        let mut buf = Vec::new();
        slot(&mut buf, 4)[3] = 1.0f32;
        let capacity = buf.capacity();
        assign(&mut buf, &[2.0, 3.0]);
        assert_eq!(
            (buf.as_slice(), buf.capacity()),
            (&[2.0, 3.0][..], capacity)
        );
        let mut out = [0.0f32; 4];
        copy_row("g", "%1", &mut out, 1, &[5.0, 6.0]).expect("fits");
        assert_eq!(out, [0.0, 0.0, 5.0, 6.0]);
        assert!(copy_row("g", "%1", &mut out, 2, &[5.0, 6.0]).is_err());
        assert!(one_value("g", "%1", "condition", &[1.0f32, 2.0]).is_err());
    }

    #[test]
    fn chunks_are_rows_and_land_at_their_offset() {
        let x = [0.0f32, 1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(rows("g", "%2", &x, 1, 2, 2), Ok(&x[2..6]));
        assert!(rows("g", "%2", &x, 2, 2, 2).is_err());
        assert_eq!(rows_len("g", "%3", 3, 4), Ok(12));
        assert!(rows_len("g", "%3", usize::MAX, 2).is_err());
        let mut out = [0.0f32; 6];
        deliver_rows("g", "y", &mut out, 1, 2, &[7.0, 8.0]).expect("fits");
        assert_eq!(out, [0.0, 0.0, 7.0, 8.0, 0.0, 0.0]);
        assert!(deliver_rows("g", "y", &mut out, 2, 2, &[7.0, 8.0, 9.0]).is_err());
    }
}
