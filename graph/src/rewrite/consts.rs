//! Scalar constants for phase \[B\] (build), shared through a cache (seed 001's
//! `create_const_float_op`, `get_zero_node`, `purge_const_cache`,
//! `do_prepend_const_node`).
//!
//! A [`ConstCache`] lives only during prepare: create it with the graph's rewrites,
//! drop it after. New Const nodes are prepended (after the leading Input nodes,
//! before the first other node), so any node can read them. A Const nobody reads is
//! removed later by `dead`.

use std::collections::VecDeque;

use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

use crate::ir::{Graph, Node, NodeId, Op, Ref, ValueType};

/// How many values other than 0, −inf and +inf the cache remembers (the oldest is
/// forgotten first).
pub const CACHE_SIZE: usize = 16;

/// Rank-0 Const nodes by value: 0, −inf and +inf always shared, other values on a
/// best-effort basis (the last [`CACHE_SIZE`] ones).
///
/// Values are compared after rounding to the constant's dtype, bit for bit (so
/// `-0.0` is not `0.0`). A cached node is checked before it is reused (it must still
/// be a rank-0 Const of that value), so a removed or changed Const is never handed
/// out; still, call [`ConstCache::purge_const_cache`] after changing a Const's data,
/// as the seed asks.
#[derive(Clone, Debug, Default)]
pub struct ConstCache {
    /// 0, −inf, +inf per dtype: never forgotten.
    always: Vec<(DType, u64, NodeId)>,
    /// Other values, oldest first.
    others: VecDeque<(DType, u64, NodeId)>,
}

/// The values that are always shared.
fn always_shared(v: f64) -> bool {
    v.to_bits() == 0f64.to_bits() || v == f64::INFINITY || v == f64::NEG_INFINITY
}

/// Puts a Const node of `t` at the head of the list (after the leading Input nodes)
/// with a fresh id; returns its output. O(n) (the list shifts).
pub fn prepend_const(graph: &mut Graph, t: Tensor) -> Ref {
    let id = graph.fresh_id();
    let ty = ValueType::new(
        t.dtype,
        t.shape
            .iter()
            .map(|&d| uop_codegen::index::Expr::Int(d as i64))
            .collect(),
    );
    let at = graph
        .nodes()
        .iter()
        .position(|n| !matches!(n.op, Op::Input { .. }))
        .unwrap_or(graph.len());
    // A fresh id and no uses: only the positions after it change.
    graph
        .nodes
        .insert(at, Node::new(id, Op::Const(t), Vec::new(), vec![ty]));
    for p in at..graph.nodes.len() {
        graph.position.insert(graph.nodes[p].id, p);
    }
    Ref::new(id, 0)
}

impl ConstCache {
    /// An empty cache.
    pub fn new() -> Self {
        ConstCache::default()
    }

    /// A rank-0 Const of the graph's float type with value `v`: a cached one when
    /// there is one, else a new one, prepended.
    pub fn const_scalar(&mut self, graph: &mut Graph, v: f64) -> Ref {
        let dtype = graph.dtype;
        self.const_scalar_of(graph, dtype, v)
    }

    /// A rank-0 Const of type `dtype` with value `v` (rounded to `dtype`).
    pub fn const_scalar_of(&mut self, graph: &mut Graph, dtype: DType, v: f64) -> Ref {
        let v = dtype.round(v);
        if let Some(id) = self.cached_of(dtype, v) {
            if holds(graph, id, dtype, v) {
                return Ref::new(id, 0);
            }
            self.purge_const_cache(id);
        }
        let r = prepend_const(graph, Tensor::filled(dtype, Vec::new(), v));
        let entry = (dtype, v.to_bits(), r.node);
        if always_shared(v) {
            self.always.push(entry);
        } else {
            if self.others.len() == CACHE_SIZE {
                self.others.pop_front();
            }
            self.others.push_back(entry);
        }
        r
    }

    /// The shared rank-0 zero of the graph's float type.
    pub fn zero(&mut self, graph: &mut Graph) -> Ref {
        self.const_scalar(graph, 0.0)
    }

    /// The shared rank-0 −inf of the graph's float type.
    pub fn neg_inf(&mut self, graph: &mut Graph) -> Ref {
        self.const_scalar(graph, f64::NEG_INFINITY)
    }

    /// The shared rank-0 +inf of the graph's float type.
    pub fn inf(&mut self, graph: &mut Graph) -> Ref {
        self.const_scalar(graph, f64::INFINITY)
    }

    /// The node cached for `v` of the graph's float type, if any (not checked
    /// against the graph).
    pub fn cached(&self, graph: &Graph, v: f64) -> Option<NodeId> {
        self.cached_of(graph.dtype, graph.dtype.round(v))
    }

    fn cached_of(&self, dtype: DType, v: f64) -> Option<NodeId> {
        let bits = v.to_bits();
        self.always
            .iter()
            .chain(self.others.iter())
            .find(|(d, b, _)| *d == dtype && *b == bits)
            .map(|e| e.2)
    }

    /// Forgets Const node `id` (after its data changed, or before it is removed).
    pub fn purge_const_cache(&mut self, id: NodeId) {
        self.always.retain(|e| e.2 != id);
        self.others.retain(|e| e.2 != id);
    }
}

/// True when `id` is still a rank-0 Const of `dtype` holding `v`.
fn holds(graph: &Graph, id: NodeId, dtype: DType, v: f64) -> bool {
    matches!(
        graph.node(id).map(|n| &n.op),
        Some(Op::Const(t)) if t.dtype == dtype && t.shape.is_empty() && t.data.len() == 1 && t.data[0].to_bits() == v.to_bits()
    )
}
