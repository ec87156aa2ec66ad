//! Phase \[C\] splices (seed 001's `replace_nodes`, `replace_node_with`,
//! `insert_nodes`): nodes removed and inserted in one step, the position and consumer
//! indexes kept exact.
//!
//! Every call checks its arguments before it changes anything, so an error leaves the
//! graph as it was. After a successful call every reference names an existing,
//! earlier node and one of its outputs, ids are unique, and the indexes are exact
//! (types are the caller's: run [`crate::verify()`] in tests).
//!
//! Cost: O(n − k) to move the list's tail from the splice position k and renumber its
//! positions (the `Vec` splice itself is that cost), plus O(u · log) for the consumer
//! index, u the uses of the removed and added nodes and the readers of the removed
//! ones. Removing an Input node also scans every interface (O(n)).

use std::collections::{HashMap, HashSet};

use super::{Reader, RewriteError};
use crate::ir::{Graph, Node, NodeId, Op, Ref};

/// Where a splice starts searching: the anchor's position, or the list's head.
fn start(graph: &Graph, anchor: Option<NodeId>) -> Result<usize, RewriteError> {
    match anchor {
        None => Ok(0),
        Some(a) => graph.position(a).ok_or(RewriteError::Missing(a)),
    }
}

/// Finds `id` at or after the anchor.
fn find(graph: &Graph, anchor: Option<NodeId>, id: NodeId) -> Result<usize, RewriteError> {
    let from = start(graph, anchor)?;
    let p = graph.position(id).ok_or(RewriteError::Missing(id))?;
    match anchor {
        Some(a) if p < from => Err(RewriteError::BeforeAnchor {
            node: id,
            anchor: a,
        }),
        _ => Ok(p),
    }
}

/// Removes the nodes `removed` (listed in list order, other nodes between them stay)
/// and puts `new`, if any, where `removed[0]` was. `removed[0]` is looked for at or
/// after `anchor` (the list's head when `None`). `new` may take the id of a removed
/// node; then the nodes that read that id read `new`.
///
/// Errors (the graph unchanged): `removed` empty, a node missing, `removed[0]` before
/// the anchor, the list out of order, `new`'s id 0 or taken by a node that stays, a
/// reference of `new` not to an earlier node that stays, a node that stays (or a graph
/// output) still reading a removed id that `new` does not provide, a removed Input
/// node still named by an interface.
pub fn replace_nodes(
    graph: &mut Graph,
    anchor: Option<NodeId>,
    new: Option<Node>,
    removed: &[NodeId],
) -> Result<(), RewriteError> {
    let (&head, rest) = removed.split_first().ok_or(RewriteError::NothingToRemove)?;
    let at = find(graph, anchor, head)?;
    let mut positions = vec![at];
    for (prev, &id) in removed.iter().zip(rest) {
        let p = graph.position(id).ok_or(RewriteError::Missing(id))?;
        if p <= positions[positions.len() - 1] {
            return Err(RewriteError::OutOfOrder {
                node: id,
                previous: *prev,
            });
        }
        positions.push(p);
    }
    splice(graph, at, &positions, new.into_iter().collect())
}

/// Removes `removed`, if any (looked for at or after `anchor`), and inserts `added`
/// in order, contiguous, where it was; without `removed`, inserts `added` before
/// `anchor` (at the list's head when `None`), as [`insert_nodes`]. One added node may
/// take the removed node's id. Returns the number of nodes inserted.
///
/// Errors as [`replace_nodes`]; added nodes may read earlier added nodes.
pub fn replace_node_with(
    graph: &mut Graph,
    anchor: Option<NodeId>,
    removed: Option<NodeId>,
    added: Vec<Node>,
) -> Result<usize, RewriteError> {
    let n = added.len();
    match removed {
        Some(id) => {
            let at = find(graph, anchor, id)?;
            splice(graph, at, &[at], added)?;
        }
        None => {
            let at = start(graph, anchor)?;
            splice(graph, at, &[], added)?;
        }
    }
    Ok(n)
}

