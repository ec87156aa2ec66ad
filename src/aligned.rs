//! Buffers that start on a 64-byte cache line.
//!
//! A kernel's vector loads and stores are fastest when they do not straddle two
//! cache lines. A `Vec<f32>` of a few megabytes comes from `mmap` through `malloc`
//! and starts 16 bytes into a line, so every 64-byte vector of it straddles two; on
//! the project's Zen 5 machines that makes a layernorm over 4096 × 1024 about 1.5×
//! slower (docs/decisions.md, "Schedule (speed)"). numpy, torch and XLA allocate
//! their arrays aligned; [`AlignedVec`] does the same for the slices a uop kernel
//! takes:
//!
//! ```
//! use uop::AlignedVec;
//!
//! let x = AlignedVec::from_slice(&[1.0f32, 2.0, 3.0]);
//! let mut y = AlignedVec::<f32>::zeroed(1);
//! uop::kernels::sum_f32(&x, [3], &mut y).unwrap();
//! assert_eq!(y[0], 6.0);
//! assert_eq!(x.as_ptr() as usize % 64, 0);
//! ```
//!
//! A buffer of [`HUGE_FROM`] bytes or more also asks Linux for transparent huge
//! pages (`madvise(MADV_HUGEPAGE)` on its whole 2 MiB pages), as numpy does for
//! its large arrays: a kernel streaming 64 MB then takes 32 TLB entries instead of
//! 16 384 page walks, and a 16M sum ran 2–25% faster, depending on the machine's
//! load (docs/decisions.md). Where huge pages are off or unknown the advice is
//! ignored.

use std::ops::{Deref, DerefMut};

/// The alignment [`AlignedVec`] gives: one cache line.
pub const LINE: usize = 64;

/// The size from which an [`AlignedVec`] asks for huge pages: 4 MiB, numpy's
/// threshold.
pub const HUGE_FROM: usize = 4 << 20;

/// A transparent huge page on x86-64 Linux.
const HUGE_PAGE: usize = 2 << 20;

/// A fixed-length buffer of `T`s whose first element starts `offset` bytes past a
/// 64-byte cache line (0 unless made by [`AlignedVec::zeroed_at`]). It is used as
/// the slice it holds.
#[derive(Debug)]
pub struct AlignedVec<T> {
    storage: Vec<T>,
    start: usize,
    len: usize,
}

impl<T: Copy + Default> AlignedVec<T> {
    /// `len` default values (zeros), starting on a cache line.
    pub fn zeroed(len: usize) -> AlignedVec<T> {
        Self::zeroed_at(len, 0)
    }

    /// `len` default values starting `offset` bytes past a cache line, rounded
    /// down to a whole element: for measuring how a kernel does on buffers that
    /// are not aligned. `offset` is taken modulo [`LINE`].
    pub fn zeroed_at(len: usize, offset: usize) -> AlignedVec<T> {
        let size = size_of::<T>().max(1);
        // Enough spare elements to reach any offset from wherever `Vec` starts.
        let spare = (2 * LINE).div_ceil(size);
        let storage = vec![T::default(); len + spare];
        // Before the first write, so that the pages are huge from their first touch.
        advise_huge_pages(&storage);
        let want = offset % LINE / size * size;
        let addr = storage.as_ptr() as usize;
        let start = (0..spare)
            .find(|k| (addr + k * size) % LINE == want)
            // An element size that does not divide the line: as close as it gets.
            .unwrap_or(0);
        AlignedVec {
            storage,
            start,
            len,
        }
    }

    /// A copy of `values`, starting on a cache line.
    pub fn from_slice(values: &[T]) -> AlignedVec<T> {
        let mut v = Self::zeroed(values.len());
        v.copy_from_slice(values);
        v
    }

    /// A copy of `values` starting `offset` bytes past a cache line (see
    /// [`AlignedVec::zeroed_at`]).
    pub fn from_slice_at(values: &[T], offset: usize) -> AlignedVec<T> {
        let mut v = Self::zeroed_at(values.len(), offset);
        v.copy_from_slice(values);
        v
    }
}

