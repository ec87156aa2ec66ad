//! Random graphs for property tests (DESIGN.md §22), and a shrinker that reduces a
//! failing graph to a small `.uop` reproducer.
//!
//! [`random_graph`] builds, from a seed, a graph with sub-functions and nested super
//! nodes (`while`, `if`, `case`, `parallel`, `call`), closures over enclosing scopes,
//! `chunk`, shared values (a value read several times) and dead values (read by no
//! output). The same seed gives the same graph. Values are of two types, `f32[N]` and
//! `f32[]` (plus `f32[1]` from reductions, used as conditions); every `while` counts
//! its iterations in a scalar state that its condition bounds, so every generated
//! graph terminates.
//!
//! [`shrink`] takes a graph a predicate fails on and repeatedly drops outputs,
//! redirects an output to an input of its producer and removes dead nodes, while the
//! predicate still fails; [`reproducer`] prints the result as graph text.

use uop_codegen::index::Expr;
use uop_codegen::uop::DType;

use crate::builder::{Arg, BuildError, GraphBuilder};
use crate::ir::{Graph, Interface, NodeId, Op, Ref, Source, ValueType};
use crate::text::print_graph;

/// A small deterministic generator (SplitMix64).
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// How large and how deep generated graphs are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RandomOptions {
    /// Statements per scope (at most).
    pub statements: usize,
    /// Nesting of super nodes (at most).
    pub depth: usize,
    /// Graph outputs (at most).
    pub outputs: usize,
}

impl Default for RandomOptions {
    fn default() -> Self {
        RandomOptions {
            statements: 6,
            depth: 3,
            outputs: 3,
        }
    }
}

/// The random graph of `seed`.
///
/// ```
/// use uop_graph::random::{RandomOptions, random_graph};
/// let a = random_graph(7, &RandomOptions::default()).expect("builds");
/// let b = random_graph(7, &RandomOptions::default()).expect("builds");
/// assert_eq!(a.nodes(), b.nodes());
/// ```
pub fn random_graph(seed: u64, options: &RandomOptions) -> Result<Graph, BuildError> {
    let mut g = GraphBuilder::new(DType::F32);
    let mut maker = Gen {
        rng: Rng::new(seed),
        options: *options,
        scopes: Vec::new(),
        index: Vec::new(),
    };
    let x = g.input("x", DType::F32, &["N"])?;
    let s = g.input("s", DType::F32, &[])?;
    maker.scopes.push(vec![x, s]);
    if maker.rng.chance(30) {
        let y = g.input("y", DType::F32, &["N"])?;
        maker.scopes[0].push(y);
    }
    maker.statements(&mut g, 0)?;
    let outputs = 1 + maker.rng.below(options.outputs.max(1));
    for _ in 0..outputs {
        if maker.rng.chance(10) {
            g.output(Source::Scalar(0.5));
        } else {
            let v = maker.any(&g);
            g.output(v);
        }
    }
    Ok(g.finish())
}

/// The generator's state: the values visible in each open scope.
struct Gen {
    rng: Rng,
    options: RandomOptions,
    scopes: Vec<Vec<Ref>>,
    /// `$name`s of the enclosing `parallel` bodies.
    index: Vec<String>,
}

type R<T> = Result<T, BuildError>;

fn vector() -> ValueType {
    ValueType::new(DType::F32, vec![Expr::name("N")])
}

fn scalar() -> ValueType {
    ValueType::scalar(DType::F32)
}

impl Gen {
    fn visible(&self) -> Vec<Ref> {
        self.scopes.iter().flatten().copied().collect()
    }

    fn add(&mut self, r: Ref) {
        if let Some(s) = self.scopes.last_mut() {
            s.push(r);
        }
    }

    /// The values a statement may read: the innermost scope's and the top level's.
    /// (A value of an enclosing function read by a statement no result needs would
    /// tie two functions together where no super node does; see the property test.)
    /// Results and arguments of super nodes may read every visible value.
    fn pool(&self, all: bool) -> Vec<Ref> {
        if all || self.scopes.len() <= 1 {
            return self.visible();
        }
        let mut pool = self.scopes[0].clone();
        pool.extend(self.scopes.last().into_iter().flatten());
        pool
    }

