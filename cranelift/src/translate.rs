//! Loop IR to Cranelift IR: one function per kernel entry, built with
//! `cranelift-frontend`.
//!
//! The function has the C ABI of [`super::abi`]. Its prologue binds the kernel's
//! [`Signature`] (the input sizes, `$params`, assertions and output shapes, checked
//! as [`Signature::bind`] checks them), then computes the temporaries' shapes and
//! every tensor's row-major strides, allocates temporaries and zeroes the outputs
//! that are not fully overwritten before being read; then each block becomes a nest
//! of loops:
//!
//! ```text
//! header: i < end ? body : exit        (i, carried variables: frontend Variables)
//! body:   reset carried; inner loop; statements; i += 1; jump header
//! ```
//!
//! Semantics follow the loop-IR interpreter exactly: index arithmetic is 64-bit with
//! floor division and modulo, and overflow or division by zero returns
//! [`Status::IndexArithmetic`] instead of wrapping; a checked load reads its fill when
//! any subscript is out of range (branch-free, through a stack slot holding the fill),
//! a checked store or accumulate is skipped; a data-dependent subscript is the floor
//! of a float, saturated (NaN gives 0). f32 programs compute `+ - * / sqrt`, min, max,
//! comparisons and rounding in f32 (exactly the interpreter's round-after-each-op),
//! `exp log tanh sigmoid erf` inline in f32 (the `vmath` module, also on whole `f32x4`
//! vectors) and everything else in f64, rounded once, as the interpreter does.

use std::collections::HashMap;

use cranelift_codegen::ir::condcodes::{FloatCC, IntCC};
use cranelift_codegen::ir::types::{F32, F32X4, F64, F64X2, I8X16, I32, I64};
use cranelift_codegen::ir::{
    AbiParam, BlockArg, ConstantData, FuncRef, Function, InstBuilder, MemFlagsData, StackSlotData,
    StackSlotKind, Type, Value as IrValue,
};
use cranelift_frontend::{FunctionBuilder, FunctionBuilderContext, Variable};
use cranelift_module::{Linkage, Module};

use crate::index::{Bindings, Expr, IndexOp};
use crate::loops::{Access, Block, Loop, LoopProgram, Stmt, Subscript, TensorKind, Value};
use crate::signature::Signature;
use crate::target::Target;
use crate::uop::{Accum, BinaryOp, DType, UnaryOp};

use super::JitError;
use super::abi::Status;
use super::runtime::{Linking, MathFn, RuntimeFn};
use super::vmath::{self, Inline};
use crate::loops::analysis::Stride;
use crate::plan::{self, VectorPlan};

mod access;
mod contract;
mod index;
mod nest;
mod prologue;
mod runs;
mod tile;
mod transpose;
mod value;
mod vectors;

/// Which of the two ABI functions to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `NAME(inputs, input_dims, params, outputs, output_dims)`: runs the program.
    Kernel,
    /// `NAME_shapes(input_dims, params, output_dims)`: writes the output sizes.
    Shapes,
}

/// The signature of an entry.
pub(crate) fn signature(module: &impl Module, entry: Entry) -> cranelift_codegen::ir::Signature {
    let ptr = module.target_config().pointer_type();
    let mut sig = module.make_signature();
    let n = match entry {
        Entry::Kernel => 5,
        Entry::Shapes => 3,
    };
    for _ in 0..n {
        sig.params.push(AbiParam::new(ptr));
    }
    sig.returns.push(AbiParam::new(I32));
    sig
}

