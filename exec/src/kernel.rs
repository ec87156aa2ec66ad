//! One compiled uop program as the executor runs it: machine code from the JIT (through
//! its process-wide cache) or the optimized loop IR on the loop-IR interpreter.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uop_codegen::compile::{BackendKind, CompileOptions, compile, compile_timed};
use uop_codegen::interp::run_loops;
use uop_codegen::loops::LoopProgram;
use uop_codegen::uop::Program;
use uop_cranelift::{self as cranelift, RawBuffer};

use crate::KernelBackend;
use crate::memory::Memory;
use crate::times::PassTimes;
use crate::value::Value;

/// How the executor compiles every program it runs (the Kernel nodes', and the
/// one-call programs of unfused calls): through [`compile`], the one compile driver,
/// under one set of [`CompileOptions`], for one backend; each pass's time recorded
/// when asked.
#[derive(Debug)]
pub(crate) struct Compiler {
    /// What runs the programs.
    backend: KernelBackend,
    /// The options, made for the backend's target.
    options: CompileOptions,
    /// The loop-IR passes' times over every program compiled, when timing.
    times: Option<Mutex<PassTimes>>,
}

impl Compiler {
    /// A compiler for `backend` under `options` (checked: an unknown pass name is
    /// an error here, before any program), timing the passes when `time_passes`.
    pub(crate) fn new(
        backend: KernelBackend,
        options: &CompileOptions,
        time_passes: bool,
    ) -> Result<Compiler, uop_codegen::compile::CompileError> {
        let target = match backend {
            KernelBackend::Cranelift => BackendKind::Cranelift,
            KernelBackend::Loops => BackendKind::Any,
        };
        let options = options.narrow_to(target)?;
        options.validate()?;
        Ok(Compiler {
            backend,
            options,
            times: time_passes.then(|| Mutex::new(PassTimes::default())),
        })
    }

