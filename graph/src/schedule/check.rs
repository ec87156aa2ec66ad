//! Checks a schedule by simulating it: every dependency between scheduled nodes is
//! ordered (same stream, earlier; or covered by signals and waits), every signal is
//! reached exactly once, every stream waits on a signal at most once, the streams
//! cannot deadlock, and stream 0 ends after every other stream.

use std::collections::{HashMap, HashSet};

use thiserror::Error;

use super::order::Simulation;
use super::{Schedule, SignalId, Step, dependencies};
use crate::hierarchy::{SubId, hierarchy};
use crate::ir::{Graph, NodeId};

/// What is wrong with a schedule.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CheckError {
    /// The graph has no hierarchy.
    #[error("{0}")]
    Graph(String),
    /// A node runs more than once.
    #[error("{0} runs twice")]
    RunsTwice(NodeId),
    /// A signal is signalled twice or never.
    #[error("{0} is signalled {1} times")]
    Signalled(SignalId, usize),
    /// A stream waits on the same signal twice.
    #[error("stream {0} waits on {1} twice")]
    WaitsTwice(usize, SignalId),
    /// No stream can advance: the streams' next steps.
    #[error("deadlock: {}", .0.iter().map(|(s, st)| format!("stream {s} at `{st}`")).collect::<Vec<_>>().join(", "))]
    Deadlock(Vec<(usize, Step)>),
    /// A dependency is not ordered: `to` may run before `from` is done.
    #[error("missing wait: {to} may run before {from}, which it depends on, is done")]
    MissingWait {
        /// The node depended on.
        from: NodeId,
        /// The node depending on it.
        to: NodeId,
    },
    /// Stream 0 may finish before another stream.
    #[error("stream 0 may end before stream {0}")]
    NotJoined(usize),
    /// A super node's sub-function has no nested schedule.
    #[error("{0} has no schedule")]
    NoNested(SubId),
}

/// Checks `schedule` (and its nested schedules) against `graph`'s dependencies.
pub fn check(graph: &Graph, schedule: &Schedule) -> Result<(), CheckError> {
    let h = hierarchy(graph).map_err(|e| CheckError::Graph(e.to_string()))?;
    let deps = dependencies(graph, &h);
    check_scope(graph, schedule, &deps)
}

fn check_scope(
    graph: &Graph,
    s: &Schedule,
    deps: &HashMap<Option<SubId>, Vec<(NodeId, NodeId)>>,
) -> Result<(), CheckError> {
    let count = s.streams.len();
    let mut run_at: HashMap<NodeId, (usize, usize)> = HashMap::new();
    let mut signalled: HashMap<SignalId, usize> = HashMap::new();
    for (t, steps) in s.streams.iter().enumerate() {
        let mut waited = HashSet::new();
        for (i, step) in steps.iter().enumerate() {
            match *step {
                Step::Run(n) => {
                    if run_at.insert(n, (t, i)).is_some() {
                        return Err(CheckError::RunsTwice(n));
                    }
                }
                Step::Signal(g) => *signalled.entry(g).or_default() += 1,
                Step::Wait(g) => {
                    if !waited.insert(g) {
                        return Err(CheckError::WaitsTwice(t, g));
                    }
                }
            }
        }
    }
    for g in 0..s.signal_count {
        let c = signalled.get(&SignalId(g)).copied().unwrap_or(0);
        if c != 1 {
            return Err(CheckError::Signalled(SignalId(g), c));
        }
    }
    if let Some((&g, &c)) = signalled.iter().find(|(g, _)| g.0 >= s.signal_count) {
        return Err(CheckError::Signalled(g, c));
    }
    let sim = Simulation::run(s).map_err(CheckError::Deadlock)?;
    for &(u, v) in deps.get(&s.scope).into_iter().flatten() {
        if !(run_at.contains_key(&u) && run_at.contains_key(&v)) {
            continue;
        }
        if !sim.before(u, v) {
            return Err(CheckError::MissingWait { from: u, to: v });
        }
    }
    if let Some(t) = (1..count).find(|&t| sim.clock[0][t] < s.streams[t].len()) {
        return Err(CheckError::NotJoined(t));
    }
    for n in run_at.keys() {
        let Some(node) = graph.node(*n) else { continue };
        for k in 0..node.op.interfaces().len() {
            let id = SubId {
                super_node: *n,
                branch: k,
            };
            let nested = s.nested.get(&id).ok_or(CheckError::NoNested(id))?;
            check_scope(graph, nested, deps)?;
        }
    }
    Ok(())
}
