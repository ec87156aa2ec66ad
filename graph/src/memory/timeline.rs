//! The execution order as numbered steps: the definition hierarchy walked the way the
//! graph interpreter and the executor run it.
//!
//! Every definition takes one step. A super node takes a **start** step (its inputs
//! are read, its output buffers are reserved), then the steps of its sub-functions in
//! [`Op::interfaces`](crate::ir::Op::interfaces) order, each followed by an **exit**
//! step (the sub-function returns its results), then an **end** step (its outputs are
//! final). A sub-function's nodes thus lie strictly inside their super node's
//! `start..end`: the nested region.

use std::collections::HashMap;

use super::concurrency::StepOrder;
use crate::hierarchy::{Entry, Hierarchy, SubId};
use crate::ir::{Graph, NodeId, Op};

/// Step numbers of one graph's execution order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Timeline {
    /// The step of each node (a super node's start step).
    pub start: HashMap<NodeId, usize>,
    /// The end step of each super node.
    pub end: HashMap<NodeId, usize>,
    /// The exit step of each sub-function.
    pub exit: HashMap<SubId, usize>,
    /// Where each node is placed (`None`: the top level), from the hierarchy.
    pub placement: HashMap<NodeId, Option<SubId>>,
    /// Number of steps; the last step, `len - 1`, is the graph's return.
    pub len: usize,
    /// What each step is.
    pub owner: Vec<Owner>,
    /// The schedule's order on each scope's nodes (`None`: one stream running the
    /// steps in order); see `concurrency`.
    pub order: Option<StepOrder>,
}

/// What one step is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    /// A node's step (a super node's start or end).
    Node(NodeId),
    /// A sub-function's return.
    Exit(SubId),
    /// The graph's return.
    Return,
}

impl Timeline {
    /// The steps of `h`'s order.
    pub fn new(graph: &Graph, h: &Hierarchy) -> Self {
        let mut t = Timeline {
            placement: h.placement.clone(),
            ..Timeline::default()
        };
        t.walk(graph, &h.top);
        // The graph's return (outputs read, Sinks' tensors released).
        t.next(Owner::Return);
        t
    }

    fn next(&mut self, owner: Owner) -> usize {
        self.owner.push(owner);
        self.len += 1;
        self.len - 1
    }

    fn walk(&mut self, graph: &Graph, entries: &[Entry]) {
        for e in entries {
            let s = self.next(Owner::Node(e.node));
            self.start.insert(e.node, s);
            let is_super = graph.node(e.node).is_some_and(|n| n.op.is_super());
            if !is_super {
                continue;
            }
            for sub in &e.subs {
                self.walk(graph, &sub.nodes);
                let x = self.next(Owner::Exit(sub.id()));
                self.exit.insert(sub.id(), x);
            }
            let end = self.next(Owner::Node(e.node));
            self.end.insert(e.node, end);
        }
    }

    /// The step of node `id` (a super node's start).
    pub fn step(&self, id: NodeId) -> usize {
        self.start.get(&id).copied().unwrap_or(0)
    }

    /// The end step of super node `id` (its step for other nodes).
    pub fn end_of(&self, id: NodeId) -> usize {
        self.end.get(&id).copied().unwrap_or_else(|| self.step(id))
    }

    /// The last step: the graph's return.
    pub fn last(&self) -> usize {
        self.len.saturating_sub(1)
    }

    /// The step at which a value defined in scope `def` counts as read by a reader in
    /// scope `at`, at step `step`: `step` itself when the reader is in `def`; else the
    /// end step of the super node, placed in `def`, whose sub-functions hold the
    /// reader (a body may run many times, so the value lives as long as the construct).
    pub fn use_step(&self, def: Option<SubId>, at: Option<SubId>, step: usize) -> usize {
        let mut scope = at;
        let mut step = step;
        while scope != def {
            let Some(sub) = scope else {
                // The reader is not inside the definition's scope (the verifier rules
                // this out); keep the value to the end to stay safe.
                return self.last();
            };
            step = self.end_of(sub.super_node);
            scope = self.placement.get(&sub.super_node).copied().flatten();
        }
        step
    }

    /// The step at which super node `node` reads its input `k`: a `while` copies its
    /// initial state and an `if` / `case` reads its selector at the start; every other
    /// input is an argument its sub-functions read through their parameters (which are
    /// the argument's buffer), so it is read until the end.
    pub fn super_input_step(&self, op: &Op, node: NodeId, k: usize) -> usize {
        match op {
            Op::While { .. } => self.step(node),
            Op::If { .. } | Op::Case { .. } if k == 0 => self.step(node),
            _ => self.end_of(node),
        }
    }
}
