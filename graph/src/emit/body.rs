//! The definition hierarchy of a prepared graph planned as Rust (DESIGN.md §21):
//! one function for the graph and one for each `call`, whose bodies run the
//! hierarchy's definitions in order. This module owns the plan of a generated
//! function ([`Frame`]), the emitter's state and the walk over the definitions (a
//! plan step per node: kernels and one-op calls in `kernel_call`, control flow in
//! `control`, chunk loops in `chunks`); the graph function's frame is `graph_fn`.
//!
//! A value is a location in the workspace's arena (`rt::graph::Loc`, see `arena`)
//! when the memory plan places it, else a slice (`&[f32]`, ...): a graph input, a
//! constant (`static`), a graph output written into the caller's buffer, or the
//! buffer of a graph output computed elsewhere (a field of the workspace that
//! keeps its capacity between calls, so a steady-state call allocates no buffer; a
//! kernel of the Rust backend may allocate temporaries of its own). A kernel call
//! borrows its arena inputs and outputs with `rt::graph::split`.
//!
//! Every function is planned in full (its lines with their locals marked, its
//! workspace fields, what it uses of the arena) before it is printed: a local the
//! plan never reads is printed `_name` (`code::Code::print`), a constant no
//! function reads is left out (`GraphModule::add`).

use std::collections::{BTreeSet, HashMap, HashSet};

use super::arena::{Arena, Val};
use super::chunks::ChunkLevel;
use super::code::{Code, Ex, Idents, elem, ex, literal};
use super::one_op::one_op_program;
use super::sizes::Sizes;
use super::{GraphEmitError, KernelTable};
use crate::hierarchy::{Entry, Hierarchy, SubFunction};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source, ValueType};

/// Names the generated functions use for their own locals.
pub(super) const RESERVED: &[&str] = &[
    "ws",
    "sz",
    "rt",
    "go",
    "left",
    "right",
    "i",
    "index",
    "loops",
    "ends",
    "arena",
    "scratch",
    "off",
    "placement",
    "arena_len",
    "KernelError",
];

/// Where a kernel's `$params` come from besides the graph's own.
#[derive(Clone, Copy, Default)]
pub(super) struct Params<'a> {
    /// `$params` bound to a value (a `parallel` index): name, the node's input.
    pub(super) bind: &'a [(String, usize)],
    /// `$params` that are graph dims: name, dim.
    pub(super) dims: &'a [(String, String)],
}

/// The plan of one generated function under way: its lines, its locals' names,
/// its workspace's fields and the Rust expression of every value it has defined.
pub(super) struct Frame {
    pub(super) code: Code,
    pub(super) names: Idents,
    /// The workspace's fields besides the arena: name, type.
    pub(super) fields: Vec<(String, String)>,
    /// How the code reaches each value.
    pub(super) locals: HashMap<Ref, Val>,
    /// The rows (code) of each looped value: the rows of its chunk.
    pub(super) rows: HashMap<Ref, Ex>,
    /// The `chunk` loops open around the code being planned, outermost first.
    pub(super) levels: Vec<ChunkLevel>,
    /// The code reads the arena (`arena`).
    pub(super) arena_used: bool,
    /// The code calls a kernel with the workspace's scratch (`scratch`).
    pub(super) scratch_used: bool,
    /// The code reads the groups' offsets (`off`).
    pub(super) off_used: bool,
    /// The code swaps offsets (a `while` alternating its state).
    pub(super) off_mut: bool,
    /// `off` is a reference (a `call`'s function), not the graph function's array.
    pub(super) off_ref: bool,
}

impl Frame {
    pub(super) fn new() -> Frame {
        Frame {
            code: Code::default(),
            names: Idents::with_reserved(RESERVED),
            fields: Vec::new(),
            locals: HashMap::new(),
            rows: HashMap::new(),
            levels: Vec::new(),
            arena_used: false,
            scratch_used: false,
            off_used: false,
            off_mut: false,
            off_ref: false,
        }
    }

    /// A new workspace field of type `ty`, named after `base`.
    pub(super) fn field(&mut self, base: &str, ty: String) -> String {
        let name = self.names.fresh(base);
        self.fields.push((name.clone(), ty));
        name
    }

    /// A new local named after `base`, bound to `value` (`let name = value;`):
    /// its name.
    pub(super) fn bind(&mut self, base: &str, value: impl super::code::Piece) -> String {
        let name = self.names.fresh(base);
        self.code.bind(&name, value);
        name
    }
}

/// A module-level item of a graph, planned: printed when the graph is complete.
pub(super) enum Item {
    /// A constant: its `static`'s name and its definition (left out when no
    /// function reads it).
    Static { name: String, text: String },
    /// A function (or struct) planned as code.
    Code(Code),
    /// Text made whole (the sizes, the workspace).
    Text(String),
}

