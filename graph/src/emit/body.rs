//! The definition hierarchy of a prepared graph printed as Rust (DESIGN.md §21):
//! one function for the graph and one for each `call`, whose bodies run the
//! hierarchy's definitions in order. This module owns the frame of a generated
//! function, the graph function (entry checks, outputs), the walk over the
//! definitions and kernel calls; control flow is in `control`, chunk loops in
//! `chunks`.
//!
//! Every value is a slice (`&[f32]`, ...): a graph input, a constant (`static`), or
//! the buffer of the node computing it, a field of the function's workspace that
//! keeps its capacity between calls (so a steady-state call allocates no buffer; a
//! kernel of the Rust backend may allocate temporaries of its own).

use std::collections::{BTreeSet, HashMap, HashSet};

use uop_codegen::signature::Signature;
use uop_codegen::uop::Program;

use super::chunks::{COUNTS, ChunkLevel, ENDS};
use super::code::{Code, Idents, camel, elem, literal, string};
use super::one_op::one_op_program;
use super::sizes::{Sizes, buffer_type, signature};
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

/// One generated function under way: its code, its workspace's fields and the
/// Rust expression of every value it has defined.
pub(super) struct Frame {
    pub(super) code: Code,
    pub(super) names: Idents,
    /// The workspace's fields: name, type.
    pub(super) fields: Vec<(String, String)>,
    /// Each value's slice expression.
    pub(super) locals: HashMap<Ref, String>,
    /// The buffer holding each value a node computes.
    pub(super) buffers: HashMap<Ref, String>,
    /// The rows (code) of each looped value: the rows of its chunk.
    pub(super) rows: HashMap<Ref, String>,
    /// The `chunk` loops open around the code being written, outermost first.
    pub(super) levels: Vec<ChunkLevel>,
}

impl Frame {
    pub(super) fn new() -> Frame {
        Frame {
            code: Code::default(),
            names: Idents::with_reserved(RESERVED),
            fields: Vec::new(),
            locals: HashMap::new(),
            buffers: HashMap::new(),
            rows: HashMap::new(),
            levels: Vec::new(),
        }
    }

    /// A new workspace field of type `ty`, named after `base`.
    pub(super) fn field(&mut self, base: &str, ty: String) -> String {
        let name = self.names.fresh(base);
        self.fields.push((name.clone(), ty));
        name
    }
}

/// A kernel output written straight into the caller's buffer.
struct DirectOut {
    /// The code of that buffer (`y_out`, or a local holding a chunk's rows of it).
    out: String,
    /// The value and its buffer, when something reads it besides its output.
    bind: Option<(Ref, String)>,
}

