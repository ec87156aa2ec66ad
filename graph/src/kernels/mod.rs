//! Kernel formation, the `kernels` pass (DESIGN.md §17; `docs/graph-kernels.md`):
//! the calls of each scope grouped into [`Kernel`] nodes, each one fused uop
//! [`Program`](uop_codegen::uop::Program).
//!
//! [`form_kernels`] is a pure function from graph to graph in the three phases of
//! the rewrite utilities (`crate::rewrite`):
//!
//! - **\[A\] match** ([`group`]): every call classified by its uops
//!   ([`classify`](classify::classify): element-wise, reindex, reduction,
//!   contraction, opaque, after TVM's op patterns), then grouped per scope by the
//!   fusion rules;
//! - **\[B\] build** ([`program`]): each group's program, its members' calls applied
//!   onto one uop `Builder` and `combine`d, every output's type checked against the
//!   node it replaces; the kernel nodes with fresh ids, wired to each other;
//! - **\[C\] apply**: each kernel inserted right after its last member
//!   ([`insert_nodes`]), the readers of each value it gives rewired to it
//!   ([`change_multi_output_refs`]) and its members removed ([`replace_nodes`]),
//!   one kernel after the other in list order; recomputed cheap values are removed
//!   last, once nothing reads them.
//!
//! The interpreter runs a kernel node's program with the uop interpreter, which
//! evaluates it node by node exactly as it evaluates the separate calls, so a graph
//! gives the same bits before and after. For each kernel the report gives the number
//! of loop blocks the loop-IR optimizer leaves ([`uop_codegen::pass::optimize`] on
//! [`uop_codegen::loops::lower`]): the loops a backend actually runs.
//!
//! ```
//! use uop_codegen::uop::DType;
//! use uop_graph::kernels::{KernelOptions, form_kernels, print_kernels};
//! use uop_graph::{GraphBuilder, Checks, verify};
//!
//! let mut b = GraphBuilder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["B", "K"])?;
//! let w = b.input("w", DType::F32, &["K", "N"])?;
//! let bias = b.input("bias", DType::F32, &["N"])?;
//! let h = b.op("matmul", &[x, w])?;
//! let h = b.op("add", &[h, bias])?;
//! let y = b.op("relu", &[h])?;
//! b.output(y);
//! let graph = b.finish();
//!
//! let (fused, report) = form_kernels(&graph, &KernelOptions::default())?;
//! verify(&fused, Checks::NONE)?;
//! assert_eq!(report.kernels.len(), 1);
//! assert_eq!(report.kernels[0].summary(), "kernel k0 = {%2 matmul, %3 add, %4 relu}");
//! assert_eq!(report.kernels[0].loop_blocks, Some(1));
//! println!("{}", print_kernels(&fused));
//! assert!(print_kernels(&fused).starts_with("kernel k0 = {%2 matmul, %3 add, %4 relu}"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use thiserror::Error;
use uop_codegen::compile::{CompileOptions, compile};

use crate::hierarchy::{HierarchyError, SubId, hierarchy};
use crate::ir::{Graph, Kernel, Node, NodeId, Op, Ref};
use crate::rewrite::{RewriteError, replace_nodes};
pub use crate::vocab::kernel_summary;
use crate::vocab::member_list;
use group::{GroupPlan, Plan};

use apply::Placed;

mod apply;
pub mod classify;
pub(crate) mod group;
pub mod joins;
pub(crate) mod program;

pub use classify::{OpClass, classify_program};

/// How [`form_kernels`] runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelOptions {
    /// Recompute cheap values (element-wise and reindex-only calls of values from
    /// outside the scope's calls) inside every kernel that reads them, instead of
    /// giving them kernels of their own. On by default.
    pub recompute: bool,
    /// Keep a join of independent heavy branches out of both branches' kernels (the
    /// [`joins::NAME`] decision, [`joins`]). On by default.
    pub split_joins: bool,
    /// Lower and optimize every kernel's program to report its loop blocks. On by
    /// default.
    pub count_loops: bool,
    /// Stop after this many kernels (`--rewrite-limit`, to bisect).
    pub rewrite_limit: Option<usize>,
}

impl Default for KernelOptions {
    fn default() -> Self {
        KernelOptions {
            recompute: true,
            split_joins: true,
            count_loops: true,
            rewrite_limit: None,
        }
    }
}

/// One kernel formed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelInfo {
    /// The kernel node.
    pub node: NodeId,
    /// Its name.
    pub name: String,
    /// The sub-function it was formed in (`None`: the top level).
    pub scope: Option<SubId>,
    /// The largest class of its members (contraction > reduction > reindex >
    /// element-wise).
    pub class: OpClass,
    /// The calls it computes and their ops, in list order (recomputed cheap values
    /// included).
    pub members: Vec<(NodeId, String)>,
    /// The members that are cheap values recomputed here.
    pub recomputed: Vec<NodeId>,
    /// Number of values it reads.
    pub inputs: usize,
    /// Number of values it gives.
    pub outputs: usize,
    /// Loop blocks of its program after the loop-IR optimizer (when counted).
    pub loop_blocks: Option<usize>,
    /// The decisions that shaped it (`split-joins: ...`).
    pub notes: Vec<String>,
}

