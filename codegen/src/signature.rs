//! The one description of a kernel's interface: its inputs (names, element types,
//! symbolic shapes), its `$params`, its outputs and its size assertions.
//!
//! A [`Signature`] is derived from a [`Program`] ([`Program::signature`]); lowering
//! names the loop program's outputs after it, so [`LoopProgram::signature`] gives the
//! same description, and every backend reads its interface from there: the Rust
//! backend's items and entry checks, the Cranelift entry, the C header and Rust
//! `extern` block, and the JIT's `Kernel` (crate `uop-cranelift`).
//!
//! [`Signature::bind`] is the one place concrete shapes meet the description: it
//! binds the named dims, checks ranks, fixed sizes, `$params` and assertions, and
//! computes every input's and output's element and byte count with checked
//! arithmetic. A count that overflows is an error naming the tensor and its shape
//! expression, so no kernel ever runs on a size that was not checked.
//!
//! ```
//! use std::collections::HashMap;
//! use uop_codegen::{run::RunError, uop::{Builder, DType}};
//!
//! let mut b = Builder::new(DType::F32);
//! let a = b.input("a", DType::F32, &["M", "K"])?;
//! // A 2^40 × 2^40 view of `a`: 2^80 elements, more than any buffer holds.
//! let y = b.reindex(a, &["1099511627776", "1099511627776"], &[], &["0", "0"])?;
//! let sig = b.combine(&[a], &[y])?.signature();
//! assert_eq!((sig.inputs[0].name.as_str(), sig.outputs.len()), ("a", 1));
//!
//! let err: RunError = sig.bind(&[&[2, 3]], &HashMap::new()).unwrap_err();
//! let name = &sig.outputs[0].name;
//! assert!(err.to_string().contains(&format!("`{name}`")), "{err}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, HashSet};

use uop_runtime::Ledger;

use crate::index::{Bindings, Expr, list};
use crate::loops::{LoopProgram, TensorKind};
use crate::run::RunError;
use crate::sizes::{account, check_iterations, panel_elements};
use crate::uop::{DType, InputDecl, Program, bind_inputs, concrete_shape};

/// One input or output of a kernel.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TensorSpec {
    /// Its name in the program (and in generated code's messages).
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Symbolic shape: literals, named dims, `$params` and expressions of them.
    pub shape: Vec<Expr>,
}

impl TensorSpec {
    /// Its rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// A kernel's interface: what it takes, what it returns, what it checks.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signature {
    /// The program's float type.
    pub dtype: DType,
    /// Inputs, in call order.
    pub inputs: Vec<TensorSpec>,
    /// `$params`, in declaration order.
    pub params: Vec<String>,
    /// Outputs, in call order.
    pub outputs: Vec<TensorSpec>,
    /// Size equalities (`[=]`) checked before anything runs.
    pub assertions: Vec<(Expr, Expr)>,
}

/// A tensor's concrete size, every count checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Extent {
    /// Sizes, outermost first.
    pub shape: Vec<usize>,
    /// Elements: the product of the sizes.
    pub elements: usize,
    /// Bytes: elements times the element size, at most `isize::MAX`.
    pub bytes: usize,
}

/// A signature bound to concrete input shapes and `$params`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    /// Named dims and params, for evaluating any size expression of the kernel.
    pub bindings: Bindings,
    /// Every input's extent, in call order.
    pub inputs: Vec<Extent>,
    /// Every output's extent, in call order.
    pub outputs: Vec<Extent>,
}

impl Bound {
    /// The output shapes, in call order.
    pub fn output_shapes(&self) -> Vec<Vec<usize>> {
        self.outputs.iter().map(|e| e.shape.clone()).collect()
    }

