//! The reference interpreter: evaluates a micro-op [`Program`] node by node on
//! concrete tensors, straight from the definitions in DESIGN.md §4. It is meant to
//! be obviously right, not fast.

use std::collections::HashMap;

use crate::index::{Bindings, EvalError, Expr};
pub use crate::run::RunError;
use crate::sizes::account_interpreter;
use crate::tensor::{Tensor, indices};
use crate::uop::{Accum, DType, NodeId, Operand, Program, ReduceOp, Uop};

/// Runs `program` on `inputs` (in declaration order) with integer `params`, returning
/// the outputs in order.
pub fn run(
    program: &Program,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
) -> Result<Vec<Tensor>, RunError> {
    let input_shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
    let mut env = program.bind(&input_shapes, params)?;
    for (id, t) in program.inputs.iter().zip(inputs) {
        let node = program.node(*id);
        if node.dtype != t.dtype {
            return Err(RunError::InputType {
                input: node.name.clone(),
                expected: node.dtype,
                found: t.dtype,
            });
        }
    }
    let shapes = program.shapes(&env)?;
    // Every node's value (and a copy of each input) is held until the end.
    account_interpreter(
        program
            .nodes
            .iter()
            .zip(&shapes)
            .map(|(n, s)| (n.name.as_str(), s.as_slice())),
    )?;
    let mut values: Vec<Option<Tensor>> = vec![None; program.nodes.len()];
    for (id, t) in program.inputs.iter().zip(inputs) {
        values[id.0] = Some(t.clone());
    }
    for (k, node) in program.nodes.iter().enumerate() {
        if node.op == Uop::Input {
            continue;
        }
        if let Uop::Reduce {
            op: op @ (ReduceOp::Argmax | ReduceOp::Argmin),
            axes,
            x,
        } = &node.op
            && let Some(&axis) = axes.iter().find(|&&a| shapes[x.0][a] == 0)
        {
            return Err(RunError::EmptyAxis {
                node: node.name.clone(),
                op: *op,
                axis,
                size: program.node(*x).shape[axis].to_string(),
            });
        }
        let fill = match node.op {
            Uop::ReindexReduce { op, .. } => op.identity(),
            _ => 0.0,
        };
        let out = Tensor::try_filled(&node.name, node.dtype, shapes[k].clone(), fill)?;
        let value =
            eval_node(&node.op, node.dtype, out, &Values(&values), &mut env).map_err(|error| {
                RunError::Eval {
                    node: node.name.clone(),
                    error,
                }
            })?;
        values[k] = Some(value);
    }
    Ok(program
        .outputs
        .iter()
        .map(|o| values[o.0].clone().expect("every node was evaluated"))
        .collect())
}

/// The values computed so far, by node.
struct Values<'a>(&'a [Option<Tensor>]);

impl Values<'_> {
    fn get(&self, id: NodeId) -> &Tensor {
        self.0[id.0]
            .as_ref()
            .expect("operands come before their users")
    }
}

fn eval_index(exprs: &[Expr], env: &Bindings) -> Result<Vec<i64>, EvalError> {
    exprs.iter().map(|e| e.eval(env)).collect()
}

fn operand_value(o: &Operand, at: usize, dtype: DType, env: &Bindings, values: &Values) -> f64 {
    match o {
        Operand::Node(n) => values.get(*n).data[at],
        Operand::Const(v) => dtype.round(*v),
        Operand::Param(p) => dtype.round(env.params[p] as f64),
    }
}

