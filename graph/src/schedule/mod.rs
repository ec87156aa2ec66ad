//! The static schedule (DESIGN.md §18, after NNC's, seed 002): the nodes of one scope
//! of a graph spread over parallel *streams* (each runs its steps in order) that
//! synchronize through *signals* (a `Wait` blocks until the matching `Signal`).
//!
//! 1. **Dependencies** of a scope: `u -> v` when `v` (or a node nested inside `v`'s
//!    sub-functions) reads `u` (or a node nested inside `u`). Input and constant nodes
//!    are ready when the scope begins and are not scheduled.
//! 2. **Transitive reduction** ([`reduction`]), then **ranks** ([`rank`]): the length
//!    of the longest chain after a node.
//! 3. **Assignment** ([`assignment`]): in list (topological) order, a node without a
//!    stream takes a recyclable stream (its last node precedes this one), preferring
//!    one that ran the same kernel, else a new one; from there the greedy descent
//!    follows the highest-ranked unassigned successor (ties: the same kernel as the
//!    previous node). At `max_streams` the streams are balanced: the node goes on the
//!    stream with the least work placed before the point where it fits, with an
//!    ordering edge so nothing can deadlock.
//! 4. **Signals** ([`signals`]): on reduced edges between streams only, each waited on
//!    at most once per stream; all streams start when the scope begins, and stream 0
//!    ends by waiting for the other streams' last nodes.
//! 5. **Sub-functions** are scheduled recursively; their stream 0 is the stream of
//!    their super node.
//!
//! [`check`] simulates a schedule against the graph's dependencies; [`print`] shows it
//! as text and as Graphviz DOT. Decisions are written in `docs/graph-schedule.md`.
//!
//! ```
//! use uop_graph::schedule::{ScheduleOptions, schedule};
//! use uop_graph::text::parse_graph;
//!
//! let src = "input x: f32[N]\na = exp(x)\nb = exp(a)\nc = sin(a)\nd = add(b, c)\noutput d";
//! let graph = parse_graph(src, uop_graph::default_registry())?;
//! let s = schedule(&graph, &ScheduleOptions::default())?;
//! assert_eq!(s.streams.len(), 2);
//! assert_eq!(s.signal_count, 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod assignment;
pub mod check;
pub(crate) mod order;
pub mod print;
mod random;
mod rank;
mod reduction;
mod signals;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use thiserror::Error;

use crate::hierarchy::{Entry, Hierarchy, HierarchyError, SubId, hierarchy};
use crate::ir::{Graph, NodeId, Op};

pub use check::{CheckError, check};
pub use order::StreamOrder;
pub use print::{print_schedule, schedule_dot};

/// What [`schedule`] is asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScheduleOptions {
    /// The most streams any one scope may use (`None`: no limit). Must be at least 1.
    pub max_streams: Option<usize>,
    /// A partial schedule: only the top-level nodes reachable from one of these
    /// (themselves included). Empty: from the beginning.
    pub sources: Vec<NodeId>,
    /// A partial schedule: only the top-level nodes from which one of these is
    /// reachable (themselves included). Empty: to the end.
    pub destinations: Vec<NodeId>,
    /// The test mode: every node of every scope on a stream drawn at random from
    /// this seed (up to `max_streams`, 4 when unlimited), respecting only the
    /// dependencies, with the signals they need.
    pub random: Option<u64>,
}

/// A signal of one schedule, numbered from 0 in the order of the nodes signalling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SignalId(pub usize);

impl fmt::Display for SignalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "s{}", self.0)
    }
}

/// One step of a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Run a node (a super node runs its sub-functions' schedules on this stream).
    Run(NodeId),
    /// Mark a signal as reached: everything before it on this stream is done.
    Signal(SignalId),
    /// Block until the signal is reached.
    Wait(SignalId),
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Run(n) => write!(f, "run {n}"),
            Step::Signal(s) => write!(f, "signal {s}"),
            Step::Wait(s) => write!(f, "wait {s}"),
        }
    }
}

