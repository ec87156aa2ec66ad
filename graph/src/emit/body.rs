//! The definition hierarchy of a prepared graph printed as Rust (DESIGN.md §21):
//! one function for the graph and one for each `call`, whose bodies run the
//! hierarchy's definitions in order. This module owns the frame of a generated
//! function, the graph function (entry checks, outputs), the walk over the
//! definitions and kernel calls; control flow is in `control`, chunk loops in
//! `chunks`.
//!
//! A value is a location in the workspace's arena (`rt::graph::Loc`, see `arena`)
//! when the memory plan places it, else a slice (`&[f32]`, ...): a graph input, a
//! constant (`static`), a graph output written into the caller's buffer, or the
//! buffer of a graph output computed elsewhere (a field of the workspace that
//! keeps its capacity between calls, so a steady-state call allocates no buffer; a
//! kernel of the Rust backend may allocate temporaries of its own). A kernel call
//! borrows its arena inputs and outputs with `rt::graph::split`.

use std::collections::{BTreeSet, HashMap, HashSet};

use uop_codegen::signature::Signature;
use uop_codegen::uop::Program;

use super::arena::{Arena, Val};
use super::chunks::{COUNTS, ChunkLevel, ENDS};
use super::code::{Code, Idents, camel, elem, literal, string};
use super::one_op::one_op_program;
use super::sizes::{Sizes, buffer_type, signature};
use super::{GraphEmitError, KernelTable};
use crate::hierarchy::{Entry, Hierarchy, SubFunction};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source, ValueType};
use uop_codegen::uop::DType;

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

