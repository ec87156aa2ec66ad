//! From statements to a [`Graph`], through the [`GraphBuilder`].
//!
//! Names are resolved in scopes: a `fn` body sees the names of its enclosing scopes
//! defined before the `fn` (closures) and its parameters. A function is a template:
//! its body is built where it is used, once per use — as a sub-function (an Input
//! node of the call site's types, then the body) for `while`, `case`, `if`,
//! `parallel` and `call`, or in place, with the parameters bound to the arguments,
//! for an inline call `y = f(x)`. So a function is typed at each use, and a body
//! is checked when it is used. Every error is a [`TextError`] pointing at what it
//! is about.

use std::collections::HashSet;
use std::rc::Rc;
use std::sync::{Arc, OnceLock};

use uop_codegen::index::Expr;
use uop_codegen::text::syntax::{Name, ValueSyntax};
use uop_codegen::text::{
    ErrorKind, KEYWORDS, Registry, TextError, float_type, is_op, micro_ops, suggest,
};

use crate::builder::GraphBuilder;
use crate::ir::{Graph, Ref, Source, ValueType};

use super::scope::{Named, Scope};
use super::syntax::{FnDef, Stmt};

/// Words of the graph text that cannot name a value or a function (besides the
/// program keywords and the micro ops).
pub const GRAPH_KEYWORDS: &[&str] = &[
    "fn", "return", "while", "case", "if", "parallel", "scan", "call", "chunk", "sink", "const",
];

/// True when `name` is a micro op's name. The names are gathered once:
/// [`micro_ops`] builds every op's signature and doc, too slow for each statement.
fn is_micro_op(name: &str) -> bool {
    static NAMES: OnceLock<HashSet<String>> = OnceLock::new();
    NAMES
        .get_or_init(|| micro_ops().into_iter().map(|m| m.name).collect())
        .contains(name)
}

/// What a name stands for.
#[derive(Clone)]
pub(super) enum Binding {
    /// A value.
    Value(Ref),
    /// A function, and its position in the scope: it sees the visible entries
    /// before it.
    Fn(Rc<FnDef>, usize),
    /// The index `$name` of an enclosing `parallel` body (a rank-0 i32 value).
    Index(Ref),
}

/// A name in scope (an index parameter's name starts with `$`).
#[derive(Clone)]
pub(super) struct Entry {
    pub(super) name: String,
    pub(super) binding: Binding,
    pub(super) at: usize,
}

impl Named for Entry {
    fn name(&self) -> &str {
        &self.name
    }
}

/// Builds the graph of `stmts` (parsed from `src`).
pub fn build(src: &str, stmts: &[Stmt], registry: Arc<Registry>) -> Result<Graph> {
    let decls: Vec<_> = stmts
        .iter()
        .filter_map(|s| match s {
            Stmt::Decl(d) => Some(d.clone()),
            _ => None,
        })
        .collect();
    let dtype = float_type(src, &decls)?;
    let mut g = GraphBuilder::with_registry(dtype, registry.clone());
    let mut b = B {
        src,
        registry,
        scope: Scope::default(),
        frames: vec![0],
        dims: HashSet::new(),
        params: Vec::new(),
        active: Vec::new(),
        pending: None,
        has_output: false,
    };
    for stmt in stmts {
        b.statement(&mut g, stmt, true)?;
    }
    if !b.has_output {
        return Err(TextError::new(
            ErrorKind::Program,
            src,
            src.trim_end().len(),
            "the graph has no outputs (add a line `output name`)",
        ));
    }
    Ok(g.finish())
}

pub(super) struct B<'s> {
    pub(super) src: &'s str,
    pub(super) registry: Arc<Registry>,
    pub(super) scope: Scope<Entry>,
    /// Where each open scope starts in `scope`.
    pub(super) frames: Vec<usize>,
    pub(super) dims: HashSet<String>,
    /// Declared `$params`.
    pub(super) params: Vec<String>,
    /// Functions whose bodies are being built (to report a function calling itself).
    pub(super) active: Vec<String>,
    /// An error raised inside a sub-function body, carried out of the builder.
    pub(super) pending: Option<TextError>,
    pub(super) has_output: bool,
}

