//! The plan step of a kernel (or a one-op program) in generated code: its
//! arguments (inputs and their shapes, `$params`, outputs), the call, and where its
//! outputs land — an arena location (a kernel's inputs and outputs in the arena
//! are borrowed together with `rt::graph::split`), a workspace buffer, or the
//! caller's own output buffer (`direct`).

use uop_codegen::signature::Signature;
use uop_codegen::uop::Program;

use super::GraphEmitError;
use super::arena::Val;
use super::body::{Emitter, Frame, Params, sized};
use super::code::{Ex, ex, string};
use super::sizes::buffer_type;
use crate::ir::{Node, Op, Ref, Source};

/// A kernel output written straight into the caller's buffer.
struct DirectOut {
    /// The code of that buffer (`y_out`, or a local holding a chunk's rows of it).
    out: Ex,
    /// The value and its buffer, when something reads it besides its output.
    bind: Option<(Ref, Ex)>,
}

/// A kernel call's arguments and outputs, as planned.
#[derive(Default)]
struct KernelArgs {
    /// The arguments in order: inputs and shapes, `$params`, outputs.
    args: Vec<Ex>,
    /// The arena locations it reads (each once).
    ins: Vec<Ex>,
    /// The arena locations it writes.
    outs: Vec<Ex>,
    /// Outputs in workspace buffers: value, buffer.
    extras: Vec<(Ref, String)>,
    /// Outputs written into the caller's buffers that something reads.
    direct: Vec<(Ref, Ex)>,
}

