//! A one-shot event for threads that wait for each other: the graph executor's
//! signals between streams (DESIGN.md §18). One thread [`set`](Event::set)s it
//! once everything it wrote before is done; the others [`wait`](Event::wait) for
//! it and then see those writes. A failing stream [`cancel`](Event::cancel)s the
//! events others wait for, so that nobody waits forever.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Condvar, Mutex};

const PENDING: u8 = 0;
const SET: u8 = 1;
const CANCELLED: u8 = 2;

/// A one-shot event: pending, then set or cancelled for good.
#[derive(Debug, Default)]
pub struct Event {
    state: AtomicU8,
    lock: Mutex<()>,
    woken: Condvar,
}

impl Event {
    /// A pending event.
    pub fn new() -> Event {
        Event::default()
    }

    /// Sets the event: every wait returns `true`, seeing what this thread wrote
    /// before (release / acquire). Setting a cancelled event does nothing.
    pub fn set(&self) {
        self.finish(SET);
    }

    /// Cancels the event: every wait returns `false`. Cancelling a set event does
    /// nothing.
    pub fn cancel(&self) {
        self.finish(CANCELLED);
    }

    fn finish(&self, to: u8) {
        if self
            .state
            .compare_exchange(PENDING, to, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            // Taking the lock orders this after a waiter's check of the state and
            // before its sleep, so the notification is not lost.
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
            self.woken.notify_all();
        }
    }

    /// True once set, false once cancelled, without blocking; `None` while pending.
    pub fn state(&self) -> Option<bool> {
        match self.state.load(Ordering::Acquire) {
            PENDING => None,
            s => Some(s == SET),
        }
    }

    /// Blocks until the event is set (`true`) or cancelled (`false`): spins
    /// briefly (a stream's predecessor is often about to finish), then sleeps.
    pub fn wait(&self) -> bool {
        for _ in 0..1 << 10 {
            if let Some(set) = self.state() {
                return set;
            }
            std::hint::spin_loop();
        }
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(set) = self.state() {
                return set;
            }
            guard = self.woken.wait(guard).unwrap_or_else(|e| e.into_inner());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_wait_sees_what_was_written_before_the_set() {
        for _ in 0..200 {
            let e = Event::new();
            let data = AtomicUsize::new(0);
            std::thread::scope(|s| {
                s.spawn(|| {
                    assert!(e.wait());
                    assert_eq!(data.load(Ordering::Relaxed), 42);
                });
                data.store(42, Ordering::Relaxed);
                e.set();
            });
        }
    }

    #[test]
    fn set_and_cancel_are_final() {
        let e = Event::new();
        assert_eq!(e.state(), None);
        e.set();
        e.cancel();
        assert_eq!(e.state(), Some(true));
        assert!(e.wait());
        let c = Event::new();
        c.cancel();
        c.set();
        assert!(!c.wait());
    }

    #[test]
    fn a_cancel_wakes_every_sleeping_waiter() {
        let e = Event::new();
        let woke = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    assert!(!e.wait());
                    woke.fetch_add(1, Ordering::Relaxed);
                });
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            e.cancel();
        });
        assert_eq!(woke.load(Ordering::Relaxed), 3);
    }
}
