//! The expansion budget: what building the graph would cost, from the syntax alone,
//! before any node is built.
//!
//! A function is a template built again at each use (inline, or as a sub-function of
//! `while`, `case`, `if`, `parallel` and `call`), so a short file can ask for an
//! enormous graph: 30 functions each using the next twice ask for 2^30 copies of the
//! last. [`check`] adds up, for every statement, the nodes its right side would build
//! — each function's cost computed once, where it is defined, from the functions
//! visible there — and refuses the graph when the total passes [`MAX_NODES`] or a
//! chain of functions using one another passes [`MAX_DEPTH`] levels (building it
//! recurses once per level). The count is an estimate of the builder's (one node per
//! call, super node, sub-function input and number), close enough to tell a large
//! graph from a runaway one, and it never builds anything, so the answer takes as
//! long as reading the file.

use std::rc::Rc;

use uop_codegen::text::syntax::{Arg, Call, ValueSyntax};
use uop_codegen::text::{ErrorKind, TextError};

use super::calls::SPECIAL;
use super::scope::{Named, Scope};
use super::syntax::{FnDef, Stmt};

/// The most nodes expanding a graph's functions may build.
pub const MAX_NODES: u64 = 1 << 22;

/// How many functions may use one another in a chain (`f0` uses `f1` uses ...).
pub const MAX_DEPTH: usize = 256;

/// A chain of functions, each using the next (shared, so that costs copy cheaply).
#[derive(Debug)]
struct Link {
    name: String,
    next: Chain,
}

type Chain = Option<Rc<Link>>;

fn names(mut chain: &Chain) -> Vec<String> {
    let mut out = Vec::new();
    while let Some(link) = chain {
        out.push(link.name.clone());
        chain = &link.next;
    }
    out
}

/// What using a function (or a statement) builds.
#[derive(Clone, Debug, Default)]
struct Cost {
    /// Nodes, saturating.
    nodes: u64,
    /// The nodes of the costliest function use in it, and its chain of functions.
    top: u64,
    costliest: Chain,
    /// The longest chain of functions in it, and its length.
    depth: usize,
    deepest: Chain,
}

impl Cost {
    fn nodes(n: u64) -> Self {
        Cost {
            nodes: n,
            ..Cost::default()
        }
    }

    /// Adds `other`, keeping the costliest and the deepest chains.
    fn add(&mut self, other: &Cost) {
        self.nodes = self.nodes.saturating_add(other.nodes);
        if other.costliest.is_some() && (self.costliest.is_none() || other.top > self.top) {
            self.top = other.top;
            self.costliest = other.costliest.clone();
        }
        if other.depth > self.depth {
            self.depth = other.depth;
            self.deepest = other.deepest.clone();
        }
    }

    /// This cost as the cost of one use of function `name`.
    fn of_function(mut self, name: &str) -> Cost {
        self.costliest = Some(Rc::new(Link {
            name: name.to_string(),
            next: self.costliest.take(),
        }));
        self.top = self.nodes;
        self.deepest = Some(Rc::new(Link {
            name: name.to_string(),
            next: self.deepest.take(),
        }));
        self.depth += 1;
        self
    }
}

/// Checks that building `stmts` stays within [`MAX_NODES`] and [`MAX_DEPTH`].
pub(super) fn check(src: &str, stmts: &[Stmt]) -> Result<(), TextError> {
    let mut e = Estimator {
        src,
        scope: Scope::default(),
    };
    let mut total = Cost::default();
    for stmt in stmts {
        let cost = e.statement(stmt)?;
        total.add(&cost);
        if total.nodes > MAX_NODES {
            let at = statement_at(stmt);
            return Err(TextError::new(
                ErrorKind::Program,
                src,
                at,
                format!(
                    "expanding the functions would build {} nodes by this statement, more \
                     than the {MAX_NODES} a graph may have ({}; each use of a function \
                     builds its body again)",
                    show_count(total.nodes),
                    chain_text("the costliest chain", &names(&total.costliest))
                ),
            ));
        }
    }
    Ok(())
}

/// `2^30 + 3`-like counts are written out in full, saturated ones as "more than".
fn show_count(n: u64) -> String {
    if n == u64::MAX {
        format!("more than {}", u64::MAX)
    } else {
        n.to_string()
    }
}

