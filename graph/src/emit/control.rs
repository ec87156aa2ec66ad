//! Control flow in generated code, over the arena as the memory plan lays it out:
//! `if` / `case` as `if` / `match` on the selector (a branch's result is written
//! into the construct's output slot by the node computing it when the plan says
//! so, `MemoryPlan::results`, else copied there), `while` as a `loop` over the
//! state's slots (one, written in place, or two alternating, whose offsets swap
//! every iteration), `parallel` as a `for` over the index (each iteration's results
//! copied into their row), and `call` as a private function over the same arena
//! (`call`). Each is one plan step of the emitter (`Emitter::entry`).

use uop_codegen::index::Expr;

use super::GraphEmitError;
use super::arena::{Dst, Val};
use super::body::{Emitter, Frame, outputs_text, sized};
use super::code::{Ex, ex, string};
use crate::hierarchy::{Entry, SubFunction};
use crate::ir::{Node, Ref, Source, ValueType};
use crate::memory::Mode;

/// Where each output of a construct goes, and the workspace buffers (value,
/// buffer) to bind as slices after it.
pub(super) type Dsts = (Vec<Option<Dst>>, Vec<(Ref, String)>);

/// One state value of a `while`: its value, how it is carried, its two groups
/// (the same for one slot), the local of its length and that length's code.
struct State {
    r: Ref,
    mode: Mode,
    g0: usize,
    g1: usize,
    len_local: String,
    len: Ex,
}

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
                    frame.code.bind(&name, loc);
                    frame.locals.insert(r, Val::At(Ex::read(&name)));
                    dsts.push(Some(Dst::At(Ex::read(&name))));
                }
                None => {
                    let buf = self.extra(frame, node, k)?;
                    let out = frame.bind(
                        &format!("{name}_out"),
                        ex![format!("rt::graph::slot({buf}, "), len, ")"],
                    );
                    dsts.push(Some(Dst::Slice(Ex::read(&out))));
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
                let dtype = self.dtype_of(node.output(k));
                self.copy_to(frame, node.id, dst, value, dtype);
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
                frame
                    .code
                    .line(ex!["let _ = ", a.ex(), "; // read by no branch"]);
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
            branches.push(std::mem::replace(&mut frame.code, outer));
            done?;
        }
        let test = ex![
            format!(
                "rt::graph::one_value({}, {}, \"condition\", ",
                string(&self.name),
                string(&node.id.to_string())
            ),
            cond,
            ")?"
        ];
        let else_branch = branches.pop().unwrap_or_default();
        let then_branch = branches.pop().unwrap_or_default();
        if then_branch == else_branch {
            // Both branches plan the same: the condition is checked, one runs
            // (no `if` with identical blocks).
            frame.code.line(ex![test, ";"]);
            frame.code.line("{");
            frame.code.append(then_branch);
            frame.code.line("}");
        } else {
            frame.code.line(ex!["if ", test, " != 0.0 {"]);
            frame.code.append(then_branch);
            frame.code.line("} else {");
            frame.code.append(else_branch);
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
        let branch = ex![
            format!("rt::graph::branch({g}, {id}, rt::graph::one_value({g}, {id}, \"selector\", "),
            sel,
            format!(")?, {n}, {passes})?")
        ];
        if n == 1 && !passes {
            // One branch and no pass-through: the selector is checked, then the
            // branch runs (no `match` with one arm).
            frame.code.line(ex![branch, ";"]);
            frame.code.open("{");
            self.inline(frame, node, self.sub(node, e, 0)?, &args, &dsts)?;
            frame.code.close("}");
            self.bind_buffers(frame, extras);
            return Ok(());
        }
        frame.code.open(ex!["match ", branch, " {"]);
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
            for (k, (dst, a)) in dsts.iter().zip(&args).enumerate() {
                if let Some(dst) = dst {
                    let dtype = self.dtype_of(node.output(k));
                    self.copy_to(frame, node.id, dst, a, dtype);
                }
            }
            frame.code.close("}");
        }
        frame.code.close("}");
        self.bind_buffers(frame, extras);
        Ok(())
    }

    /// `while(cond, body, init...)`: the state in its slots, then a `loop` that
    /// runs the condition and the body over them, then the results bound.
    pub(super) fn while_loop(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
    ) -> Result<(), GraphEmitError> {
        let init = self.args(frame, node, 0)?;
        if init.len() != node.outputs.len() {
            return Err(self.err(
                node.id,
                "the initial state and the outputs differ in number",
            ));
        }
        let states = self.while_states(frame, node)?;
        let alternate: Vec<(usize, usize)> = states
            .iter()
            .filter(|s| s.mode == Mode::Alternate)
            .map(|s| (s.g0, s.g1))
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
        for (s, init) in states.iter().zip(&init) {
            frame.code.bind(&s.len_local, &s.len);
            let dst = self.group_loc(frame, s.g0, &Ex::read(&s.len_local));
            self.copy_to(frame, node.id, &Dst::At(dst), init, self.dtype_of(s.r));
        }
        let odd = frame.names.fresh("odd");
        if !alternate.is_empty() {
            frame.off_mut = true;
            frame
                .code
                .line(ex!["let mut ", Ex::bind(&odd), " = false;"]);
        }
        frame.code.open("loop {");
        self.while_condition(frame, node, e, &states)?;
        self.while_body(frame, node, e, &states)?;
        if !alternate.is_empty() {
            for (a, b) in &alternate {
                frame.code.line(format!("off.swap({a}, {b});"));
            }
            frame
                .code
                .line(ex![Ex::read(&odd), " = !", Ex::read(&odd), ";"]);
        }
        frame.code.close("}");
        if !alternate.is_empty() {
            // After an odd number of iterations the state is in the results' slot:
            // back into the state's own (the output's).
            frame.code.open(ex!["if ", Ex::read(&odd), " {"]);
            for s in states.iter().filter(|s| s.mode == Mode::Alternate) {
                frame.code.line(format!("off.swap({}, {});", s.g0, s.g1));
                let len = Ex::read(&s.len_local);
                let (a, b) = (
                    self.group_loc(frame, s.g0, &len),
                    self.group_loc(frame, s.g1, &len),
                );
                self.copy_to(frame, node.id, &Dst::At(a), &Val::At(b), self.dtype_of(s.r));
            }
            frame.code.close("}");
        }
        self.while_results(frame, node, &states)
    }

    /// Per state value of `while` `node`: its length and its slots (the plan's
    /// groups).
    fn while_states(
        &mut self,
        frame: &mut Frame,
        node: &Node,
    ) -> Result<Vec<State>, GraphEmitError> {
        let mut states = Vec::new();
        for k in 0..node.outputs.len() {
            let (r, len) = self.output_len(frame, node, k)?;
            let (mode, g0, g1) = self
                .arena
                .carried(node.id, k)
                .ok_or_else(|| self.err(node.id, format!("{r} has no slot in the plan")))?;
            let len_local = frame.names.fresh(&format!("{}_len", self.base_name(r)));
            states.push(State {
                r,
                mode,
                g0,
                g1,
                len_local,
                len,
            });
        }
        Ok(states)
    }

    /// The state's parameters: the locations of its slots.
    fn while_params(&self, frame: &mut Frame, states: &[State]) -> Vec<Val> {
        states
            .iter()
            .map(|s| Val::At(self.group_loc(frame, s.g0, &Ex::read(&s.len_local))))
            .collect()
    }

    /// `let go = { cond }; if !go { break; }`.
    fn while_condition(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
        states: &[State],
    ) -> Result<(), GraphEmitError> {
        let (g, id) = (string(&self.name), string(&node.id.to_string()));
        let params = self.while_params(frame, states);
        let cond = self.sub(node, e, 0)?;
        frame.code.open("let go = {");
        self.bind_params(frame, cond, &params)?;
        self.entries(frame, &cond.nodes)?;
        let c = self.results(frame, node, 0)?;
        let c = c
            .first()
            .ok_or_else(|| self.err(node.id, "the condition returns nothing"))?;
        let interfaces = node.op.interfaces();
        let dtype = interfaces
            .first()
            .and_then(|i| i.outputs.first())
            .map_or(self.graph.dtype, |s| self.source_dtype(s));
        let c = self.slice_of(frame, node.id, c, dtype);
        frame.code.line(ex![
            format!("rt::graph::one_value({g}, {id}, \"condition\", "),
            c,
            ")? != 0.0"
        ]);
        frame.code.close("};");
        frame.code.open("if !go {");
        frame.code.line("break;");
        frame.code.close("}");
        Ok(())
    }

    /// The body over the state's slots; each result of an alternating state not
    /// written into the results' slot by the body itself is copied there (after
    /// every result is read: all copies go to the results' slots, which the body
    /// does not read).
    fn while_body(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        e: &Entry,
        states: &[State],
    ) -> Result<(), GraphEmitError> {
        let params = self.while_params(frame, states);
        let body = self.sub(node, e, 1)?;
        frame.code.open("{");
        self.bind_params(frame, body, &params)?;
        self.entries(frame, &body.nodes)?;
        let interfaces = node.op.interfaces();
        let outputs = &interfaces
            .get(1)
            .ok_or_else(|| self.err(node.id, "has no body"))?
            .outputs;
        for (s, out) in states.iter().zip(outputs) {
            let written = matches!(out, Source::Ref(r) if self.arena.group(*r) == Some(s.g1));
            if s.mode == Mode::Alternate && !written {
                let value = self.source_val(frame, node.id, out)?;
                let dst = self.group_loc(frame, s.g1, &Ex::read(&s.len_local));
                self.copy_to(frame, node.id, &Dst::At(dst), &value, self.dtype_of(s.r));
            }
        }
        frame.code.close("}");
        Ok(())
    }

    /// Each read result of the loop bound to its slot; a graph output copied out
    /// (the plan keeps the state's slot only to the end of the loop).
    fn while_results(
        &mut self,
        frame: &mut Frame,
        node: &Node,
        states: &[State],
    ) -> Result<(), GraphEmitError> {
        for (k, s) in states.iter().enumerate() {
            if !self.used.contains(&s.r) {
                continue;
            }
            let name = frame.names.fresh(&self.base_name(s.r));
            let loc = self.group_loc(frame, s.g0, &Ex::read(&s.len_local));
            if self.arena.group(s.r).is_some() {
                frame.code.bind(&name, loc);
                frame.locals.insert(s.r, Val::At(Ex::read(&name)));
            } else {
                let buf = self.extra(frame, node, k)?;
                let value = self.slice_of(frame, node.id, &Val::At(loc), self.dtype_of(s.r));
                frame
                    .code
                    .line(ex![format!("rt::graph::assign({buf}, "), value, ");"]);
                frame.code.bind(&name, format!("&{buf}[..]"));
                frame.locals.insert(s.r, Val::Slice(Ex::read(&name)));
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
        frame.code.open(ex!["for i in 0..", n, " {"]);
        let body = self.sub(node, e, 0)?;
        if self.used.contains(&Ref::new(body.input, 0)) {
            frame.code.line(format!(
                "let index = rt::graph::index_value({g}, {id}, i)?;"
            ));
        }
        let mut all = vec![Val::Slice(Ex::from("&index[..]"))];
        all.extend(args);
        self.bind_params(frame, body, &all)?;
        self.entries(frame, &body.nodes)?;
        let results = self.results(frame, node, 0)?;
        for (k, (dst, r)) in dsts.iter().zip(&results).enumerate() {
            let dtype = self.dtype_of(node.output(k));
            let line = match (dst, r) {
                (None, _) => continue,
                (Some(Dst::At(d)), Val::Slice(s)) => ex![
                    format!("rt::graph::copy_row_in({g}, {id}, arena, "),
                    d,
                    ", i, ",
                    self.as_cells(dtype, s.clone()),
                    ")?;"
                ],
                (Some(Dst::At(d)), Val::At(s)) => ex![
                    format!("rt::graph::copy_row_within({g}, {id}, arena, "),
                    d,
                    ", i, ",
                    s,
                    ")?;"
                ],
                (Some(Dst::Slice(d)), v) => {
                    let s = self.slice_of(frame, node.id, v, dtype);
                    ex![
                        format!("rt::graph::copy_row({g}, {id}, "),
                        d,
                        ", i, ",
                        s,
                        ")?;"
                    ]
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
}
