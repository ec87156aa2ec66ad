//! The loop-IR interpreter: runs a [`LoopProgram`] statement by statement, exactly as
//! its blocks, loops and carried variables say. It checks every pass: a program
//! before and after a pass must give bit-identical results here.
//!
//! Arithmetic mirrors the reference interpreter (`uops.rs`): values are `f64`, and
//! every constant, parameter, index value, unary, binary and accumulation is rounded
//! to the program's float type ([`DType::round`]); a store rounds to the target's type.
//! The interpreter also checks what the IR promises: an access marked in range that
//! is not, or a carried variable read outside its loop, is reported as
//! [`RunError::InvalidLoops`] rather than silently tolerated.

use std::collections::HashMap;

use crate::index::{Bindings, Env, Expr};
use crate::loops::{Access, Block, Carried, Loop, LoopProgram, Stmt, Subscript, TensorKind, Value};
use crate::sizes::{account_interpreter, check_iterations};
use crate::tensor::Tensor;
use crate::uop::DType;

use super::RunError;

/// Runs `program` on `inputs` (in call order) with integer `params`, returning the
/// outputs in order.
///
/// ```
/// use std::collections::HashMap;
/// use uop_codegen::{interp, loops, tensor::Tensor, uop::{Builder, DType, ReduceOp}};
///
/// let mut b = Builder::new(DType::F64);
/// let x = b.input("x", DType::F64, &["N"])?;
/// let s = b.reduce(ReduceOp::Sum, &[0], x)?;
/// let program = loops::lower(&b.combine(&[x], &[s])?);
/// let input = Tensor::new(DType::F64, vec![3], vec![1.0, 2.0, 4.5])?;
/// let out = interp::run_loops(&program, &[input], &HashMap::new())?;
/// assert_eq!(out[0].data, vec![7.5]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn run_loops(
    program: &LoopProgram,
    inputs: &[Tensor],
    params: &HashMap<String, i64>,
) -> Result<Vec<Tensor>, RunError> {
    let input_shapes: Vec<&[usize]> = inputs.iter().map(|t| t.shape.as_slice()).collect();
    let bindings = program.bind(&input_shapes, params)?;
    for (id, t) in program.inputs.iter().zip(inputs) {
        let decl = &program.tensors[id.0];
        if decl.dtype != t.dtype {
            return Err(RunError::InputType {
                input: decl.name.clone(),
                expected: decl.dtype,
                found: t.dtype,
            });
        }
    }
    let shapes = program.shapes(&bindings)?;
    check_iterations(program, &bindings)?;
    account_interpreter(
        program
            .tensors
            .iter()
            .zip(&shapes)
            .map(|(t, s)| (t.name.as_str(), s.as_slice())),
    )?;
    let mut tensors = Vec::with_capacity(program.tensors.len());
    for (k, (decl, shape)) in program.tensors.iter().zip(shapes).enumerate() {
        tensors.push(match program.inputs.iter().position(|t| t.0 == k) {
            Some(at) => inputs[at].clone(),
            None => Tensor::try_filled(&decl.name, decl.dtype, shape, 0.0)?,
        });
    }
    let loop_ids = program
        .blocks
        .iter()
        .flat_map(|b| &b.loops)
        .map(|l| l.id.0 + 1);
    let var_ids = program.blocks.iter().flat_map(|b| {
        b.carried
            .iter()
            .chain(b.loops.iter().flat_map(|l| &l.carried))
            .map(|c| c.var.0 + 1)
    });
    let mut machine = Machine {
        program,
        bindings: &bindings,
        tensors,
        loops: vec![None; loop_ids.max().unwrap_or(0)],
        vars: vec![None; var_ids.max().unwrap_or(0)],
        block: 0,
    };
    for (k, block) in program.blocks.iter().enumerate() {
        machine.block = k;
        machine.run_block(block)?;
    }
    Ok(program
        .outputs
        .iter()
        .map(|t| machine.tensors[t.0].clone())
        .collect())
}

/// The state of a running loop program.
struct Machine<'a> {
    program: &'a LoopProgram,
    bindings: &'a Bindings,
    tensors: Vec<Tensor>,
    /// The current value of each loop's variable, by loop id; `None` outside the loop.
    loops: Vec<Option<i64>>,
    /// The current value of each carried variable, by id; `None` outside its loop.
    vars: Vec<Option<f64>>,
    /// The block running, for messages.
    block: usize,
}

impl Env for Machine<'_> {
    fn index(&self, n: usize) -> Option<i64> {
        self.loops.get(n).copied().flatten()
    }
    fn name(&self, name: &str) -> Option<i64> {
        self.bindings.names.get(name).copied()
    }
    fn param(&self, name: &str) -> Option<i64> {
        self.bindings.params.get(name).copied()
    }
}

