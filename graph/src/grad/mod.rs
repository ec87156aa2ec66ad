//! Gradients of graphs (DESIGN.md §19): the gradient of a [`Graph`] is a graph.
//!
//! [`gradient`] takes a forward graph and a [`GraphGradSpec`] and builds a graph
//! that recomputes the forward values it needs and then runs the backward pass
//! (`docs/graph-gradients.md` has the design). Calls are differentiated with the
//! per-uop rules of [`uop_codegen::grad`], one call at a time, and the gradient
//! program of each call is written back into the graph as calls of micro ops; the
//! graph level adds the rules for its constructs:
//!
//! - `call` (a non-inlined function): a `call` of the function's gradient, which
//!   recomputes the body and returns the gradients of its arguments and of the
//!   values it reads from enclosing scopes;
//! - `if` / `case`: the same selector picks the gradient of the branch taken; a
//!   negative selector (pass-through) takes an extra branch that passes the seeds
//!   through; gradients a branch does not produce are zeros;
//! - `while`: a tape ([`TapeMode::Stack`]: the forward stacks every float state of
//!   every iteration into a buffer of `$tape_N` rows, a `$param` whose value
//!   [`GraphGradient::params`] takes from a forward run) or recomputation
//!   ([`TapeMode::Recompute`]: the state of iteration k is recomputed from the
//!   initial state); the backward loop runs iterations N−1 down to 0 with the
//!   carried gradients as its state and accumulates the gradients of loop
//!   invariants;
//! - `parallel`: a `parallel` of the body's gradient, the index passed through; the
//!   gradients of arguments and invariants are summed over the iterations.
//!
//! - `chunk`: the gradient graph loops over the same chunks; the gradients of
//!   values every chunk reads (weights) are summed over the chunks (`sum_chunks`).
//!
//! ```
//! use std::collections::HashMap;
//! use uop_codegen::tensor::Tensor;
//! use uop_codegen::uop::DType;
//! use uop_graph::grad::{GraphGradSpec, gradient};
//! use uop_graph::text::parse_graph;
//!
//! let src = "input x: f32[]\nfn more(v, i) { return lt(i, 3) }\n\
//!            fn step(v, i) { return mul(v, x), add(i, 1) }\n\
//!            v3, n = while(more, step, 1, 0)\noutput v3\n";
//! let forward = parse_graph(src, uop_graph::default_registry())?;
//! let grad = gradient(&forward, &GraphGradSpec::all(&forward))?;
//! let x = Tensor::new(DType::F32, vec![], vec![2.0])?;
//! let seed = Tensor::new(DType::F32, vec![], vec![1.0])?;
//! let g = grad.run(&forward, &[x], &[seed], &HashMap::new())?;
//! assert_eq!(g[0].data, vec![12.0]); // d(x^3)/dx at 2
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backward;
mod chunked;
mod clone;
pub mod fd;
mod program;
mod reach;
mod run;
mod scan;
mod spec;
mod while_loop;

pub use spec::{
    GradError, GraphGradInput, GraphGradRole, GraphGradSpec, GraphGradient, TapeMode, TapeParam,
    float_outputs,
};

use std::collections::HashMap;

use uop_codegen::index::Expr;

use crate::builder::GraphBuilder;
use crate::hierarchy::hierarchy;
use crate::infer::graph_dims;
use crate::ir::{Graph, NodeId, Ref, ValueType};

/// Forward refs to the refs holding their values in the gradient graph.
pub(crate) type Env = HashMap<Ref, Ref>;
/// Forward refs to their gradients (adjoints) in the gradient graph.
pub(crate) type Adj = HashMap<Ref, Ref>;

/// The state of one gradient construction.
pub(crate) struct Ctx<'f> {
    /// The forward graph.
    pub fwd: &'f Graph,
    /// The gradient graph being built.
    pub b: GraphBuilder,
    /// How `while` loops keep their states.
    pub mode: TapeMode,
    /// The forward graph's dimension names (each as itself), for typing calls.
    pub dims: Vec<(String, Expr)>,
    /// The tape capacities declared so far.
    pub tapes: Vec<TapeParam>,
    /// Forward refs a gradient can reach (depend on a wanted input).
    pub reach: reach::Reach,
    /// `$names` of the enclosing `parallel` bodies being built, innermost last.
    pub bound: Vec<String>,
    /// In a chunked gradient graph, once its chunk node is built: the looped rows
    /// and that chunk node.
    pub looping: Option<(Expr, NodeId)>,
}