pub(super) type Result<T> = std::result::Result<T, TextError>;

impl<'s> B<'s> {
    pub(super) fn error(
        &self,
        kind: ErrorKind,
        at: usize,
        message: impl Into<String>,
    ) -> TextError {
        TextError::new(kind, self.src, at, message)
    }

    fn line_of(&self, at: usize) -> usize {
        self.src[..at].matches('\n').count() + 1
    }

    pub(super) fn lookup(&self, name: &str) -> Option<&Entry> {
        self.scope.lookup(name)
    }

    pub(super) fn statement(&mut self, g: &mut GraphBuilder, stmt: &Stmt, top: bool) -> Result<()> {
        use uop_codegen::text::syntax::Stmt as D;
        match stmt {
            Stmt::Decl(d) => {
                let (at, word) = match d {
                    D::Dtype { at, .. } => (*at, "dtype"),
                    D::Param(names) => (names.first().map_or(0, |n| n.at), "param"),
                    D::Input { name, .. } => (name.at, "input"),
                    D::Assert { at, .. } => (*at, "assert"),
                    D::Let { name, .. } => (name.at, "let"),
                    D::Output(names) => (names.first().map_or(0, |n| n.at), "output"),
                };
                if !top {
                    return Err(self.error(
                        ErrorKind::Program,
                        at,
                        format!("`{word}` lines belong at the top level, not in a function"),
                    ));
                }
                self.declaration(g, d)
            }
            Stmt::Output { at, values } => {
                if !top {
                    return Err(self.error(
                        ErrorKind::Program,
                        *at,
                        "`output` belongs at the top level; a function gives its results with `return`",
                    ));
                }
                for v in values {
                    match &v.value {
                        ValueSyntax::Name(n) => {
                            let r = self.value(n, v.at)?;
                            g.output_named(r, n);
                        }
                        ValueSyntax::Int(i) => g.output(Source::Scalar(*i as f64)),
                        ValueSyntax::Float(f) => g.output(Source::Scalar(*f)),
                        _ => {
                            return Err(self.error(
                                ErrorKind::Syntax,
                                v.at,
                                "`output` takes names of values or numbers",
                            ));
                        }
                    }
                }
                self.has_output = true;
                Ok(())
            }
            Stmt::Fn(def) => {
                self.check_new_name(&def.name, "a function")?;
                if is_op(&self.registry, &def.name.text) {
                    return Err(self.error(
                        ErrorKind::BadName,
                        def.name.at,
                        format!("`{}` is an op and cannot name a function", def.name.text),
                    ));
                }
                let seen = self.scope.len();
                self.scope.push(Entry {
                    name: def.name.text.clone(),
                    binding: Binding::Fn(Rc::new(def.clone()), seen),
                    at: def.name.at,
                });
                Ok(())
            }
            Stmt::Return { at, .. } => Err(self.error(
                ErrorKind::Syntax,
                *at,
                if top {
                    "`return` outside a function"
                } else {
                    "`return` must be the last statement of a function's body"
                },
            )),
            Stmt::Bare(call) if super::calls::SPECIAL.contains(&call.op.text.as_str()) => {
                let results = self.call(g, call, true)?;
                if !results.is_empty() {
                    return Err(self.error(
                        ErrorKind::Arguments,
                        call.op.at,
                        format!(
                            "`{}` gives {} results: name them, `a = {}(...)`",
                            call.op.text,
                            results.len(),
                            call.op.text
                        ),
                    ));
                }
                Ok(())
            }
            Stmt::Bare(call) => {
                if call.op.text != "sink" {
                    return Err(self.error(
                        ErrorKind::Syntax,
                        call.op.at,
                        format!(
                            "the result of `{0}` must be named: `y = {0}(...)`",
                            call.op.text
                        ),
                    ));
                }
                let refs = self.refs(g, &call.args)?;
                g.sink(&refs)
                    .map_err(|e| self.error(ErrorKind::Build, call.op.at, e.message))?;
                Ok(())
            }
            Stmt::Let { names, value } => {
                let first_new = g.graph().next_id;
                let results = self.right_side(g, value)?;
                if results.len() != names.len() {
                    let what = match &value.value {
                        ValueSyntax::Call(c) => format!("`{}`", c.op.text),
                        ValueSyntax::Name(n) => format!("`{n}`"),
                        _ => "a number".to_string(),
                    };
                    let plural = if results.len() == 1 { "" } else { "s" };
                    return Err(self.error(
                        ErrorKind::Arguments,
                        names[0].at,
                        format!(
                            "{what} gives {} result{plural}, but {} name{} on the left of `=`",
                            results.len(),
                            names.len(),
                            if names.len() == 1 { " is" } else { "s are" }
                        ),
                    ));
                }
                // A value this statement made (in an inlined body too) takes the
                // name written here, once; a value made before keeps its name.
                let mut renamed = HashSet::new();
                for (name, r) in names.iter().zip(results) {
                    let own = r.node.0 >= first_new && renamed.insert(r);
                    self.define(g, name, r, own)?;
                }
                Ok(())
            }
        }
    }

