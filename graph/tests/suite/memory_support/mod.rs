//! Checks of a memory plan that do not trust the planner's own lifetimes:
//!
//! - [`replay`]: the graph runs on the interpreter, then its execution is replayed on
//!   an arena of byte tags laid out as the plan says — every write tags its bytes,
//!   every read checks that the bytes still carry the tag of the value read — with
//!   the `while` state carried as [`Carried`] says (odd iterations of an alternating
//!   state swap its two slots), `if` / `case` branches and trip counts as the run
//!   took them, sub-function results copied unless the plan writes them in place;
//! - [`check_shape`]: every intermediate has a slot inside the arena at an aligned
//!   offset; values whose lifetimes overlap share bytes only through the plan's
//!   explicit aliasing (in-place kernels, results, carried state); in-place kernels
//!   are element-wise with one output of the input's type; arena ≥ lower bound.
#![allow(dead_code)]

use std::collections::HashMap;

use uop_codegen::tensor::Tensor;
use uop_graph::hierarchy::{Entry, hierarchy};
use uop_graph::kernels::{OpClass, classify_program};
use uop_graph::memory::{ALIGN, Carried, MemoryPlan};
use uop_graph::{Graph, Node, Op, Ref, RunOptions, Source, run_with};

/// Where a value's bytes are and the write that put them there.
#[derive(Clone, Copy, Debug)]
struct Bound {
    offset: usize,
    bytes: usize,
    write: u64,
}

struct Replay<'a> {
    graph: &'a Graph,
    plan: &'a MemoryPlan,
    tags: Vec<u64>,
    writes: u64,
    bound: HashMap<Ref, Bound>,
    /// Per-run position in the trace's lists.
    trips: HashMap<uop_graph::NodeId, std::vec::IntoIter<u64>>,
    branches: HashMap<uop_graph::NodeId, std::vec::IntoIter<i64>>,
    /// Slot overrides while an odd iteration of an alternating state runs.
    moved: HashMap<Ref, usize>,
}

/// Replays `graph` run on `inputs` (with `dims` as params) on the plan's arena;
/// `Err` names the first value read after its bytes were overwritten.
pub fn replay(
    graph: &Graph,
    plan: &MemoryPlan,
    inputs: &[Tensor],
    dims: &HashMap<String, i64>,
) -> Result<(), String> {
    let options = RunOptions {
        max_iterations: Some(1000),
    };
    let run = run_with(graph, inputs, dims, &options).map_err(|e| format!("run: {e}"))?;
    let h = hierarchy(graph).map_err(|e| e.to_string())?;
    let mut r = Replay {
        graph,
        plan,
        tags: vec![0; plan.arena_bytes],
        writes: 0,
        bound: HashMap::new(),
        trips: run
            .trace
            .trips
            .into_iter()
            .map(|(k, v)| (k, v.into_iter()))
            .collect(),
        branches: run
            .trace
            .branches
            .into_iter()
            .map(|(k, v)| (k, v.into_iter()))
            .collect(),
        moved: HashMap::new(),
    };
    r.entries(&h.top, dims)?;
    // Sinks keep their tensors to the end.
    for n in graph.nodes() {
        if matches!(n.op, Op::Sink) {
            for i in &n.inputs {
                r.read(*i, "the end of the graph")?;
            }
        }
    }
    Ok(())
}