impl Machine<'_> {
    fn dtype(&self) -> DType {
        self.program.dtype
    }

    fn invalid(&self, message: String) -> RunError {
        RunError::InvalidLoops {
            block: self.block,
            message,
        }
    }

    fn eval(&self, e: &Expr) -> Result<i64, RunError> {
        e.eval(self).map_err(|error| RunError::BlockEval {
            block: self.block,
            error,
        })
    }

    fn run_block(&mut self, block: &Block) -> Result<(), RunError> {
        self.reset(&block.carried);
        self.run_nest(&block.loops)?;
        for s in &block.stmts {
            self.exec(s)?;
        }
        self.unset(&block.carried);
        Ok(())
    }

    fn run_nest(&mut self, loops: &[Loop]) -> Result<(), RunError> {
        let Some((outer, inner)) = loops.split_first() else {
            return Ok(());
        };
        let (start, end) = (self.eval(&outer.start)?, self.eval(&outer.end)?);
        for i in start..end {
            self.loops[outer.id.0] = Some(i);
            self.reset(&outer.carried);
            self.run_nest(inner)?;
            for s in &outer.stmts {
                self.exec(s)?;
            }
        }
        self.loops[outer.id.0] = None;
        self.unset(&outer.carried);
        Ok(())
    }

    fn reset(&mut self, carried: &[Carried]) {
        for c in carried {
            self.vars[c.var.0] = Some(c.op.identity());
        }
    }

    fn unset(&mut self, carried: &[Carried]) {
        for c in carried {
            self.vars[c.var.0] = None;
        }
    }

    fn exec(&mut self, stmt: &Stmt) -> Result<(), RunError> {
        match stmt {
            Stmt::Store { access, value } => {
                let v = self.value(value)?;
                if let Some(at) = self.locate_for_write(access)? {
                    let t = &mut self.tensors[access.tensor.0];
                    t.data[at] = t.dtype.round(v);
                }
            }
            Stmt::Accumulate { access, op, value } => {
                let v = self.value(value)?;
                if let Some(at) = self.locate_for_write(access)? {
                    let t = &mut self.tensors[access.tensor.0];
                    t.data[at] = t.dtype.round(op.combine(t.data[at], v));
                }
            }
            Stmt::Update { var, op, value } => {
                let v = self.value(value)?;
                let acc = self.var(var.0)?;
                self.vars[var.0] = Some(self.dtype().round(op.combine(acc, v)));
            }
        }
        Ok(())
    }

    fn var(&self, id: usize) -> Result<f64, RunError> {
        self.vars
            .get(id)
            .copied()
            .flatten()
            .ok_or_else(|| self.invalid(format!("v{id} is read outside the loop carrying it")))
    }

    fn value(&self, v: &Value) -> Result<f64, RunError> {
        let round = |x: f64| self.dtype().round(x);
        Ok(match v {
            Value::Load { access, fill } => {
                let t = &self.tensors[self.tensor_index(access)?];
                // An i32 tensor read as a value is converted to the float type.
                match self.locate(access)? {
                    Some(at) => round(t.data[at]),
                    None => round(t.dtype.round(*fill)),
                }
            }
            Value::Var(var) => self.var(var.0)?,
            Value::Const(c) => round(*c),
            Value::Param(p) => {
                let value = self.param(p).ok_or_else(|| RunError::BlockEval {
                    block: self.block,
                    error: crate::index::EvalError::Unbound(format!("${p}")),
                })?;
                round(value as f64)
            }
            Value::Index(e) => round(self.eval(e)? as f64),
            Value::Unary(op, x) => round(op.apply(self.value(x)?)),
            Value::Binary(op, a, b) => round(op.apply(self.value(a)?, self.value(b)?)),
            Value::Where(c, a, b) => {
                if self.value(c)? != 0.0 {
                    self.value(a)?
                } else {
                    self.value(b)?
                }
            }
        })
    }

    fn tensor_index(&self, access: &Access) -> Result<usize, RunError> {
        let k = access.tensor.0;
        if k < self.tensors.len() {
            Ok(k)
        } else {
            Err(self.invalid(format!("tensor %{k} does not exist")))
        }
    }

    /// Like [`Machine::locate`], for a store: inputs are read only.
    fn locate_for_write(&self, access: &Access) -> Result<Option<usize>, RunError> {
        let k = self.tensor_index(access)?;
        let decl = &self.program.tensors[k];
        if decl.kind == TensorKind::Input {
            return Err(self.invalid(format!("input `{}` is written", decl.name)));
        }
        self.locate(access)
    }

    /// The row-major offset of an access; `None` when a checked access is out of range.
    fn locate(&self, access: &Access) -> Result<Option<usize>, RunError> {
        let k = self.tensor_index(access)?;
        let shape = &self.tensors[k].shape;
        let name = &self.program.tensors[k].name;
        if access.index.len() != shape.len() {
            return Err(self.invalid(format!(
                "`{name}` has rank {} but is accessed with {} subscripts",
                shape.len(),
                access.index.len()
            )));
        }
        let mut position = Vec::with_capacity(shape.len());
        for s in &access.index {
            position.push(match s {
                Subscript::Expr(e) => self.eval(e)?,
                // Saturating, like the reference: NaN becomes 0, infinities fall outside.
                Subscript::Value(v) => self.value(v)?.floor() as i64,
            });
        }
        match self.tensors[k].offset(&position) {
            Some(at) => Ok(Some(at)),
            None if access.checked => Ok(None),
            None => Err(self.invalid(format!(
                "the access `{name}{position:?}` is marked in range, but `{name}` has shape {shape:?}"
            ))),
        }
    }
}
