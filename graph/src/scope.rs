//! Scopes: the one locality analysis of the graph layer (DESIGN.md §16). Which
//! sub-functions each node is *local to*, and whether the graph's list is consistent
//! with them. [`hierarchy`](crate::hierarchy()) places nodes by it and
//! [`verify`](crate::verify()) reports its violations, so "the verifier accepts the
//! graph's locality" and "the graph has a definition hierarchy" are the same
//! statement.
//!
//! # The rules
//!
//! A sub-function is one interface of a super node, numbered as [`Op::interfaces`]
//! (`while`: condition 0, body 1; `if`: then 0, else 1; `case`: branch k). A node is
//! local to sub-function `f` (it must be defined inside `f`, or inside a sub-function
//! nested in `f`) when
//!
//! 1. **it reads** `f`'s Input node, or a value local to `f` (through any path of
//!    uses: inputs, and the values a super node's sub-functions return);
//! 2. except that **a super node is never local to its own sub-functions** (the caveat
//!    of seed 003: it reads their results from outside);
//! 3. **containment:** a super node `S` is local to every sub-function `f` that a node
//!    local to one of `S`'s own sub-functions is local to, unless `f` is nested inside
//!    `S`. A super node contains everything inside its bodies — also values no result
//!    needs (a dead value in a `parallel` body reading a parameter of the function
//!    around the `parallel` keeps the `parallel` inside that function; without this
//!    rule the `parallel` would be hoisted out and the dead value would have no place).
//!
//! The graph's list must agree with these constraints:
//!
//! - a sub-function's Input node comes before its super node;
//! - a super node reads values local to its sub-function `k` only through `k`'s
//!   results (not as an input, nor through another sub-function's results);
//! - every node local to `f` comes before `f`'s super node (a reader after it would be
//!   outside it); the graph's outputs read nothing local to a sub-function;
//! - a node's constraints are nested: every sub-function it is local to encloses the
//!   innermost one (the one whose super node comes first in the list), so the node has
//!   a place: that innermost sub-function (the top level when it has none).
//!
//! The list order is then an order of the super nodes in which everything local to
//! `f` comes before `f`'s owner (§16's ordering, acyclic by construction), and every
//! value a node reads is visible where the node is placed.
//!
//! # The computation
//!
//! One forward pass over the list. Since every use names an earlier node, a node's set
//! is the union of its uses' sets (plus `f` for reading `f`'s Input node, minus its own
//! sub-functions); since everything inside a super node comes before it, the
//! containment rule is applied when the super node is reached, from an accumulator per
//! sub-function: each node local to `g` adds to `g`'s accumulator the constraints whose
//! super nodes come after `g`'s (the ones nested inside `g`'s owner come before it).
//! The cost is linear in the graph times the square of the nesting depth.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use crate::ir::{Graph, Node, NodeId, Op, Ref, Source};
use crate::vocab::Violation;

/// One sub-function: branch `branch` of super node `super_node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubId {
    /// The owner.
    pub super_node: NodeId,
    /// Which of its sub-functions, numbered as [`Op::interfaces`].
    pub branch: usize,
}

impl fmt::Display for SubId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sub-function {} of {}", self.branch, self.super_node)
    }
}

/// Why [`scopes`] found no consistent scopes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScopeError {
    /// The list cannot be traced: an id is 0 or repeated, a reference names a missing
    /// or later node (or a missing output), an interface does not name an Input node
    /// of its own, or an Input node belongs to no interface. The verifier reports these
    /// itself and traces scopes only when there are none.
    Malformed(Vec<Violation>),
    /// The locality rules of the module documentation are broken.
    Locality(Vec<Violation>),
}

impl ScopeError {
    /// The violations, whichever kind.
    pub fn violations(&self) -> &[Violation] {
        match self {
            ScopeError::Malformed(v) | ScopeError::Locality(v) => v,
        }
    }
}

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.violations().iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ScopeError {}

