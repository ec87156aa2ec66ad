//! The verifier (DESIGN.md §14): [`verify`] checks a graph's invariants without
//! changing it and reports every violation it finds, each naming its node(s) as
//! `%id`.
//!
//! Always checked:
//! - ids are unique and non-zero, and the graph's next fresh id is above all of them;
//! - every reference (a node's inputs and its interfaces' outputs) names an existing,
//!   earlier node and one of its outputs; Input and Const nodes read nothing;
//! - the position index and the list hold the same nodes at the same places;
//! - the consumer index is exactly the map "node → nodes whose uses read it";
//! - each node's output types equal the types re-inferred from its inputs and
//!   sub-functions by [`expected_types`] (XLA's verifier): this is where a `while`
//!   condition that is not one value, a body that does not return the state's types,
//!   and `if` / `case` branches of different signatures are caught, named by the super
//!   node;
//! - `names` has one entry per output (and an Input node one parameter name per
//!   output);
//! - every interface (the graph's own included) names an existing Input node that no
//!   other interface names, and every Input node is named by exactly one interface;
//! - the graph's outputs name existing values;
//! - the locality constraints of §16 hold (and are acyclic), see [`locality`](self#locality).
//!
//! With [`Checks`] flags: [`Checks::DEAD`], [`Checks::CONSTS_FIRST`],
//! [`Checks::PARTITIONS`] (see each).
//!
//! # Locality
//!
//! The locality rules are those of [`crate::scope`], the one analysis the
//! [`hierarchy`](crate::hierarchy()) is built on: a node that depends (through any
//! path of uses) on a sub-function's Input node is local to it; a super node is not
//! local to its own sub-functions (the caveat of seed 003) but is local to whatever the
//! nodes inside its sub-functions are local to (containment: it contains its bodies,
//! dead values included). The verifier reports every violation of [`crate::scope`]:
//! - a sub-function's Input node comes before its super node;
//! - a super node reads values local to its sub-function `k` only through `k`'s
//!   results (not as an input, nor from another of its sub-functions);
//! - the graph's outputs read no value local to a sub-function;
//! - every node local to a sub-function comes before the sub-function's super node
//!   (a reader after it would be outside it). The list order is then an order of the
//!   super nodes in which a node local to `f` comes before `f`'s owner, so the
//!   constraints are acyclic (§16's ordering exists: it is the list order);
//! - a node's constraints are nested: every sub-function it is local to encloses the
//!   innermost one (the one whose super node comes first), so the node has a place.
//!
//! So on a graph whose other invariants hold, `verify` finds no locality violation
//! exactly when [`hierarchy`](crate::hierarchy()) returns a hierarchy.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

use crate::infer::{expected_types, list};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source};
use crate::scope::{ScopeError, scopes, sub_function_name};
pub use crate::vocab::Violation;

/// Optional checks of [`verify`], combinable with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Checks(u8);

impl Checks {
    /// Only the invariants that always hold.
    pub const NONE: Checks = Checks(0);
    /// No dead nodes: every node is read by another node or is a graph output,
    /// except Input nodes, Sink nodes and nodes flagged [`crate::Flags::RETAIN`]
    /// (after the `dead` pass ran).
    pub const DEAD: Checks = Checks(1);
    /// The graph's Input node is first, then every Const, then every other node;
    /// sub-function Input nodes are exempt (they may stand anywhere before their
    /// super node, also among the Consts) (after the `consts` pass ran).
    pub const CONSTS_FIRST: Checks = Checks(2);
    /// Graph-looping partitions (§20, after the `loops` pass ran): at most 4 chunk
    /// nodes, each downstream of the previous one, every graph output in the last
    /// partition, uop's rules of `docs/graph-looping.md`, the nodes sorted by
    /// partition and every tensor read in a later partition held by a Sink.
    pub const PARTITIONS: Checks = Checks(4);
    /// Every flag.
    pub const ALL: Checks = Checks(7);