/// Builds the gradient graph of `forward` for `spec`.
///
/// The gradient graph's inputs are the forward inputs (own names), one seed per
/// entry of `spec.seeds` (`g_` + the output's name), then the supplied outputs
/// (`spec.supplied`, own names); its outputs are the gradients with respect to the
/// inputs of `spec.wrt`, named `g_` + the input's name. With [`TapeMode::Stack`] it
/// declares one `$tape_N` parameter per `while` (see [`GraphGradient::tapes`]).
pub fn gradient(forward: &Graph, spec: &GraphGradSpec) -> Result<GraphGradient, GradError> {
    let (_, outputs) = spec.check(forward)?;
    let h = hierarchy(forward).map_err(|e| GradError::Graph(e.to_string()))?;
    let mut b = builder_for(forward)?;
    let mut env = Env::new();
    let input_node = forward
        .input_node()
        .ok_or_else(|| GradError::Graph("the graph has no Input node".into()))?;
    let mut roles = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for (k, ty) in input_node.outputs.iter().enumerate() {
        let name = input_name(input_node.name(k), k);
        let r = b.input_type(&name, ty.clone()).map_err(GradError::build)?;
        env.insert(Ref::new(input_node.id, k), r);
        roles.push(GraphGradInput {
            role: GraphGradRole::Input,
            index: k,
        });
        names.push(name);
    }
    let mut seeds = Vec::new();
    for &o in &spec.seeds {
        let (r, ty) = &outputs[o];
        let name = fresh_name(format!("g_{}", output_name(forward, o)), &mut names);
        let s = b.input_type(&name, ty.clone()).map_err(GradError::build)?;
        seeds.push((*r, s));
        roles.push(GraphGradInput {
            role: GraphGradRole::Seed,
            index: o,
        });
    }
    let mut supplied = Vec::new();
    for &o in &spec.supplied {
        let (r, ty) = &outputs[o];
        let name = fresh_name(output_name(forward, o), &mut names);
        let s = b.input_type(&name, ty.clone()).map_err(GradError::build)?;
        supplied.push((*r, s));
        roles.push(GraphGradInput {
            role: GraphGradRole::Supplied,
            index: o,
        });
    }
    let wrt: Vec<Ref> = spec
        .wrt
        .iter()
        .map(|&k| Ref::new(input_node.id, k))
        .collect();
    let mut cx = Ctx {
        fwd: forward,
        b,
        mode: spec.tape,
        dims: graph_dims(forward),
        tapes: Vec::new(),
        reach: reach::Reach::of(forward, &h, &wrt),
        bound: Vec::new(),
        looping: None,
    };
    let mut frame = clone::Frame::new(env);
    let chunked = forward
        .nodes()
        .iter()
        .any(|n| matches!(n.op, crate::ir::Op::Chunk { .. }));
    let looping = if chunked {
        let p = crate::looping::partitions(forward).map_err(|e| GradError::Graph(e.to_string()))?;
        let seed_refs: Vec<Ref> = seeds.iter().map(|s| s.1).collect();
        let supplied_refs: Vec<Ref> = supplied.iter().map(|s| s.1).collect();
        let c = cx.emit_chunked(&h.top, &p, &mut frame, &seed_refs, &supplied_refs)?;
        for ((_, s), rows) in seeds.iter_mut().zip(&c.seeds) {
            *s = *rows;
        }
        for ((_, s), rows) in supplied.iter_mut().zip(&c.supplied) {
            *s = *rows;
        }
        Some((p, c))
    } else {
        cx.emit_entries(&h.top, &mut frame, true)?;
        None
    };
    for (r, s) in &supplied {
        if let Some(r) = r {
            frame.env.insert(*r, *s);
        }
    }
    let mut adj = Adj::new();
    for (r, s) in seeds {
        if let Some(r) = r {
            cx.accumulate(&mut adj, r, s)?;
        }
    }
    match &looping {
        Some((p, c)) => {
            cx.backward_entries(&c.looped, &frame, &mut adj)?;
            cx.check_loop_inputs(&adj, p, input_node.id, c.chunk)?;
        }
        None => cx.backward_entries(&h.top, &frame, &mut adj)?,
    }
    let mut result = Vec::new();
    for (&k, w) in spec.wrt.iter().zip(&wrt) {
        let ty = &input_node.outputs[k];
        let g = match adj.get(w) {
            // A graph output must not be a graph input: copy a seed passed through.
            Some(g) if g.node != cx.b.graph().interface.input => *g,
            Some(g) => cx.copy(*g, ty)?,
            None => cx.zeros(ty)?,
        };
        result.push(g);
    }
    // The same gradient twice (two wanted inputs that are one value) gets a copy.
    for k in 1..result.len() {
        if result[..k].contains(&result[k]) {
            let ty = input_node.outputs[spec.wrt[k]].clone();
            result[k] = cx.copy(result[k], &ty)?;
        }
    }
    for (j, (&k, w)) in spec.wrt.iter().zip(&wrt).enumerate() {
        let mut g = result[j];
        if let Some((_, c)) = &looping {
            g = match adj.get(w) {
                Some(_) => cx.chunked_result(g, *w, c.chunk)?,
                // Zeros, in partition 0: taken once.
                None => cx.b.sum_chunks(g).map_err(GradError::build)?,
            };
        }
        let name = fresh_name(format!("g_{}", names[k]), &mut names);
        cx.b.name(g, &name).map_err(GradError::build)?;
        cx.b.output(g);
    }
    let graph = crate::random::without_dead(&cx.b.finish());
    crate::verify(&graph, crate::Checks::NONE)
        .map_err(|e| GradError::Graph(format!("the gradient graph does not verify: {e}")))?;
    Ok(GraphGradient {
        graph,
        inputs: roles,
        tapes: cx.tapes,
        spec: spec.clone(),
    })
}

