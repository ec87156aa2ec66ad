//! The definition hierarchy of a prepared graph printed as Rust (DESIGN.md §21):
//! one function for the graph and one for each `call`, whose bodies run the
//! hierarchy's definitions in order — a kernel as a call of its generated function,
//! `while` as a `loop` over state buffers, `if` / `case` as `if` / `match` on the
//! selector, `parallel` as a `for` over the index.
//!
//! Every value is a slice (`&[f32]`, ...): a graph input, a constant (`static`), or
//! the buffer of the node computing it, a field of the function's workspace that
//! keeps its capacity between calls (so a steady-state call allocates nothing).
//! The parameters of `if` / `case` / `parallel` / `call` bodies are their
//! arguments' slices, and the outputs of `if` / `case` / `call` are the taken
//! branch's result slices (no copy). A `while`'s state lives in one buffer per
//! value: a result computed in the body by a kernel is swapped into it, any other
//! result (a parameter, an outer value, a constant) is copied.

use std::collections::{BTreeSet, HashMap, HashSet};

use uop_codegen::signature::Signature;
use uop_codegen::uop::Program;

use super::code::{Code, Idents, camel, elem, literal, string};
use super::sizes::{Sizes, buffer_type, signature};
use super::{GraphEmitError, KernelTable};
use crate::hierarchy::{Entry, Hierarchy, SubFunction};
use crate::infer::{call_program_in, graph_dims};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source, ValueType};
use uop_codegen::index::Expr;

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
    "KernelError",
];

/// One generated function under way: its code, its workspace's fields and the
/// Rust expression of every value it has defined.
struct Frame {
    code: Code,
    names: Idents,
    /// The workspace's fields: name, type.
    fields: Vec<(String, String)>,
    /// Each value's slice expression.
    locals: HashMap<Ref, String>,
    /// The buffer holding each value a node computes.
    buffers: HashMap<Ref, String>,
    /// The rows (code) of each looped value: the rows of its chunk.
    rows: HashMap<Ref, String>,
    /// The `chunk` loops open around the code being written, outermost first.
    levels: Vec<ChunkLevel>,
}

/// One open `chunk` loop (DESIGN.md §20): its locals.
#[derive(Clone, Debug)]
struct ChunkLevel {
    /// The first row of this chunk.
    start: String,
    /// The rows of this chunk.
    rows: String,
    /// The rows of the chunk node's input.
    total: String,
}

impl Frame {
    fn new() -> Frame {
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
    fn field(&mut self, base: &str, ty: String) -> String {
        let name = self.names.fresh(base);
        self.fields.push((name.clone(), ty));
        name
    }
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
    /// The `while` body results swapped into the state (see [`swapped`]).
    pub(super) swapped: HashSet<Ref>,
    /// The `static` of each constant, visible in every function of the graph.
    pub(super) consts: HashMap<Ref, String>,
    /// Every kernel called through `rt::graph::clocked`.
    pub(super) clocked: bool,
}

impl Emitter<'_> {
    fn err(&self, node: NodeId, message: impl std::fmt::Display) -> GraphEmitError {
        GraphEmitError::Graph {
            graph: self.name.clone(),
            message: format!("{node}: {message}"),
        }
    }

    fn node(&self, id: NodeId) -> Result<&Node, GraphEmitError> {
        self.graph.node(id).ok_or_else(|| GraphEmitError::Graph {
            graph: self.name.clone(),
            message: format!("{id} is not in the prepared graph"),
        })
    }

    fn ty(&self, r: Ref) -> Result<ValueType, GraphEmitError> {
        self.graph
            .type_of(r)
            .cloned()
            .ok_or_else(|| self.err(r.node, format!("{r} has no type")))
    }

    /// A readable name for value `r`: its name in the source, else `t{id}`.
    fn base_name(&self, r: Ref) -> String {
        let named = self.graph.node(r.node).and_then(|n| n.name(r.output));
        match named {
            Some(n) => n.trim_start_matches('$').to_string(),
            None if r.output == 0 => format!("t{}", r.node.0),
            None => format!("t{}_{}", r.node.0, r.output),
        }
    }

