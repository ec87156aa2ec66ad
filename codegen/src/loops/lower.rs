//! Lowering a micro-op [`Program`] to the loop IR ("emit"): one tensor per node and,
//! in node order, the block(s) computing it. The result is deliberately naive — every
//! uop gets its own loop nest, every intermediate is a tensor — because fusion,
//! substitution and bound-check elimination are separate passes.
//!
//! Accesses start checked, except those in range by construction: every subscript is
//! a loop variable running over exactly that axis of the accessed tensor, or the
//! literal 0 on an axis of literal size 1 (the kept position of a reduction).

use std::collections::HashSet;

use crate::index::{Expr, IndexOp};
use crate::uop::{Accum, BinaryOp, DType, NodeId, Operand, Program, ReduceOp, Uop};

use super::analysis::walk::fresh_loops;
use super::ir::{
    Access, Block, Carried, Loop, LoopProgram, Stmt, Subscript, TensorDecl, TensorId, TensorKind,
    Value, VarId,
};

/// Lowers `program` to loop IR.
///
/// Each node except an input becomes a tensor (an output if the program returns it,
/// a temporary otherwise) and one block per node is emitted in node order; a
/// `reindex_reduce` adds a block resetting its output to the identity first, an
/// argmax / argmin a block computing the extreme first. An output that is an input
/// itself, or a node returned a second time, gets its own output tensor and a copy block.
///
/// ```
/// use uop_codegen::{loops, uop::{Builder, DType, UnaryOp}};
/// let mut b = Builder::new(DType::F32);
/// let x = b.input("x", DType::F32, &["N"])?;
/// let y = b.unary(UnaryOp::Exp, x)?;
/// let program = b.combine(&[x], &[y])?;
/// let lowered = loops::lower(&program);
/// assert_eq!(lowered.blocks.len(), 1);
/// assert!(lowered.to_string().contains("t1[i0] = exp(x[i0])"));
/// # Ok::<(), uop_codegen::uop::UopError>(())
/// ```
pub fn lower(program: &Program) -> LoopProgram {
    let mut l = Lowering::new(program);
    let slots = l.assign_outputs();
    for (k, node) in program.nodes.iter().enumerate() {
        let out = TensorId(k);
        match &node.op {
            Uop::Input => {}
            Uop::Reindex { x, index, fill } => l.reindex(out, *x, index, *fill),
            Uop::ReindexReduce { x, index, op } => l.reindex_reduce(out, *x, index, *op),
            Uop::Unary { op, x } => {
                let op = *op;
                l.elementwise(out, &[Operand::Node(*x)], |v| {
                    Value::Unary(op, Box::new(v[0].clone()))
                });
            }
            Uop::Binary { op, a, b } => {
                let op = *op;
                l.elementwise(out, &[a.clone(), b.clone()], |v| {
                    Value::Binary(op, Box::new(v[0].clone()), Box::new(v[1].clone()))
                });
            }
            Uop::Where { c, a, b } => {
                l.elementwise(out, &[c.clone(), a.clone(), b.clone()], |v| {
                    Value::Where(
                        Box::new(v[0].clone()),
                        Box::new(v[1].clone()),
                        Box::new(v[2].clone()),
                    )
                });
            }
            Uop::Reduce { op, axes, x } => l.reduce(out, *op, axes, *x),
            Uop::Select { axis, x, index } => l.select(out, *axis, *x, *index),
            Uop::Iota { axis } => l.iota(out, *axis),
            // The store converts to `out`'s element type (`DType::round`).
            Uop::Cast { x } => l.elementwise(out, &[Operand::Node(*x)], |v| v[0].clone()),
        }
        for (slot, &node_id) in slots.iter().zip(&program.outputs) {
            if node_id.0 == k && *slot != out {
                l.elementwise(*slot, &[Operand::Node(node_id)], |v| v[0].clone());
            }
        }
    }
    let inputs = program.inputs.iter().map(|n| TensorId(n.0)).collect();
    let mut assertions = program.assertions.clone();
    assertions.extend(nonempty_arg_axes(program));
    LoopProgram {
        dtype: program.dtype,
        params: program.params.clone(),
        tensors: l.tensors,
        inputs,
        outputs: slots,
        blocks: l.blocks,
        assertions,
    }
}

/// `argmax` / `argmin` over an empty axis has no answer (numpy and torch refuse it):
/// for each such axis whose size is not a positive literal, the entry assertion
/// `min(size, 1) == 1`, which every backend checks before running.
fn nonempty_arg_axes(program: &Program) -> Vec<(Expr, Expr)> {
    let mut out: Vec<(Expr, Expr)> = Vec::new();
    for node in &program.nodes {
        let Uop::Reduce {
            op: ReduceOp::Argmax | ReduceOp::Argmin,
            axes,
            x,
        } = &node.op
        else {
            continue;
        };
        for &a in axes {
            let size = program.node(*x).shape[a].clone();
            if matches!(size, Expr::Int(v) if v > 0) {
                continue;
            }
            let check = (
                Expr::Bin(IndexOp::Min, Box::new(size), Box::new(Expr::Int(1))),
                Expr::Int(1),
            );
            if !out.contains(&check) {
                out.push(check);
            }
        }
    }
    out
}