    fn declaration(
        &mut self,
        g: &mut GraphBuilder,
        d: &uop_codegen::text::syntax::Stmt,
    ) -> Result<()> {
        use uop_codegen::text::syntax::Stmt as D;
        match d {
            D::Dtype { .. } => Ok(()),
            D::Param(names) => {
                for n in names {
                    g.param(&n.text).map_err(|_| {
                        self.error(
                            ErrorKind::BadName,
                            n.at,
                            format!("parameter `${}` is declared twice", n.text),
                        )
                    })?;
                    self.params.push(n.text.clone());
                }
                Ok(())
            }
            D::Input {
                name, dtype, dims, ..
            } => {
                self.check_new_name(name, "a value")?;
                for (dim, at) in dims {
                    if let Expr::Name(d) = dim
                        && (self.lookup(d).is_some() || *d == name.text)
                    {
                        return Err(self.error(
                            ErrorKind::BadName,
                            *at,
                            format!("`{d}` is a value and cannot also be a dimension name"),
                        ));
                    }
                }
                let shape: Vec<Expr> = dims.iter().map(|(d, _)| d.clone()).collect();
                let r = g
                    .input_type(&name.text, ValueType::new(*dtype, shape))
                    .map_err(|e| self.error(ErrorKind::DType, name.at, e.message))?;
                for (dim, _) in dims {
                    if let Expr::Name(d) = dim {
                        self.dims.insert(d.clone());
                    }
                }
                self.scope.push(Entry {
                    name: name.text.clone(),
                    binding: Binding::Value(r),
                    at: name.at,
                });
                Ok(())
            }
            D::Assert { left, right, .. } => {
                for item in [left, right] {
                    self.check_expr(&item.expr, item.at, true)?;
                }
                g.assert_equal(left.expr.clone(), right.expr.clone());
                Ok(())
            }
            D::Let { name, .. } => Err(self.error(ErrorKind::Syntax, name.at, "unexpected")),
            D::Output(names) => Err(self.error(
                ErrorKind::Syntax,
                names.first().map_or(0, |n| n.at),
                "unexpected",
            )),
        }
    }

    /// Checks that `name` may name something new in the current scope.
    pub(super) fn check_new_name(&self, name: &Name, what: &str) -> Result<()> {
        let text = &name.text;
        let problem = if is_micro_op(text) {
            format!("`{text}` is a micro op and cannot name {what}")
        } else if KEYWORDS.contains(&text.as_str()) || GRAPH_KEYWORDS.contains(&text.as_str()) {
            format!("`{text}` is a reserved word and cannot name {what}")
        } else if let Some(e) = self
            .scope
            .lookup_from(text, self.frames.last().copied().unwrap_or(0))
        {
            format!("`{text}` is already defined on line {}", self.line_of(e.at))
        } else if self.dims.contains(text) {
            format!("`{text}` is a dimension of an input and cannot also name {what}")
        } else {
            return Ok(());
        };
        Err(self.error(ErrorKind::BadName, name.at, problem))
    }

