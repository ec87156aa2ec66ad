//! [`Shared`]: an output buffer the threads of one parallel loop write disjoint
//! elements of.

use core::marker::PhantomData;

/// A buffer shared by the threads of one parallel loop. The loop's iterations
/// touch disjoint elements (proved by the compiler's `parallel` pass), so each
/// thread may hold a reference to the elements it touches.
#[derive(Clone, Copy)]
pub struct Shared<'a, T> {
    ptr: *mut T,
    _buffer: PhantomData<&'a mut [T]>,
}

// Safety: threads only touch disjoint elements (see above).
unsafe impl<T: Send> Send for Shared<'_, T> {}
// Safety: as for `Send`.
unsafe impl<T: Send> Sync for Shared<'_, T> {}

impl<'a, T> Shared<'a, T> {
    /// Shares `buffer` for as long as it is borrowed.
    #[inline(always)]
    pub fn new(buffer: &'a mut [T]) -> Self {
        Shared {
            ptr: buffer.as_mut_ptr(),
            _buffer: PhantomData,
        }
    }

    /// The first element, for its address.
    #[inline(always)]
    pub fn as_ptr(&self) -> *const T {
        self.ptr
    }

    /// The first element, to write through.
    #[inline(always)]
    pub fn as_mut_ptr(&self) -> *mut T {
        self.ptr
    }

    /// Element `at`.
    ///
    /// # Safety
    ///
    /// `at` is in range and no other thread writes element `at`.
    #[inline(always)]
    pub unsafe fn get_unchecked(&self, at: usize) -> &T {
        // Safety: as the caller promises.
        unsafe { &*self.ptr.add(at) }
    }

    /// Element `at`, to write.
    ///
    /// # Safety
    ///
    /// `at` is in range and no other thread touches element `at`.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get_unchecked_mut(&self, at: usize) -> &mut T {
        // Safety: as the caller promises.
        unsafe { &mut *self.ptr.add(at) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_write_their_own_elements() {
        let mut y = vec![0_u64; 1000];
        let shared = Shared::new(&mut y);
        std::thread::scope(|s| {
            for t in 0..4 {
                s.spawn(move || {
                    for at in (t..1000).step_by(4) {
                        // Safety: thread `t` alone touches the elements `at % 4 == t`.
                        unsafe { *shared.get_unchecked_mut(at) = at as u64 * 2 };
                    }
                });
            }
        });
        assert!(y.iter().enumerate().all(|(i, &v)| v == i as u64 * 2));
    }
}
