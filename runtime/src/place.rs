//! Offsets in one arena for buffers with lifetimes (offline dynamic storage
//! allocation): each buffer in turn takes a free range among the buffers already
//! placed whose lifetimes overlap its own, by **best fit** (the smallest gap that
//! holds it) or **first fit** (the lowest gap that holds it), else the top. Each rule
//! runs over several orders of the buffers (largest first, earliest first, longest
//! lived first) and the smallest arena is kept: the two rules of DESIGN.md §17,
//! "the smaller kept", over three orders.
//!
//! The **lower bound** is the largest sum of sizes of buffers live at one step: no
//! placement of these lifetimes can do better.
//!
//! One implementation for both sides: the graph layer's memory planner
//! (`uop_graph::memory::plan_memory`) calls it, and so can code emitted ahead of time
//! at run time, when the dims are known, so both place every buffer at the same
//! offset. It allocates only its own small working vectors and never panics: an
//! offset past `usize::MAX` gives `None`.

use std::fmt;

/// One buffer to place: live over the steps `start..=end`, `size` bytes (the caller
/// rounds sizes up to its alignment; offsets are then multiples of it too). An item
/// with `start > end` is read as live at `start` alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Item {
    /// First step live.
    pub start: usize,
    /// Last step live.
    pub end: usize,
    /// Bytes.
    pub size: usize,
}

impl Item {
    /// The last step live (`start` when `end` is before it).
    fn last(&self) -> usize {
        self.end.max(self.start)
    }

    fn overlaps(&self, other: &Item) -> bool {
        self.start <= other.last() && other.start <= self.last()
    }

    fn duration(&self) -> usize {
        self.last() - self.start
    }
}

/// How a free range is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fit {
    /// The smallest gap that holds the buffer.
    Best,
    /// The lowest gap that holds the buffer.
    First,
}

/// The order buffers are placed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Order {
    /// Largest first (ties: earliest first).
    Size,
    /// Earliest first (ties: largest first).
    Start,
    /// Longest lived first (ties: largest first).
    Duration,
}

/// The rule and order that gave a placement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Strategy {
    /// The fit.
    pub fit: Fit,
    /// The order.
    pub order: Order,
}

impl fmt::Display for Strategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fit = match self.fit {
            Fit::Best => "best fit",
            Fit::First => "first fit",
        };
        let order = match self.order {
            Order::Size => "largest first",
            Order::Start => "earliest first",
            Order::Duration => "longest lived first",
        };
        write!(f, "{fit}, {order}")
    }
}

/// Offsets for every item and the arena they need.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    /// One offset per item, in the items' order.
    pub offsets: Vec<usize>,
    /// The arena: the highest end of an item.
    pub arena: usize,
    /// The rule and order that gave it.
    pub strategy: Strategy,
}

/// The smallest placement of `items` over both fits and every order (ties: the first
/// tried, best fit by size first). `None` when an offset overflows.
pub fn place(items: &[Item]) -> Option<Placement> {
    let mut best: Option<Placement> = None;
    for fit in [Fit::Best, Fit::First] {
        for order in [Order::Size, Order::Start, Order::Duration] {
            let p = place_with(items, Strategy { fit, order })?;
            if best.as_ref().is_none_or(|b| p.arena < b.arena) {
                best = Some(p);
            }
        }
    }
    best
}

/// A placement kept with the items it was computed for: what a workspace of code
/// emitted ahead of time holds so that placement runs once per set of dims, and a
/// call with the same sizes costs one comparison and allocates nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kept {
    items: Vec<Item>,
    placement: Option<Placement>,
}

impl Kept {
    /// No placement yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The placement of `items`: the kept one when `items` equal the last call's,
    /// else computed by [`place`] and kept. `None` when an offset overflows (and
    /// nothing is kept).
    pub fn place(&mut self, items: &[Item]) -> Option<&Placement> {
        if self.placement.is_none() || self.items != items {
            self.placement = None;
            self.items.clear();
            let p = place(items)?;
            self.items.extend_from_slice(items);
            self.placement = Some(p);
        }
        self.placement.as_ref()
    }
}

