//! Stream assignment (DESIGN.md §18): recyclable streams, greedy descent along the
//! highest-ranked successor, and a maximum stream count.

use super::reduction::{BitSet, Dag};

/// What the assignment needs to know about one scope.
pub(crate) struct Problem<'a> {
    /// The dependency DAG (its reachability is the start of the ordering relation).
    pub(crate) dag: &'a Dag,
    /// The reduced successors.
    pub(crate) reduced: &'a [Vec<usize>],
    /// The rank of each node.
    pub(crate) rank: &'a [usize],
    /// What kernel each node runs (equal keys: the same kernel).
    pub(crate) kernel: &'a [String],
    /// The most streams to use (`None`: as many as the graph's width needs).
    pub(crate) max_streams: Option<usize>,
}

/// Each stream's nodes in order, and each node's stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Assignment {
    pub(crate) streams: Vec<Vec<usize>>,
    pub(crate) stream_of: Vec<usize>,
}

/// The ordering relation: the DAG's reachability plus the edges added when a stream
/// is reused at the maximum. Every stream is a chain of it, and it stays acyclic, so
/// the streams cannot deadlock.
struct Order {
    reach: Vec<BitSet>,
}

impl Order {
    /// True when `a` must run before `b`.
    fn before(&self, a: usize, b: usize) -> bool {
        self.reach[a].has(b)
    }

    /// Adds `a -> b` (`b` must not be before `a`): `b` and its descendants become
    /// descendants of `a` and of every ancestor of `a`.
    fn add(&mut self, a: usize, b: usize) {
        debug_assert!(!self.before(b, a) && a != b);
        let mut add = self.reach[b].clone();
        add.insert(b);
        for x in 0..self.reach.len() {
            if x == a || self.reach[x].has(a) {
                self.reach[x].union(&add);
            }
        }
    }
}

/// Assigns every node a stream (module documentation and `docs/graph-schedule.md`).
pub(crate) fn assign(p: &Problem<'_>) -> Assignment {
    let n = p.dag.len();
    let mut order = Order {
        reach: p.dag.reach.clone(),
    };
    let mut stream_of: Vec<Option<usize>> = vec![None; n];
    let mut streams: Vec<Vec<usize>> = Vec::new();
    let ran = |streams: &[Vec<usize>], s: usize, kernel: &str| {
        streams[s].iter().any(|&x| p.kernel[x] == kernel)
    };
    // The best of `candidates`: one that ran the same kernel, else the first.
    let prefer = |streams: &[Vec<usize>], candidates: Vec<usize>, u: usize| {
        candidates
            .iter()
            .copied()
            .find(|&s| ran(streams, s, &p.kernel[u]))
            .or_else(|| candidates.first().copied())
    };
    for u in 0..n {
        if stream_of[u].is_some() {
            continue;
        }
        let last = |s: &Vec<usize>| *s.last().expect("streams are never empty");
        let recyclable: Vec<usize> = (0..streams.len())
            .filter(|&s| order.before(last(&streams[s]), u))
            .collect();
        let room = p.max_streams.is_none_or(|m| streams.len() < m);
        let (s, follow) = if let Some(s) = prefer(&streams, recyclable, u) {
            streams[s].push(u);
            (s, true)
        } else if room {
            streams.push(vec![u]);
            (streams.len() - 1, true)
        } else {
            // At the maximum: reuse a stream whose last node does not depend on `u`,
            // with an edge so that `u` runs after it.
            let free: Vec<usize> = (0..streams.len())
                .filter(|&s| !order.before(u, last(&streams[s])))
                .collect();
            if let Some(s) = prefer(&streams, free, u) {
                let l = last(&streams[s]);
                order.add(l, u);
                streams[s].push(u);
                (s, true)
            } else {
                // Every stream already holds a descendant of `u` (the descent took
                // them ahead): put `u` right before the first one on the stream
                // that ran the same kernel (else stream 0), after the node there.
                let all: Vec<usize> = (0..streams.len()).collect();
                let s = prefer(&streams, all, u).unwrap_or(0);
                let at = streams[s]
                    .iter()
                    .position(|&x| order.before(u, x))
                    .unwrap_or(streams[s].len());
                if at > 0 {
                    order.add(streams[s][at - 1], u);
                }
                streams[s].insert(at, u);
                (s, false)
            }
        };
        stream_of[u] = Some(s);
        if !follow {
            continue;
        }
        // Greedy descent: the highest-ranked unassigned successor; ties go to the
        // same kernel as the stream's previous node, then to a kernel the stream ran,
        // then to the first in list order.
        let mut cur = u;
        while let Some(v) = p.reduced[cur]
            .iter()
            .copied()
            .filter(|&v| stream_of[v].is_none())
            .max_by_key(|&v| {
                (
                    p.rank[v],
                    p.kernel[v] == p.kernel[cur],
                    ran(&streams, s, &p.kernel[v]),
                    std::cmp::Reverse(v),
                )
            })
        {
            streams[s].push(v);
            stream_of[v] = Some(s);
            cur = v;
        }
    }
    Assignment {
        streams,
        stream_of: stream_of
            .into_iter()
            .map(|s| s.expect("every node is assigned"))
            .collect(),
    }
}