/// One sub-function: its identity, its owner's position, its Input node.
#[derive(Clone, Debug)]
struct Sub {
    id: SubId,
    owner: usize,
    input: NodeId,
}

/// The constraints of every node of a graph whose locality is consistent.
#[derive(Clone, Debug)]
pub struct Scopes {
    subs: Vec<Sub>,
    /// Each id's position in the list.
    position: HashMap<NodeId, usize>,
    /// Per position: the sub-functions (indexes in `subs`) the node is local to.
    local: Vec<BTreeSet<usize>>,
    /// Sub-function Input node -> its index in `subs`.
    of_input: HashMap<NodeId, usize>,
}

impl Scopes {
    /// Every sub-function with its Input node, by the list order of their owners.
    pub fn sub_functions(&self) -> Vec<(SubId, NodeId)> {
        self.subs.iter().map(|s| (s.id, s.input)).collect()
    }

    /// The sub-function whose Input node is `input`.
    pub fn sub_of_input(&self, input: NodeId) -> Option<SubId> {
        self.of_input.get(&input).map(|&s| self.subs[s].id)
    }

    /// The sub-functions `node` is local to, innermost first (empty for a node of
    /// the top level and for a node not in the graph).
    pub fn local_to(&self, node: NodeId) -> Vec<SubId> {
        let Some(&p) = self.position.get(&node) else {
            return Vec::new();
        };
        let mut subs: Vec<usize> = self.local[p].iter().copied().collect();
        subs.sort_by_key(|&s| self.subs[s].owner);
        subs.into_iter().map(|s| self.subs[s].id).collect()
    }

    /// Where `node` is placed: the innermost sub-function it is local to, `None`
    /// for the top level. A sub-function's Input node is placed in its sub-function.
    pub fn place(&self, node: NodeId) -> Option<SubId> {
        if let Some(&s) = self.of_input.get(&node) {
            return Some(self.subs[s].id);
        }
        let p = *self.position.get(&node)?;
        innermost(&self.subs, &self.local[p]).map(|s| self.subs[s].id)
    }
}

/// The innermost of `set`: the sub-function whose owner comes first.
fn innermost(subs: &[Sub], set: &BTreeSet<usize>) -> Option<usize> {
    set.iter().copied().min_by_key(|&s| subs[s].owner)
}

/// How a super node's sub-function `k` is called in messages, e.g.
/// `sub-function 1 (body) of while %9`.
pub(crate) fn sub_function_name(node: &Node, k: usize) -> String {
    let what = match &node.op {
        Op::While { .. } => ["condition", "body"].get(k).copied().unwrap_or("?"),
        Op::If { .. } => ["then", "else"].get(k).copied().unwrap_or("?"),
        Op::Case { .. } => "branch",
        _ => "body",
    };
    format!(
        "sub-function {k} ({what}) of {} {}",
        node.op.kind(),
        node.id
    )
}

/// The scopes of `graph` (module documentation), from its list alone (the position
/// and consumer indexes are not used).
pub fn scopes(graph: &Graph) -> Result<Scopes, ScopeError> {
    let position = structure(graph).map_err(ScopeError::Malformed)?;
    let (scopes, violations) = trace(graph, position);
    if violations.is_empty() {
        Ok(scopes)
    } else {
        Err(ScopeError::Locality(violations))
    }
}

fn violation(nodes: Vec<NodeId>, message: String) -> Violation {
    Violation { nodes, message }
}

