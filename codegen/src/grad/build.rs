//! Building the gradient program: replay the forward program in a new builder,
//! seed the outputs' gradients, run the rules in reverse topological order summing
//! contributions, then keep only the inputs the result reads.

use std::collections::{BTreeSet, HashMap, HashSet};

use thiserror::Error;

use crate::index::Expr;
use crate::interp::{self, RunError};
use crate::tensor::Tensor;
use crate::uop::{BinaryOp, Builder, DType, Node, NodeId, Operand, Program, Uop, UopError};

use super::rules::{Ctx, contributions, zeros};

/// What to differentiate: the gradient program computes, for every input in
/// `wrt`, the gradient of `sum over seeds s of sum(g_s * s)`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GradSpec {
    /// Forward outputs whose gradients the caller passes in (`g_y`); outputs not
    /// listed contribute nothing.
    pub seeds: Vec<NodeId>,
    /// Float forward inputs whose gradients the program returns (`g_x`), in order.
    pub wrt: Vec<NodeId>,
    /// Forward values (outputs, intermediates or inputs) the caller passes in instead
    /// of having the gradient program recompute them. Supplying an input changes nothing.
    pub supplied: Vec<NodeId>,
}

/// What an input of the gradient program is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GradRole {
    /// A forward input, under its own name.
    Input,
    /// The gradient of the loss with respect to a forward output (`g_` + its name).
    Seed,
    /// A supplied forward value, under its own name.
    Supplied,
}

/// One input of the gradient program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GradInput {
    /// What it is.
    pub role: GradRole,
    /// The forward node it stands for (for a seed: the output it is the gradient of).
    pub forward: NodeId,
    /// False when only its shape is needed (to give a dimension its size): any data
    /// of that shape will do.
    pub reads_data: bool,
}

/// The `|g(y)|x|y| -> |g(x)|` bitmask: which forward values the gradient program
/// actually reads. Each list holds forward node ids, in gradient-program input order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Required {
    /// Forward inputs whose data is read.
    pub inputs: Vec<NodeId>,
    /// Outputs whose seeds are read.
    pub seeds: Vec<NodeId>,
    /// Supplied forward values that are read.
    pub supplied: Vec<NodeId>,
}

/// A gradient program and how to call it.
#[derive(Clone, Debug, PartialEq)]
pub struct Gradient {
    /// The gradient program: inputs as described by `inputs`, outputs the gradients
    /// with respect to `spec.wrt` in order.
    pub program: Program,
    /// One entry per input of `program`, in order.
    pub inputs: Vec<GradInput>,
    /// What the program reads.
    pub required: Required,
    /// The request it answers.
    pub spec: GradSpec,
}