impl Replay<'_> {
    fn node(&self, id: uop_graph::NodeId) -> &Node {
        self.graph.node(id).expect("node")
    }

    /// Writes `v` at its slot (or where an odd iteration moved it).
    fn write(&mut self, v: Ref) -> Result<(), String> {
        let Some(slot) = self.plan.slots.get(&v) else {
            return Ok(());
        };
        let offset = self.moved.get(&v).copied().unwrap_or(slot.offset);
        self.write_at(v, offset, slot.bytes)
    }

    fn write_at(&mut self, v: Ref, offset: usize, bytes: usize) -> Result<(), String> {
        if offset + bytes > self.tags.len() {
            return Err(format!(
                "{v} at {offset}+{bytes} is outside the arena of {}",
                self.tags.len()
            ));
        }
        self.writes += 1;
        self.tags[offset..offset + bytes].fill(self.writes);
        self.bound.insert(
            v,
            Bound {
                offset,
                bytes,
                write: self.writes,
            },
        );
        Ok(())
    }

    /// Checks that `v`'s bytes are still the ones written for it.
    fn read(&self, v: Ref, reader: &str) -> Result<(), String> {
        let Some(b) = self.bound.get(&v) else {
            if self.plan.slots.contains_key(&v) {
                return Err(format!("{reader} reads {v}, which was never written"));
            }
            return Ok(()); // an input, a Const or a graph output: not in the arena
        };
        let bytes = &self.tags[b.offset..b.offset + b.bytes];
        if let Some(p) = bytes.iter().position(|t| *t != b.write) {
            return Err(format!(
                "{reader} reads {v} (at {}, {} bytes), but byte {} was overwritten",
                b.offset,
                b.bytes,
                b.offset + p
            ));
        }
        Ok(())
    }

    fn source(&self, s: &Source, reader: &str) -> Result<(), String> {
        match s {
            Source::Ref(r) => self.read(*r, reader),
            Source::Scalar(_) => Ok(()),
        }
    }

    /// Binds a parameter to the buffer of an argument (if/case/call/parallel).
    fn alias(&mut self, param: Ref, arg: Ref) {
        match self.bound.get(&arg).copied() {
            Some(b) => {
                self.bound.insert(param, b);
            }
            None => {
                self.bound.remove(&param);
            }
        }
    }

    /// The result `src` of a body becomes output `out`: no copy when the plan wrote
    /// it in place, else read and copied.
    fn result(&mut self, src: &Source, out: Ref, reader: &str) -> Result<(), String> {
        self.source(src, reader)?;
        if let Source::Ref(r) = src
            && self.plan.results.get(r) == Some(&out)
        {
            let b = self.bound[r];
            let slot = self.plan.slots[&out];
            if b.offset != slot.offset {
                return Err(format!("{r} is a result into {out} but is not at its slot"));
            }
            self.bound.insert(out, b);
            return Ok(());
        }
        self.write(out)
    }

    fn entries(&mut self, entries: &[Entry], dims: &HashMap<String, i64>) -> Result<(), String> {
        for e in entries {
            let n = self.node(e.node).clone();
            let me = format!("{}", n.id);
            match &n.op {
                Op::Input { .. } | Op::Const(_) => {}
                Op::Call(_) | Op::Kernel(_) | Op::Chunk { .. } | Op::SumChunks => {
                    for i in &n.inputs {
                        self.read(*i, &me)?;
                    }
                    for k in 0..n.outputs.len() {
                        self.write(n.output(k))?;
                    }
                }
                Op::Sink => {}
                Op::While { cond, body } => self.while_loop(&n, e, cond, body, dims)?,
                Op::If { .. } | Op::Case { .. } | Op::NoInline { .. } => {
                    let args = match &n.op {
                        Op::NoInline { .. } => &n.inputs[..],
                        _ => &n.inputs[1..],
                    };
                    for i in &n.inputs {
                        self.read(*i, &me)?;
                    }
                    let taken = match &n.op {
                        Op::NoInline { .. } => 0,
                        _ => self
                            .branches
                            .get_mut(&n.id)
                            .and_then(Iterator::next)
                            .ok_or("the trace has no branch")?,
                    };
                    let interfaces = n.op.interfaces();
                    if taken < 0 {
                        for (k, a) in args.iter().enumerate() {
                            self.read(*a, &me)?;
                            self.write(n.output(k))?;
                        }
                        continue;
                    }
                    let sub = &e.subs[taken as usize];
                    let i = interfaces[taken as usize];
                    for (k, a) in args.iter().enumerate() {
                        self.alias(Ref::new(i.input, k), *a);
                    }
                    self.entries(&sub.nodes, dims)?;
                    for (k, src) in i.outputs.iter().enumerate() {
                        self.result(src, n.output(k), &format!("the return of {me}"))?;
                    }
                }
                Op::Scan {
                    count,
                    carried,
                    body,
                    ..
                } => self.scan(&n, e, (count, *carried, body), dims)?,
                Op::Parallel { count, body, .. } => {
                    let b = uop_codegen::index::Bindings {
                        names: dims.clone(),
                        params: dims.clone(),
                        ..Default::default()
                    };
                    let count = count.eval(&b).map_err(|e| e.to_string())?;
                    for i in &n.inputs {
                        self.read(*i, &me)?;
                    }
                    for it in 0..count {
                        for (k, a) in n.inputs.iter().enumerate() {
                            self.alias(Ref::new(body.input, k + 1), *a);
                        }
                        self.entries(&e.subs[0].nodes, dims)?;
                        for (k, src) in body.outputs.iter().enumerate() {
                            self.source(src, &format!("the return of {me}"))?;
                            // Row `it` of the output: earlier rows must have survived.
                            if it > 0 {
                                self.read(n.output(k), &format!("row {it} of {me}"))?;
                            } else {
                                self.write(n.output(k))?;
                            }
                        }
                    }
                    if count == 0 {
                        for k in 0..n.outputs.len() {
                            self.write(n.output(k))?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// A `scan`: the state and the slices are passed in the executor's own buffers
    /// (not the arena), except the initial state at iteration 0; every iteration reads
    /// the scanned inputs and writes one row of each stacked output.
    fn scan(
        &mut self,
        n: &Node,
        e: &Entry,
        (count, carried, body): (&uop_codegen::index::Expr, usize, &uop_graph::Interface),
        dims: &HashMap<String, i64>,
    ) -> Result<(), String> {
        let me = format!("{}", n.id);
        let b = uop_codegen::index::Bindings {
            names: dims.clone(),
            params: dims.clone(),
            ..Default::default()
        };
        let count = count.eval(&b).map_err(|e| e.to_string())?;
        for i in &n.inputs {
            self.read(*i, &me)?;
        }
        for it in 0..count {
            for k in 0..n.inputs.len() {
                let param = Ref::new(body.input, k + 1);
                if it == 0 && k < carried {
                    self.alias(param, n.inputs[k]);
                } else {
                    self.bound.remove(&param);
                }
            }
            for x in &n.inputs[carried..] {
                self.read(*x, &format!("iteration {it} of {me}"))?;
            }
            self.entries(&e.subs[0].nodes, dims)?;
            for (k, src) in body.outputs.iter().enumerate() {
                self.source(src, &format!("the return of {me}"))?;
                if k < carried {
                    continue;
                }
                if it > 0 {
                    self.read(n.output(k), &format!("row {it} of {me}"))?;
                } else {
                    self.write(n.output(k))?;
                }
            }
        }
        for k in 0..n.outputs.len() {
            if k < carried || count == 0 {
                self.write(n.output(k))?;
            }
        }
        Ok(())
    }

    fn while_loop(
        &mut self,
        n: &Node,
        e: &Entry,
        cond: &uop_graph::Interface,
        body: &uop_graph::Interface,
        dims: &HashMap<String, i64>,
    ) -> Result<(), String> {
        let me = format!("{}", n.id);
        let carried = self
            .plan
            .carried
            .get(&n.id)
            .cloned()
            .ok_or("no carried plan")?;
        // The state, per value: where it is and the write that put it there.
        let mut state: Vec<Bound> = Vec::new();
        for (k, c) in carried.iter().enumerate() {
            let init = n.inputs[k];
            self.read(init, &me)?;
            let slot = c.state();
            match self.bound.get(&init).copied() {
                Some(b) if b.offset == slot.offset && slot.bytes > 0 => state.push(b),
                _ => {
                    self.write_at(Ref::new(n.id, k), slot.offset, slot.bytes)?;
                    state.push(self.bound[&Ref::new(n.id, k)]);
                }
            }
        }
        let trips = self
            .trips
            .get_mut(&n.id)
            .and_then(Iterator::next)
            .ok_or("the trace has no trip count")?;
        for it in 0..=trips {
            for (k, b) in state.iter().enumerate() {
                self.bound.insert(Ref::new(cond.input, k), *b);
                self.bound.insert(Ref::new(body.input, k), *b);
            }
            self.entries(&e.subs[0].nodes, dims)?;
            for s in &cond.outputs {
                self.source(s, &format!("the condition of {me}"))?;
            }
            if it == trips {
                break;
            }
            // Odd iterations of alternating states swap the two slots.
            let odd = it % 2 == 1;
            let mut moved = Vec::new();
            for (k, c) in carried.iter().enumerate() {
                if let (Carried::Alternate { slots }, true) = (c, odd)
                    && let Some(Source::Ref(r)) = body.outputs.get(k)
                    && self.plan.slots.get(r).map(|s| s.offset) == Some(slots[1].offset)
                {
                    self.moved.insert(*r, slots[0].offset);
                    moved.push(*r);
                }
            }
            self.entries(&e.subs[1].nodes, dims)?;
            for r in moved {
                self.moved.remove(&r);
            }
            // Read every result before writing any state (a parallel assignment).
            for s in &body.outputs {
                self.source(s, &format!("the return of {me}"))?;
            }
            let mut next = Vec::new();
            for (k, c) in carried.iter().enumerate() {
                let src = &body.outputs[k];
                let param = Ref::new(body.input, k);
                let target = match c {
                    Carried::InPlace { slot } => *slot,
                    Carried::Alternate { slots } => slots[if odd { 0 } else { 1 }],
                };
                match src {
                    Source::Ref(r) if *r == param && matches!(c, Carried::InPlace { .. }) => {
                        next.push(None)
                    }
                    Source::Ref(r)
                        if self.bound.get(r).is_some_and(|b| {
                            b.offset == target.offset
                                && b.bytes == target.bytes
                                && target.bytes > 0
                                && *r != param
                        }) =>
                    {
                        next.push(Some(self.bound[r]));
                    }
                    _ => {
                        if matches!(c, Carried::InPlace { .. }) && target.bytes > 0 {
                            return Err(format!(
                                "{me} state {k} is in place, but its result {src:?} is not at the slot"
                            ));
                        }
                        next.push(Some(Bound {
                            offset: target.offset,
                            bytes: target.bytes,
                            write: 0,
                        }));
                    }
                }
            }
            for (k, nb) in next.into_iter().enumerate() {
                match nb {
                    None => {}
                    Some(b) if b.write == 0 => {
                        self.write_at(Ref::new(n.id, k), b.offset, b.bytes)?;
                        state[k] = self.bound[&Ref::new(n.id, k)];
                    }
                    Some(b) => state[k] = b,
                }
            }
        }
        for (k, c) in carried.iter().enumerate() {
            let out = n.output(k);
            let slot = c.state();
            let mut b = state[k];
            if b.offset != slot.offset {
                // An odd trip count of an alternating state: copied back.
                let tmp = Ref::new(n.id, k);
                self.bound.insert(tmp, b);
                self.read(tmp, &format!("the end of {me}"))?;
                self.write_at(tmp, slot.offset, slot.bytes)?;
                b = self.bound[&tmp];
            }
            if let Some(s) = self.plan.slots.get(&out) {
                if s.offset != slot.offset {
                    return Err(format!("{out} is not at its state's slot"));
                }
                self.bound.insert(out, b);
                self.read(out, &format!("the end of {me}"))?;
            } else {
                // A graph output: copied out of the state's slot now.
                self.bound.insert(out, b);
                self.read(out, &format!("the end of {me}"))?;
                self.bound.remove(&out);
            }
        }
        Ok(())
    }
}

/// The plan's static properties (see the module docs); `Err` says which one fails.
pub fn check_shape(graph: &Graph, plan: &MemoryPlan) -> Result<(), String> {
    if plan.arena_bytes < plan.lower_bound {
        return Err(format!(
            "arena {} < lower bound {}",
            plan.arena_bytes, plan.lower_bound
        ));
    }
    if plan.lower_bound > plan.intermediates_bytes {
        return Err("the lower bound is above the sum of the intermediates".into());
    }
    let outputs: Vec<Ref> = graph
        .interface
        .outputs
        .iter()
        .filter_map(Source::as_ref)
        .collect();
    // Every intermediate has a slot.
    for n in graph.nodes() {
        let computes = matches!(
            n.op,
            Op::Call(_)
                | Op::Kernel(_)
                | Op::Chunk { .. }
                | Op::While { .. }
                | Op::If { .. }
                | Op::Case { .. }
                | Op::Parallel { .. }
                | Op::NoInline { .. }
        );
        for k in 0..n.outputs.len() {
            let r = n.output(k);
            if computes && !outputs.contains(&r) && !plan.slots.contains_key(&r) {
                return Err(format!("{r} has no slot"));
            }
            if outputs.contains(&r) && plan.slots.contains_key(&r) {
                return Err(format!("the graph output {r} is in the arena"));
            }
        }
    }
    for (r, s) in &plan.slots {
        if s.offset % ALIGN != 0 || s.offset + s.bytes > plan.arena_bytes {
            return Err(format!(
                "{r}: slot {s:?} in an arena of {}",
                plan.arena_bytes
            ));
        }
    }
    // In-place kernels: element-wise, one output of the input's type, same slot.
    for (out, input) in &plan.in_place {
        let n = graph.node(out.node).ok_or("no node")?;
        let Op::Kernel(k) = &n.op else {
            return Err(format!("{out} is in place but not a kernel"));
        };
        if classify_program(&k.program) != OpClass::ElementWise
            || n.outputs.len() != 1
            || graph.type_of(*input) != Some(&n.outputs[0])
            || !n.inputs.contains(input)
            || plan.slots[out].offset != plan.slots[input].offset
        {
            return Err(format!("{out} in place of {input} breaks the rule"));
        }
    }
    // Explicit aliasing: a union-find over the plan's relations.
    let refs: Vec<Ref> = plan.slots.keys().copied().collect();
    let index: HashMap<Ref, usize> = refs.iter().enumerate().map(|(i, r)| (*r, i)).collect();
    let mut parent: Vec<usize> = (0..refs.len()).collect();
    fn find(p: &mut [usize], i: usize) -> usize {
        let mut i = i;
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    let mut unite = |a: Ref, b: Ref| {
        if let (Some(&x), Some(&y)) = (index.get(&a), index.get(&b)) {
            let (x, y) = (find(&mut parent, x), find(&mut parent, y));
            parent[x] = y;
        }
    };
    for (a, b) in plan.in_place.iter().chain(plan.results.iter()) {
        unite(*a, *b);
    }
    for (w, states) in &plan.carried {
        let Some(Op::While { cond, body }) = graph.node(*w).map(|n| &n.op) else {
            return Err(format!("{w} is carried but not a while"));
        };
        for (k, c) in states.iter().enumerate() {
            let p = Ref::new(body.input, k);
            unite(Ref::new(cond.input, k), p);
            unite(Ref::new(*w, k), p);
            if let Some(r) = body.outputs[k].as_ref() {
                let at = plan.slots.get(&r).map(|s| s.offset);
                let ok = match c {
                    Carried::InPlace { slot } => at == Some(slot.offset),
                    Carried::Alternate { slots } => at == Some(slots[1].offset),
                };
                if ok && r.node != body.input {
                    unite(r, p);
                }
            }
            // Init values whose slot the state took.
            let init = graph.node(*w).map(|n| n.inputs[k]);
            if let Some(init) = init
                && plan.slots.get(&init).map(|s| s.offset) == Some(c.state().offset)
            {
                unite(init, p);
            }
        }
    }
    for (i, a) in refs.iter().enumerate() {
        for (j, b) in refs.iter().enumerate().skip(i + 1) {
            let (sa, sb) = (plan.slots[a], plan.slots[b]);
            let bytes = sa.bytes > 0
                && sb.bytes > 0
                && sa.offset < sb.offset + sb.bytes
                && sb.offset < sa.offset + sa.bytes;
            let live = plan.lifetimes[a].overlaps(&plan.lifetimes[b]);
            if bytes && live && find(&mut parent, i) != find(&mut parent, j) {
                return Err(format!(
                    "{a} {:?} and {b} {:?} are live together and share bytes",
                    plan.lifetimes[a], plan.lifetimes[b]
                ));
            }
        }
    }
    Ok(())
}

/// Where a node touches memory, for [`check_concurrency`]: a node of a scope, or
/// the end of a scope (a sub-function's return, the graph's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum At {
    Node(uop_graph::NodeId),
    End(Option<uop_graph::hierarchy::SubId>),
}

/// The scopes around `at`, outermost first, each with the node of that scope
/// holding `at` (`None`: the scope's end).
fn nesting(
    h: &uop_graph::Hierarchy,
    at: At,
) -> Vec<(
    Option<uop_graph::hierarchy::SubId>,
    Option<uop_graph::NodeId>,
)> {
    let (mut scope, held) = match at {
        At::Node(n) => (h.scope_of(n).flatten(), Some(n)),
        At::End(s) => (s, None),
    };
    let mut out = vec![(scope, held)];
    while let Some(sub) = scope {
        scope = h.scope_of(sub.super_node).flatten();
        out.push((scope, Some(sub.super_node)));
    }
    out.reverse();
    out
}

/// True when one of `a`, `b` always finishes before the other begins under the
/// schedule's order: in the deepest scope holding both, the schedule orders their
/// nodes, or they are one super node (its sub-functions run one after another),
/// or one is the scope's end, or one holds the other.
fn ordered(
    h: &uop_graph::Hierarchy,
    order: &uop_graph::schedule::StreamOrder,
    a: At,
    b: At,
) -> bool {
    let (x, y) = (nesting(h, a), nesting(h, b));
    for (&(sa, ha), &(sb, hb)) in x.iter().zip(&y) {
        if sa != sb {
            return true;
        }
        match (ha, hb) {
            (Some(u), Some(v)) if u == v => continue,
            (Some(u), Some(v)) => {
                let ready = |n| !order.runs(sa, n);
                return ready(u) || ready(v) || order.before(sa, u, v) || order.before(sa, v, u);
            }
            _ => return true,
        }
    }
    true
}

/// A region of the arena: what it holds, its bytes, and where it is touched (and
/// whether there it is written).
type Region = (String, uop_graph::memory::Slot, Vec<(At, bool)>);

/// No two nodes that the schedule lets run at the same time touch overlapping
/// arena bytes where one of them writes. Each arena value is written by its node
/// (a super node's output and a `while` state by the super node) and read by every
/// node using it, by the end of a sub-function returning it, and by the graph's end
/// when a Sink holds it.
pub fn check_concurrency(
    graph: &Graph,
    plan: &MemoryPlan,
    schedule: &uop_graph::schedule::Schedule,
) -> Result<(), String> {
    let h = hierarchy(graph).map_err(|e| e.to_string())?;
    let order = uop_graph::schedule::StreamOrder::new(schedule);
    let mut touch: HashMap<Ref, Vec<(At, bool)>> = HashMap::new();
    for r in plan.slots.keys() {
        let writer = match graph.node(r.node).map(|n| &n.op) {
            // A sub-function's parameter (a `while` state): written by its super node.
            Some(Op::Input { .. }) => match h.scope_of(r.node).flatten() {
                Some(sub) => At::Node(sub.super_node),
                None => continue,
            },
            _ => At::Node(r.node),
        };
        touch.entry(*r).or_default().push((writer, true));
    }
    for n in graph.nodes() {
        for r in &n.inputs {
            let at = if matches!(n.op, Op::Sink) {
                At::End(None)
            } else {
                At::Node(n.id)
            };
            if let Some(t) = touch.get_mut(r) {
                t.push((at, false));
            }
        }
        for (b, i) in n.op.interfaces().into_iter().enumerate() {
            let sub = uop_graph::hierarchy::SubId {
                super_node: n.id,
                branch: b,
            };
            for r in i.outputs.iter().filter_map(Source::as_ref) {
                if let Some(t) = touch.get_mut(&r) {
                    t.push((At::End(Some(sub)), false));
                }
            }
        }
    }
    // Every region of the arena something writes: the values, and the slots of
    // every `while` state (an alternating state's second slot may hold no value of
    // the plan, yet the loop writes it).
    let mut regions: Vec<Region> = plan
        .slots
        .iter()
        .map(|(r, slot)| (r.to_string(), *slot, touch.remove(r).unwrap_or_default()))
        .collect();
    for (w, states) in &plan.carried {
        for c in states {
            let slots = match c {
                Carried::InPlace { slot } => vec![*slot],
                Carried::Alternate { slots } => slots.to_vec(),
            };
            for slot in slots {
                regions.push((
                    format!("the state of {w}"),
                    slot,
                    vec![(At::Node(*w), true)],
                ));
            }
        }
    }
    for (i, (a, sa, ta)) in regions.iter().enumerate() {
        for (b, sb, tb) in &regions[i..] {
            let overlap = sa.bytes > 0
                && sb.bytes > 0
                && sa.offset < sb.offset + sb.bytes
                && sb.offset < sa.offset + sa.bytes;
            if !overlap {
                continue;
            }
            for &(x, wx) in ta {
                for &(y, wy) in tb {
                    if (wx || wy) && x != y && !ordered(&h, &order, x, y) {
                        return Err(format!(
                            "{a} at {x:?} and {b} at {y:?} share bytes and may run at the same time"
                        ));
                    }
                }
            }
        }
    }
    Ok(())
}
