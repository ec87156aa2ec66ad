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

use std::fmt;

/// One buffer to place: live over the steps `start..=end`, `size` bytes (a multiple
/// of the alignment).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    /// First step live.
    pub start: usize,
    /// Last step live.
    pub end: usize,
    /// Bytes.
    pub size: usize,
}

impl Item {
    fn overlaps(&self, other: &Item) -> bool {
        self.start <= other.end && other.start <= self.end
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
pub(crate) struct Placement {
    /// One offset per item, in the items' order.
    pub offsets: Vec<usize>,
    /// The arena: the highest end of an item.
    pub arena: usize,
    /// The rule and order that gave it.
    pub strategy: Strategy,
}

/// The smallest placement of `items` over both fits and every order (ties: the first
/// tried, best fit by size first). `None` when an offset overflows.
pub(crate) fn place(items: &[Item]) -> Option<Placement> {
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

/// The items' indices in `order`.
fn ordered(items: &[Item], order: Order) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..items.len()).collect();
    idx.sort_by(|&a, &b| {
        let (x, y) = (&items[a], &items[b]);
        let key = match order {
            Order::Size => y.size.cmp(&x.size).then(x.start.cmp(&y.start)),
            Order::Start => x.start.cmp(&y.start).then(y.size.cmp(&x.size)),
            Order::Duration => (y.end - y.start)
                .cmp(&(x.end - x.start))
                .then(y.size.cmp(&x.size)),
        };
        key.then(a.cmp(&b))
    });
    idx
}

/// One placement of `items` by `strategy`; `None` when an offset overflows.
pub(crate) fn place_with(items: &[Item], strategy: Strategy) -> Option<Placement> {
    let mut offsets = vec![0usize; items.len()];
    let mut placed: Vec<usize> = Vec::new();
    let mut arena = 0usize;
    for i in ordered(items, strategy.order) {
        let item = items[i];
        if item.size == 0 {
            continue;
        }
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

/// The largest sum of sizes live at one step (saturating).
pub(crate) fn lower_bound(items: &[Item]) -> usize {
    let steps = items.iter().map(|i| i.end + 2).max().unwrap_or(0);
    let mut delta = vec![0i128; steps];
    for i in items {
        delta[i.start] += i.size as i128;
        delta[i.end + 1] -= i.size as i128;
    }
    let (mut live, mut most) = (0i128, 0i128);
    for d in delta {
        live += d;
        most = most.max(live);
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
}
