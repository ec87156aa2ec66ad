//! [`AlignedVec`]: buffers that start on a 64-byte cache line.
//!
//! A kernel's vector loads and stores are fastest when they do not straddle two
//! cache lines. A `Vec<f32>` of a few megabytes comes from `mmap` through `malloc`
//! and starts 16 bytes into a line, so every 64-byte vector of it straddles two; on
//! the project's Zen 5 machines that makes a layernorm over 4096 × 1024 about 1.5×
//! slower (docs/decisions.md, "Schedule (speed)"). numpy, torch and XLA allocate
//! their arrays aligned; [`AlignedVec`] does the same for the slices a uop kernel
//! takes, and kernels allocate their own temporaries as `AlignedVec`s too.
//!
//! A buffer of [`HUGE_FROM`] bytes or more also asks Linux for transparent huge
//! pages (`madvise(MADV_HUGEPAGE)` on its whole 2 MiB pages), as numpy does for
//! its large arrays: a kernel streaming 64 MB then takes 32 TLB entries instead of
//! 16 384 page walks, and a 16M sum ran 2–25% faster, depending on the machine's
//! load (docs/decisions.md). Where huge pages are off or unknown the advice is
//! ignored.

use core::ptr::NonNull;
use std::alloc::Layout;
use std::ops::{Deref, DerefMut};

/// The alignment [`AlignedVec`] gives: one cache line.
pub const LINE: usize = 64;

/// The size from which an [`AlignedVec`] asks for huge pages: 4 MiB, numpy's
/// threshold.
pub const HUGE_FROM: usize = 4 << 20;

/// A transparent huge page on x86-64 Linux.
const HUGE_PAGE: usize = 2 << 20;

/// Element types whose all-zero bytes are the number zero (every integer and
/// float type), so that an [`AlignedVec`] can start as zeroed memory, and whose
/// every bit pattern is a value, so that a scratch block can be lent again as
/// whatever another type left in it ([`Scratch::part_unzeroed`](crate::Scratch::part_unzeroed)).
///
/// # Safety
///
/// Only for such types: [`AlignedVec`] hands out zeroed memory as `T`s, a
/// [`Scratch`](crate::Scratch) the initialized bytes of any earlier lender.
pub unsafe trait Zero: Copy {}

// Safety: zero bits are 0 (or +0.0) for every one of these.
unsafe impl Zero for f32 {}
unsafe impl Zero for f64 {}
unsafe impl Zero for i8 {}
unsafe impl Zero for i16 {}
unsafe impl Zero for i32 {}
unsafe impl Zero for i64 {}
unsafe impl Zero for isize {}
unsafe impl Zero for u8 {}
unsafe impl Zero for u16 {}
unsafe impl Zero for u32 {}
unsafe impl Zero for u64 {}
unsafe impl Zero for usize {}

/// A fixed-length buffer of `T`s whose first element starts `offset` bytes past a
/// 64-byte cache line (0 unless made by [`AlignedVec::zeroed_at`]). It is used as
/// the slice it holds.
pub struct AlignedVec<T: Zero> {
    /// The whole allocation, from `calloc` (so that large buffers are zero pages
    /// the kernel maps lazily, and the huge-page advice precedes their first touch).
    base: NonNull<T>,
    /// Elements allocated: `len` plus enough to reach any offset into a line.
    capacity: usize,
    /// The first element handed out.
    start: usize,
    len: usize,
}

// Safety: an `AlignedVec` owns its elements, as a `Vec` does.
unsafe impl<T: Zero + Send> Send for AlignedVec<T> {}
// Safety: as for `Send`; shared access only reads.
unsafe impl<T: Zero + Sync> Sync for AlignedVec<T> {}

impl<T: Zero> AlignedVec<T> {
    /// `len` zeros, starting on a cache line.
    ///
    /// # Panics
    ///
    /// When `len` elements exceed the address range or the allocator refuses
    /// them ([`AlignedVec::try_zeroed`] returns `None` instead).
    pub fn zeroed(len: usize) -> AlignedVec<T> {
        Self::zeroed_at(len, 0)
    }

