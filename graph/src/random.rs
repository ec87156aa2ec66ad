//! Random graphs for property tests (DESIGN.md §22), and a shrinker that reduces a
//! failing graph to a small `.uop` reproducer.
//!
//! # The generator
//!
//! [`random_graph`] builds, from a seed, a graph through the [`GraphBuilder`], as a
//! user would; the same seed gives the same graph. The graph has inputs `x: f32[N]`,
//! `s: f32[]` and sometimes `y: f32[N]`, then a scope of statements, then one to
//! [`RandomOptions::outputs`] outputs (visible values, sometimes the number 0.5). Each
//! scope (the top level, each body) has up to [`RandomOptions::statements`]
//! statements, each one of:
//!
//! - an element-wise call (`neg`, `abs`, `tanh`, `sin`; `add`, `mul`, `sub` of two
//!   values of one type or of a value and 0.25), or an earlier element-wise call
//!   again on the same values: a **shared sub-expression**;
//! - `reduce_sum` of a vector, or, inside a `parallel` body, **element `$k` of a
//!   vector** (`reindex(v, [], [$k])`, binding the innermost body's index);
//! - a scalar constant, or (at the top level) a request for a **`chunk`**: a graph
//!   that asked for `k` chunks (at most four) ends in a *looped tail* instead of
//!   free outputs: a chunk of a top-level vector, element-wise calls over the looped
//!   values, top-level scalars and 0.25, a chunk of one of those, ... `k` chunk
//!   nodes in a chain, and outputs from the last loop (so the rules of §20 and
//!   `docs/graph-looping.md` hold: the looped graph gives the unlooped results);
//! - below [`RandomOptions::depth`], a super node whose bodies are scopes of their own:
//!   `while` (a counter state bounded by its condition, which may also read a closure,
//!   plus up to two more states), `if` over a visible scalar, `case` with one to three
//!   branches over a selector `where(lt(v, t), k0, k1)` whose numbers are in range
//!   and include `-1` (**pass-through**) when the results have the arguments' types,
//!   `parallel` over 2, 3 or `N` (index `$k1`, `$k2`, ... by depth), and `call` of a
//!   function `unit0`..`unit2`.
//!
//! Operands are visible values: half the time from the innermost scope, otherwise from
//! any open scope — **closures** over the enclosing functions at every depth. Values
//! a body defines but does not return are **dead values** inside the body, some of
//! them reading parameters of enclosing functions (kept in place by containment,
//! [`crate::scope`]); values the outputs do not need are dead at the top level.
//!
//! So every generated graph verifies, has a hierarchy, prints and runs (N = 3 for
//! the counts, which are at most 3); `graph/tests/suite/random_graphs.rs` checks it for
//! hundreds of seeds and counts each construct above.
//!
//! # Shrinking
//!
//! [`shrink`] takes a graph a predicate fails on and repeatedly removes what no output
//! needs, drops or redirects outputs and removes single unread nodes, while the
//! predicate still fails; [`reproducer`] writes the result as a `.uop` file that
//! `parse_graph` and the CLI read (see its documentation).

use uop_codegen::index::Expr;
use uop_codegen::tensor::Tensor;
use uop_codegen::uop::DType;

use crate::builder::{Arg, BuildError, GraphBuilder};
use crate::ir::{Graph, Interface, Op, Ref, Source, ValueType};

mod chunked;
mod joins;
mod shrink;

pub use chunked::random_chunked_graph;
pub use joins::join_with_adds;
pub use shrink::{reproducer, shrink, without_dead};

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

/// Seeded random inputs for `graph`'s Input node: every size that is not an integer
/// (a named or computed dim) is `size`; input `k` is filled from seed `seed + k`.
pub fn random_inputs(graph: &Graph, size: usize, seed: u64) -> Vec<Tensor> {
    graph
        .input_node()
        .map(|node| {
            node.outputs
                .iter()
                .enumerate()
                .map(|(k, t)| {
                    let shape = t
                        .shape
                        .iter()
                        .map(|d| d.as_int().map_or(size, |v| v as usize))
                        .collect();
                    Tensor::random(t.dtype, shape, seed.wrapping_add(k as u64))
                })
                .collect()
        })
        .unwrap_or_default()
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
        chunks: 0,
        exprs: Vec::new(),
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
    if maker.chunks > 0 {
        for v in maker.looped_tail(&mut g, outputs)? {
            g.output(v);
        }
        return Ok(g.finish());
    }
    for _ in 0..outputs {
        if maker.rng.chance(10) {
            g.output(Source::Scalar(0.5));
        } else {
            let v = maker.any();
            g.output(v);
        }
    }
    Ok(g.finish())
}

/// The most Chunk nodes a generated graph has (the §20 limit checked by
/// [`crate::Checks::PARTITIONS`]).
const MAX_CHUNKS: usize = 4;

