//! Lifetimes and sharing, before any size is known: which values live in the arena,
//! the steps each one is live, and the **groups** of values that share one slot
//! (in-place kernels, a `while`'s carried state, sub-function results written into
//! their super node's output). The rules are in `docs/graph-memory.md`; in short:
//!
//! - arena values: the outputs of Call, Kernel, Chunk and super nodes, and the
//!   parameters of `while` sub-functions (the carried state), except the graph's
//!   outputs; the graph's inputs, Consts, and the parameters of `if` / `case` /
//!   `call` / `parallel` / `scan` (their arguments' buffers; a `scan`'s state and
//!   slices are buffers of the executor's own) are not in the arena;
//! - a value is live from the step it is written to its last read, a read inside a
//!   sub-function counting at the end of the super node that holds it (bodies are
//!   nested regions, and may run many times);
//! - a group is live from its first member's definition to its last member's last
//!   read; groups that are live at one step never share bytes.

use std::collections::{BTreeMap, HashMap};

use crate::hierarchy::{Entry, Hierarchy, SubId};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source, ValueType};
use crate::kernels::{OpClass, classify_program};

use super::concurrency;
use super::timeline::Timeline;
use crate::schedule::StreamOrder;

/// One arena value.
#[derive(Clone, Debug)]
pub(crate) struct Value {
    /// Its type.
    pub ty: ValueType,
    /// Where it is defined (`None`: the top level).
    pub scope: Option<SubId>,
    /// The step it is written.
    pub start: usize,
    /// The step of its last read (its start when nothing reads it).
    pub end: usize,
    /// The steps it is read at (a read inside a sub-function counting at the end of
    /// the super node holding it).
    pub reads: Vec<usize>,
}

impl Value {
    /// The steps it is written and read at.
    pub fn accesses(&self) -> impl Iterator<Item = usize> + '_ {
        std::iter::once(self.start).chain(self.reads.iter().copied())
    }
}

/// Values sharing one slot.
#[derive(Clone, Debug)]
pub(crate) struct Group {
    /// The values, in the order they joined.
    pub members: Vec<Ref>,
    /// First step the slot is needed.
    pub start: usize,
    /// Last step the slot is needed.
    pub end: usize,
    /// The latest end of a member (without reservations).
    last_end: usize,
    /// No in-place kernel may take the slot up to this step (a `while`'s state).
    pinned_until: Option<usize>,
    /// A value the slot must hold besides its members (a `while`'s state: the
    /// output and its type, whether or not the output is in the arena).
    pub reserve: Option<(Ref, ValueType)>,
}

/// How one state value of a `while` is carried from one iteration to the next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// One slot: the body's result is written where its parameter was.
    InPlace,
    /// Two slots, swapped every iteration.
    Alternate,
}

/// The lifetimes and groups of a graph.
#[derive(Clone, Debug)]
pub(crate) struct Analysis {
    /// The steps.
    pub timeline: Timeline,
    /// Every arena value.
    pub values: BTreeMap<Ref, Value>,
    /// The groups; every arena value is in exactly one.
    pub groups: Vec<Group>,
    /// The group of each arena value.
    pub group_of: HashMap<Ref, usize>,
    /// Kernel outputs written over an input that dies there: output → input.
    pub in_place: BTreeMap<Ref, Ref>,
    /// Sub-function results written straight into their super node's output:
    /// result → output.
    pub results: BTreeMap<Ref, Ref>,
    /// Per `while`, per state value: the mode and the groups of its slots (one for
    /// [`Mode::InPlace`], the parameters' then the results' for [`Mode::Alternate`]).
    pub carried: BTreeMap<NodeId, Vec<(Mode, usize, usize)>>,
}

/// Where a value defined by a node goes instead of a group of its own.
#[derive(Clone, Copy, Debug)]
enum Join {
    /// Into the group of the super node output.
    Output(Ref),
    /// Into slot `which` (0 parameters, 1 results) of state `k` of a `while`.
    State(NodeId, usize, usize),
}

