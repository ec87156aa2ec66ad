//! The right side of a statement: op calls, inline calls of functions, the super
//! nodes (`while`, `case`, `if`, `parallel`, `call`), `chunk` and `const`, and
//! function bodies built as sub-functions or in place.

use std::rc::Rc;

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::text::syntax::{Arg as ArgSyntax, Call as CallSyntax, ValueSyntax};
use uop_codegen::text::{ErrorKind, TextError, is_op, micro_ops, suggest};
use uop_codegen::uop::DType;

use crate::builder::{Arg, BuildError, GraphBuilder, Item};
use crate::infer::{ArgSpan, CallSite, call_program_at};
use crate::ir::{Interface, Op, Ref, Source, ValueType};

use super::build::{B, Binding, Entry, Result};
use super::syntax::{FnDef, Stmt};

mod scan;

/// The words that start a super node, `chunk` or `const` on the right of `=`.
pub(super) const SPECIAL: &[&str] = &[
    "while",
    "case",
    "if",
    "parallel",
    "scan",
    "call",
    "chunk",
    "sum_chunks",
    "const",
];

impl B<'_> {
    /// The values the right side of `=` gives.
    pub(super) fn right_side(
        &mut self,
        g: &mut GraphBuilder,
        value: &ArgSyntax,
    ) -> Result<Vec<Ref>> {
        match &value.value {
            ValueSyntax::Int(i) => Ok(vec![g.scalar(*i as f64)]),
            ValueSyntax::Float(f) => Ok(vec![g.scalar(*f)]),
            ValueSyntax::Call(c) => self.call(g, c, true),
            ValueSyntax::Name(n) => Ok(vec![self.value(n, value.at)?]),
            _ => Err(self.error(
                ErrorKind::Syntax,
                value.at,
                "expected an op call, a function call, a name or a number",
            )),
        }
    }

    /// A call; `whole` when it is the whole right side of a statement (where super
    /// nodes may be).
    pub(super) fn call(
        &mut self,
        g: &mut GraphBuilder,
        c: &CallSyntax,
        whole: bool,
    ) -> Result<Vec<Ref>> {
        let name = c.op.text.as_str();
        if SPECIAL.contains(&name) {
            if !whole {
                return Err(self.error(
                    ErrorKind::Syntax,
                    c.op.at,
                    format!("`{name}(...)` must be the whole right side of a statement: `a = {name}(...)`"),
                ));
            }
            return self.special(g, c);
        }
        if let Some(Entry {
            binding: Binding::Fn(def, seen),
            ..
        }) = self.lookup(name).cloned()
        {
            return self.inline(g, c, &def, seen);
        }
        if !is_op(&self.registry, name) {
            return Err(self.unknown_callee(name, c.op.at));
        }
        self.op_call(g, c).map(|r| vec![r])
    }

    /// The error for a call of something that is neither a visible function nor an op.
    fn unknown_callee(&self, name: &str, at: usize) -> TextError {
        if let Some(Entry {
            binding: Binding::Value(_),
            ..
        }) = self.lookup(name)
        {
            return self.error(
                ErrorKind::UnknownOp,
                at,
                format!("`{name}` is a value, not an op or a function"),
            );
        }
        if self.active.iter().any(|a| a == name) {
            return self.error(
                ErrorKind::UnknownOp,
                at,
                format!("function `{name}` calls itself (a function cannot call itself; loop with `while`)"),
            );
        }
        // A word of the graph language where a result is wanted: no "did you mean".
        if name == "sink" {
            return self.error(
                ErrorKind::UnknownOp,
                at,
                "`sink(...)` gives no result: write it as a statement of its own, `sink(a, b)`",
            );
        }
        if super::build::GRAPH_KEYWORDS.contains(&name) {
            return self.error(
                ErrorKind::UnknownOp,
                at,
                format!("`{name}` is a reserved word of graph text, not an op or a function"),
            );
        }
        let micro: Vec<String> = micro_ops().into_iter().map(|m| m.name).collect();
        let fns: Vec<&str> = self
            .scope
            .visible_entries()
            .filter(|e| matches!(e.binding, Binding::Fn(..)))
            .map(|e| e.name.as_str())
            .collect();
        let candidates = micro
            .iter()
            .map(String::as_str)
            .chain(self.registry.iter().map(|m| m.name.as_str()))
            .chain(fns);
        let message = match suggest(name, candidates) {
            Some(s) => format!("unknown op or function `{name}` (did you mean `{s}`?)"),
            None => format!("unknown op or function `{name}`"),
        };
        self.error(ErrorKind::UnknownOp, at, message)
    }

    /// A call whose single result is wanted.
    fn single(&mut self, g: &mut GraphBuilder, c: &CallSyntax) -> Result<Ref> {
        let r = self.call(g, c, false)?;
        match r.as_slice() {
            [one] => Ok(*one),
            _ => Err(self.error(
                ErrorKind::Arguments,
                c.op.at,
                format!(
                    "`{}` gives {} results where one value is needed",
                    c.op.text,
                    r.len()
                ),
            )),
        }
    }

    /// A call of a micro or macro op.
    fn op_call(&mut self, g: &mut GraphBuilder, c: &CallSyntax) -> Result<Ref> {
        let op = c.op.text.as_str();
        let mut args = Vec::new();
        let mut attrs: Vec<(String, Arg)> = Vec::new();
        let mut arg_spans = Vec::new();
        let mut attr_spans = Vec::new();
        // How the user wrote each tensor argument, for messages.
        let mut written: Vec<(Ref, String)> = Vec::new();
        for a in &c.args {
            match &a.attr {
                None if !attrs.is_empty() => {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        a.at,
                        format!("{op}: positional arguments come before attributes"),
                    ));
                }
                Some(n) if attrs.iter().any(|(m, _)| *m == n.text) => {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        n.at,
                        format!("{op}: attribute `{}` is given twice", n.text),
                    ));
                }
                _ => {}
            }
            let (value, mut span) = self.arg(g, &a.value, a.at)?;
            written.extend(as_written(&a.value, &value));
            match &a.attr {
                None => {
                    args.push(value);
                    arg_spans.push(span);
                }
                Some(n) => {
                    span.name_at = Some(n.at);
                    attrs.push((n.text.clone(), value));
                    attr_spans.push(span);
                }
            }
        }
        let attrs: Vec<(&str, Arg)> = attrs.iter().map(|(n, a)| (n.as_str(), a.clone())).collect();
        self.check_select_index(g, c, &args)?;
        match g.call(op, &args, &attrs) {
            Ok(r) => Ok(r),
            Err(e) => {
                arg_spans.extend(attr_spans);
                let mut located = self.locate_call(g, c, &args, &attrs, &arg_spans, e);
                let (_, inputs) = g.call_node(op, &args, &attrs);
                located.diagnostic.expected =
                    users_words(&located.diagnostic.expected, op, &inputs, &written);
                Err(located)
            }
        }
    }

    /// `select`'s index, as the user writes it, is an i32 tensor: a float one would
    /// be floored silently. (The micro op itself takes a float index, which the
    /// gradient rules use; see docs/decisions.md.)
    fn check_select_index(&self, g: &GraphBuilder, c: &CallSyntax, args: &[Arg]) -> Result<()> {
        if c.op.text != "select" || is_op_in_registry(&self.registry, "select") {
            return Ok(());
        }
        let Some(Arg::Tensor(index)) = args.get(1) else {
            return Ok(());
        };
        let Ok(ty) = g.type_of(*index) else {
            return Ok(());
        };
        if !ty.dtype.is_float() {
            return Ok(());
        }
        let at = c.args.get(1).map_or(c.op.at, |a| a.at);
        Err(self.error(
            ErrorKind::DType,
            at,
            format!(
                "select: the index must be i32 (an i32 input or `const(i32, ...)`), found {}: \
                 a float index would be floored silently",
                ty.dtype.name()
            ),
        ))
    }

    /// Where in the call a builder error is: the op's own check, run again on the
    /// call with the arguments' offsets.
    fn locate_call(
        &self,
        g: &GraphBuilder,
        c: &CallSyntax,
        args: &[Arg],
        attrs: &[(&str, Arg)],
        spans: &[ArgSpan],
        e: BuildError,
    ) -> TextError {
        let (call, inputs) = g.call_node(&c.op.text, args, attrs);
        let types: Option<Vec<ValueType>> =
            inputs.iter().map(|r| g.type_of(*r).ok().cloned()).collect();
        let graph = g.graph();
        let site = CallSite {
            src: self.src,
            op_at: c.op.at,
            args: spans,
        };
        let located = types.and_then(|types| {
            call_program_at(
                graph.dtype,
                &graph.params,
                &graph.registry,
                &call,
                &types,
                &crate::infer::graph_dims(graph),
                site,
            )
            .err()
        });
        located.unwrap_or_else(|| {
            let message = e.message.strip_prefix("call: ").unwrap_or(&e.message);
            self.error(ErrorKind::Build, c.op.at, message)
        })
    }

    /// One argument of an op call, and where it was written.
    fn arg(&mut self, g: &mut GraphBuilder, v: &ValueSyntax, at: usize) -> Result<(Arg, ArgSpan)> {
        let mut span = ArgSpan {
            at,
            name_at: None,
            items: Vec::new(),
        };
        let arg = match v {
            ValueSyntax::Call(c) => Arg::Tensor(self.single(g, c)?),
            ValueSyntax::Name(n) => Arg::Tensor(self.value(n, at)?),
            ValueSyntax::Int(i) => Arg::Int(*i),
            ValueSyntax::Float(f) => Arg::Float(*f),
            ValueSyntax::Bool(b) => Arg::Bool(*b),
            ValueSyntax::Str(s) => Arg::Str(s.clone()),
            ValueSyntax::Param(p) => {
                self.check_expr(&Expr::Param(p.clone()), at, false)?;
                Arg::Param(p.clone())
            }
            ValueSyntax::List(items) => {
                let mut list = Vec::with_capacity(items.len());
                for item in items {
                    span.items.push((item.at, item.end));
                    let tensor = match &item.expr {
                        Expr::Name(n) => match self.lookup(n).map(|e| &e.binding) {
                            Some(Binding::Value(r)) => Some(*r),
                            _ => None,
                        },
                        _ => None,
                    };
                    match tensor {
                        Some(r) => list.push(Item::Tensor(r)),
                        None => {
                            // Names may be dims or the op's own (`dA0`): only `$params`
                            // are checked here.
                            self.check_expr(&item.expr, item.at, false)?;
                            list.push(Item::Expr(item.expr.clone()));
                        }
                    }
                }
                Arg::List(list)
            }
        };
        Ok((arg, span))
    }

    /// Values given to a super node, a function or `sink`: names, numbers (rank-0
    /// constants of the graph's float type), calls of one result, `$i`.
    pub(super) fn refs(&mut self, g: &mut GraphBuilder, args: &[ArgSyntax]) -> Result<Vec<Ref>> {
        args.iter().map(|a| self.ref_value(g, a)).collect()
    }

    fn ref_value(&mut self, g: &mut GraphBuilder, a: &ArgSyntax) -> Result<Ref> {
        if let Some(n) = &a.attr {
            return Err(self.error(
                ErrorKind::Arguments,
                n.at,
                format!("unexpected attribute `{}`", n.text),
            ));
        }
        match &a.value {
            ValueSyntax::Name(n) => self.value(n, a.at),
            ValueSyntax::Int(i) => Ok(g.scalar(*i as f64)),
            ValueSyntax::Float(f) => Ok(g.scalar(*f)),
            ValueSyntax::Call(c) => self.single(g, c),
            ValueSyntax::Param(p) => self.index_value(p, a.at),
            _ => Err(self.error(
                ErrorKind::Arguments,
                a.at,
                "expected a value: a name, a number or a call",
            )),
        }
    }

    /// `$p` as a value: the index of an enclosing `parallel` body.
    fn index_value(&self, p: &str, at: usize) -> Result<Ref> {
        let key = format!("${p}");
        match self.lookup(&key).map(|e| &e.binding) {
            Some(Binding::Index(r)) => Ok(*r),
            _ => Err(self.error(
                ErrorKind::UnknownName,
                at,
                format!("`${p}` is not the index of an enclosing `parallel` body"),
            )),
        }
    }

    /// A result of a function: a value, a number, a call of one result.
    fn source(&mut self, g: &mut GraphBuilder, a: &ArgSyntax) -> Result<Source> {
        match &a.value {
            ValueSyntax::Int(i) => Ok(Source::Scalar(*i as f64)),
            ValueSyntax::Float(f) => Ok(Source::Scalar(*f)),
            _ => self.ref_value(g, a).map(Source::Ref),
        }
    }

    /// The function an argument names.
    fn fn_arg(&self, a: &ArgSyntax) -> Result<(Rc<FnDef>, usize)> {
        match &a.value {
            ValueSyntax::Name(n) => self.function(n, a.at),
            _ => Err(self.error(
                ErrorKind::Arguments,
                a.at,
                "expected the name of a function",
            )),
        }
    }

    /// An inline call `f(x)`: the body is built in place.
    fn inline(
        &mut self,
        g: &mut GraphBuilder,
        c: &CallSyntax,
        def: &Rc<FnDef>,
        seen: usize,
    ) -> Result<Vec<Ref>> {
        let args = self.refs(g, &c.args)?;
        let ats: Vec<usize> = c.args.iter().map(|a| a.at).collect();
        let types = self.types(g, &args);
        self.check_params(def, &types, &ats, c.op.at, "the call", false)?;
        let first_new = g.graph().next_id;
        let first_position = g.graph().len();
        let results = self.body(g, def, seen, &args)?;
        mark_callee_names(g, first_position, first_new, &def.name.text);
        Ok(results
            .into_iter()
            .map(|s| match s {
                Source::Ref(r) => r,
                Source::Scalar(v) => g.scalar(v),
            })
            .collect())
    }

    fn types(&self, g: &GraphBuilder, refs: &[Ref]) -> Vec<ValueType> {
        refs.iter()
            .map(|r| {
                g.type_of(*r)
                    .cloned()
                    .unwrap_or_else(|_| ValueType::scalar(DType::F32))
            })
            .collect()
    }

    /// Checks that `def` takes values of `types` (given at `ats`; `fn_at` names the
    /// function in the call) from `user`; with `index`, its first parameter must be
    /// `$i` and takes no argument.
    fn check_params(
        &self,
        def: &FnDef,
        types: &[ValueType],
        ats: &[usize],
        fn_at: usize,
        user: &str,
        index: bool,
    ) -> Result<()> {
        let name = &def.name.text;
        let skip = usize::from(index);
        if index && !def.params.first().is_some_and(|p| p.index) {
            return Err(self.error(
                ErrorKind::Arguments,
                fn_at,
                format!("the body of {user} takes the iteration index first: `fn {name}($i, ...)`"),
            ));
        }
        if let Some(p) = def.params.iter().skip(skip).find(|p| p.index) {
            return Err(self.error(
                ErrorKind::Arguments,
                p.name.at,
                format!(
                    "`${}` is the index parameter of a `parallel` body, first and only there",
                    p.name.text
                ),
            ));
        }
        let n = def.params.len() - skip;
        if n != types.len() - skip {
            let plural = |k: usize| if k == 1 { "" } else { "s" };
            let m = types.len() - skip;
            return Err(self.error(
                ErrorKind::Arguments,
                fn_at,
                format!(
                    "function `{name}` takes {n} parameter{}, but {user} gives it {m} value{}",
                    plural(n),
                    plural(m)
                ),
            ));
        }
        for (k, p) in def.params.iter().enumerate().skip(skip) {
            let Some((dtype, dims, _)) = &p.ty else {
                continue;
            };
            let declared = ValueType::new(*dtype, dims.iter().map(|d| d.expr.clone()).collect());
            if declared != types[k] {
                let at = ats.get(k - skip).copied().unwrap_or(fn_at);
                return Err(self.error(
                    ErrorKind::Arguments,
                    at,
                    format!(
                        "parameter `{}` of `{name}` is declared {declared}, but {user} gives it {}",
                        p.name.text, types[k]
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Builds the body of `def` with its parameters bound to `params`, in the scope
    /// it was defined in (its first `seen` entries); returns what it returns.
    fn body(
        &mut self,
        g: &mut GraphBuilder,
        def: &FnDef,
        seen: usize,
        params: &[Ref],
    ) -> Result<Vec<Source>> {
        let len = self.scope.len();
        self.scope.hide(seen);
        self.frames.push(len);
        self.active.push(def.name.text.clone());
        let result = self.body_in_scope(g, def, params);
        self.scope.truncate(len);
        self.scope.unhide();
        self.frames.pop();
        self.active.pop();
        result
    }

    fn body_in_scope(
        &mut self,
        g: &mut GraphBuilder,
        def: &FnDef,
        params: &[Ref],
    ) -> Result<Vec<Source>> {
        for (p, r) in def.params.iter().zip(params) {
            if p.index {
                self.scope.push(Entry {
                    name: format!("${}", p.name.text),
                    binding: Binding::Index(*r),
                    at: p.name.at,
                });
            } else {
                self.check_new_name(&p.name, "a parameter")?;
                self.scope.push(Entry {
                    name: p.name.text.clone(),
                    binding: Binding::Value(*r),
                    at: p.name.at,
                });
            }
        }
        let Some((last, stmts)) = def.body.split_last() else {
            return Err(self.no_return(def));
        };
        for s in stmts {
            self.statement(g, s, false)?;
        }
        match last {
            Stmt::Return { values, .. } => values.iter().map(|v| self.source(g, v)).collect(),
            other => {
                self.statement(g, other, false)?;
                Err(self.no_return(def))
            }
        }
    }

    fn no_return(&self, def: &FnDef) -> TextError {
        self.error(
            ErrorKind::Syntax,
            def.close_at,
            format!(
                "function `{}` has no `return` (end its body with `return ...`)",
                def.name.text
            ),
        )
    }

    /// A sub-function of `def` over parameters of `types`, for super node `user`.
    #[allow(clippy::too_many_arguments)]
    fn sub(
        &mut self,
        g: &mut GraphBuilder,
        user: &str,
        (def, seen): (Rc<FnDef>, usize),
        types: Vec<ValueType>,
        ats: &[usize],
        fn_at: usize,
        index: bool,
    ) -> Result<Interface> {
        self.check_params(&def, &types, ats, fn_at, &format!("`{user}`"), index)?;
        let names: Vec<String> = def.params.iter().map(|p| p.name.text.clone()).collect();
        let index_name = index.then(|| names[0].clone());
        let this = &mut *self;
        let built = g.sub_function(
            names,
            types,
            Box::new(|g: &mut GraphBuilder, params: &[Ref]| {
                if let Some(n) = &index_name {
                    g.bind(n, params[0]);
                }
                let r = this.body(g, &def, seen, params);
                if index_name.is_some() {
                    g.unbind();
                }
                r.map_err(|e| {
                    this.pending = Some(e);
                    BuildError::new("in a function body")
                })
            }),
        );
        built.map_err(|e| {
            self.pending
                .take()
                .unwrap_or_else(|| self.error(ErrorKind::Build, fn_at, e.message))
        })
    }

    /// Adds super node `op` for call `c`, locating a type error at the argument it
    /// is about.
    fn add_super(
        &self,
        g: &mut GraphBuilder,
        c: &CallSyntax,
        op: Op,
        inputs: Vec<Ref>,
    ) -> Result<Vec<Ref>> {
        g.add_multi(op, inputs).map_err(|e| {
            let m = &e.message;
            let arg = |k: usize| c.args.get(k).map_or(c.op.at, |a| a.at);
            let branch = m
                .split("branch ")
                .nth(1)
                .and_then(|r| r.split(' ').next())
                .and_then(|k| k.parse::<usize>().ok());
            let at = match c.op.text.as_str() {
                "while" if m.contains("condition") => arg(0),
                "while" if m.contains("body") => arg(1),
                "if" if m.contains("condition") => arg(0),
                "if" => branch.map_or(c.op.at, |k| arg(k + 1)),
                "case" if m.contains("selector") => arg(0),
                "case" => match (branch, c.args.get(1).map(|a| &a.value)) {
                    (Some(k), Some(ValueSyntax::List(items))) => {
                        items.get(k).map_or(arg(1), |i| i.at)
                    }
                    _ => arg(1),
                },
                "parallel" | "call" => arg(usize::from(c.op.text == "parallel")),
                "scan" => arg(1),
                _ => c.op.at,
            };
            self.error(ErrorKind::Build, at, m.clone())
        })
    }

    fn need_args(&self, c: &CallSyntax, n: usize, usage: &str) -> Result<()> {
        let positional = c.args.iter().take_while(|a| a.attr.is_none()).count();
        if positional < n {
            return Err(self.error(
                ErrorKind::Arguments,
                c.op.at,
                format!(
                    "`{}` needs at least {n} arguments (usage: {usage})",
                    c.op.text
                ),
            ));
        }
        Ok(())
    }

    /// `while`, `case`, `if`, `parallel`, `call`, `chunk`, `const`.
    fn special(&mut self, g: &mut GraphBuilder, c: &CallSyntax) -> Result<Vec<Ref>> {
        let a = &c.args;
        match c.op.text.as_str() {
            "while" => {
                self.need_args(c, 2, "while(COND, BODY, init...)")?;
                let cond = self.fn_arg(&a[0])?;
                let body = self.fn_arg(&a[1])?;
                let init = self.refs(g, &a[2..])?;
                let types = self.types(g, &init);
                let ats: Vec<usize> = a[2..].iter().map(|x| x.at).collect();
                let cond = self.sub(g, "while", cond, types.clone(), &ats, a[0].at, false)?;
                let body = self.sub(g, "while", body, types, &ats, a[1].at, false)?;
                self.add_super(g, c, Op::While { cond, body }, init)
            }
            "if" => {
                self.need_args(c, 3, "if(C, THEN, ELSE, args...)")?;
                let cond = self.ref_value(g, &a[0])?;
                let then = self.fn_arg(&a[1])?;
                let else_ = self.fn_arg(&a[2])?;
                let args = self.refs(g, &a[3..])?;
                let types = self.types(g, &args);
                let ats: Vec<usize> = a[3..].iter().map(|x| x.at).collect();
                let then = self.sub(g, "if", then, types.clone(), &ats, a[1].at, false)?;
                let else_ = self.sub(g, "if", else_, types, &ats, a[2].at, false)?;
                let mut inputs = vec![cond];
                inputs.extend(args);
                self.add_super(g, c, Op::If { then, else_ }, inputs)
            }
            "case" => {
                self.need_args(c, 2, "case(SEL, [F0, F1, ...], args...)")?;
                let sel = self.ref_value(g, &a[0])?;
                let ValueSyntax::List(items) = &a[1].value else {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        a[1].at,
                        "expected the list of branches, like `[f, g]`",
                    ));
                };
                let mut fns = Vec::new();
                for item in items {
                    let Expr::Name(n) = &item.expr else {
                        return Err(self.error(
                            ErrorKind::Arguments,
                            item.at,
                            "expected the name of a function",
                        ));
                    };
                    fns.push((self.function(n, item.at)?, item.at));
                }
                let args = self.refs(g, &a[2..])?;
                let types = self.types(g, &args);
                let ats: Vec<usize> = a[2..].iter().map(|x| x.at).collect();
                let mut branches = Vec::new();
                for (f, at) in fns {
                    branches.push(self.sub(g, "case", f, types.clone(), &ats, at, false)?);
                }
                let mut inputs = vec![sel];
                inputs.extend(args);
                self.add_super(g, c, Op::Case { branches }, inputs)
            }
            "parallel" => {
                self.need_args(c, 2, "parallel(N, BODY, args...)")?;
                let count = self.size(&a[0])?;
                let body = self.fn_arg(&a[1])?;
                let args = self.refs(g, &a[2..])?;
                let mut types = vec![ValueType::scalar(DType::I32)];
                types.extend(self.types(g, &args));
                let ats: Vec<usize> = a[2..].iter().map(|x| x.at).collect();
                let index = body.0.params.first().map(|p| p.name.text.clone());
                let body = self.sub(g, "parallel", body, types, &ats, a[1].at, true)?;
                let op = Op::Parallel {
                    count,
                    index: index.unwrap_or_default(),
                    body,
                };
                self.add_super(g, c, op, args)
            }
            "call" => {
                self.need_args(c, 1, "call(F, args...)")?;
                let f = self.fn_arg(&a[0])?;
                let name = f.0.name.text.clone();
                let args = self.refs(g, &a[1..])?;
                let types = self.types(g, &args);
                let ats: Vec<usize> = a[1..].iter().map(|x| x.at).collect();
                let body = self.sub(g, "call", f, types, &ats, a[0].at, false)?;
                self.add_super(g, c, Op::NoInline { name, body }, args)
            }
            "scan" => self.scan(g, c),
            "chunk" => self.chunk(g, c),
            "sum_chunks" => {
                self.need_args(c, 1, "sum_chunks(v)")?;
                if a.len() != 1 {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        c.op.at,
                        "sum_chunks takes one value (usage: sum_chunks(v))",
                    ));
                }
                let v = self.refs(g, a)?;
                self.add_super(g, c, Op::SumChunks, v)
            }
            _ => self.constant(g, c),
        }
    }

    /// A size: an integer, a dimension name or a `$param`.
    fn size(&self, a: &ArgSyntax) -> Result<Expr> {
        match &a.value {
            ValueSyntax::Int(i) if *i >= 0 => Ok(Expr::Int(*i)),
            ValueSyntax::Name(n) if self.dims.contains(n) => Ok(Expr::name(n.clone())),
            ValueSyntax::Param(p) => {
                let e = Expr::Param(p.clone());
                self.check_expr(&e, a.at, false)?;
                Ok(e)
            }
            ValueSyntax::Name(n) => Err(self.error(
                ErrorKind::UnknownName,
                a.at,
                format!("`{n}` is not a dimension of any input"),
            )),
            _ => Err(self.error(
                ErrorKind::Arguments,
                a.at,
                "expected a size: an integer, a dimension name or a `$param`",
            )),
        }
    }

    /// `chunk(x, size=C)` (and `axis=K`); `chunk(x, g, size=C)` chunks several values
    /// with the same rows together.
    fn chunk(&mut self, g: &mut GraphBuilder, c: &CallSyntax) -> Result<Vec<Ref>> {
        const USAGE: &str = "chunk(x, size=C)";
        let mut x: Vec<Ref> = Vec::new();
        let mut size = None;
        let mut axis = 0usize;
        for a in &c.args {
            match a.attr.as_ref().map(|n| n.text.as_str()) {
                None if size.is_none() => x.push(self.ref_value(g, a)?),
                Some("size") => size = Some(self.size(a)?),
                Some("axis") => match a.value {
                    ValueSyntax::Int(k) if k >= 0 => axis = k as usize,
                    _ => {
                        return Err(self.error(
                            ErrorKind::Arguments,
                            a.at,
                            "chunk: `axis` is a non-negative integer",
                        ));
                    }
                },
                _ => {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        a.attr.as_ref().map_or(a.at, |n| n.at),
                        format!("chunk: unexpected argument (usage: {USAGE})"),
                    ));
                }
            }
        }
        let (false, Some(size)) = (x.is_empty(), size) else {
            return Err(self.error(
                ErrorKind::Arguments,
                c.op.at,
                format!("chunk needs a value and `size=` (usage: {USAGE})"),
            ));
        };
        self.add_super(g, c, Op::Chunk { axis, size }, x)
    }

    /// `const(f32, [2, 3], 1, 2, 3, 4, 5, 6)`: a constant tensor, row-major.
    fn constant(&mut self, g: &mut GraphBuilder, c: &CallSyntax) -> Result<Vec<Ref>> {
        const USAGE: &str = "const(f32, [dims], values...)";
        self.need_args(c, 2, USAGE)?;
        let a = &c.args;
        let dtype = match &a[0].value {
            ValueSyntax::Name(n) => DType::from_name(n),
            _ => None,
        }
        .ok_or_else(|| {
            self.error(
                ErrorKind::Arguments,
                a[0].at,
                "expected an element type: f32, f64 or i32",
            )
        })?;
        let shape = match &a[1].value {
            ValueSyntax::List(items) => items
                .iter()
                .map(|i| match i.expr {
                    Expr::Int(v) if v >= 0 => Ok(v as usize),
                    _ => Err(self.error(
                        ErrorKind::Arguments,
                        i.at,
                        "expected a non-negative integer size",
                    )),
                })
                .collect::<Result<Vec<_>>>()?,
            _ => {
                return Err(self.error(
                    ErrorKind::Arguments,
                    a[1].at,
                    format!("expected the shape, like `[2, 3]` (usage: {USAGE})"),
                ));
            }
        };
        let data = a[2..]
            .iter()
            .map(|v| match v.value {
                ValueSyntax::Int(i) => Ok(i as f64),
                ValueSyntax::Float(f) => Ok(f),
                _ => Err(self.error(ErrorKind::Arguments, v.at, "expected a number")),
            })
            .collect::<Result<Vec<_>>>()?;
        let t = Tensor::new(dtype, shape, data)
            .map_err(|e| self.error(ErrorKind::Arguments, c.op.at, format!("const: {e}")))?;
        Ok(vec![g.constant(t)])
    }
}

