//! Stream assignment (DESIGN.md §18): recyclable streams, greedy descent along the
//! highest-ranked successor, and a maximum stream count at which the streams are
//! balanced (`docs/graph-schedule.md`).

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
        // Where `u` goes: its stream and its position there.
        let (s, at) = if let Some(s) = prefer(&streams, recyclable, u) {
            (s, streams[s].len())
        } else if room {
            streams.push(Vec::new());
            (streams.len() - 1, 0)
        } else {
            // At the maximum: balance. Every stream can take `u` right before its
            // first node that must run after `u` (at its end when none must); the
            // stream with the least work placed before that point (each node one
            // unit: the earliest finish) wins; ties go to a stream that ran the same
            // kernel, then to the lowest-numbered.
            let slot = |s: usize| {
                streams[s]
                    .iter()
                    .position(|&x| order.before(u, x))
                    .unwrap_or(streams[s].len())
            };
            let s = (0..streams.len())
                .min_by_key(|&s| (slot(s), !ran(&streams, s, &p.kernel[u]), s))
                .expect("at the maximum there are streams");
            let at = slot(s);
            if at > 0 {
                // `u` runs after the node before it: an ordering edge, so nothing
                // can deadlock.
                order.add(streams[s][at - 1], u);
            }
            (s, at)
        };
        streams[s].insert(at, u);
        stream_of[u] = Some(s);
        // Greedy descent: the highest-ranked unassigned successor; ties go to the
        // same kernel as the stream's previous node, then to a kernel the stream ran,
        // then to the first in list order. Placed before a later node of the stream
        // (at the maximum), the descent takes only successors that need not run
        // after that node, with an ordering edge to it.
        let mut cur = u;
        let mut at = at + 1;
        let next = streams[s].get(at).copied();
        while let Some(v) = p.reduced[cur]
            .iter()
            .copied()
            .filter(|&v| stream_of[v].is_none())
            .filter(|&v| next.is_none_or(|x| !order.before(x, v)))
            .max_by_key(|&v| {
                (
                    p.rank[v],
                    p.kernel[v] == p.kernel[cur],
                    ran(&streams, s, &p.kernel[v]),
                    std::cmp::Reverse(v),
                )
            })
        {
            if let Some(x) = next.filter(|&x| !order.before(v, x)) {
                order.add(v, x);
            }
            streams[s].insert(at, v);
            stream_of[v] = Some(s);
            cur = v;
            at += 1;
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