    /// Binds `name` to `r`, naming the value after it when it has no name yet or
    /// when `own` (the statement made it).
    pub(super) fn define(
        &mut self,
        g: &mut GraphBuilder,
        name: &Name,
        r: Ref,
        own: bool,
    ) -> Result<()> {
        self.check_new_name(name, "a value")?;
        let unnamed = g
            .graph()
            .node(r.node)
            .is_some_and(|n| n.name(r.output).is_none());
        if unnamed || own {
            g.name(r, &name.text)
                .map_err(|e| self.error(ErrorKind::BadName, name.at, e.message))?;
        }
        self.scope.push(Entry {
            name: name.text.clone(),
            binding: Binding::Value(r),
            at: name.at,
        });
        Ok(())
    }

    /// The value `name` (written at `at`) stands for.
    pub(super) fn value(&self, name: &str, at: usize) -> Result<Ref> {
        match self.lookup(name).map(|e| &e.binding) {
            Some(Binding::Value(r)) => return Ok(*r),
            Some(Binding::Fn(..)) => {
                return Err(self.error(
                    ErrorKind::UnknownName,
                    at,
                    format!("`{name}` is a function, not a value: call it as `{name}(...)`"),
                ));
            }
            _ => {}
        }
        let message = if self.dims.contains(name) {
            format!("`{name}` is a dimension, not a value")
        } else if is_op(&self.registry, name) {
            format!("`{name}` is an op: call it as `{name}(...)`")
        } else {
            let values = self
                .scope
                .visible_entries()
                .filter(|e| matches!(e.binding, Binding::Value(_)))
                .map(|e| e.name.as_str());
            match suggest(name, values) {
                Some(s) => format!("unknown name `{name}` (did you mean `{s}`?)"),
                None => format!("unknown name `{name}`"),
            }
        };
        Err(self.error(ErrorKind::UnknownName, at, message))
    }

    /// The function `name` (written at `at`) stands for.
    pub(super) fn function(&self, name: &str, at: usize) -> Result<(Rc<FnDef>, usize)> {
        match self.lookup(name).map(|e| &e.binding) {
            Some(Binding::Fn(def, seen)) => return Ok((def.clone(), *seen)),
            Some(Binding::Value(_)) => {
                return Err(self.error(
                    ErrorKind::UnknownName,
                    at,
                    format!("`{name}` is a value, not a function"),
                ));
            }
            _ => {}
        }
        if self.active.iter().any(|a| a == name) {
            return Err(self.error(
                ErrorKind::UnknownName,
                at,
                format!("function `{name}` calls itself (a function cannot call itself; loop with `while`)"),
            ));
        }
        let fns = self
            .scope
            .visible_entries()
            .filter(|e| matches!(e.binding, Binding::Fn(..)))
            .map(|e| e.name.as_str());
        let message = match suggest(name, fns) {
            Some(s) => format!("unknown function `{name}` (did you mean `{s}`?)"),
            None => format!("unknown function `{name}`"),
        };
        Err(self.error(ErrorKind::UnknownName, at, message))
    }

    /// Checks the `$params` (and, if `names_are_dims`, the names) of an expression.
    pub(super) fn check_expr(&self, e: &Expr, at: usize, names_are_dims: bool) -> Result<()> {
        let mut problem = None;
        e.visit(&mut |e| {
            if problem.is_some() {
                return;
            }
            match e {
                Expr::Param(p) if !self.param_declared(p) => {
                    problem = Some(format!(
                        "parameter `${p}` is not declared (add a line `param {p}`)"
                    ));
                }
                Expr::Name(n) if names_are_dims && !self.dims.contains(n) => {
                    problem = Some(format!("`{n}` is not a dimension of any input"));
                }
                _ => {}
            }
        });
        match problem {
            None => Ok(()),
            Some(m) => Err(self.error(ErrorKind::UnknownName, at, m)),
        }
    }

    /// True when `$p` is a declared parameter or the index of an enclosing
    /// `parallel` body.
    pub(super) fn param_declared(&self, p: &str) -> bool {
        matches!(
            self.lookup(&format!("${p}")).map(|e| &e.binding),
            Some(Binding::Index(_))
        ) || self.params.iter().any(|q| q == p)
    }
}