    /// The passes' times so far (`None` when not timing).
    pub(crate) fn times(&self) -> Option<PassTimes> {
        self.times
            .as_ref()
            .map(|t| t.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Compiles `program` ([`compile`]), then JIT-compiles it (Cranelift) or keeps
    /// the loop IR (Loops). The error is the compiler's message.
    pub(crate) fn compile(&self, program: &Program) -> Result<Compiled, String> {
        let optimized = match &self.times {
            None => compile(program, &self.options).map_err(|e| e.to_string())?,
            Some(times) => {
                let (optimized, passes) =
                    compile_timed(program, &self.options).map_err(|e| e.to_string())?;
                times.lock().unwrap_or_else(|e| e.into_inner()).add(&passes);
                optimized
            }
        };
        match self.backend {
            KernelBackend::Cranelift => {
                cranelift::compile(&optimized, &cranelift::Options::default())
                    .map(|k| Compiled::Jit(k, BindCache::default()))
                    .map_err(|e| e.to_string())
            }
            KernelBackend::Loops => Ok(Compiled::Loops(optimized)),
        }
    }
}

/// A program ready to run.
#[derive(Clone, Debug)]
pub(crate) enum Compiled {
    /// JIT-compiled machine code, with the call its last run was bound to.
    Jit(cranelift::Kernel, BindCache),
    /// The optimized loop IR, for the loop-IR interpreter.
    Loops(LoopProgram),
}

/// A kernel's call bound to the input shapes and `$params` of its last run
/// ([`cranelift::Kernel::check`]): a kernel in a loop is called with the same shapes
/// every iteration, and binding its signature (evaluating every size expression,
/// accounting its temporaries) cost as much as a small kernel's work (callgrind on
/// `benches/graph_grad.rs`), so it is bound once per input shapes. Each run still
/// checks every buffer's type and length against the bound extents.
#[derive(Debug, Default)]
pub(crate) struct BindCache(Mutex<Option<BindEntry>>);

#[derive(Debug)]
struct BindEntry {
    inputs: Vec<Vec<usize>>,
    params: HashMap<String, i64>,
    checked: Arc<cranelift::Checked>,
}

impl Clone for BindCache {
    fn clone(&self) -> Self {
        BindCache::default()
    }
}

impl BindCache {
    /// `kernel` bound to the shapes of `inputs` and `params`: the last call's when
    /// they are the same (compared without allocating), else bound now (and kept).
    fn checked(
        &self,
        kernel: &cranelift::Kernel,
        inputs: &[Value],
        params: &HashMap<String, i64>,
    ) -> Result<Arc<cranelift::Checked>, String> {
        let mut last = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = last.as_ref()
            && e.inputs.len() == inputs.len()
            && e.inputs
                .iter()
                .zip(inputs)
                .all(|(a, b)| a[..] == b.shape[..])
            && e.params == *params
        {
            return Ok(e.checked.clone());
        }
        let shapes: Vec<&[usize]> = inputs.iter().map(|v| &v.shape[..]).collect();
        let checked = Arc::new(kernel.check(&shapes, params).map_err(|e| e.to_string())?);
        *last = Some(BindEntry {
            inputs: shapes.iter().map(|s| s.to_vec()).collect(),
            params: params.clone(),
            checked: checked.clone(),
        });
        Ok(checked)
    }
}

impl Compiled {
    /// Runs on `inputs`, writing every output where [`Memory::place`] puts the value
    /// of its slot number in `slots` (`outputs` holds what each slot held before and
    /// receives the written values). Every shape is checked before any code runs. A
    /// JIT kernel reads and writes the arena where it is (an in-place kernel's output
    /// is its input's buffer); the loop-IR interpreter takes owned tensors, so its
    /// inputs are copied out of the arena and its outputs into it.
    pub(crate) fn run(
        &self,
        mem: &Memory<'_>,
        inputs: &[Value],
        params: &HashMap<String, i64>,
        slots: &[usize],
        outputs: &mut [Option<Value>],
    ) -> Result<(), String> {
        match self {
            Compiled::Jit(kernel, cache) => {
                let checked = cache.checked(kernel, inputs, params)?;
                let out_shapes = &checked.bound().outputs;
                let program = kernel.program();
                if out_shapes.len() != outputs.len() || slots.len() != outputs.len() {
                    return Err(format!(
                        "the program gives {} outputs for {}",
                        out_shapes.len(),
                        outputs.len()
                    ));
                }
                let mut args = Buffers::default();
                for v in inputs {
                    args.push(mem.read(v));
                }
                let mut raw = Buffers::default();
                for (((out, slot), shape), t) in outputs
                    .iter_mut()
                    .zip(slots)
                    .zip(out_shapes)
                    .zip(&program.outputs)
                {
                    let dtype = program.tensors[t.0].dtype;
                    let mut v = mem.place(*slot, out.take(), dtype, &shape.shape)?;
                    raw.push(mem.write(&mut v)?);
                    *out = Some(v);
                }
                let (args, raw) = (args.as_slice(), raw.as_slice());
                check_aliasing(args, raw)?;
                // SAFETY: every buffer is an owned buffer or a checked view into the
                // arena, valid for its length; outputs are distinct slots of the plan
                // (or distinct owned buffers), and an output overlaps an input only as
                // the very same buffer, which the plan does for element-wise kernels
                // only (`check_aliasing` rejects any other overlap).
                unsafe { checked.run_ptrs(args, raw) }.map_err(|e| e.to_string())
            }
            Compiled::Loops(program) => {
                let tensors: Vec<_> = inputs.iter().map(|v| mem.tensor(v)).collect();
                let results = run_loops(program, &tensors, params).map_err(|e| e.to_string())?;
                if results.len() != outputs.len() || slots.len() != outputs.len() {
                    return Err(format!(
                        "the program gives {} outputs for {}",
                        results.len(),
                        outputs.len()
                    ));
                }
                for ((out, slot), t) in outputs.iter_mut().zip(slots).zip(&results) {
                    let mut v = mem.place(*slot, out.take(), t.dtype, &t.shape)?;
                    mem.fill(&mut v, &t.data)?;
                    *out = Some(v);
                }
                Ok(())
            }
        }
    }
}

/// The most buffers a side of a kernel call lists on the stack.
const STACK_BUFFERS: usize = 16;

/// A list of a call's buffers: on the stack up to [`STACK_BUFFERS`] (a kernel call
/// allocates nothing), on the heap beyond.
struct Buffers {
    stack: [RawBuffer; STACK_BUFFERS],
    len: usize,
    heap: Vec<RawBuffer>,
}

impl Default for Buffers {
    fn default() -> Buffers {
        let none = RawBuffer {
            dtype: uop_codegen::uop::DType::F32,
            ptr: std::ptr::null_mut(),
            len: 0,
        };
        Buffers {
            stack: [none; STACK_BUFFERS],
            len: 0,
            heap: Vec::new(),
        }
    }
}

impl Buffers {
    fn push(&mut self, b: RawBuffer) {
        if self.len < STACK_BUFFERS {
            self.stack[self.len] = b;
            self.len += 1;
        } else {
            if self.heap.is_empty() {
                self.heap.extend_from_slice(&self.stack);
            }
            self.heap.push(b);
        }
    }

    fn as_slice(&self) -> &[RawBuffer] {
        if self.heap.is_empty() {
            &self.stack[..self.len]
        } else {
            &self.heap
        }
    }
}

/// Outputs must not overlap each other, and may overlap an input only as the very
/// same buffer (an in-place element-wise kernel).
fn check_aliasing(inputs: &[RawBuffer], outputs: &[RawBuffer]) -> Result<(), String> {
    let range = |b: &RawBuffer| {
        let start = b.ptr as usize;
        (start, start + b.len * b.dtype.size())
    };
    let overlap = |a: &RawBuffer, b: &RawBuffer| {
        let ((a0, a1), (b0, b1)) = (range(a), range(b));
        a0 < b1 && b0 < a1
    };
    for (k, out) in outputs.iter().enumerate() {
        if outputs[..k].iter().any(|o| overlap(o, out)) {
            return Err(format!("output {k} overlaps another output"));
        }
        for (i, input) in inputs.iter().enumerate() {
            let same = input.ptr == out.ptr && input.len == out.len && input.dtype == out.dtype;
            if overlap(input, out) && !same {
                return Err(format!("output {k} partly overlaps input {i}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{Data, Shape};
    use uop_codegen::text::{Registry, parse_program};

    #[test]
    fn a_kernel_is_bound_once_per_input_shapes() {
        let p = parse_program("input x: f32[N]\ny = exp(x)\noutput y\n", &Registry::new())
            .expect("parses");
        let kernel =
            cranelift::compile_program(&p, &cranelift::Options::default()).expect("compiles");
        let cache = BindCache::default();
        let none = HashMap::new();
        let value = |shape: &[usize]| Value {
            shape: Shape::new(shape),
            data: Data::Arena {
                dtype: uop_codegen::uop::DType::F32,
                offset: 0,
                len: shape.iter().product(),
            },
        };
        let first = cache
            .checked(&kernel, &[value(&[4])], &none)
            .expect("binds");
        let again = cache
            .checked(&kernel, &[value(&[4])], &none)
            .expect("binds");
        assert!(
            Arc::ptr_eq(&first, &again),
            "the same shapes reuse the binding"
        );
        let other = cache
            .checked(&kernel, &[value(&[5])], &none)
            .expect("binds");
        assert!(!Arc::ptr_eq(&first, &other), "new shapes bind again");
        assert_eq!(other.output_shapes(), vec![vec![5]]);
        let err = cache
            .checked(&kernel, &[value(&[2, 2])], &none)
            .unwrap_err();
        assert!(err.contains("input `x`"), "{err}");
    }
}
