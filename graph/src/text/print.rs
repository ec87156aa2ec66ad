//! Graph -> text: the inverse of `parse_graph`, by the definition hierarchy.
//!
//! Each level prints its definitions in execution order. A super node prints its
//! sub-functions as `fn` definitions just before the statement that uses them;
//! each body is indented one level deeper than its `fn` line. Names: a value keeps
//! the name it has when that name is free (not a keyword, op, dimension, or a name
//! visible where it is defined); otherwise it gets `t<id>` (`t<id>_<k>` for output
//! k > 0 of a node), made unique with a `_2`, `_3`, ... suffix. A `call` keeps its
//! function's name; other sub-functions are named after the super node's first
//! result (`z5_cond`, `z5_body`, `r_then`, `r_branch1`).
//!
//! Printing what it parsed writes the same text again: every name the first print
//! chose is stored in the parsed graph and chosen again.

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;

use uop_codegen::index::Expr;
use uop_codegen::text::{KEYWORDS, is_op};
use uop_codegen::uop::DType;

use crate::hierarchy::{Entry, hierarchy};
use crate::ir::{Call, CallValue, Graph, Interface, ListItem, Node, Op, Ref, Source};

use super::build::GRAPH_KEYWORDS;

/// Writes `graph` as graph text. A graph without a valid hierarchy, or with nodes
/// the text cannot express (kernels), prints as `#` comment lines saying so.
pub fn print_graph(graph: &Graph) -> String {
    let h = match hierarchy(graph) {
        Ok(h) => h,
        Err(e) => return format!("# this graph cannot be printed: {e}\n"),
    };
    let mut p = Printer {
        graph,
        out: String::new(),
        names: HashMap::new(),
        scopes: vec![HashSet::new()],
        dims: HashSet::new(),
        unnamed: 0,
        indices: Vec::new(),
        claimed: user_names(graph),
        preferred: output_names_for_unnamed(graph),
    };
    p.header();
    p.entries(&h.top, 0);
    let outputs: Vec<String> = (0..graph.interface.outputs.len())
        .map(|k| p.output(k))
        .collect();
    if !outputs.is_empty() {
        let _ = writeln!(p.out, "output {}", outputs.join(", "));
    }
    p.out
}

struct Printer<'g> {
    graph: &'g Graph,
    out: String,
    /// The name chosen for each value.
    names: HashMap<Ref, String>,
    /// Names defined in each open scope, innermost last.
    scopes: Vec<HashSet<String>>,
    dims: HashSet<String>,
    /// Super nodes without results named so far (their functions are `f1_...`).
    unnamed: usize,
    /// Index names of the enclosing `parallel` bodies (without `$`).
    indices: Vec<String>,
    /// The names the user wrote, anywhere in the graph: a generated name, or the
    /// name of a value an inlined function made, never takes one.
    claimed: HashSet<String>,
    /// The output's name for an output value the user did not name (what a pass
    /// put in place of a named value), so that it prints under that name.
    preferred: HashMap<Ref, String>,
}

/// For each output value without a name of the user's, the name of the first
/// output naming it.
fn output_names_for_unnamed(graph: &Graph) -> HashMap<Ref, String> {
    let mut preferred = HashMap::new();
    for (s, name) in graph.interface.outputs.iter().zip(&graph.output_names) {
        let (Some(r), Some(name)) = (s.as_ref(), name) else {
            continue;
        };
        let users = graph
            .node(r.node)
            .and_then(|n| n.name(r.output))
            .is_some_and(is_ident);
        if !users {
            preferred.entry(r).or_insert_with(|| name.clone());
        }
    }
    preferred
}

/// The names the user gave values (and outputs) of `graph`: valid names that are not
/// marked as an inlined function's (`f.w`).
fn user_names(graph: &Graph) -> HashSet<String> {
    graph
        .nodes()
        .iter()
        .flat_map(|n| n.names.iter().flatten())
        .chain(graph.output_names.iter().flatten())
        .filter(|n| is_ident(n))
        .cloned()
        .collect()
}

/// A number as the parser reads it back: always with a fraction or exponent.
pub(crate) fn number(v: f64) -> String {
    if v.is_nan() {
        "nan".to_string()
    } else {
        format!("{v:?}")
    }
}

