//! The definition hierarchy (DESIGN.md §16, after Feldspar's `makeHierarchical`,
//! seed 003): where each node of the flat list lives — at the top level or inside
//! the innermost sub-function it must be local to.
//!
//! 1. **Sub-functions** are numbered per super node in [`Op::interfaces`] order
//!    (`while`: condition 0, body 1; `if`: then 0, else 1; `case`: branch k).
//! 2. **Locality:** a node that depends, through any path, on a sub-function's Input
//!    node is local to that sub-function. While tracing sub-function f, a super node
//!    depends on its sub-functions' outputs too, except f's own owner (a function
//!    cannot be owned by something local to itself: the seed's caveat).
//! 3. **Order of super nodes:** a super node local to f comes before f's owner; a
//!    cycle in that order is an error naming the super nodes.
//! 4. **Placement:** each node goes to the minimal (innermost) sub-function among its
//!    constraints by that order, the top level if it has none. So everything that
//!    does not depend on a loop's state is computed once, outside the loop.
//! 5. **The memory guard** (after XLA's while-loop invariant code motion, which does
//!    not hoist size-inflating instructions): a computing node (Call or Kernel) that
//!    would be hoisted out of a `while` body although every use of it is inside that
//!    body, and whose output is larger than its inputs ([`inflates`]), stays in the
//!    innermost `while` body that holds every use.
//! 6. **Check:** every value a node reads (and every value a sub-function returns) is
//!    visible where it is read: defined in the same sub-function or an enclosing one.
//!
//! A super node owns its sub-functions; a sub-function owns the nodes placed in it
//! and its Input node (as its parameter list). Each level lists its nodes in
//! execution order (list position); see `docs/graph-hierarchy.md`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Write as _;

use thiserror::Error;
use uop_codegen::index::Expr;

use crate::ir::{Call, CallValue, Graph, ListItem, Node, NodeId, Op, Ref, Source, ValueType};

/// One sub-function: branch `branch` of super node `super_node`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SubId {
    /// The owner.
    pub super_node: NodeId,
    /// Which of its sub-functions, numbered as [`Op::interfaces`].
    pub branch: usize,
}

impl std::fmt::Display for SubId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "sub-function {} of {}", self.branch, self.super_node)
    }
}

/// A definition: a node, with the sub-functions it owns when it is a super node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The node.
    pub node: NodeId,
    /// Its sub-functions, in [`Op::interfaces`] order (empty for other nodes).
    pub subs: Vec<SubFunction>,
}

/// A sub-function and the definitions it owns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubFunction {
    /// The super node owning it.
    pub super_node: NodeId,
    /// Its number within the super node.
    pub branch: usize,
    /// Its Input node (the parameter list).
    pub input: NodeId,
    /// The definitions placed in it, in execution order.
    pub nodes: Vec<Entry>,
}

impl SubFunction {
    /// Its identity.
    pub fn id(&self) -> SubId {
        SubId {
            super_node: self.super_node,
            branch: self.branch,
        }
    }
}

/// The definition hierarchy of a graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hierarchy {
    /// The graph's Input node.
    pub input: NodeId,
    /// The top-level definitions, in execution order.
    pub top: Vec<Entry>,
    /// Where each node is placed (`None`: the top level). Input nodes of
    /// sub-functions map to their sub-function; the graph's Input node to `None`.
    pub placement: HashMap<NodeId, Option<SubId>>,
}

impl Hierarchy {
    /// The sub-function `node` is placed in (`None` for the top level), or `None`
    /// when the node is not in the graph.
    pub fn scope_of(&self, node: NodeId) -> Option<Option<SubId>> {
        self.placement.get(&node).copied()
    }

    /// The chain of sub-functions enclosing `scope`, from `scope` itself outwards
    /// (empty for the top level).
    pub fn enclosing(&self, scope: Option<SubId>) -> Vec<SubId> {
        let mut chain = Vec::new();
        let mut at = scope;
        while let Some(s) = at {
            chain.push(s);
            at = self.placement.get(&s.super_node).copied().flatten();
        }
        chain
    }
}

