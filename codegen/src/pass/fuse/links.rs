//! Per slot of the fusion search, its nearest *related* slots (one of the two blocks
//! writes what the other touches): the first one after it and the last one before
//! it, with range queries over both.
//!
//! These answer the fusion rules' "no block between conflicts" questions without
//! walking the blocks between: `i` may move down to `j` past every block between
//! them exactly when the first slot related to `i` is not before `j`, and `j` may join
//! `i` at `i`'s place when the last slot related to `j` is before `i`. The queries
//! (which slots before `r` stay unrelated past `j`, which slots in a range have no
//! related slot after `at`) walk a segment tree and cost O(log n) per slot reported,
//! so the search visits only slots that can form a legal pair.

/// The links of every slot, as two segment trees over the slot numbers.
pub(super) struct Links {
    /// Leaves from `size`: per slot, the first related slot after it (`NONE_AFTER` if
    /// none; `EMPTY_NEXT` for an empty slot). Inner nodes hold the maximum.
    next: Vec<usize>,
    /// Leaves from `size`: per slot, one more than the last related slot before it (0
    /// if none; `EMPTY_PREV` for an empty slot). Inner nodes hold the minimum.
    prev: Vec<usize>,
    size: usize,
}

/// `next` of a slot with no related slot after it.
pub(super) const NONE_AFTER: usize = usize::MAX;
const EMPTY_NEXT: usize = 0;
const EMPTY_PREV: usize = usize::MAX;

impl Links {
    /// `n` empty slots.
    pub(super) fn new(n: usize) -> Self {
        let size = n.max(1).next_power_of_two();
        Links {
            next: vec![EMPTY_NEXT; 2 * size],
            prev: vec![EMPTY_PREV; 2 * size],
            size,
        }
    }

    /// Sets the links of `slot`: the first related slot after it and the last one
    /// before it (`None` when there is none).
    pub(super) fn set(&mut self, slot: usize, next: Option<usize>, prev: Option<usize>) {
        self.write(slot, next.unwrap_or(NONE_AFTER), prev.map_or(0, |p| p + 1));
    }

    /// Marks `slot` empty: no query reports it.
    pub(super) fn clear(&mut self, slot: usize) {
        self.write(slot, EMPTY_NEXT, EMPTY_PREV);
    }

    fn write(&mut self, slot: usize, next: usize, prev: usize) {
        let mut k = self.size + slot;
        self.next[k] = next;
        self.prev[k] = prev;
        while k > 1 {
            k /= 2;
            self.next[k] = self.next[2 * k].max(self.next[2 * k + 1]);
            self.prev[k] = self.prev[2 * k].min(self.prev[2 * k + 1]);
        }
    }

    /// The first slot after `slot` related to it (`NONE_AFTER` if none).
    pub(super) fn next(&self, slot: usize) -> usize {
        self.next[self.size + slot]
    }

    /// The last slot before `slot` related to it.
    pub(super) fn prev(&self, slot: usize) -> Option<usize> {
        self.prev[self.size + slot].checked_sub(1)
    }

    /// The slots below `end` whose first related slot comes after `after`, in
    /// descending order.
    pub(super) fn unrelated_past(&self, end: usize, after: usize) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk_next(1, 0, self.size, end, after, &mut out);
        out
    }

    fn walk_next(
        &self,
        k: usize,
        lo: usize,
        hi: usize,
        end: usize,
        after: usize,
        out: &mut Vec<usize>,
    ) {
        if lo >= end || self.next[k] <= after {
            return;
        }
        if hi - lo == 1 {
            out.push(lo);
            return;
        }
        let mid = (lo + hi) / 2;
        self.walk_next(2 * k + 1, mid, hi, end, after, out);
        self.walk_next(2 * k, lo, mid, end, after, out);
    }

    /// The slots in `range` with no related slot in `at..` before them (their last
    /// related slot is before `at`, or there is none), in ascending order.
    pub(super) fn unrelated_since(&self, range: std::ops::Range<usize>, at: usize) -> Vec<usize> {
        let mut out = Vec::new();
        self.walk_prev(1, 0, self.size, &range, at, &mut out);
        out
    }

    fn walk_prev(
        &self,
        k: usize,
        lo: usize,
        hi: usize,
        range: &std::ops::Range<usize>,
        at: usize,
        out: &mut Vec<usize>,
    ) {
        if hi <= range.start || lo >= range.end || self.prev[k] > at {
            return;
        }
        if hi - lo == 1 {
            out.push(lo);
            return;
        }
        let mid = (lo + hi) / 2;
        self.walk_prev(2 * k, lo, mid, range, at, out);
        self.walk_prev(2 * k + 1, mid, hi, range, at, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots 0..6; 0–2 and 2–5 related, 1 and 3 unrelated to all, 4 empty.
    fn example() -> Links {
        let mut l = Links::new(6);
        l.set(0, Some(2), None);
        l.set(1, None, None);
        l.set(2, Some(5), Some(0));
        l.set(3, None, None);
        l.clear(4);
        l.set(5, None, Some(2));
        l
    }

    #[test]
    fn slots_unrelated_past_a_point_are_found_nearest_first() {
        let l = example();
        // Below 5, unrelated up to and including 4: 3 and 1 (none after), 2 (next 5).
        assert_eq!(l.unrelated_past(5, 4), vec![3, 2, 1]);
        assert_eq!(l.unrelated_past(5, 5), vec![3, 1]);
        assert_eq!(l.unrelated_past(2, 1), vec![1, 0]);
        assert_eq!(l.next(0), 2);
        assert_eq!(l.next(1), NONE_AFTER);
    }

    #[test]
    fn slots_with_no_related_slot_since_a_point_are_found_in_order() {
        let l = example();
        // 5's last related slot (2) is not before 2; 3 has none; 4 is empty.
        assert_eq!(l.unrelated_since(3..6, 2), vec![3]);
        assert_eq!(l.unrelated_since(3..6, 3), vec![3, 5]);
        assert_eq!(l.unrelated_since(0..6, 1), vec![0, 1, 2, 3]);
        assert_eq!(l.prev(5), Some(2));
        assert_eq!(l.prev(0), None);
    }
}