/// The generator's state: the values visible in each open scope.
struct Gen {
    rng: Rng,
    options: RandomOptions,
    scopes: Vec<Vec<Ref>>,
    /// `$name`s of the enclosing `parallel` bodies.
    index: Vec<String>,
    /// Chunk nodes asked for (made in the looped tail, a chain: each chunk is
    /// downstream of the previous one).
    chunks: usize,
    /// The element-wise calls made so far (op, inputs), to repeat as shared
    /// sub-expressions.
    exprs: Vec<(&'static str, Vec<Ref>)>,
}

type R<T> = Result<T, BuildError>;

fn vector() -> ValueType {
    ValueType::new(DType::F32, vec![Expr::name("N")])
}

fn scalar() -> ValueType {
    ValueType::scalar(DType::F32)
}

impl Gen {
    /// Every value visible where the generator is: the open scopes' values, from the
    /// top level inwards (closures over every enclosing scope).
    fn visible(&self) -> Vec<Ref> {
        self.scopes.iter().flatten().copied().collect()
    }

    fn add(&mut self, r: Ref) {
        if let Some(s) = self.scopes.last_mut() {
            s.push(r);
        }
    }

    /// A visible value, preferring the innermost scope (its parameters and
    /// definitions); otherwise one of any enclosing scope.
    fn any(&mut self) -> Ref {
        let inner = self.scopes.last().cloned().unwrap_or_default();
        let pool = if !inner.is_empty() && self.rng.chance(50) {
            inner
        } else {
            self.visible()
        };
        *self.rng.pick(&pool)
    }

    /// A visible value of type `t` (made from one if there is none).
    fn typed(&mut self, g: &mut GraphBuilder, t: &ValueType) -> R<Ref> {
        let pool: Vec<Ref> = self
            .visible()
            .into_iter()
            .filter(|r| g.type_of(*r).is_ok_and(|u| u == t))
            .collect();
        if !pool.is_empty() && self.rng.chance(80) {
            return Ok(*self.rng.pick(&pool));
        }
        if *t == scalar() {
            return Ok(g.scalar(self.rng.below(5) as f64 * 0.5 - 1.0));
        }
        if *t != vector() {
            return Err(BuildError::new(format!(
                "no value of type {t} to make one from"
            )));
        }
        // A vector from a visible vector (there is always `x`).
        let v = self.typed(g, &vector())?;
        g.op("neg", &[v])
    }

    fn statements(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let n = 1 + self.rng.below(self.options.statements.max(1));
        for _ in 0..n {
            self.statement(g, depth)?;
        }
        Ok(())
    }

    /// An element-wise call, recorded for [`Self::repeat`].
    fn elementwise(&mut self, g: &mut GraphBuilder, op: &'static str, args: &[Ref]) -> R<()> {
        let r = g.op(op, args)?;
        self.exprs.push((op, args.to_vec()));
        self.add(r);
        Ok(())
    }