fn chain_text(label: &str, chain: &[String]) -> String {
    if chain.is_empty() {
        return "no function is used".into();
    }
    let names: Vec<String> = chain.iter().map(|n| format!("`{n}`")).collect();
    let shown = if names.len() > 12 {
        let mut s = names[..6].join(" uses ");
        s.push_str(" uses ... uses ");
        s.push_str(&names[names.len() - 5..].join(" uses "));
        s
    } else {
        names.join(" uses ")
    };
    format!("{label}: {shown}")
}

fn statement_at(stmt: &Stmt) -> usize {
    match stmt {
        Stmt::Let { names, .. } => names.first().map_or(0, |n| n.at),
        Stmt::Bare(c) => c.op.at,
        Stmt::Fn(def) => def.at,
        Stmt::Output { at, .. } | Stmt::Return { at, .. } => *at,
        Stmt::Decl(_) => 0,
    }
}

struct Estimator<'s> {
    src: &'s str,
    /// Names in scope, innermost last: a function's cost, or `None` for a value.
    scope: Scope<(String, Option<Cost>)>,
}

impl Named for (String, Option<Cost>) {
    fn name(&self) -> &str {
        &self.0
    }
}

impl Estimator<'_> {
    fn function(&self, name: &str) -> Option<&Cost> {
        self.scope.lookup(name).and_then(|(_, c)| c.as_ref())
    }

    fn statement(&mut self, stmt: &Stmt) -> Result<Cost, TextError> {
        Ok(match stmt {
            Stmt::Let { names, value } => {
                let cost = self.value(&value.value);
                for n in names {
                    self.scope.push((n.text.clone(), None));
                }
                cost
            }
            Stmt::Bare(c) => self.call(c),
            Stmt::Return { values, .. } => self.values(values),
            Stmt::Fn(def) => {
                let cost = self.define(def)?;
                self.scope.push((def.name.text.clone(), Some(cost)));
                Cost::default()
            }
            Stmt::Output { .. } | Stmt::Decl(_) => Cost::default(),
        })
    }

    /// The cost of one use of `def`: its Input node and its body.
    fn define(&mut self, def: &FnDef) -> Result<Cost, TextError> {
        let mark = self.scope.len();
        for p in &def.params {
            self.scope.push((p.name.text.clone(), None));
        }
        let mut body = Cost::nodes(1);
        let mut result = Ok(());
        for s in &def.body {
            match self.statement(s) {
                Ok(c) => body.add(&c),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.scope.truncate(mark);
        result?;
        let body = body.of_function(&def.name.text);
        if body.depth > MAX_DEPTH {
            return Err(TextError::new(
                ErrorKind::Program,
                self.src,
                def.name.at,
                format!(
                    "functions use one another {} levels deep, more than the {MAX_DEPTH} a \
                     graph may nest ({})",
                    body.depth,
                    chain_text("the deepest chain", &names(&body.deepest))
                ),
            ));
        }
        Ok(body)
    }

    fn values(&self, args: &[Arg]) -> Cost {
        let mut cost = Cost::default();
        for a in args {
            cost.add(&self.value(&a.value));
        }
        cost
    }

    fn value(&self, v: &ValueSyntax) -> Cost {
        match v {
            ValueSyntax::Call(c) => self.call(c),
            ValueSyntax::Int(_) | ValueSyntax::Float(_) => Cost::nodes(1),
            _ => Cost::default(),
        }
    }

    /// A call: an op's node, an inline function's body, or a super node and the
    /// sub-functions it builds from the functions it names.
    fn call(&self, c: &Call) -> Cost {
        let name = c.op.text.as_str();
        let mut cost = Cost::nodes(1);
        if SPECIAL.contains(&name) {
            for a in &c.args {
                match &a.value {
                    ValueSyntax::Name(n) => {
                        if let Some(f) = self.function(n) {
                            cost.add(f);
                        }
                    }
                    ValueSyntax::List(items) => {
                        for item in items {
                            if let uop_codegen::index::Expr::Name(n) = &item.expr
                                && let Some(f) = self.function(n)
                            {
                                cost.add(f);
                            }
                        }
                    }
                    other => cost.add(&self.value(other)),
                }
            }
            return cost;
        }
        if let Some(f) = self.function(name) {
            cost = f.clone();
        }
        cost.add(&self.values(&c.args));
        cost
    }
}
