//! The checks a kernel makes before touching data: shapes as `i64` sizes, buffer
//! lengths against shapes, sizes computed from dims and parameters, and the
//! temporaries allocated from them. Each failure is a [`KernelError`] naming the
//! kernel and the buffer.

use super::aligned::{AlignedVec, Zero};
use super::error::KernelError;

/// An input's shape as `i64` sizes (what index arithmetic uses).
///
/// # Errors
///
/// [`KernelError::TooLarge`] for a size beyond `i64::MAX`.
pub fn dims<const R: usize>(
    kernel: &'static str,
    input: &'static str,
    shape: [usize; R],
) -> Result<[i64; R], KernelError> {
    let mut out = [0; R];
    for (o, &d) in out.iter_mut().zip(&shape) {
        *o = i64::try_from(d).map_err(|_| KernelError::TooLarge {
            kernel,
            buffer: input,
        })?;
    }
    Ok(out)
}

/// Checks that a buffer holds exactly the elements of its shape.
///
/// # Errors
///
/// [`KernelError::Length`] when it does not, [`KernelError::TooLarge`] when the
/// shape has too many elements.
pub fn check_len(
    kernel: &'static str,
    buffer: &'static str,
    len: usize,
    shape: &[usize],
) -> Result<(), KernelError> {
    let expected = elements(shape).ok_or(KernelError::TooLarge { kernel, buffer })?;
    if len == expected {
        Ok(())
    } else {
        Err(KernelError::Length {
            kernel,
            buffer,
            expected,
            found: len,
        })
    }
}

/// A size computed in `i64`, as a `usize`.
///
/// # Errors
///
/// [`KernelError::NegativeSize`] for a negative size.
pub fn size(kernel: &'static str, size: &'static str, value: i64) -> Result<usize, KernelError> {
    usize::try_from(value).map_err(|_| KernelError::NegativeSize {
        kernel,
        size,
        value,
    })
}

/// The number of elements of a temporary buffer of the given shape.
///
/// # Errors
///
/// [`KernelError::NegativeSize`] if a size is negative, [`KernelError::TooLarge`]
/// if the count is too large.
pub fn buffer_len(
    kernel: &'static str,
    buffer: &'static str,
    shape: &[i64],
) -> Result<usize, KernelError> {
    // Every size first (a negative one is the error even after an overflow), then
    // their product; no allocation, as a steady-state kernel call makes none.
    for &d in shape {
        size(kernel, buffer, d)?;
    }
    shape
        .iter()
        .try_fold(1_i64, |n, &d| n.checked_mul(d))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or(KernelError::TooLarge { kernel, buffer })
}

/// The number of elements of an output shape, checked before a kernel's shapes
/// function returns it (so `NAME_len()` cannot overflow).
///
/// # Errors
///
/// [`KernelError::TooLarge`] when the count overflows or a size exceeds `i64::MAX`.
pub fn check_elements(
    kernel: &'static str,
    buffer: &'static str,
    shape: &[usize],
) -> Result<usize, KernelError> {
    elements(shape).ok_or(KernelError::TooLarge { kernel, buffer })
}

/// The number of elements of a shape; `None` if it overflows or a size exceeds
/// `i64::MAX` (index arithmetic is done in `i64`).
pub fn elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, &d| {
        i64::try_from(d).ok()?;
        let n = n.checked_mul(d)?;
        i64::try_from(n).ok()?;
        Some(n)
    })
}

/// A zeroed temporary buffer of the given shape.
///
/// # Errors
///
/// As [`buffer_len`].
pub fn zeroed<T: Clone + Default>(
    kernel: &'static str,
    buffer: &'static str,
    shape: &[i64],
) -> Result<Vec<T>, KernelError> {
    Ok(vec![T::default(); buffer_len(kernel, buffer, shape)?])
}

/// A zeroed temporary buffer of the given shape that starts a cache line.
///
/// # Errors
///
/// As [`buffer_len`], and [`KernelError::TooLarge`] when the bytes exceed the
/// address range.
pub fn zeroed_lines<T: Zero>(
    kernel: &'static str,
    buffer: &'static str,
    shape: &[i64],
) -> Result<AlignedVec<T>, KernelError> {
    AlignedVec::try_zeroed(buffer_len(kernel, buffer, shape)?)
        .ok_or(KernelError::TooLarge { kernel, buffer })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_output_of_2_to_the_80_elements_is_too_large() {
        assert_eq!(check_elements("k", "y", &[2, 3]), Ok(6));
        assert_eq!(
            check_elements("k", "y", &[1 << 40, 1 << 40]),
            Err(KernelError::TooLarge {
                kernel: "k",
                buffer: "y"
            })
        );
    }

    #[test]
    fn lengths_are_checked_against_shapes() {
        assert_eq!(check_len("k", "x", 6, &[2, 3]), Ok(()));
        assert_eq!(
            check_len("k", "x", 5, &[2, 3]),
            Err(KernelError::Length {
                kernel: "k",
                buffer: "x",
                expected: 6,
                found: 5
            })
        );
        assert_eq!(
            check_len("k", "x", 0, &[usize::MAX, 2]),
            Err(KernelError::TooLarge {
                kernel: "k",
                buffer: "x"
            })
        );
        assert_eq!(elements(&[]), Some(1));
        assert_eq!(elements(&[1 << 62, 2]), None);
    }

    #[test]
    fn dims_and_sizes_refuse_what_does_not_fit() {
        assert_eq!(dims("k", "x", [2, 3]), Ok([2, 3]));
        assert!(dims("k", "x", [usize::MAX]).is_err());
        assert_eq!(size("k", "N - 1", 4), Ok(4));
        assert_eq!(
            size("k", "N - 1", -1),
            Err(KernelError::NegativeSize {
                kernel: "k",
                size: "N - 1",
                value: -1
            })
        );
        assert_eq!(buffer_len("k", "t", &[2, 3]), Ok(6));
        assert!(buffer_len("k", "t", &[2, -3]).is_err());
        assert!(buffer_len("k", "t", &[i64::MAX, 4]).is_err());
    }

    #[test]
    fn temporaries_are_zeroed_and_lines_aligned() {
        let v: Vec<f64> = zeroed("k", "t", &[3, 4]).unwrap();
        assert_eq!(v, vec![0.0; 12]);
        let l: AlignedVec<f32> = zeroed_lines("k", "t", &[5, 7]).unwrap();
        assert_eq!(l.len(), 35);
        assert!(l.iter().all(|&x| x == 0.0));
        assert_eq!(l.as_ptr() as usize % 64, 0);
        assert!(zeroed_lines::<f32>("k", "t", &[-1]).is_err());
    }
}