/// One generated function under way: its code, its workspace's fields and the
/// Rust expression of every value it has defined.
pub(super) struct Frame {
    pub(super) code: Code,
    pub(super) names: Idents,
    /// The workspace's fields besides the arena: name, type.
    pub(super) fields: Vec<(String, String)>,
    /// How the code reaches each value.
    pub(super) locals: HashMap<Ref, Val>,
    /// The rows (code) of each looped value: the rows of its chunk.
    pub(super) rows: HashMap<Ref, String>,
    /// The `chunk` loops open around the code being written, outermost first.
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
            .or_else(|| self.consts.get(&r).cloned().map(Val::Slice))
            .ok_or_else(|| self.err(reader, format!("reads {r}, which has no value here")))
    }

    /// The slice expression of an interface result.
    pub(super) fn source(
        &self,
        frame: &mut Frame,
        owner: NodeId,
        s: &Source,
    ) -> Result<String, GraphEmitError> {
        let v = self.source_val(frame, owner, s)?;
        Ok(self.slice_of(frame, owner, &v))
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
            frame
                .locals
                .insert(Ref::new(input_node.id, k), Val::Slice(arg.clone()));
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
        let ws = format!("{}Workspace", camel(&self.name));
        let sizes_type = format!("{}Sizes", camel(&self.name));
        let arena_fn = self.arena_function(&sizes_type)?;
        self.items.push(arena_fn);
        if body.levels.is_empty() {
            for ((name, _, src), (arg, _)) in outputs.iter().zip(&out_args) {
                if self.written_to(src, arg) {
                    continue;
                }
                let value = self.source(&mut body, self.h.input, src)?;
                body.code.line(format!(
                    "rt::graph::deliver({g}, {}, {arg}, {value})?;",
                    string(name)
                ));
            }
        } else {
            self.deliver_chunks(&mut body, outputs, &out_args)?;
        }
        body.code.line("Ok(())");
        if body.scratch_used {
            body.fields
                .push(("scratch".to_string(), "rt::Scratch".to_string()));
        }
        self.items.push(workspace(
            &ws,
            &body.fields,
            &format!(
                "The memory of graph `{}` between calls: its arena (every intermediate, laid out\n\
                 as the memory plan says), the buffers of graph outputs computed outside it and,\n\
                 when its kernels need memory of their own, the scratch they take it from; keep\n\
                 one and pass it to every call, and a call with the shapes of an earlier one\n\
                 allocates nothing.",
                self.name
            ),
            &self.name,
            self.graph.dtype,
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
        let mut fields = vec![("arena".to_string(), String::new())];
        fields.push(("placement".to_string(), String::new()));
        fields.extend(body.fields.iter().cloned());
        c.line(destructure(&ws, &fields));
        // The arena placed for these sizes (again only when they change) and grown
        // to its length, also when this call's code happens to touch no value in it.
        let off = match (body.off_used, body.off_mut) {
            (false, _) => "_",
            (true, false) => "off",
            (true, true) => "mut off",
        };
        c.line(format!(
            "let ({off}, arena_len) = {}_arena(placement, sz)?;",
            self.name
        ));
        let bind = if body.arena_used { "let arena = " } else { "" };
        c.line(format!("{bind}rt::graph::grow({g}, arena, arena_len)?;"));
        for l in unused_locals(&body.code.finish()).lines() {
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
                let name = frame.names.fresh(&self.base_name(r));
                let (code, val) = match a {
                    Val::Slice(e) => (e, Val::Slice(name.clone())),
                    Val::At(l) => (l, Val::At(name.clone())),
                };
                frame.code.line(format!("let {name} = {code};"));
                frame.locals.insert(r, val);
            }
        }
        Ok(())
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
            Op::Scan { .. } => Err(self.err(id, "`scan` has no generated Rust yet")),
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
        let (kernel, sig, scratch): (String, Signature, bool) =
            self.kernels.add(hint, program, self.items_taken)?;
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
        // Arena inputs and outputs are borrowed together (`rt::graph::split`), each
        // input location once; the rest are slices.
        let mut ins: Vec<String> = Vec::new();
        let mut args = Vec::new();
        for r in &node.inputs {
            let ty = self.ty(*r)?;
            match self.local(frame, node.id, *r)? {
                Val::Slice(e) => args.push(e),
                Val::At(l) => {
                    if !ins.contains(&l) {
                        ins.push(l.clone());
                    }
                    args.push(l);
                }
            }
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
                let index = self.slice(frame, node.id, r)?;
                let value = format!(
                    "rt::graph::index_param({}, {}, {index})?",
                    string(&self.name),
                    string(&node.id.to_string()),
                );
                // Read before the arena is lent to the kernel.
                let local = frame.names.fresh(&format!("param_{p}"));
                frame.code.line(format!("let {local} = {value};"));
                args.push(local);
            } else if let Some(f) = self.sizes.param(p) {
                args.push(format!("sz.{f}"));
            } else if let Some((_, dim)) = params.dims.iter().find(|(n, _)| n == p) {
                args.push(sized(&self.name, node.id, self.sizes.dim_param(dim))?);
            } else {
                return Err(self.err(node.id, format!("its program reads ${p}, which is unknown")));
            }
        }
        let mut outs: Vec<String> = Vec::new();
        let mut extras = Vec::new();
        let mut direct = Vec::new();
        for k in 0..node.outputs.len() {
            if let Some(DirectOut { out, bind }) = self.direct_output(frame, node, k)? {
                args.push(format!("&mut *{out}"));
                direct.extend(bind);
                continue;
            }
            let (r, len) = self.output_len(frame, node, k)?;
            match self.loc_code(frame, r, &len) {
                Some(loc) => {
                    let name = frame.names.fresh(&self.base_name(r));
                    frame.code.line(format!("let {name} = {loc};"));
                    frame.locals.insert(r, Val::At(name.clone()));
                    outs.push(name.clone());
                    args.push(name);
                }
                None => {
                    let buf = self.extra(frame, node, k)?;
                    args.push(format!("rt::graph::slot({buf}, {len})"));
                    extras.push((r, buf));
                }
            }
        }
        let call = if scratch {
            // Its loops' memory is lent by the workspace's scratch.
            frame.scratch_used = true;
            format!("{kernel}_with_scratch(scratch, {})", args.join(", "))
        } else {
            format!("{kernel}({})", args.join(", "))
        };
        let call = if self.clocked {
            format!("rt::graph::clocked(|| {call})?;")
        } else {
            format!("{call}?;")
        };
        if ins.is_empty() && outs.is_empty() {
            frame.code.line(call);
        } else {
            frame.arena_used = true;
            frame.code.open("{");
            frame.code.line(format!(
                "let ([{}], [{}]) = rt::graph::split({}, {}, arena, [{}], [{}])?;",
                ins.join(", "),
                outs.join(", "),
                string(&self.name),
                string(&node.id.to_string()),
                ins.join(", "),
                outs.join(", ")
            ));
            frame.code.line(call);
            frame.code.close("}");
        }
        self.bind_buffers(frame, extras);
        for (r, out) in direct {
            let name = frame.names.fresh(&self.base_name(r));
            frame.code.line(format!("let {name} = &*{out};"));
            frame.locals.insert(r, Val::Slice(name));
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

    /// The code of the length of output `k` of `node` (in a chunk loop, its
    /// chunk's rows, which it records).
    pub(super) fn output_len(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        k: usize,
    ) -> Result<(Ref, String), GraphEmitError> {
        let r = node.output(k);
        let ty = &node.outputs[k];
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
        Ok((r, len))
    }

    /// A workspace buffer (a new field) for output `k` of `node`, a value outside
    /// the arena: a graph output not written into the caller's buffer.
    pub(super) fn extra(
        &self,
        frame: &mut Frame,
        node: &Node,
        k: usize,
    ) -> Result<String, GraphEmitError> {
        let r = node.output(k);
        Ok(frame.field(
            &format!("{}_buf", self.base_name(r)),
            buffer_type(&node.outputs[k]),
        ))
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
                frame.locals.insert(r, Val::Slice(name));
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

/// `code` with every `let NAME = ...;` whose name no later line mentions bound to
/// `_NAME` instead (a state or parameter location the code happens not to read,
/// such as a `while` state returned unchanged).
pub(super) fn unused_locals(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let mut out = String::with_capacity(code.len());
    for (i, line) in lines.iter().enumerate() {
        let indent = &line[..line.len() - line.trim_start().len()];
        let bound = line
            .trim_start()
            .strip_prefix("let ")
            .and_then(|rest| rest.split_once(" = "))
            .map(|(name, _)| name)
            .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            .filter(|name| !name.starts_with('_'));
        match bound {
            Some(name) if !lines[i + 1..].iter().any(|l| mentions(l, name)) => {
                out.push_str(indent);
                out.push_str("let _");
                out.push_str(&line.trim_start()["let ".len()..]);
            }
            _ => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

/// True when `code` (outside its string literals) has the identifier `name`.
pub(super) fn mentions(code: &str, name: &str) -> bool {
    let mut outside = String::with_capacity(code.len());
    for (k, part) in code.split('"').enumerate() {
        if k % 2 == 0 {
            outside.push_str(part);
        }
        outside.push(' ');
    }
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    outside.match_indices(name).any(|(at, _)| {
        let before = outside[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !ident(c) && c != '.');
        let after = outside[at + name.len()..]
            .chars()
            .next()
            .is_none_or(|c| !ident(c));
        before && after
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

/// The workspace struct of graph `graph`: its arena of `dtype` values, the arena's
/// placement, then `fields`.
pub(super) fn workspace(
    name: &str,
    fields: &[(String, String)],
    doc: &str,
    graph: &str,
    dtype: DType,
) -> String {
    let mut c = Code::default();
    c.doc(doc);
    c.line("#[derive(Debug, Default)]");
    c.open(format!("pub struct {name} {{"));
    c.line(format!("arena: Vec<{}>,", elem(dtype)));
    c.line("placement: rt::place::Kept,");
    for (f, t) in fields {
        c.line(format!("{f}: {t},"));
    }
    c.close("}");
    c.line("");
    c.open(format!("impl {name} {{"));
    c.doc("An empty workspace: its arena and buffers grow on the first call.");
    c.open("pub fn new() -> Self {");
    c.line("Self::default()");
    c.close("}");
    c.line("");
    c.doc(&format!(
        "The arena's length in elements for the sizes `sz` (from [`{graph}_sizes`]): what\n\
         a call with these sizes holds, as the memory plan (`plan_memory_apart`) lays\n\
         it out. Places the arena (kept for the next call).\n\n\
         # Errors\n\n\
         [`KernelError::TooLarge`] when the arena does not fit in memory."
    ));
    c.open(format!(
        "pub fn arena_len(&mut self, sz: &{}Sizes) -> Result<usize, KernelError> {{",
        camel(graph)
    ));
    c.line(format!("Ok({graph}_arena(&mut self.placement, sz)?.1)"));
    c.close("}");
    c.close("}");
    c.finish()
}