/// The analysis of `graph` with hierarchy `h` (see the module docs), for one stream
/// running the steps in order (`order` is `None`) or for a schedule's order on each
/// scope (`concurrency`). With `in_place` false no kernel writes over an input (no
/// in-place pair, and a `while` state shares its slot with the body's result only
/// when the parameter is dead before the result is written).
pub(crate) fn analyze(
    graph: &Graph,
    h: &Hierarchy,
    order: Option<StreamOrder>,
    in_place: bool,
) -> Analysis {
    let mut timeline = Timeline::new(graph, h);
    timeline.order = order.map(|o| concurrency::StepOrder::new(&timeline, o));
    let outputs: Vec<Ref> = graph
        .interface
        .outputs
        .iter()
        .filter_map(Source::as_ref)
        .collect();
    let mut values = arena_values(graph, &timeline, &outputs);
    read_steps(graph, &timeline, &mut values);
    concurrency::extend(&timeline, values.values_mut());
    let mut a = Analysis {
        timeline,
        values,
        groups: Vec::new(),
        group_of: HashMap::new(),
        in_place: BTreeMap::new(),
        results: BTreeMap::new(),
        carried: BTreeMap::new(),
    };
    let mut cx = Sweep {
        graph,
        in_place,
        joins: HashMap::new(),
        modes: HashMap::new(),
        classes: HashMap::new(),
    };
    cx.decide(&a);
    cx.entries(&mut a, &h.top);
    a
}

/// The arena values with their definition steps (ends set to their starts, or to
/// the end of the construct for super nodes' outputs).
fn arena_values(graph: &Graph, t: &Timeline, outputs: &[Ref]) -> BTreeMap<Ref, Value> {
    let mut values = BTreeMap::new();
    let mut add = |r: Ref, ty: &ValueType, scope: Option<SubId>, (start, end): (usize, usize)| {
        if !outputs.contains(&r) {
            values.insert(
                r,
                Value {
                    ty: ty.clone(),
                    scope,
                    start,
                    end,
                    reads: Vec::new(),
                },
            );
        }
    };
    for n in graph.nodes() {
        let scope = t.placement.get(&n.id).copied().flatten();
        match &n.op {
            Op::Call(_) | Op::Kernel(_) | Op::Chunk { .. } | Op::SumChunks => {
                for (k, ty) in n.outputs.iter().enumerate() {
                    add(n.output(k), ty, scope, (t.step(n.id), t.step(n.id)));
                }
            }
            Op::While { cond, body } => {
                for (k, ty) in n.outputs.iter().enumerate() {
                    add(n.output(k), ty, scope, (t.end_of(n.id), t.end_of(n.id)));
                }
                for (b, i) in [cond, body].into_iter().enumerate() {
                    let Some(input) = graph.node(i.input) else {
                        continue;
                    };
                    let sub = Some(SubId {
                        super_node: n.id,
                        branch: b,
                    });
                    for (k, ty) in input.outputs.iter().enumerate() {
                        add(input.output(k), ty, sub, (t.step(n.id), t.step(n.id)));
                    }
                }
            }
            Op::If { .. }
            | Op::Case { .. }
            | Op::Parallel { .. }
            | Op::Scan { .. }
            | Op::NoInline { .. } => {
                // Reserved for the whole construct: the bodies' results are written
                // into it (a `parallel` or `scan` row by row).
                for (k, ty) in n.outputs.iter().enumerate() {
                    add(n.output(k), ty, scope, (t.step(n.id), t.end_of(n.id)));
                }
            }
            Op::Input { .. } | Op::Const(_) | Op::Sink => {}
        }
    }
    values
}

/// Sets each value's end to the step of its last read.
fn read_steps(graph: &Graph, t: &Timeline, values: &mut BTreeMap<Ref, Value>) {
    let mut read = |r: Ref, at: Option<SubId>, step: usize| {
        if let Some(v) = values.get_mut(&r) {
            let s = t.use_step(v.scope, at, step);
            v.end = v.end.max(s);
            v.reads.push(s);
        }
    };
    for n in graph.nodes() {
        let at = t.placement.get(&n.id).copied().flatten();
        for (k, r) in n.inputs.iter().enumerate() {
            match &n.op {
                // A Sink keeps its tensors to the end of the graph.
                Op::Sink => read(*r, None, t.last()),
                op if op.is_super() => read(*r, at, t.super_input_step(op, n.id, k)),
                _ => read(*r, at, t.step(n.id)),
            }
        }
        for (b, i) in n.op.interfaces().into_iter().enumerate() {
            let sub = SubId {
                super_node: n.id,
                branch: b,
            };
            let exit = t.exit.get(&sub).copied().unwrap_or_else(|| t.end_of(n.id));
            for r in i.outputs.iter().filter_map(Source::as_ref) {
                read(r, Some(sub), exit);
            }
        }
    }
}

/// The state of the sweep that forms the groups.
struct Sweep<'g> {
    graph: &'g Graph,
    /// Whether a kernel may write over an input ([`Sweep::may_overwrite`]).
    in_place: bool,
    /// Values that join another group than their own.
    joins: HashMap<Ref, Join>,
    /// The mode of each `while` state value.
    modes: HashMap<(NodeId, usize), Mode>,
    /// Kernel nodes' classes (cached).
    classes: HashMap<NodeId, OpClass>,
}

