//! `call(F, ...)` in generated code: a private function of its own over the
//! caller's arena and groups' offsets, planned in full (parameters, body, what it
//! uses of the arena, the sizes and the scratch) before its signature is printed;
//! its arguments, the values of enclosing scopes its body reads and the
//! destinations of its results (a location, or a graph output's buffer) are its
//! parameters, and one it does not read is `_name`.

use std::collections::{BTreeSet, HashSet};

use super::GraphEmitError;
use super::arena::{Dst, Val};
use super::body::{Emitter, Frame, Item, outputs_text, same_kind};
use super::code::{Code, Ex, camel, elem, ex};
use super::sizes::signature;
use crate::hierarchy::{Entry, SubFunction};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source};

/// A `call`'s function under way: its frame, its own parameters (after the
/// arena, the offsets and the sizes) and the caller's arguments for them.
struct CallPlan {
    inner: Frame,
    params: Vec<Ex>,
    call_args: Vec<Ex>,
}

impl Emitter<'_> {
    /// `call(F, ...)`: the function planned and added to the items, and the call.
    pub(super) fn call(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
        fname: &str,
    ) -> Result<(), GraphEmitError> {
        let sub = self.sub(node, e, 0)?.clone();
        let fn_name = self.items_taken.fresh(&format!("{}_{}", self.name, fname));
        frame
            .code
            .comment(&format!("{} = call({fname}, ...)", outputs_text(node)));
        let mut plan = self.call_params(frame, node, &sub)?;
        // The results' destinations, prepared by the caller.
        let (dsts, extras) = self.out_dsts(frame, node)?;
        let inner_dsts = self.call_destinations(&mut plan, node, &dsts);
        self.entries(&mut plan.inner, &sub.nodes)?;
        self.deliver_results(&mut plan.inner, node, 0, &inner_dsts)?;
        if !plan.inner.fields.is_empty() {
            return Err(self.err(
                node.id,
                "a value of the call's body is neither in the arena nor a graph output",
            ));
        }
        let inner = &plan.inner;
        let code = self.call_function(node, fname, &fn_name, inner, &plan.params);
        self.items.push(Item::Code(code));
        frame.arena_used = true;
        frame.off_used = true;
        frame.off_mut |= inner.off_mut;
        let off = match (frame.off_ref, inner.off_mut) {
            (true, _) => "off",
            (false, false) => "&off",
            (false, true) => "&mut off",
        };
        let mut all: Vec<Ex> = vec!["arena".into(), off.into(), "sz".into()];
        if inner.scratch_used {
            all.push("scratch".into());
        }
        frame.scratch_used |= inner.scratch_used;
        all.extend(plan.call_args);
        frame
            .code
            .line(ex![format!("{fn_name}("), Ex::join(all, ", "), ")?;"]);
        self.bind_buffers(frame, extras);
        Ok(())
    }

    /// The function's parameters for the call's arguments and for the values of
    /// enclosing scopes its body reads, each a local of its frame.
    fn call_params(
        &self,
        frame: &Frame,
        node: &Node,
        sub: &SubFunction,
    ) -> Result<CallPlan, GraphEmitError> {
        let args = self.args(frame, node, 0)?;
        let free = self.free_values(sub);
        let mut inner = Frame::new();
        inner.off_ref = true;
        let mut params = Vec::new();
        let mut call_args = Vec::new();
        let input = self.node(sub.input)?.clone();
        let refs = (0..input.outputs.len()).map(|k| Ref::new(sub.input, k));
        for ((r, a), outer) in refs.zip(&args).zip(&node.inputs) {
            let name = inner.names.fresh(&self.base_name(r));
            params.push(ex![
                Ex::bind(&name),
                ": ",
                self.kind(a, self.dtype_of(*outer))
            ]);
            inner.locals.insert(r, same_kind(a, &name));
        }
        call_args.extend(args.iter().map(|a| a.ex().clone()));
        for r in &free {
            let v = self.local(frame, node.id, *r)?;
            let name = inner.names.fresh(&self.base_name(*r));
            params.push(ex![Ex::bind(&name), ": ", self.kind(&v, self.dtype_of(*r))]);
            inner.locals.insert(*r, same_kind(&v, &name));
            call_args.push(v.ex().clone());
        }
        Ok(CallPlan {
            inner,
            params,
            call_args,
        })
    }

    /// The type of a parameter holding `v`, a value of `dtype`: a slice or a
    /// location.
    fn kind(&self, v: &Val, dtype: uop_codegen::uop::DType) -> String {
        match v {
            Val::Slice(_) => format!("&[{}]", elem(dtype)),
            Val::At(_) => "rt::graph::Loc".to_string(),
        }
    }

    /// A parameter per destination of the results (`NAME_out`), which the
    /// function's body delivers into.
    fn call_destinations(
        &self,
        plan: &mut CallPlan,
        node: &Node,
        dsts: &[Option<Dst>],
    ) -> Vec<Option<Dst>> {
        let mut inner_dsts = Vec::new();
        for (k, dst) in dsts.iter().enumerate() {
            let Some(dst) = dst else {
                inner_dsts.push(None);
                continue;
            };
            let name = plan
                .inner
                .names
                .fresh(&format!("{}_out", self.base_name(node.output(k))));
            let (ty, d, a) = match dst {
                Dst::At(a) => ("rt::graph::Loc".to_string(), Dst::At(Ex::read(&name)), a),
                Dst::Slice(a) => {
                    let t = elem(node.outputs[k].dtype);
                    (format!("&mut [{t}]"), Dst::Slice(Ex::read(&name)), a)
                }
            };
            plan.params.push(ex![Ex::bind(&name), ": ", ty]);
            plan.call_args.push(a.clone());
            inner_dsts.push(Some(d));
        }
        inner_dsts
    }

    /// The function of a planned `call`: the arena, the offsets and the sizes
    /// (each `_` when the body does not use it), the scratch when its kernels take
    /// memory, then `params`; its body.
    fn call_function(
        &self,
        node: &Node,
        fname: &str,
        fn_name: &str,
        inner: &Frame,
        params: &[Ex],
    ) -> Code {
        let t = elem(self.graph.dtype);
        let n = self.arena.groups();
        let reads = inner.code.reads();
        let mut all: Vec<Ex> = vec![
            ex![format!(
                "{}arena: &mut [{t}]",
                if inner.arena_used { "" } else { "_" }
            )],
            ex![match (inner.off_used, inner.off_mut) {
                (false, _) => format!("_off: &[usize; {n}]"),
                (true, false) => format!("off: &[usize; {n}]"),
                (true, true) => format!("off: &mut [usize; {n}]"),
            }],
            ex![format!(
                "{}: &{}Sizes",
                if reads.sz { "sz" } else { "_sz" },
                camel(&self.name)
            )],
        ];
        if inner.scratch_used {
            // Its kernels' temporaries, lent by the workspace's scratch.
            all.push("scratch: &rt::Scratch".into());
        }
        all.extend(params.iter().cloned());
        let mut c = Code::default();
        c.doc(&format!(
            "`call({fname}, ...)` ({}) of graph `{}`: a function of its own.",
            node.id, self.name
        ));
        if all.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.open(signature(
            &format!("fn {fn_name}"),
            &all,
            "Result<(), KernelError>",
            &reads,
        ));
        c.embed(inner.code.clone());
        c.line("Ok(())");
        c.close("}");
        c
    }

    /// The values a sub-function reads (itself or nested deeper) that are defined
    /// outside it, other than constants (statics, visible everywhere): sorted.
    pub(super) fn free_values(&self, sub: &SubFunction) -> Vec<Ref> {
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
