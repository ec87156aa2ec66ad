//! Control flow in generated code: `if` / `case` as `if` / `match` on the selector
//! (the taken branch's results are its result slices, no copy), `while` as a `loop`
//! over state buffers (a body result computed into a buffer of its own is swapped
//! into the state, any other is copied), `parallel` as a `for` over the index, and
//! `call` as a private function with a workspace of its own.

use std::collections::{BTreeSet, HashSet};

use uop_codegen::index::Expr;

use super::GraphEmitError;
use super::body::{Emitter, Frame, destructure, outputs_text, sized, workspace};
use super::code::{Code, camel, elem, string};
use super::sizes::{buffer_type, signature};
use crate::hierarchy::{Entry, Hierarchy, SubFunction};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source, ValueType};

impl Emitter<'_> {
    pub(super) fn sub<'e>(
        &self,
        node: &Node,
        e: &'e Entry,
        k: usize,
    ) -> Result<&'e SubFunction, GraphEmitError> {
        e.subs
            .get(k)
            .ok_or_else(|| self.err(node.id, format!("has no sub-function {k}")))
    }

    pub(super) fn results(
        &self,
        frame: &Frame,
        node: &Node,
        k: usize,
    ) -> Result<Vec<String>, GraphEmitError> {
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
    pub(super) fn inline(
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
    pub(super) fn unread_args(&self, frame: &mut Frame, e: &Entry, args: &[String], skip: usize) {
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

    pub(super) fn args(
        &self,
        frame: &Frame,
        node: &Node,
        from: usize,
    ) -> Result<Vec<String>, GraphEmitError> {
        node.inputs[from.min(node.inputs.len())..]
            .iter()
            .map(|r| self.local(frame, node.id, *r))
            .collect()
    }

    pub(super) fn if_else(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
    ) -> Result<(), GraphEmitError> {
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

    pub(super) fn case(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
    ) -> Result<(), GraphEmitError> {
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

    pub(super) fn while_loop(
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

    pub(super) fn parallel(
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
    pub(super) fn call(
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