impl KernelInfo {
    /// `kernel k3 = {%4 mul, %5 add, %6 relu}`.
    pub fn summary(&self) -> String {
        format!("kernel {} = {{{}}}", self.name, member_list(&self.members))
    }
}

/// What [`form_kernels`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelReport {
    /// Rewrites made: one per kernel formed.
    pub rewrites: usize,
    /// The kernels, in list order.
    pub kernels: Vec<KernelInfo>,
    /// Calls that stay calls: opaque ones (binding a `parallel` index), dead ones
    /// (left for `dead`), RETAIN ones.
    pub calls_left: Vec<NodeId>,
}

impl KernelReport {
    /// A table: one line per kernel with its class, members, inputs, outputs and
    /// loop blocks.
    pub fn table(&self) -> String {
        let mut out = String::from("kernel  node  class         in  out  loops  members\n");
        for k in &self.kernels {
            let loops = k
                .loop_blocks
                .map_or_else(|| "-".to_string(), |b| b.to_string());
            let _ = writeln!(
                out,
                "{:<7} {:<5} {:<13} {:>2}  {:>3}  {:>5}  {{{}}}",
                k.name,
                k.node.to_string(),
                k.class.name(),
                k.inputs,
                k.outputs,
                loops,
                member_list(&k.members)
            );
            for note in &k.notes {
                let _ = writeln!(out, "        # {note}");
            }
        }
        let _ = writeln!(
            out,
            "{} kernels from {} calls; {} calls left",
            self.kernels.len(),
            self.kernels.iter().map(|k| k.members.len()).sum::<usize>(),
            self.calls_left.len()
        );
        out
    }
}

/// Why kernels could not be formed. The graph given is never changed.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum KernelFormError {
    /// The graph has no valid definition hierarchy.
    #[error(transparent)]
    Hierarchy(#[from] HierarchyError),
    /// A node could not be classified or built into a kernel.
    #[error("{node}: {message}")]
    Node {
        /// The node.
        node: NodeId,
        /// What went wrong.
        message: String,
    },
    /// A kernel output's type is not the type of the node it replaces.
    #[error("{node}: the fused kernel gives {found} where the node has {expected}")]
    Type {
        /// The replaced node.
        node: NodeId,
        /// The node's type.
        expected: String,
        /// The kernel's.
        found: String,
    },
    /// A rewrite utility refused a change (a bug in the pass: the graph is valid).
    #[error("applying the kernels: {0}")]
    Rewrite(#[from] RewriteError),
}

/// Groups the calls of every scope of `graph` into kernels (see the module docs and
/// `docs/graph-kernels.md` for the rules). Returns the new graph and what was done.
pub fn form_kernels(
    graph: &Graph,
    options: &KernelOptions,
) -> Result<(Graph, KernelReport), KernelFormError> {
    // [A] match.
    let h = hierarchy(graph)?;
    let plan = group::plan(graph, &h, options)?;
    // [B] build: programs, ids, and where each replaced value goes.
    let (nodes, mut report) = build_kernels(graph, &plan, options)?;
    // [C] apply, kernel by kernel in list order.
    // [C] apply, in one pass over the list.
    report.rewrites = nodes.len();
    let placed = nodes
        .into_iter()
        .map(|(group, gives, node)| Placed {
            anchor: group.anchor,
            replaced: group.replaced.clone(),
            gives,
            node,
        })
        .collect();
    let mut g = apply::apply(graph, placed)?;
    remove_unread(&mut g, &plan.cheap)?;
    report.kernels.sort_by_key(|k| g.position(k.node));
    report.calls_left = g
        .nodes()
        .iter()
        .filter(|n| matches!(n.op, Op::Call(_)))
        .map(|n| n.id)
        .collect();
    Ok((g, report))
}

/// A kernel node ready to be applied: its group, where each member's value went
/// (member, kernel output), and the node.
type Formed<'p> = (&'p GroupPlan, Vec<(NodeId, usize)>, Node);