/// A gradient cannot be built or evaluated as asked.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum GradError {
    /// A node id does not belong to the forward program.
    #[error("node {0} is not a node of the forward program")]
    NoSuchNode(usize),
    /// A gradient was asked with respect to something that is not an input.
    #[error("`{0}` is not an input of the program; gradients are taken with respect to inputs")]
    NotAnInput(String),
    /// A seed was given for something that is not an output.
    #[error("`{0}` is not an output of the program; seeds are gradients of outputs")]
    NotAnOutput(String),
    /// Integer tensors have no gradient.
    #[error("`{name}` is {dtype}: only float tensors have gradients")]
    NotFloat {
        /// The node.
        name: String,
        /// Its element type.
        dtype: DType,
    },
    /// A node is listed twice in one list of the request.
    #[error("`{name}` is listed twice in {list}")]
    Duplicate {
        /// The node.
        name: String,
        /// Which list (`wrt`, `seeds`, `supplied`).
        list: &'static str,
    },
    /// No gradient was asked for.
    #[error("no gradient asked for: `wrt` is empty")]
    NothingWanted,
    /// Building the gradient program failed: a bug in a gradient rule.
    #[error("building the gradient program: {0}")]
    Build(#[from] UopError),
    /// Wrong number of tensors passed to [`Gradient::arguments`].
    #[error("expected {expected} {what}, got {found}")]
    Count {
        /// Inputs or seeds.
        what: &'static str,
        /// How many the program needs.
        expected: usize,
        /// How many were given.
        found: usize,
    },
    /// Running the forward or gradient program failed.
    #[error(transparent)]
    Run(#[from] RunError),
}

/// The program with every float tensor in f64 (for finite-difference checks).
pub fn to_f64(program: &Program) -> Program {
    let mut p = program.clone();
    p.dtype = DType::F64;
    for n in &mut p.nodes {
        if n.dtype.is_float() {
            n.dtype = DType::F64;
        }
    }
    p
}

/// Builds the gradient program of `forward` for `spec` (naming: see the module docs).
///
/// Forward values are recomputed in the gradient program unless supplied; whatever
/// the gradients do not need is dropped, and inputs the result does not read are
/// removed (a forward input stays, with [`GradInput::reads_data`] false, when it
/// alone gives a needed dimension its size). A wanted input no gradient reaches gets
/// zeros of its shape.
pub fn gradient(forward: &Program, spec: &GradSpec) -> Result<Gradient, GradError> {
    check_spec(forward, spec)?;
    let mut names = Names::new(forward);
    let mut b = Builder::new(forward.dtype);
    for p in &forward.params {
        b.param(p)?;
    }
    let n = forward.nodes.len();
    // value[k]: the gradient-program node holding forward node k.
    let mut value = vec![NodeId(usize::MAX); n];
    let mut declared: Vec<(NodeId, GradInput)> = Vec::new();
    for &id in &forward.inputs {
        let node = forward.node(id);
        value[id.0] = b.input_exprs(&node.name, node.dtype, node.shape.clone())?;
        declared.push((value[id.0], grad_input(GradRole::Input, id)));
    }
    let mut own_assertions = Vec::new();
    let mut grads: Vec<Option<NodeId>> = vec![None; n];
    for &s in &spec.seeds {
        let node = forward.node(s);
        let name = names.fresh(&format!("g_{}", node.name));
        let (input, v) = declare_like(&mut b, &mut names, &name, node, &mut own_assertions)?;
        grads[s.0] = Some(v);
        declared.push((input, grad_input(GradRole::Seed, s)));
    }
    let supplied: Vec<NodeId> = spec
        .supplied
        .iter()
        .copied()
        .filter(|s| forward.node(*s).op != Uop::Input)
        .collect();
    for &s in &supplied {
        let node = forward.node(s);
        let (input, v) = declare_like(&mut b, &mut names, &node.name, node, &mut own_assertions)?;
        value[s.0] = v;
        declared.push((input, grad_input(GradRole::Supplied, s)));
    }
    for (l, r) in &forward.assertions {
        b.assert_equal(l.clone(), r.clone())?;
    }
    for (k, node) in forward.nodes.iter().enumerate() {
        if node.op == Uop::Input || supplied.contains(&NodeId(k)) {
            continue;
        }
        value[k] = replay(&mut b, node, &value)?;
        b.set_name(value[k], &node.name)?;
    }

    // needs[k]: some wanted input reaches node k, so its gradient matters.
    let mut needs = vec![false; n];
    for w in &spec.wrt {
        needs[w.0] = true;
    }
    for (k, node) in forward.nodes.iter().enumerate() {
        if node.dtype.is_float() && node.op.inputs().iter().any(|i| needs[i.0]) {
            needs[k] = true;
        }
    }
    for k in (0..n).rev() {
        let Some(g) = grads[k] else { continue };
        if !needs[k] || forward.nodes[k].op == Uop::Input {
            continue;
        }
        let mut cx = Ctx {
            b: &mut b,
            forward,
            value: &value,
        };
        for (to, c) in contributions(&mut cx, NodeId(k), g, &|i| needs[i.0])? {
            grads[to.0] = Some(match grads[to.0] {
                None => c,
                Some(prev) => b.binary(BinaryOp::Add, prev, c)?,
            });
        }
    }

    let mut outputs: Vec<NodeId> = Vec::new();
    for w in &spec.wrt {
        let node = forward.node(*w);
        let mut g = match grads[w.0] {
            Some(g) => g,
            None => zeros(&mut b, node.shape.clone())?,
        };
        // An output must be a node of its own: copy seeds passed straight through
        // and gradients already returned for another input.
        if b.node(g).op == Uop::Input || outputs.contains(&g) {
            let index = (0..node.shape.len()).map(Expr::Index).collect();
            g = b.reindex_exprs(g, node.shape.clone(), &[], index, 0.0)?;
        }
        let name = names.fresh(&format!("g_{}", node.name));
        b.set_name(g, &name)?;
        outputs.push(g);
    }
    let declared_ids: Vec<NodeId> = declared.iter().map(|(id, _)| *id).collect();
    let program = b.combine(&declared_ids, &outputs)?;
    let roles: Vec<GradInput> = declared.iter().map(|(_, r)| *r).collect();
    let (program, inputs) = prune_inputs(program, roles, &own_assertions);
    let mut required = Required::default();
    for i in inputs.iter().filter(|i| i.reads_data) {
        match i.role {
            GradRole::Input => required.inputs.push(i.forward),
            GradRole::Seed => required.seeds.push(i.forward),
            GradRole::Supplied => required.supplied.push(i.forward),
        }
    }
    Ok(Gradient {
        program,
        inputs,
        required,
        spec: spec.clone(),
    })
}

fn grad_input(role: GradRole, forward: NodeId) -> GradInput {
    GradInput {
        role,
        forward,
        reads_data: true,
    }
}

fn check_spec(forward: &Program, spec: &GradSpec) -> Result<(), GradError> {
    let lists: [(&'static str, &[NodeId]); 3] = [
        ("wrt", &spec.wrt),
        ("seeds", &spec.seeds),
        ("supplied", &spec.supplied),
    ];
    for (list, ids) in lists {
        for (k, id) in ids.iter().enumerate() {
            if id.0 >= forward.nodes.len() {
                return Err(GradError::NoSuchNode(id.0));
            }
            let node = forward.node(*id);
            if ids[..k].contains(id) {
                return Err(GradError::Duplicate {
                    name: node.name.clone(),
                    list,
                });
            }
            if list == "wrt" && !forward.inputs.contains(id) {
                return Err(GradError::NotAnInput(node.name.clone()));
            }
            if list == "seeds" && !forward.outputs.contains(id) {
                return Err(GradError::NotAnOutput(node.name.clone()));
            }
            if list != "supplied" && !node.dtype.is_float() {
                return Err(GradError::NotFloat {
                    name: node.name.clone(),
                    dtype: node.dtype,
                });
            }
        }
    }
    if spec.wrt.is_empty() {
        return Err(GradError::NothingWanted);
    }
    Ok(())
}

/// Names already used by the forward program (tensors and dimensions), and those
/// handed out since.
struct Names(HashSet<String>);

impl Names {
    fn new(forward: &Program) -> Self {
        let mut taken: HashSet<String> = forward.nodes.iter().map(|n| n.name.clone()).collect();
        for n in &forward.nodes {
            for d in &n.shape {
                taken.extend(names_in(d));
            }
        }
        Names(taken)
    }

    /// `base`, or `base_1`, `base_2`, ... if taken; the result is taken from now on.
    fn fresh(&mut self, base: &str) -> String {
        let name = if self.0.contains(base) {
            (1..)
                .map(|k| format!("{base}_{k}"))
                .find(|c| !self.0.contains(c))
                .unwrap_or_else(|| base.to_string())
        } else {
            base.to_string()
        };
        self.0.insert(name.clone());
        name
    }
}

fn names_in(e: &Expr) -> Vec<String> {
    let mut out = Vec::new();
    e.visit(&mut |leaf| {
        if let Expr::Name(n) = leaf {
            out.push(n.clone());
        }
    });
    out
}

/// Declares an input standing for forward node `like`, returning the input and the
/// node that has exactly `like`'s symbolic shape. An input's dims must be names or
/// literals, so a size like `H - $k + 1` becomes a fresh dimension, an assertion that
/// the two agree, and an identity reindex back to the original shape.
fn declare_like(
    b: &mut Builder,
    names: &mut Names,
    name: &str,
    like: &Node,
    own_assertions: &mut Vec<(Expr, Expr)>,
) -> Result<(NodeId, NodeId), UopError> {
    let mut dims = Vec::new();
    let mut pending = Vec::new();
    for (k, d) in like.shape.iter().enumerate() {
        match d {
            Expr::Int(v) if *v >= 0 => dims.push(d.clone()),
            Expr::Name(n) if b.has_dim(n) => dims.push(d.clone()),
            other => {
                let fresh = Expr::name(names.fresh(&format!("{name}_{k}")));
                pending.push((fresh.clone(), other.clone()));
                dims.push(fresh);
            }
        }
    }
    let input = b.input_exprs(name, like.dtype, dims)?;
    if pending.is_empty() {
        return Ok((input, input));
    }
    for (fresh, size) in pending {
        b.assert_equal(fresh.clone(), size.clone())?;
        own_assertions.push((fresh, size.simplify()));
    }
    let index = (0..like.shape.len()).map(Expr::Index).collect();
    let shaped = b.reindex_exprs(input, like.shape.clone(), &[], index, 0.0)?;
    Ok((input, shaped))
}

/// Builds forward `node` again in `b`, operands taken from `value`.
fn replay(b: &mut Builder, node: &Node, value: &[NodeId]) -> Result<NodeId, UopError> {
    let v = |n: &NodeId| value[n.0];
    let op = |o: &Operand| match o {
        Operand::Node(n) => Operand::Node(value[n.0]),
        other => other.clone(),
    };
    let shape = node.shape.clone();
    match &node.op {
        Uop::Input => Err(UopError::Combine(format!(
            "input `{}` cannot be replayed",
            node.name
        ))),
        Uop::Reindex { x, index, fill } => b.reindex_exprs(v(x), shape, &[], index.clone(), *fill),
        Uop::ReindexReduce { x, index, op } => {
            b.reindex_reduce_exprs(v(x), shape, &[], index.clone(), *op)
        }
        Uop::Unary { op, x } => b.unary(*op, v(x)),
        Uop::Binary { op: o, a, b: rhs } => b.binary(*o, op(a), op(rhs)),
        Uop::Where { c, a, b: rhs } => b.where_(op(c), op(a), op(rhs)),
        Uop::Reduce { op, axes, x } => b.reduce(*op, axes, v(x)),
        Uop::Select { axis, x, index } => b.select(*axis, v(x), v(index)),
        Uop::Iota { axis } => b.iota_exprs(shape, &[], *axis),
        Uop::Cast { x } => b.cast(v(x), node.dtype),
    }
}

/// Drops the inputs of `program` that are neither read nor needed for a dimension's
/// size, with the assertions that mention what they bound.
fn prune_inputs(
    program: Program,
    roles: Vec<GradInput>,
    own_assertions: &[(Expr, Expr)],
) -> (Program, Vec<GradInput>) {
    let unused = program.unused_inputs();
    let mut keep: Vec<bool> = program.inputs.iter().map(|i| !unused.contains(i)).collect();
    let dims_of = |k: usize| -> Vec<String> {
        program
            .node(program.inputs[k])
            .shape
            .iter()
            .flat_map(names_in)
            .collect()
    };
    // Names the computation mentions, and the sizes kept seeds / supplied values assert.
    let mut needed: BTreeSet<String> = BTreeSet::new();
    for node in program.nodes.iter().filter(|n| n.op != Uop::Input) {
        let index: &[Expr] = match &node.op {
            Uop::Reindex { index, .. } | Uop::ReindexReduce { index, .. } => index,
            _ => &[],
        };
        for e in node.shape.iter().chain(index) {
            needed.extend(names_in(e));
        }
    }
    for (fresh, size) in own_assertions {
        if (0..keep.len())
            .any(|k| keep[k] && dims_of(k).iter().any(|d| names_in(fresh).contains(d)))
        {
            needed.extend(names_in(size));
        }
    }
    for name in &needed {
        let bound = (0..keep.len()).any(|k| keep[k] && dims_of(k).contains(name));
        if !bound && let Some(k) = (0..keep.len()).find(|&k| dims_of(k).contains(name)) {
            keep[k] = true;
        }
    }
    let bound: HashSet<String> = (0..keep.len())
        .filter(|&k| keep[k])
        .flat_map(dims_of)
        .collect();
    let roles: Vec<GradInput> = roles
        .into_iter()
        .enumerate()
        .filter(|(k, _)| keep[*k])
        .map(|(k, r)| GradInput {
            reads_data: !unused.contains(&program.inputs[k]),
            ..r
        })
        .collect();
    let mut new_id = HashMap::new();
    let mut nodes = Vec::new();
    for (k, node) in program.nodes.iter().enumerate() {
        let is_input = k < program.inputs.len();
        if is_input && !keep[k] {
            continue;
        }
        new_id.insert(k, NodeId(nodes.len()));
        nodes.push(node.clone());
    }
    for node in &mut nodes {
        node.op = node.op.map_nodes(&|n| new_id[&n.0]);
    }
    let inputs_kept = roles.len();
    let assertions = program
        .assertions
        .iter()
        .filter(|(l, r)| {
            names_in(l)
                .iter()
                .chain(&names_in(r))
                .all(|n| bound.contains(n))
        })
        .cloned()
        .collect();
    let pruned = Program {
        dtype: program.dtype,
        params: program.params.clone(),
        inputs: (0..inputs_kept).map(NodeId).collect(),
        outputs: program.outputs.iter().map(|o| new_id[&o.0]).collect(),
        nodes,
        assertions,
    };
    (pruned, roles)
}

impl Gradient {
    /// The gradient program's arguments, in order: forward `inputs` (in the forward
    /// program's order), `seeds` (in `spec.seeds` order) and supplied values, which
    /// are computed here with the reference interpreter.
    pub fn arguments(
        &self,
        forward: &Program,
        inputs: &[Tensor],
        seeds: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<Vec<Tensor>, GradError> {
        if inputs.len() != forward.inputs.len() {
            return Err(GradError::Count {
                what: "forward inputs",
                expected: forward.inputs.len(),
                found: inputs.len(),
            });
        }
        if seeds.len() != self.spec.seeds.len() {
            return Err(GradError::Count {
                what: "seeds",
                expected: self.spec.seeds.len(),
                found: seeds.len(),
            });
        }
        let wanted: Vec<NodeId> = self
            .inputs
            .iter()
            .filter(|i| i.role == GradRole::Supplied)
            .map(|i| i.forward)
            .collect();
        let values = if wanted.is_empty() {
            Vec::new()
        } else {
            let mut probe = forward.clone();
            probe.outputs = wanted.clone();
            interp::run(&probe, inputs, params)?
        };
        let mut args = Vec::with_capacity(self.inputs.len());
        for i in &self.inputs {
            let position = |list: &[NodeId]| list.iter().position(|n| *n == i.forward).unwrap_or(0);
            args.push(match i.role {
                GradRole::Input => inputs[position(&forward.inputs)].clone(),
                GradRole::Seed => seeds[position(&self.spec.seeds)].clone(),
                GradRole::Supplied => values[position(&wanted)].clone(),
            });
        }
        Ok(args)
    }

    /// Runs the gradient program with the reference interpreter on the forward
    /// `inputs` and `seeds` (see [`Gradient::arguments`]); returns one gradient per
    /// entry of `spec.wrt`.
    pub fn run(
        &self,
        forward: &Program,
        inputs: &[Tensor],
        seeds: &[Tensor],
        params: &HashMap<String, i64>,
    ) -> Result<Vec<Tensor>, GradError> {
        let args = self.arguments(forward, inputs, seeds, params)?;
        Ok(interp::run(&self.program, &args, params)?)
    }
}
