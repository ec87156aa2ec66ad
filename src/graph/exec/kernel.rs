//! One compiled uop program as the executor runs it: machine code from the JIT (through
//! its process-wide cache) or the optimized loop IR on the loop-IR interpreter.

use std::collections::HashMap;

use uop_codegen::backend::cranelift::{self, Input, Output};
use uop_codegen::interp::run_loops;
use uop_codegen::loops::{self, LoopProgram};
use uop_codegen::pass::{self, PassOptions};
use uop_codegen::uop::Program;

use super::value::{Value, storage, store_tensor};
use crate::graph::Backend;

/// A program ready to run.
#[derive(Clone, Debug)]
pub(crate) enum Compiled {
    /// JIT-compiled machine code.
    Jit(cranelift::Kernel),
    /// The optimized loop IR, for the loop-IR interpreter.
    Loops(LoopProgram),
}

impl Compiled {
    /// Lowers and optimizes `program`, then JIT-compiles it (Cranelift) or keeps the
    /// loop IR (Loops). The error is the compiler's message.
    pub(crate) fn new(program: &Program, backend: Backend) -> Result<Compiled, String> {
        let optimized = pass::optimize(&loops::lower(program), &PassOptions::default())
            .map_err(|e| e.to_string())?;
        match backend {
            Backend::Cranelift => cranelift::compile(&optimized, &cranelift::Options::default())
                .map(Compiled::Jit)
                .map_err(|e| e.to_string()),
            Backend::Loops => Ok(Compiled::Loops(optimized)),
        }
    }

    /// Runs on `inputs`, writing every output into its slot of `outputs` (a buffer
    /// reused where [`storage`] allows). Every shape is checked before any code runs.
    pub(crate) fn run(
        &self,
        inputs: &[&Value],
        params: &HashMap<String, i64>,
        outputs: &mut [Option<Value>],
    ) -> Result<(), String> {
        match self {
            Compiled::Jit(kernel) => {
                let shapes: Vec<&[usize]> = inputs.iter().map(|v| v.shape.as_slice()).collect();
                let out_shapes = kernel
                    .output_shapes(&shapes, params)
                    .map_err(|e| e.to_string())?;
                let program = kernel.program();
                if out_shapes.len() != outputs.len() {
                    return Err(format!(
                        "the program gives {} outputs for {}",
                        out_shapes.len(),
                        outputs.len()
                    ));
                }
                let args: Vec<(Input<'_>, &[usize])> = inputs
                    .iter()
                    .zip(&shapes)
                    .map(|(v, s)| (v.data.input(), *s))
                    .collect();
                let mut slices: Vec<Output<'_>> = Vec::with_capacity(outputs.len());
                for ((slot, shape), t) in outputs.iter_mut().zip(&out_shapes).zip(&program.outputs)
                {
                    let dtype = program.tensors[t.0].dtype;
                    let out = storage(slot, dtype, shape).output().ok_or_else(|| {
                        format!("an output of type {dtype} cannot be written by a JIT kernel")
                    })?;
                    slices.push(out);
                }
                kernel
                    .run_slices(&args, params, &mut slices)
                    .map_err(|e| e.to_string())
            }
            Compiled::Loops(program) => {
                let tensors: Vec<_> = inputs.iter().map(|v| v.to_tensor()).collect();
                let results = run_loops(program, &tensors, params).map_err(|e| e.to_string())?;
                if results.len() != outputs.len() {
                    return Err(format!(
                        "the program gives {} outputs for {}",
                        results.len(),
                        outputs.len()
                    ));
                }
                for (slot, t) in outputs.iter_mut().zip(&results) {
                    store_tensor(slot, t);
                }
                Ok(())
            }
        }
    }
}