/// Inserts `added`, in order and contiguous, before `anchor` (at the list's head when
/// `None`). Returns the number of nodes inserted.
pub fn insert_nodes(
    graph: &mut Graph,
    anchor: Option<NodeId>,
    added: Vec<Node>,
) -> Result<usize, RewriteError> {
    replace_node_with(graph, anchor, None, added)
}

/// Appends `added`, in order, at the end of the list (where a Sink goes). Returns the
/// number of nodes appended.
pub fn append_nodes(graph: &mut Graph, added: Vec<Node>) -> Result<usize, RewriteError> {
    let n = added.len();
    let at = graph.len();
    splice(graph, at, &[], added)?;
    Ok(n)
}

/// Moves the nodes `moved` (listed in list order, each once) to just before `before`
/// (the end of the list when `None`), keeping their order and ids (seed 001's
/// "const nodes are brought to the front of the list"; a branch body moved past the
/// values its parameters are replaced by). `before` must not be among `moved`.
///
/// Errors (the graph unchanged): a node missing, the list out of order, `before`
/// among `moved`, a moved node that would read something not before it, or a node
/// that would read a moved node not before it. Uses do not change, so the consumer
/// index stays as it is; positions are renumbered over the span that moved. O(n).
pub fn move_nodes(
    graph: &mut Graph,
    before: Option<NodeId>,
    moved: &[NodeId],
) -> Result<(), RewriteError> {
    let mut positions = Vec::with_capacity(moved.len());
    for (k, &id) in moved.iter().enumerate() {
        let p = graph.position(id).ok_or(RewriteError::Missing(id))?;
        if let Some(&prev) = positions.last()
            && p <= prev
        {
            return Err(RewriteError::OutOfOrder {
                node: id,
                previous: moved[k - 1],
            });
        }
        positions.push(p);
    }
    let target = match before {
        None => graph.len(),
        Some(b) => graph.position(b).ok_or(RewriteError::Missing(b))?,
    };
    if let Some(b) = before
        && moved.contains(&b)
    {
        return Err(RewriteError::MovedAnchor(b));
    }
    let (Some(&lo), Some(&hi)) = (positions.first(), positions.last()) else {
        return Ok(());
    };
    // The span that changes: from the first moved node or the target, to the last
    // moved node or the target.
    let start = lo.min(target);
    let end = (hi + 1).max(target);
    let is_moved: HashSet<usize> = positions.iter().copied().collect();
    let mut order: Vec<usize> = Vec::with_capacity(end - start);
    for p in start..end {
        if p == target {
            order.extend(positions.iter().copied());
        }
        if !is_moved.contains(&p) {
            order.push(p);
        }
    }
    if target == end {
        order.extend(positions.iter().copied());
    }
    // New position of every node in the span.
    let new_pos: HashMap<NodeId, usize> = order
        .iter()
        .enumerate()
        .map(|(k, &p)| (graph.nodes[p].id, start + k))
        .collect();
    let at = |id: NodeId| new_pos.get(&id).copied().or_else(|| graph.position(id));
    for &p in &positions {
        let n = &graph.nodes[p];
        let me = new_pos[&n.id];
        for r in n.uses() {
            if at(r.node).is_none_or(|q| q >= me) {
                return Err(RewriteError::BadReference {
                    node: n.id,
                    read: r,
                });
            }
        }
        for reader in graph.consumers(n.id) {
            if at(reader).is_none_or(|q| q <= me) {
                return Err(RewriteError::BadReference {
                    node: reader,
                    read: Ref::new(n.id, 0),
                });
            }
        }
    }
    let span: Vec<Node> = graph.nodes.drain(start..end).collect();
    let mut slots: Vec<Option<Node>> = span.into_iter().map(Some).collect();
    let reordered: Vec<Node> = order
        .iter()
        .filter_map(|&p| slots[p - start].take())
        .collect();
    graph.nodes.splice(start..start, reordered);
    for p in start..end {
        graph.position.insert(graph.nodes[p].id, p);
    }
    Ok(())
}

