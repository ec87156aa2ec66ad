//! The dependency DAG of one scope, its reachability and its transitive reduction.

/// A set of node indexes of one DAG, as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BitSet(Vec<u64>);

impl BitSet {
    /// The empty set over `n` indexes.
    pub(crate) fn new(n: usize) -> Self {
        BitSet(vec![0; n.div_ceil(64)])
    }

    /// True when `i` is in the set.
    pub(crate) fn has(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }

    /// Adds `i`.
    pub(crate) fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    /// Adds every element of `other`.
    pub(crate) fn union(&mut self, other: &BitSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
}

/// The DAG of one scope: nodes `0..n` in a topological order (the graph's list
/// order), each edge `u -> v` with `u < v`.
#[derive(Clone, Debug)]
pub(crate) struct Dag {
    /// Direct successors of each node, sorted, without repeats.
    pub(crate) succ: Vec<Vec<usize>>,
    /// Strict descendants of each node.
    pub(crate) reach: Vec<BitSet>,
}

impl Dag {
    /// The DAG of `n` nodes and `edges` (each `(u, v)` with `u < v`; repeats allowed).
    pub(crate) fn new(n: usize, edges: &[(usize, usize)]) -> Self {
        let mut succ = vec![Vec::new(); n];
        for &(u, v) in edges {
            debug_assert!(u < v, "edges follow the topological order");
            succ[u].push(v);
        }
        for s in &mut succ {
            s.sort_unstable();
            s.dedup();
        }
        let mut reach = vec![BitSet::new(n); n];
        for u in (0..n).rev() {
            let mut r = BitSet::new(n);
            for &v in &succ[u] {
                r.insert(v);
                r.union(&reach[v]);
            }
            reach[u] = r;
        }
        Dag { succ, reach }
    }

    /// Number of nodes.
    pub(crate) fn len(&self) -> usize {
        self.succ.len()
    }

    /// The transitive reduction: for each node, the successors not reachable through
    /// another successor. A successor reachable through another one comes after it in
    /// the topological order, so one pass in increasing order decides each.
    pub(crate) fn reduced(&self) -> Vec<Vec<usize>> {
        let n = self.len();
        self.succ
            .iter()
            .map(|succ| {
                let mut covered = BitSet::new(n);
                let mut kept = Vec::new();
                for &v in succ {
                    if !covered.has(v) {
                        kept.push(v);
                        covered.union(&self.reach[v]);
                    }
                }
                kept
            })
            .collect()
    }
}

/// Predecessor lists from successor lists.
pub(crate) fn predecessors(succ: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let mut pred = vec![Vec::new(); succ.len()];
    for (u, s) in succ.iter().enumerate() {
        for &v in s {
            pred[v].push(u);
        }
    }
    pred
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transitive_edge_is_removed() {
        // A -> B -> C and A -> C.
        let dag = Dag::new(3, &[(0, 1), (1, 2), (0, 2)]);
        assert_eq!(dag.reduced(), vec![vec![1], vec![2], vec![]]);
        assert!(dag.reach[0].has(2));
        assert!(!dag.reach[2].has(0));
    }

    #[test]
    fn a_long_transitive_edge_is_removed_and_a_diamond_kept() {
        // 0 -> {1, 2} -> 3, and 0 -> 3 directly.
        let dag = Dag::new(4, &[(0, 1), (0, 2), (1, 3), (2, 3), (0, 3)]);
        assert_eq!(dag.reduced(), vec![vec![1, 2], vec![3], vec![3], vec![]]);
    }
}