/// Emits the functions of one graph.
pub(super) struct Emitter<'g> {
    pub(super) graph: &'g Graph,
    pub(super) h: &'g Hierarchy,
    /// The graph function's name.
    pub(super) name: String,
    pub(super) sizes: Sizes,
    pub(super) kernels: &'g mut KernelTable,
    /// Module-level names taken (by this and earlier graphs).
    pub(super) items_taken: &'g mut Idents,
    /// Module-level items written so far (constants, `call` functions, workspaces).
    pub(super) items: Vec<String>,
    /// Every value some node, interface or graph output reads.
    pub(super) used: HashSet<Ref>,
    /// The `while` body results swapped into the state (see [`super::control::swapped`]).
    pub(super) swapped: HashSet<Ref>,
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

    /// The slice expression of `r` in `frame`.
    pub(super) fn local(
        &self,
        frame: &Frame,
        reader: NodeId,
        r: Ref,
    ) -> Result<String, GraphEmitError> {
        frame
            .locals
            .get(&r)
            .or_else(|| self.consts.get(&r))
            .cloned()
            .ok_or_else(|| self.err(reader, format!("reads {r}, which has no value here")))
    }

    /// The slice expression of an interface result.
    pub(super) fn source(
        &self,
        frame: &Frame,
        owner: NodeId,
        s: &Source,
    ) -> Result<String, GraphEmitError> {
        match s {
            Source::Ref(r) => self.local(frame, owner, *r),
            Source::Scalar(v) => Ok(format!("&[{}][..]", literal(self.graph.dtype, *v))),
        }
    }

    /// The graph's function: its entry checks, its body and its results copied into
    /// the caller's buffers. Returns the workspace's fields.
    pub(super) fn graph_function(
        &mut self,
        doc: &str,
        outputs: &[(String, ValueType, Source)],
    ) -> Result<String, GraphEmitError> {
        let mut frame = Frame::new();
        let mut args = vec![format!("ws: &mut {}Workspace", camel(&self.name))];
        let input_node = self.node(self.h.input)?.clone();
        let mut shape_args = Vec::new();
        for (k, (arg, ty)) in self.sizes.inputs.clone().iter().enumerate() {
            frame.names.fresh(arg);
            frame.names.fresh(&format!("{arg}_shape"));
            args.push(format!("{arg}: &[{}]", elem(ty.dtype)));
            args.push(format!("{arg}_shape: [usize; {}]", ty.shape.len()));
            shape_args.push(format!("{arg}_shape"));
            frame.locals.insert(Ref::new(input_node.id, k), arg.clone());
        }
        for (_, f) in self.sizes.params.clone() {
            frame.names.fresh(&f);
            args.push(format!("{f}: i64"));
            shape_args.push(f);
        }
        let mut out_args = Vec::new();
        for (name, ty, _) in outputs {
            let arg = frame.names.fresh(&format!("{name}_out"));
            args.push(format!("{arg}: &mut [{}]", elem(ty.dtype)));
            let shape = sized(&self.name, self.h.input, self.sizes.output(name, &ty.shape))?;
            out_args.push((arg, shape));
        }
        let g = string(&self.name);
        frame.code.line(format!(
            "let sz = &{}_sizes({})?;",
            self.name,
            shape_args.join(", ")
        ));
        for (arg, ty) in &self.sizes.inputs {
            let _ = ty;
            frame.code.line(format!(
                "rt::check_len({g}, {}, {arg}.len(), &{arg}_shape)?;",
                string(arg)
            ));
        }
        for ((name, _, _), (arg, shape)) in outputs.iter().zip(&out_args) {
            frame.code.line(format!(
                "rt::check_len({g}, {}, {arg}.len(), &{shape})?;",
                string(name)
            ));
        }
        for ((_, _, src), (arg, _)) in outputs.iter().zip(&out_args) {
            if src.as_ref().and_then(|r| self.sum_kind(r)) == Some(true) {
                frame.code.line(format!("rt::graph::zero({arg});"));
            }
        }
        let top = self.h.top.clone();
        for ((name, _, src), (arg, _)) in outputs.iter().zip(&out_args) {
            if let Source::Ref(r) = src
                && self.h.scope_of(r.node) == Some(None)
                && matches!(self.node(r.node)?.op, Op::Kernel(_) | Op::Call(_))
                && !self.direct.contains_key(r)
            {
                self.direct.insert(*r, (arg.clone(), name.clone()));
            }
        }
        let mut body = Frame {
            names: frame.names.clone(),
            locals: frame.locals.clone(),
            ..Frame::new()
        };
        let loops = top.iter().filter(|e| self.is_chunk(e.node)).count();
        if loops > 0 {
            // The loops' counts; a loop end that may leave rows unwritten gets the
            // looped outputs zeroed first (the interpreter's rows no iteration wrote).
            body.code.line(format!(
                "let mut {COUNTS} = [rt::graph::LoopCounts::default(); {loops}];"
            ));
            let rows: Vec<&String> = outputs
                .iter()
                .zip(&out_args)
                .filter(|((_, _, src), _)| src.as_ref().and_then(|r| self.sum_kind(r)).is_none())
                .map(|(_, (arg, _))| arg)
                .collect();
            if !rows.is_empty() {
                body.code.open(format!("if !{ENDS}.covers_all_rows() {{"));
                for arg in rows {
                    body.code.line(format!("rt::graph::zero({arg});"));
                }
                body.code.close("}");
            }
        }
        self.entries(&mut body, &top)?;
        if body.levels.is_empty() {
            for ((name, _, src), (arg, _)) in outputs.iter().zip(&out_args) {
                if self.written_to(src, arg) {
                    continue;
                }
                let value = self.source(&body, self.h.input, src)?;
                body.code.line(format!(
                    "rt::graph::deliver({g}, {}, {arg}, {value})?;",
                    string(name)
                ));
            }
        } else {
            self.deliver_chunks(&mut body, outputs, &out_args)?;
        }
        body.code.line("Ok(())");
        let ws = format!("{}Workspace", camel(&self.name));
        self.items.push(workspace(
            &ws,
            &body.fields,
            &format!(
                "The buffers of graph `{}` between calls: keep one and pass it to every call,\n\
                 and a call with the shapes of an earlier one allocates no buffer (its kernels\n\
                 may allocate temporaries of their own).",
                self.name
            ),
            true,
        ));
        let mut c = Code::default();
        let mut fn_name = self.name.clone();
        if loops > 0 {
            // `NAME` runs the loops with the standard loop ends.
            fn_name = format!("{}_with_loop_ends", self.name);
            let names: Vec<&str> = args.iter().filter_map(|a| a.split(':').next()).collect();
            c.doc(doc);
            if args.len() > 7 {
                c.line("#[allow(clippy::too_many_arguments)]");
            }
            c.open(signature(
                &format!("pub fn {}", self.name),
                &args,
                "Result<(), KernelError>",
            ));
            c.line(format!(
                "{fn_name}({}, &mut rt::graph::DefaultLoopEnds)",
                names.join(", ")
            ));
            c.close("}");
            c.line("");
            c.doc(&format!(
                "[`{}`] with the caller's loop ends for its `chunk` loops (DESIGN.md §20):\n\
                 `ends` decides at the end of every iteration of every loop whether it runs\n\
                 again (`rt::graph::LoopEnds`, with state of its own). Rows of a looped\n\
                 output no iteration wrote are zero.\n\n\
                 # Errors\n\n\
                 As [`{}`], and the loop end's error naming its chunk node.",
                self.name, self.name
            ));
            args.push(format!("{ENDS}: &mut dyn rt::graph::LoopEnds"));
        } else {
            c.doc(doc);
        }
        if args.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.open(signature(
            &format!("pub fn {fn_name}"),
            &args,
            "Result<(), KernelError>",
        ));
        for l in frame.code.finish().lines() {
            c.line(l.trim_start());
        }
        c.line(destructure(&ws, &body.fields));
        for l in body.code.finish().lines() {
            c.line(l);
        }
        c.close("}");
        Ok(c.finish())
    }

    pub(super) fn entries(
        &mut self,
        frame: &mut Frame,
        entries: &[Entry],
    ) -> Result<(), GraphEmitError> {
        entries.iter().try_for_each(|e| self.entry(frame, e))
    }

    /// Binds the parameters of `sub` (its Input node's outputs) to `args`.
    pub(super) fn bind_params(
        &self,
        frame: &mut Frame,
        sub: &SubFunction,
        args: &[String],
    ) -> Result<(), GraphEmitError> {
        let input = self.node(sub.input)?;
        for (k, a) in args.iter().enumerate().take(input.outputs.len()) {
            let r = Ref::new(sub.input, k);
            if self.used.contains(&r) {
                let name = frame.names.fresh(&self.base_name(r));
                frame.code.line(format!("let {name} = {a};"));
                frame.locals.insert(r, name);
            }
        }
        Ok(())
    }

    /// The outputs of `node` bound to the slices of `values`: `let (a, _, c) = ...`.
    pub(super) fn bind_outputs(&self, frame: &mut Frame, node: &Node) -> String {
        let names: Vec<String> = (0..node.outputs.len())
            .map(|k| {
                let r = node.output(k);
                if self.used.contains(&r) {
                    let name = frame.names.fresh(&self.base_name(r));
                    frame.locals.insert(r, name.clone());
                    name
                } else {
                    "_".into()
                }
            })
            .collect();
        format!("({},)", names.join(", "))
    }

    pub(super) fn entry(&mut self, frame: &mut Frame, e: &Entry) -> Result<(), GraphEmitError> {
        let node = self.node(e.node)?.clone();
        let id = node.id;
        match &node.op {
            Op::Input { .. } => Err(self.err(id, "an Input node outside an interface")),
            Op::Const(t) => {
                let r = node.output(0);
                if !self.used.contains(&r) {
                    return Ok(());
                }
                let name = self
                    .items_taken
                    .fresh(&format!("{}_{}", self.name, self.base_name(r)))
                    .to_uppercase();
                let values: Vec<String> = t.data.iter().map(|v| literal(t.dtype, *v)).collect();
                self.items.push(format!(
                    "/// `{}` of graph `{}` ({id}, shape {:?}).\nstatic {name}: [{}; {}] = [{}];\n",
                    self.base_name(r),
                    self.name,
                    t.shape,
                    elem(t.dtype),
                    values.len(),
                    values.join(", ")
                ));
                self.consts.insert(r, format!("&{name}[..]"));
                Ok(())
            }
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
            Op::NoInline { name, .. } => self.call(frame, &node, e, name),
            Op::Chunk { size, .. } => self.chunk(frame, &node, size),
            Op::SumChunks => self.sum_chunks(frame, &node),
            // What the Sink keeps alive lives in buffers of its own anyway.
            Op::Sink => Ok(()),
        }
    }

    /// A kernel (or a one-op program) called on the node's inputs, each output
    /// written into the node's buffer.
    pub(super) fn program_call(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        hint: &str,
        program: &Program,
        params: Params<'_>,
    ) -> Result<(), GraphEmitError> {
        let (kernel, sig): (String, Signature) = self.kernels.add(hint, program)?;
        if sig.inputs.len() != node.inputs.len() || sig.outputs.len() != node.outputs.len() {
            return Err(self.err(
                node.id,
                format!(
                    "its program takes {} inputs and gives {} outputs, the node has {} and {}",
                    sig.inputs.len(),
                    sig.outputs.len(),
                    node.inputs.len(),
                    node.outputs.len()
                ),
            ));
        }
        let mut args = Vec::new();
        for r in &node.inputs {
            let ty = self.ty(*r)?;
            args.push(self.local(frame, node.id, *r)?);
            let shape = match frame.rows.get(r) {
                Some(rows) => self.sizes.looped_shape(&ty.shape, rows),
                None => self.sizes.shape(&ty.shape),
            };
            args.push(sized(&self.name, node.id, shape)?);
        }
        for p in &sig.params {
            if let Some((_, k)) = params.bind.iter().find(|(n, _)| n == p) {
                let r = node.inputs.get(*k).copied().ok_or_else(|| {
                    self.err(node.id, format!("${p} is bound to a missing input"))
                })?;
                args.push(format!(
                    "rt::graph::index_param({}, {}, {})?",
                    string(&self.name),
                    string(&node.id.to_string()),
                    self.local(frame, node.id, r)?
                ));
            } else if let Some(f) = self.sizes.param(p) {
                args.push(format!("sz.{f}"));
            } else if let Some((_, dim)) = params.dims.iter().find(|(n, _)| n == p) {
                args.push(sized(&self.name, node.id, self.sizes.dim_param(dim))?);
            } else {
                return Err(self.err(node.id, format!("its program reads ${p}, which is unknown")));
            }
        }
        let mut bufs = Vec::new();
        let mut direct = Vec::new();
        for k in 0..node.outputs.len() {
            if let Some(DirectOut { out, bind }) = self.direct_output(frame, node, k)? {
                args.push(format!("&mut *{out}"));
                direct.extend(bind);
                continue;
            }
            let (r, buf, len) = self.output_buffer(frame, node, k)?;
            args.push(format!("rt::graph::slot({buf}, {len})"));
            bufs.push((r, buf));
        }
        let call = format!("{kernel}({})", args.join(", "));
        if self.clocked {
            frame.code.line(format!("rt::graph::clocked(|| {call})?;"));
        } else {
            frame.code.line(format!("{call}?;"));
        }
        self.bind_buffers(frame, bufs);
        for (r, out) in direct {
            let name = frame.names.fresh(&self.base_name(r));
            frame.code.line(format!("let {name} = &*{out};"));
            frame.locals.insert(r, name);
        }
        Ok(())
    }

    /// When output `k` of `node` is a graph output written straight into the
    /// caller's buffer (`direct`): the code of that buffer (at depth 0 the output
    /// argument, in a chunk loop a local holding the chunk's rows of it), and the
    /// value's binding when something reads it besides that output.
    fn direct_output(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        k: usize,
    ) -> Result<Option<DirectOut>, GraphEmitError> {
        let r = node.output(k);
        let Some((arg, name)) = self.direct.get(&r).cloned() else {
            return Ok(None);
        };
        if frame.levels.len() != self.h.top.iter().filter(|e| self.is_chunk(e.node)).count() {
            return Ok(None);
        }
        let out = match frame.levels.last() {
            None => arg,
            Some(_) if self.rowless.contains(&r) => return Ok(None),
            Some(level) => {
                let ty = &node.outputs[k];
                let rest = ty.shape.get(1..).ok_or_else(|| {
                    self.err(node.id, format!("{r} in a chunk loop has no axis 0"))
                })?;
                let row = sized(&self.name, node.id, self.sizes.len(rest, &format!("{r}")))?;
                let level_rows = level.rows.clone();
                let at = self.output_row(frame);
                let rows = frame.names.fresh(&format!("{}_rows", self.base_name(r)));
                frame.code.line(format!(
                    "let {rows} = rt::graph::rows_mut({}, {}, {arg}, {at}, {level_rows}, {row})?;",
                    string(&self.name),
                    string(&name),
                ));
                frame.rows.insert(r, level_rows);
                rows
            }
        };
        self.written.insert(r);
        // Read by a node, or returned by another output too (a copy of it).
        let returned = self
            .graph
            .interface
            .outputs
            .iter()
            .filter(|s| s.as_ref() == Some(r))
            .count();
        let read = returned > 1
            || self
                .graph
                .nodes()
                .iter()
                .filter(|n| !matches!(n.op, Op::Sink))
                .any(|n| n.uses().contains(&r));
        Ok(Some(DirectOut {
            out: out.clone(),
            bind: read.then_some((r, out)),
        }))
    }

    /// True when `node` is a `chunk`.
    pub(super) fn is_chunk(&self, node: NodeId) -> bool {
        matches!(self.graph.node(node).map(|n| &n.op), Some(Op::Chunk { .. }))
    }

    /// True when graph output `arg` (returning `src`) was written straight into the
    /// caller's buffer, so there is nothing to deliver.
    pub(super) fn written_to(&self, src: &Source, arg: &str) -> bool {
        src.as_ref().is_some_and(|r| {
            self.written.contains(&r) && self.direct.get(&r).is_some_and(|(a, _)| a == arg)
        })
    }

    /// The workspace buffer of output `k` of `node` (a new field) and the code of
    /// its length.
    pub(super) fn output_buffer(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        k: usize,
    ) -> Result<(Ref, String, String), GraphEmitError> {
        let r = node.output(k);
        let ty = &node.outputs[k];
        let buf = frame.field(&format!("{}_buf", self.base_name(r)), buffer_type(ty));
        let len = match frame.levels.last() {
            // In a chunk loop every value has the chunk's rows (the loops pass), but
            // those only `sum_chunks` reads (a weight's gradient per chunk).
            Some(level) if !self.rowless.contains(&r) => {
                let rest = ty.shape.get(1..).ok_or_else(|| {
                    self.err(node.id, format!("{r} in a chunk loop has no axis 0"))
                })?;
                let row = sized(&self.name, node.id, self.sizes.len(rest, &format!("{r}")))?;
                frame.rows.insert(r, level.rows.clone());
                format!(
                    "rt::graph::rows_len({}, {}, {}, {row})?",
                    string(&self.name),
                    string(&r.to_string()),
                    level.rows
                )
            }
            _ => sized(
                &self.name,
                node.id,
                self.sizes.len(&ty.shape, &format!("{r}")),
            )?,
        };
        frame.buffers.insert(r, buf.clone());
        Ok((r, buf, len))
    }

    /// Each read value of `bufs` bound as a slice of its buffer: `let h = &h_buf[..];`.
    pub(super) fn bind_buffers(
        &self,
        frame: &mut Frame,
        bufs: impl IntoIterator<Item = (Ref, String)>,
    ) {
        for (r, buf) in bufs {
            if self.used.contains(&r) {
                let name = frame.names.fresh(&self.base_name(r));
                frame.code.line(format!("let {name} = &{buf}[..];"));
                frame.locals.insert(r, name);
            }
        }
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
pub(super) fn destructure(ws_type: &str, fields: &[(String, String)]) -> String {
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    if names.is_empty() {
        format!("let {ws_type} {{}} = ws;")
    } else {
        format!("let {ws_type} {{ {} }} = ws;", names.join(", "))
    }
}

/// The workspace struct.
pub(super) fn workspace(
    name: &str,
    fields: &[(String, String)],
    doc: &str,
    public: bool,
) -> String {
    let mut c = Code::default();
    c.doc(doc);
    c.line("#[derive(Debug, Default)]");
    let vis = if public { "pub " } else { "" };
    if fields.is_empty() {
        c.line(format!("{vis}struct {name} {{}}"));
    } else {
        c.open(format!("{vis}struct {name} {{"));
        for (f, t) in fields {
            c.line(format!("{f}: {t},"));
        }
        c.close("}");
    }
    if public {
        c.line("");
        c.open(format!("impl {name} {{"));
        c.doc("An empty workspace: its buffers grow on the first call.");
        c.open("pub fn new() -> Self {");
        c.line("Self::default()");
        c.close("}");
        c.close("}");
    }
    c.finish()
}
