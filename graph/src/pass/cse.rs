//! `cse`: identical Calls — the same op, arguments, attributes and bindings, reading
//! the same values — placed in the same scope of the definition hierarchy are merged
//! into the first, and so are Consts with identical data (dtype, shape, every bit).
//!
//! \[A\] match: one sweep in list order keyed by (scope, [`Key`]) finds, for each
//! node, an earlier identical one. The key is the node's structure — the op's name,
//! its arguments, attributes and bindings (numbers by their bits, so `-0.0` is not
//! `0.0`), the values it reads and the types it gives — never its printed text. \[B\] build: nothing. \[C\] apply:
//! [`change_output_refs`] makes every reader of the later node (graph outputs
//! included) read the earlier one, which comes before it and so before its readers;
//! the later node is left for `dead`. Because readers are rewired as the sweep goes,
//! merges cascade (`exp(a)` and `exp(b)` merge once `a` and `b` did).
//!
//! Only nodes of the same scope merge: a value defined in one sub-function is not
//! visible in a sibling, and a node of an outer scope is computed whenever that scope
//! runs, while one inside a branch is not. Consts have no inputs and always live at
//! the top level. Merging keeps every node's scope: the merged readers read a value
//! with the same dependences.

use std::collections::HashMap;

use super::{Budget, PassFailure, PrepareOptions};
use uop_codegen::index::Expr;
use uop_codegen::uop::DType;

use crate::hierarchy::{SubId, hierarchy};
use crate::ir::{Call, CallValue, Graph, ListItem, Node, NodeId, Op, Ref, ValueType};
use crate::rewrite::{OutputMap, change_output_refs};

/// The pass (module docs).
pub fn cse(graph: &mut Graph, budget: &mut Budget, _: &PrepareOptions) -> Result<(), PassFailure> {
    let h = hierarchy(graph)?;
    let ids: Vec<NodeId> = graph.nodes().iter().map(|n| n.id).collect();
    let mut first: HashMap<(Option<SubId>, Key), NodeId> = HashMap::new();
    for id in ids {
        // [A] match, on the graph as the earlier merges left it.
        let Some(node) = graph.node(id) else { continue };
        let Some(key) = Key::of(node) else { continue };
        let Some(scope) = h.scope_of(id) else {
            continue;
        };
        let Some(&earlier) = first.get(&(scope, key.clone())) else {
            first.insert((scope, key), id);
            continue;
        };
        // [C] apply.
        if !budget.spend() {
            break;
        }
        change_output_refs(graph, None, id, earlier, &OutputMap::same(1))
            .map_err(|e| PassFailure::rewrite(format!("{id}: merging into {earlier}"), e))?;
    }
    Ok(())
}

/// What makes two nodes identical for `cse`: a Call's structure with what it reads
/// and gives, or a Const's dtype, shape and bits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Key {
    /// A Call.
    Call {
        /// The op's name.
        op: String,
        /// Positional arguments.
        args: Vec<ValueKey>,
        /// Named attributes, in the order written.
        attrs: Vec<(String, ValueKey)>,
        /// `$name`s bound to inputs.
        bind: Vec<(String, usize)>,
        /// The values read.
        inputs: Vec<Ref>,
        /// The types given.
        outputs: Vec<ValueType>,
    },
    /// A Const.
    Const {
        /// Its element type.
        dtype: DType,
        /// Its shape.
        shape: Vec<usize>,
        /// The bits of every value.
        bits: Vec<u64>,
    },
}

impl Key {
    /// The key of a Call or Const node; `None` for every other node (never merged).
    fn of(node: &Node) -> Option<Key> {
        match &node.op {
            Op::Call(c) => Some(Key::call(c, node)),
            Op::Const(t) => Some(Key::Const {
                dtype: t.dtype,
                shape: t.shape.clone(),
                bits: t.data.iter().map(|v| v.to_bits()).collect(),
            }),
            _ => None,
        }
    }

    fn call(c: &Call, node: &Node) -> Key {
        Key::Call {
            op: c.op.clone(),
            args: c.args.iter().map(ValueKey::of).collect(),
            attrs: c
                .attrs
                .iter()
                .map(|(name, v)| (name.clone(), ValueKey::of(v)))
                .collect(),
            bind: c.bind.clone(),
            inputs: node.inputs.clone(),
            outputs: node.outputs.clone(),
        }
    }
}

/// A [`CallValue`] as a hashable value: a float by its bits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ValueKey {
    Input(usize),
    Int(i64),
    Float(u64),
    Bool(bool),
    Str(String),
    Param(String),
    List(Vec<ItemKey>),
}

/// A [`ListItem`] as a hashable value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum ItemKey {
    Expr(Expr),
    Input(usize),
}

impl ValueKey {
    fn of(v: &CallValue) -> ValueKey {
        match v {
            CallValue::Input(k) => ValueKey::Input(*k),
            CallValue::Int(i) => ValueKey::Int(*i),
            CallValue::Float(f) => ValueKey::Float(f.to_bits()),
            CallValue::Bool(b) => ValueKey::Bool(*b),
            CallValue::Str(s) => ValueKey::Str(s.clone()),
            CallValue::Param(p) => ValueKey::Param(p.clone()),
            CallValue::List(items) => ValueKey::List(
                items
                    .iter()
                    .map(|item| match item {
                        ListItem::Expr(e) => ItemKey::Expr(e.clone()),
                        ListItem::Input(k) => ItemKey::Input(*k),
                    })
                    .collect(),
            ),
        }
    }
}
