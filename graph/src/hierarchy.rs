//! The definition hierarchy (DESIGN.md §16, after Feldspar's `makeHierarchical`,
//! seed 003): where each node of the flat list lives — at the top level or inside
//! the innermost sub-function it must be local to.
//!
//! 1. **Sub-functions** are numbered per super node in [`Op::interfaces`] order
//!    (`while`: condition 0, body 1; `if`: then 0, else 1; `case`: branch k).
//! 2. **Locality** is [`crate::scope`]'s analysis, the one the verifier checks: a node
//!    that depends, through any path of uses, on a sub-function's Input node is local
//!    to that sub-function; a super node depends on its sub-functions' results too,
//!    except that it is never local to its own sub-functions (the seed's caveat); and
//!    a super node **contains** its bodies: it is local to every sub-function that a
//!    node inside one of its own sub-functions is local to (other than those nested
//!    in it), whether or not a result needs that node. A graph the analysis rejects
//!    has no hierarchy ([`HierarchyError::Locality`], the verifier's messages).
//! 3. **Order of super nodes:** the list order. Everything local to `f` comes before
//!    `f`'s owner (the analysis requires it), so a super node local to `f` comes
//!    before `f`'s owner and the order is acyclic by construction.
//! 4. **Placement:** each node goes to the minimal (innermost) sub-function among its
//!    constraints by that order, the top level if it has none. So everything that
//!    does not depend on a loop's state is computed once, outside the loop.
//! 5. **The memory guard** (after XLA's while-loop invariant code motion, which does
//!    not hoist size-inflating instructions): a computing node (Call or Kernel) that
//!    would be hoisted out of a `while` body although every use of it is inside that
//!    body, and whose output is larger than its inputs ([`inflates`]), stays in the
//!    innermost `while` body that holds every use.
//! 6. **The branch guard:** a branch of an `if` or `case` runs only when selected,
//!    so a node (other than an Input, a Const or a chunk-loop node) every use of
//!    which is inside one branch is not hoisted out of it. A super node (`while`,
//!    `if`, `case`, `parallel`, `call`: the nodes with trips) goes into the innermost
//!    branch holding every use, even one inside a loop body it would otherwise be
//!    hoisted out of; any other node goes inward from its place through branches
//!    only, so it stays hoisted out of loops. A node also used outside the branch
//!    (in the other branch, or after the `if`) is computed where all its uses see it.
//! 7. **Check:** every value a node reads (and every value a sub-function returns) is
//!    visible where it is read: defined in the same sub-function or an enclosing one.
//!    The analysis guarantees it (it is checked again after the guards).
//!
//! A super node owns its sub-functions; a sub-function owns the nodes placed in it
//! and its Input node (as its parameter list). Each level lists its nodes in
//! execution order (list position); see `docs/graph-hierarchy.md`.

use std::collections::HashMap;
use std::fmt::Write as _;

use thiserror::Error;
use uop_codegen::index::Expr;

use crate::ir::{Call, CallValue, Graph, ListItem, Node, NodeId, Op, Ref, Source, ValueType};
pub use crate::scope::SubId;
use crate::scope::{ScopeError, scopes};
use crate::vocab::Violation;

mod order;

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
    /// The list cannot be traced: an id is 0 or repeated, a reference names a missing
    /// or later value, an interface does not name an Input node of its own, or an
    /// Input node belongs to no interface ([`ScopeError::Malformed`]).
    #[error("{}", messages(.violations))]
    Malformed {
        /// What is wrong, each naming its nodes.
        violations: Vec<Violation>,
    },
    /// The locality rules are broken ([`ScopeError::Locality`]; the messages are the
    /// verifier's).
    #[error("{}", messages(.violations))]
    Locality {
        /// What is wrong, each naming its nodes.
        violations: Vec<Violation>,
    },
    /// A node reads a value that is not visible where the node is placed. The scope
    /// analysis rules this out; it is checked again after the guards.
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

impl From<ScopeError> for HierarchyError {
    fn from(e: ScopeError) -> Self {
        match e {
            ScopeError::Malformed(violations) => HierarchyError::Malformed { violations },
            ScopeError::Locality(violations) => HierarchyError::Locality { violations },
        }
    }
}

