//! The test mode of the schedule (DESIGN.md §18, §22): every node on a stream drawn
//! at random, respecting only the dependencies, so an executor's missing waits show
//! up as wrong results. Each stream runs its nodes in list (topological) order, so
//! every wait is for an earlier node and the streams cannot deadlock; the signals
//! are computed as for the real assignment.

use super::assignment::Assignment;

/// A splitmix64 step: the next pseudo-random number of `state`.
fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// `n` nodes (in list order) on up to `streams` streams drawn from `seed`; empty
/// streams are dropped and the others numbered in the order of their first node.
pub(crate) fn assign(n: usize, streams: usize, seed: u64) -> Assignment {
    let mut state = seed;
    let mut number: Vec<Option<usize>> = vec![None; streams.max(1)];
    let mut a = Assignment {
        streams: Vec::new(),
        stream_of: Vec::with_capacity(n),
    };
    for x in 0..n {
        let drawn = (next(&mut state) % number.len() as u64) as usize;
        let s = *number[drawn].get_or_insert_with(|| {
            a.streams.push(Vec::new());
            a.streams.len() - 1
        });
        a.streams[s].push(x);
        a.stream_of.push(s);
    }
    a
}

/// The seed of a nested scope's draw: the outer seed mixed with the super node
/// and the branch.
pub(crate) fn nested_seed(seed: u64, super_node: usize, branch: usize) -> u64 {
    let mut state = seed ^ ((super_node as u64) << 8) ^ branch as u64;
    next(&mut state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_node_gets_one_stream_in_list_order() {
        for seed in 0..50 {
            let a = assign(20, 3, seed);
            assert!(a.streams.len() <= 3 && !a.streams.is_empty());
            for (s, nodes) in a.streams.iter().enumerate() {
                assert!(!nodes.is_empty());
                assert!(nodes.windows(2).all(|w| w[0] < w[1]));
                assert!(nodes.iter().all(|&x| a.stream_of[x] == s));
            }
            assert_eq!(a.stream_of[0], 0);
        }
        assert!(assign(0, 4, 1).streams.is_empty());
        // Different seeds give different assignments.
        assert_ne!(assign(20, 4, 1).stream_of, assign(20, 4, 2).stream_of);
    }
}