/// Lowering state: the tensors and blocks so far and the next free loop and variable ids.
struct Lowering<'p> {
    program: &'p Program,
    dtype: DType,
    tensors: Vec<TensorDecl>,
    blocks: Vec<Block>,
    /// Every tensor name in use, so added tensors get fresh ones.
    names: HashSet<String>,
    next_loop: usize,
    next_var: usize,
}

impl<'p> Lowering<'p> {
    /// One tensor per node, with `TensorId(k)` for node `k`.
    fn new(program: &'p Program) -> Self {
        let tensors = program
            .nodes
            .iter()
            .map(|n| TensorDecl {
                name: n.name.clone(),
                shape: n.shape.clone(),
                dtype: n.dtype,
                kind: if n.op == Uop::Input {
                    TensorKind::Input
                } else {
                    TensorKind::Temp
                },
                row_local: None,
            })
            .collect();
        Lowering {
            program,
            dtype: program.dtype,
            tensors,
            blocks: Vec::new(),
            names: program.nodes.iter().map(|n| n.name.clone()).collect(),
            next_loop: 0,
            next_var: 0,
        }
    }

    /// The output tensor of each output slot: the node's own tensor the first time a
    /// computed node is returned, otherwise a fresh tensor that a copy block fills
    /// (an input cannot double as an output, and one tensor cannot be two outputs).
    fn assign_outputs(&mut self) -> Vec<TensorId> {
        let mut slots = Vec::with_capacity(self.program.outputs.len());
        // The signature names the outputs; a copy's tensor takes its name from there.
        let signature = self.program.signature();
        for (&node, spec) in self.program.outputs.iter().zip(&signature.outputs) {
            let own = TensorId(node.0);
            if self.tensors[own.0].kind == TensorKind::Temp {
                self.tensors[own.0].kind = TensorKind::Output;
                slots.push(own);
            } else {
                let decl = self.tensors[own.0].clone();
                let name = spec.name.clone();
                self.names.insert(name.clone());
                slots.push(self.add_tensor(TensorDecl {
                    name,
                    kind: TensorKind::Output,
                    ..decl
                }));
            }
        }
        slots
    }

    /// `base`, or `base_1`, `base_2`, ... if taken.
    fn fresh_name(&mut self, base: &str) -> String {
        let name = std::iter::once(base.to_string())
            .chain((1..).map(|n| format!("{base}_{n}")))
            .find(|c| !self.names.contains(c))
            .unwrap_or_else(|| base.to_string());
        self.names.insert(name.clone());
        name
    }

    fn add_tensor(&mut self, decl: TensorDecl) -> TensorId {
        self.tensors.push(decl);
        TensorId(self.tensors.len() - 1)
    }

    fn shape(&self, t: TensorId) -> Vec<Expr> {
        self.tensors[t.0].shape.clone()
    }

    fn tensor_of(&self, node: NodeId) -> TensorId {
        TensorId(node.0)
    }

    /// A loop per size, outermost first, with fresh ids; returns the loops and their variables.
    fn nest(&mut self, sizes: &[Expr]) -> (Vec<Loop>, Vec<Expr>) {
        let loops = fresh_loops(sizes, &mut self.next_loop);
        let vars = loops.iter().map(|l| Expr::Index(l.id.0)).collect();
        (loops, vars)
    }

    fn carried(&mut self, op: Accum) -> Carried {
        let var = VarId(self.next_var);
        self.next_var += 1;
        Carried { var, op }
    }

    /// An access to `tensor` at `index` (expressions over the loop variables of `loops`),
    /// checked unless in range by construction.
    fn access(&self, tensor: TensorId, index: Vec<Expr>, loops: &[Loop]) -> Access {
        let shape = &self.tensors[tensor.0].shape;
        let in_range = index.len() == shape.len()
            && index.iter().zip(shape).all(|(i, size)| match i {
                Expr::Index(id) => loops
                    .iter()
                    .any(|l| l.id.0 == *id && l.start == Expr::Int(0) && l.end == *size),
                Expr::Int(0) => *size == Expr::Int(1),
                _ => false,
            });
        Access {
            tensor,
            index: index.into_iter().map(Subscript::Expr).collect(),
            checked: !in_range,
        }
    }