/// Computes a node's value into `out`, allocated with its shape (and filled with
/// the identity of a scatter's op).
fn eval_node(
    op: &Uop,
    dtype: DType,
    mut out: Tensor,
    values: &Values,
    env: &mut Bindings,
) -> Result<Tensor, EvalError> {
    let shape = out.shape.clone();
    match op {
        Uop::Input => unreachable!("inputs are bound, not evaluated"),
        Uop::Reindex { x, index, fill } => {
            let x = values.get(*x);
            for (at, i) in indices(&shape).enumerate() {
                env.indices = i;
                let src = eval_index(index, env)?;
                out.data[at] = x.get(&src).unwrap_or(dtype.round(*fill));
            }
        }
        Uop::ReindexReduce { x, index, op } => {
            let x = values.get(*x);
            for (at, i) in indices(&x.shape).enumerate() {
                env.indices = i;
                let dst = eval_index(index, env)?;
                if let Some(o) = out.offset(&dst) {
                    out.data[o] = dtype.round(op.combine(out.data[o], x.data[at]));
                }
            }
        }
        Uop::Unary { op, x } => {
            for (o, &v) in out.data.iter_mut().zip(&values.get(*x).data) {
                *o = dtype.round(op.apply(v));
            }
        }
        Uop::Binary { op, a, b } => {
            for at in 0..out.data.len() {
                let va = operand_value(a, at, dtype, env, values);
                let vb = operand_value(b, at, dtype, env, values);
                out.data[at] = dtype.round(op.apply(va, vb));
            }
        }
        Uop::Where { c, a, b } => {
            for at in 0..out.data.len() {
                let vc = operand_value(c, at, dtype, env, values);
                let pick = if vc != 0.0 { a } else { b };
                out.data[at] = operand_value(pick, at, dtype, env, values);
            }
        }
        Uop::Reduce { op, axes, x } => {
            let x = values.get(*x);
            let reduced: Vec<usize> = axes.iter().map(|&a| x.shape[a]).collect();
            let count: usize = reduced.iter().product();
            for (at, kept) in indices(&shape).enumerate() {
                let mut full = kept.clone();
                let values = indices(&reduced).map(|r| {
                    for (&axis, &v) in axes.iter().zip(&r) {
                        full[axis] = v;
                    }
                    x.get(&full).expect("reduced index is in range")
                });
                out.data[at] = reduce(*op, values, count, dtype);
            }
        }
        Uop::Select { axis, x, index } => {
            let (x, index) = (values.get(*x), values.get(*index));
            for (at, mut i) in indices(&shape).enumerate() {
                i[*axis] = index.data[at].floor() as i64;
                out.data[at] = x.get(&i).unwrap_or(0.0);
            }
        }
        Uop::Iota { axis } => {
            for (at, i) in indices(&shape).enumerate() {
                out.data[at] = dtype.round(i[*axis] as f64);
            }
        }
        Uop::Cast { x } => {
            for (o, &v) in out.data.iter_mut().zip(&values.get(*x).data) {
                *o = dtype.round(v);
            }
        }
    }
    Ok(out)
}

/// Folds the reduced values of one output element, in row-major order.
fn reduce(op: ReduceOp, values: impl Iterator<Item = f64>, count: usize, dtype: DType) -> f64 {
    let fold = |acc: Accum, values: &mut dyn Iterator<Item = f64>| {
        values.fold(acc.identity(), |a, v| dtype.round(acc.combine(a, v)))
    };
    let mut values = values;
    match op {
        ReduceOp::Sum => fold(Accum::Add, &mut values),
        ReduceOp::Prod => fold(Accum::Mul, &mut values),
        ReduceOp::Max => fold(Accum::Max, &mut values),
        ReduceOp::Min => fold(Accum::Min, &mut values),
        ReduceOp::Mean => dtype.round(fold(Accum::Add, &mut values) / count as f64),
        ReduceOp::Argmax | ReduceOp::Argmin => {
            // The first extreme element wins; a NaN beats everything (like torch.argmax).
            let better = |v: f64, best: f64| {
                if op == ReduceOp::Argmax {
                    v > best
                } else {
                    v < best
                }
            };
            let mut best: Option<(usize, f64)> = None;
            for (k, v) in values.enumerate() {
                let take = match best {
                    None => true,
                    Some((_, b)) => !b.is_nan() && (v.is_nan() || better(v, b)),
                };
                if take {
                    best = Some((k, v));
                }
            }
            best.map_or(f64::INFINITY, |(k, _)| dtype.round(k as f64))
        }
    }
}
