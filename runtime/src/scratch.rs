//! [`Scratch`]: the buffers a kernel's temporaries are lent from, kept between
//! calls.
//!
//! A kernel of the Rust backend that needs memory of its own (a temporary tensor,
//! a padded row per thread, a tile's packed panel, the partial results of a
//! reduction folded in pieces) takes it from a `Scratch`: `NAME_with_scratch(&scratch,
//! ...)`. Each buffer has a *key*, the kernel's number for it and the thread's
//! part, and the scratch keeps one block per key: a later call with the same sizes
//! gets the same blocks back, zeroed (a packed panel, which the kernel fills before
//! reading, as left: [`Scratch::part_unzeroed`]), and allocates nothing. A graph's workspace
//! holds one for all its kernels (their keys overlap; the kernels run one after
//! another, so a block is lent to one at a time and grows to the largest). The
//! plain `NAME(...)` lends from a fresh, empty scratch: every call allocates, as a
//! call that keeps nothing must.
//!
//! A buffer each thread of a kernel keeps (a row, a packed panel) is accounted
//! before the threads start: [`Scratch::reserve_parts`] takes every part's block,
//! or returns [`KernelError::TooLarge`] naming the buffer, and the threads'
//! [`Scratch::part`] of that length then reuses it and cannot fail.
//!
//! A lent buffer ([`Lent`]) goes back to its key when dropped. Two lenders of one
//! key at the same time (two threads calling kernels on one scratch) are correct:
//! the second gets a new block, and the larger of the two is kept.

use core::ptr::NonNull;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

use super::aligned::{AlignedVec, Zero};
use super::check::buffer_len;
use super::error::KernelError;

/// Memory a kernel's temporaries are lent from; keep one between calls so that a
/// call with the sizes of an earlier one allocates nothing.
#[derive(Default)]
pub struct Scratch {
    /// One entry per key, in the order first asked for.
    slots: Mutex<Vec<Slot>>,
}

/// A key's block: `None` while it is lent.
struct Slot {
    key: (usize, usize),
    block: Option<AlignedVec<u8>>,
}

impl core::fmt::Debug for Scratch {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Scratch")
            .field("kept_bytes", &self.kept_bytes())
            .finish()
    }
}

impl Scratch {
    /// An empty scratch: it allocates on first use.
    pub const fn new() -> Scratch {
        Scratch {
            slots: Mutex::new(Vec::new()),
        }
    }

    /// The bytes of the blocks it keeps (not those lent right now).
    pub fn kept_bytes(&self) -> usize {
        self.lock()
            .iter()
            .filter_map(|s| s.block.as_ref().map(|b| b.len()))
            .sum()
    }