    /// A value a statement may read, preferring the innermost scope.
    fn any(&mut self, _g: &GraphBuilder) -> Ref {
        let inner = self.scopes.last().cloned().unwrap_or_default();
        let pool = if !inner.is_empty() && self.rng.chance(60) {
            inner
        } else {
            self.pool(false)
        };
        *self.rng.pick(&pool)
    }

    /// A value of type `t` a statement may read (made from one if there is none).
    fn of_type(&mut self, g: &mut GraphBuilder, t: &ValueType) -> R<Ref> {
        self.typed(g, t, false)
    }

    /// A visible value of type `t`, for a result or an argument of a super node.
    fn of_type_any(&mut self, g: &mut GraphBuilder, t: &ValueType) -> R<Ref> {
        self.typed(g, t, true)
    }

    fn typed(&mut self, g: &mut GraphBuilder, t: &ValueType, all: bool) -> R<Ref> {
        let pool: Vec<Ref> = self
            .pool(all)
            .into_iter()
            .filter(|r| g.type_of(*r).is_ok_and(|u| u == t))
            .collect();
        if !pool.is_empty() && self.rng.chance(80) {
            return Ok(*self.rng.pick(&pool));
        }
        if *t == scalar() {
            return Ok(g.scalar(self.rng.below(5) as f64 * 0.5 - 1.0));
        }
        // A vector from a visible vector (there is always `x`).
        let v = self.typed(g, &vector(), all)?;
        g.op("neg", &[v])
    }

    fn statements(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let n = 1 + self.rng.below(self.options.statements.max(1));
        for _ in 0..n {
            self.statement(g, depth)?;
        }
        Ok(())
    }

    fn statement(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let nested = depth < self.options.depth;
        let choice = self.rng.below(if nested { 12 } else { 6 });
        match choice {
            0..=1 => {
                let x = self.any(g);
                let op = *self.rng.pick(&["neg", "abs", "tanh", "sin"]);
                if g.type_of(x)?.dtype != DType::F32 {
                    return Ok(());
                }
                let r = g.op(op, &[x])?;
                self.add(r);
            }
            2..=3 => {
                let a = self.any(g);
                let op = *self.rng.pick(&["add", "mul", "sub"]);
                if g.type_of(a)?.dtype != DType::F32 {
                    return Ok(());
                }
                let r = if self.rng.chance(30) {
                    g.call(op, &[a.into(), Arg::Float(0.25)], &[])?
                } else {
                    let t = g.type_of(a)?.clone();
                    let b = self.of_type(g, &t)?;
                    g.op(op, &[a, b])?
                };
                self.add(r);
            }
            4 => {
                let v = self.of_type(g, &vector())?;
                let r = if !self.index.is_empty() && self.rng.chance(50) {
                    // Row `$i` of a vector, through an index expression.
                    let i = self.index.last().cloned().unwrap_or_default();
                    let at = Expr::Param(i);
                    g.call(
                        "reindex",
                        &[
                            v.into(),
                            Arg::List(vec![]),
                            Arg::List(vec![crate::builder::Item::Expr(at)]),
                        ],
                        &[],
                    )?
                } else {
                    g.call("reduce_sum", &[v.into(), Arg::exprs(&["0"])?], &[])?
                };
                self.add(r);
            }
            5 => {
                let v = self.of_type(g, &vector())?;
                if self.rng.chance(30) && self.index.is_empty() {
                    let r = g.chunk(v, Expr::Int(2))?;
                    self.add(r);
                } else {
                    let r = g.scalar(self.rng.below(7) as f64 - 3.0);
                    self.add(r);
                }
            }
            6..=7 => self.while_loop(g, depth)?,
            8 => self.branches(g, depth)?,
            9 => self.parallel(g, depth)?,
            _ => self.no_inline(g, depth)?,
        }
        Ok(())
    }

    /// A body: statements over `params` (and the enclosing scopes), returning values
    /// of `results` types.
    fn body(
        &mut self,
        g: &mut GraphBuilder,
        params: &[Ref],
        results: &[ValueType],
        depth: usize,
    ) -> R<Vec<Source>> {
        self.scopes.push(params.to_vec());
        let out = (|| {
            self.statements(g, depth + 1)?;
            results
                .iter()
                .map(|t| {
                    if *t == scalar() && self.rng.chance(10) {
                        Ok(Source::Scalar(1.5))
                    } else {
                        self.of_type_any(g, t).map(Source::Ref)
                    }
                })
                .collect()
        })();
        self.scopes.pop();
        out
    }