/// The items' indices in `order`.
fn ordered(items: &[Item], order: Order) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..items.len()).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (&items[a], &items[b]);
        let key = match order {
            Order::Size => y.size.cmp(&x.size).then(x.start.cmp(&y.start)),
            Order::Start => x.start.cmp(&y.start).then(y.size.cmp(&x.size)),
            Order::Duration => y.duration().cmp(&x.duration()).then(y.size.cmp(&x.size)),
        };
        key.then(a.cmp(&b))
    });
    idx
}

/// One placement of `items` by `strategy`; `None` when an offset overflows.
pub fn place_with(items: &[Item], strategy: Strategy) -> Option<Placement> {
    let mut offsets = vec![0usize; items.len()];
    let mut placed: Vec<usize> = Vec::new();
    let mut arena = 0usize;
    for i in ordered(items, strategy.order) {
        let item = items[i];
        if item.size == 0 {
            continue;
        }
        // Placed items fitted below `arena`, so their ends do not overflow.
        let mut busy: Vec<(usize, usize)> = placed
            .iter()
            .filter(|&&j| items[j].overlaps(&item))
            .map(|&j| (offsets[j], offsets[j] + items[j].size))
            .collect();
        busy.sort_unstable();
        let mut chosen: Option<(usize, usize)> = None; // (offset, gap)
        let mut low = 0usize;
        for (from, to) in busy {
            if from > low {
                let gap = from - low;
                let better = match (strategy.fit, chosen) {
                    (_, None) => true,
                    (Fit::Best, Some((_, g))) => gap < g,
                    (Fit::First, Some(_)) => false,
                };
                if gap >= item.size && better {
                    chosen = Some((low, gap));
                }
            }
            low = low.max(to);
        }
        let offset = chosen.map_or(low, |(o, _)| o);
        let top = offset.checked_add(item.size)?;
        arena = arena.max(top);
        offsets[i] = offset;
        placed.push(i);
    }
    Some(Placement {
        offsets,
        arena,
        strategy,
    })
}