/// Marks the names of the values an inline call of `function` made (nodes from
/// position `first_position` and id `first_new` on) as the callee's: `w` becomes `function.w`, which no name the user
/// writes can be, so the caller's names come first wherever names are chosen
/// (printing, generated code); the value a statement binds takes the caller's name.
fn mark_callee_names(g: &mut GraphBuilder, first_position: usize, first_new: u32, function: &str) {
    let nodes = g.graph().nodes();
    let made: Vec<(Ref, String)> = nodes[first_position.min(nodes.len())..]
        .iter()
        .filter(|n| n.id.0 >= first_new)
        .flat_map(|n| {
            (0..n.outputs.len()).filter_map(move |k| {
                let name = n.name(k)?;
                (!name.starts_with('$')).then(|| (n.output(k), format!("{function}.{name}")))
            })
        })
        .collect();
    for (r, name) in made {
        let _ = g.name(r, &name);
    }
}

/// True when `registry` (the macro ops) defines `name` itself, shadowing the micro op.
fn is_op_in_registry(registry: &uop_codegen::text::Registry, name: &str) -> bool {
    registry.iter().any(|m| m.name == name)
}

/// The tensors an argument passes, each as the user wrote it: a name, or a call as
/// `op(...)`, or the names of a list.
fn as_written(v: &ValueSyntax, arg: &Arg) -> Vec<(Ref, String)> {
    match (v, arg) {
        (ValueSyntax::Name(n), Arg::Tensor(r)) => vec![(*r, n.clone())],
        (ValueSyntax::Call(c), Arg::Tensor(r)) => vec![(*r, format!("{}(...)", c.op.text))],
        (ValueSyntax::List(items), Arg::List(list)) => items
            .iter()
            .zip(list)
            .filter_map(|(i, l)| match (&i.expr, l) {
                (Expr::Name(n), Item::Tensor(r)) => Some((*r, n.clone())),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `message` of a call of `op` in the user's words: the scratch program's names of
/// the call's inputs (`_in0`) replaced by the arguments as written, and the op's
/// name said once (`add: add: ...`).
fn users_words(message: &str, op: &str, inputs: &[Ref], written: &[(Ref, String)]) -> String {
    let mut m = message.to_string();
    for (k, r) in inputs.iter().enumerate().rev() {
        let user = written
            .iter()
            .find(|(w, _)| w == r)
            .map_or_else(|| format!("argument {}", k + 1), |(_, t)| t.clone());
        m = m.replace(&format!("`_in{k}`"), &format!("`{user}`"));
    }
    let twice = format!("{op}: {op}: ");
    while m.contains(&twice) {
        m = m.replacen(&twice, &format!("{op}: "), 1);
    }
    m
}