    fn types(&mut self, n: usize) -> Vec<ValueType> {
        (0..n)
            .map(|_| {
                if self.rng.chance(50) {
                    vector()
                } else {
                    scalar()
                }
            })
            .collect()
    }

    fn args(&mut self, g: &mut GraphBuilder, types: &[ValueType]) -> R<Vec<Ref>> {
        types.iter().map(|t| self.of_type_any(g, t)).collect()
    }

    fn sub(
        &mut self,
        g: &mut GraphBuilder,
        names: Vec<String>,
        types: Vec<ValueType>,
        results: &[ValueType],
        depth: usize,
        index: Option<&str>,
    ) -> R<Interface> {
        let results = results.to_vec();
        let index = index.map(str::to_string);
        g.sub_function(
            names,
            types,
            Box::new(|g: &mut GraphBuilder, params: &[Ref]| {
                if let Some(i) = &index {
                    g.bind(i, params[0]);
                    self.index.push(i.clone());
                }
                let values = if index.is_some() {
                    &params[1..]
                } else {
                    params
                };
                let out = self.body(g, values, &results, depth);
                if index.is_some() {
                    g.unbind();
                    self.index.pop();
                }
                out
            }),
        )
    }

    fn names(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|k| format!("a{k}")).collect()
    }

    /// `while` with a counter: state `(c, more...)`, condition `lt(c, K)`.
    fn while_loop(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let extra = self.rng.below(3);
        let mut types = vec![scalar()];
        types.extend(self.types(extra));
        let mut init = vec![g.scalar(0.0)];
        init.extend(self.args(g, &types[1..])?);
        let names = self.names(types.len());
        let trips = 1 + self.rng.below(3);
        let use_closure = self.rng.chance(50);
        let closure = self.any(g);
        let cond = g.sub_function(
            names.clone(),
            types.clone(),
            Box::new(move |g: &mut GraphBuilder, p: &[Ref]| {
                let mut c = g.call("lt", &[p[0].into(), Arg::Float(trips as f64)], &[])?;
                if use_closure && g.type_of(closure).is_ok_and(|t| t.shape.is_empty()) {
                    // A closure the condition reads without changing its value.
                    let neg = g.call("lt", &[closure.into(), Arg::Float(0.0)], &[])?;
                    c = g.op("where", &[neg, c, c])?;
                }
                Ok(vec![c.into()])
            }),
        )?;
        let results = types[1..].to_vec();
        let body = {
            let results = results.clone();
            g.sub_function(
                names,
                types,
                Box::new(|g: &mut GraphBuilder, p: &[Ref]| {
                    let next = g.call("add", &[p[0].into(), Arg::Float(1.0)], &[])?;
                    let rest = self.body(g, &p[1..], &results, depth)?;
                    let mut out = vec![Source::Ref(next)];
                    out.extend(rest);
                    Ok(out)
                }),
            )?
        };
        let outs = g.add_multi(Op::While { cond, body }, init)?;
        for r in outs {
            self.add(r);
        }
        Ok(())
    }

    /// `if` or `case` over a selector made from a visible value.
    fn branches(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let sel = self.of_type(g, &scalar())?;
        let n_args = 1 + self.rng.below(2);
        let types = self.types(n_args);
        let args = self.args(g, &types)?;
        let n_results = 1 + self.rng.below(2);
        let results = self.types(n_results);
        let names = self.names(types.len());
        let case = self.rng.chance(50);
        let branches = if case { 1 + self.rng.below(3) } else { 2 };
        let mut subs = Vec::new();
        for _ in 0..branches {
            subs.push(self.sub(g, names.clone(), types.clone(), &results, depth, None)?);
        }
        let mut inputs = vec![sel];
        inputs.extend(args);
        let op = if case {
            Op::Case { branches: subs }
        } else {
            let else_ = subs.pop().expect("two branches");
            let then = subs.pop().expect("two branches");
            Op::If { then, else_ }
        };
        for r in g.add_multi(op, inputs)? {
            self.add(r);
        }
        Ok(())
    }

    fn parallel(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let n_args = self.rng.below(2);
        let types = self.types(n_args);
        let args = self.args(g, &types)?;
        let index = format!("k{}", self.index.len() + 1);
        let mut all_types = vec![ValueType::scalar(DType::I32)];
        all_types.extend(types);
        let mut names = vec![index.clone()];
        names.extend(self.names(n_args));
        let results = vec![scalar()];
        let count = if self.rng.chance(50) {
            Expr::Int(2 + self.rng.below(2) as i64)
        } else {
            Expr::name("N")
        };
        let body = self.sub(g, names, all_types, &results, depth, Some(&index))?;
        let outs = g.add_multi(Op::Parallel { count, index, body }, args)?;
        // Output 0 is [count]: a vector only when the count is N.
        for r in outs {
            self.add(r);
        }
        Ok(())
    }

    fn no_inline(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let n_args = 1 + self.rng.below(2);
        let types = self.types(n_args);
        let args = self.args(g, &types)?;
        let n_results = 1 + self.rng.below(2);
        let results = self.types(n_results);
        let names = self.names(n_args);
        let name = format!("unit{}", self.rng.below(3));
        let body = self.sub(g, names, types, &results, depth, None)?;
        for r in g.add_multi(Op::NoInline { name, body }, args)? {
            self.add(r);
        }
        Ok(())
    }
}

