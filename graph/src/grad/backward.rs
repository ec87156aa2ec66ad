//! The backward pass over a scope: definitions in reverse, each adding its
//! contributions to the gradients of what it reads. Calls use the per-uop rules of
//! `uop_codegen::grad`; `call`, `if`, `case` and `parallel` build a super node of
//! the same kind over the gradients of their sub-functions (`while` is in
//! `while_loop.rs`).

use std::collections::HashMap;

use uop_codegen::grad::{GradRole, GradSpec, gradient};
use uop_codegen::index::Expr;
use uop_codegen::uop::{DType, Node as UopNode, NodeId as UopId, Program, Uop};

use super::clone::Frame;
use super::program::stacked;
use super::reach::free_refs;
use super::{Adj, Ctx, GradError};
use crate::hierarchy::{Entry, SubFunction};
use crate::infer::{call_program_in, fresh_dims};
use crate::ir::{Call, Interface, Node, Op, Ref, Source, ValueType};

/// The shape of a sub-function's gradient: which forward parameters get a
/// gradient, which enclosing values, and the seeds it receives.
pub(crate) struct SubGrad<'a> {
    /// Forward parameter positions whose gradients it returns.
    pub wanted: &'a [usize],
    /// Values of enclosing scopes whose gradients it returns (after the wanted).
    pub captures: &'a [Ref],
    /// Per result of the sub-function: the position of its seed among the seed
    /// parameters, if it has one.
    pub seeds: &'a [Option<usize>],
    /// The seed parameters' types.
    pub seed_types: &'a [ValueType],
    /// A `parallel` body: its index name and count (seeds are stacked).
    pub parallel: Option<(&'a str, &'a Expr)>,
}

