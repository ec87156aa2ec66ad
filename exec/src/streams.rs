//! Running a body on several streams (DESIGN.md §18): its static schedule turned
//! into per-stream actions on step indexes ([`StreamPlan`]), run with the streams as
//! tasks of the runtime's pool ([`uop_runtime::run_streams`]: the kernels of each get
//! a share of the cores) and the signals as [`Event`]s.
//!
//! Each stream runs on a machine of its own (a fork sharing the store, the arena
//! and the caches) so that a `while`'s swapped slots, the `$params` and the
//! bindings stay per stream; a super node runs its sub-functions on its stream,
//! each with its own nested plan. A failing node cancels every event of the body so
//! that no stream waits forever; the error of the failing node first in list order
//! is the body's.

use std::collections::HashMap;
use std::sync::Mutex;

use uop_codegen::index::{Bindings, Expr};
use uop_graph::schedule::{Schedule, Step as Action};
use uop_graph::{Graph, GraphRunError, NodeId, ValueType};
use uop_runtime::Event;

use crate::GraphError;
use crate::build::{Body, Step, StepKind};
use crate::run::Machine;

/// What one stream does, by step index of its body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Act {
    /// Run the body's step with this index.
    Run(usize),
    /// Set event `k`.
    Signal(usize),
    /// Wait for event `k`.
    Wait(usize),
}

/// A body's schedule on two or more streams.
#[derive(Clone, Debug)]
pub(crate) struct StreamPlan {
    /// Its number among the executable's plans (the run-time choice of running the
    /// body in order, [`crate::memory::Layout::in_order`], is by this number).
    pub id: usize,
    /// Steps no schedule runs (Consts), run before the streams start.
    pub first: Vec<usize>,
    /// Per stream, its actions.
    pub streams: Vec<Vec<Act>>,
    /// The number of events.
    pub signals: usize,
}

impl StreamPlan {
    /// The plan of `steps` as `schedule` (their scope's) says; `None` when it uses one
    /// stream (the steps then run in order). Every step other than a Const must be
    /// scheduled exactly once.
    pub(crate) fn new(
        steps: &[Step],
        schedule: &Schedule,
        id: usize,
    ) -> Result<Option<StreamPlan>, GraphError> {
        if schedule.streams.len() < 2 {
            return Ok(None);
        }
        let index: HashMap<NodeId, usize> =
            steps.iter().enumerate().map(|(i, s)| (s.node, i)).collect();
        let mut scheduled = vec![false; steps.len()];
        let mut streams = Vec::with_capacity(schedule.streams.len());
        for stream in &schedule.streams {
            let mut acts = Vec::with_capacity(stream.len());
            for a in stream {
                acts.push(match *a {
                    Action::Run(n) => {
                        let i = *index.get(&n).ok_or_else(|| GraphError::Compile {
                            node: n,
                            message: "the schedule runs a node that is not in its scope".into(),
                        })?;
                        scheduled[i] = true;
                        Act::Run(i)
                    }
                    Action::Signal(s) => Act::Signal(s.0),
                    Action::Wait(s) => Act::Wait(s.0),
                });
            }
            streams.push(acts);
        }
        let mut first = Vec::new();
        for (i, s) in steps.iter().enumerate() {
            match (&s.kind, scheduled[i]) {
                (StepKind::Const(_), false) => first.push(i),
                (_, true) => {}
                (_, false) => {
                    return Err(GraphError::Compile {
                        node: s.node,
                        message: "the schedule does not run this node".into(),
                    });
                }
            }
        }
        Ok(Some(StreamPlan {
            id,
            first,
            streams,
            signals: schedule.signal_count,
        }))
    }
}

/// The most elements a body's steps may read and write in all for it to run in
/// order although its schedule has several streams: starting the streams' threads
/// and waking them costs microseconds (far more when the cores are busy), more
/// than such a body's whole run — a `while` over scalars would pay it on every
/// trip.
pub(crate) const SMALL_BODY: u64 = 1 << 12;

/// Whether a body with `steps` is worth running on several streams: unless all its
/// values have static sizes and its steps read and write at most [`SMALL_BODY`]
/// elements in all. A super node counts with what its sub-functions read and
/// write in one run of each (a nested loop's trip count is not known here: a
/// body of small loops runs in order); a `parallel` with a count known only at
/// run time, or a size known only at run time, keeps the streams.
pub(crate) fn worth_streams(graph: &Graph, steps: &[Step]) -> bool {
    small_work(graph, steps, 0, &|e: &Expr| e.as_int()).is_none()
}

/// [`worth_streams`] for the sizes of one run, its dims and params in `env`: a
/// body whose sizes are known only at run time runs in order when small for them.
pub(crate) fn worth_streams_at(graph: &Graph, steps: &[Step], env: &Bindings) -> bool {
    small_work(graph, steps, 0, &|e: &Expr| e.eval(env).ok()).is_none()
}