impl Sweep<'_> {
    /// The class of a Kernel node (Opaque for other nodes).
    fn class(&mut self, n: &Node) -> OpClass {
        let Op::Kernel(k) = &n.op else {
            return OpClass::Opaque;
        };
        *self
            .classes
            .entry(n.id)
            .or_insert_with(|| classify_program(&k.program))
    }

    /// True when node `n` may write its output over its input `input`: a Kernel with
    /// one output whose program is element-wise, the input of the output's type;
    /// never when the sweep's in-place rule is off.
    fn may_overwrite(&mut self, a: &Analysis, n: &Node, input: Ref) -> bool {
        self.in_place
            && n.outputs.len() == 1
            && n.inputs.contains(&input)
            && a.values.get(&input).is_some_and(|v| v.ty == n.outputs[0])
            && self.class(n) == OpClass::ElementWise
    }

    /// True when `r` is written by a Call or Kernel placed directly in `sub` and
    /// returned only once by `interface_outputs`.
    fn own_result(&self, a: &Analysis, r: Ref, sub: SubId, interface_outputs: &[Source]) -> bool {
        let direct = a.timeline.placement.get(&r.node).copied().flatten() == Some(sub);
        let computed = self
            .graph
            .node(r.node)
            .is_some_and(|n| matches!(n.op, Op::Call(_) | Op::Kernel(_)));
        let once = interface_outputs
            .iter()
            .filter(|s| s.as_ref() == Some(r))
            .count()
            == 1;
        direct && computed && once && a.values.contains_key(&r)
    }

    /// Decides the `while` modes and the results that join a super node's output.
    fn decide(&mut self, a: &Analysis) {
        let graph = self.graph;
        for n in graph.nodes() {
            match &n.op {
                Op::While { body, .. } => {
                    let sub = SubId {
                        super_node: n.id,
                        branch: 1,
                    };
                    for (k, src) in body.outputs.iter().enumerate() {
                        let param = Ref::new(body.input, k);
                        let mode = match src.as_ref() {
                            Some(r) if r == param => Mode::InPlace,
                            Some(r) if self.own_result(a, r, sub, &body.outputs) => {
                                let def = a.values[&r].start;
                                let last = a.values.get(&param).map_or(0, |v| v.end);
                                let writer = graph.node(r.node);
                                let ordered = a
                                    .values
                                    .get(&param)
                                    .is_none_or(|p| a.timeline.done_before(p, def));
                                let fits = ordered
                                    && (last < def
                                        || (last == def
                                            && writer
                                                .is_some_and(|w| self.may_overwrite(a, w, param))));
                                let (mode, which) = if fits {
                                    (Mode::InPlace, 0)
                                } else {
                                    (Mode::Alternate, 1)
                                };
                                self.joins.insert(r, Join::State(n.id, k, which));
                                mode
                            }
                            _ => Mode::Alternate,
                        };
                        self.modes.insert((n.id, k), mode);
                    }
                }
                Op::If { .. } | Op::Case { .. } | Op::NoInline { .. } => {
                    for (b, i) in n.op.interfaces().into_iter().enumerate() {
                        let sub = SubId {
                            super_node: n.id,
                            branch: b,
                        };
                        for (k, src) in i.outputs.iter().enumerate() {
                            let out = n.output(k);
                            if let Some(r) = src.as_ref()
                                && a.values.contains_key(&out)
                                && self.own_result(a, r, sub, &i.outputs)
                            {
                                self.joins.insert(r, Join::Output(out));
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn entries(&mut self, a: &mut Analysis, entries: &[Entry]) {
        for e in entries {
            let Some(n) = self.graph.node(e.node) else {
                continue;
            };
            match &n.op {
                Op::While { .. } => self.while_loop(a, n, e),
                op if op.is_super() => {
                    for k in 0..n.outputs.len() {
                        new_group(a, n.output(k));
                    }
                    for sub in &e.subs {
                        self.entries(a, &sub.nodes);
                    }
                }
                _ => {
                    for k in 0..n.outputs.len() {
                        self.define(a, n, n.output(k));
                    }
                }
            }
        }
    }

    /// Places output `v` of a Call, Kernel or Chunk node `n`.
    fn define(&mut self, a: &mut Analysis, n: &Node, v: Ref) {
        if !a.values.contains_key(&v) {
            return;
        }
        match self.joins.get(&v).copied() {
            Some(Join::Output(out)) => {
                if let Some(&g) = a.group_of.get(&out) {
                    join(a, g, v);
                    a.results.insert(v, out);
                    return;
                }
            }
            Some(Join::State(w, k, which)) => {
                if let Some(&(_, g0, g1)) = a.carried.get(&w).and_then(|c| c.get(k)) {
                    join(a, if which == 0 { g0 } else { g1 }, v);
                    return;
                }
            }
            None => {}
        }
        let step = a.timeline.step(n.id);
        for &u in &n.inputs {
            let Some(&g) = a.group_of.get(&u) else {
                continue;
            };
            let group = &a.groups[g];
            let free = a.values[&u].end == step
                && group.last_end == step
                && group.pinned_until.is_none_or(|p| step > p)
                && group
                    .members
                    .iter()
                    .all(|m| a.timeline.done_before(&a.values[m], step));
            if free && self.may_overwrite(a, n, u) {
                join(a, g, v);
                a.in_place.insert(v, u);
                return;
            }
        }
        new_group(a, v);
    }

    /// The state groups of `while` node `w`, its sub-functions, and its outputs.
    fn while_loop(&mut self, a: &mut Analysis, w: &Node, e: &Entry) {
        let Op::While { cond, body } = &w.op else {
            return;
        };
        let start = a.timeline.step(w.id);
        // The state slots stay reserved while a node on another stream may still
        // run at the same time as the loop.
        let end = concurrency::extended_end(&a.timeline, &[start], a.timeline.end_of(w.id));
        let mut carried = Vec::new();
        for k in 0..w.outputs.len() {
            let mode = self
                .modes
                .get(&(w.id, k))
                .copied()
                .unwrap_or(Mode::Alternate);
            // The initial value's slot becomes the state's when the initial value
            // dies here.
            let init = w.inputs.get(k).copied();
            let reuse = init.and_then(|u| {
                let g = *a.group_of.get(&u)?;
                let group = &a.groups[g];
                let once = w.inputs.iter().filter(|r| **r == u).count() == 1;
                let dies = a.values[&u].end == start
                    && group.last_end == start
                    && group.pinned_until.is_none_or(|p| start > p)
                    && group
                        .members
                        .iter()
                        .all(|m| a.timeline.done_before(&a.values[m], start));
                (once && dies && a.values[&u].ty == w.outputs[k]).then_some(g)
            });
            let g0 = reuse.unwrap_or_else(|| empty_group(a, start));
            let g1 = match mode {
                Mode::InPlace => g0,
                Mode::Alternate => empty_group(a, start),
            };
            for g in [g0, g1] {
                let group = &mut a.groups[g];
                group.start = group.start.min(start);
                group.end = group.end.max(end);
                group.last_end = group.last_end.max(end);
                group.pinned_until = Some(end);
                group.reserve = Some((w.output(k), w.outputs[k].clone()));
            }
            for i in [cond, body] {
                let p = Ref::new(i.input, k);
                if a.values.contains_key(&p) {
                    join(a, g0, p);
                }
            }
            carried.push((mode, g0, g1));
        }
        a.carried.insert(w.id, carried);
        for sub in &e.subs {
            self.entries(a, &sub.nodes);
        }
        for (k, &(_, g0, _)) in a.carried[&w.id].clone().iter().enumerate() {
            let out = w.output(k);
            if a.values.contains_key(&out) {
                join(a, g0, out);
            }
        }
    }
}

/// A group of its own for `v` (when it is an arena value).
fn new_group(a: &mut Analysis, v: Ref) {
    if let Some(val) = a.values.get(&v) {
        let g = a.groups.len();
        a.groups.push(Group {
            members: vec![v],
            start: val.start,
            end: val.end,
            last_end: val.end,
            pinned_until: None,
            reserve: None,
        });
        a.group_of.insert(v, g);
    }
}

/// A group without members yet, live from `start`.
fn empty_group(a: &mut Analysis, start: usize) -> usize {
    a.groups.push(Group {
        members: Vec::new(),
        start,
        end: start,
        last_end: start,
        pinned_until: None,
        reserve: None,
    });
    a.groups.len() - 1
}

/// Adds `v` to group `g`.
fn join(a: &mut Analysis, g: usize, v: Ref) {
    let val = &a.values[&v];
    let group = &mut a.groups[g];
    group.members.push(v);
    group.start = group.start.min(val.start);
    group.end = group.end.max(val.end);
    group.last_end = group.last_end.max(val.end);
    a.group_of.insert(v, g);
}
