//! What a schedule orders: the simulation of its streams (vector clocks along the
//! steps) and, from it, whether one node of a scope is always done before another
//! begins ([`StreamOrder::before`]). The checker ([`check`](super::check)) and the memory
//! plan (a buffer's bytes are reused only by a node ordered after every reader of
//! the old value) both ask it.

use std::collections::{BTreeMap, HashMap};

use super::{Schedule, SignalId, Step};
use crate::hierarchy::SubId;
use crate::ir::NodeId;

/// One scope's streams simulated: where each node runs and, per step, how many
/// steps of each stream are known to be done when it begins.
#[derive(Clone, Debug, Default)]
pub(crate) struct Simulation {
    /// Per (stream, step index): the vector clock after the step.
    pub clock_at: BTreeMap<(usize, usize), Vec<usize>>,
    /// The (stream, step index) of each node's run.
    pub run_at: HashMap<NodeId, (usize, usize)>,
    /// Each stream's clock at its end.
    pub clock: Vec<Vec<usize>>,
}

impl Simulation {
    /// Advances every stream as far as its waits allow until all are done; the
    /// streams' next steps when none can advance (a deadlock).
    #[allow(clippy::needless_range_loop)] // `t` indexes three per-stream tables
    pub(crate) fn run(s: &Schedule) -> Result<Simulation, Vec<(usize, Step)>> {
        let count = s.streams.len();
        let mut sim = Simulation {
            clock: vec![vec![0; count]; count],
            ..Simulation::default()
        };
        let mut signal_clock: HashMap<SignalId, Vec<usize>> = HashMap::new();
        let mut at = vec![0; count];
        loop {
            let mut moved = false;
            for t in 0..count {
                while let Some(&step) = s.streams[t].get(at[t]) {
                    if let Step::Wait(g) = step {
                        let Some(c) = signal_clock.get(&g) else { break };
                        let c = c.clone();
                        for (k, v) in sim.clock[t].iter_mut().enumerate() {
                            *v = (*v).max(c[k]);
                        }
                    }
                    at[t] += 1;
                    sim.clock[t][t] = at[t];
                    match step {
                        Step::Signal(g) => {
                            signal_clock.insert(g, sim.clock[t].clone());
                        }
                        Step::Run(n) => {
                            sim.run_at.entry(n).or_insert((t, at[t] - 1));
                        }
                        Step::Wait(_) => {}
                    }
                    sim.clock_at.insert((t, at[t] - 1), sim.clock[t].clone());
                    moved = true;
                }
            }
            if at.iter().zip(&s.streams).all(|(a, st)| *a == st.len()) {
                return Ok(sim);
            }
            if !moved {
                return Err((0..count)
                    .filter_map(|t| s.streams[t].get(at[t]).map(|st| (t, *st)))
                    .collect());
            }
        }
    }

    /// True when `u` is done before `v` begins in every run: earlier on the same
    /// stream, or seen by `v`'s clock through signals. False when either does not run.
    pub(crate) fn before(&self, u: NodeId, v: NodeId) -> bool {
        let (Some(&(tu, iu)), Some(&(tv, iv))) = (self.run_at.get(&u), self.run_at.get(&v)) else {
            return false;
        };
        if tu == tv {
            iu < iv
        } else {
            self.clock_at[&(tv, iv)][tu] > iu
        }
    }
}

/// The order a schedule (with its nested schedules) puts on the nodes of each
/// scope.
#[derive(Clone, Debug, Default)]
pub struct StreamOrder {
    scopes: HashMap<Option<SubId>, Simulation>,
}

impl StreamOrder {
    /// The order of `schedule` and its nested schedules. A scope whose streams
    /// deadlock orders nothing.
    pub fn new(schedule: &Schedule) -> StreamOrder {
        let mut order = StreamOrder::default();
        order.add(schedule);
        order
    }

    fn add(&mut self, s: &Schedule) {
        self.scopes
            .insert(s.scope, Simulation::run(s).unwrap_or_default());
        for nested in s.nested.values() {
            self.add(nested);
        }
    }

    /// The simulation of each scope's schedule.
    pub(crate) fn simulations(&self) -> impl Iterator<Item = (Option<SubId>, &Simulation)> {
        self.scopes.iter().map(|(scope, sim)| (*scope, sim))
    }

    /// The simulation of `scope`'s schedule.
    pub(crate) fn simulation(&self, scope: Option<SubId>) -> Option<&Simulation> {
        self.scopes.get(&scope)
    }

    /// True when the schedule of `scope` scheduled `node`.
    pub fn runs(&self, scope: Option<SubId>, node: NodeId) -> bool {
        self.scopes
            .get(&scope)
            .is_some_and(|s| s.run_at.contains_key(&node))
    }

    /// True when node `u` of `scope` is always done before node `v` of `scope`
    /// begins (false for `u == v`, or a node the scope's schedule does not run).
    pub fn before(&self, scope: Option<SubId>, u: NodeId, v: NodeId) -> bool {
        self.scopes.get(&scope).is_some_and(|s| s.before(u, v))
    }
}