/// Plans the functions of one graph.
pub(super) struct Emitter<'g> {
    pub(super) graph: &'g Graph,
    pub(super) h: &'g Hierarchy,
    /// The graph function's name.
    pub(super) name: String,
    pub(super) sizes: Sizes,
    pub(super) kernels: &'g mut KernelTable,
    /// Module-level names taken (by this and earlier graphs).
    pub(super) items_taken: &'g mut Idents,
    /// Module-level items planned so far (constants, `call` functions, the arena
    /// function, the workspace).
    pub(super) items: Vec<Item>,
    /// Every value some node, interface or graph output reads.
    pub(super) used: HashSet<Ref>,
    /// The memory plan's analysis: which values are in the arena, in which group.
    pub(super) arena: Arena,
    /// The `static` of each constant, visible in every function of the graph.
    pub(super) consts: HashMap<Ref, String>,
    /// Every kernel called through `rt::graph::clocked`.
    pub(super) clocked: bool,
    /// Graph outputs a kernel writes straight into the caller's buffer (no copy
    /// out of the workspace): value → (output argument, output name). A value
    /// computed by a Kernel or Call at the top level, at the depth of chunk loops
    /// the outputs are delivered at (in a chunk loop, into the chunk's rows of the
    /// caller's buffer, `rt::graph::rows_mut`). The first output returning the value
    /// gets it; another returning it too is a copy of it.
    pub(super) direct: HashMap<Ref, (String, String)>,
    /// The outputs written straight into the caller's buffer.
    pub(super) written: HashSet<Ref>,
    /// The values of a chunk loop that do not have its rows: those only
    /// `sum_chunks` reads (`looping::Partitions::rowless`).
    pub(super) rowless: BTreeSet<Ref>,
}