/// Removes the nodes at `removed` (ascending positions, the first, if any, at `at`)
/// and inserts `added` at `at`, after checking that the result keeps every
/// reference valid.
pub(super) fn splice(
    graph: &mut Graph,
    at: usize,
    removed: &[usize],
    added: Vec<Node>,
) -> Result<(), RewriteError> {
    check(graph, at, removed, &added)?;
    let gone: HashSet<usize> = removed.iter().map(|p| p - at).collect();
    let provided: HashSet<NodeId> = added.iter().map(|n| n.id).collect();
    let tail = graph.nodes.split_off(at);
    let mut kept = Vec::with_capacity(tail.len());
    for (k, n) in tail.into_iter().enumerate() {
        if !gone.contains(&k) {
            kept.push(n);
            continue;
        }
        for r in n.uses() {
            if let Some(set) = graph.consumers.get_mut(&r.node) {
                set.remove(&n.id);
                if set.is_empty() {
                    graph.consumers.remove(&r.node);
                }
            }
        }
        graph.position.remove(&n.id);
        if !provided.contains(&n.id) {
            // `check` made sure only removed nodes read it.
            graph.consumers.remove(&n.id);
        }
    }
    for n in &added {
        graph.next_id = graph.next_id.max(n.id.0 + 1);
        for r in n.uses() {
            graph.consumers.entry(r.node).or_default().insert(n.id);
        }
    }
    graph.nodes.extend(added);
    graph.nodes.extend(kept);
    for p in at..graph.nodes.len() {
        graph.position.insert(graph.nodes[p].id, p);
    }
    Ok(())
}

/// The checks of [`splice`], before anything changes.
fn check(graph: &Graph, at: usize, removed: &[usize], added: &[Node]) -> Result<(), RewriteError> {
    let gone: HashMap<NodeId, usize> = removed.iter().map(|&p| (graph.nodes[p].id, p)).collect();
    // The added nodes seen so far, by id.
    let mut earlier: HashMap<NodeId, &Node> = HashMap::new();
    for n in added {
        if n.id.0 == 0 {
            return Err(RewriteError::ZeroId);
        }
        if earlier.contains_key(&n.id) || (graph.node(n.id).is_some() && !gone.contains_key(&n.id))
        {
            return Err(RewriteError::IdTaken(n.id));
        }
        for r in n.uses() {
            let fine = match earlier.get(&r.node) {
                Some(e) => r.output < e.outputs.len(),
                None => graph
                    .position(r.node)
                    .is_some_and(|p| p < at && r.output < graph.nodes[p].outputs.len()),
            };
            if !fine {
                return Err(RewriteError::BadReference {
                    node: n.id,
                    read: r,
                });
            }
        }
        earlier.insert(n.id, n);
    }
    // What stays must not read what goes, unless an added node provides it.
    let still_there = |r: Ref| {
        earlier
            .get(&r.node)
            .is_some_and(|n| r.output < n.outputs.len())
    };
    for &p in removed {
        let id = graph.nodes[p].id;
        for reader in graph.consumers(id) {
            if gone.contains_key(&reader) {
                continue;
            }
            let Some(node) = graph.node(reader) else {
                continue;
            };
            if let Some(r) = node
                .uses()
                .into_iter()
                .find(|r| r.node == id && !still_there(*r))
            {
                return Err(RewriteError::StillRead {
                    reader: Reader::Node(reader),
                    read: r,
                });
            }
        }
        for (k, s) in graph.interface.outputs.iter().enumerate() {
            if let Some(r) = s.as_ref().filter(|r| r.node == id && !still_there(*r)) {
                return Err(RewriteError::StillRead {
                    reader: Reader::GraphOutput(k),
                    read: r,
                });
            }
        }
        let input_again = earlier
            .get(&id)
            .is_some_and(|n| matches!(n.op, Op::Input { .. }));
        if matches!(graph.nodes[p].op, Op::Input { .. }) && !input_again {
            if graph.interface.input == id {
                return Err(RewriteError::InputStillNamed {
                    node: id,
                    by: "the graph's interface".into(),
                });
            }
            let owner = graph
                .nodes
                .iter()
                .filter(|n| !gone.contains_key(&n.id))
                .chain(added)
                .find(|n| n.op.interfaces().iter().any(|i| i.input == id));
            if let Some(o) = owner {
                return Err(RewriteError::InputStillNamed {
                    node: id,
                    by: format!("{} {}", o.op.kind(), o.id),
                });
            }
        }
    }
    Ok(())
}
