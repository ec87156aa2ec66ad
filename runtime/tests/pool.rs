//! Stress tests of the worker pool: many calls, from many threads at once, nested,
//! with the thread count changing between them. Every part must run exactly once,
//! see what the other parts wrote before a barrier, and the call must return only
//! after all parts have. (One test function per process state: `set_threads` is
//! global, so the tests that change it run in sequence inside one test.)

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use uop_runtime as rt;

/// The tests that change the thread count take turns.
static TURN: Mutex<()> = Mutex::new(());

/// Each of `count` parts writes its slots, waits, then checks every other part's
/// slots of that round, for `rounds` rounds: a barrier that let a thread through
/// early, or published writes late, shows as a wrong value.
fn barrier_rounds(count: usize, rounds: usize) {
    let slots: Vec<AtomicUsize> = (0..count).map(|_| AtomicUsize::new(usize::MAX)).collect();
    let ran = AtomicUsize::new(0);
    rt::run_parts(count, |part| {
        assert_eq!(part.count(), count);
        ran.fetch_add(1, Ordering::Relaxed);
        for round in 0..rounds {
            slots[part.index()].store(round * count + part.index(), Ordering::Relaxed);
            part.wait();
            for (other, slot) in slots.iter().enumerate() {
                assert_eq!(slot.load(Ordering::Relaxed), round * count + other);
            }
            part.wait();
        }
    });
    assert_eq!(ran.load(Ordering::Relaxed), count);
}

#[test]
fn every_part_runs_once_and_the_barrier_holds() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let calls = if cfg!(miri) { 2 } else { 50 };
    for count in [1, 2, 3, 4, 7] {
        for _ in 0..calls {
            barrier_rounds(count, 20);
        }
    }
}

#[test]
fn concurrent_and_nested_calls_each_get_all_their_parts() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    std::thread::scope(|s| {
        for caller in 0..4 {
            s.spawn(move || {
                for call in 0..if cfg!(miri) { 10 } else { 200 } {
                    let count = 1 + (caller + call) % 4;
                    let sum = AtomicUsize::new(0);
                    rt::run_parts(count, |part| {
                        // A nested call: the pool may be busy, then it spawns.
                        if call % 10 == 0 {
                            let inner = AtomicUsize::new(0);
                            rt::run_parts(2, |p| {
                                inner.fetch_add(p.index() + 1, Ordering::Relaxed);
                            });
                            assert_eq!(inner.load(Ordering::Relaxed), 3);
                        }
                        sum.fetch_add(part.index() + 1, Ordering::Relaxed);
                        part.wait();
                    });
                    assert_eq!(sum.load(Ordering::Relaxed), count * (count + 1) / 2);
                }
            });
        }
    });
}

#[test]
fn in_parts_writes_every_element_once_whatever_the_thread_count() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let n = if cfg!(miri) { 1_i64 << 16 } else { 1 << 18 };
    for threads in [1, 2, 3, 8, 0] {
        rt::set_threads(threads);
        assert!(rt::threads() >= 1);
        if threads > 0 {
            assert_eq!(rt::threads(), threads);
        }
        for _ in 0..if cfg!(miri) { 1 } else { 20 } {
            let mut y = vec![0_u32; n as usize];
            let shared = rt::Shared::new(&mut y);
            rt::in_parts(&[&[n]], |part| {
                let (lo, hi) = part.range(0, n);
                for i in lo..hi {
                    // Safety: parts own disjoint ranges.
                    unsafe { *shared.get_unchecked_mut(i as usize) += 1 };
                }
            });
            assert!(y.iter().all(|&v| v == 1));
        }
    }
    rt::set_threads(0);
}

#[test]
fn a_panicking_part_on_the_calling_thread_waits_for_the_others() {
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let finished = AtomicUsize::new(0);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        rt::run_parts(3, |part| {
            if part.first() {
                panic!("part 0 fails");
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
            finished.fetch_add(1, Ordering::SeqCst);
        })
    }));
    assert!(result.is_err());
    // The call unwound only after the workers had finished with the closure.
    assert_eq!(finished.load(Ordering::SeqCst), 2);
    // And the pool still works.
    barrier_rounds(3, 5);
}