/// Phase [B]: the program, id, name and node of every group (at most
/// `rewrite_limit` of them), with the report of each kernel. Ids follow the
/// graph's; names `k0`, `k1`, ... skip those kernels of the graph already have.
fn build_kernels<'p>(
    graph: &Graph,
    plan: &'p Plan,
    options: &KernelOptions,
) -> Result<(Vec<Formed<'p>>, KernelReport), KernelFormError> {
    let limit = options.rewrite_limit.unwrap_or(usize::MAX);
    let mut used: HashSet<String> = graph
        .nodes()
        .iter()
        .filter_map(|n| match &n.op {
            Op::Kernel(k) => Some(k.name.clone()),
            _ => None,
        })
        .collect();
    let mut counter = 0usize;
    let mut moved: HashMap<NodeId, Ref> = HashMap::new();
    let mut built = Vec::new();
    for (next_id, group) in (graph.next_id..).zip(plan.groups.iter().take(limit)) {
        let b = program::build(graph, group)?;
        let id = NodeId(next_id);
        let name = loop {
            let n = format!("k{counter}");
            counter += 1;
            if used.insert(n.clone()) {
                break n;
            }
        };
        for (m, k) in &b.outputs {
            moved.insert(*m, Ref::new(id, *k));
        }
        built.push((group, b, id, name));
    }
    let mut nodes = Vec::with_capacity(built.len());
    let mut report = KernelReport::default();
    for (group, b, id, name) in built {
        let inputs: Vec<Ref> = b
            .inputs
            .iter()
            .map(|r| moved.get(&r.node).copied().unwrap_or(*r))
            .collect();
        let ops: Vec<String> = group
            .members
            .iter()
            .map(|m| match graph.node(*m).map(|n| &n.op) {
                Some(Op::Call(c)) => c.op.clone(),
                _ => String::new(),
            })
            .collect();
        report.kernels.push(kernel_info(
            group,
            &b,
            id,
            &name,
            &ops,
            inputs.len(),
            options,
        ));
        let mut node = Node::new(
            id,
            Op::Kernel(Box::new(Kernel {
                name,
                program: b.program,
                members: group.members.clone(),
                ops,
                notes: group.notes.clone(),
            })),
            inputs,
            b.types,
        );
        for (m, k) in &b.outputs {
            if node.names[*k].is_none() {
                node.names[*k] = graph.node(*m).and_then(|n| n.name(0)).map(str::to_string);
            }
        }
        nodes.push((group, b.outputs, node));
    }
    Ok((nodes, report))
}

/// What the report says of one kernel.
fn kernel_info(
    group: &GroupPlan,
    b: &program::Built,
    id: NodeId,
    name: &str,
    ops: &[String],
    inputs: usize,
    options: &KernelOptions,
) -> KernelInfo {
    let loop_blocks = options.count_loops.then(|| {
        compile(&b.program, &CompileOptions::default())
            .map(|p| p.blocks.len())
            .unwrap_or(0)
    });
    let replaced: HashSet<NodeId> = group.replaced.iter().copied().collect();
    KernelInfo {
        node: id,
        name: name.to_string(),
        scope: group.scope,
        class: group.class,
        members: group
            .members
            .iter()
            .copied()
            .zip(ops.iter().cloned())
            .collect(),
        recomputed: group
            .members
            .iter()
            .copied()
            .filter(|m| !replaced.contains(m) && !group.outputs.contains(m))
            .collect(),
        inputs,
        outputs: b.types.len(),
        loop_blocks,
        notes: group.notes.clone(),
    }
}

/// Removes the cheap values nothing reads any more (not outputs, every reader
/// itself removed).
fn remove_unread(g: &mut Graph, cheap: &[NodeId]) -> Result<(), KernelFormError> {
    let outputs: HashSet<NodeId> = g.output_nodes();
    let mut unread: HashSet<NodeId> = HashSet::new();
    let mut cheap = cheap.to_vec();
    cheap.sort_by_key(|c| std::cmp::Reverse(g.position(*c)));
    for c in cheap {
        if g.node(c).is_some()
            && !outputs.contains(&c)
            && g.consumers(c).iter().all(|r| unread.contains(r))
        {
            unread.insert(c);
        }
    }
    let mut gone: Vec<NodeId> = unread.into_iter().collect();
    gone.sort_by_key(|c| g.position(*c));
    if !gone.is_empty() {
        replace_nodes(g, None, None, &gone)?;
    }
    Ok(())
}

/// Every kernel of `graph`, in list order: its members, what it reads and gives,
/// and its program as `.uop` text (inputs `in0, in1, ...` in the order the node
/// reads them; member `%4`'s value is `v4`).
///
/// A kernel's notes (the decisions that shaped it) follow its summary as `# ...`
/// lines.
///
/// ```text
/// kernel k0 = {%2 matmul, %3 add, %4 relu}
///   %5 = k0(%1, %1.1, %1.2)  # gives v4
///   input in0: f32[B, K]
///   ...
/// ```
pub fn print_kernels(graph: &Graph) -> String {
    let mut out = String::new();
    for n in graph.nodes() {
        let Op::Kernel(k) = &n.op else { continue };
        let _ = writeln!(out, "{}", kernel_summary(k));
        for note in &k.notes {
            let _ = writeln!(out, "  # {note}");
        }
        let outs: Vec<String> = (0..n.outputs.len())
            .map(|o| n.output(o).to_string())
            .collect();
        let ins: Vec<String> = n.inputs.iter().map(ToString::to_string).collect();
        let gives: Vec<String> = k
            .program
            .outputs
            .iter()
            .map(|o| k.program.node(*o).name.clone())
            .collect();
        let _ = writeln!(
            out,
            "  {} = {}({})  # gives {}",
            outs.join(", "),
            k.name,
            ins.join(", "),
            gives.join(", ")
        );
        for line in uop_codegen::text::print_program(&k.program).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    out
}