    /// The one check of a compiled kernel's run before anything is allocated (the
    /// JIT's entries, and through them the command line and the graph executor):
    /// the memory [`Bound::account_run`] counts, against the memory limit
    /// ([`uop_runtime::memory_limit`]); with [`RunBuffers::Owned`], the iteration
    /// counts too ([`check_iterations`]).
    ///
    /// # Errors
    ///
    /// [`RunError::Memory`] when the buffers need more than the limit, a size error
    /// when a temporary's size cannot be had, and an iteration count that overflows.
    pub fn check_run(&self, program: &LoopProgram, buffers: RunBuffers) -> Result<(), RunError> {
        let has_temporaries = program.tensors.iter().any(|t| t.kind == TensorKind::Temp);
        // A `[tile]` nest may be a contraction whose panel the run accounts.
        let has_tiles = program
            .blocks
            .iter()
            .any(|b| b.loops.iter().any(|l| l.schedule.tile.is_some()));
        if buffers == RunBuffers::Borrowed && !has_temporaries && !has_tiles {
            return Ok(());
        }
        let mut ledger = Ledger::new();
        self.account_run(program, buffers, &mut ledger)?;
        ledger.check()?;
        if buffers == RunBuffers::Owned {
            check_iterations(program, &self.bindings)?;
        }
        Ok(())
    }

    /// The one accounting of a compiled kernel's run: adds to `ledger` every buffer
    /// a run of `program` — the loop program whose signature this is bound from —
    /// allocates under these sizes, as `buffers` says who holds the inputs and
    /// outputs. Temporaries count in their element type, a row-local one as one row
    /// (as the machine code stores it); a JIT kernel's contraction panel counts as
    /// its largest ([`panel_elements`], at the host's micro-kernel width).
    ///
    /// # Errors
    ///
    /// A size error when a temporary's size cannot be had, and
    /// [`RunError::Memory`] when a buffer's bytes overflow.
    pub fn account_run(
        &self,
        program: &LoopProgram,
        buffers: RunBuffers,
        ledger: &mut Ledger,
    ) -> Result<(), RunError> {
        if buffers == RunBuffers::Owned {
            for (t, extent) in program.inputs.iter().zip(&self.inputs) {
                let t = &program.tensors[t.0];
                account(ledger, &t.name, &extent.shape, t.dtype.size())?;
            }
            for (t, extent) in program.outputs.iter().zip(&self.outputs) {
                let t = &program.tensors[t.0];
                let size = t.dtype.size() + std::mem::size_of::<f64>();
                account(ledger, &t.name, &extent.shape, size)?;
            }
        }
        for t in program
            .tensors
            .iter()
            .filter(|t| t.kind == TensorKind::Temp)
        {
            let mut shape = concrete_shape(&t.name, &t.shape, &self.bindings)?;
            if let Some(size) = t.row_local.and_then(|axis| shape.get_mut(axis)) {
                *size = 1;
            }
            account(ledger, &t.name, &shape, t.dtype.size())?;
        }
        let columns = uop_runtime::microkernel::host_level().columns as u64;
        let panel = panel_elements(program, &self.bindings, columns).unwrap_or(u64::MAX);
        if panel > 0 {
            ledger.add("the contraction panel", panel, 4)?;
        }
        Ok(())
    }
}

/// Who holds a compiled kernel's inputs and outputs during a run, which decides
/// what [`Bound::check_run`] accounts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunBuffers {
    /// The caller (slices, raw buffers, the graph executor's arena): the run
    /// allocates only the kernel's temporaries.
    Borrowed,
    /// The run itself: a typed copy of every input, and every output twice (the
    /// kernel's typed buffer, then the `f64` tensor returned), besides the
    /// temporaries.
    Owned,
}

impl Signature {
    /// Sizes the inputs pass in all (the C ABI's `input_dims` length).
    pub fn input_rank_sum(&self) -> usize {
        self.inputs.iter().map(TensorSpec::rank).sum()
    }

    /// Sizes the outputs take in all (the C ABI's `output_dims` length).
    pub fn output_rank_sum(&self) -> usize {
        self.outputs.iter().map(TensorSpec::rank).sum()
    }

    /// Binds concrete input shapes (in call order) and `params`: checks ranks, fixed
    /// sizes, dims shared between inputs, that every `$param` has a value and every
    /// assertion holds, then computes every input's and output's extent.
    ///
    /// # Errors
    ///
    /// [`RunError::Bind`] when the shapes or params do not fit the signature, and
    /// [`RunError::TooLarge`] when an element or byte count overflows (or a size
    /// exceeds `i64::MAX`, the range of index arithmetic).
    pub fn bind(
        &self,
        input_shapes: &[&[usize]],
        params: &HashMap<String, i64>,
    ) -> Result<Bound, RunError> {
        let decls: Vec<InputDecl<'_>> = self
            .inputs
            .iter()
            .map(|t| InputDecl {
                name: &t.name,
                shape: &t.shape,
            })
            .collect();
        let bindings = bind_inputs(&decls, &self.params, &self.assertions, input_shapes, params)?;
        let inputs = self
            .inputs
            .iter()
            .zip(input_shapes)
            .map(|(t, shape)| extent("input", t, shape.to_vec()))
            .collect::<Result<Vec<_>, _>>()?;
        let outputs = self
            .outputs
            .iter()
            .map(|t| extent("output", t, concrete_shape(&t.name, &t.shape, &bindings)?))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Bound {
            bindings,
            inputs,
            outputs,
        })
    }
}