impl Ctx<'_> {
    /// The backward pass of `entries`, in reverse, with forward values from `frame`.
    pub(crate) fn backward_entries(
        &mut self,
        entries: &[Entry],
        frame: &Frame,
        adj: &mut Adj,
    ) -> Result<(), GradError> {
        for e in entries.iter().rev() {
            self.backward_entry(e, frame, adj)?;
        }
        Ok(())
    }

    fn backward_entry(&mut self, e: &Entry, frame: &Frame, adj: &mut Adj) -> Result<(), GradError> {
        let node = self.node(e.node)?;
        let seeds: Vec<Option<Ref>> = (0..node.outputs.len())
            .map(|k| adj.get(&node.output(k)).copied())
            .collect();
        if seeds.iter().all(Option::is_none) {
            return Ok(());
        }
        match &node.op {
            Op::Input { .. } | Op::Const(_) | Op::Sink => Ok(()),
            Op::Call(call) => self.backward_call(node, call, seeds[0], frame, adj),
            // A chunk's values are rows of its inputs: their gradients are the same rows.
            Op::Chunk { .. } => {
                for (k, s) in seeds.iter().enumerate() {
                    if let (Some(s), Some(r)) = (s, node.inputs.get(k)) {
                        self.accumulate(adj, *r, *s)?;
                    }
                }
                Ok(())
            }
            Op::Kernel(_) | Op::SumChunks => Err(GradError::unsupported(
                node.id,
                format!("no gradient through a {} node", node.op.kind()),
            )),
            Op::While { .. } => self.backward_while(node, e, &seeds, frame, adj),
            Op::Scan { .. } => self.backward_scan(node, e, &seeds, frame, adj),
            Op::If { .. } | Op::Case { .. } | Op::NoInline { .. } | Op::Parallel { .. } => {
                self.backward_super(node, e, &seeds, frame, adj)
            }
        }
    }

    /// A call: its one-call program's gradient program, written as calls.
    fn backward_call(
        &mut self,
        node: &Node,
        call: &Call,
        seed: Option<Ref>,
        frame: &Frame,
        adj: &mut Adj,
    ) -> Result<(), GradError> {
        let Some(seed) = seed else { return Ok(()) };
        let wanted: Vec<usize> = (0..node.inputs.len())
            .filter(|&k| self.reach.has(node.inputs[k]))
            .filter(|&k| !node.inputs[..k].contains(&node.inputs[k]))
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let types: Vec<ValueType> =
            node.inputs
                .iter()
                .map(|r| {
                    self.fwd.type_of(*r).cloned().ok_or_else(|| {
                        GradError::Graph(format!("{}: reads a missing value", node.id))
                    })
                })
                .collect::<Result<_, _>>()?;
        let fwd = self.fwd;
        let (program, _) = call_program_in(
            fwd.dtype,
            &fwd.params,
            &fwd.registry,
            call,
            &types,
            &self.dims,
        )
        .map_err(|e| GradError::Graph(format!("{}: {}: {}", node.id, call.op, e.message())))?;
        let program = with_dim_inputs(program, &self.dims);
        let out = program.outputs[0];
        let spec = GradSpec {
            seeds: vec![out],
            wrt: wanted.iter().map(|&k| program.inputs[k]).collect(),
            supplied: vec![out],
        };
        let g = gradient(&program, &spec)
            .map_err(|e| GradError::Graph(format!("{}: gradient of {}: {e}", node.id, call.op)))?;
        let mut inputs = Vec::new();
        for i in &g.inputs {
            inputs.push(match i.role {
                GradRole::Input => match program.inputs.iter().position(|p| *p == i.forward) {
                    Some(k) if k < node.inputs.len() => Some(frame.get(node.inputs[k])?),
                    _ => None,
                },
                GradRole::Seed => Some(seed),
                GradRole::Supplied => Some(frame.get(node.output(0))?),
            });
        }
        let back: HashMap<String, Expr> = fresh_dims(&types)
            .into_iter()
            .map(|(e, n)| (n, e))
            .collect();
        let grads = self.emit(&g.program, &inputs, &back)?;
        for (&k, g) in wanted.iter().zip(grads) {
            self.accumulate(adj, node.inputs[k], g)?;
        }
        Ok(())
    }

    /// `if`, `case`, `call`, `parallel`: the same construct over the gradients of
    /// the sub-functions, reading the forward arguments and the seeds, returning
    /// the gradients of the arguments and of the enclosing values they read.
    fn backward_super(
        &mut self,
        node: &Node,
        e: &Entry,
        seeds: &[Option<Ref>],
        frame: &Frame,
        adj: &mut Adj,
    ) -> Result<(), GradError> {
        // Forward inputs before the arguments: the condition / selector.
        let lead = usize::from(matches!(node.op, Op::If { .. } | Op::Case { .. }));
        let args = &node.inputs[lead..];
        let wanted: Vec<usize> = (0..args.len())
            .filter(|&k| self.reach.has(args[k]))
            .collect();
        let mut captures: Vec<Ref> = Vec::new();
        for s in &e.subs {
            for r in free_refs(self.fwd, s) {
                if self.reach.has(r) && !captures.contains(&r) {
                    captures.push(r);
                }
            }
        }
        if wanted.is_empty() && captures.is_empty() {
            return Ok(());
        }
        let mut seed_at = Vec::new();
        let mut seed_refs = Vec::new();
        let mut seed_types = Vec::new();
        for (k, s) in seeds.iter().enumerate() {
            seed_at.push(s.map(|_| seed_refs.len()));
            if let Some(s) = s {
                seed_refs.push(*s);
                let mut ty = node.outputs[k].clone();
                if matches!(node.op, Op::Parallel { .. }) {
                    // The seed is stacked; the body's results are its rows.
                    ty.shape.remove(0);
                }
                seed_types.push(ty);
            }
        }
        let parallel = match &node.op {
            Op::Parallel { count, index, .. } => Some((index.as_str(), count)),
            _ => None,
        };
        let shape = SubGrad {
            wanted: &wanted,
            captures: &captures,
            seeds: &seed_at,
            seed_types: &seed_types,
            parallel,
        };
        let subs: Vec<Interface> = e
            .subs
            .iter()
            .map(|s| self.backward_sub(s, frame, &shape))
            .collect::<Result<_, _>>()?;
        let mut inputs: Vec<Ref> = Vec::new();
        for r in &node.inputs {
            inputs.push(frame.get(*r)?);
        }
        inputs.extend(&seed_refs);
        let op = match &node.op {
            Op::If { .. } => {
                let mut subs = subs.into_iter();
                let (Some(then), Some(else_)) = (subs.next(), subs.next()) else {
                    return Err(GradError::Graph(format!(
                        "{}: an if needs two branches",
                        node.id
                    )));
                };
                Op::If { then, else_ }
            }
            Op::Case { .. } => {
                let mut branches = subs;
                let arg_types: Vec<ValueType> = args
                    .iter()
                    .filter_map(|r| self.fwd.type_of(*r).cloned())
                    .collect();
                if arg_types == node.outputs {
                    // A negative selector passed the arguments through: pass the
                    // seeds through as their gradients.
                    branches.push(self.pass_through(e, &shape)?);
                    inputs[0] = self.pass_through_as(inputs[0], branches.len() - 1)?;
                }
                Op::Case { branches }
            }
            Op::NoInline { name, .. } => Op::NoInline {
                name: format!("{name}_grad"),
                body: subs
                    .into_iter()
                    .next()
                    .ok_or_else(|| GradError::Graph(format!("{}: a call needs a body", node.id)))?,
            },
            Op::Parallel { count, index, .. } => Op::Parallel {
                count: count.clone(),
                index: index.clone(),
                body: subs.into_iter().next().ok_or_else(|| {
                    GradError::Graph(format!("{}: a parallel needs a body", node.id))
                })?,
            },
            _ => return Err(GradError::Graph(format!("{}: not a super node", node.id))),
        };
        let out = self.add(op, inputs)?;
        let targets: Vec<Ref> = wanted
            .iter()
            .map(|&k| args[k])
            .chain(captures.iter().copied())
            .collect();
        for (t, g) in targets.into_iter().zip(out) {
            let g = match parallel {
                Some((_, count)) => {
                    let row = self.fwd.type_of(t).cloned().ok_or_else(|| {
                        GradError::Graph(format!("{}: reads a missing value", node.id))
                    })?;
                    self.sum_rows(g, &row, count)?
                }
                None => g,
            };
            self.accumulate(adj, t, g)?;
        }
        Ok(())
    }

    /// The gradient of forward sub-function `sub`: parameters (the index of a
    /// `parallel`), the forward parameters, the seeds; it recomputes the body, runs
    /// its backward pass and returns the gradients `shape` asks for.
    pub(crate) fn backward_sub(
        &mut self,
        sub: &SubFunction,
        frame: &Frame,
        shape: &SubGrad<'_>,
    ) -> Result<Interface, GradError> {
        let (mut names, mut types) = self.params_of(sub)?;
        let n = types.len();
        for (k, t) in shape.seed_types.iter().enumerate() {
            names.push(format!("g{k}"));
            types.push(match shape.parallel {
                Some((_, count)) => stacked(t, count),
                None => t.clone(),
            });
        }
        let (input, params) = self.open_sub(names, types.clone())?;
        let mut inner = frame.clone();
        for (k, p) in params.iter().take(n).enumerate() {
            inner.env.insert(Ref::new(sub.input, k), *p);
        }
        let index = shape.parallel.map(|(name, _)| (name, params[0]));
        let outputs = self.with_index(index, |cx| {
            cx.emit_entries(&sub.nodes, &mut inner, true)?;
            let owner = cx.node(sub.super_node)?;
            let results = owner.op.interfaces()[sub.branch].outputs.clone();
            let mut adj = Adj::new();
            for (k, s) in results.iter().enumerate() {
                let (Some(Source::Ref(r)), Some(Some(j))) = (Some(s), shape.seeds.get(k)) else {
                    continue;
                };
                let mut seed = params[n + j];
                if let Some((name, count)) = shape.parallel {
                    seed = cx.row_at(seed, &shape.seed_types[*j], count, name)?;
                }
                if r.node == sub.input || cx.reach.has(*r) {
                    cx.accumulate(&mut adj, *r, seed)?;
                }
            }
            cx.backward_entries(&sub.nodes, &inner, &mut adj)?;
            let offset = usize::from(shape.parallel.is_some());
            let mut outputs = Vec::new();
            for &k in shape.wanted {
                let p = Ref::new(sub.input, k + offset);
                outputs.push(Source::Ref(cx.gradient_or_zeros(
                    &adj,
                    p,
                    &types[k + offset],
                )?));
            }
            for c in shape.captures {
                let ty =
                    cx.fwd.type_of(*c).cloned().ok_or_else(|| {
                        GradError::Graph(format!("{c} is not a value of the graph"))
                    })?;
                outputs.push(Source::Ref(cx.gradient_or_zeros(&adj, *c, &ty)?));
            }
            Ok(outputs)
        })?;
        Ok(Interface { input, outputs })
    }

    /// The extra branch of a `case` gradient for a negative selector: each wanted
    /// argument's gradient is its result's seed (zeros without one), captures get
    /// zeros.
    fn pass_through(&mut self, e: &Entry, shape: &SubGrad<'_>) -> Result<Interface, GradError> {
        let sub = e
            .subs
            .first()
            .ok_or_else(|| GradError::Graph(format!("{}: a case needs a branch", e.node)))?;
        let (mut names, mut types) = self.params_of(sub)?;
        let n = types.len();
        for (k, t) in shape.seed_types.iter().enumerate() {
            names.push(format!("g{k}"));
            types.push(t.clone());
        }
        let (input, params) = self.open_sub(names, types.clone())?;
        let mut outputs = Vec::new();
        for &k in shape.wanted {
            let g = match shape.seeds.get(k).copied().flatten() {
                Some(j) => params[n + j],
                None => self.zeros(&types[k])?,
            };
            outputs.push(Source::Ref(g));
        }
        for c in shape.captures {
            let ty = self
                .fwd
                .type_of(*c)
                .cloned()
                .ok_or_else(|| GradError::Graph(format!("{c} is not a value of the graph")))?;
            outputs.push(Source::Ref(self.zeros(&ty)?));
        }
        Ok(Interface { input, outputs })
    }

    /// The gradient of `r` in `adj`, or zeros of `ty`.
    pub(crate) fn gradient_or_zeros(
        &mut self,
        adj: &Adj,
        r: Ref,
        ty: &ValueType,
    ) -> Result<Ref, GradError> {
        match adj.get(&r) {
            Some(g) => Ok(*g),
            None => self.zeros(ty),
        }
    }
}