impl Printer<'_> {
    fn indent(&mut self, depth: usize) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
    }

    fn free(&self, name: &str) -> bool {
        is_ident(name)
            && !KEYWORDS.contains(&name)
            && !GRAPH_KEYWORDS.contains(&name)
            && !is_op(&self.graph.registry, name)
            && !self.dims.contains(name)
            && !self.scopes.iter().any(|s| s.contains(name))
            && !is_index_name(name)
    }

    /// Defines a name in the innermost scope: `wanted` if free, else `fallback`
    /// made unique. A name the user wrote only has to be free; any other (the
    /// fallback, the last part of an inlined function's `f.w`) must also not be a
    /// name the user wrote elsewhere.
    fn define(&mut self, wanted: Option<&str>, fallback: &str) -> String {
        let (base, users) = match wanted {
            Some(w) if is_ident(w) => (w, true),
            Some(w) => match w.rsplit('.').next() {
                Some(last) if is_ident(last) => (last, false),
                _ => (fallback, false),
            },
            None => (fallback, false),
        };
        let ok = |c: &str| self.free(c) && (users && c == base || !self.claimed.contains(c));
        let name = if ok(base) {
            base.to_string()
        } else {
            (2..)
                .map(|k| format!("{base}_{k}"))
                .find(|c| ok(c))
                .unwrap_or_default()
        };
        if let Some(s) = self.scopes.last_mut() {
            s.insert(name.clone());
        }
        name
    }

    /// Names the outputs of `node`.
    fn name_outputs(&mut self, node: &Node) -> Vec<String> {
        (0..node.outputs.len())
            .map(|k| {
                let fallback = if k == 0 {
                    format!("t{}", node.id.0)
                } else {
                    format!("t{}_{k}", node.id.0)
                };
                let wanted = self
                    .preferred
                    .get(&node.output(k))
                    .cloned()
                    .or_else(|| node.name(k).map(str::to_string));
                let name = self.define(wanted.as_deref(), &fallback);
                self.names.insert(node.output(k), name.clone());
                name
            })
            .collect()
    }

    fn value(&self, r: Ref) -> String {
        self.names
            .get(&r)
            .cloned()
            .unwrap_or_else(|| format!("t{}", r.node.0))
    }

    /// Output `k` as the `output` line names it; an output named otherwise than its
    /// value (`y` for input `x`) is defined first, `y = x`.
    fn output(&mut self, k: usize) -> String {
        let source = &self.graph.interface.outputs[k];
        let printed = self.source(source);
        let Some(Some(wanted)) = self.graph.output_names.get(k) else {
            return printed;
        };
        let value_name = source
            .as_ref()
            .and_then(|r| self.graph.node(r.node).and_then(|n| n.name(r.output)));
        if value_name == Some(wanted.as_str()) || *wanted == printed {
            return printed;
        }
        let name = self.define(Some(wanted), &format!("out{k}"));
        let _ = writeln!(self.out, "{name} = {printed}");
        name
    }

    fn source(&self, s: &Source) -> String {
        match s {
            Source::Ref(r) => self.value(*r),
            Source::Scalar(v) => number(*v),
        }
    }

    /// `dtype`, `param`, `input` and `assert` lines.
    fn header(&mut self) {
        let g = self.graph;
        let Some(input) = g.input_node() else {
            return;
        };
        let float_input = input.outputs.iter().any(|t| t.dtype.is_float());
        if !float_input && g.dtype != DType::F32 {
            let _ = writeln!(self.out, "dtype {}", g.dtype.name());
        }
        if !g.params.is_empty() {
            let _ = writeln!(self.out, "param {}", g.params.join(", "));
        }
        for t in &input.outputs {
            for d in &t.shape {
                if let Expr::Name(n) = d {
                    self.dims.insert(n.clone());
                }
            }
        }
        for (k, t) in input.outputs.iter().enumerate() {
            let name = self.define(input.name(k), &format!("x{k}"));
            self.names.insert(input.output(k), name.clone());
            let _ = writeln!(self.out, "input {name}: {t}");
        }
        for (a, b) in &g.assertions {
            let _ = writeln!(self.out, "assert {a} == {b}");
        }
    }

    fn entries(&mut self, entries: &[Entry], depth: usize) {
        for e in entries {
            let Some(node) = self.graph.node(e.node) else {
                continue;
            };
            if matches!(node.op, Op::Input { .. }) {
                continue;
            }
            self.definition(node, e, depth);
        }
    }

    /// One node: its sub-functions, then its statement.
    fn definition(&mut self, node: &Node, e: &Entry, depth: usize) {
        let outs = self.name_outputs(node);
        let mut fns = Vec::new();
        let interfaces = node.op.interfaces();
        let base = match outs.first() {
            Some(o) => o.clone(),
            None if interfaces.is_empty() => String::new(),
            None => {
                self.unnamed += 1;
                format!("f{}", self.unnamed)
            }
        };
        for sub in &e.subs {
            let Some(interface) = interfaces.get(sub.branch) else {
                continue;
            };
            let wanted = match &node.op {
                Op::NoInline { name, .. } => name.clone(),
                Op::While { .. } => format!("{base}_{}", ["cond", "body"][sub.branch.min(1)]),
                Op::If { .. } => format!("{base}_{}", ["then", "else"][sub.branch.min(1)]),
                Op::Case { .. } => format!("{base}_branch{}", sub.branch),
                _ => format!("{base}_body"),
            };
            let name = match &node.op {
                Op::NoInline { .. } => self.define(Some(&wanted), &wanted),
                _ => self.define(None, &wanted),
            };
            fns.push(name.clone());
            self.function(&name, node, sub, interface, depth);
        }
        let rhs = self.right_side(node, &fns);
        self.indent(depth);
        if outs.is_empty() {
            let _ = writeln!(self.out, "{rhs}");
        } else {
            let _ = writeln!(self.out, "{} = {rhs}", outs.join(", "));
        }
    }

    fn function(
        &mut self,
        name: &str,
        owner: &Node,
        sub: &crate::hierarchy::SubFunction,
        interface: &Interface,
        depth: usize,
    ) {
        self.scopes.push(HashSet::new());
        let mut params = Vec::new();
        let mut pushed_index = None;
        if let Some(input) = self.graph.node(sub.input) {
            for k in 0..input.outputs.len() {
                if k == 0
                    && let Some(index) = owner.op.index_name()
                {
                    // Distinct from the enclosing bodies' indices and the graph's
                    // params, so that `$name` means one thing in the body.
                    let taken = |n: &str| {
                        self.indices.iter().any(|i| i == n)
                            || self.graph.params.iter().any(|p| p == n)
                    };
                    let name = if taken(index) {
                        (2..)
                            .map(|k| format!("{index}_{k}"))
                            .find(|c| !taken(c))
                            .unwrap_or_default()
                    } else {
                        index.to_string()
                    };
                    self.names.insert(input.output(0), format!("${name}"));
                    params.push(format!("${name}"));
                    pushed_index = Some(name);
                    continue;
                }
                let p = self.define(input.name(k), &format!("p{}_{k}", input.id.0));
                self.names.insert(input.output(k), p.clone());
                params.push(p);
            }
        }
        let has_index = pushed_index.is_some();
        self.indices.extend(pushed_index);
        self.indent(depth);
        let _ = write!(self.out, "fn {name}({}) {{", params.join(", "));
        if sub.nodes.iter().all(|e| {
            self.graph
                .node(e.node)
                .is_some_and(|n| matches!(n.op, Op::Input { .. }))
        }) {
            let results: Vec<String> = interface.outputs.iter().map(|s| self.source(s)).collect();
            let _ = writeln!(self.out, " {} }}", return_line(&results));
        } else {
            self.out.push('\n');
            self.entries(&sub.nodes, depth + 1);
            let results: Vec<String> = interface.outputs.iter().map(|s| self.source(s)).collect();
            self.indent(depth + 1);
            let _ = writeln!(self.out, "{}", return_line(&results));
            self.indent(depth);
            self.out.push_str("}\n");
        }
        if has_index {
            self.indices.pop();
        }
        self.scopes.pop();
    }

    fn refs(&self, refs: &[Ref]) -> Vec<String> {
        refs.iter().map(|r| self.value(*r)).collect()
    }

    fn right_side(&self, node: &Node, fns: &[String]) -> String {
        let args = |first: Vec<String>, rest: &[Ref]| {
            let mut all = first;
            all.extend(self.refs(rest));
            all.join(", ")
        };
        let fname = |k: usize| fns.get(k).cloned().unwrap_or_default();
        match &node.op {
            Op::Input { .. } => String::new(),
            Op::Const(t) if t.shape.is_empty() && t.dtype == self.graph.dtype => {
                number(t.data.first().copied().unwrap_or(0.0))
            }
            Op::Const(t) => {
                let mut parts = vec![
                    t.dtype.name().to_string(),
                    format!(
                        "[{}]",
                        t.shape
                            .iter()
                            .map(ToString::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ];
                parts.extend(t.data.iter().map(|v| number(*v)));
                format!("const({})", parts.join(", "))
            }
            Op::Call(c) => self.call(c, &node.inputs),
            Op::Kernel(k) => format!(
                "kernel_{}({})  # {}; kernels have no text form yet",
                k.name,
                self.refs(&node.inputs).join(", "),
                crate::vocab::kernel_summary(k)
            ),
            Op::While { .. } => format!("while({})", args(vec![fname(0), fname(1)], &node.inputs)),
            Op::If { .. } => format!(
                "if({})",
                args(
                    vec![
                        node.inputs
                            .first()
                            .map(|r| self.value(*r))
                            .unwrap_or_default(),
                        fname(0),
                        fname(1)
                    ],
                    node.inputs.get(1..).unwrap_or(&[])
                )
            ),
            Op::Case { .. } => format!(
                "case({})",
                args(
                    vec![
                        node.inputs
                            .first()
                            .map(|r| self.value(*r))
                            .unwrap_or_default(),
                        format!("[{}]", fns.join(", "))
                    ],
                    node.inputs.get(1..).unwrap_or(&[])
                )
            ),
            Op::Parallel { count, .. } => format!(
                "parallel({})",
                args(vec![count_text(count), fname(0)], &node.inputs)
            ),
            Op::Scan {
                count,
                carried,
                scanned,
                stacked,
                ..
            } => {
                let mut all = vec![scan_count_text(count), fname(0)];
                all.extend(self.refs(&node.inputs));
                all.extend(crate::scan::attrs_text(*carried, scanned, stacked));
                format!("scan({})", all.join(", "))
            }
            Op::NoInline { .. } => format!("call({})", args(vec![fname(0)], &node.inputs)),
            Op::Chunk { axis, size } => {
                let mut s = format!(
                    "chunk({}, size={}",
                    args(vec![], &node.inputs),
                    count_text(size)
                );
                if *axis != 0 {
                    let _ = write!(s, ", axis={axis}");
                }
                s.push(')');
                s
            }
            Op::Sink => format!("sink({})", self.refs(&node.inputs).join(", ")),
            Op::SumChunks => format!("sum_chunks({})", self.refs(&node.inputs).join(", ")),
        }
    }

    fn call(&self, c: &Call, inputs: &[Ref]) -> String {
        let input = |k: usize| {
            inputs
                .get(k)
                .map_or_else(|| format!("_in{k}"), |r| self.value(*r))
        };
        // A `$name` bound to a `parallel` index is written with the index's printed name.
        let renamed: HashMap<String, String> = c
            .bind
            .iter()
            .filter_map(|(p, k)| {
                let printed = self.names.get(inputs.get(*k)?)?.strip_prefix('$')?;
                (printed != p).then(|| (p.clone(), printed.to_string()))
            })
            .collect();
        let expr = |e: &Expr| rename_params(e, &renamed).to_string();
        let value = |v: &CallValue| match v {
            CallValue::Input(k) => input(*k),
            CallValue::Int(i) => i.to_string(),
            CallValue::Float(f) => number(*f),
            CallValue::Bool(b) => b.to_string(),
            CallValue::Str(s) => format!(
                "\"{}\"",
                s.replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n")
            ),
            CallValue::Param(p) => format!("${}", renamed.get(p).unwrap_or(p)),
            CallValue::List(items) => format!(
                "[{}]",
                items
                    .iter()
                    .map(|i| match i {
                        ListItem::Expr(e) => expr(e),
                        ListItem::Input(k) => input(*k),
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let mut parts: Vec<String> = c.args.iter().map(value).collect();
        parts.extend(c.attrs.iter().map(|(n, v)| format!("{n}={}", value(v))));
        format!("{}({})", c.op, parts.join(", "))
    }
}

/// `return a, b` (or just `return`).
fn return_line(results: &[String]) -> String {
    if results.is_empty() {
        "return".to_string()
    } else {
        format!("return {}", results.join(", "))
    }
}

fn is_ident(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `e` with the `$params` of `map` renamed.
fn rename_params(e: &Expr, map: &HashMap<String, String>) -> Expr {
    match e {
        Expr::Param(p) => Expr::Param(map.get(p).unwrap_or(p).clone()),
        Expr::Neg(a) => Expr::Neg(Box::new(rename_params(a, map))),
        Expr::Bin(op, a, b) => Expr::bin(*op, rename_params(a, map), rename_params(b, map)),
        other => other.clone(),
    }
}

/// A size as `parallel` and `chunk` read it: an integer, a name or a `$param`.
fn count_text(e: &Expr) -> String {
    e.to_string()
}

/// A `scan` count: an integer, a name or a `$param` as such, any other expression
/// as a one-item list (`[2 * N]`).
fn scan_count_text(e: &Expr) -> String {
    match e {
        Expr::Int(_) | Expr::Name(_) | Expr::Param(_) => e.to_string(),
        other => format!("[{other}]"),
    }
}

/// Names the index-expression parser reads as loop indices (`i0`) or dims of
/// sources (`dA0`): a value must not be named so, or a list naming it would change
/// meaning.
fn is_index_name(name: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    name.strip_prefix('i').is_some_and(digits)
        || name
            .strip_prefix('d')
            .and_then(|r| {
                r.get(1..)
                    .filter(|_| r.starts_with(|c: char| c.is_ascii_uppercase()))
            })
            .is_some_and(digits)
}