/// Fills `func` (whose signature is already [`signature`]) with the code of `entry`.
pub(crate) fn build(
    module: &mut impl Module,
    linking: Linking,
    program: &LoopProgram,
    entry: Entry,
    vectorize: bool,
    func: &mut Function,
    fctx: &mut FunctionBuilderContext,
) -> Result<(), JitError> {
    let ty = match program.dtype {
        DType::F32 => F32,
        DType::F64 => F64,
        DType::I32 => {
            return Err(JitError::Unsupported(
                "a program's float type must be f32 or f64".into(),
            ));
        }
    };
    let config = module.target_config();
    let fma = module.isa().has_native_fma();
    let ptr = config.pointer_type();
    let mut b = FunctionBuilder::new(func, fctx);
    let entry_block = b.create_block();
    b.append_block_params_for_function_params(entry_block);
    b.switch_to_block(entry_block);
    b.seal_block(entry_block);
    let args = b.block_params(entry_block).to_vec();
    let fail = b.create_block();
    b.append_block_param(fail, I32);
    b.set_cold_block(fail);
    let signature = program.signature();
    let mut t = Translator {
        b,
        module,
        linking,
        p: program,
        sig: &signature,
        ty,
        ptr,
        vectorize,
        target: Target::cranelift(fma),
        funcs: HashMap::new(),
        names: HashMap::new(),
        params: HashMap::new(),
        dims: vec![Vec::new(); program.tensors.len()],
        strides: vec![Vec::new(); program.tensors.len()],
        bases: vec![None; program.tensors.len()],
        temps: Vec::new(),
        loops: HashMap::new(),
        vars: HashMap::new(),
        fills: HashMap::new(),
        fail,
    };
    t.declare_vars()?;
    match entry {
        Entry::Kernel => {
            t.bind(args[1], args[2])?;
            t.kernel(args[0], args[3], args[4])?;
        }
        Entry::Shapes => {
            t.bind(args[0], args[1])?;
            t.write_output_shapes(args[2]);
        }
    }
    t.finish_fail_block();
    t.b.seal_all_blocks();
    t.b.finalize(config);
    Ok(())
}

/// State while translating one function.
struct Translator<'f, 'm, M: Module> {
    b: FunctionBuilder<'f>,
    module: &'m mut M,
    linking: Linking,
    p: &'m LoopProgram,
    /// The kernel's interface: what the prologue binds and checks.
    sig: &'m Signature,
    /// The program's float type.
    ty: Type,
    ptr: Type,
    vectorize: bool,
    /// The machine the code is for: 128-bit vectors, tile and block sizes, and
    /// whether the host has fused multiply-add (inline math fuses its multiply-adds).
    target: Target,
    funcs: HashMap<RuntimeFn, FuncRef>,
    /// Named dimensions, bound from the input sizes.
    names: HashMap<String, IrValue>,
    params: HashMap<String, IrValue>,
    /// Concrete sizes of every tensor's axes.
    dims: Vec<Vec<IrValue>>,
    /// Row-major strides in elements (`None` for the last axis, stride 1).
    strides: Vec<Vec<Option<IrValue>>>,
    /// Data pointers (set for inputs, outputs and temporaries in the kernel entry).
    bases: Vec<Option<IrValue>>,
    /// The variables holding temporaries' pointers (null until allocated), freed on exit.
    temps: Vec<Variable>,
    /// The current value of each loop's index, while inside it.
    loops: HashMap<usize, IrValue>,
    vars: HashMap<usize, Variable>,
    /// Stack slots holding fill values of checked loads, by (type, bits).
    fills: HashMap<(DType, u64), cranelift_codegen::ir::StackSlot>,
    /// The exit for errors: frees temporaries and returns its argument.
    fail: cranelift_codegen::ir::Block,
}

/// Where the code being translated sits in the vector and tile code: what
/// [`Translator::address`], [`Translator::value`] and
/// [`Translator::vector_value`] read, passed down explicitly (a new value for each
/// unrolled copy, jam, tile row or reduction loop) instead of mode flags on the
/// translator. The default is scalar code outside any vector loop, jam or tile.
#[derive(Clone, Default)]
struct Cx {
    /// In an unrolled vector loop, the element offset of the copy being emitted from
    /// the loop index (0 outside).
    lane_offset: i64,
    /// Inside a vector loop: its loads that do not move with it, from tensors it
    /// does not write, each loaded and broadcast once before the loop.
    hoisted: Vec<(Access, IrValue)>,
    /// Inside a [jammed](Translator::jammed_rows) nest: the row loop's id, the first of
    /// the rows an accumulation adds at once, and how many.
    jam: Option<(usize, IrValue, i64)>,
    /// Inside a register tile's innermost reduction loop: the row of the tile being
    /// emitted and, per load and row (`None` for loads that do not move with the
    /// rows), the variable carrying its address from one iteration to the next.
    tile_row: Option<i64>,
    pointers: Vec<(Access, Option<i64>, Variable)>,
    /// Inside a run of a vector loop's math calls (`runs.rs`): the calls whose
    /// values are computed already, each with its buffer, and the run's first lane.
    runs: Vec<(Value, cranelift_codegen::ir::StackSlot)>,
    run_start: Option<IrValue>,
}

