//! Ranks: the length of the longest chain after each node (DESIGN.md §18).

/// The rank of every node: 0 for a node without successors, else one more than the
/// highest rank of its successors. Computed in reverse topological order, so every
/// successor's rank is final when it is read (NNC's code reads predecessors' ranks
/// before computing them and so gets 0 or 1).
pub(crate) fn ranks(succ: &[Vec<usize>]) -> Vec<usize> {
    let mut rank = vec![0; succ.len()];
    for u in (0..succ.len()).rev() {
        rank[u] = succ[u].iter().map(|&v| rank[v] + 1).max().unwrap_or(0);
    }
    rank
}

#[cfg(test)]
mod tests {
    use super::ranks;

    #[test]
    fn rank_is_the_longest_chain_after_a_node() {
        // A -> B -> E, A -> C -> D -> E.
        let succ = vec![vec![1, 2], vec![4], vec![3], vec![4], vec![]];
        assert_eq!(ranks(&succ), vec![3, 1, 2, 1, 0]);
    }
}