    /// `len` zeros starting on a cache line; `None` when they exceed the address
    /// range or the allocator refuses them.
    pub fn try_zeroed(len: usize) -> Option<AlignedVec<T>> {
        Self::try_zeroed_at(len, 0)
    }

    /// `len` zeros starting `offset` bytes past a cache line, rounded down to a
    /// whole element: for measuring how a kernel does on buffers that are not
    /// aligned. `offset` is taken modulo [`LINE`].
    ///
    /// # Panics
    ///
    /// When `len` elements exceed the address range or the allocator refuses
    /// them.
    pub fn zeroed_at(len: usize, offset: usize) -> AlignedVec<T> {
        match Self::try_zeroed_at(len, offset) {
            Some(v) => v,
            None => panic!("an AlignedVec of {len} elements exceeds the address range"),
        }
    }

    /// [`AlignedVec::zeroed_at`], or `None` when `len` elements exceed the
    /// address range or the allocator refuses them.
    pub fn try_zeroed_at(len: usize, offset: usize) -> Option<AlignedVec<T>> {
        let size = size_of::<T>().max(1);
        // Enough spare elements to reach any offset from wherever `calloc` starts.
        let capacity = len.checked_add((2 * LINE).div_ceil(size))?;
        let layout = Self::layout(capacity)?;
        // Safety: the layout's size is not zero (it has the spare elements).
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        // A refused allocation is `None` as well, for the caller to report (a
        // kernel's `KernelError::TooLarge`), not an abort.
        let base = NonNull::new(ptr.cast::<T>())?;
        // Before the first write, so that the pages are huge from their first touch.
        // Safety: the allocation holds `capacity` zeroed (so valid) elements.
        advise_huge_pages(unsafe { core::slice::from_raw_parts(base.as_ptr(), capacity) });
        let want = offset % LINE / size * size;
        let addr = base.as_ptr() as usize;
        let start = (0..capacity - len)
            .find(|k| (addr + k * size) % LINE == want)
            // An element size that does not divide the line: as close as it gets.
            .unwrap_or(0);
        Some(AlignedVec {
            base,
            capacity,
            start,
            len,
        })
    }

    /// A copy of `values`, starting on a cache line.
    pub fn from_slice(values: &[T]) -> AlignedVec<T> {
        Self::from_slice_at(values, 0)
    }

    /// A copy of `values` starting `offset` bytes past a cache line (see
    /// [`AlignedVec::zeroed_at`]).
    pub fn from_slice_at(values: &[T], offset: usize) -> AlignedVec<T> {
        let mut v = Self::zeroed_at(values.len(), offset);
        v.copy_from_slice(values);
        v
    }

    /// The layout of `capacity` elements: `T`'s own alignment, which `calloc`
    /// serves directly (a larger one would zero the memory by hand, touching every
    /// page before the advice).
    fn layout(capacity: usize) -> Option<Layout> {
        Layout::array::<T>(capacity).ok()
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
    huge_pages::advise(pages)
}

#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
mod huge_pages {
    use core::ffi::{c_int, c_void};

    /// `MADV_HUGEPAGE` of Linux's `asm-generic/mman-common.h`.
    const MADV_HUGEPAGE: c_int = 14;

    // The C library's `madvise`, which std links on Linux anyway: declared here so
    // that the runtime needs no dependency.
    unsafe extern "C" {
        fn madvise(addr: *mut c_void, len: usize, advice: c_int) -> c_int;
    }

    /// `madvise(MADV_HUGEPAGE)` on `pages`; the range if the kernel took it.
    pub(super) fn advise(pages: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
        // Safety: `MADV_HUGEPAGE` changes no contents and no permissions; the
        // caller's range lies inside one allocation.
        let done = unsafe { madvise(pages.start as *mut c_void, pages.len(), MADV_HUGEPAGE) };
        (done == 0).then_some(pages)
    }
}

#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
mod huge_pages {
    /// No huge-page advice on this platform.
    pub(super) fn advise(_: std::ops::Range<usize>) -> Option<std::ops::Range<usize>> {
        None
    }
}

/// A copy starting where the original does relative to a cache line (a copy of
/// the storage would start wherever the allocator puts it).
impl<T: Zero> Clone for AlignedVec<T> {
    fn clone(&self) -> AlignedVec<T> {
        AlignedVec::from_slice_at(self, self.as_ptr() as usize % LINE)
    }
}

impl<T: Zero + core::fmt::Debug> core::fmt::Debug for AlignedVec<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: Zero> Deref for AlignedVec<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // Safety: `start + len <= capacity` zeroed or written (so valid) elements.
        unsafe { core::slice::from_raw_parts(self.base.as_ptr().add(self.start), self.len) }
    }
}

