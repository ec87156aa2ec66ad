//! Phase \[C\] rewiring (seed 001's `change_output_refs`, `change_multi_output_refs`):
//! the nodes reading one node's outputs are made to read other outputs, the consumer
//! index kept exact.
//!
//! A reader is any node whose inputs or interface results read the old node (super
//! nodes' sub-function results are rewired like inputs); the graph's own outputs are
//! readers too when the whole list is rewired (`from` is `None`). Readers are found
//! through the consumer index: the cost is O(r · log n) for r readers, not a scan of
//! the list.
//!
//! Every replacement must name an output of a node that exists and comes before the
//! reader (insert new nodes first, then rewire). A reference that cannot be rewired —
//! the map says error, or the replacement would not be a valid earlier output — is
//! left as it is and reported; **all other replacements are still done**, so on
//! error the graph holds every valid replacement and only the reported references
//! unchanged (the seed returns a negative count from the middle of its pass; here the
//! error lists every reference left and how many were rewired).

use super::{Reader, RewriteError, Unrewired};
use crate::ir::{Graph, NodeId, Ref, Source};

/// What happens to references to one output of the old node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputTarget {
    /// Read output `k` of the new node instead.
    To(usize),
    /// Leave the reference as it is.
    Leave,
    /// A reference to this output is an error (left as it is and reported).
    Error,
}

/// For each output index of the old node, an [`OutputTarget`]; indexes past the
/// table are errors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutputMap {
    targets: Vec<OutputTarget>,
}

impl OutputMap {
    /// A map from a table: output `i` goes to `targets[i]`, outputs past it are errors.
    pub fn new(targets: Vec<OutputTarget>) -> Self {
        OutputMap { targets }
    }

    /// Outputs `0..n` to the same index of the new node, the others errors.
    pub fn same(n: usize) -> Self {
        OutputMap::new((0..n).map(OutputTarget::To).collect())
    }

    /// The seed's nibble pattern: nibble `i` (bits `4i..4i+4`) for output `i`: 0 is an
    /// error, `0xF` leaves the reference, `n` maps to output `n − 1`; outputs ≥ 16 are
    /// errors. `0xF321`: outputs 0–2 to the same output, 3 left, ≥ 4 errors.
    pub fn from_nibbles(pattern: u64) -> Self {
        OutputMap::new(
            (0..16)
                .map(|i| match (pattern >> (4 * i)) & 0xF {
                    0 => OutputTarget::Error,
                    0xF => OutputTarget::Leave,
                    n => OutputTarget::To(n as usize - 1),
                })
                .collect(),
        )
    }

    /// What happens to output `output`.
    pub fn target(&self, output: usize) -> OutputTarget {
        self.targets
            .get(output)
            .copied()
            .unwrap_or(OutputTarget::Error)
    }
}

/// Makes readers of `old` read `new` as `map` says: from `from` on (the node `from`
/// included; the whole list and the graph's outputs when `None`). Returns the number
/// of references changed; errors as the module docs say (every valid replacement is
/// still done).
pub fn change_output_refs(
    graph: &mut Graph,
    from: Option<NodeId>,
    old: NodeId,
    new: NodeId,
    map: &OutputMap,
) -> Result<usize, RewriteError> {
    rewire(graph, from, old, |i| match map.target(i) {
        OutputTarget::To(k) => Target::To(Ref::new(new, k)),
        OutputTarget::Leave => Target::Leave,
        OutputTarget::Error => Target::Error(format!("the map makes output {i} an error")),
    })
}

/// Makes readers of output `i` of `old` read `table[i]` (seed 001's
/// `change_multi_output_refs_table`): `None`, or `i` past the table, leaves the
/// reference. From `from` on as [`change_output_refs`]; the same errors.
pub fn change_multi_output_refs(
    graph: &mut Graph,
    from: Option<NodeId>,
    old: NodeId,
    table: &[Option<Ref>],
) -> Result<usize, RewriteError> {
    rewire(graph, from, old, |i| match table.get(i) {
        Some(Some(r)) => Target::To(*r),
        _ => Target::Leave,
    })
}