/// Reduces `graph`, on which `fails` holds, to a smaller graph on which it still
/// holds: drops outputs, redirects an output to an input of the node producing it,
/// and removes every node no output needs, for as long as one of these keeps the
/// failure.
pub fn shrink(graph: &Graph, fails: &dyn Fn(&Graph) -> bool) -> Graph {
    let mut best = without_dead(graph);
    if !fails(&best) {
        best = graph.clone();
    }
    loop {
        let mut progress = false;
        for candidate in smaller(&best) {
            let candidate = without_dead(&candidate);
            let smaller = candidate.len() < best.len()
                || candidate.interface.outputs.len() < best.interface.outputs.len();
            if smaller && fails(&candidate) {
                best = candidate;
                progress = true;
                break;
            }
        }
        if !progress {
            return best;
        }
    }
}

/// The graph text of a shrunk failing graph, with a header saying what failed.
pub fn reproducer(graph: &Graph, fails: &dyn Fn(&Graph) -> bool, what: &str) -> String {
    let small = shrink(graph, fails);
    format!("# {what}\n{}", print_graph(&small))
}

/// One-step reductions of `graph`.
fn smaller(graph: &Graph) -> Vec<Graph> {
    let outputs = &graph.interface.outputs;
    let mut out = Vec::new();
    if outputs.len() > 1 {
        for k in 0..outputs.len() {
            let mut g = graph.clone();
            g.interface.outputs.remove(k);
            out.push(g);
        }
    }
    for (k, output) in outputs.iter().enumerate() {
        let Source::Ref(r) = *output else {
            continue;
        };
        let Some(node) = graph.node(r.node) else {
            continue;
        };
        for input in node.inputs.clone() {
            let mut g = graph.clone();
            g.interface.outputs[k] = Source::Ref(input);
            out.push(g);
        }
    }
    out
}

/// `graph` without the nodes no output needs (a kept super node keeps its
/// sub-functions' Input nodes and what its sub-functions return).
pub fn without_dead(graph: &Graph) -> Graph {
    let mut live: std::collections::HashSet<NodeId> = std::collections::HashSet::new();
    live.insert(graph.interface.input);
    let mut work: Vec<NodeId> = graph
        .interface
        .outputs
        .iter()
        .filter_map(Source::as_ref)
        .map(|r| r.node)
        .collect();
    while let Some(id) = work.pop() {
        if !live.insert(id) {
            continue;
        }
        let Some(n) = graph.node(id) else {
            continue;
        };
        work.extend(n.uses().iter().map(|r| r.node));
        work.extend(n.op.interfaces().iter().map(|i| i.input));
    }
    let nodes = graph
        .nodes()
        .iter()
        .filter(|n| live.contains(&n.id))
        .cloned()
        .collect();
    let mut g = Graph::from_nodes(graph.dtype, graph.interface.clone(), nodes);
    g.params = graph.params.clone();
    g.assertions = graph.assertions.clone();
    g.registry = graph.registry.clone();
    g
}