/// Which of the bodies with a stream plan under `top` run in order for the run whose
/// dims and params are `env` (by plan number, `plans` of them): those small for its
/// sizes ([`worth_streams_at`]).
pub(crate) fn bodies_in_order(
    graph: &Graph,
    top: &Body,
    plans: usize,
    env: &Bindings,
) -> Vec<bool> {
    let mut in_order = vec![false; plans];
    mark_in_order(graph, top, env, &mut in_order);
    in_order
}

fn mark_in_order(graph: &Graph, body: &Body, env: &Bindings, in_order: &mut [bool]) {
    if let Some(plan) = &body.plan
        && let Some(mark) = in_order.get_mut(plan.id)
    {
        *mark = !worth_streams_at(graph, &body.steps, env);
    }
    for step in &body.steps {
        match &step.kind {
            StepKind::While { cond, body, .. } => {
                mark_in_order(graph, cond, env, in_order);
                mark_in_order(graph, body, env, in_order);
            }
            StepKind::If { then, else_ } => {
                mark_in_order(graph, then, env, in_order);
                mark_in_order(graph, else_, env, in_order);
            }
            StepKind::Case { branches, .. } => {
                for b in branches {
                    mark_in_order(graph, b, env, in_order);
                }
            }
            StepKind::Parallel { body, .. } | StepKind::NoInline(body) => {
                mark_in_order(graph, body, env, in_order);
            }
            _ => {}
        }
    }
}

/// `so_far` plus the elements `steps` read and write, while at most [`SMALL_BODY`];
/// `None` past it or when not known (`size` gives a dim's or count's value, if
/// known).
fn small_work(
    graph: &Graph,
    steps: &[Step],
    so_far: u64,
    size: &dyn Fn(&Expr) -> Option<i64>,
) -> Option<u64> {
    let elements = |t: &ValueType| {
        t.shape
            .iter()
            .try_fold(1_u64, |n, d| n.checked_mul(u64::try_from(size(d)?).ok()?))
    };
    let mut total = so_far;
    for step in steps {
        let node = graph.node(step.node)?;
        let read = node.inputs.iter().map(|r| graph.type_of(*r));
        for t in read.chain(node.outputs.iter().map(Some)) {
            total = total.checked_add(elements(t?)?)?;
        }
        total = match &step.kind {
            StepKind::While { cond, body, .. } => {
                let t = small_work(graph, &cond.steps, total, size)?;
                small_work(graph, &body.steps, t, size)?
            }
            StepKind::If { then, else_ } => {
                let t = small_work(graph, &then.steps, total, size)?;
                small_work(graph, &else_.steps, t, size)?
            }
            StepKind::Case { branches, .. } => branches
                .iter()
                .try_fold(total, |t, b| small_work(graph, &b.steps, t, size))?,
            StepKind::NoInline(body) => small_work(graph, &body.steps, total, size)?,
            StepKind::Parallel { count, body, .. } | StepKind::Scan { count, body, .. } => {
                let once = small_work(graph, &body.steps, 0, size)?;
                let n = u64::try_from(size(count)?).ok()?;
                total.checked_add(once.checked_mul(n)?)?
            }
            _ => total,
        };
        if total > SMALL_BODY {
            return None;
        }
    }
    Some(total)
}

impl Machine<'_> {
    /// Runs a body's steps: in order, or on its streams when it has a plan and is
    /// not small for this run's sizes.
    pub(crate) fn run_body(&mut self, body: &Body) -> Result<(), GraphRunError> {
        match &body.plan {
            Some(plan) if !self.mem.in_order(plan.id) => self.streams(&body.steps, plan),
            _ => self.steps(&body.steps),
        }
    }

    fn streams(&mut self, steps: &[Step], plan: &StreamPlan) -> Result<(), GraphRunError> {
        for &i in &plan.first {
            self.steps(&steps[i..=i])?;
        }
        let events: Vec<Event> = (0..plan.signals).map(|_| Event::new()).collect();
        let failed: Mutex<Vec<(usize, GraphRunError)>> = Mutex::new(Vec::new());
        let template = &*self;
        uop_runtime::run_streams(plan.streams.len(), |t| {
            let mut m = template.fork();
            for act in &plan.streams[t] {
                match *act {
                    Act::Wait(k) => {
                        if !events[k].wait() {
                            return;
                        }
                    }
                    Act::Signal(k) => events[k].set(),
                    Act::Run(i) => {
                        if let Err(e) = m.steps(&steps[i..=i]) {
                            failed
                                .lock()
                                .unwrap_or_else(|e| e.into_inner())
                                .push((i, e));
                            events.iter().for_each(Event::cancel);
                            return;
                        }
                    }
                }
            }
        });
        let failed = failed.into_inner().unwrap_or_else(|e| e.into_inner());
        match failed.into_iter().min_by_key(|(i, _)| *i) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}