/// A builder with `forward`'s params and size assertions.
fn builder_for(forward: &Graph) -> Result<GraphBuilder, GradError> {
    let mut b = GraphBuilder::with_registry(forward.dtype, forward.registry.clone());
    for p in &forward.params {
        b.param(p).map_err(GradError::build)?;
    }
    for (l, r) in &forward.assertions {
        b.assert_equal(l.clone(), r.clone());
    }
    Ok(b)
}

/// `base`, or `base_1`, `base_2`, ... : the first not in `names`, then added to them.
fn fresh_name(base: String, names: &mut Vec<String>) -> String {
    let mut name = base.clone();
    let mut n = 1;
    while names.contains(&name) {
        name = format!("{base}_{n}");
        n += 1;
    }
    names.push(name.clone());
    name
}

/// The name of forward input `k`.
fn input_name(name: Option<&str>, k: usize) -> String {
    name.map_or_else(|| format!("x{k}"), str::to_string)
}

/// The name of forward output `o` ([`Graph::output_name`]).
pub(crate) fn output_name(g: &Graph, o: usize) -> String {
    g.output_name(o)
}

impl<'f> Ctx<'f> {
    /// The forward node `id`.
    pub(crate) fn node(&self, id: NodeId) -> Result<&'f crate::ir::Node, GradError> {
        self.fwd
            .node(id)
            .ok_or_else(|| GradError::Graph(format!("{id} is not a node of the graph")))
    }

    /// The gradient-graph type of a gradient-graph ref.
    pub(crate) fn type_of(&self, r: Ref) -> Result<ValueType, GradError> {
        self.b.type_of(r).cloned().map_err(GradError::build)
    }

    /// Adds `g` to the gradient of forward ref `r`.
    pub(crate) fn accumulate(&mut self, adj: &mut Adj, r: Ref, g: Ref) -> Result<(), GradError> {
        let sum = match adj.get(&r) {
            None => g,
            Some(&prev) => self.b.op("add", &[prev, g]).map_err(GradError::build)?,
        };
        adj.insert(r, sum);
        Ok(())
    }
}