    fn load(&self, tensor: TensorId, index: Vec<Expr>, loops: &[Loop]) -> Value {
        Value::Load {
            access: self.access(tensor, index, loops),
            fill: 0.0,
        }
    }

    /// An element-wise operand read at `ivars`, the loop variables of the nest.
    fn operand(&self, o: &Operand, ivars: &[Expr], loops: &[Loop]) -> Value {
        match o {
            Operand::Node(n) => self.load(self.tensor_of(*n), ivars.to_vec(), loops),
            Operand::Const(v) => Value::Const(*v),
            Operand::Param(p) => Value::Param(p.clone()),
        }
    }

    /// A block storing `value` into every element of `out`, where `value` is built from
    /// the operands read at the same element.
    fn elementwise(
        &mut self,
        out: TensorId,
        operands: &[Operand],
        value: impl Fn(&[Value]) -> Value,
    ) {
        let (mut loops, ivars) = self.nest(&self.shape(out));
        let operands: Vec<Value> = operands
            .iter()
            .map(|o| self.operand(o, &ivars, &loops))
            .collect();
        let store = Stmt::Store {
            access: self.access(out, ivars, &loops),
            value: value(&operands),
        };
        self.push_innermost(&mut loops, store);
    }

    /// Emits a block whose only statement sits in the innermost loop (or the block itself
    /// for rank 0).
    fn push_innermost(&mut self, loops: &mut [Loop], stmt: Stmt) {
        let mut block = Block {
            loops: loops.to_vec(),
            carried: Vec::new(),
            stmts: Vec::new(),
        };
        match block.loops.last_mut() {
            Some(inner) => inner.stmts.push(stmt),
            None => block.stmts.push(stmt),
        }
        self.blocks.push(block);
    }

    fn reindex(&mut self, out: TensorId, x: NodeId, index: &[Expr], fill: f64) {
        let (mut loops, ivars) = self.nest(&self.shape(out));
        let src = rename_indices(index, &ivars);
        let value = Value::Load {
            access: self.access(self.tensor_of(x), src, &loops),
            fill,
        };
        let store = Stmt::Store {
            access: self.access(out, ivars, &loops),
            value,
        };
        self.push_innermost(&mut loops, store);
    }

    fn reindex_reduce(&mut self, out: TensorId, x: NodeId, index: &[Expr], op: Accum) {
        self.elementwise(out, &[Operand::Const(op.identity())], |v| v[0].clone());
        let x = self.tensor_of(x);
        let (mut loops, ivars) = self.nest(&self.shape(x));
        let target = rename_indices(index, &ivars);
        let scatter = Stmt::Accumulate {
            access: self.access(out, target, &loops),
            op,
            value: self.load(x, ivars, &loops),
        };
        self.push_innermost(&mut loops, scatter);
    }

    fn reduce(&mut self, out: TensorId, op: ReduceOp, axes: &[usize], x: NodeId) {
        let x = self.tensor_of(x);
        let accum = match op {
            ReduceOp::Sum | ReduceOp::Mean => Accum::Add,
            ReduceOp::Prod => Accum::Mul,
            ReduceOp::Max | ReduceOp::Argmax => Accum::Max,
            ReduceOp::Min | ReduceOp::Argmin => Accum::Min,
        };
        if !matches!(op, ReduceOp::Argmax | ReduceOp::Argmin) {
            let shape = self.shape(x);
            let count = axes
                .iter()
                .fold(Expr::Int(1), |n, &a| n * shape[a].clone())
                .simplify();
            self.reduction(
                out,
                axes,
                x,
                accum,
                |r| r.element.clone(),
                |var| {
                    if op == ReduceOp::Mean {
                        Value::Binary(
                            BinaryOp::Div,
                            Box::new(var),
                            Box::new(Value::Index(count.clone())),
                        )
                    } else {
                        var
                    }
                },
            );
            return;
        }
        // The extreme first, then the smallest position holding it. A NaN extreme
        // matches nothing under `==`, so the smallest NaN position wins instead:
        // exactly the reference's "first extreme wins, a NaN beats everything".
        let decl = self.tensors[out.0].clone();
        let name = self.fresh_name(&format!("{}_{}", decl.name, accum.name()));
        let extreme = self.add_tensor(TensorDecl {
            name,
            dtype: self.dtype,
            kind: TensorKind::Temp,
            ..decl
        });
        self.reduction(extreme, axes, x, accum, |r| r.element.clone(), |var| var);
        self.reduction(
            out,
            axes,
            x,
            Accum::Min,
            |r| {
                let load_m = Value::Load {
                    access: r.extreme_access(extreme),
                    fill: 0.0,
                };
                let pos = || Value::Index(r.position.clone());
                let x = || Box::new(r.element.clone());
                let is_nan = Value::Binary(BinaryOp::Ne, x(), x());
                Value::Where(
                    Box::new(Value::Binary(BinaryOp::Eq, x(), Box::new(load_m))),
                    Box::new(pos()),
                    Box::new(Value::Where(
                        Box::new(is_nan),
                        Box::new(pos()),
                        Box::new(Value::Const(f64::INFINITY)),
                    )),
                )
            },
            |var| var,
        );
    }

