//! A kept workspace makes later calls allocate nothing: the graph's arena, its
//! output buffers and its kernels' own memory (a matmul's packed panel, the
//! softmax's partial sums, lent by the workspace's scratch). A test binary of its
//! own, as it counts every allocation of the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use uop_example_graph_aot::{Head, Model};

/// The system allocator, counting allocations and reallocations.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call is the system allocator's, with the caller's arguments.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller keeps `GlobalAlloc::alloc`'s contract.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller keeps `GlobalAlloc::dealloc`'s contract.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller keeps `GlobalAlloc::realloc`'s contract.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Later calls of both heads of a model `[E, H, K]` over `steps` rows make no
/// allocation and give the first call's result.
fn later_calls_allocate_nothing(e: usize, h: usize, k: usize, steps: usize) {
    let weights = |n: usize| (0..n).map(|i| (i % 7) as f32 / 7.0 - 0.5).collect();
    let mut m = Model::new(
        weights(h),
        weights(h * h),
        weights(e * h),
        weights(h * k),
        [e, h, k],
    );
    let xs: Vec<f32> = weights(steps * e);
    let mut y = vec![0.0; k];
    for head in [Head::Logits, Head::Probabilities] {
        // The first call grows the workspace (for this head's kernels).
        m.run_into(&xs, steps, head, &mut y).expect("runs");
        let first = y.clone();
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..3 {
            m.run_into(&xs, steps, head, &mut y).expect("runs");
        }
        let made = ALLOCATIONS.load(Ordering::Relaxed) - before;
        assert_eq!(made, 0, "{head:?}: later calls made {made} allocations");
        assert_eq!(y, first, "{head:?}: a later call differs");
    }
}

/// One test: the allocation count is the whole process's, so nothing else may run
/// beside it. The larger model is large enough that the matmul of every step's input
/// runs on a team of threads (`rt::GRAIN`), each part with its own panel from the
/// scratch.
#[test]
fn later_calls_of_both_heads_allocate_nothing_on_one_thread_or_several() {
    later_calls_allocate_nothing(3, 5, 4, 12);
    uop_runtime::set_threads(2);
    later_calls_allocate_nothing(128, 128, 64, 64);
}