/// The extent of `shape`, or [`RunError::TooLarge`] naming `t`.
fn extent(what: &'static str, t: &TensorSpec, shape: Vec<usize>) -> Result<Extent, RunError> {
    match checked_counts(&shape, t.dtype.size()) {
        Some((elements, bytes)) => Ok(Extent {
            shape,
            elements,
            bytes,
        }),
        None => Err(RunError::TooLarge {
            what,
            tensor: t.name.clone(),
            expr: list(&t.shape),
            shape,
        }),
    }
}

/// Elements and bytes of `shape`, or `None` when a size exceeds `i64::MAX` or the
/// bytes exceed `isize::MAX` (no allocation can be larger).
pub fn checked_counts(shape: &[usize], element_size: usize) -> Option<(usize, usize)> {
    let mut elements = 1usize;
    for &d in shape {
        i64::try_from(d).ok()?;
        elements = elements.checked_mul(d)?;
    }
    let bytes = elements.checked_mul(element_size)?;
    isize::try_from(bytes).ok()?;
    Some((elements, bytes))
}

impl Program {
    /// This program's [`Signature`]. An output keeps its node's name unless the node
    /// is an input or was returned before; it is then named `NAME_out` (or
    /// `NAME_out_1`, ...), a name no node has, as lowering names its copy.
    pub fn signature(&self) -> Signature {
        let spec = |id: crate::uop::NodeId| {
            let n = self.node(id);
            TensorSpec {
                name: n.name.clone(),
                dtype: n.dtype,
                shape: n.shape.clone(),
            }
        };
        let mut taken: HashSet<String> = self.nodes.iter().map(|n| n.name.clone()).collect();
        let mut returned = HashSet::new();
        let mut outputs = Vec::with_capacity(self.outputs.len());
        for &id in &self.outputs {
            let mut t = spec(id);
            if self.inputs.contains(&id) || !returned.insert(id) {
                let base = format!("{}_out", t.name);
                t.name = std::iter::once(base.clone())
                    .chain((1..).map(|n| format!("{base}_{n}")))
                    .find(|c| !taken.contains(c))
                    .unwrap_or(base);
                taken.insert(t.name.clone());
            }
            outputs.push(t);
        }
        Signature {
            dtype: self.dtype,
            inputs: self.inputs.iter().map(|&id| spec(id)).collect(),
            params: self.params.clone(),
            outputs,
            assertions: self.assertions.clone(),
        }
    }
}

impl LoopProgram {
    /// This loop program's [`Signature`]: the one of the program it was lowered from
    /// (passes never change a program's interface).
    pub fn signature(&self) -> Signature {
        let spec = |t: &crate::loops::TensorId| {
            let d = &self.tensors[t.0];
            TensorSpec {
                name: d.name.clone(),
                dtype: d.dtype,
                shape: d.shape.clone(),
            }
        };
        Signature {
            dtype: self.dtype,
            inputs: self.inputs.iter().map(spec).collect(),
            params: self.params.clone(),
            outputs: self.outputs.iter().map(spec).collect(),
            assertions: self.assertions.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uop::{Builder, UnaryOp};

    fn program() -> Program {
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["N"]).unwrap();
        let y = b.unary(UnaryOp::Exp, x).unwrap();
        b.combine(&[x], &[y, x]).unwrap()
    }

    #[test]
    fn lowering_names_outputs_as_the_signature_does() {
        let p = program();
        let sig = p.signature();
        let names: Vec<&str> = sig.outputs.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["t1", "x_out"]);
        assert_eq!(crate::loops::lower(&p).signature(), sig);
    }

