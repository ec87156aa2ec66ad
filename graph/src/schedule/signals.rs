//! Signals and waits (DESIGN.md §18): only on reduced edges between different
//! streams, each waited on at most once per stream, and the end synchronization.

use super::assignment::Assignment;
use super::{SignalId, Step};
use crate::ir::NodeId;

/// The steps of every stream: before each node, a wait for every reduced predecessor
/// on another stream that the stream has not yet waited for (a wait on a later node
/// of the same stream covers it); after a node, a signal when some stream waits for
/// it. At the end, stream 0 waits for the last node of every other stream (unless it
/// already has). Signals are numbered in the order of their nodes. `ids` turns a node
/// index into what a `Run` step names.
pub(crate) fn steps(
    pred: &[Vec<usize>],
    a: &Assignment,
    ids: &[NodeId],
) -> (Vec<Vec<Step>>, usize) {
    let n = a.stream_of.len();
    let count = a.streams.len();
    let mut pos = vec![0; n];
    for s in &a.streams {
        for (i, &x) in s.iter().enumerate() {
            pos[x] = i;
        }
    }
    // Per stream: the waits before each of its nodes, and the highest position waited
    // for on each other stream.
    let mut waits: Vec<Vec<Vec<usize>>> = Vec::with_capacity(count);
    let mut seen: Vec<Vec<Option<usize>>> = vec![vec![None; count]; count];
    let mut signalled = vec![false; n];
    for (t, stream) in a.streams.iter().enumerate() {
        let mut per_node = Vec::with_capacity(stream.len());
        for &v in stream {
            let mut w: Vec<usize> = Vec::new();
            let mut preds: Vec<usize> = pred[v]
                .iter()
                .copied()
                .filter(|&u| a.stream_of[u] != t)
                .collect();
            // The latest node per stream covers the earlier ones.
            preds.sort_by_key(|&u| std::cmp::Reverse(pos[u]));
            for u in preds {
                let su = a.stream_of[u];
                if seen[t][su].is_some_and(|p| p >= pos[u]) {
                    continue;
                }
                seen[t][su] = Some(pos[u]);
                signalled[u] = true;
                w.push(u);
            }
            w.sort_unstable();
            per_node.push(w);
        }
        waits.push(per_node);
    }
    let mut end = Vec::new();
    for (s, stream) in a.streams.iter().enumerate().skip(1) {
        let l = *stream.last().expect("streams are never empty");
        if seen[0][s].is_none_or(|p| p < pos[l]) {
            signalled[l] = true;
            end.push(l);
        }
    }
    let mut id = vec![None; n];
    let mut next = 0;
    for (x, &sig) in signalled.iter().enumerate() {
        if sig {
            id[x] = Some(SignalId(next));
            next += 1;
        }
    }
    let sig = |x: usize| id[x].expect("a waited-for node signals");
    let mut out = Vec::with_capacity(count);
    for (t, stream) in a.streams.iter().enumerate() {
        let mut steps = Vec::new();
        for (i, &v) in stream.iter().enumerate() {
            steps.extend(waits[t][i].iter().map(|&u| Step::Wait(sig(u))));
            steps.push(Step::Run(ids[v]));
            if let Some(s) = id[v] {
                steps.push(Step::Signal(s));
            }
        }
        if t == 0 {
            steps.extend(end.iter().map(|&l| Step::Wait(sig(l))));
        }
        out.push(steps);
    }
    (out, next)
}