fn messages(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
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
    // 1.-4. Sub-functions, locality, order and placement.
    let scopes = scopes(graph)?;
    let mut placement: HashMap<NodeId, Option<SubId>> = HashMap::new();
    placement.insert(top_input, None);
    for n in graph.nodes() {
        if n.id != top_input {
            placement.insert(n.id, scopes.place(n.id));
        }
    }
    // 5.-6. The memory guard and the branch guard.
    sink(graph, &mut placement);
    // 7. Visibility.
    let h = Hierarchy {
        input: top_input,
        top: Vec::new(),
        placement,
    };
    check_visible(graph, &h)?;
    // The tree.
    let mut children: HashMap<Option<SubId>, Vec<NodeId>> = HashMap::new();
    for n in graph.nodes() {
        if n.id == top_input || scopes.sub_of_input(n.id).is_some() {
            continue;
        }
        children.entry(h.placement[&n.id]).or_default().push(n.id);
    }
    let mut top = entries(graph, &children, None);
    // A graph with chunk nodes runs its top level by partition (§20).
    order::order_top(graph, &mut top);
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

/// Steps 5 and 6: the memory guard and the branch guard move a node from the place
/// its dependencies allow into a sub-function nested in it that holds every use.
/// Nodes are taken from the last to the first, so a node's uses (and the super
/// nodes owning them) are already in their final places.
fn sink(graph: &Graph, placement: &mut HashMap<NodeId, Option<SubId>>) {
    let trips = with_trips(graph, placement);
    for n in graph.nodes().iter().rev() {
        let movable = !matches!(
            n.op,
            Op::Input { .. } | Op::Const(_) | Op::Chunk { .. } | Op::Sink | Op::SumChunks
        );
        if !movable {
            continue;
        }
        let places = use_places(graph, placement, n.id);
        let Some((first, rest)) = places.split_first() else {
            continue;
        };
        // The innermost scope enclosing every use, then its enclosing ones outwards.
        let mut common = chain(placement, *first);
        for p in rest {
            let c = chain(placement, *p);
            common.retain(|s| c.contains(s));
        }
        let here = placement[&n.id];
        let Some(mut at) = common.iter().position(|s| *s == here) else {
            continue;
        };
        // 5. The memory guard: into the innermost loop body (`while`, `scan`) holding
        // every use.
        if matches!(n.op, Op::Call(_) | Op::Kernel(_))
            && inflates(graph, n)
            && let Some(k) = common[..at].iter().position(|s| is_loop_body(graph, *s))
        {
            at = k;
        }
        // 6. The branch guard, within the scopes nested in the place reached so far.
        let inner = &common[..at];
        let target = if !trips.contains(&n.id) {
            // Inward from the place, through branches only.
            inner
                .iter()
                .rev()
                .take_while(|s| is_branch(graph, **s))
                .last()
                .copied()
        } else {
            // The innermost branch holding every use, wherever it is.
            inner.iter().find(|s| is_branch(graph, **s)).copied()
        };
        placement.insert(n.id, target.unwrap_or(common[at]));
    }
}

/// The nodes that carry trips for the branch guard: the super nodes, and every
/// node reading a value of one placed where it is (hoisting such a node would pull
/// the super node along).
fn with_trips(
    graph: &Graph,
    placement: &HashMap<NodeId, Option<SubId>>,
) -> std::collections::HashSet<NodeId> {
    let mut trips = std::collections::HashSet::new();
    for n in graph.nodes() {
        let here = placement.get(&n.id).copied().flatten();
        let reads_trips = n
            .inputs
            .iter()
            .any(|r| trips.contains(&r.node) && placement.get(&r.node).copied().flatten() == here);
        if !n.op.interfaces().is_empty() || reads_trips {
            trips.insert(n.id);
        }
    }
    trips
}

/// True when `scope` is the body of a loop: sub-function 1 of a `while`, or a
/// `scan`'s body.
fn is_loop_body(graph: &Graph, scope: Option<SubId>) -> bool {
    scope.is_some_and(|sub| match graph.node(sub.super_node).map(|n| &n.op) {
        Some(Op::While { .. }) => sub.branch == 1,
        Some(Op::Scan { .. }) => true,
        _ => false,
    })
}

/// True when `scope` is a branch of an `if` or a `case`: a sub-function that runs
/// only when it is selected.
fn is_branch(graph: &Graph, scope: Option<SubId>) -> bool {
    scope.is_some_and(|sub| {
        matches!(
            graph.node(sub.super_node).map(|n| &n.op),
            Some(Op::If { .. } | Op::Case { .. })
        )
    })
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

/// Step 7: every value read is defined in the reader's sub-function or one
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
pub(crate) fn definition(n: &Node) -> String {
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
        Op::Kernel(k) => format!(
            "kernel {}({})  # {}",
            k.name,
            refs(&n.inputs),
            crate::vocab::kernel_summary(k)
        ),
        Op::While { .. } => format!("while({})", refs(&n.inputs)),
        Op::Case { .. } => format!("case({})", refs(&n.inputs)),
        Op::If { .. } => format!("if({})", refs(&n.inputs)),
        Op::Parallel { count, .. } => {
            let mut args = vec![count.to_string()];
            args.extend(n.inputs.iter().map(ToString::to_string));
            format!("parallel({})", args.join(", "))
        }
        Op::Scan {
            count,
            carried,
            scanned,
            stacked,
            ..
        } => {
            let mut args = vec![count.to_string()];
            args.extend(n.inputs.iter().map(ToString::to_string));
            args.extend(crate::scan::attrs_text(*carried, scanned, stacked));
            format!("scan({})", args.join(", "))
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
        Op::SumChunks => format!("sum_chunks({})", refs(&n.inputs)),
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