    /// The slice expression of `r` in `frame`.
    fn local(&self, frame: &Frame, reader: NodeId, r: Ref) -> Result<String, GraphEmitError> {
        frame
            .locals
            .get(&r)
            .or_else(|| self.consts.get(&r))
            .cloned()
            .ok_or_else(|| self.err(reader, format!("reads {r}, which has no value here")))
    }

    /// The slice expression of an interface result.
    fn source(&self, frame: &Frame, owner: NodeId, s: &Source) -> Result<String, GraphEmitError> {
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
        let top = self.h.top.clone();
        let mut body = Frame {
            names: frame.names.clone(),
            locals: frame.locals.clone(),
            ..Frame::new()
        };
        self.entries(&mut body, &top)?;
        if body.levels.is_empty() {
            for ((name, _, src), (arg, _)) in outputs.iter().zip(&out_args) {
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
                 and a call with the shapes of an earlier one allocates nothing.",
                self.name
            ),
            true,
        ));
        let mut c = Code::default();
        c.doc(doc);
        if args.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.open(signature(
            &format!("pub fn {}", self.name),
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

    fn entries(&mut self, frame: &mut Frame, entries: &[Entry]) -> Result<(), GraphEmitError> {
        entries.iter().try_for_each(|e| self.entry(frame, e))
    }

    /// Binds the parameters of `sub` (its Input node's outputs) to `args`.
    fn bind_params(
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
    fn bind_outputs(&self, frame: &mut Frame, node: &Node) -> String {
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

    fn entry(&mut self, frame: &mut Frame, e: &Entry) -> Result<(), GraphEmitError> {
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
                self.program_call(frame, &node, &hint, &k.program, &[])
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
                let (program, _) = call_program_in(
                    self.graph.dtype,
                    &self.graph.params,
                    &self.graph.registry,
                    call,
                    &types,
                    &graph_dims(self.graph),
                )
                .map_err(|e| self.err(id, format!("{}: {e}", call.op)))?;
                let hint = format!("{}_{}_{}", self.name, call.op, id.0);
                self.program_call(frame, &node, &hint, &program, &call.bind)
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
    fn program_call(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        hint: &str,
        program: &Program,
        bind: &[(String, usize)],
    ) -> Result<(), GraphEmitError> {
        let (kernel, sig): (String, Signature) = self.kernels.add(hint, program)?;
        if sig.inputs.len() != node.inputs.len() || sig.outputs.len() != node.outputs.len() {
            return Err(self.err(
                node.id,
                format!(
                    "its program takes {} inputs and gives {} outputs, the node has {} and {} \
                     (a size only a hidden input carries is not supported by the Rust emitter)",
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
            if let Some((_, k)) = bind.iter().find(|(n, _)| n == p) {
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
            } else {
                return Err(self.err(node.id, format!("its program reads ${p}, which is unknown")));
            }
        }
        let mut bufs = Vec::new();
        for k in 0..node.outputs.len() {
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
        Ok(())
    }

    /// The workspace buffer of output `k` of `node` (a new field) and the code of
    /// its length.
    fn output_buffer(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        k: usize,
    ) -> Result<(Ref, String, String), GraphEmitError> {
        let r = node.output(k);
        let ty = &node.outputs[k];
        let buf = frame.field(&format!("{}_buf", self.base_name(r)), buffer_type(ty));
        let len = match frame.levels.last() {
            // In a chunk loop every value has the chunk's rows (the loops pass).
            Some(level) => {
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
            None => sized(
                &self.name,
                node.id,
                self.sizes.len(&ty.shape, &format!("{r}")),
            )?,
        };
        frame.buffers.insert(r, buf.clone());
        Ok((r, buf, len))
    }

    /// `chunk(x, size=C)` (DESIGN.md §20, at the top level): opens a loop over
    /// chunks of rows of `x`, which stays open to the end of the graph's body (the
    /// nodes after it in partition order are its loop; a later chunk nests a loop
    /// inside). The default loop end: the next chunk while rows remain.
    fn chunk(&mut self, frame: &mut Frame, node: &Node, size: &Expr) -> Result<(), GraphEmitError> {
        let (g, id) = (string(&self.name), string(&node.id.to_string()));
        let first = node
            .inputs
            .first()
            .copied()
            .ok_or_else(|| self.err(node.id, "a chunk without input"))?;
        // The values a chunk loops over together share their rows (the verifier
        // checks it); the first one's count the loop.
        let mut values = Vec::with_capacity(node.inputs.len());
        for &input in &node.inputs {
            let value = self.local(frame, node.id, input)?;
            let ty = self.ty(input)?;
            let Some((axis0, rest)) = ty.shape.split_first() else {
                return Err(self.err(
                    node.id,
                    "a chunk needs a value with an axis 0, got a rank-0 value",
                ));
            };
            let row = sized(
                &self.name,
                node.id,
                self.sizes.len(rest, &format!("a row of {input}")),
            )?;
            values.push((input, value, axis0.clone(), row));
        }
        let total = match frame.rows.get(&first) {
            Some(rows) => rows.clone(),
            None => sized(&self.name, node.id, self.sizes.at(&values[0].2))?,
        };
        let size = sized(&self.name, node.id, self.sizes.at(size))?;
        let level = ChunkLevel {
            start: frame.names.fresh("chunk_start"),
            rows: frame.names.fresh("chunk_rows"),
            total: frame.names.fresh("chunk_total"),
        };
        let ChunkLevel {
            start,
            rows,
            total: total_var,
        } = &level;
        frame.code.comment(&format!(
            "{} = chunk(..): a loop over chunks of {size} rows (partition {})",
            outputs_text(node),
            frame.levels.len() + 1
        ));
        frame.code.line(format!("let {total_var} = {total};"));
        frame.code.line(format!("let mut {start} = 0_usize;"));
        frame.code.open("loop {");
        frame.code.line(format!(
            "let {rows} = rt::graph::chunk_rows({g}, {id}, {size}, {total_var}, {start})?;"
        ));
        for (k, (_, value, _, row)) in values.iter().enumerate() {
            let chunk = format!("rt::graph::rows({g}, {id}, {value}, {start}, {rows}, {row})?");
            let r = node.output(k);
            if self.used.contains(&r) {
                let name = frame.names.fresh(&self.base_name(r));
                frame.code.line(format!("let {name} = {chunk};"));
                frame.locals.insert(r, name);
            } else {
                frame.code.line(format!("{chunk};"));
            }
            frame.rows.insert(r, rows.clone());
        }
        frame.levels.push(level);
        Ok(())
    }

    /// `sum_chunks(v)`: outside any chunk loop, `v` itself. Inside one (the gradient
    /// of a chunked graph) it is a sum over the loop's chunks, which generated code
    /// does not have yet: a clear error rather than one chunk's value.
    fn sum_chunks(&mut self, frame: &mut Frame, node: &Node) -> Result<(), GraphEmitError> {
        if !frame.levels.is_empty() {
            return Err(self.err(
                node.id,
                "`sum_chunks` inside a chunk loop (a gradient of a chunked graph) is not emitted as Rust yet",
            ));
        }
        let input = node
            .inputs
            .first()
            .copied()
            .ok_or_else(|| self.err(node.id, "a sum_chunks without input"))?;
        let value = self.local(frame, node.id, input)?;
        frame.locals.insert(node.output(0), value);
        Ok(())
    }

    /// The end of the innermost chunk loop: each graph output's chunk written at the
    /// global row offset (the sum of the open loops' starts), then every loop
    /// advanced and closed, innermost first.
    fn deliver_chunks(
        &mut self,
        frame: &mut Frame,
        outputs: &[(String, ValueType, Source)],
        out_args: &[(String, String)],
    ) -> Result<(), GraphEmitError> {
        let g = string(&self.name);
        let offset: Vec<&str> = frame.levels.iter().map(|l| l.start.as_str()).collect();
        let offset = offset.join(" + ");
        for ((name, ty, src), (arg, _)) in outputs.iter().zip(out_args) {
            let value = self.source(frame, self.h.input, src)?;
            let rest = ty.shape.get(1..).ok_or_else(|| GraphEmitError::Graph {
                graph: self.name.clone(),
                message: format!("output `{name}` of a chunked graph has no axis 0"),
            })?;
            let row = sized(
                &self.name,
                self.h.input,
                self.sizes.len(rest, &format!("a row of output {name}")),
            )?;
            frame.code.line(format!(
                "rt::graph::deliver_rows({g}, {}, {arg}, {offset}, {row}, {value})?;",
                string(name)
            ));
        }
        for level in frame.levels.clone().iter().rev() {
            frame
                .code
                .line(format!("{} += {};", level.start, level.rows));
            frame
                .code
                .open(format!("if {} >= {} {{", level.start, level.total));
            frame.code.line("break;");
            frame.code.close("}");
            frame.code.close("}");
        }
        Ok(())
    }

    /// Each read value of `bufs` bound as a slice of its buffer: `let h = &h_buf[..];`.
    fn bind_buffers(&self, frame: &mut Frame, bufs: impl IntoIterator<Item = (Ref, String)>) {
        for (r, buf) in bufs {
            if self.used.contains(&r) {
                let name = frame.names.fresh(&self.base_name(r));
                frame.code.line(format!("let {name} = &{buf}[..];"));
                frame.locals.insert(r, name);
            }
        }
    }

    fn sub<'e>(
        &self,
        node: &Node,
        e: &'e Entry,
        k: usize,
    ) -> Result<&'e SubFunction, GraphEmitError> {
        e.subs
            .get(k)
            .ok_or_else(|| self.err(node.id, format!("has no sub-function {k}")))
    }

    fn results(&self, frame: &Frame, node: &Node, k: usize) -> Result<Vec<String>, GraphEmitError> {
        let interfaces = node.op.interfaces();
        let i = interfaces
            .get(k)
            .ok_or_else(|| self.err(node.id, format!("has no sub-function {k}")))?;
        i.outputs
            .iter()
            .map(|s| self.source(frame, node.id, s))
            .collect()
    }

    /// A sub-function inlined: its parameters bound to `args`, its definitions, and
    /// its results as a tuple (the block's value).
    fn inline(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        sub: &SubFunction,
        args: &[String],
    ) -> Result<(), GraphEmitError> {
        self.bind_params(frame, sub, args)?;
        self.entries(frame, &sub.nodes)?;
        let results = self.results(frame, node, sub.branch)?;
        frame.code.line(format!("({},)", results.join(", ")));
        Ok(())
    }

    /// Marks the arguments no sub-function of `e` reads as read (`let _ = x;`), so
    /// the value a node computed for them is not an unused variable.
    fn unread_args(&self, frame: &mut Frame, e: &Entry, args: &[String], skip: usize) {
        for (k, a) in args.iter().enumerate() {
            let read = e
                .subs
                .iter()
                .any(|s| self.used.contains(&Ref::new(s.input, k + skip)));
            if !read {
                frame
                    .code
                    .line(format!("let _ = {a}; // read by no branch"));
            }
        }
    }

    fn args(&self, frame: &Frame, node: &Node, from: usize) -> Result<Vec<String>, GraphEmitError> {
        node.inputs[from.min(node.inputs.len())..]
            .iter()
            .map(|r| self.local(frame, node.id, *r))
            .collect()
    }

    fn if_else(&mut self, frame: &mut Frame, node: &Node, e: &Entry) -> Result<(), GraphEmitError> {
        let cond = node
            .inputs
            .first()
            .copied()
            .ok_or_else(|| self.err(node.id, "has no condition"))?;
        let cond = self.local(frame, node.id, cond)?;
        let args = self.args(frame, node, 1)?;
        frame
            .code
            .comment(&format!("{} = if(...)", outputs_text(node)));
        self.unread_args(frame, e, &args, 0);
        let outs = self.bind_outputs(frame, node);
        let mut branches = Vec::new();
        for k in 0..2 {
            let nested = frame.code.nested();
            let outer = std::mem::replace(&mut frame.code, nested);
            let sub = self.sub(node, e, k);
            let done = sub.and_then(|sub| self.inline(frame, node, sub, &args));
            branches.push(std::mem::replace(&mut frame.code, outer).finish());
            done?;
        }
        let test = format!(
            "rt::graph::one_value({}, {}, \"condition\", {cond})?",
            string(&self.name),
            string(&node.id.to_string())
        );
        if branches[0] == branches[1] {
            // Both branches compute the same: the condition is checked, one runs
            // (no `if` with identical blocks).
            frame.code.line(format!("{test};"));
            frame.code.line(format!("let {outs} = {{"));
            frame.code.append(&branches[0]);
            frame.code.line("};");
        } else {
            frame.code.line(format!("let {outs} = if {test} != 0.0 {{"));
            frame.code.append(&branches[0]);
            frame.code.line("} else {");
            frame.code.append(&branches[1]);
            frame.code.line("};");
        }
        Ok(())
    }

    fn case(&mut self, frame: &mut Frame, node: &Node, e: &Entry) -> Result<(), GraphEmitError> {
        let sel = node
            .inputs
            .first()
            .copied()
            .ok_or_else(|| self.err(node.id, "has no selector"))?;
        let sel = self.local(frame, node.id, sel)?;
        let args = self.args(frame, node, 1)?;
        let arg_types: Vec<ValueType> = node.inputs[1..]
            .iter()
            .map(|r| self.ty(*r))
            .collect::<Result<_, _>>()?;
        let passes = arg_types == node.outputs;
        let n = e.subs.len();
        if n == 0 && !passes {
            return Err(self.err(
                node.id,
                "a case without branches whose arguments cannot pass through",
            ));
        }
        let (g, id) = (string(&self.name), string(&node.id.to_string()));
        frame
            .code
            .comment(&format!("{} = case(...)", outputs_text(node)));
        if !passes {
            self.unread_args(frame, e, &args, 0);
        }
        let outs = self.bind_outputs(frame, node);
        let branch = format!(
            "rt::graph::branch({g}, {id}, rt::graph::one_value({g}, {id}, \"selector\", {sel})?, {n}, {passes})?"
        );
        if n == 1 && !passes {
            // One branch and no pass-through: the selector is checked, then the
            // branch runs (no `match` with one arm).
            frame.code.line(format!("{branch};"));
            frame.code.open(format!("let {outs} = {{"));
            self.inline(frame, node, self.sub(node, e, 0)?, &args)?;
            frame.code.close("};");
            return Ok(());
        }
        frame.code.open(format!("let {outs} = match {branch} {{"));
        for k in 0..n {
            let last = k + 1 == n;
            let pattern = match (last, passes) {
                (false, _) => format!("Some({k})"),
                (true, true) => "Some(_)".to_string(),
                (true, false) => "_".to_string(),
            };
            frame.code.open(format!("{pattern} => {{"));
            let sub = self.sub(node, e, k)?;
            self.inline(frame, node, sub, &args)?;
            frame.code.close("}");
        }
        if passes {
            frame
                .code
                .comment("a negative selector passes the arguments through");
            let pattern = if n == 0 { "_" } else { "None" };
            frame
                .code
                .line(format!("{pattern} => ({},),", args.join(", ")));
        }
        frame.code.close("};");
        Ok(())
    }

    fn while_loop(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
    ) -> Result<(), GraphEmitError> {
        let init = self.args(frame, node, 0)?;
        let (g, id) = (string(&self.name), string(&node.id.to_string()));
        frame.code.comment(&format!(
            "{} = while(...): the state in {}",
            outputs_text(node),
            if node.outputs.len() == 1 {
                "one buffer"
            } else {
                "buffers"
            }
        ));
        if init.len() != node.outputs.len() {
            return Err(self.err(
                node.id,
                "the initial state and the outputs differ in number",
            ));
        }
        let mut state = Vec::new();
        for (k, ty) in node.outputs.iter().enumerate() {
            let r = node.output(k);
            let buf = frame.field(&format!("{}_buf", self.base_name(r)), buffer_type(ty));
            frame
                .code
                .line(format!("rt::graph::assign({buf}, {});", init[k]));
            frame.buffers.insert(r, buf.clone());
            state.push(buf);
        }
        let state_slices: Vec<String> = state.iter().map(|b| format!("&{b}[..]")).collect();
        let cond = self.sub(node, e, 0)?;
        let body = self.sub(node, e, 1)?;
        frame.code.open("loop {");
        frame.code.open("let go = {");
        self.bind_params(frame, cond, &state_slices)?;
        self.entries(frame, &cond.nodes)?;
        let c = self.results(frame, node, 0)?;
        let c = c
            .first()
            .ok_or_else(|| self.err(node.id, "the condition returns nothing"))?;
        frame.code.line(format!(
            "rt::graph::one_value({g}, {id}, \"condition\", {c})? != 0.0"
        ));
        frame.code.close("};");
        frame.code.open("if !go {");
        frame.code.line("break;");
        frame.code.close("}");
        frame.code.open("{");
        self.bind_params(frame, body, &state_slices)?;
        self.entries(frame, &body.nodes)?;
        // Each result: swapped in when a node of the body computed it into its own
        // buffer (and it is returned once), else copied into a spare buffer.
        let interfaces = node.op.interfaces();
        let outputs = &interfaces
            .get(1)
            .ok_or_else(|| self.err(node.id, "has no body"))?
            .outputs;
        let mut swaps = Vec::new();
        for (k, s) in outputs.iter().enumerate() {
            let own = match s {
                Source::Ref(r) if self.swapped.contains(r) => frame.buffers.get(r).cloned(),
                _ => None,
            };
            match own {
                Some(buf) => swaps.push((state[k].clone(), buf)),
                None => {
                    let r = node.output(k);
                    let ty = &node.outputs[k];
                    let next = frame.field(&format!("{}_next", self.base_name(r)), buffer_type(ty));
                    let value = self.source(frame, node.id, s)?;
                    frame
                        .code
                        .line(format!("rt::graph::assign({next}, {value});"));
                    swaps.push((state[k].clone(), next));
                }
            }
        }
        frame.code.close("}");
        for (a, b) in swaps {
            frame.code.line(format!("std::mem::swap({a}, {b});"));
        }
        frame.code.close("}");
        let bound = state.into_iter().enumerate();
        self.bind_buffers(frame, bound.map(|(k, buf)| (node.output(k), buf)));
        Ok(())
    }

    fn parallel(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
        count: &Expr,
    ) -> Result<(), GraphEmitError> {
        let args = self.args(frame, node, 0)?;
        let (g, id) = (string(&self.name), string(&node.id.to_string()));
        let n = sized(&self.name, node.id, self.sizes.at(count))?;
        frame.code.comment(&format!(
            "{} = parallel({count}, ...): iteration i's results are row i",
            outputs_text(node)
        ));
        self.unread_args(frame, e, &args, 1);
        let mut outs = Vec::new();
        frame.code.open("{");
        for k in 0..node.outputs.len() {
            let (r, buf, len) = self.output_buffer(frame, node, k)?;
            let out = frame.names.fresh(&format!("{}_rows", self.base_name(r)));
            frame
                .code
                .line(format!("let {out} = rt::graph::slot({buf}, {len});"));
            outs.push((r, buf, out));
        }
        frame.code.open(format!("for i in 0..{n} {{"));
        let body = self.sub(node, e, 0)?;
        if self.used.contains(&Ref::new(body.input, 0)) {
            frame.code.line(format!(
                "let index = rt::graph::index_value({g}, {id}, i)?;"
            ));
        }
        let mut all = vec!["&index[..]".to_string()];
        all.extend(args);
        self.bind_params(frame, body, &all)?;
        self.entries(frame, &body.nodes)?;
        let results = self.results(frame, node, 0)?;
        for ((_, _, out), r) in outs.iter().zip(&results) {
            frame
                .code
                .line(format!("rt::graph::copy_row({g}, {id}, {out}, i, {r})?;"));
        }
        frame.code.close("}");
        frame.code.close("}");
        self.bind_buffers(frame, outs.into_iter().map(|(r, buf, _)| (r, buf)));
        Ok(())
    }

    /// `call(F, ...)`: a function of its own, with a workspace of its own (a field
    /// of the caller's); the values of enclosing scopes its body reads are extra
    /// arguments.
    fn call(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
        fname: &str,
    ) -> Result<(), GraphEmitError> {
        let sub = self.sub(node, e, 0)?.clone();
        let args = self.args(frame, node, 0)?;
        let free = self.free_values(&sub);
        let fn_name = self.items_taken.fresh(&format!("{}_{}", self.name, fname));
        let ws_type = format!("{}Workspace", camel(&fn_name));
        let mut inner = Frame::new();
        let input = self.node(sub.input)?.clone();
        let mut params = vec![format!("ws: &'a mut {ws_type}"), String::new()];
        for (k, ty) in input.outputs.iter().enumerate() {
            let r = Ref::new(sub.input, k);
            let name = inner.names.fresh(&self.base_name(r));
            let unused = if self.used.contains(&r) { "" } else { "_" };
            params.push(format!("{unused}{name}: &'a [{}]", elem(ty.dtype)));
            inner.locals.insert(r, name);
        }
        let mut free_args = Vec::new();
        for r in &free {
            let ty = self.ty(*r)?;
            let name = inner.names.fresh(&self.base_name(*r));
            params.push(format!("{name}: &'a [{}]", elem(ty.dtype)));
            inner.locals.insert(*r, name);
            free_args.push(self.local(frame, node.id, *r)?);
        }
        self.entries(&mut inner, &sub.nodes)?;
        let results = self.results(&inner, node, 0)?;
        inner.code.line(format!("Ok(({},))", results.join(", ")));
        let inner_code = inner.code.finish();
        let reads_sz = ["sz.", " sz,", " sz)"]
            .iter()
            .any(|p| inner_code.contains(p));
        let sz_name = if reads_sz { "sz" } else { "_sz" };
        params[1] = format!("{sz_name}: &{}Sizes", camel(&self.name));
        let result_types: Vec<String> = node
            .outputs
            .iter()
            .map(|t| format!("&'a [{}]", elem(t.dtype)))
            .collect();
        let mut c = Code::default();
        c.doc(&format!(
            "`call({fname}, ...)` ({}) of graph `{}`: a function of its own.",
            node.id, self.name
        ));
        if params.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.line("#[allow(clippy::type_complexity)]");
        c.open(signature(
            &format!("fn {fn_name}<'a>"),
            &params,
            &format!("Result<({},), KernelError>", result_types.join(", ")),
        ));
        c.line(destructure(&ws_type, &inner.fields));
        for l in inner_code.lines() {
            c.line(l);
        }
        c.close("}");
        self.items.push(workspace(
            &ws_type,
            &inner.fields,
            &format!("The buffers of `{fn_name}`."),
            false,
        ));
        self.items.push(c.finish());
        let field = frame.field(&format!("{fname}_ws"), ws_type);
        frame
            .code
            .comment(&format!("{} = call({fname}, ...)", outputs_text(node)));
        let outs = self.bind_outputs(frame, node);
        let mut all = vec![field, "sz".to_string()];
        all.extend(args);
        all.extend(free_args);
        frame
            .code
            .line(format!("let {outs} = {fn_name}({})?;", all.join(", ")));
        Ok(())
    }

    /// The values a sub-function reads (itself or nested deeper) that are defined
    /// outside it, other than constants (statics, visible everywhere): sorted.
    fn free_values(&self, sub: &SubFunction) -> Vec<Ref> {
        let mut read = BTreeSet::new();
        let mut inside = HashSet::new();
        inside.insert(sub.input);
        collect(self.graph, &sub.nodes, &mut read, &mut inside);
        if let Some(owner) = self.graph.node(sub.super_node)
            && let Some(i) = owner.op.interfaces().get(sub.branch)
        {
            read.extend(i.outputs.iter().filter_map(Source::as_ref));
        }
        read.into_iter()
            .filter(|r| !inside.contains(&r.node))
            .filter(|r| !matches!(self.graph.node(r.node).map(|n| &n.op), Some(Op::Const(_))))
            .collect()
    }
}

/// The `while` body results swapped into the state instead of copied: computed
/// into a buffer of their own (by a kernel, call, `parallel` or `while`) directly
/// in the body, and returned once.
pub(super) fn swapped(graph: &Graph, h: &Hierarchy) -> HashSet<Ref> {
    let mut out = HashSet::new();
    for n in graph.nodes() {
        let Op::While { body, .. } = &n.op else {
            continue;
        };
        let body_id = crate::hierarchy::SubId {
            super_node: n.id,
            branch: 1,
        };
        for s in &body.outputs {
            let Source::Ref(r) = s else { continue };
            let once = body
                .outputs
                .iter()
                .filter(|o| o.as_ref() == Some(*r))
                .count()
                == 1;
            let inside = h.scope_of(r.node) == Some(Some(body_id));
            let buffered = graph.node(r.node).is_some_and(|p| {
                matches!(
                    p.op,
                    Op::Kernel(_) | Op::Call(_) | Op::Parallel { .. } | Op::While { .. }
                )
            });
            if once && inside && buffered {
                out.insert(*r);
            }
        }
    }
    out
}

/// A size's code, or the emitter's error naming the node.
fn sized<T>(graph: &str, node: NodeId, r: Result<T, String>) -> Result<T, GraphEmitError> {
    r.map_err(|m| GraphEmitError::Graph {
        graph: graph.into(),
        message: format!("{node}: {m}"),
    })
}

/// Every value the entries read and every node they define (with their
/// sub-functions' Input nodes), recursively.
fn collect(
    graph: &Graph,
    entries: &[Entry],
    read: &mut BTreeSet<Ref>,
    inside: &mut HashSet<NodeId>,
) {
    for e in entries {
        inside.insert(e.node);
        if let Some(n) = graph.node(e.node) {
            read.extend(n.uses());
        }
        for s in &e.subs {
            inside.insert(s.input);
            collect(graph, &s.nodes, read, inside);
        }
    }
}

/// `%5, %5.1` (with names where the source gave them).
fn outputs_text(node: &Node) -> String {
    (0..node.outputs.len())
        .map(|k| match node.name(k) {
            Some(n) => format!("{} {n}", node.output(k)),
            None => node.output(k).to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// `let W { a, b } = ws;`
fn destructure(ws_type: &str, fields: &[(String, String)]) -> String {
    let names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    if names.is_empty() {
        format!("let {ws_type} {{}} = ws;")
    } else {
        format!("let {ws_type} {{ {} }} = ws;", names.join(", "))
    }
}

/// The workspace struct.
fn workspace(name: &str, fields: &[(String, String)], doc: &str, public: bool) -> String {
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