    /// A zeroed temporary of `shape`'s elements, starting on a cache line, for the
    /// kernel's buffer number `key`.
    ///
    /// # Errors
    ///
    /// As [`buffer_len`], and [`KernelError::TooLarge`] when the bytes exceed the
    /// address range.
    pub fn zeroed<T: Zero>(
        &self,
        key: usize,
        kernel: &'static str,
        buffer: &'static str,
        shape: &[i64],
    ) -> Result<Lent<'_, T>, KernelError> {
        let len = buffer_len(kernel, buffer, shape)?;
        self.lend((key, 0), len, true)
            .ok_or(KernelError::TooLarge { kernel, buffer })
    }

    /// Makes sure parts `0..parts` of buffer `key` each keep a block of at least
    /// `len` `T`s, allocating (zeroed) what is missing, so that [`Scratch::part`]
    /// and [`Scratch::part_unzeroed`] of that length, inside the threads, reuse it
    /// and cannot fail. A kernel calls it before its threads start; a later call
    /// with the same sizes finds every block kept and allocates nothing.
    ///
    /// # Errors
    ///
    /// [`KernelError::TooLarge`] naming `kernel` and `buffer` when `len` `T`s
    /// exceed the address range or their allocation is refused; the blocks of the
    /// parts reserved before stay kept.
    pub fn reserve_parts<T: Zero>(
        &self,
        key: usize,
        parts: usize,
        len: usize,
        kernel: &'static str,
        buffer: &'static str,
    ) -> Result<(), KernelError> {
        let too_large = || KernelError::TooLarge { kernel, buffer };
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(too_large)?;
        // One lock for every part: a call finds them all kept.
        let mut slots = self.lock();
        for part in 0..parts {
            let key = (key, part);
            let kept = slots
                .iter()
                .any(|s| s.key == key && s.block.as_ref().is_some_and(|b| b.len() >= bytes));
            if !kept {
                let block = AlignedVec::try_zeroed(bytes).ok_or_else(too_large)?;
                keep(&mut slots, key, block);
            }
        }
        Ok(())
    }

    /// `len` zeros starting on a cache line, for buffer `key` of the thread with
    /// part number `part` (a row or panel each thread of a kernel keeps).
    ///
    /// # Panics
    ///
    /// When `len` elements exceed the address range or their allocation is
    /// refused, as [`AlignedVec::zeroed`]. A kernel reserves its parts' blocks
    /// first ([`Scratch::reserve_parts`]), so this cannot happen in a kernel's
    /// threads unless another call lends the same key of the same scratch at
    /// the same time (the part then allocates a block of its own).
    pub fn part<T: Zero>(&self, key: usize, part: usize, len: usize) -> Lent<'_, T> {
        self.lend_part((key, part), len, true)
    }

    /// As [`Scratch::part`], but a kept block is lent as its last lender left it,
    /// not zeroed (a new block is zeros): for a buffer the kernel writes every cell
    /// of before reading it (a tile's packed panel), which then costs no pass over
    /// its memory per call. Any bits are valid values of a `T: Zero`, so stale
    /// cells are never undefined, only stale.
    ///
    /// # Panics
    ///
    /// As [`Scratch::part`].
    pub fn part_unzeroed<T: Zero>(&self, key: usize, part: usize, len: usize) -> Lent<'_, T> {
        self.lend_part((key, part), len, false)
    }

    /// [`Scratch::lend`] of a thread's buffer, whose length the kernel checked.
    fn lend_part<T: Zero>(&self, key: (usize, usize), len: usize, zero: bool) -> Lent<'_, T> {
        match self.lend(key, len, zero) {
            Some(lent) => lent,
            None => panic!("a buffer of {len} elements exceeds the address range"),
        }
    }

    /// The block of `key` (zeroed when `zero`) when it holds `len` `T`s; else a new,
    /// zeroed one. `None` when the bytes exceed the address range.
    fn lend<T: Zero>(&self, key: (usize, usize), len: usize, zero: bool) -> Option<Lent<'_, T>> {
        let bytes = len.checked_mul(size_of::<T>())?;
        let kept = {
            let mut slots = self.lock();
            slots
                .iter_mut()
                .find(|s| s.key == key)
                .and_then(|s| s.block.take_if(|b| b.len() >= bytes))
        };
        let block = match kept {
            Some(mut block) => {
                if zero {
                    block[..bytes].fill(0);
                }
                block
            }
            None => AlignedVec::try_zeroed(bytes)?,
        };
        Some(Lent {
            home: self,
            key,
            // The block starts a cache line, which every `T: Zero` may start at.
            ptr: NonNull::new(block.as_ptr().cast_mut().cast::<T>())?,
            len,
            block: Some(block),
        })
    }

    /// Takes `block` back as `key`'s, unless the key kept a larger one meanwhile.
    fn give_back(&self, key: (usize, usize), block: AlignedVec<u8>) {
        keep(&mut self.lock(), key, block);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot>> {
        // A thread that panicked holding the lock left the list whole.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Keeps `block` as `key`'s in `slots`, unless the key keeps a larger one.
fn keep(slots: &mut Vec<Slot>, key: (usize, usize), block: AlignedVec<u8>) {
    match slots.iter_mut().find(|s| s.key == key) {
        Some(slot) => {
            if slot.block.as_ref().is_none_or(|b| b.len() < block.len()) {
                slot.block = Some(block);
            }
        }
        None => slots.push(Slot {
            key,
            block: Some(block),
        }),
    }
}

/// A buffer of `T`s lent by a [`Scratch`] (zeroed unless lent by
/// [`Scratch::part_unzeroed`]), used as the slice it holds;
/// dropping it gives the block back.
pub struct Lent<'a, T: Zero> {
    home: &'a Scratch,
    key: (usize, usize),
    /// The first of `len` `T`s, in `block`.
    ptr: NonNull<T>,
    len: usize,
    /// The bytes, `None` once given back.
    block: Option<AlignedVec<u8>>,
}

// Safety: a `Lent` owns its elements (as a `Vec` does) and shares only the
// scratch, which is `Sync`.
unsafe impl<T: Zero + Send> Send for Lent<'_, T> {}
// Safety: as for `Send`; shared access only reads.
unsafe impl<T: Zero + Sync> Sync for Lent<'_, T> {}

impl<T: Zero> Deref for Lent<'_, T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // Safety: `len` `T`s of the block, initialized bytes (zeroed, written since,
        // or left by an earlier lender), each a valid `T: Zero`; the
        // block does not move while it is lent.
        unsafe { core::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zero> DerefMut for Lent<'_, T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // Safety: as for `deref`, and `self` is borrowed uniquely.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Zero> Drop for Lent<'_, T> {
    fn drop(&mut self) {
        if let Some(block) = self.block.take() {
            self.home.give_back(self.key, block);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lend_of_a_key_gets_its_block_back_zeroed() {
        let s = Scratch::new();
        let first = {
            let mut t = s.zeroed::<f64>(3, "k", "t", &[4]).unwrap();
            t.fill(7.0);
            t.as_ptr()
        };
        let t = s.zeroed::<f64>(3, "k", "t", &[2, 2]).unwrap();
        assert_eq!(t.as_ptr(), first);
        assert_eq!(&t[..], &[0.0; 4]);
        assert_eq!(t.as_ptr() as usize % crate::LINE, 0);
    }

    #[test]
    fn keys_and_parts_have_blocks_of_their_own() {
        let s = Scratch::new();
        let a = s.zeroed::<f32>(0, "k", "a", &[8]).unwrap();
        let b = s.zeroed::<f32>(1, "k", "b", &[8]).unwrap();
        let c = s.part::<f32>(1, 1, 8);
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert_ne!(b.as_ptr(), c.as_ptr());
        drop((a, b, c));
        assert_eq!(s.kept_bytes(), 3 * 32);
    }

    #[test]
    fn a_larger_request_replaces_the_block_and_a_smaller_one_reuses_it() {
        let s = Scratch::new();
        drop(s.part::<f32>(0, 0, 4));
        drop(s.part::<f32>(0, 0, 100));
        assert_eq!(s.kept_bytes(), 400);
        let small = s.part::<f32>(0, 0, 10);
        assert_eq!(small.len(), 10);
        drop(small);
        assert_eq!(s.kept_bytes(), 400);
    }

    #[test]
    fn an_unzeroed_part_keeps_what_its_last_lender_left() {
        let s = Scratch::new();
        let first = {
            let mut p = s.part_unzeroed::<f32>(2, 1, 8);
            assert_eq!(&p[..], &[0.0; 8], "a new block is zeros");
            p.fill(3.0);
            p.as_ptr()
        };
        let p = s.part_unzeroed::<f32>(2, 1, 4);
        assert_eq!(p.as_ptr(), first);
        assert_eq!(&p[..], &[3.0; 4]);
        drop(p);
        assert_eq!(&s.part::<f32>(2, 1, 8)[..], &[0.0; 8]);
    }

    #[test]
    fn two_lenders_of_one_key_get_two_blocks_and_the_larger_is_kept() {
        let s = Scratch::new();
        let a = s.part::<u8>(0, 0, 10);
        let b = s.part::<u8>(0, 0, 20);
        assert_ne!(a.as_ptr(), b.as_ptr());
        drop(b);
        drop(a);
        assert_eq!(s.kept_bytes(), 20);
    }

    #[test]
    fn a_shape_too_large_is_an_error_naming_the_buffer() {
        let s = Scratch::new();
        let too_large = Err(KernelError::TooLarge {
            kernel: "k",
            buffer: "t",
        });
        assert_eq!(
            s.zeroed::<f64>(0, "k", "t", &[1 << 62, 4]).map(|_| ()),
            too_large
        );
        // The elements fit in a usize, their bytes do not.
        assert_eq!(
            s.zeroed::<f64>(0, "k", "t", &[1 << 61]).map(|_| ()),
            too_large
        );
        assert!(matches!(
            s.zeroed::<f32>(0, "k", "t", &[-1]),
            Err(KernelError::NegativeSize { .. })
        ));
    }

    #[test]
    fn a_reserve_past_the_address_range_is_an_error_naming_the_buffer() {
        let s = Scratch::new();
        let too_large = Err(KernelError::TooLarge {
            kernel: "k",
            buffer: "i1_panel",
        });
        // The bytes overflow a usize; then a valid layout no allocator grants.
        assert_eq!(
            s.reserve_parts::<f32>(3, 2, usize::MAX / 2, "k", "i1_panel"),
            too_large
        );
        if !cfg!(miri) {
            assert_eq!(
                s.reserve_parts::<f32>(3, 2, 1 << 58, "k", "i1_panel"),
                too_large
            );
        }
        assert_eq!(s.kept_bytes(), 0, "nothing taken");
    }

    #[test]
    fn after_a_reserve_the_parts_reuse_the_kept_blocks() {
        let s = Scratch::new();
        s.reserve_parts::<f32>(3, 2, 100, "k", "p").unwrap();
        assert_eq!(s.kept_bytes(), 2 * 400);
        // Inside the threads: the reserved blocks, nothing allocated.
        crate::run_parts(2, |part| {
            let p = s.part_unzeroed::<f32>(3, part.index(), 100);
            assert_eq!(p.len(), 100);
            part.wait();
        });
        assert_eq!(s.kept_bytes(), 2 * 400);
        let first = s.part_unzeroed::<f32>(3, 0, 60).as_ptr();
        // A reserve the kept blocks cover takes nothing; a larger one replaces them.
        s.reserve_parts::<f32>(3, 2, 80, "k", "p").unwrap();
        assert_eq!(s.kept_bytes(), 2 * 400);
        assert_eq!(s.part_unzeroed::<f32>(3, 0, 100).as_ptr(), first);
        s.reserve_parts::<f32>(3, 2, 200, "k", "p").unwrap();
        assert_eq!(s.kept_bytes(), 2 * 800);
        drop(s.part::<f32>(3, 1, 200));
        assert_eq!(s.kept_bytes(), 2 * 800);
    }

    #[test]
    fn threads_lend_their_parts_at_once() {
        let s = Scratch::new();
        crate::run_parts(2, |part| {
            let mut row = s.part::<f32>(0, part.index(), 64);
            row[0] = part.index() as f32;
            part.wait();
            assert_eq!(row[0], part.index() as f32);
        });
        assert_eq!(s.kept_bytes(), 2 * 256);
    }
}