/// The static schedule of one scope (the top level or one sub-function).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The scope: `None` for the top level.
    pub scope: Option<SubId>,
    /// Per stream, the ordered steps. Stream 0 is the stream the scope runs on.
    pub streams: Vec<Vec<Step>>,
    /// The rank (longest chain after it) of every scheduled node.
    pub rank: BTreeMap<NodeId, usize>,
    /// The stream of every scheduled node.
    pub stream_of: BTreeMap<NodeId, usize>,
    /// The transitively reduced dependency edges between scheduled nodes.
    pub edges: Vec<(NodeId, NodeId)>,
    /// How many signals the steps use.
    pub signal_count: usize,
    /// The schedules of the sub-functions of the scheduled super nodes.
    pub nested: BTreeMap<SubId, Schedule>,
}

impl Schedule {
    /// The scheduled nodes, in list order of the streams (stream 0 first).
    pub fn nodes(&self) -> Vec<NodeId> {
        self.streams
            .iter()
            .flatten()
            .filter_map(|s| match s {
                Step::Run(n) => Some(*n),
                _ => None,
            })
            .collect()
    }

    /// The most streams this schedule or any nested one uses.
    pub fn max_stream_count(&self) -> usize {
        self.nested
            .values()
            .map(Schedule::max_stream_count)
            .fold(self.streams.len(), usize::max)
    }
}

/// Why a graph cannot be scheduled.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ScheduleError {
    /// The graph has no definition hierarchy.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// `max_streams` is 0.
    #[error("a schedule needs at least one stream (max_streams is 0)")]
    NoStreams,
    /// A source or destination is not a schedulable node of the top level.
    #[error(
        "{0}: not a node of the graph's top level that runs (sources and destinations name calls, kernels or super nodes of the top level)"
    )]
    NotSchedulable(NodeId),
}

/// The static schedule of `graph` (module documentation).
pub fn schedule(graph: &Graph, options: &ScheduleOptions) -> Result<Schedule, ScheduleError> {
    if options.max_streams == Some(0) {
        return Err(ScheduleError::NoStreams);
    }
    let h = hierarchy(graph)?;
    let deps = dependencies(graph, &h);
    let scope = ScopeNodes::of(graph, &h.top);
    for &n in options.sources.iter().chain(&options.destinations) {
        if !scope.nodes.contains(&n) {
            return Err(ScheduleError::NotSchedulable(n));
        }
    }
    let ctx = Context {
        graph,
        deps: &deps,
        max_streams: options.max_streams,
    };
    Ok(ctx.scope(None, &scope, options))
}

/// The schedulable nodes of one scope, in list order, and the sub-functions of its
/// super nodes.
struct ScopeNodes<'h> {
    nodes: Vec<NodeId>,
    entries: &'h [Entry],
}

impl<'h> ScopeNodes<'h> {
    fn of(graph: &Graph, entries: &'h [Entry]) -> Self {
        let nodes = entries
            .iter()
            .map(|e| e.node)
            .filter(|&n| runs(graph, n))
            .collect();
        ScopeNodes { nodes, entries }
    }
}

/// True for the nodes a schedule runs: everything but Input and constant nodes.
fn runs(graph: &Graph, n: NodeId) -> bool {
    graph
        .node(n)
        .is_some_and(|node| !matches!(node.op, Op::Input { .. } | Op::Const(_)))
}

/// What a node runs, for the same-kernel preferences: a call's op, a kernel's member
/// ops, a super node's kind.
fn kernel_key(graph: &Graph, n: NodeId) -> String {
    match graph.node(n).map(|node| &node.op) {
        Some(Op::Call(c)) => c.op.clone(),
        Some(Op::Kernel(k)) => format!("kernel {}", k.ops.join("+")),
        Some(op) => op.kind().to_string(),
        None => String::new(),
    }
}

/// The dependencies of every scope: `u -> v` in the deepest scope where the two
/// nodes' enclosing definitions differ.
fn dependencies(graph: &Graph, h: &Hierarchy) -> HashMap<Option<SubId>, Vec<(NodeId, NodeId)>> {
    // Outermost first: (scope, the definition in that scope enclosing the node).
    let chain = |mut n: NodeId| {
        let mut out = Vec::new();
        for _ in 0..=graph.len() {
            let scope = h.scope_of(n).flatten();
            out.push((scope, n));
            match scope {
                Some(s) => n = s.super_node,
                None => break,
            }
        }
        out.reverse();
        out
    };
    let mut deps: HashMap<Option<SubId>, Vec<(NodeId, NodeId)>> = HashMap::new();
    for node in graph.nodes() {
        let reader = chain(node.id);
        for r in node.uses() {
            let used = chain(r.node);
            let common = reader
                .iter()
                .zip(&used)
                .take_while(|(a, b)| a.0 == b.0)
                .last();
            if let Some(((scope, v), (_, u))) = common
                && u != v
            {
                deps.entry(*scope).or_default().push((*u, *v));
            }
        }
    }
    deps
}