impl<T: Zero> DerefMut for AlignedVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // Safety: as for `deref`, and `self` is borrowed uniquely.
        unsafe { core::slice::from_raw_parts_mut(self.base.as_ptr().add(self.start), self.len) }
    }
}

impl<T: Zero> Drop for AlignedVec<T> {
    fn drop(&mut self) {
        if let Some(layout) = Self::layout(self.capacity) {
            // Safety: allocated in `try_zeroed_at` with this layout.
            unsafe { std::alloc::dealloc(self.base.as_ptr().cast(), layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_on_a_line_or_at_the_asked_offset() {
        let large = if cfg!(miri) { 1 << 10 } else { 1 << 20 };
        for len in [0, 1, 17, large] {
            assert_eq!(AlignedVec::<f32>::zeroed(len).as_ptr() as usize % LINE, 0);
            assert_eq!(AlignedVec::<f64>::zeroed(len).as_ptr() as usize % LINE, 0);
            assert_eq!(AlignedVec::<u8>::zeroed(len).as_ptr() as usize % LINE, 0);
            for offset in [4, 16, 60] {
                let v = AlignedVec::<f32>::zeroed_at(len, offset);
                assert_eq!(v.as_ptr() as usize % LINE, offset, "{len} {offset}");
                assert_eq!(v.len(), len);
                assert!(v.iter().all(|&x| x == 0.0));
            }
        }
        // Rounded down to a whole f64.
        assert_eq!(
            AlignedVec::<f64>::zeroed_at(3, 20).as_ptr() as usize % LINE,
            16
        );
    }

    #[test]
    fn too_large_is_none_or_a_panic_with_a_message() {
        assert!(AlignedVec::<f64>::try_zeroed(usize::MAX / 4).is_none());
        let e = std::panic::catch_unwind(|| AlignedVec::<f32>::zeroed(usize::MAX)).unwrap_err();
        let msg = e.downcast_ref::<String>().unwrap();
        assert!(msg.contains("exceeds the address range"), "{msg}");
    }

    #[test]
    #[cfg_attr(miri, ignore = "an allocation of an exbibyte")]
    fn a_refused_allocation_is_none() {
        // A valid layout (under `isize::MAX` bytes) past any x86-64 address space.
        assert!(AlignedVec::<u8>::try_zeroed(1 << 60).is_none());
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
    #[cfg_attr(miri, ignore = "calls madvise and allocates megabytes")]
    fn large_buffers_ask_for_huge_pages_small_ones_do_not() {
        let small = vec![0u8; HUGE_FROM - 1];
        assert_eq!(advise_huge_pages(&small), None);

        let values: Vec<f32> = (0..HUGE_FROM).map(|i| i as f32).collect();
        let v = AlignedVec::from_slice(&values);
        assert_eq!(&v[..], &values[..], "the advice changes no values");
        let big = vec![0.0f32; 3 * HUGE_PAGE];
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
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
        let large = if cfg!(miri) { 1 << 10 } else { 1 << 20 };
        let values: Vec<f32> = (0..100).map(|i| i as f32).collect();
        let v = AlignedVec::from_slice_at(&values, 16);
        assert_eq!(&v[..], &values[..]);
        let mut w = v.clone();
        w[3] = -1.0;
        assert_eq!((v[3], w[3]), (3.0, -1.0));
        // A clone starts as far into a line as its original.
        for offset in [0, 16, 60] {
            for len in [1, 1000, large] {
                let v = AlignedVec::<f32>::zeroed_at(len, offset);
                assert_eq!(v.clone().as_ptr() as usize % LINE, offset, "{len}");
            }
        }
        assert_eq!(format!("{:?}", AlignedVec::from_slice(&[1, 2])), "[1, 2]");
    }
}