/// Why a graph has no valid definition hierarchy.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum HierarchyError {
    /// A reference or interface names a node that is not in the graph, or an
    /// interface's input is not an Input node of its own.
    #[error("{node}: {message}")]
    Malformed {
        /// The node whose reference or interface is wrong.
        node: NodeId,
        /// What is wrong.
        message: String,
    },
    /// A super node reads a value that depends on the parameters of one of its own
    /// sub-functions.
    #[error(
        "{node} reads {value}, which depends on the parameters of its own sub-function {branch}"
    )]
    OwnParameters {
        /// The super node.
        node: NodeId,
        /// The value it reads.
        value: NodeId,
        /// The sub-function.
        branch: usize,
    },
    /// The locality constraints order super nodes in a cycle.
    #[error("the locality constraints are cyclic among super nodes {}", ids(.nodes))]
    Cycle {
        /// The super nodes on or behind the cycle.
        nodes: Vec<NodeId>,
    },
    /// A node depends on the parameters of two sub-functions of one super node.
    #[error(
        "{node} depends on the parameters of sub-functions {first} and {second} of {super_node}"
    )]
    Siblings {
        /// The node.
        node: NodeId,
        /// The super node.
        super_node: NodeId,
        /// One sub-function.
        first: usize,
        /// The other.
        second: usize,
    },
    /// A node reads a value that is not visible where the node is placed (it depends
    /// on sub-functions that do not nest).
    #[error("{node} reads {value}, which is not visible where {node} is placed ({place})")]
    NotVisible {
        /// The reading node (or the super node whose sub-function returns the value).
        node: NodeId,
        /// The value.
        value: Ref,
        /// Where the reader is, in words.
        place: String,
    },
}