/// A place in a node that holds a reference.
#[derive(Clone, Copy)]
enum Slot {
    /// Input `k`.
    Input(usize),
    /// Result `k` of sub-function `j`.
    Result(usize, usize),
}

/// Where one reference goes.
enum Target {
    To(Ref),
    Leave,
    Error(String),
}

fn rewire(
    graph: &mut Graph,
    from: Option<NodeId>,
    old: NodeId,
    target: impl Fn(usize) -> Target,
) -> Result<usize, RewriteError> {
    let start = match from {
        None => 0,
        Some(id) => graph.position(id).ok_or(RewriteError::Missing(id))?,
    };
    let mut readers: Vec<(usize, NodeId)> = graph
        .consumers(old)
        .into_iter()
        .filter_map(|id| graph.position(id).map(|p| (p, id)))
        .filter(|&(p, _)| p >= start)
        .collect();
    readers.sort();
    let mut done = 0;
    let mut left: Vec<Unrewired> = Vec::new();
    // The replacement for `r` read at position `at` (None: the graph's outputs).
    let replace =
        |graph: &Graph, r: Ref, at: Option<usize>, reader: Reader, left: &mut Vec<Unrewired>| {
            let to = match target(r.output) {
                Target::Leave => return None,
                Target::Error(reason) => {
                    left.push(Unrewired {
                        reader,
                        read: r,
                        reason,
                    });
                    return None;
                }
                Target::To(to) => to,
            };
            let problem = match graph.position(to.node) {
                None => Some(format!("{} is not in the graph", to.node)),
                Some(p) if at.is_some_and(|a| p >= a) => {
                    Some(format!("{} does not come before {reader}", to.node))
                }
                Some(p) if to.output >= graph.nodes[p].outputs.len() => Some(format!(
                    "{} has {} outputs",
                    to.node,
                    graph.nodes[p].outputs.len()
                )),
                Some(_) => None,
            };
            match problem {
                Some(reason) => {
                    left.push(Unrewired {
                        reader,
                        read: r,
                        reason,
                    });
                    None
                }
                None => Some(to),
            }
        };
    for (p, id) in readers {
        // Find the replacements with the graph read-only, then apply them.
        let node = &graph.nodes[p];
        let mut slots: Vec<(Slot, Ref)> = Vec::new();
        for (k, r) in node.inputs.iter().enumerate() {
            if r.node == old
                && let Some(to) = replace(graph, *r, Some(p), Reader::Node(id), &mut left)
            {
                slots.push((Slot::Input(k), to));
            }
        }
        for (j, i) in node.op.interfaces().iter().enumerate() {
            for (k, s) in i.outputs.iter().enumerate() {
                if let Source::Ref(r) = s
                    && r.node == old
                    && let Some(to) = replace(graph, *r, Some(p), Reader::Node(id), &mut left)
                {
                    slots.push((Slot::Result(j, k), to));
                }
            }
        }
        if slots.is_empty() {
            continue;
        }
        let old_uses = node.uses();
        let node = &mut graph.nodes[p];
        for &(slot, to) in &slots {
            match slot {
                Slot::Input(k) => node.inputs[k] = to,
                Slot::Result(j, k) => {
                    if let Some(i) = node.op.interfaces_mut().into_iter().nth(j) {
                        i.outputs[k] = Source::Ref(to);
                    }
                }
            }
        }
        graph.update_uses(id, &old_uses);
        done += slots.len();
    }
    if from.is_none() {
        for k in 0..graph.interface.outputs.len() {
            if let Source::Ref(r) = graph.interface.outputs[k]
                && r.node == old
                && let Some(to) = replace(graph, r, None, Reader::GraphOutput(k), &mut left)
            {
                graph.interface.outputs[k] = Source::Ref(to);
                done += 1;
            }
        }
    }
    if left.is_empty() {
        Ok(done)
    } else {
        Err(RewriteError::Unrewired { old, done, left })
    }
}