/// The preconditions of tracing; each id's position.
fn structure(graph: &Graph) -> Result<HashMap<NodeId, usize>, Vec<Violation>> {
    let nodes = graph.nodes();
    let mut out = Vec::new();
    let mut position = HashMap::new();
    for (p, n) in nodes.iter().enumerate() {
        if n.id.0 == 0 {
            out.push(violation(
                vec![n.id],
                format!("node at position {p} has id 0"),
            ));
        } else if position.insert(n.id, p).is_some() {
            out.push(violation(vec![n.id], format!("{}: id used twice", n.id)));
        }
    }
    let exists = |r: Ref, before: usize| {
        position
            .get(&r.node)
            .is_some_and(|&q| q < before && r.output < nodes[q].outputs.len())
    };
    for (p, n) in nodes.iter().enumerate() {
        if let Some(r) = n.uses().into_iter().find(|r| !exists(*r, p)) {
            out.push(violation(
                vec![n.id, r.node],
                format!("{}: reads {r}, which is not an earlier value", n.id),
            ));
        }
    }
    for r in graph.interface.outputs.iter().filter_map(Source::as_ref) {
        if !exists(r, nodes.len()) {
            out.push(violation(
                vec![r.node],
                format!("a graph output reads {r}, which does not exist"),
            ));
        }
    }
    let is_input = |id: NodeId| {
        position
            .get(&id)
            .is_some_and(|&q| matches!(nodes[q].op, Op::Input { .. }))
    };
    let top = graph.interface.input;
    let mut named: HashMap<NodeId, NodeId> = HashMap::new();
    if is_input(top) {
        named.insert(top, top);
    } else {
        out.push(violation(
            vec![top],
            format!("{top}: the graph's interface input is not an Input node"),
        ));
    }
    for n in nodes {
        for (k, i) in n.op.interfaces().iter().enumerate() {
            if !is_input(i.input) {
                out.push(violation(
                    vec![n.id, i.input],
                    format!(
                        "{}: the Input node {} of {} is not an Input node of the graph",
                        n.id,
                        i.input,
                        sub_function_name(n, k)
                    ),
                ));
            } else if named.insert(i.input, n.id).is_some() {
                out.push(violation(
                    vec![n.id, i.input],
                    format!(
                        "{}: the Input node {} of {} belongs to another interface",
                        n.id,
                        i.input,
                        sub_function_name(n, k)
                    ),
                ));
            }
        }
    }
    for n in nodes {
        if matches!(n.op, Op::Input { .. }) && !named.contains_key(&n.id) {
            out.push(violation(
                vec![n.id],
                format!("{}: Input node named by no interface", n.id),
            ));
        }
    }
    if out.is_empty() {
        Ok(position)
    } else {
        Err(out)
    }
}