/// An index value known at compile time or computed at run time.
#[derive(Clone, Copy)]
enum Int {
    Const(i64),
    Dyn(IrValue),
}

fn trusted() -> MemFlagsData {
    MemFlagsData::trusted()
}

impl<M: Module> Translator<'_, '_, M> {
    fn unsupported<T>(&self, what: impl Into<String>) -> Result<T, JitError> {
        Err(JitError::Unsupported(what.into()))
    }

    fn declare_vars(&mut self) -> Result<(), JitError> {
        for block in &self.p.blocks {
            for c in block
                .carried
                .iter()
                .chain(block.loops.iter().flat_map(|l| &l.carried))
            {
                let var = self.b.declare_var(self.ty);
                self.vars.insert(c.var.0, var);
            }
        }
        Ok(())
    }

    /// Continues in a new block when `ok` is non-zero, else returns `status`.
    fn check(&mut self, ok: IrValue, status: Status) {
        let cont = self.b.create_block();
        let code = self.b.ins().iconst(I32, status as i64);
        self.b
            .ins()
            .brif(ok, cont, &[], self.fail, &[BlockArg::Value(code)]);
        self.b.switch_to_block(cont);
        self.b.seal_block(cont);
    }

    fn finish_fail_block(&mut self) {
        self.b.switch_to_block(self.fail);
        let code = self.b.block_params(self.fail)[0];
        for k in 0..self.temps.len() {
            let p = self.b.use_var(self.temps[k]);
            self.call(RuntimeFn::Free, &[p]);
        }
        self.b.ins().return_(&[code]);
    }

    fn func(&mut self, f: RuntimeFn) -> FuncRef {
        if let Some(r) = self.funcs.get(&f) {
            return *r;
        }
        let mut sig = self.module.make_signature();
        let ptr = self.ptr;
        match f {
            RuntimeFn::Math(_) => {
                sig.params.push(AbiParam::new(F64));
                sig.returns.push(AbiParam::new(F64));
            }
            RuntimeFn::Pow => {
                sig.params.extend([AbiParam::new(F64), AbiParam::new(F64)]);
                sig.returns.push(AbiParam::new(F64));
            }
            RuntimeFn::Alloc => {
                if self.linking == Linking::Object {
                    sig.params.push(AbiParam::new(I64));
                }
                sig.params.push(AbiParam::new(I64));
                sig.returns.push(AbiParam::new(ptr));
            }
            RuntimeFn::Free | RuntimeFn::Contract(_) => sig.params.push(AbiParam::new(ptr)),
            RuntimeFn::MathRun => {
                sig.params
                    .extend([AbiParam::new(I32), AbiParam::new(ptr), AbiParam::new(I64)]);
            }
            RuntimeFn::Pack => {
                sig.params.push(AbiParam::new(ptr));
                sig.returns.push(AbiParam::new(ptr));
            }
            RuntimeFn::Zero => {
                sig.params.push(AbiParam::new(ptr));
                if self.linking == Linking::Object {
                    sig.params.push(AbiParam::new(I32));
                    sig.returns.push(AbiParam::new(ptr));
                }
                sig.params.push(AbiParam::new(I64));
            }
        }
        // Declaring an import only fails on a clashing signature or on a clash with
        // the kernel's own symbols, which a fixed table of distinct names and the C
        // name rule (`backend::names`, which refuses every import's name) exclude.
        let id = self
            .module
            .declare_function(f.symbol(self.linking), Linkage::Import, &sig)
            .unwrap_or_else(|e| unreachable!("runtime function declarations are consistent: {e}"));
        let r = self.module.declare_func_in_func(id, self.b.func);
        self.funcs.insert(f, r);
        r
    }

    fn call(&mut self, f: RuntimeFn, args: &[IrValue]) -> Option<IrValue> {
        let r = self.func(f);
        let inst = self.b.ins().call(r, args);
        self.b.inst_results(inst).first().copied()
    }
}