fn ids(nodes: &[NodeId]) -> String {
    nodes
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn place_name(scope: Option<SubId>) -> String {
    match scope {
        None => "the top level".to_string(),
        Some(s) => s.to_string(),
    }
}

/// The definition hierarchy of `graph` (see the module documentation).
pub fn hierarchy(graph: &Graph) -> Result<Hierarchy, HierarchyError> {
    let top_input = graph.interface.input;
    match graph.node(top_input).map(|n| &n.op) {
        Some(Op::Input { .. }) => {}
        _ => {
            return Err(HierarchyError::Malformed {
                node: top_input,
                message: "the graph's interface input is not an Input node".into(),
            });
        }
    }
    // 1. Sub-functions, by Input node.
    let mut subs: Vec<(SubId, NodeId)> = Vec::new();
    let mut by_input: HashMap<NodeId, SubId> = HashMap::new();
    for n in graph.nodes() {
        for r in n.uses() {
            if graph.node(r.node).is_none() {
                return Err(HierarchyError::Malformed {
                    node: n.id,
                    message: format!("reads {r}, which is not in the graph"),
                });
            }
        }
        for (k, i) in n.op.interfaces().into_iter().enumerate() {
            let sub = SubId {
                super_node: n.id,
                branch: k,
            };
            if !matches!(graph.node(i.input).map(|n| &n.op), Some(Op::Input { .. })) {
                return Err(HierarchyError::Malformed {
                    node: n.id,
                    message: format!("sub-function {k}'s input {} is not an Input node", i.input),
                });
            }
            if i.input == top_input || by_input.insert(i.input, sub).is_some() {
                return Err(HierarchyError::Malformed {
                    node: n.id,
                    message: format!(
                        "sub-function {k}'s input {} is the input of another interface",
                        i.input
                    ),
                });
            }
            subs.push((sub, i.input));
        }
    }
    // 2. Locality constraints.
    let mut constraints: HashMap<NodeId, Vec<SubId>> = HashMap::new();
    for &(sub, input) in &subs {
        let owner = sub.super_node;
        let mut seen: HashSet<NodeId> = HashSet::from([input]);
        let mut queue = VecDeque::from([input]);
        while let Some(u) = queue.pop_front() {
            for v in graph.consumers(u) {
                if v == owner {
                    let reads_directly = graph
                        .node(owner)
                        .is_some_and(|o| o.inputs.iter().any(|r| r.node == u));
                    if reads_directly {
                        return Err(HierarchyError::OwnParameters {
                            node: owner,
                            value: u,
                            branch: sub.branch,
                        });
                    }
                    continue;
                }
                if seen.insert(v) {
                    constraints.entry(v).or_default().push(sub);
                    queue.push_back(v);
                }
            }
        }
    }
    // 3. Order of super nodes: v before owner(f) when v is local to f.
    let order = order_super_nodes(graph, &constraints)?;
    // 4. Placement in the minimal sub-function.
    let mut placement: HashMap<NodeId, Option<SubId>> = HashMap::new();
    placement.insert(top_input, None);
    for &(sub, input) in &subs {
        placement.insert(input, Some(sub));
    }
    for n in graph.nodes() {
        if placement.contains_key(&n.id) {
            continue;
        }
        let place = match constraints.get(&n.id) {
            None => None,
            Some(cs) => Some(minimal(n.id, cs, &order)?),
        };
        placement.insert(n.id, place);
    }
    // 5. The memory guard.
    sink_inflating(graph, &mut placement);
    // 6. Visibility.
    let h = Hierarchy {
        input: top_input,
        top: Vec::new(),
        placement,
    };
    check_visible(graph, &h)?;
    // The tree.
    let mut children: HashMap<Option<SubId>, Vec<NodeId>> = HashMap::new();
    for n in graph.nodes() {
        if n.id == top_input || by_input.contains_key(&n.id) {
            continue;
        }
        children.entry(h.placement[&n.id]).or_default().push(n.id);
    }
    let top = entries(graph, &children, None);
    Ok(Hierarchy { top, ..h })
}

fn entries(
    graph: &Graph,
    children: &HashMap<Option<SubId>, Vec<NodeId>>,
    scope: Option<SubId>,
) -> Vec<Entry> {
    children
        .get(&scope)
        .map(|ids| {
            ids.iter()
                .map(|&id| {
                    let subs = graph
                        .node(id)
                        .map(|n| {
                            n.op.interfaces()
                                .into_iter()
                                .enumerate()
                                .map(|(k, i)| {
                                    let sub = SubId {
                                        super_node: id,
                                        branch: k,
                                    };
                                    SubFunction {
                                        super_node: id,
                                        branch: k,
                                        input: i.input,
                                        nodes: entries(graph, children, Some(sub)),
                                    }
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    Entry { node: id, subs }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A total order of the super nodes (rank by id) in which a super node local to
/// sub-function f comes before f's owner; ties broken by list position.
fn order_super_nodes(
    graph: &Graph,
    constraints: &HashMap<NodeId, Vec<SubId>>,
) -> Result<HashMap<NodeId, usize>, HierarchyError> {
    let supers: Vec<NodeId> = graph
        .nodes()
        .iter()
        .filter(|n| n.op.is_super())
        .map(|n| n.id)
        .collect();
    let mut after: HashMap<NodeId, Vec<NodeId>> = HashMap::new();
    let mut indegree: HashMap<NodeId, usize> = supers.iter().map(|&s| (s, 0)).collect();
    for &s in &supers {
        let mut owners: Vec<NodeId> = constraints
            .get(&s)
            .map(|cs| cs.iter().map(|c| c.super_node).collect())
            .unwrap_or_default();
        owners.sort();
        owners.dedup();
        for o in owners {
            after.entry(s).or_default().push(o);
            *indegree.entry(o).or_default() += 1;
        }
    }
    // Kahn's algorithm, always taking the ready super node earliest in the list.
    let pos = |id: NodeId| graph.position(id).unwrap_or(usize::MAX);
    let mut ready: BTreeMap<usize, NodeId> = supers
        .iter()
        .filter(|s| indegree[*s] == 0)
        .map(|&s| (pos(s), s))
        .collect();
    let mut order = HashMap::new();
    while let Some((_, s)) = ready.pop_first() {
        order.insert(s, order.len());
        for &o in after.get(&s).map(Vec::as_slice).unwrap_or_default() {
            let d = indegree.get_mut(&o).expect("every owner is a super node");
            *d -= 1;
            if *d == 0 {
                ready.insert(pos(o), o);
            }
        }
    }
    if order.len() < supers.len() {
        let nodes = supers
            .into_iter()
            .filter(|s| !order.contains_key(s))
            .collect();
        return Err(HierarchyError::Cycle { nodes });
    }
    Ok(order)
}

/// The minimal sub-function among `node`'s constraints: the one whose owner comes
/// first in the order.
fn minimal(
    node: NodeId,
    constraints: &[SubId],
    order: &HashMap<NodeId, usize>,
) -> Result<SubId, HierarchyError> {
    let mut best = constraints[0];
    for &c in &constraints[1..] {
        if c.super_node == best.super_node && c.branch != best.branch {
            return Err(HierarchyError::Siblings {
                node,
                super_node: c.super_node,
                first: best.branch.min(c.branch),
                second: best.branch.max(c.branch),
            });
        }
        if order[&c.super_node] < order[&best.super_node] {
            best = c;
        }
    }
    Ok(best)
}

/// The places where `node`'s value is read: the placement of each node reading it
/// as an input, each sub-function returning it, and the top level for a graph
/// output.
fn use_places(
    graph: &Graph,
    placement: &HashMap<NodeId, Option<SubId>>,
    node: NodeId,
) -> Vec<Option<SubId>> {
    let mut places = Vec::new();
    for c in graph.consumers(node) {
        let Some(cn) = graph.node(c) else { continue };
        if cn.inputs.iter().any(|r| r.node == node) {
            places.push(placement.get(&c).copied().flatten());
        }
        for (k, i) in cn.op.interfaces().into_iter().enumerate() {
            if i.outputs
                .iter()
                .any(|s| s.as_ref().is_some_and(|r| r.node == node))
            {
                places.push(Some(SubId {
                    super_node: c,
                    branch: k,
                }));
            }
        }
    }
    let is_output = graph
        .interface
        .outputs
        .iter()
        .any(|s| s.as_ref().is_some_and(|r| r.node == node));
    if is_output {
        places.push(None);
    }
    places
}

/// The chain from `scope` outwards, `scope` first, ending with the top level (`None`).
fn chain(placement: &HashMap<NodeId, Option<SubId>>, scope: Option<SubId>) -> Vec<Option<SubId>> {
    let mut out = vec![scope];
    let mut at = scope;
    while let Some(s) = at {
        at = placement.get(&s.super_node).copied().flatten();
        out.push(at);
    }
    out
}

/// Step 5: computing nodes that inflate stay in the innermost `while` body holding
/// every use, when that body is inside the place they would otherwise go.
fn sink_inflating(graph: &Graph, placement: &mut HashMap<NodeId, Option<SubId>>) {
    for n in graph.nodes().iter().rev() {
        if !matches!(n.op, Op::Call(_) | Op::Kernel(_)) || !inflates(graph, n) {
            continue;
        }
        let places = use_places(graph, placement, n.id);
        let Some((first, rest)) = places.split_first() else {
            continue;
        };
        // The innermost scope enclosing every use.
        let mut common = chain(placement, *first);
        for p in rest {
            let c = chain(placement, *p);
            common.retain(|s| c.contains(s));
        }
        let here = placement[&n.id];
        let Some(at) = common.iter().position(|s| *s == here) else {
            continue;
        };
        for &s in &common[..at] {
            let Some(sub) = s else { break };
            let is_body = sub.branch == 1
                && matches!(
                    graph.node(sub.super_node).map(|n| &n.op),
                    Some(Op::While { .. })
                );
            if is_body {
                placement.insert(n.id, s);
                break;
            }
        }
    }
}

/// Bytes of a value as a monomial in its symbolic sizes: a constant factor (the
/// integer sizes times the element size) and the other sizes, as sorted text.
fn bytes(t: &ValueType) -> (u128, Vec<String>) {
    let mut coef = t.dtype.size() as u128;
    let mut symbols = Vec::new();
    for d in &t.shape {
        match d {
            Expr::Int(v) => coef = coef.saturating_mul((*v).max(0) as u128),
            other => symbols.push(other.to_string()),
        }
    }
    symbols.sort();
    (coef, symbols)
}

/// True when `symbols` holds every symbol of `part` (as multisets).
fn contains_all(symbols: &[String], part: &[String]) -> bool {
    let mut rest = symbols.to_vec();
    part.iter().all(|s| match rest.iter().position(|r| r == s) {
        Some(k) => {
            rest.remove(k);
            true
        }
        None => false,
    })
}

/// XLA's size-inflation test for one node: its output is larger (in bytes) than the
/// sum of the inputs it reads (a call's shape sources, `sources=[x]`, are not read). Sizes are monomials over the symbolic dims, each taken as
/// large (the sizes loops are about): the node inflates when it has one output,
/// every input's symbolic sizes are among the output's (as multisets), and either
/// no input has all of the output's symbolic sizes, or the inputs that do have
/// fewer constant bytes in sum than the output. A node without inputs inflates
/// when its output is not empty.
pub fn inflates(graph: &Graph, node: &Node) -> bool {
    let [out] = node.outputs.as_slice() else {
        return false;
    };
    let (out_coef, out_symbols) = bytes(out);
    if out_coef == 0 {
        return false;
    }
    let mut same = 0u128;
    for (k, r) in node.inputs.iter().enumerate() {
        if let Op::Call(c) = &node.op
            && !reads_data(c, k)
        {
            continue;
        }
        let Some(t) = graph.type_of(*r) else {
            return false;
        };
        let (coef, symbols) = bytes(t);
        if !contains_all(&out_symbols, &symbols) {
            return false;
        }
        if symbols.len() == out_symbols.len() {
            same = same.saturating_add(coef);
        }
    }
    same < out_coef
}

/// True when `call` reads input `k`'s elements: as an argument or attribute, or
/// as a bound `$name`. An input named only inside a list (`sources=[x]`) gives a
/// shape, not data.
fn reads_data(call: &Call, k: usize) -> bool {
    call.args
        .iter()
        .chain(call.attrs.iter().map(|(_, v)| v))
        .any(|v| *v == CallValue::Input(k))
        || call.bind.iter().any(|(_, b)| *b == k)
}

/// Step 6: every value read is defined in the reader's sub-function or one
/// enclosing it; every value a sub-function returns, in it or one enclosing it;
/// graph outputs at the top level.
fn check_visible(graph: &Graph, h: &Hierarchy) -> Result<(), HierarchyError> {
    let visible = |reader: Option<SubId>, value: NodeId| -> bool {
        let def = h.placement.get(&value).copied().flatten();
        chain(&h.placement, reader).contains(&def)
    };
    for n in graph.nodes() {
        let here = h.placement.get(&n.id).copied().flatten();
        for r in &n.inputs {
            if !visible(here, r.node) {
                return Err(HierarchyError::NotVisible {
                    node: n.id,
                    value: *r,
                    place: place_name(here),
                });
            }
        }
        for (k, i) in n.op.interfaces().into_iter().enumerate() {
            let sub = Some(SubId {
                super_node: n.id,
                branch: k,
            });
            for r in i.outputs.iter().filter_map(Source::as_ref) {
                if !visible(sub, r.node) {
                    return Err(HierarchyError::NotVisible {
                        node: n.id,
                        value: r,
                        place: format!("returned by {}", place_name(sub)),
                    });
                }
            }
        }
    }
    for r in graph.interface.outputs.iter().filter_map(Source::as_ref) {
        if !visible(None, r.node) {
            return Err(HierarchyError::NotVisible {
                node: r.node,
                value: r,
                place: "a graph output".into(),
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Printing

/// The hierarchy as text: one definition per line, top-level definitions not
/// indented, each sub-function's `fn` line one level (two spaces) deeper than its
/// super node's line and its body one level deeper than the `fn` line, ending in
/// `return`.
///
/// ```text
/// input(%1 x: f32[], %1.1 y: f32[])
/// %2 = const 1.0
/// %9, %9.1 = while(%2, %3)
///   fn cond(%4 p0: f32[], %4.1 p1: f32[])
///     %5 = lt(%4.1, 5.0)
///     return %5
///   fn body(%6 p0: f32[], %6.1 p1: f32[])
///     %7 = mul(%1.1, %6)
///     %8 = add(%6.1, 1.0)
///     return %7, %8
/// output %9
/// ```
pub fn print_hierarchy(graph: &Graph, h: &Hierarchy) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "input({})", params(graph, h.input));
    print_entries(graph, &h.top, 0, &mut out);
    let _ = writeln!(out, "output {}", sources(&graph.interface.outputs));
    out
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn print_entries(graph: &Graph, entries: &[Entry], depth: usize, out: &mut String) {
    for e in entries {
        let Some(n) = graph.node(e.node) else {
            continue;
        };
        indent(out, depth);
        out.push_str(&definition(n));
        out.push('\n');
        let interfaces = n.op.interfaces();
        for sub in &e.subs {
            let Some(i) = interfaces.get(sub.branch) else {
                continue;
            };
            indent(out, depth + 1);
            let _ = writeln!(
                out,
                "fn {}({})",
                sub_name(&n.op, sub.branch),
                params(graph, sub.input)
            );
            print_entries(graph, &sub.nodes, depth + 2, out);
            indent(out, depth + 2);
            let _ = writeln!(out, "return {}", sources(&i.outputs));
        }
    }
}

/// The name a sub-function is printed with.
fn sub_name(op: &Op, branch: usize) -> String {
    match op {
        Op::While { .. } => ["cond", "body"][branch.min(1)].to_string(),
        Op::If { .. } => ["then", "else"][branch.min(1)].to_string(),
        Op::Case { .. } => format!("branch{branch}"),
        Op::NoInline { name, .. } => name.clone(),
        _ => "body".to_string(),
    }
}

/// The parameters of an Input node: `%4 name: f32[N], %4.1: f32[]`.
fn params(graph: &Graph, input: NodeId) -> String {
    let Some(n) = graph.node(input) else {
        return String::new();
    };
    n.outputs
        .iter()
        .enumerate()
        .map(|(k, t)| match n.name(k) {
            Some(name) => format!("{} {name}: {t}", n.output(k)),
            None => format!("{}: {t}", n.output(k)),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn sources(s: &[Source]) -> String {
    s.iter()
        .map(|s| match s {
            Source::Ref(r) => r.to_string(),
            Source::Scalar(v) => number(*v),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A number as text: always with a fraction or exponent, or `inf` / `nan`.
pub(crate) fn number(v: f64) -> String {
    if v.is_nan() {
        "nan".into()
    } else if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        format!("{v}")
    }
}

fn refs(r: &[Ref]) -> String {
    r.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One definition line (without indentation).
fn definition(n: &Node) -> String {
    let lhs = match n.outputs.len() {
        0 => String::new(),
        k => {
            let outs: Vec<Ref> = (0..k).map(|o| n.output(o)).collect();
            format!("{} = ", refs(&outs))
        }
    };
    let rhs = match &n.op {
        Op::Input { .. } => format!("input({})", refs(&n.inputs)),
        Op::Const(t) if t.shape.is_empty() && t.data.len() == 1 => {
            format!("const {}", number(t.data[0]))
        }
        Op::Const(t) => format!(
            "const {}",
            n.outputs
                .first()
                .map_or_else(|| format!("{:?}", t.shape), ToString::to_string,)
        ),
        Op::Call(c) => call_text(c, &n.inputs),
        Op::Kernel(k) => format!("kernel {}({})", k.name, refs(&n.inputs)),
        Op::While { .. } => format!("while({})", refs(&n.inputs)),
        Op::Case { .. } => format!("case({})", refs(&n.inputs)),
        Op::If { .. } => format!("if({})", refs(&n.inputs)),
        Op::Parallel { count, .. } => {
            let mut args = vec![count.to_string()];
            args.extend(n.inputs.iter().map(ToString::to_string));
            format!("parallel({})", args.join(", "))
        }
        Op::NoInline { name, .. } => {
            let mut args = vec![name.clone()];
            args.extend(n.inputs.iter().map(ToString::to_string));
            format!("call({})", args.join(", "))
        }
        Op::Chunk { axis, size } => {
            let mut s = format!("chunk({}, size={size}", refs(&n.inputs));
            if *axis != 0 {
                let _ = write!(s, ", axis={axis}");
            }
            s.push(')');
            s
        }
        Op::Sink => format!("sink({})", refs(&n.inputs)),
    };
    lhs + &rhs
}

/// A call as text: `op(args, name=value)`, tensors as the references they read.
pub(crate) fn call_text(c: &Call, inputs: &[Ref]) -> String {
    let input = |k: usize| {
        inputs
            .get(k)
            .map_or_else(|| format!("<input {k}>"), ToString::to_string)
    };
    let value = |v: &CallValue| -> String {
        match v {
            CallValue::Input(k) => input(*k),
            CallValue::Int(i) => i.to_string(),
            CallValue::Float(f) => number(*f),
            CallValue::Bool(b) => b.to_string(),
            CallValue::Str(s) => format!("{s:?}"),
            CallValue::Param(p) => format!("${p}"),
            CallValue::List(items) => {
                let items: Vec<String> = items
                    .iter()
                    .map(|i| match i {
                        ListItem::Expr(e) => e.to_string(),
                        ListItem::Input(k) => input(*k),
                    })
                    .collect();
                format!("[{}]", items.join(", "))
            }
        }
    };
    let mut args: Vec<String> = c.args.iter().map(value).collect();
    args.extend(c.attrs.iter().map(|(n, v)| format!("{n}={}", value(v))));
    format!("{}({})", c.op, args.join(", "))
}