    #[test]
    fn bind_counts_elements_and_bytes() {
        let bound = program()
            .signature()
            .bind(&[&[5]], &HashMap::new())
            .unwrap();
        assert_eq!(bound.inputs[0].elements, 5);
        assert_eq!(bound.outputs[0].bytes, 20);
        assert_eq!(bound.output_shapes(), vec![vec![5]; 2]);
    }

    #[test]
    fn an_input_whose_bytes_overflow_is_refused() {
        let err = program()
            .signature()
            .bind(&[&[usize::MAX / 2]], &HashMap::new())
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "input `x` of shape [N] = [{}] is too large: its size in bytes overflows \
                 the address range",
                usize::MAX / 2
            )
        );
    }

    #[test]
    fn a_run_accounts_its_own_buffers_and_the_temporaries_as_stored() {
        // Lowered without the passes: `t1 = exp(x)` is a temporary of N f32s.
        let mut b = Builder::new(DType::F32);
        let x = b.input("x", DType::F32, &["N"]).unwrap();
        let y = b.unary(UnaryOp::Exp, x).unwrap();
        let z = b.unary(UnaryOp::Neg, y).unwrap();
        let mut lowered = crate::loops::lower(&b.combine(&[x], &[z]).unwrap());
        let bound = lowered.signature().bind(&[&[10]], &HashMap::new()).unwrap();
        let total = |p: &LoopProgram, buffers| {
            let mut ledger = Ledger::with_limit(u64::MAX);
            bound.account_run(p, buffers, &mut ledger).unwrap();
            ledger.total()
        };
        // The caller holds x and z: only the temporary, 10 f32s.
        assert_eq!(total(&lowered, RunBuffers::Borrowed), 40);
        // A typed copy of x (40), z's typed buffer and f64 tensor (40 + 80), and the
        // temporary (40).
        assert_eq!(total(&lowered, RunBuffers::Owned), 200);
        // A row-local temporary is stored one row at a time.
        let temp = lowered
            .tensors
            .iter_mut()
            .find(|t| t.kind == TensorKind::Temp)
            .unwrap();
        temp.row_local = Some(0);
        assert_eq!(total(&lowered, RunBuffers::Borrowed), 4);
        assert_eq!(total(&lowered, RunBuffers::Owned), 164);
        assert_eq!(bound.check_run(&lowered, RunBuffers::Owned), Ok(()));
    }

    #[test]
    fn a_run_accounts_the_jit_s_contraction_panel_at_its_largest() {
        let text = "\
input  a: f32[M, K]
input  b: f32[K, N]
output c: f32[M, N]
block 0 {
  for i0 in 0..M {
    for i2 in 0..N [tile] {
      v0 = 0.0 (+)
      for i1 in 0..K {
        v0 += a[i0, i1] * b[i1, i2]
      }
      c[i0, i2] = v0
    } }
}
";
        let p = crate::loops::parse_program(text).unwrap();
        let bound = p
            .signature()
            .bind(&[&[6, 100], &[100, 40]], &HashMap::new())
            .unwrap();
        let mut ledger = Ledger::with_limit(u64::MAX);
        bound
            .account_run(&p, RunBuffers::Borrowed, &mut ledger)
            .unwrap();
        // One column tile's panel: every one of the K = 100 reduction steps, a
        // tile's columns each, in f32.
        let columns = uop_runtime::microkernel::host_level().columns as u64;
        assert_eq!(ledger.total(), 100 * columns * 4);
        // Without the `[tile]` mark there is no panel, nor anything to account.
        let untiled = crate::loops::parse_program(&text.replace(" [tile]", "")).unwrap();
        let mut ledger = Ledger::with_limit(u64::MAX);
        bound
            .account_run(&untiled, RunBuffers::Borrowed, &mut ledger)
            .unwrap();
        assert_eq!(ledger.total(), 0);
    }

    #[test]
    fn counts_stop_at_the_address_range() {
        assert_eq!(checked_counts(&[1 << 40, 1 << 40], 4), None);
        assert_eq!(checked_counts(&[1 << 61], 4), None);
        assert_eq!(checked_counts(&[], 8), Some((1, 8)));
        assert_eq!(checked_counts(&[3, 0, 1 << 62], 4), Some((0, 0)));
    }
}
