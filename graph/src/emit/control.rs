//! Control flow in generated code, over the arena as the memory plan lays it out:
//! `if` / `case` as `if` / `match` on the selector (a branch's result is written
//! into the construct's output slot by the node computing it when the plan says
//! so, `MemoryPlan::results`, else copied there), `while` as a `loop` over the
//! state's slots (one, written in place, or two alternating, whose offsets swap
//! every iteration), `parallel` as a `for` over the index (each iteration's results
//! copied into their row), and `call` as a private function over the same arena.

use std::collections::{BTreeSet, HashSet};

use uop_codegen::index::Expr;

use super::GraphEmitError;
use super::arena::{Dst, Val};
use super::body::{Emitter, Frame, mentions, outputs_text, sized, unused_locals};
use super::code::{Code, camel, elem, string};
use super::sizes::signature;
use crate::hierarchy::{Entry, SubFunction};
use crate::ir::{Graph, Node, NodeId, Op, Ref, Source, ValueType};
use crate::memory::Mode;

/// Where each output of a construct goes, and the workspace buffers (value,
/// buffer) to bind as slices after it.
pub(super) type Dsts = (Vec<Option<Dst>>, Vec<(Ref, String)>);

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

    /// The results of sub-function `k` of `node`.
    pub(super) fn results(
        &self,
        frame: &Frame,
        node: &Node,
        k: usize,
    ) -> Result<Vec<Val>, GraphEmitError> {
        let interfaces = node.op.interfaces();
        let i = interfaces
            .get(k)
            .ok_or_else(|| self.err(node.id, format!("has no sub-function {k}")))?;
        i.outputs
            .iter()
            .map(|s| self.source_val(frame, node.id, s))
            .collect()
    }

    /// Where each output of an `if` / `case` / `parallel` goes: its location in the
    /// arena (bound to a local named after it, `None` when nothing reads it), or a
    /// workspace buffer of a graph output outside the arena (then also returned, to
    /// bind after the construct).
    pub(super) fn out_dsts(
        &mut self,
        frame: &mut Frame,
        node: &Node,
    ) -> Result<Dsts, GraphEmitError> {
        let mut dsts = Vec::new();
        let mut extras = Vec::new();
        for k in 0..node.outputs.len() {
            let (r, len) = self.output_len(frame, node, k)?;
            if !self.used.contains(&r) && self.arena.group(r).is_some() {
                dsts.push(None);
                continue;
            }
            let name = frame.names.fresh(&self.base_name(r));
            match self.loc_code(frame, r, &len) {
                Some(loc) => {
                    frame.code.line(format!("let {name} = {loc};"));
                    frame.locals.insert(r, Val::At(name.clone()));
                    dsts.push(Some(Dst::At(name)));
                }
                None => {
                    let buf = self.extra(frame, node, k)?;
                    let out = frame.names.fresh(&format!("{name}_out"));
                    frame
                        .code
                        .line(format!("let {out} = rt::graph::slot({buf}, {len});"));
                    dsts.push(Some(Dst::Slice(out)));
                    extras.push((r, buf));
                }
            }
        }
        Ok((dsts, extras))
    }

    /// The results of sub-function `branch` of `node` copied into the outputs, but
    /// those a node of the sub-function wrote there itself (`MemoryPlan::results`).
    pub(super) fn deliver_results(
        &self,
        frame: &mut Frame,
        node: &Node,
        branch: usize,
        dsts: &[Option<Dst>],
    ) -> Result<(), GraphEmitError> {
        let results = self.results(frame, node, branch)?;
        let interfaces = node.op.interfaces();
        let sources = interfaces
            .get(branch)
            .map(|i| i.outputs.clone())
            .unwrap_or_default();
        for (k, (dst, value)) in dsts.iter().zip(&results).enumerate() {
            let Some(dst) = dst else { continue };
            let joined = matches!(sources.get(k), Some(Source::Ref(r)) if self.arena.joined(*r, node.output(k)));
            if !joined {
                self.copy_to(frame, node.id, dst, value);
            }
        }
        Ok(())
    }

    /// A sub-function inlined: its parameters bound to `args`, its definitions, and
    /// its results delivered into `dsts`.
    pub(super) fn inline(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        sub: &SubFunction,
        args: &[Val],
        dsts: &[Option<Dst>],
    ) -> Result<(), GraphEmitError> {
        self.bind_params(frame, sub, args)?;
        self.entries(frame, &sub.nodes)?;
        self.deliver_results(frame, node, sub.branch, dsts)
    }

    /// Marks the arguments no sub-function of `e` reads as read (`let _ = x;`), so
    /// the value a node computed for them is not an unused variable.
    pub(super) fn unread_args(&self, frame: &mut Frame, e: &Entry, args: &[Val], skip: usize) {
        for (k, a) in args.iter().enumerate() {
            let read = e
                .subs
                .iter()
                .any(|s| self.used.contains(&Ref::new(s.input, k + skip)));
            if !read {
                let (Val::Slice(a) | Val::At(a)) = a;
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
    ) -> Result<Vec<Val>, GraphEmitError> {
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
        let args = self.args(frame, node, 1)?;
        frame
            .code
            .comment(&format!("{} = if(...)", outputs_text(node)));
        self.unread_args(frame, e, &args, 0);
        let (dsts, extras) = self.out_dsts(frame, node)?;
        let cond = self.slice(frame, node.id, cond)?;
        let mut branches = Vec::new();
        for k in 0..2 {
            let nested = frame.code.nested();
            let outer = std::mem::replace(&mut frame.code, nested);
            let sub = self.sub(node, e, k);
            let done = sub.and_then(|sub| self.inline(frame, node, sub, &args, &dsts));
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
            frame.code.line("{");
            frame.code.append(&branches[0]);
            frame.code.line("}");
        } else {
            frame.code.line(format!("if {test} != 0.0 {{"));
            frame.code.append(&branches[0]);
            frame.code.line("} else {");
            frame.code.append(&branches[1]);
            frame.code.line("}");
        }
        self.bind_buffers(frame, extras);
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
        let (dsts, extras) = self.out_dsts(frame, node)?;
        let sel = self.slice(frame, node.id, sel)?;
        let branch = format!(
            "rt::graph::branch({g}, {id}, rt::graph::one_value({g}, {id}, \"selector\", {sel})?, {n}, {passes})?"
        );
        if n == 1 && !passes {
            // One branch and no pass-through: the selector is checked, then the
            // branch runs (no `match` with one arm).
            frame.code.line(format!("{branch};"));
            frame.code.open("{");
            self.inline(frame, node, self.sub(node, e, 0)?, &args, &dsts)?;
            frame.code.close("}");
            self.bind_buffers(frame, extras);
            return Ok(());
        }
        frame.code.open(format!("match {branch} {{"));
        for k in 0..n {
            let last = k + 1 == n;
            let pattern = match (last, passes) {
                (false, _) => format!("Some({k})"),
                (true, true) => "Some(_)".to_string(),
                (true, false) => "_".to_string(),
            };
            frame.code.open(format!("{pattern} => {{"));
            let sub = self.sub(node, e, k)?;
            self.inline(frame, node, sub, &args, &dsts)?;
            frame.code.close("}");
        }
        if passes {
            frame
                .code
                .comment("a negative selector passes the arguments through");
            let pattern = if n == 0 { "_" } else { "None" };
            frame.code.open(format!("{pattern} => {{"));
            for (dst, a) in dsts.iter().zip(&args) {
                if let Some(dst) = dst {
                    self.copy_to(frame, node.id, dst, a);
                }
            }
            frame.code.close("}");
        }
        frame.code.close("}");
        self.bind_buffers(frame, extras);
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
        if init.len() != node.outputs.len() {
            return Err(self.err(
                node.id,
                "the initial state and the outputs differ in number",
            ));
        }
        // Per state value: its length and its slots (the plan's groups).
        let mut states = Vec::new();
        for k in 0..node.outputs.len() {
            let (r, len) = self.output_len(frame, node, k)?;
            let (mode, g0, g1) = self
                .arena
                .carried(node.id, k)
                .ok_or_else(|| self.err(node.id, format!("{r} has no slot in the plan")))?;
            let len_local = frame.names.fresh(&format!("{}_len", self.base_name(r)));
            states.push((r, mode, g0, g1, len_local, len));
        }
        let alternate: Vec<(usize, usize)> = states
            .iter()
            .filter(|s| s.1 == Mode::Alternate)
            .map(|s| (s.2, s.3))
            .collect();
        frame.code.comment(&format!(
            "{} = while(...): the state in its slot{}",
            outputs_text(node),
            if alternate.is_empty() {
                ", written in place"
            } else {
                ", or two alternating (their offsets swapped every iteration)"
            }
        ));
        for (k, (_, _, g0, _, len_local, len)) in states.iter().enumerate() {
            frame.code.line(format!("let {len_local} = {len};"));
            let dst = self.group_loc(frame, *g0, len_local);
            self.copy_to(frame, node.id, &Dst::At(dst), &init[k]);
        }
        let odd = frame.names.fresh("odd");
        if !alternate.is_empty() {
            frame.off_mut = true;
            frame.code.line(format!("let mut {odd} = false;"));
        }
        let params: Vec<Val> = states
            .iter()
            .map(|(_, _, g0, _, len_local, _)| Val::At(self.group_loc(frame, *g0, len_local)))
            .collect();
        let cond = self.sub(node, e, 0)?;
        let body = self.sub(node, e, 1)?;
        frame.code.open("loop {");
        frame.code.open("let go = {");
        self.bind_params(frame, cond, &params)?;
        self.entries(frame, &cond.nodes)?;
        let c = self.results(frame, node, 0)?;
        let c = c
            .first()
            .ok_or_else(|| self.err(node.id, "the condition returns nothing"))?;
        let c = self.slice_of(frame, node.id, c);
        frame.code.line(format!(
            "rt::graph::one_value({g}, {id}, \"condition\", {c})? != 0.0"
        ));
        frame.code.close("};");
        frame.code.open("if !go {");
        frame.code.line("break;");
        frame.code.close("}");
        frame.code.open("{");
        self.bind_params(frame, body, &params)?;
        self.entries(frame, &body.nodes)?;
        // Each result of an alternating state not written into the results' slot
        // by the body itself is copied there (after every result is read: all
        // copies go to the results' slots, which the body does not read).
        let interfaces = node.op.interfaces();
        let outputs = &interfaces
            .get(1)
            .ok_or_else(|| self.err(node.id, "has no body"))?
            .outputs;
        for ((_, mode, _, g1, len_local, _), s) in states.iter().zip(outputs) {
            let written = matches!(s, Source::Ref(r) if self.arena.group(*r) == Some(*g1));
            if *mode == Mode::Alternate && !written {
                let value = self.source_val(frame, node.id, s)?;
                let dst = self.group_loc(frame, *g1, len_local);
                self.copy_to(frame, node.id, &Dst::At(dst), &value);
            }
        }
        frame.code.close("}");
        if !alternate.is_empty() {
            for (a, b) in &alternate {
                frame.code.line(format!("off.swap({a}, {b});"));
            }
            frame.code.line(format!("{odd} = !{odd};"));
        }
        frame.code.close("}");
        if !alternate.is_empty() {
            // After an odd number of iterations the state is in the results' slot:
            // back into the state's own (the output's).
            frame.code.open(format!("if {odd} {{"));
            for (_, mode, g0, g1, len_local, _) in &states {
                if *mode == Mode::Alternate {
                    frame.code.line(format!("off.swap({g0}, {g1});"));
                    let (a, b) = (
                        self.group_loc(frame, *g0, len_local),
                        self.group_loc(frame, *g1, len_local),
                    );
                    self.copy_to(frame, node.id, &Dst::At(a), &Val::At(b));
                }
            }
            frame.code.close("}");
        }
        for (k, (r, _, g0, _, len_local, _)) in states.iter().enumerate() {
            if !self.used.contains(r) {
                continue;
            }
            let name = frame.names.fresh(&self.base_name(*r));
            let loc = self.group_loc(frame, *g0, len_local);
            if self.arena.group(*r).is_some() {
                frame.code.line(format!("let {name} = {loc};"));
                frame.locals.insert(*r, Val::At(name));
            } else {
                // A graph output: the plan keeps the state's slot only to the end of
                // the loop, so the state is copied out now.
                let buf = self.extra(frame, node, k)?;
                let value = self.slice_of(frame, node.id, &Val::At(loc));
                frame
                    .code
                    .line(format!("rt::graph::assign({buf}, {value});"));
                frame.code.line(format!("let {name} = &{buf}[..];"));
                frame.locals.insert(*r, Val::Slice(name));
            }
        }
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
        let (dsts, extras) = self.out_dsts(frame, node)?;
        frame.code.open(format!("for i in 0..{n} {{"));
        let body = self.sub(node, e, 0)?;
        if self.used.contains(&Ref::new(body.input, 0)) {
            frame.code.line(format!(
                "let index = rt::graph::index_value({g}, {id}, i)?;"
            ));
        }
        let mut all = vec![Val::Slice("&index[..]".to_string())];
        all.extend(args);
        self.bind_params(frame, body, &all)?;
        self.entries(frame, &body.nodes)?;
        let results = self.results(frame, node, 0)?;
        for (dst, r) in dsts.iter().zip(&results) {
            let line = match (dst, r) {
                (None, _) => continue,
                (Some(Dst::At(d)), Val::Slice(s)) => {
                    format!("rt::graph::copy_row_in({g}, {id}, arena, {d}, i, {s})?;")
                }
                (Some(Dst::At(d)), Val::At(s)) => {
                    format!("rt::graph::copy_row_within({g}, {id}, arena, {d}, i, {s})?;")
                }
                (Some(Dst::Slice(d)), v) => {
                    let s = self.slice_of(frame, node.id, v);
                    format!("rt::graph::copy_row({g}, {id}, {d}, i, {s})?;")
                }
            };
            if matches!(dst, Some(Dst::At(_))) {
                frame.arena_used = true;
            }
            frame.code.line(line);
        }
        frame.code.close("}");
        self.bind_buffers(frame, extras);
        Ok(())
    }

    /// `call(F, ...)`: a function of its own, over the caller's arena and groups'
    /// offsets; its arguments, the values of enclosing scopes its body reads and the
    /// destinations of its results (a location, or a graph output's buffer) are its
    /// parameters.
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
        frame
            .code
            .comment(&format!("{} = call({fname}, ...)", outputs_text(node)));
        let t = elem(self.graph.dtype);
        let kind = |v: &Val| match v {
            Val::Slice(_) => format!("&[{t}]"),
            Val::At(_) => "rt::graph::Loc".to_string(),
        };
        let mut inner = Frame::new();
        inner.off_ref = true;
        let mut params = vec![String::new(), String::new(), String::new()];
        let input = self.node(sub.input)?.clone();
        for (k, a) in args.iter().enumerate().take(input.outputs.len()) {
            let r = Ref::new(sub.input, k);
            let name = inner.names.fresh(&self.base_name(r));
            let unused = if self.used.contains(&r) { "" } else { "_" };
            params.push(format!("{unused}{name}: {}", kind(a)));
            inner.locals.insert(r, same_kind(a, name));
        }
        let mut call_args: Vec<String> = args
            .iter()
            .map(|(Val::Slice(a) | Val::At(a))| a.clone())
            .collect();
        for r in &free {
            let v = self.local(frame, node.id, *r)?;
            let name = inner.names.fresh(&self.base_name(*r));
            params.push(format!("{name}: {}", kind(&v)));
            inner.locals.insert(*r, same_kind(&v, name));
            let (Val::Slice(a) | Val::At(a)) = v;
            call_args.push(a);
        }
        // The results' destinations, prepared by the caller.
        let (dsts, extras) = self.out_dsts(frame, node)?;
        let mut inner_dsts = Vec::new();
        for (k, dst) in dsts.iter().enumerate() {
            let Some(dst) = dst else {
                inner_dsts.push(None);
                continue;
            };
            let name = inner
                .names
                .fresh(&format!("{}_out", self.base_name(node.output(k))));
            let (ty, d, a) = match dst {
                Dst::At(a) => ("rt::graph::Loc".to_string(), Dst::At(name.clone()), a),
                Dst::Slice(a) => (format!("&mut [{t}]"), Dst::Slice(name.clone()), a),
            };
            params.push(format!("{name}: {ty}"));
            call_args.push(a.clone());
            inner_dsts.push(Some(d));
        }
        self.entries(&mut inner, &sub.nodes)?;
        self.deliver_results(&mut inner, node, 0, &inner_dsts)?;
        // A parameter the body does not read (a destination every result is
        // written into by its own node, an argument only an unread output returns).
        let inner_code = unused_locals(&inner.code.finish());
        for p in params.iter_mut().skip(3) {
            let name = p.split(':').next().unwrap_or_default().to_string();
            if !name.starts_with('_') && !mentions(&inner_code, &name) {
                *p = format!("_{p}");
            }
        }
        if !inner.fields.is_empty() {
            return Err(self.err(
                node.id,
                "a value of the call's body is neither in the arena nor a graph output",
            ));
        }
        let reads_sz = ["sz.", " sz,", " sz)"]
            .iter()
            .any(|p| inner_code.contains(p));
        let n = self.arena.groups();
        params[0] = format!(
            "{}arena: &mut [{t}]",
            if inner.arena_used { "" } else { "_" }
        );
        params[1] = match (inner.off_used, inner.off_mut) {
            (false, _) => format!("_off: &[usize; {n}]"),
            (true, false) => format!("off: &[usize; {n}]"),
            (true, true) => format!("off: &mut [usize; {n}]"),
        };
        params[2] = format!(
            "{}: &{}Sizes",
            if reads_sz { "sz" } else { "_sz" },
            camel(&self.name)
        );
        if inner.scratch_used {
            // Its kernels' temporaries, lent by the workspace's scratch.
            params.insert(3, "scratch: &rt::Scratch".into());
        }
        let mut c = Code::default();
        c.doc(&format!(
            "`call({fname}, ...)` ({}) of graph `{}`: a function of its own.",
            node.id, self.name
        ));
        if params.len() > 7 {
            c.line("#[allow(clippy::too_many_arguments)]");
        }
        c.open(signature(
            &format!("fn {fn_name}"),
            &params,
            "Result<(), KernelError>",
        ));
        for l in inner_code.lines() {
            c.line(l);
        }
        c.line("Ok(())");
        c.close("}");
        self.items.push(c.finish());
        frame.arena_used = true;
        frame.off_used = true;
        frame.off_mut |= inner.off_mut;
        let off = match (frame.off_ref, inner.off_mut) {
            (true, _) => "off",
            (false, false) => "&off",
            (false, true) => "&mut off",
        };
        let mut all = vec!["arena".to_string(), off.to_string(), "sz".to_string()];
        if inner.scratch_used {
            all.push("scratch".into());
        }
        frame.scratch_used |= inner.scratch_used;
        all.extend(call_args);
        frame.code.line(format!("{fn_name}({})?;", all.join(", ")));
        self.bind_buffers(frame, extras);
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

/// A value of the kind of `v` (a slice or a location) named `name`.
fn same_kind(v: &Val, name: String) -> Val {
    match v {
        Val::Slice(_) => Val::Slice(name),
        Val::At(_) => Val::At(name),
    }
}