impl Emitter<'_> {
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
        let mut a = KernelArgs::default();
        self.kernel_inputs(frame, node, &mut a)?;
        self.kernel_params(frame, node, &sig, params, &mut a)?;
        self.kernel_outputs(frame, node, &mut a)?;
        self.kernel_call(frame, node, &kernel, scratch, &a);
        self.bind_buffers(frame, a.extras);
        for (r, out) in a.direct {
            let name = frame.bind(&self.base_name(r), ex!["&*", out]);
            frame.locals.insert(r, Val::Slice(Ex::read(&name)));
        }
        Ok(())
    }

    /// Each input and its shape; arena inputs are borrowed together
    /// (`rt::graph::split`), each location once; the rest are slices.
    fn kernel_inputs(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        a: &mut KernelArgs,
    ) -> Result<(), GraphEmitError> {
        for r in &node.inputs {
            let ty = self.ty(*r)?;
            match self.local(frame, node.id, *r)? {
                Val::Slice(e) => a.args.push(e),
                Val::At(l) => {
                    if !a.ins.contains(&l) {
                        a.ins.push(l.clone());
                    }
                    a.args.push(self.cells_as(ty.dtype, l));
                }
            }
            let shape = match frame.rows.get(r) {
                Some(rows) => self.sizes.looped_shape(&ty.shape, rows),
                None => self.sizes.shape(&ty.shape),
            };
            a.args.push(sized(&self.name, node.id, shape)?);
        }
        Ok(())
    }

    /// Each `$param` of the kernel: a `parallel` index (read before the arena is
    /// lent to the kernel), a graph `$param`, or a graph dim.
    fn kernel_params(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        sig: &Signature,
        params: Params<'_>,
        a: &mut KernelArgs,
    ) -> Result<(), GraphEmitError> {
        for p in &sig.params {
            if let Some((_, k)) = params.bind.iter().find(|(n, _)| n == p) {
                let r = node.inputs.get(*k).copied().ok_or_else(|| {
                    self.err(node.id, format!("${p} is bound to a missing input"))
                })?;
                let index = self.slice(frame, node.id, r)?;
                let value = ex![
                    format!(
                        "rt::graph::index_param({}, {}, ",
                        string(&self.name),
                        string(&node.id.to_string()),
                    ),
                    index,
                    ")?"
                ];
                let local = frame.bind(&format!("param_{p}"), value);
                a.args.push(Ex::read(&local));
            } else if let Some(f) = self.sizes.param(p) {
                a.args.push(Ex::sz_field(f));
            } else if let Some((_, dim)) = params.dims.iter().find(|(n, _)| n == p) {
                a.args
                    .push(sized(&self.name, node.id, self.sizes.dim_param(dim))?);
            } else {
                return Err(self.err(node.id, format!("its program reads ${p}, which is unknown")));
            }
        }
        Ok(())
    }

    /// Where each output goes: the caller's buffer, an arena location or a
    /// workspace buffer.
    fn kernel_outputs(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        a: &mut KernelArgs,
    ) -> Result<(), GraphEmitError> {
        for k in 0..node.outputs.len() {
            if let Some(DirectOut { out, bind }) = self.direct_output(frame, node, k)? {
                a.args.push(ex!["&mut *", out]);
                a.direct.extend(bind);
                continue;
            }
            let (r, len) = self.output_len(frame, node, k)?;
            match self.loc_code(frame, r, &len) {
                Some(loc) => {
                    let name = frame.bind(&self.base_name(r), loc);
                    frame.locals.insert(r, Val::At(Ex::read(&name)));
                    a.outs.push(Ex::read(&name));
                    let dtype = node.outputs[k].dtype;
                    a.args.push(self.cells_as_mut(dtype, Ex::read(&name)));
                }
                None => {
                    let buf = self.extra(frame, node, k)?;
                    a.args
                        .push(ex![format!("rt::graph::slot({buf}, "), len, ")"]);
                    a.extras.push((r, buf));
                }
            }
        }
        Ok(())
    }

    /// The call itself (with the workspace's scratch when its loops take memory,
    /// clocked when asked), inside a block borrowing its arena values.
    fn kernel_call(
        &self,
        frame: &mut Frame,
        node: &Node,
        kernel: &str,
        scratch: bool,
        a: &KernelArgs,
    ) {
        let args = Ex::join(&a.args, ", ");
        let call = if scratch {
            // Its loops' memory is lent by the workspace's scratch.
            frame.scratch_used = true;
            ex![format!("{kernel}_with_scratch(scratch, "), args, ")"]
        } else {
            ex![format!("{kernel}("), args, ")"]
        };
        let call = if self.clocked {
            ex!["rt::graph::clocked(|| ", call, ")?;"]
        } else {
            ex![call, "?;"]
        };
        if a.ins.is_empty() && a.outs.is_empty() {
            frame.code.line(call);
        } else {
            frame.arena_used = true;
            let (ins, outs) = (Ex::join(&a.ins, ", "), Ex::join(&a.outs, ", "));
            frame.code.open("{");
            frame.code.line(ex![
                "let ([",
                &ins,
                "], [",
                &outs,
                format!(
                    "]) = rt::graph::split({}, {}, arena, [",
                    string(&self.name),
                    string(&node.id.to_string())
                ),
                &ins,
                "], [",
                &outs,
                "])?;"
            ]);
            frame.code.line(call);
            frame.code.close("}");
        }
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
            None => Ex::from(arg),
            Some(_) if self.rowless.contains(&r) => return Ok(None),
            Some(level) => {
                let ty = &node.outputs[k];
                let rest = ty.shape.get(1..).ok_or_else(|| {
                    self.err(node.id, format!("{r} in a chunk loop has no axis 0"))
                })?;
                let row = sized(&self.name, node.id, self.sizes.len(rest, &format!("{r}")))?;
                let level_rows = level.rows();
                let at = self.output_row(frame);
                let rows = frame.bind(
                    &format!("{}_rows", self.base_name(r)),
                    ex![
                        format!(
                            "rt::graph::rows_mut({}, {}, {arg}, ",
                            string(&self.name),
                            string(&name),
                        ),
                        Ex::read(&at),
                        ", ",
                        &level_rows,
                        ", ",
                        row,
                        ")?"
                    ],
                );
                frame.rows.insert(r, level_rows);
                Ex::read(&rows)
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
    ) -> Result<(Ref, Ex), GraphEmitError> {
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
                frame.rows.insert(r, level.rows());
                ex![
                    format!(
                        "rt::graph::rows_len({}, {}, ",
                        string(&self.name),
                        string(&r.to_string()),
                    ),
                    level.rows(),
                    ", ",
                    row,
                    ")?"
                ]
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
                let name = frame.bind(&self.base_name(r), format!("&{buf}[..]"));
                frame.locals.insert(r, Val::Slice(Ex::read(&name)));
            }
        }
    }
}