    /// True when every flag of `other` is set.
    pub fn contains(self, other: Checks) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for Checks {
    type Output = Checks;
    fn bitor(self, rhs: Checks) -> Checks {
        Checks(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for Checks {
    fn bitor_assign(&mut self, rhs: Checks) {
        self.0 |= rhs.0;
    }
}

/// Every violation [`verify`] found, in the order checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyError {
    /// The violations (never empty).
    pub violations: Vec<Violation>,
}

impl VerifyError {
    /// True when some violation's message contains `text` and names `node`.
    pub fn mentions(&self, node: NodeId, text: &str) -> bool {
        self.violations
            .iter()
            .any(|v| v.nodes.contains(&node) && v.message.contains(text))
    }
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, v) in self.violations.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{v}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyError {}

/// Checks `graph`'s invariants (module docs) and the optional `checks`; never
/// changes the graph. Returns every violation found.
///
/// ```
/// use uop_graph::{verify, Checks, GraphBuilder};
/// use uop_codegen::uop::DType;
///
/// let mut g = GraphBuilder::new(DType::F32);
/// let x = g.input("x", DType::F32, &["N"])?;
/// let y = g.op("exp", &[x])?;
/// g.output(y);
/// verify(&g.finish(), Checks::DEAD)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify(graph: &Graph, checks: Checks) -> Result<(), VerifyError> {
    let mut v = Verifier::new(graph);
    v.ids();
    v.position_index();
    v.references();
    v.consumer_index();
    v.names();
    v.interfaces();
    v.graph_outputs();
    v.types();
    if v.structure_ok() {
        // The scope analysis the hierarchy is built on (`scope.rs`). A `Malformed`
        // answer repeats what the structural checks above reported, so it cannot
        // occur here; it is reported all the same rather than hidden.
        if let Err(ScopeError::Locality(found) | ScopeError::Malformed(found)) = scopes(graph) {
            v.out.extend(found);
        }
    }
    if checks.contains(Checks::DEAD) {
        v.dead();
    }
    if checks.contains(Checks::CONSTS_FIRST) {
        v.consts_first();
    }
    if checks.contains(Checks::PARTITIONS) {
        v.out.extend(check_partitions(graph));
    }
    if v.out.is_empty() {
        Ok(())
    } else {
        Err(VerifyError { violations: v.out })
    }
}

/// The §20 partition rules checked by [`Checks::PARTITIONS`] (`crate::looping`).
fn check_partitions(graph: &Graph) -> Vec<Violation> {
    crate::looping::partition::violations(graph)
}

/// The ids as `%a, %b`.
fn join(ids: &[NodeId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

struct Verifier<'g> {
    graph: &'g Graph,
    /// Each id's first position in the list, built from the list alone.
    first: HashMap<NodeId, usize>,
    /// Ids that occur more than once (their position is not checked).
    twice: HashSet<NodeId>,
    /// Whether some id is 0 or occurs twice.
    duplicated: bool,
    /// Positions of nodes with a bad reference (not type-checked).
    bad_refs: BTreeSet<usize>,
    /// Whether the position and consumer indexes are exact.
    indexes_ok: bool,
    /// Whether every interface names an existing Input node, each once.
    interfaces_ok: bool,
    out: Vec<Violation>,
}

impl<'g> Verifier<'g> {
    fn new(graph: &'g Graph) -> Self {
        let mut first = HashMap::new();
        let mut twice = HashSet::new();
        for (p, n) in graph.nodes().iter().enumerate() {
            if first.contains_key(&n.id) {
                twice.insert(n.id);
            }
            first.entry(n.id).or_insert(p);
        }
        Verifier {
            graph,
            first,
            twice,
            duplicated: false,
            bad_refs: BTreeSet::new(),
            indexes_ok: true,
            interfaces_ok: true,
            out: Vec::new(),
        }
    }

    fn report(&mut self, nodes: Vec<NodeId>, message: String) {
        self.out.push(Violation { nodes, message });
    }

    /// True when the list is well formed enough to trace dependencies.
    fn structure_ok(&self) -> bool {
        !self.duplicated && self.bad_refs.is_empty() && self.interfaces_ok
    }

    fn ids(&mut self) {
        let mut max = 0;
        for (p, n) in self.graph.nodes().iter().enumerate() {
            max = max.max(n.id.0);
            if n.id.0 == 0 {
                self.report(
                    vec![n.id],
                    format!("{}: node at position {p} has id 0", n.id),
                );
                self.duplicated = true;
            }
            let f = self.first[&n.id];
            if f != p && n.id.0 != 0 {
                self.duplicated = true;
                self.report(
                    vec![n.id],
                    format!(
                        "{}: id used twice, at positions {f} and {p} ({} and {})",
                        n.id,
                        self.graph.nodes()[f].op.kind(),
                        n.op.kind()
                    ),
                );
            }
        }
        if self.graph.next_id <= max {
            self.report(
                Vec::new(),
                format!(
                    "the next fresh id {} is not above the largest id %{max}",
                    NodeId(self.graph.next_id)
                ),
            );
        }
    }

    fn position_index(&mut self) {
        let g = self.graph;
        for (p, n) in g.nodes().iter().enumerate() {
            if self.first[&n.id] != p || self.twice.contains(&n.id) {
                continue;
            }
            match g.position.get(&n.id) {
                Some(&q) if q == p => {}
                Some(&q) => {
                    self.indexes_ok = false;
                    self.report(
                        vec![n.id],
                        format!("{}: at position {p}, but the position index says {q}", n.id),
                    );
                }
                None => {
                    self.indexes_ok = false;
                    self.report(
                        vec![n.id],
                        format!("{}: at position {p}, missing from the position index", n.id),
                    );
                }
            }
        }
        let mut stale: Vec<(NodeId, usize)> = g
            .position
            .iter()
            .filter(|(id, _)| !self.first.contains_key(id))
            .map(|(id, p)| (*id, *p))
            .collect();
        stale.sort();
        for (id, p) in stale {
            self.indexes_ok = false;
            self.report(
                vec![id],
                format!("{id}: in the position index (at {p}) but not in the list"),
            );
        }
    }

    /// Checks one reference of the node at position `p`; `what` says which.
    fn reference(&mut self, p: usize, r: Ref, what: &str) -> bool {
        let node = &self.graph.nodes()[p];
        let problem = match self.first.get(&r.node) {
            _ if r.node.0 == 0 => Some(format!("reads {r}, an id that is never valid")),
            None => Some(format!("reads {r}, which does not exist")),
            Some(&q) if q == p => Some(format!("reads {r}, itself")),
            Some(&q) if q > p => Some(format!(
                "reads {r}, which comes later (position {q}, this node is at {p})"
            )),
            Some(&q) => {
                let n = self.graph.nodes()[q].outputs.len();
                (r.output >= n).then(|| format!("reads {r}, but {} has {n} outputs", r.node))
            }
        };
        match problem {
            None => true,
            Some(m) => {
                let id = node.id;
                self.report(vec![id, r.node], format!("{id}: {what} {m}"));
                false
            }
        }
    }

    fn references(&mut self) {
        let g = self.graph;
        for (p, n) in g.nodes().iter().enumerate() {
            let mut ok = true;
            for (k, r) in n.inputs.iter().enumerate() {
                ok &= self.reference(p, *r, &format!("input {k}"));
            }
            for (j, i) in n.op.interfaces().iter().enumerate() {
                for (k, s) in i.outputs.iter().enumerate() {
                    if let Source::Ref(r) = s {
                        ok &= self.reference(p, *r, &format!("sub-function {j}'s result {k}"));
                    }
                }
            }
            if matches!(n.op, Op::Input { .. } | Op::Const(_)) && !n.inputs.is_empty() {
                ok = false;
                self.report(
                    vec![n.id],
                    format!("{}: {} node with inputs", n.id, n.op.kind()),
                );
            }
            if !ok {
                self.bad_refs.insert(p);
            }
        }
    }

    /// The consumer map built from the list.
    fn consumers(&self) -> HashMap<NodeId, BTreeSet<NodeId>> {
        let mut map: HashMap<NodeId, BTreeSet<NodeId>> = HashMap::new();
        for n in self.graph.nodes() {
            for r in n.uses() {
                map.entry(r.node).or_default().insert(n.id);
            }
        }
        map
    }

    fn consumer_index(&mut self) {
        let g = self.graph;
        let actual = self.consumers();
        let empty = BTreeSet::new();
        let mut keys: BTreeSet<NodeId> = actual.keys().copied().collect();
        keys.extend(g.consumers.keys().copied());
        for id in keys {
            let want = actual.get(&id).unwrap_or(&empty);
            let have = g.consumers.get(&id).unwrap_or(&empty);
            if want != have {
                self.indexes_ok = false;
                let have_ids: Vec<NodeId> = have.iter().copied().collect();
                let want_ids: Vec<NodeId> = want.iter().copied().collect();
                let mut nodes = vec![id];
                nodes.extend(have_ids.iter().chain(&want_ids));
                self.report(
                    nodes,
                    format!(
                        "{id}: the consumer index lists ({}) as its readers, but ({}) read it",
                        join(&have_ids),
                        join(&want_ids)
                    ),
                );
            }
        }
    }

    fn names(&mut self) {
        for n in self.graph.nodes() {
            if n.names.len() != n.outputs.len() {
                self.report(
                    vec![n.id],
                    format!(
                        "{}: {} output names for {} outputs",
                        n.id,
                        n.names.len(),
                        n.outputs.len()
                    ),
                );
            }
            if let Op::Input { names } = &n.op
                && names.len() != n.outputs.len()
            {
                self.report(
                    vec![n.id],
                    format!(
                        "{}: {} parameter names for {} parameters",
                        n.id,
                        names.len(),
                        n.outputs.len()
                    ),
                );
            }
        }
    }

    fn interfaces(&mut self) {
        let g = self.graph;
        // (owner, k, input); owner None = the graph.
        let mut named: Vec<(Option<&Node>, usize, NodeId)> = vec![(None, 0, g.interface.input)];
        for n in g.nodes() {
            for (k, i) in n.op.interfaces().iter().enumerate() {
                named.push((Some(n), k, i.input));
            }
        }
        let who = |owner: Option<&Node>, k: usize| match owner {
            None => "the graph's interface".to_string(),
            Some(n) => sub_function_name(n, k),
        };
        let mut namer: HashMap<NodeId, (Option<&Node>, usize)> = HashMap::new();
        for &(owner, k, input) in &named {
            let subject = owner.map(|n| n.id);
            let mut nodes: Vec<NodeId> = subject.into_iter().collect();
            nodes.push(input);
            match self.first.get(&input).map(|&p| &g.nodes()[p]) {
                None => {
                    self.interfaces_ok = false;
                    self.report(
                        nodes,
                        format!(
                            "{} names {input} as its Input node, which does not exist",
                            who(owner, k)
                        ),
                    );
                    continue;
                }
                Some(n) if !matches!(n.op, Op::Input { .. }) => {
                    self.interfaces_ok = false;
                    self.report(
                        nodes,
                        format!(
                            "{} names {input} as its Input node, but it is a {} node",
                            who(owner, k),
                            n.op.kind()
                        ),
                    );
                    continue;
                }
                Some(_) => {}
            }
            if let Some(&(o, j)) = namer.get(&input) {
                self.interfaces_ok = false;
                nodes.extend(o.map(|n| n.id));
                self.report(
                    nodes,
                    format!(
                        "{input}: Input node named by {} and by {}",
                        who(o, j),
                        who(owner, k)
                    ),
                );
            } else {
                namer.insert(input, (owner, k));
            }
        }
        for n in g.nodes() {
            if matches!(n.op, Op::Input { .. }) && !namer.contains_key(&n.id) {
                self.interfaces_ok = false;
                self.report(
                    vec![n.id],
                    format!("{}: Input node named by no interface", n.id),
                );
            }
        }
    }

    fn graph_outputs(&mut self) {
        let g = self.graph;
        for (k, s) in g.interface.outputs.iter().enumerate() {
            let Source::Ref(r) = s else { continue };
            let problem = match self.first.get(&r.node) {
                None => Some("which does not exist".to_string()),
                Some(&q) => {
                    let n = g.nodes()[q].outputs.len();
                    (r.output >= n).then(|| format!("but {} has {n} outputs", r.node))
                }
            };
            if let Some(m) = problem {
                self.report(vec![r.node], format!("graph output {k} reads {r}, {m}"));
            }
        }
    }

    fn types(&mut self) {
        let fixed;
        let view: &Graph = if self.indexes_ok && !self.duplicated {
            self.graph
        } else {
            // Types are looked up through the indexes: use a copy with exact ones.
            let mut copy = self.graph.clone();
            copy.reindex();
            fixed = copy;
            &fixed
        };
        for (p, n) in view.nodes().iter().enumerate() {
            if self.bad_refs.contains(&p) {
                continue;
            }
            let interfaces_fine = n.op.interfaces().iter().all(|i| {
                self.first
                    .get(&i.input)
                    .is_some_and(|&q| matches!(view.nodes()[q].op, Op::Input { .. }))
            });
            if !interfaces_fine {
                continue;
            }
            match expected_types(view, n) {
                Err(m) => self.report(vec![n.id], format!("{}: {}: {m}", n.id, n.op.kind())),
                Ok(t) if t != n.outputs => self.report(
                    vec![n.id],
                    format!(
                        "{}: {} has output types ({}), but its inputs give ({})",
                        n.id,
                        n.op.kind(),
                        list(&n.outputs),
                        list(&t)
                    ),
                ),
                Ok(_) => {}
            }
        }
    }

    fn dead(&mut self) {
        let g = self.graph;
        let read = self.consumers();
        let outputs: BTreeSet<NodeId> = g
            .interface
            .outputs
            .iter()
            .filter_map(|s| s.as_ref().map(|r| r.node))
            .collect();
        for n in g.nodes() {
            let exempt = matches!(n.op, Op::Input { .. } | Op::Sink)
                || n.flags.contains(crate::ir::Flags::RETAIN);
            if !exempt && !read.contains_key(&n.id) && !outputs.contains(&n.id) {
                self.report(
                    vec![n.id],
                    format!(
                        "{}: dead {} node (no node reads it, it is not a graph output and not RETAIN)",
                        n.id,
                        n.op.kind()
                    ),
                );
            }
        }
    }

    fn consts_first(&mut self) {
        let g = self.graph;
        let input = g.interface.input;
        if let Some(first) = g.nodes().first()
            && first.id != input
        {
            self.report(
                vec![input, first.id],
                format!(
                    "{input}: the graph's Input node is not first ({} is)",
                    first.id
                ),
            );
        }
        let mut other: Option<&Node> = None;
        for n in g.nodes() {
            match (&n.op, other) {
                (Op::Input { .. }, _) => {}
                (Op::Const(_), Some(o)) => self.report(
                    vec![n.id, o.id],
                    format!(
                        "{}: Const after {}, a {} node (Consts go first)",
                        n.id,
                        o.id,
                        o.op.kind()
                    ),
                ),
                (Op::Const(_), None) => {}
                (_, None) => other = Some(n),
                (_, Some(_)) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests;