/// `program` with one more input (`_dimsK: i32[D]`) for each graph dimension `D`
/// its shapes may name that no input declares (a call's list naming `T` where no
/// input has it): the gradient program must know every size it uses.
fn with_dim_inputs(mut program: Program, dims: &[(String, Expr)]) -> Program {
    let mut declared: Vec<String> = Vec::new();
    for i in &program.inputs {
        for d in &program.node(*i).shape {
            d.visit(&mut |e| {
                if let Expr::Name(n) = e {
                    declared.push(n.clone());
                }
            });
        }
    }
    let missing: Vec<&String> = dims
        .iter()
        .map(|(n, _)| n)
        .filter(|n| !declared.contains(n))
        .collect();
    if missing.is_empty() {
        return program;
    }
    let at = program.inputs.len();
    let shift = missing.len();
    let renumber = |id: UopId| if id.0 >= at { UopId(id.0 + shift) } else { id };
    let mut nodes: Vec<UopNode> = program.nodes[..at].to_vec();
    for (k, n) in missing.iter().enumerate() {
        nodes.push(UopNode {
            name: format!("_dims{k}"),
            op: Uop::Input,
            shape: vec![Expr::name((*n).clone())],
            dtype: DType::I32,
        });
    }
    for node in &program.nodes[at..] {
        nodes.push(UopNode {
            op: node.op.map_nodes(&renumber),
            ..node.clone()
        });
    }
    program.nodes = nodes;
    program.inputs.extend((at..at + shift).map(UopId));
    program.outputs = program.outputs.iter().map(|o| renumber(*o)).collect();
    program
}