    /// A shared sub-expression: an earlier element-wise call again, on the same
    /// values (when they are all visible here). False when there is none.
    fn repeat(&mut self, g: &mut GraphBuilder) -> R<bool> {
        let visible = self.visible();
        let candidates: Vec<(&'static str, Vec<Ref>)> = self
            .exprs
            .iter()
            .filter(|(_, args)| args.iter().all(|a| visible.contains(a)))
            .cloned()
            .collect();
        if candidates.is_empty() {
            return Ok(false);
        }
        let (op, args) = self.rng.pick(&candidates).clone();
        let r = g.op(op, &args)?;
        self.add(r);
        Ok(true)
    }

    fn statement(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let nested = depth < self.options.depth;
        let choice = self.rng.below(if nested { 12 } else { 6 });
        match choice {
            0..=1 => {
                if self.rng.chance(25) && self.repeat(g)? {
                    return Ok(());
                }
                let x = self.any();
                let op = *self.rng.pick(&["neg", "abs", "tanh", "sin"]);
                self.elementwise(g, op, &[x])?;
            }
            2..=3 => {
                let a = self.any();
                let op = *self.rng.pick(&["add", "mul", "sub"]);
                if self.rng.chance(30) {
                    let r = g.call(op, &[a.into(), Arg::Float(0.25)], &[])?;
                    self.add(r);
                } else {
                    let t = g.type_of(a)?.clone();
                    // A value of a's type: `[count]` results of `parallel` pair
                    // with themselves only.
                    let b = if t == scalar() || t == vector() {
                        self.typed(g, &t)?
                    } else {
                        a
                    };
                    self.elementwise(g, op, &[a, b])?;
                }
            }
            4 => {
                let v = self.typed(g, &vector())?;
                let r = if !self.index.is_empty() && self.rng.chance(50) {
                    // Element `$k` of a vector, through an index expression.
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
                if self.rng.chance(40) && self.index.is_empty() && self.chunk(g)? {
                    return Ok(());
                }
                let r = g.scalar(self.rng.below(7) as f64 - 3.0);
                self.add(r);
            }
            6..=7 => self.while_loop(g, depth)?,
            8 => self.branches(g, depth)?,
            9 => self.parallel(g, depth)?,
            _ => self.no_inline(g, depth)?,
        }
        Ok(())
    }

    /// Asks for one more chunk node in the looped tail (at the top level only, at
    /// most [`MAX_CHUNKS`]). False when none fits.
    fn chunk(&mut self, _: &mut GraphBuilder) -> R<bool> {
        if self.chunks >= MAX_CHUNKS || self.scopes.len() != 1 {
            return Ok(false);
        }
        self.chunks += 1;
        Ok(true)
    }

    /// The looped tail of a graph that asked for chunks: a chunk node of a top-level
    /// vector, element-wise calls over it (with each other, with top-level scalars
    /// and with 0.25), then a chunk of one of those, and so on; returns `outputs`
    /// values of the last loop. So the graph keeps the rules of
    /// `docs/graph-looping.md`: every looped value keeps its rows, and only values
    /// of one loop meet.
    fn looped_tail(&mut self, g: &mut GraphBuilder, outputs: usize) -> R<Vec<Ref>> {
        let top = self.scopes[0].clone();
        let scalars: Vec<Ref> = top
            .iter()
            .copied()
            .filter(|r| g.type_of(*r).is_ok_and(|t| *t == scalar()))
            .collect();
        let mut source = self.typed(g, &vector())?;
        let mut looped = Vec::new();
        // Half the time one more: loops in loops.
        if self.chunks < MAX_CHUNKS && self.rng.chance(50) {
            self.chunks += 1;
        }
        for _ in 0..self.chunks {
            let c = g.chunk(source, Expr::Int(2))?;
            looped = vec![c];
            for _ in 0..1 + self.rng.below(3) {
                let a = *self.rng.pick(&looped);
                let r = match self.rng.below(3) {
                    0 => {
                        let op = *self.rng.pick(&["neg", "abs", "tanh", "sin"]);
                        g.op(op, &[a])?
                    }
                    1 => {
                        let b = *self.rng.pick(&looped);
                        let op = *self.rng.pick(&["add", "mul", "sub"]);
                        g.op(op, &[a, b])?
                    }
                    _ if !scalars.is_empty() && self.rng.chance(60) => {
                        let b = *self.rng.pick(&scalars);
                        let op = *self.rng.pick(&["add", "mul", "sub"]);
                        g.op(op, &[a, b])?
                    }
                    _ => g.call("mul", &[a.into(), Arg::Float(0.25)], &[])?,
                };
                looped.push(r);
            }
            source = *self.rng.pick(&looped);
        }
        Ok((0..outputs).map(|_| *self.rng.pick(&looped)).collect())
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
                        self.typed(g, t).map(Source::Ref)
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
        types.iter().map(|t| self.typed(g, t)).collect()
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
        let closure = self.any();
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

    /// `if` over a visible scalar, or `case` over a selector in range: the branches'
    /// numbers, and `-1` (the arguments passed through) when the results have the
    /// arguments' types.
    fn branches(&mut self, g: &mut GraphBuilder, depth: usize) -> R<()> {
        let n_args = 1 + self.rng.below(2);
        let types = self.types(n_args);
        let args = self.args(g, &types)?;
        let case = self.rng.chance(50);
        let branches = if case { 1 + self.rng.below(3) } else { 2 };
        let pass_through = case && self.rng.chance(60);
        let results = if pass_through {
            types.clone()
        } else {
            let n = 1 + self.rng.below(2);
            self.types(n)
        };
        let sel = if case {
            self.selector(g, branches, pass_through)?
        } else {
            self.typed(g, &scalar())?
        };
        let names = self.names(types.len());
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

    /// `where(lt(v, t), k0, k1)` over a visible scalar `v`: `k0`, `k1` among the
    /// branch numbers, and `-1` when `pass_through`.
    fn selector(&mut self, g: &mut GraphBuilder, branches: usize, pass_through: bool) -> R<Ref> {
        let v = self.typed(g, &scalar())?;
        let low = if pass_through { -1 } else { 0 };
        let choices: Vec<f64> = (low..branches as i64).map(|k| k as f64).collect();
        let k0 = *self.rng.pick(&choices);
        let k1 = *self.rng.pick(&choices);
        let t = *self.rng.pick(&[-0.5, 0.0, 0.5]);
        let below = g.call("lt", &[v.into(), Arg::Float(t)], &[])?;
        g.call(
            "where",
            &[below.into(), Arg::Float(k0), Arg::Float(k1)],
            &[],
        )
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