    /// One reduction block: loops over the kept axes of `x` (outer, ascending) then the
    /// reduced ones (inner, ascending); a variable carried by the innermost kept loop
    /// (or the block) folds `update(element)` with `accum`, and `result(var)` is stored
    /// into `out` at the kept position.
    fn reduction(
        &mut self,
        out: TensorId,
        axes: &[usize],
        x: TensorId,
        accum: Accum,
        update: impl Fn(&ReductionSite) -> Value,
        result: impl Fn(Value) -> Value,
    ) {
        let shape = self.shape(x);
        let kept: Vec<usize> = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
        let order: Vec<usize> = kept.iter().chain(axes).copied().collect();
        let sizes: Vec<Expr> = order.iter().map(|&a| shape[a].clone()).collect();
        let (mut loops, vars) = self.nest(&sizes);
        let mut var_of_axis = vec![Expr::Int(0); shape.len()];
        for (&axis, v) in order.iter().zip(&vars) {
            var_of_axis[axis] = v.clone();
        }
        let out_index: Vec<Expr> = (0..shape.len())
            .map(|a| {
                if axes.contains(&a) {
                    Expr::Int(0)
                } else {
                    var_of_axis[a].clone()
                }
            })
            .collect();
        let position = axes
            .iter()
            .fold(Expr::Int(0), |p, &a| {
                p * shape[a].clone() + var_of_axis[a].clone()
            })
            .simplify();
        let site = ReductionSite {
            element: self.load(x, var_of_axis, &loops),
            position,
            out_index: out_index.clone(),
            loops: loops.clone(),
            lowering: self,
        };
        let value = update(&site);
        let carried = self.carried(accum);
        let update = Stmt::Update {
            var: carried.var,
            op: accum,
            value,
        };
        let store = Stmt::Store {
            access: self.access(out, out_index, &loops),
            value: result(Value::Var(carried.var)),
        };
        let mut block = Block {
            loops: Vec::new(),
            carried: Vec::new(),
            stmts: Vec::new(),
        };
        match loops.last_mut() {
            Some(inner) => inner.stmts.push(update),
            None => block.stmts.push(update),
        }
        match kept.len().checked_sub(1) {
            Some(k) => {
                loops[k].carried.push(carried);
                loops[k].stmts.push(store);
            }
            None => {
                block.carried.push(carried);
                block.stmts.push(store);
            }
        }
        block.loops = loops;
        self.blocks.push(block);
    }

    fn select(&mut self, out: TensorId, axis: usize, x: NodeId, index: NodeId) {
        let (mut loops, ivars) = self.nest(&self.shape(out));
        let position = self.load(self.tensor_of(index), ivars.clone(), &loops);
        let mut gathered = self.access(self.tensor_of(x), ivars.clone(), &loops);
        gathered.index[axis] = Subscript::Value(Box::new(position));
        gathered.checked = true;
        let store = Stmt::Store {
            access: self.access(out, ivars, &loops),
            value: Value::Load {
                access: gathered,
                fill: 0.0,
            },
        };
        self.push_innermost(&mut loops, store);
    }

    fn iota(&mut self, out: TensorId, axis: usize) {
        let (mut loops, ivars) = self.nest(&self.shape(out));
        let store = Stmt::Store {
            value: Value::Index(ivars[axis].clone()),
            access: self.access(out, ivars, &loops),
        };
        self.push_innermost(&mut loops, store);
    }
}

/// What the update of a reduction can refer to.
struct ReductionSite<'a, 'p> {
    /// The element of `x` being folded.
    element: Value,
    /// Row-major position of the element within the reduced axes.
    position: Expr,
    /// Index of the kept position (reduced axes at 0).
    out_index: Vec<Expr>,
    loops: Vec<Loop>,
    lowering: &'a Lowering<'p>,
}

impl ReductionSite<'_, '_> {
    /// The access to a tensor shaped like the reduction's output, at the kept position.
    fn extreme_access(&self, tensor: TensorId) -> Access {
        self.lowering
            .access(tensor, self.out_index.clone(), &self.loops)
    }
}

/// Rewrites the uop's output indices `iN` into the variables of the nest.
fn rename_indices(index: &[Expr], vars: &[Expr]) -> Vec<Expr> {
    index
        .iter()
        .map(|e| {
            e.map_leaves(&mut |leaf| match leaf {
                Expr::Index(n) => vars.get(*n).cloned(),
                _ => None,
            })
        })
        .collect()
}
