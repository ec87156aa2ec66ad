//! Leak tests: a counting allocator shows that buffers give back all they take
//! (also clones and offsets), and that the pool, once its workers are started,
//! allocates nothing per call that it keeps.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use uop_runtime as rt;

/// Bytes allocated and not yet freed, process-wide.
static LIVE: AtomicIsize = AtomicIsize::new(0);

struct Counting;

// Safety: forwards to `System`, counting.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::SeqCst);
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One test, so that no other test allocates while it counts.
#[test]
fn buffers_and_the_pool_give_back_what_they_take() {
    // Start the pool's workers and the thread count first: they stay.
    rt::set_threads(4);
    rt::run_parts(4, |part| part.wait());
    let before = LIVE.load(Ordering::SeqCst);
    let (rounds, large) = if cfg!(miri) {
        (10, 1 << 12)
    } else {
        (200, 1 << 21)
    };
    for round in 0..rounds {
        let len = [0, 1, 100, 5000, large][round % 5];
        let mut v = rt::AlignedVec::<f32>::zeroed_at(len, round % 64);
        if len > 0 {
            v[len - 1] = 1.0;
        }
        let w = v.clone();
        let x = rt::AlignedVec::<u8>::from_slice(&[1, 2, 3]);
        assert_eq!(w.len() + x.len(), len + 3);
        assert!(rt::AlignedVec::<f64>::try_zeroed(usize::MAX / 2).is_none());
        let t = rt::zeroed_lines::<f64>("k", "t", &[3, 7]).unwrap();
        drop((v, w, x, t));
        let sum = std::sync::atomic::AtomicUsize::new(0);
        rt::run_parts(4, |part| {
            sum.fetch_add(part.index(), std::sync::atomic::Ordering::Relaxed);
            part.wait();
        });
        assert_eq!(sum.into_inner(), 6);
    }
    assert_eq!(LIVE.load(Ordering::SeqCst), before, "bytes still allocated");
    rt::set_threads(0);
}