/// The forward pass (module documentation); requires [`structure`] to hold.
fn trace(graph: &Graph, position: HashMap<NodeId, usize>) -> (Scopes, Vec<Violation>) {
    let nodes = graph.nodes();
    let mut out = Vec::new();
    let mut subs: Vec<Sub> = Vec::new();
    // Position -> the indexes in `subs` of the node's own sub-functions.
    let mut owned: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
    let mut of_input: HashMap<NodeId, usize> = HashMap::new();
    for (p, n) in nodes.iter().enumerate() {
        for (k, i) in n.op.interfaces().iter().enumerate() {
            of_input.insert(i.input, subs.len());
            owned[p].push(subs.len());
            subs.push(Sub {
                id: SubId {
                    super_node: n.id,
                    branch: k,
                },
                owner: p,
                input: i.input,
            });
            if position[&i.input] > p {
                out.push(violation(
                    vec![i.input, n.id],
                    format!(
                        "{}: the Input node of {} comes after it",
                        i.input,
                        sub_function_name(n, k)
                    ),
                ));
            }
        }
    }
    let order_ok = out.is_empty();
    let name = |s: usize| sub_function_name(&nodes[subs[s].owner], subs[s].id.branch);
    let describe = |r: Ref, s: usize| {
        if r.node == subs[s].input {
            format!("{r}, a parameter of {}", name(s))
        } else {
            format!("{r}, local to {}", name(s))
        }
    };
    let reads = |local: &[BTreeSet<usize>], r: Ref| -> BTreeSet<usize> {
        let mut set = local[position[&r.node]].clone();
        set.extend(of_input.get(&r.node).copied());
        set
    };
    let mut local: Vec<BTreeSet<usize>> = Vec::with_capacity(nodes.len());
    // Per sub-function g: the constraints of nodes local to g whose owners come after
    // g's owner (containment).
    let mut contained: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); subs.len()];
    for (p, n) in nodes.iter().enumerate() {
        let own = owned[p].as_slice();
        let mut set = BTreeSet::new();
        // (use, the sub-function whose results it is, if it is one, what it is)
        let mut uses: Vec<(Ref, Option<usize>, String)> = n
            .inputs
            .iter()
            .enumerate()
            .map(|(k, r)| (*r, None, format!("input {k}")))
            .collect();
        for (j, i) in n.op.interfaces().iter().enumerate() {
            for (k, s) in i.outputs.iter().enumerate() {
                if let Source::Ref(r) = s {
                    uses.push((*r, Some(j), format!("sub-function {j}'s result {k}")));
                }
            }
        }
        let mut crossed: BTreeSet<usize> = BTreeSet::new();
        for (r, result_of, what) in uses {
            for s in reads(&local, r) {
                if let Some(pos) = own.iter().position(|&o| o == s) {
                    if result_of != Some(pos) {
                        out.push(violation(
                            vec![n.id, r.node],
                            format!(
                                "{}: {what} reads {}, other than through that sub-function's results",
                                n.id,
                                describe(r, s)
                            ),
                        ));
                    }
                    continue;
                }
                set.insert(s);
                let owner = subs[s].owner;
                let from_inside = r.node == subs[s].input || position[&r.node] < owner;
                if p > owner && from_inside && crossed.insert(s) {
                    out.push(violation(
                        vec![n.id, r.node, nodes[owner].id],
                        format!(
                            "{}: {what} reads {}, but comes after {}, outside it",
                            n.id,
                            describe(r, s),
                            nodes[owner].id
                        ),
                    ));
                }
            }
        }
        // Containment: what the node's own sub-functions hold that is not nested in it.
        for &g in own {
            set.extend(contained[g].iter().copied());
        }
        for &g in &set {
            let later = set
                .iter()
                .copied()
                .filter(|&f| subs[f].owner > subs[g].owner);
            contained[g].extend(later);
        }
        local.push(set);
    }
    for (k, s) in graph.interface.outputs.iter().enumerate() {
        if let Source::Ref(r) = s {
            for sub in reads(&local, *r) {
                out.push(violation(
                    vec![r.node, nodes[subs[sub].owner].id],
                    format!("graph output {k} reads {}", describe(*r, sub)),
                ));
            }
        }
    }
    if order_ok && out.is_empty() {
        nested(graph, &subs, &local, &mut out);
    }
    let scopes = Scopes {
        subs,
        position,
        local,
        of_input,
    };
    (scopes, out)
}

/// Every node's constraints must enclose its innermost one: the innermost's enclosing
/// sub-functions are found through the owners' own innermost constraints.
fn nested(graph: &Graph, subs: &[Sub], local: &[BTreeSet<usize>], out: &mut Vec<Violation>) {
    let nodes = graph.nodes();
    let parent: Vec<Option<usize>> = subs
        .iter()
        .map(|s| innermost(subs, &local[s.owner]))
        .collect();
    for (p, set) in local.iter().enumerate() {
        let Some(inner) = innermost(subs, set) else {
            continue;
        };
        let mut enclosing = BTreeSet::new();
        let mut cur = Some(inner);
        // Owners come strictly later at each step, so this ends; the bound is a guard.
        while let Some(s) = cur {
            if !enclosing.insert(s) || enclosing.len() > subs.len() {
                break;
            }
            cur = parent[s];
        }
        if let Some(&other) = set.iter().find(|s| !enclosing.contains(s)) {
            let (a, b) = (&subs[inner], &subs[other]);
            out.push(violation(
                vec![nodes[p].id, nodes[a.owner].id, nodes[b.owner].id],
                format!(
                    "{}: depends on the parameters of {} and of {}, which are not nested",
                    nodes[p].id,
                    sub_function_name(&nodes[a.owner], a.id.branch),
                    sub_function_name(&nodes[b.owner], b.id.branch)
                ),
            ));
        }
    }
}