/// The largest sum of sizes live at one step (saturating at `usize::MAX`).
pub fn lower_bound(items: &[Item]) -> usize {
    // (step, change): a buffer counts from its first step through its last, so at
    // one step the ends of the step before come first.
    let mut events: Vec<(usize, bool, usize)> = Vec::with_capacity(2 * items.len());
    for i in items {
        events.push((i.start, true, i.size));
        if let Some(after) = i.last().checked_add(1) {
            events.push((after, false, i.size));
        }
    }
    events.sort_unstable_by_key(|&(step, starts, _)| (step, starts));
    let (mut live, mut most) = (0u128, 0u128);
    for (_, starts, size) in events {
        if starts {
            live += size as u128;
            most = most.max(live);
        } else {
            live -= size as u128;
        }
    }
    usize::try_from(most).unwrap_or(usize::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(start: usize, end: usize, size: usize) -> Item {
        Item { start, end, size }
    }

    #[test]
    fn disjoint_lifetimes_share_offset_zero() {
        let items = [item(0, 1, 64), item(2, 3, 128), item(4, 5, 64)];
        let p = place(&items).expect("placed");
        assert_eq!(p.offsets, vec![0, 0, 0]);
        assert_eq!(p.arena, 128);
        assert_eq!(lower_bound(&items), 128);
    }

    #[test]
    fn best_fit_takes_the_smallest_gap_first_fit_the_lowest() {
        // Earliest first, ties largest first: b, a, c, d, e, f. b takes 0..128, then
        // a 128..192, c 192..256, d 256..320, e 320..384. When f comes (from step 2)
        // b and d are dead: holes of 128 bytes at 0 and of 64 bytes at 256.
        let items = [
            item(0, 9, 64),  // a
            item(0, 1, 128), // b
            item(0, 9, 64),  // c
            item(0, 1, 64),  // d
            item(0, 9, 64),  // e
            item(2, 9, 64),  // f
        ];
        let best = place_with(
            &items,
            Strategy {
                fit: Fit::Best,
                order: Order::Start,
            },
        )
        .expect("placed");
        let first = place_with(
            &items,
            Strategy {
                fit: Fit::First,
                order: Order::Start,
            },
        )
        .expect("placed");
        assert_eq!(best.offsets[..5], [128, 0, 192, 256, 320]);
        assert_eq!(best.offsets[5], 256, "best fit: the 64-byte hole");
        assert_eq!(first.offsets[5], 0, "first fit: the lowest hole");
    }

    #[test]
    fn the_lower_bound_is_the_fullest_step() {
        let items = [item(0, 2, 64), item(1, 3, 128), item(3, 4, 256)];
        assert_eq!(lower_bound(&items), 384);
        assert!(place(&items).expect("placed").arena >= 384);
    }

    #[test]
    fn an_offset_past_usize_max_is_none_not_a_panic() {
        let half = usize::MAX / 2 + 1;
        assert_eq!(place(&[item(0, 1, half), item(1, 2, half)]), None);
        assert_eq!(
            lower_bound(&[item(0, 1, half), item(1, 2, half)]),
            usize::MAX
        );
        // Disjoint lifetimes share the bytes, so the same sizes fit.
        let p = place(&[item(0, 0, half), item(1, 1, half)]).expect("placed");
        assert_eq!((p.offsets, p.arena), (vec![0, 0], half));
        // The last step `usize::MAX` has no step after it.
        assert_eq!(lower_bound(&[item(usize::MAX, usize::MAX, 8)]), 8);
    }

    #[test]
    fn empty_and_zero_sized_items_take_no_bytes() {
        assert_eq!(place(&[]).expect("placed").arena, 0);
        let p = place(&[item(0, 3, 0), item(0, 3, 64)]).expect("placed");
        assert_eq!((p.offsets, p.arena), (vec![0, 0], 64));
    }

    /// Random lifetimes and sizes (a fixed linear congruential sequence): every
    /// placement of every strategy keeps buffers live at one step apart, ends at its
    /// arena, and `place` keeps the smallest, never below the lower bound.
    #[test]
    fn random_placements_never_overlap_live_buffers() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % n) as usize
        };
        for case in 0..300 {
            let count = 1 + next(24);
            let items: Vec<Item> = (0..count)
                .map(|_| {
                    let start = next(30);
                    item(start, start + next(10), 64 * next(9))
                })
                .collect();
            let best = place(&items).expect("placed");
            for fit in [Fit::Best, Fit::First] {
                for order in [Order::Size, Order::Start, Order::Duration] {
                    let strategy = Strategy { fit, order };
                    let p = place_with(&items, strategy).expect("placed");
                    for (i, a) in items.iter().enumerate() {
                        assert_eq!(p.offsets[i] % 64, 0, "case {case}");
                        assert!(p.offsets[i] + a.size <= p.arena, "case {case}");
                        for (j, b) in items.iter().enumerate().skip(i + 1) {
                            let (x, y) = (p.offsets[i], p.offsets[j]);
                            let apart = x + a.size <= y || y + b.size <= x;
                            assert!(
                                !a.overlaps(b) || a.size == 0 || b.size == 0 || apart,
                                "case {case}, {strategy}: items {i} and {j}"
                            );
                        }
                    }
                    let top = (0..count).map(|i| p.offsets[i] + items[i].size).max();
                    assert_eq!(p.arena, top.unwrap_or(0), "case {case}");
                    assert!(best.arena <= p.arena, "case {case}");
                }
            }
            assert!(best.arena >= lower_bound(&items), "case {case}");
        }
    }

    #[test]
    fn kept_places_again_only_when_the_items_change() {
        let mut kept = Kept::new();
        let small = [item(0, 1, 64), item(1, 2, 64)];
        let p = kept.place(&small).expect("placed").clone();
        assert_eq!(p, place(&small).expect("placed"));
        let offsets = kept.place(&small).expect("kept").offsets.as_ptr();
        assert_eq!(offsets, kept.place(&small).expect("kept").offsets.as_ptr());
        let large = [item(0, 1, 128), item(1, 2, 64)];
        assert_eq!(kept.place(&large).expect("placed").arena, 192);
        let half = usize::MAX / 2 + 1;
        assert!(kept.place(&[item(0, 1, half), item(1, 2, half)]).is_none());
        assert_eq!(kept, Kept::new(), "nothing kept after an overflow");
    }
}
