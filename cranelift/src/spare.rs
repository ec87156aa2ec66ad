//! Kernel temporaries kept for the next call on the same thread.
//!
//! A JIT kernel allocates its temporaries on entry (`uop_alloc`, zeroed) and frees
//! them on exit. A kernel called again and again with the same shapes (every trip
//! of a `while` on the graph executor, every later call of a graph) asks for the
//! same sizes each time, so a freed block is kept in a small per-thread list and
//! handed out again, zeroed, for a request of exactly its size: after the first
//! call a kernel's temporaries cost no allocation. The list holds at most
//! [`KEEP_BLOCKS`] blocks and [`KEEP_BYTES`] bytes (a bigger block goes back to the
//! allocator at once) and frees what it holds when its thread ends.

use std::alloc::{Layout, dealloc};
use std::cell::RefCell;

/// The most blocks one thread keeps.
pub(crate) const KEEP_BLOCKS: usize = 32;
/// The most bytes one thread keeps in all.
pub(crate) const KEEP_BYTES: usize = 64 << 20;

/// Free blocks of one thread: each an allocation of `layout` at its address.
struct Spare {
    blocks: Vec<(Layout, *mut u8)>,
    bytes: usize,
}

impl Drop for Spare {
    fn drop(&mut self) {
        for (layout, base) in self.blocks.drain(..) {
            // SAFETY: every block kept was allocated with exactly this layout and is
            // owned by the list alone.
            unsafe { dealloc(base, layout) };
        }
    }
}

thread_local! {
    static SPARE: RefCell<Spare> = const {
        RefCell::new(Spare {
            blocks: Vec::new(),
            bytes: 0,
        })
    };
}

/// A kept block allocated with exactly `layout`, zeroed, if this thread has one.
pub(crate) fn take(layout: Layout) -> Option<*mut u8> {
    let base = SPARE
        .try_with(|s| {
            let mut s = s.try_borrow_mut().ok()?;
            let k = s.blocks.iter().rposition(|(l, _)| *l == layout)?;
            let (_, base) = s.blocks.swap_remove(k);
            s.bytes -= layout.size();
            Some(base)
        })
        .ok()
        .flatten()?;
    // SAFETY: the block has `layout.size()` bytes and is no longer in the list.
    unsafe { std::ptr::write_bytes(base, 0, layout.size()) };
    Some(base)
}

/// Keeps the block at `base`, allocated with `layout`, for a later [`take`]; false
/// when the list is full (the caller frees it then).
pub(crate) fn keep(layout: Layout, base: *mut u8) -> bool {
    SPARE
        .try_with(|s| {
            let Ok(mut s) = s.try_borrow_mut() else {
                return false;
            };
            let fits = s
                .bytes
                .checked_add(layout.size())
                .is_some_and(|b| b <= KEEP_BYTES);
            if !fits || s.blocks.len() >= KEEP_BLOCKS {
                return false;
            }
            s.blocks.push((layout, base));
            s.bytes += layout.size();
            true
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::alloc::alloc_zeroed;

    #[test]
    fn a_kept_block_comes_back_zeroed_for_its_size_only() {
        let layout = Layout::from_size_align(64, 16).expect("a layout");
        // SAFETY: a non-zero size.
        let base = unsafe { alloc_zeroed(layout) };
        assert!(!base.is_null());
        // SAFETY: 64 bytes.
        unsafe { std::ptr::write_bytes(base, 7, 64) };
        assert!(keep(layout, base));
        let other = Layout::from_size_align(48, 16).expect("a layout");
        assert_eq!(take(other), None, "another size gets no kept block");
        let again = take(layout).expect("the kept block");
        assert_eq!(again, base);
        // SAFETY: 64 bytes.
        let bytes = unsafe { std::slice::from_raw_parts(again, 64) };
        assert!(bytes.iter().all(|&b| b == 0));
        assert_eq!(take(layout), None, "a block is handed out once");
        // SAFETY: allocated above with `layout`.
        unsafe { dealloc(again, layout) };
    }

    #[test]
    fn a_block_over_the_byte_limit_is_not_kept() {
        let layout = Layout::from_size_align(KEEP_BYTES + 16, 16).expect("a layout");
        // Not allocated: `keep` refuses it before looking at the address.
        assert!(!keep(layout, std::ptr::NonNull::<u8>::dangling().as_ptr()));
    }
}