/// Asks Linux to back the whole 2 MiB pages inside `storage` with huge pages when
/// it holds [`HUGE_FROM`] bytes or more; returns the byte range advised. Advice
/// only: memory stays valid whatever the kernel does with it.
fn advise_huge_pages<T>(storage: &[T]) -> Option<std::ops::Range<usize>> {
    let start = storage.as_ptr() as usize;
    let bytes = size_of_val(storage);
    if bytes < HUGE_FROM {
        return None;
    }
    let pages = start.next_multiple_of(HUGE_PAGE)..(start + bytes) / HUGE_PAGE * HUGE_PAGE;
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `madvise` with `MADV_HUGEPAGE` changes no contents and no
        // permissions; the range lies inside `storage`'s allocation.
        let done = unsafe {
            libc::madvise(
                pages.start as *mut libc::c_void,
                pages.len(),
                libc::MADV_HUGEPAGE,
            )
        };
        (done == 0).then_some(pages)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pages;
        None
    }
}

/// A copy starting where the original does relative to a cache line (a copy of
/// the storage would start wherever the allocator puts it).
impl<T: Copy + Default> Clone for AlignedVec<T> {
    fn clone(&self) -> AlignedVec<T> {
        AlignedVec::from_slice_at(self, self.as_ptr() as usize % LINE)
    }
}

impl<T> Deref for AlignedVec<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.storage[self.start..self.start + self.len]
    }
}

impl<T> DerefMut for AlignedVec<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_line_or_at_the_asked_offset() {
        for len in [0, 1, 17, 1 << 20] {
            assert_eq!(AlignedVec::<f32>::zeroed(len).as_ptr() as usize % LINE, 0);
            assert_eq!(AlignedVec::<f64>::zeroed(len).as_ptr() as usize % LINE, 0);
            for offset in [4, 16, 60] {
                let v = AlignedVec::<f32>::zeroed_at(len, offset);
                assert_eq!(v.as_ptr() as usize % LINE, offset, "{len} {offset}");
                assert_eq!(v.len(), len);
            }
        }
        // Rounded down to a whole f64.
        assert_eq!(
            AlignedVec::<f64>::zeroed_at(3, 20).as_ptr() as usize % LINE,
            16
        );
    }

    /// The `VmFlags` of the mapping holding `addr`, from `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn vm_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = range.split_once('-')
                && let (Ok(lo), Ok(hi)) =
                    (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16))
            {
                inside = (lo..hi).contains(&addr);
            } else if inside && let Some(flags) = line.strip_prefix("VmFlags:") {
                return Some(flags.trim().to_string());
            }
        }
        None
    }

    #[test]
    fn large_buffers_ask_for_huge_pages_small_ones_do_not() {
        let small = vec![0u8; HUGE_FROM - 1];
        assert_eq!(advise_huge_pages(&small), None);

        let values: Vec<f32> = (0..HUGE_FROM).map(|i| i as f32).collect();
        let v = AlignedVec::from_slice(&values);
        assert_eq!(&v[..], &values[..], "the advice changes no values");
        let big = vec![0.0f32; 3 * HUGE_PAGE];
        #[cfg(target_os = "linux")]
        if std::path::Path::new("/sys/kernel/mm/transparent_hugepage").exists() {
            // A kernel with transparent huge pages takes the advice, whatever
            // its policy.
            let pages = advise_huge_pages(&big).expect("the advice is taken");
            let lo = big.as_ptr() as usize;
            assert!(lo <= pages.start && pages.end <= lo + size_of_val(&big[..]));
            assert_eq!(pages.start % HUGE_PAGE, 0);
            assert!(pages.len() >= 2 * HUGE_PAGE, "{pages:?}");
            let flags = vm_flags(pages.start).expect("the buffer's mapping");
            assert!(flags.split(' ').any(|f| f == "hg"), "VmFlags: {flags}");
        }
    }

    #[test]
    fn holds_the_values_it_was_made_from() {
        let values: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let v = AlignedVec::from_slice_at(&values, 16);
        assert_eq!(&v[..], &values[..]);
        let mut w = v.clone();
        w[3] = -1.0;
        assert_eq!((v[3], w[3]), (3.0, -1.0));
        // A clone starts as far into a line as its original.
        for offset in [0, 16, 60] {
            for len in [1, 1000, 1 << 20] {
                let v = AlignedVec::<f32>::zeroed_at(len, offset);
                assert_eq!(v.clone().as_ptr() as usize % LINE, offset, "{len}");
            }
        }
    }
}