struct Context<'g> {
    graph: &'g Graph,
    deps: &'g HashMap<Option<SubId>, Vec<(NodeId, NodeId)>>,
    max_streams: Option<usize>,
}

impl Context<'_> {
    /// The schedule of one scope, with its nested schedules.
    fn scope(
        &self,
        scope: Option<SubId>,
        nodes: &ScopeNodes<'_>,
        options: &ScheduleOptions,
    ) -> Schedule {
        let index: HashMap<NodeId, usize> = nodes
            .nodes
            .iter()
            .enumerate()
            .map(|(i, &n)| (n, i))
            .collect();
        let edges: Vec<(usize, usize)> = self
            .deps
            .get(&scope)
            .into_iter()
            .flatten()
            .filter_map(|(u, v)| Some((*index.get(u)?, *index.get(v)?)))
            .collect();
        let full = reduction::Dag::new(nodes.nodes.len(), &edges);
        let keep = partial(&full, nodes, options);
        let ids: Vec<NodeId> = nodes
            .nodes
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(n, _)| *n)
            .collect();
        let mut renumber = vec![None; keep.len()];
        for (new, old) in keep
            .iter()
            .enumerate()
            .filter(|(_, k)| **k)
            .map(|(i, _)| i)
            .enumerate()
        {
            renumber[old] = Some(new);
        }
        let edges: Vec<(usize, usize)> = edges
            .iter()
            .filter_map(|&(u, v)| Some((renumber[u]?, renumber[v]?)))
            .collect();
        let dag = reduction::Dag::new(ids.len(), &edges);
        let reduced = dag.reduced();
        let rank = rank::ranks(&reduced);
        let kernel: Vec<String> = ids.iter().map(|&n| kernel_key(self.graph, n)).collect();
        let a = match options.random {
            Some(seed) => random::assign(ids.len(), self.max_streams.unwrap_or(4), seed),
            None => assignment::assign(&assignment::Problem {
                dag: &dag,
                reduced: &reduced,
                rank: &rank,
                kernel: &kernel,
                max_streams: self.max_streams,
            }),
        };
        let pred = reduction::predecessors(&reduced);
        let (streams, signal_count) = signals::steps(&pred, &a, &ids);
        let mut nested = BTreeMap::new();
        for e in nodes.entries {
            if !ids.contains(&e.node) {
                continue;
            }
            for sub in &e.subs {
                let inner = ScopeNodes::of(self.graph, &sub.nodes);
                let inner_options = ScheduleOptions {
                    random: options
                        .random
                        .map(|seed| random::nested_seed(seed, e.node.0 as usize, sub.branch)),
                    ..ScheduleOptions::default()
                };
                let s = self.scope(Some(sub.id()), &inner, &inner_options);
                nested.insert(sub.id(), s);
            }
        }
        Schedule {
            scope,
            streams,
            rank: ids.iter().copied().zip(rank.iter().copied()).collect(),
            stream_of: ids
                .iter()
                .copied()
                .zip(a.stream_of.iter().copied())
                .collect(),
            edges: reduced
                .iter()
                .enumerate()
                .flat_map(|(u, s)| s.iter().map(move |&v| (u, v)))
                .map(|(u, v)| (ids[u], ids[v]))
                .collect(),
            signal_count,
            nested,
        }
    }
}

/// Which nodes a partial schedule keeps: reachable from a source and reaching a
/// destination (everything when none are given).
fn partial(dag: &reduction::Dag, nodes: &ScopeNodes<'_>, options: &ScheduleOptions) -> Vec<bool> {
    let n = dag.len();
    let pick = |list: &[NodeId]| -> Vec<usize> {
        list.iter()
            .filter_map(|id| nodes.nodes.iter().position(|x| x == id))
            .collect()
    };
    let (sources, dests) = (pick(&options.sources), pick(&options.destinations));
    (0..n)
        .map(|x| {
            let from = options.sources.is_empty()
                || sources.iter().any(|&s| s == x || dag.reach[s].has(x));
            let to = options.destinations.is_empty()
                || dests.iter().any(|&d| d == x || dag.reach[x].has(d));
            from && to
        })
        .collect()
}