impl Emitter<'_> {
    pub(super) fn err(&self, node: NodeId, message: impl std::fmt::Display) -> GraphEmitError {
        GraphEmitError::Graph {
            graph: self.name.clone(),
            message: format!("{node}: {message}"),
        }
    }

    pub(super) fn node(&self, id: NodeId) -> Result<&Node, GraphEmitError> {
        self.graph.node(id).ok_or_else(|| GraphEmitError::Graph {
            graph: self.name.clone(),
            message: format!("{id} is not in the prepared graph"),
        })
    }

    pub(super) fn ty(&self, r: Ref) -> Result<ValueType, GraphEmitError> {
        self.graph
            .type_of(r)
            .cloned()
            .ok_or_else(|| self.err(r.node, format!("{r} has no type")))
    }

    /// A readable name for value `r`: its name in the source, else `t{id}`.
    pub(super) fn base_name(&self, r: Ref) -> String {
        let named = self.graph.node(r.node).and_then(|n| n.name(r.output));
        match named {
            Some(n) => n.trim_start_matches('$').to_string(),
            None if r.output == 0 => format!("t{}", r.node.0),
            None => format!("t{}_{}", r.node.0, r.output),
        }
    }

    /// How `frame` reaches `r`.
    pub(super) fn local(
        &self,
        frame: &Frame,
        reader: NodeId,
        r: Ref,
    ) -> Result<Val, GraphEmitError> {
        frame
            .locals
            .get(&r)
            .cloned()
            .or_else(|| {
                self.consts
                    .get(&r)
                    .map(|name| Val::Slice(Ex::static_slice(name)))
            })
            .ok_or_else(|| self.err(reader, format!("reads {r}, which has no value here")))
    }

    /// The slice expression of an interface result.
    pub(super) fn source(
        &self,
        frame: &mut Frame,
        owner: NodeId,
        s: &Source,
    ) -> Result<Ex, GraphEmitError> {
        let v = self.source_val(frame, owner, s)?;
        Ok(self.slice_of(frame, owner, &v, self.source_dtype(s)))
    }

    pub(super) fn entries(
        &mut self,
        frame: &mut Frame,
        entries: &[Entry],
    ) -> Result<(), GraphEmitError> {
        entries.iter().try_for_each(|e| self.entry(frame, e))
    }

    /// Binds the parameters of `sub` (its Input node's outputs) to `args`: each a
    /// local of the same kind (a slice or a location).
    pub(super) fn bind_params(
        &self,
        frame: &mut Frame,
        sub: &SubFunction,
        args: &[Val],
    ) -> Result<(), GraphEmitError> {
        let input = self.node(sub.input)?;
        for (k, a) in args.iter().enumerate().take(input.outputs.len()) {
            let r = Ref::new(sub.input, k);
            if self.used.contains(&r) {
                let name = frame.bind(&self.base_name(r), a.ex());
                frame.locals.insert(r, same_kind(a, &name));
            }
        }
        Ok(())
    }

    /// The plan step of one definition: a step per kind of node.
    pub(super) fn entry(&mut self, frame: &mut Frame, e: &Entry) -> Result<(), GraphEmitError> {
        let node = self.node(e.node)?.clone();
        let id = node.id;
        match &node.op {
            Op::Input { .. } => Err(self.err(id, "an Input node outside an interface")),
            Op::Const(_) => self.constant(&node),
            Op::Kernel(k) => {
                frame.code.comment(&format!(
                    "{} = kernel {} ({})",
                    outputs_text(&node),
                    k.name,
                    k.ops.join(", ")
                ));
                let hint = format!("{}_{}", self.name, k.name);
                self.program_call(frame, &node, &hint, &k.program, Params::default())
            }
            Op::Call(call) => {
                frame
                    .code
                    .comment(&format!("{} = {} (one op)", outputs_text(&node), call.op));
                let types: Vec<ValueType> = node
                    .inputs
                    .iter()
                    .map(|r| self.ty(*r))
                    .collect::<Result<_, _>>()?;
                let one = one_op_program(self.graph, call, &types)
                    .map_err(|e| self.err(id, format!("{}: {e}", call.op)))?;
                let hint = format!("{}_{}_{}", self.name, call.op, id.0);
                let params = Params {
                    bind: &call.bind,
                    dims: &one.dim_params,
                };
                self.program_call(frame, &node, &hint, &one.program, params)
            }
            Op::While { .. } => self.while_loop(frame, &node, e),
            Op::If { .. } => self.if_else(frame, &node, e),
            Op::Case { .. } => self.case(frame, &node, e),
            Op::Parallel { count, .. } => self.parallel(frame, &node, e, count),
            Op::Scan { .. } => Err(self.err(id, "`scan` has no generated Rust yet")),
            Op::NoInline { name, .. } => self.call(frame, &node, e, name),
            Op::Chunk { size, .. } => self.chunk(frame, &node, size),
            Op::SumChunks => self.sum_chunks(frame, &node),
            // What the Sink keeps alive lives in buffers of its own anyway.
            Op::Sink => Ok(()),
        }
    }

    /// A constant some node reads: a `static` of the module, visible in every
    /// function of the graph.
    fn constant(&mut self, node: &Node) -> Result<(), GraphEmitError> {
        let Op::Const(t) = &node.op else {
            return Err(self.err(node.id, "is not a constant"));
        };
        let r = node.output(0);
        if !self.used.contains(&r) {
            return Ok(());
        }
        let name = self
            .items_taken
            .fresh(&format!("{}_{}", self.name, self.base_name(r)))
            .to_uppercase();
        let values: Vec<String> = t.data.iter().map(|v| literal(t.dtype, *v)).collect();
        let text = format!(
            "/// `{}` of graph `{}` ({}, shape {:?}).\nstatic {name}: [{}; {}] = [{}];\n",
            self.base_name(r),
            self.name,
            node.id,
            t.shape,
            elem(t.dtype),
            values.len(),
            values.join(", ")
        );
        self.items.push(Item::Static {
            name: name.clone(),
            text,
        });
        self.consts.insert(r, name);
        Ok(())
    }

    /// True when `node` is a `chunk`.
    pub(super) fn is_chunk(&self, node: NodeId) -> bool {
        matches!(self.graph.node(node).map(|n| &n.op), Some(Op::Chunk { .. }))
    }
}

/// A value of the kind of `v` (a slice or a location) held by local `name`.
pub(super) fn same_kind(v: &Val, name: &str) -> Val {
    match v {
        Val::Slice(_) => Val::Slice(Ex::read(name)),
        Val::At(_) => Val::At(Ex::read(name)),
    }
}

/// A size's code, or the emitter's error naming the node.
pub(super) fn sized<T>(
    graph: &str,
    node: NodeId,
    r: Result<T, String>,
) -> Result<T, GraphEmitError> {
    r.map_err(|m| GraphEmitError::Graph {
        graph: graph.into(),
        message: format!("{node}: {m}"),
    })
}

/// `%5, %5.1` (with names where the source gave them).
pub(super) fn outputs_text(node: &Node) -> String {
    (0..node.outputs.len())
        .map(|k| match node.name(k) {
            Some(n) => format!("{} {n}", node.output(k)),
            None => node.output(k).to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `let W { a, b } = ws;`
pub(super) fn destructure(ws_type: &str, fields: &[(String, String)]) -> Ex {
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    if names.is_empty() {
        ex![format!("let {ws_type} {{}} = ws;")]
    } else {
        ex![format!("let {ws_type} {{ {} }} = ws;", names.join(", "))]
    }
}
