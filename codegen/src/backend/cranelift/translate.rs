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
use super::vector::{self, Stride, VectorPlan};
use super::vmath::{self, Inline};

mod tile;

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
        lane_offset: 0,
        hoisted: Vec::new(),
        jam: None,
        wrapping: false,
        tile_row: None,
        pointers: Vec::new(),
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
    /// In an unrolled vector loop, the element offset of the copy being emitted from
    /// the loop index (0 outside).
    lane_offset: i64,
    /// Inside a vector loop: its loads that do not move with it, from tensors it
    /// does not write, each loaded and broadcast once before the loop.
    hoisted: Vec<(Access, IrValue)>,
    /// Inside a [jammed](Self::jammed_rows) nest: the row loop's id, the first of
    /// the rows an accumulation adds at once, and how many.
    jam: Option<(usize, IrValue, i64)>,
    /// While computing a subscript of an access proven in range from `+ - *` alone:
    /// the arithmetic wraps instead of being checked for overflow. Wrapping
    /// arithmetic is exact modulo 2^64, and the true value lies in `0..dim`, so the
    /// wrapped result is the true value.
    wrapping: bool,
    /// Inside a register tile's innermost reduction loop: the row of the tile being
    /// emitted and, per load and row (`None` for loads that do not move with the
    /// rows), the variable carrying its address from one iteration to the next.
    tile_row: Option<i64>,
    pointers: Vec<(Access, Option<i64>, Variable)>,
    /// The exit for errors: frees temporaries and returns its argument.
    fail: cranelift_codegen::ir::Block,
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

    // ------------------------------------------------------------ control flow

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
            RuntimeFn::Free => sig.params.push(AbiParam::new(ptr)),
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

    // ------------------------------------------------------------ index arithmetic

    fn materialize(&mut self, v: Int) -> IrValue {
        match v {
            Int::Const(c) => self.b.ins().iconst(I64, c),
            Int::Dyn(v) => v,
        }
    }

    fn overflow_checked(&mut self, pair: (IrValue, IrValue)) -> IrValue {
        let (r, overflow) = pair;
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
        self.check(ok, Status::IndexArithmetic);
        r
    }

    fn index(&mut self, e: &Expr) -> Result<IrValue, JitError> {
        let v = self.int(e)?;
        Ok(self.materialize(v))
    }

    fn int(&mut self, e: &Expr) -> Result<Int, JitError> {
        Ok(match e {
            Expr::Int(v) => Int::Const(*v),
            Expr::Index(n) => match self.loops.get(n) {
                Some(v) => Int::Dyn(*v),
                None => return self.unsupported(format!("i{n} is used outside its loop")),
            },
            Expr::Name(n) => match self.names.get(n) {
                Some(v) => Int::Dyn(*v),
                None => {
                    return self.unsupported(format!(
                        "the size `{n}` is not a named dimension of any input"
                    ));
                }
            },
            Expr::Param(n) => match self.params.get(n) {
                Some(v) => Int::Dyn(*v),
                None => return self.unsupported(format!("`${n}` is not a declared param")),
            },
            Expr::Dim(..) => {
                return self.unsupported(format!("`{e}` refers to a shape source"));
            }
            Expr::Neg(a) => {
                let zero = Expr::Int(0);
                return self.binary_int(IndexOp::Sub, &zero, a);
            }
            Expr::Bin(op, a, b) => return self.binary_int(*op, a, b),
        })
    }

    fn binary_int(&mut self, op: IndexOp, a: &Expr, b: &Expr) -> Result<Int, JitError> {
        let (x, y) = (self.int(a)?, self.int(b)?);
        if let (Int::Const(u), Int::Const(v)) = (x, y) {
            // Folded exactly as the interpreter evaluates; a failing fold is left to
            // fail at run time, where the error belongs.
            let folded = Expr::bin(op, Expr::Int(u), Expr::Int(v)).eval(&Bindings::default());
            if let Ok(c) = folded {
                return Ok(Int::Const(c));
            }
        }
        let xv = self.materialize(x);
        let ins_y = y;
        let yv = self.materialize(y);
        let r = match op {
            IndexOp::Add if self.wrapping => self.b.ins().iadd(xv, yv),
            IndexOp::Sub if self.wrapping => self.b.ins().isub(xv, yv),
            IndexOp::Mul if self.wrapping => self.b.ins().imul(xv, yv),
            IndexOp::Add => {
                let pair = self.b.ins().sadd_overflow(xv, yv);
                self.overflow_checked(pair)
            }
            IndexOp::Sub => {
                let pair = self.b.ins().ssub_overflow(xv, yv);
                self.overflow_checked(pair)
            }
            IndexOp::Mul => {
                let pair = self.b.ins().smul_overflow(xv, yv);
                self.overflow_checked(pair)
            }
            IndexOp::Min => self.b.ins().smin(xv, yv),
            IndexOp::Max => self.b.ins().smax(xv, yv),
            IndexOp::Div | IndexOp::Mod => self.floor_div_mod(op, xv, yv, ins_y),
        };
        Ok(Int::Dyn(r))
    }

    /// Floor division or modulo; a positive literal divisor needs no checks.
    fn floor_div_mod(&mut self, op: IndexOp, a: IrValue, b: IrValue, divisor: Int) -> IrValue {
        let positive = matches!(divisor, Int::Const(c) if c > 0);
        if !positive {
            let nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, b, 0);
            self.check(nonzero, Status::IndexArithmetic);
            let a_min = self.b.ins().icmp_imm_s(IntCC::Equal, a, i64::MIN);
            let b_neg1 = self.b.ins().icmp_imm_s(IntCC::Equal, b, -1);
            let overflow = self.b.ins().band(a_min, b_neg1);
            let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
            self.check(ok, Status::IndexArithmetic);
        }
        let q = self.b.ins().sdiv(a, b);
        let r = self.b.ins().srem(a, b);
        // The truncated quotient is one too large when the remainder is non-zero and
        // its sign differs from the divisor's.
        let r_nonzero = self.b.ins().icmp_imm_s(IntCC::NotEqual, r, 0);
        let signs = self.b.ins().bxor(r, b);
        let differ = self.b.ins().icmp_imm_s(IntCC::SignedLessThan, signs, 0);
        let fix = self.b.ins().band(r_nonzero, differ);
        match op {
            IndexOp::Div => {
                let fix = self.b.ins().uextend(I64, fix);
                self.b.ins().isub(q, fix)
            }
            _ => {
                let adjusted = self.b.ins().iadd(r, b);
                self.b.ins().select(fix, adjusted, r)
            }
        }
    }

    // ------------------------------------------------------------ prologue

    /// Binds the kernel's [`Signature`]: loads and checks the input sizes and params,
    /// checks the assertions and computes the outputs' shapes; then every
    /// temporary's shape and every tensor's strides.
    fn bind(&mut self, input_dims: IrValue, params: IrValue) -> Result<(), JitError> {
        let sig = self.sig;
        let mut at = 0i32;
        for (spec, &t) in sig.inputs.iter().zip(&self.p.inputs) {
            let mut dims = Vec::with_capacity(spec.shape.len());
            for e in &spec.shape {
                let d = self.b.ins().load(I64, trusted(), input_dims, at * 8);
                at += 1;
                let ok = self
                    .b
                    .ins()
                    .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, 0);
                self.check(ok, Status::InputShape);
                match e {
                    Expr::Int(v) => {
                        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, d, *v);
                        self.check(ok, Status::InputShape);
                    }
                    Expr::Name(n) => match self.names.get(n) {
                        Some(&prev) => {
                            let ok = self.b.ins().icmp(IntCC::Equal, d, prev);
                            self.check(ok, Status::InputShape);
                        }
                        None => {
                            self.names.insert(n.clone(), d);
                        }
                    },
                    _ => {}
                }
                dims.push(d);
            }
            self.dims[t.0] = dims;
        }
        for (k, name) in sig.params.iter().enumerate() {
            let v = self.b.ins().load(I64, trusted(), params, (k * 8) as i32);
            self.params.insert(name.clone(), v);
        }
        for (l, r) in &sig.assertions {
            let (lv, rv) = (self.index(l)?, self.index(r)?);
            let ok = self.b.ins().icmp(IntCC::Equal, lv, rv);
            self.check(ok, Status::Assertion);
        }
        for (spec, &t) in sig.outputs.iter().zip(&self.p.outputs) {
            self.dims[t.0] = self.sizes(&spec.shape)?;
        }
        for (k, decl) in self.p.tensors.iter().enumerate() {
            if decl.kind != TensorKind::Temp {
                continue;
            }
            let mut dims = self.sizes(&decl.shape)?;
            // A row-local temporary keeps one row: its row axis has size 1 in
            // storage (its accesses are unchecked, see `address`).
            if let Some(axis) = decl.row_local {
                dims[axis] = self.b.ins().iconst(I64, 1);
            }
            self.dims[k] = dims;
        }
        // Every input's and output's size in bytes fits 63 bits (no buffer the caller
        // holds can be larger): then no stride below wraps for them, and the output
        // zeroing's byte count is exact.
        let interface: Vec<usize> = self
            .p
            .inputs
            .iter()
            .chain(&self.p.outputs)
            .map(|t| t.0)
            .collect();
        for k in interface {
            self.checked_bytes(k, Status::TooLarge);
        }
        for k in 0..self.p.tensors.len() {
            let rank = self.dims[k].len();
            let mut strides = vec![None; rank];
            let mut acc: Option<IrValue> = None;
            for axis in (0..rank).rev() {
                strides[axis] = acc;
                let d = self.dims[k][axis];
                acc = Some(match acc {
                    None => d,
                    // Wrapping is harmless: inputs and outputs were checked above, and a
                    // temporary whose size overflows is refused before any loop runs.
                    Some(s) => self.b.ins().imul(s, d),
                });
            }
            self.strides[k] = strides;
        }
        Ok(())
    }

    /// The values of the size expressions `shape`, each checked to be non-negative.
    fn sizes(&mut self, shape: &[Expr]) -> Result<Vec<IrValue>, JitError> {
        let mut dims = Vec::with_capacity(shape.len());
        for e in shape {
            let d = self.index(e)?;
            let ok = self
                .b
                .ins()
                .icmp_imm_s(IntCC::SignedGreaterThanOrEqual, d, 0);
            self.check(ok, Status::NegativeSize);
            dims.push(d);
        }
        Ok(dims)
    }

    fn write_output_shapes(&mut self, out: IrValue) {
        let mut at = 0i32;
        for &t in &self.p.outputs {
            for k in 0..self.dims[t.0].len() {
                let d = self.dims[t.0][k];
                self.b.ins().store(trusted(), d, out, at * 8);
                at += 1;
            }
        }
        let ok = self.b.ins().iconst(I32, 0);
        self.b.ins().return_(&[ok]);
    }

    /// Byte count of tensor `k`, failing with `status` when it overflows 63 bits.
    fn checked_bytes(&mut self, k: usize, status: Status) -> IrValue {
        let size = self.p.tensors[k].dtype.size() as i64;
        let mut n = self.b.ins().iconst(I64, size);
        for axis in 0..self.dims[k].len() {
            let d = self.dims[k][axis];
            let (r, overflow) = self.b.ins().smul_overflow(n, d);
            let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
            self.check(ok, status);
            n = r;
        }
        n
    }

    fn kernel(
        &mut self,
        inputs: IrValue,
        outputs: IrValue,
        output_dims: IrValue,
    ) -> Result<(), JitError> {
        let mut at = 0i32;
        for k in 0..self.p.outputs.len() {
            let t = self.p.outputs[k];
            for axis in 0..self.dims[t.0].len() {
                let given = self.b.ins().load(I64, trusted(), output_dims, at * 8);
                at += 1;
                let ok = self.b.ins().icmp(IntCC::Equal, given, self.dims[t.0][axis]);
                self.check(ok, Status::OutputShape);
            }
        }
        let pw = self.ptr.bytes() as i32;
        for k in 0..self.p.inputs.len() {
            let t = self.p.inputs[k];
            let base = self
                .b
                .ins()
                .load(self.ptr, trusted(), inputs, k as i32 * pw);
            self.bases[t.0] = Some(base);
        }
        for k in 0..self.p.outputs.len() {
            let t = self.p.outputs[k];
            let base = self
                .b
                .ins()
                .load(self.ptr, trusted(), outputs, k as i32 * pw);
            self.bases[t.0] = Some(base);
        }
        let temps: Vec<usize> = (0..self.p.tensors.len())
            .filter(|&k| self.p.tensors[k].kind == TensorKind::Temp)
            .collect();
        for _ in &temps {
            let var = self.b.declare_var(self.ptr);
            let null = self.b.ins().iconst(self.ptr, 0);
            self.b.def_var(var, null);
            self.temps.push(var);
        }
        for (slot, &k) in temps.iter().enumerate() {
            let bytes = self.checked_bytes(k, Status::Memory);
            // calloc(0) may return null; ask for at least one byte.
            let one = self.b.ins().iconst(I64, 1);
            let bytes = self.b.ins().smax(bytes, one);
            let args = match self.linking {
                Linking::Jit => vec![bytes],
                Linking::Object => vec![one, bytes],
            };
            let p = self.call(RuntimeFn::Alloc, &args).unwrap_or(one);
            self.b.def_var(self.temps[slot], p);
            let ok = self.b.ins().icmp_imm_s(IntCC::NotEqual, p, 0);
            self.check(ok, Status::Memory);
            self.bases[k] = Some(p);
        }
        for k in 0..self.p.outputs.len() {
            let t = self.p.outputs[k];
            if crate::loops::analysis::fully_written_first(self.p, t) {
                continue;
            }
            let size = self.p.tensors[t.0].dtype.size() as i64;
            let mut bytes = self.b.ins().iconst(I64, size);
            for axis in 0..self.dims[t.0].len() {
                bytes = self.b.ins().imul(bytes, self.dims[t.0][axis]);
            }
            let base = self.bases[t.0].unwrap_or(bytes);
            match self.linking {
                Linking::Jit => self.call(RuntimeFn::Zero, &[base, bytes]),
                Linking::Object => {
                    let zero = self.b.ins().iconst(I32, 0);
                    self.call(RuntimeFn::Zero, &[base, zero, bytes])
                }
            };
        }
        self.make_fill_slots();
        let blocks = &self.p.blocks;
        let mut first = 0;
        for k in 1..=blocks.len() {
            let joined = blocks
                .get(k)
                .and_then(|b| b.loops.first())
                .is_some_and(|l| l.schedule.joined);
            if !joined {
                match &blocks[first..k] {
                    [b] => self.block(b)?,
                    group => self.joined(group)?,
                }
                first = k;
            }
        }
        for slot in 0..self.temps.len() {
            let p = self.b.use_var(self.temps[slot]);
            self.call(RuntimeFn::Free, &[p]);
        }
        let ok = self.b.ins().iconst(I32, 0);
        self.b.ins().return_(&[ok]);
        Ok(())
    }

    /// One stack slot per distinct fill value of a checked load, written once here.
    fn make_fill_slots(&mut self) {
        let mut wanted: Vec<(DType, f64)> = Vec::new();
        for block in &self.p.blocks {
            let stmts = block
                .stmts
                .iter()
                .chain(block.loops.iter().flat_map(|l| &l.stmts));
            for s in stmts {
                let (access, value) = match s {
                    Stmt::Store { access, value } | Stmt::Accumulate { access, value, .. } => {
                        (Some(access), value)
                    }
                    Stmt::Update { value, .. } => (None, value),
                };
                if let Some(a) = access {
                    for sub in &a.index {
                        if let Subscript::Value(v) = sub {
                            checked_fills(self.p, v, &mut wanted);
                        }
                    }
                }
                checked_fills(self.p, value, &mut wanted);
            }
        }
        for (dtype, fill) in wanted {
            let fill = dtype.round(fill);
            let key = (dtype, fill.to_bits());
            if self.fills.contains_key(&key) {
                continue;
            }
            let slot = self.b.create_sized_stack_slot(StackSlotData::new(
                StackSlotKind::ExplicitSlot,
                8,
                3,
            ));
            let v = match dtype {
                DType::F32 => self.b.ins().f32const(fill as f32),
                DType::F64 => self.b.ins().f64const(fill),
                DType::I32 => self.b.ins().iconst(I32, fill as i32 as i64),
            };
            self.b.ins().stack_store(self.ptr, v, slot, 0);
            self.fills.insert(key, slot);
        }
    }

    // ------------------------------------------------------------ loops

    fn block(&mut self, block: &Block) -> Result<(), JitError> {
        self.reset(&block.carried);
        self.nest(&block.loops)?;
        for s in &block.stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    /// [Joined](crate::loops::Schedule::joined) blocks as one loop over their rows:
    /// row `i` of each block in turn, each block's outer index bound to `i`.
    fn joined(&mut self, blocks: &[Block]) -> Result<(), JitError> {
        let outer = &blocks[0].loops[0];
        let start = self.index(&outer.start)?;
        let end = self.index(&outer.end)?;
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        self.scalar_loop(iv, end, |t, i| {
            for b in blocks {
                let (l, inner) = (&b.loops[0], &b.loops[1..]);
                t.loops.insert(l.id.0, i);
                t.iteration(l, inner)?;
            }
            Ok(())
        })?;
        for b in blocks {
            self.loops.remove(&b.loops[0].id.0);
        }
        Ok(())
    }

    /// A nest `for r { for c { y[..] op= f(r, c) } }` of [`vector::jam_plan`]:
    /// [`Target::jam_rows`] rows at a time (a power of two), each element of `y` loaded once, combined with the
    /// rows' values in row order and stored once (a column sum: one load and one
    /// store of `y` per four rows instead of per row); the last rows run plainly.
    /// Every element gets the same operations in the same order.
    fn jammed_rows(&mut self, r: &Loop, c: &Loop) -> Result<(), JitError> {
        let jam = i64::from(self.target.jam_rows);
        let start = self.index(&r.start)?;
        let end = self.index(&r.end)?;
        let count = self.trip_count(start, end);
        let whole = self.b.ins().band_imm_s(count, -jam);
        let jam_end = self.b.ins().iadd(start, whole);
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        self.counted_loop(iv, jam_end, jam, |t, i| {
            t.loops.insert(r.id.0, i);
            t.jam = Some((r.id.0, i, jam));
            let inner = t.nest(std::slice::from_ref(c));
            t.jam = None;
            inner
        })?;
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(r.id.0, i);
            t.nest(std::slice::from_ref(c))
        })?;
        self.loops.remove(&r.id.0);
        Ok(())
    }

    /// The number of iterations of `start..end`, at least 0. An `end - start` that
    /// overflows is an index-arithmetic error (such a range is empty or its
    /// arithmetic check fails first anyway).
    fn trip_count(&mut self, start: IrValue, end: IrValue) -> IrValue {
        let (count, overflow) = self.b.ins().ssub_overflow(end, start);
        let ok = self.b.ins().icmp_imm_s(IntCC::Equal, overflow, 0);
        self.check(ok, Status::IndexArithmetic);
        let zero = self.b.ins().iconst(I64, 0);
        self.b.ins().smax(count, zero)
    }

    /// `value` for each row of the jam in force (in row order), or once outside one.
    fn jammed<T>(
        &mut self,
        mut value: impl FnMut(&mut Self) -> Result<T, JitError>,
    ) -> Result<Vec<T>, JitError> {
        let Some((r, first, rows)) = self.jam else {
            return Ok(vec![value(self)?]);
        };
        let mut out = Vec::with_capacity(rows as usize);
        for k in 0..rows {
            let row = self.b.ins().iadd_imm_s(first, k);
            self.loops.insert(r, row);
            out.push(value(self)?);
        }
        self.loops.insert(r, first);
        Ok(out)
    }

    fn reset(&mut self, carried: &[crate::loops::Carried]) {
        for c in carried {
            let v = self.float_const(c.op.identity());
            self.b.def_var(self.vars[&c.var.0], v);
        }
    }

    fn nest(&mut self, loops: &[Loop]) -> Result<(), JitError> {
        let Some((outer, inner)) = loops.split_first() else {
            return Ok(());
        };
        if self.vectorize
            && inner.first().is_some_and(|c| c.schedule.tile.is_some())
            && let Some(reductions) = vector::tile_plan(self.p, loops)
        {
            return self.tiled(loops, &reductions);
        }
        if let [c] = inner
            && self.vectorize
            && let Some((dst, src)) = vector::transpose_plan(self.p, outer, c)
        {
            return self.blocked_transpose(outer, c, dst, src);
        }
        if let [c] = inner
            && self.vectorize
            && vector::jam_plan(self.p, outer, c)
        {
            return self.jammed_rows(outer, c);
        }
        let start = self.index(&outer.start)?;
        let end = self.index(&outer.end)?;
        let iv = self.b.declare_var(I64);
        self.b.def_var(iv, start);
        if inner.is_empty()
            && self.vectorize
            && let Some(plan) = vector::plan(self.p, outer)
        {
            self.vector_loop(outer, &plan, iv, start, end)?;
        }
        self.scalar_loop(iv, end, |t, i| {
            t.loops.insert(outer.id.0, i);
            t.iteration(outer, inner)
        })?;
        self.loops.remove(&outer.id.0);
        Ok(())
    }

    /// One iteration of `l`, its index already bound: its carried variables reset,
    /// the loops `inner` inside it, then its statements.
    fn iteration(&mut self, l: &Loop, inner: &[Loop]) -> Result<(), JitError> {
        self.reset(&l.carried);
        self.nest(inner)?;
        for s in &l.stmts {
            self.stmt(s)?;
        }
        Ok(())
    }

    /// `while iv < end { body(iv); iv += 1 }`.
    fn scalar_loop(
        &mut self,
        iv: Variable,
        end: IrValue,
        body: impl FnOnce(&mut Self, IrValue) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        self.counted_loop(iv, end, 1, body)
    }

    fn counted_loop(
        &mut self,
        iv: Variable,
        end: IrValue,
        step: i64,
        body: impl FnOnce(&mut Self, IrValue) -> Result<(), JitError>,
    ) -> Result<(), JitError> {
        let header = self.b.create_block();
        let body_block = self.b.create_block();
        let exit = self.b.create_block();
        self.b.ins().jump(header, &[]);
        self.b.switch_to_block(header);
        let i = self.b.use_var(iv);
        let more = self.b.ins().icmp(IntCC::SignedLessThan, i, end);
        self.b.ins().brif(more, body_block, &[], exit, &[]);
        self.b.switch_to_block(body_block);
        self.b.seal_block(body_block);
        body(self, i)?;
        // i < end <= i64::MAX, and a vector step stops `step` short of end: no overflow.
        let next = self.b.ins().iadd_imm_s(i, step);
        self.b.def_var(iv, next);
        self.b.ins().jump(header, &[]);
        self.b.seal_block(header);
        self.b.switch_to_block(exit);
        self.b.seal_block(exit);
        Ok(())
    }

    // ------------------------------------------------------------ statements

    /// Checks that `a` may be written by `what` and returns the target's element type:
    /// the program's float type, or i32 for plain stores (an index tensor relabeled by
    /// a `reindex`, e.g. `index_select` broadcasting its index).
    fn target_type(&self, a: &Access, what: &str) -> Result<DType, JitError> {
        let Some(decl) = self.p.tensors.get(a.tensor.0) else {
            return self.unsupported(format!("tensor %{} does not exist", a.tensor.0));
        };
        if decl.kind == TensorKind::Input {
            return self.unsupported(format!("the input `{}` is written", decl.name));
        }
        let integer_store = decl.dtype == DType::I32 && what == "a store";
        if decl.dtype != self.p.dtype && !integer_store {
            return self.unsupported(format!(
                "{what} into `{}` of type {} in an {} program",
                decl.name, decl.dtype, self.p.dtype
            ));
        }
        Ok(decl.dtype)
    }

    fn stmt(&mut self, s: &Stmt) -> Result<(), JitError> {
        match s {
            Stmt::Store { access, value } => {
                let target = self.target_type(access, "a store")?;
                let mut v = self.value(value)?;
                if target == DType::I32 {
                    // Truncating and saturating, NaN to 0: `DType::I32.round`, Rust's `as i32`.
                    v = self.b.ins().fcvt_to_sint_sat(I32, v);
                }
                self.guarded(access, |t, addr| {
                    t.b.ins().store(trusted(), v, addr, 0);
                })?;
            }
            Stmt::Accumulate { access, op, value } => {
                self.target_type(access, "an accumulation")?;
                let vs = self.jammed(|t| t.value(value))?;
                let ty = self.ty;
                self.guarded(access, |t, addr| {
                    let mut acc = t.b.ins().load(ty, trusted(), addr, 0);
                    for &v in &vs {
                        acc = t.combine(*op, acc, v);
                    }
                    t.b.ins().store(trusted(), acc, addr, 0);
                })?;
            }
            Stmt::Update { var, op, value } => {
                let v = self.value(value)?;
                let Some(&variable) = self.vars.get(&var.0) else {
                    return self.unsupported(format!("v{} is not carried by any loop", var.0));
                };
                let acc = self.b.use_var(variable);
                let new = self.combine(*op, acc, v);
                self.b.def_var(variable, new);
            }
        }
        Ok(())
    }

    /// Runs `write` on the element's address, skipping it when a checked access is
    /// out of range.
    fn guarded(
        &mut self,
        access: &Access,
        write: impl FnOnce(&mut Self, IrValue),
    ) -> Result<(), JitError> {
        let (addr, in_range) = self.address(access)?;
        match in_range {
            None => write(self, addr),
            Some(ok) => {
                let then = self.b.create_block();
                let cont = self.b.create_block();
                self.b.ins().brif(ok, then, &[], cont, &[]);
                self.b.switch_to_block(then);
                self.b.seal_block(then);
                write(self, addr);
                self.b.ins().jump(cont, &[]);
                self.b.switch_to_block(cont);
                self.b.seal_block(cont);
            }
        }
        Ok(())
    }

    fn combine(&mut self, op: Accum, acc: IrValue, v: IrValue) -> IrValue {
        match op {
            Accum::Add => self.b.ins().fadd(acc, v),
            Accum::Mul => self.b.ins().fmul(acc, v),
            Accum::Max => self.b.ins().fmax(acc, v),
            Accum::Min => self.b.ins().fmin(acc, v),
        }
    }

    // ------------------------------------------------------------ accesses

    fn subscript(&mut self, s: &Subscript) -> Result<IrValue, JitError> {
        match s {
            Subscript::Expr(e) => self.index(e),
            Subscript::Value(v) => {
                if let Value::Load { access, fill } = v.as_ref()
                    && self.p.tensors.get(access.tensor.0).map(|t| t.dtype) == Some(DType::I32)
                {
                    let raw = self.load_raw(access, *fill, DType::I32)?;
                    return Ok(self.b.ins().sextend(I64, raw));
                }
                let x = self.value(v)?;
                let f = self.b.ins().floor(x);
                Ok(self.b.ins().fcvt_to_sint_sat(I64, f))
            }
        }
    }

    /// The address of an element and, for a checked access, whether it is in range.
    fn address(&mut self, a: &Access) -> Result<(IrValue, Option<IrValue>), JitError> {
        if let Some(row) = self.tile_row
            && let Some(&(.., var)) = self
                .pointers
                .iter()
                .find(|(b, r, _)| b == a && r.is_none_or(|r| r == row))
        {
            return Ok((self.b.use_var(var), None));
        }
        let k = a.tensor.0;
        let Some(decl) = self.p.tensors.get(k) else {
            return self.unsupported(format!("tensor %{k} does not exist"));
        };
        if a.index.len() != decl.shape.len() {
            return self.unsupported(format!(
                "`{}` has rank {} but is accessed with {} subscripts",
                decl.name,
                decl.shape.len(),
                a.index.len()
            ));
        }
        let Some(base) = self.bases[k] else {
            return self.unsupported(format!("`{}` has no storage", decl.name));
        };
        let mut offset: Option<IrValue> = None;
        let mut in_range: Option<IrValue> = None;
        for (axis, s) in a.index.iter().enumerate() {
            if decl.row_local == Some(axis) {
                continue; // the row being worked on is the only one kept
            }
            let sv = match s {
                Subscript::Expr(e) if !a.checked && ring_only(e) => {
                    self.wrapping = true;
                    let sv = self.index(e);
                    self.wrapping = false;
                    sv?
                }
                _ => self.subscript(s)?,
            };
            if a.checked {
                let ok = self
                    .b
                    .ins()
                    .icmp(IntCC::UnsignedLessThan, sv, self.dims[k][axis]);
                in_range = Some(match in_range {
                    None => ok,
                    Some(prev) => self.b.ins().band(prev, ok),
                });
            }
            let term = match self.strides[k][axis] {
                None => sv,
                Some(st) => self.b.ins().imul(sv, st),
            };
            offset = Some(match offset {
                None => term,
                Some(o) => self.b.ins().iadd(o, term),
            });
        }
        let addr = match offset {
            None => base,
            Some(o) => {
                let shift = decl.dtype.size().trailing_zeros() as i64;
                let bytes = self.b.ins().ishl_imm_u(o, shift);
                self.b.ins().iadd(base, bytes)
            }
        };
        Ok((addr, in_range))
    }

    /// Loads an element in its own type; out of range (when checked) reads `fill`.
    fn load_raw(&mut self, a: &Access, fill: f64, dtype: DType) -> Result<IrValue, JitError> {
        let ty = match dtype {
            DType::F32 => F32,
            DType::F64 => F64,
            DType::I32 => I32,
        };
        let (addr, in_range) = self.address(a)?;
        let addr = match in_range {
            None => addr,
            Some(ok) => {
                let key = (dtype, dtype.round(fill).to_bits());
                let Some(&slot) = self.fills.get(&key) else {
                    return self.unsupported("a fill value was not prepared");
                };
                let fallback = self.b.ins().stack_addr(self.ptr, slot, 0);
                self.b.ins().select(ok, addr, fallback)
            }
        };
        Ok(self.b.ins().load(ty, trusted(), addr, 0))
    }

    // ------------------------------------------------------------ values

    fn float_const(&mut self, c: f64) -> IrValue {
        if self.ty == F32 {
            self.b.ins().f32const(c as f32)
        } else {
            self.b.ins().f64const(c)
        }
    }

    fn wide_const(&mut self, c: f64) -> IrValue {
        self.b.ins().f64const(c)
    }

    /// An i64 as the program's float type, rounded once from f64 like the interpreter.
    fn int_to_float(&mut self, v: IrValue) -> IrValue {
        let wide = self.b.ins().fcvt_from_sint(F64, v);
        self.narrow(wide)
    }

    fn widen(&mut self, x: IrValue) -> IrValue {
        if self.ty == F32 {
            self.b.ins().fpromote(F64, x)
        } else {
            x
        }
    }

    fn narrow(&mut self, x: IrValue) -> IrValue {
        if self.ty == F32 {
            self.b.ins().fdemote(F32, x)
        } else {
            x
        }
    }

    fn value(&mut self, v: &Value) -> Result<IrValue, JitError> {
        Ok(match v {
            Value::Load { access, fill } => {
                let Some(decl) = self.p.tensors.get(access.tensor.0) else {
                    return self.unsupported(format!("tensor %{} does not exist", access.tensor.0));
                };
                let dtype = decl.dtype;
                if dtype == DType::I32 {
                    let raw = self.load_raw(access, *fill, dtype)?;
                    let wide = self.b.ins().fcvt_from_sint(F64, raw);
                    self.narrow(wide)
                } else if dtype == self.p.dtype {
                    self.load_raw(access, *fill, dtype)?
                } else {
                    return self.unsupported(format!(
                        "`{}` is {dtype} in an {} program",
                        decl.name, self.p.dtype
                    ));
                }
            }
            Value::Var(var) => match self.vars.get(&var.0) {
                Some(&variable) => self.b.use_var(variable),
                None => return self.unsupported(format!("v{} is not carried by any loop", var.0)),
            },
            Value::Const(c) => self.float_const(*c),
            Value::Param(p) => {
                let Some(&v) = self.params.get(p) else {
                    return self.unsupported(format!("`${p}` is not a declared param"));
                };
                self.int_to_float(v)
            }
            Value::Index(e) => {
                let i = self.index(e)?;
                self.int_to_float(i)
            }
            Value::Unary(op, x) => {
                let x = self.value(x)?;
                self.unary(*op, x)
            }
            Value::Binary(op, a, b) => {
                let a = self.value(a)?;
                let b = self.value(b)?;
                self.binary(*op, a, b)
            }
            Value::Where(c, a, b) => {
                let c = self.value(c)?;
                let a = self.value(a)?;
                let b = self.value(b)?;
                let zero = self.float_const(0.0);
                let holds = self.b.ins().fcmp(FloatCC::NotEqual, c, zero);
                self.b.ins().select(holds, a, b)
            }
        })
    }

    /// A scalar unary operation in the program's float type.
    fn unary(&mut self, op: UnaryOp, x: IrValue) -> IrValue {
        if self.ty == F32
            && let Some(f) = Inline::of(op)
        {
            return vmath::emit(&mut self.b, f, x, self.target.fma);
        }
        let math = |m: MathFn| RuntimeFn::Math(m);
        let wide_call = |t: &mut Self, f: RuntimeFn, x: IrValue| {
            let w = t.widen(x);
            let r = t.call(f, &[w]).unwrap_or(w);
            t.narrow(r)
        };
        match op {
            UnaryOp::Neg => self.b.ins().fneg(x),
            UnaryOp::Abs => self.b.ins().fabs(x),
            UnaryOp::Sqrt => self.b.ins().sqrt(x),
            UnaryOp::Floor => self.b.ins().floor(x),
            UnaryOp::Ceil => self.b.ins().ceil(x),
            UnaryOp::Recip => {
                let one = self.float_const(1.0);
                self.b.ins().fdiv(one, x)
            }
            UnaryOp::Exp => wide_call(self, math(MathFn::Exp), x),
            UnaryOp::Log => wide_call(self, math(MathFn::Log), x),
            UnaryOp::Tanh => wide_call(self, math(MathFn::Tanh), x),
            UnaryOp::Sin => wide_call(self, math(MathFn::Sin), x),
            UnaryOp::Cos => wide_call(self, math(MathFn::Cos), x),
            UnaryOp::Erf => wide_call(self, math(MathFn::Erf), x),
            UnaryOp::Rsqrt => {
                let w = self.widen(x);
                let s = self.b.ins().sqrt(w);
                let one = self.wide_const(1.0);
                let r = self.b.ins().fdiv(one, s);
                self.narrow(r)
            }
            UnaryOp::Sigmoid => {
                let w = self.widen(x);
                let n = self.b.ins().fneg(w);
                let e = self.call(math(MathFn::Exp), &[n]).unwrap_or(n);
                let one = self.wide_const(1.0);
                let d = self.b.ins().fadd(one, e);
                let r = self.b.ins().fdiv(one, d);
                self.narrow(r)
            }
            UnaryOp::Sign => {
                let zero = self.float_const(0.0);
                let one = self.float_const(1.0);
                let minus = self.float_const(-1.0);
                let nan = self.b.ins().fcmp(FloatCC::Unordered, x, x);
                let zero_or_nan = self.b.ins().select(nan, x, zero);
                let neg = self.b.ins().fcmp(FloatCC::LessThan, x, zero);
                let r = self.b.ins().select(neg, minus, zero_or_nan);
                let pos = self.b.ins().fcmp(FloatCC::GreaterThan, x, zero);
                self.b.ins().select(pos, one, r)
            }
        }
    }

    /// A scalar binary operation in the program's float type.
    fn binary(&mut self, op: BinaryOp, a: IrValue, b: IrValue) -> IrValue {
        let compare = |t: &mut Self, cc: FloatCC| {
            let c = t.b.ins().fcmp(cc, a, b);
            let one = t.float_const(1.0);
            let zero = t.float_const(0.0);
            t.b.ins().select(c, one, zero)
        };
        match op {
            BinaryOp::Add => self.b.ins().fadd(a, b),
            BinaryOp::Sub => self.b.ins().fsub(a, b),
            BinaryOp::Mul => self.b.ins().fmul(a, b),
            BinaryOp::Div => self.b.ins().fdiv(a, b),
            BinaryOp::Maximum => self.b.ins().fmax(a, b),
            BinaryOp::Minimum => self.b.ins().fmin(a, b),
            BinaryOp::Pow => {
                let (wa, wb) = (self.widen(a), self.widen(b));
                let r = self.call(RuntimeFn::Pow, &[wa, wb]).unwrap_or(wa);
                self.narrow(r)
            }
            BinaryOp::Eq => compare(self, FloatCC::Equal),
            BinaryOp::Ne => compare(self, FloatCC::NotEqual),
            BinaryOp::Lt => compare(self, FloatCC::LessThan),
            BinaryOp::Le => compare(self, FloatCC::LessThanOrEqual),
            BinaryOp::Gt => compare(self, FloatCC::GreaterThan),
            BinaryOp::Ge => compare(self, FloatCC::GreaterThanOrEqual),
        }
    }

    // ------------------------------------------------------------ vectors

    fn vector_type(&self) -> Type {
        if self.ty == F32 { F32X4 } else { F64X2 }
    }

    fn lanes(&self) -> u8 {
        self.vector_type().lane_count() as u8
    }

    /// The vector part of an innermost loop: whole groups of lanes from `start`,
    /// leaving `iv` at the first iteration the scalar loop still has to run.
    ///
    /// With `plan.unroll = u > 1`, a main loop first runs `u` vectors per iteration
    /// (copy `k` at lanes `4k..4k + 4` of the chunk), each reduction keeping one
    /// vector accumulator per copy; then single vectors run into accumulator 0. The
    /// accumulators are combined in order (0 op 1 op ...), lane-wise, then their
    /// lanes in order into the variable.
    fn vector_loop(
        &mut self,
        l: &Loop,
        plan: &VectorPlan,
        iv: Variable,
        start: IrValue,
        end: IrValue,
    ) -> Result<(), JitError> {
        let lanes = self.lanes() as i64;
        let unroll = i64::from(plan.unroll.max(1));
        let vt = self.vector_type();
        let count = self.trip_count(start, end);
        let mut accs = Vec::with_capacity(plan.reductions.len());
        for &(var, op) in &plan.reductions {
            let mut copies = Vec::with_capacity(unroll as usize);
            for _ in 0..unroll {
                let acc = self.b.declare_var(vt);
                let id = self.float_const(op.identity());
                let splat = self.b.ins().splat(vt, id);
                self.b.def_var(acc, splat);
                copies.push(acc);
            }
            accs.push((var, op, copies));
        }
        // The vector part runs only for a whole vector or more; only then are the
        // invariant loads made (an empty loop reads nothing).
        let whole = self.b.ins().band_imm_s(count, -lanes);
        let runs = self.b.ins().icmp_imm_s(IntCC::SignedGreaterThan, whole, 0);
        let (vector_part, after) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(runs, vector_part, &[], after, &[]);
        self.b.switch_to_block(vector_part);
        self.b.seal_block(vector_part);
        for load in vector::invariant_loads(l) {
            // In a jam, a load that moves with the rows is loaded per row.
            if let (Some((r, ..)), Value::Load { access, .. }) = (self.jam, &load)
                && crate::loops::analysis::access_mentions(access, r)
            {
                continue;
            }
            let x = self.value(&load)?;
            let v = self.splat(x);
            if let Value::Load { access, .. } = load {
                self.hoisted.push((access, v));
            }
        }
        if unroll > 1 {
            let chunk = lanes * unroll;
            let big = self.b.ins().band_imm_s(count, -chunk);
            let big_end = self.b.ins().iadd(start, big);
            self.counted_loop(iv, big_end, chunk, |t, i| {
                t.loops.insert(l.id.0, i);
                for k in 0..unroll {
                    t.lane_offset = k * lanes;
                    for s in &l.stmts {
                        t.vector_stmt(l, s, &accs, k as usize)?;
                    }
                }
                t.lane_offset = 0;
                Ok(())
            })?;
        }
        let vec_end = self.b.ins().iadd(start, whole);
        self.counted_loop(iv, vec_end, lanes, |t, i| {
            t.loops.insert(l.id.0, i);
            for s in &l.stmts {
                t.vector_stmt(l, s, &accs, 0)?;
            }
            Ok(())
        })?;
        self.hoisted.clear();
        self.b.ins().jump(after, &[]);
        self.b.switch_to_block(after);
        self.b.seal_block(after);
        for (var, op, copies) in &accs {
            let mut v = self.b.use_var(copies[0]);
            for &acc in &copies[1..] {
                let x = self.b.use_var(acc);
                v = self.combine(*op, v, x);
            }
            let mut folded = self.b.ins().extractlane(v, 0);
            for lane in 1..self.lanes() {
                let x = self.b.ins().extractlane(v, lane);
                folded = self.combine(*op, folded, x);
            }
            let variable = self.vars[&var.0];
            let old = self.b.use_var(variable);
            let new = self.combine(*op, old, folded);
            self.b.def_var(variable, new);
        }
        Ok(())
    }

    /// A blocked nest `for r { for c { dst[..] = src[..] } }` of
    /// [`vector::transpose_plan`]: [`Target::cache_block`]-square cache blocks of `lanes × lanes`
    /// tiles, each read as `lanes` vectors along `r` (one per column), transposed in
    /// registers and written as `lanes` vectors along `c` (one per row); the ragged
    /// right and bottom strips run element by element. Every element is written once
    /// with the value it has in loop order (the nest reads no tensor it writes).
    fn blocked_transpose(
        &mut self,
        rl: &Loop,
        cl: &Loop,
        dst: &Access,
        src: &Access,
    ) -> Result<(), JitError> {
        let (rs, re) = (self.index(&rl.start)?, self.index(&rl.end)?);
        // The inner range is evaluated once, and only when the outer loop runs, as
        // the plain nest would evaluate it (an arithmetic error stays where it was).
        let runs = self.b.ins().icmp(IntCC::SignedLessThan, rs, re);
        let (body, done) = (self.b.create_block(), self.b.create_block());
        self.b.ins().brif(runs, body, &[], done, &[]);
        self.b.switch_to_block(body);
        self.b.seal_block(body);
        self.blocked_transpose_in(rl, cl, dst, src, (rs, re))?;
        self.b.ins().jump(done, &[]);
        self.b.switch_to_block(done);
        self.b.seal_block(done);
        Ok(())
    }

    /// [`Self::blocked_transpose`] once the outer range `rs..re` is known not empty.
    fn blocked_transpose_in(
        &mut self,
        rl: &Loop,
        cl: &Loop,
        dst: &Access,
        src: &Access,
        (rs, re): (IrValue, IrValue),
    ) -> Result<(), JitError> {
        let block = i64::from(self.target.cache_block);
        let lanes = self.lanes() as i64;
        let (cs, ce) = (self.index(&cl.start)?, self.index(&cl.end)?);
        let main_end = |t: &mut Self, start: IrValue, end: IrValue| {
            let count = t.trip_count(start, end);
            let whole = t.b.ins().band_imm_s(count, -lanes);
            t.b.ins().iadd(start, whole)
        };
        let r_main = main_end(self, rs, re);
        let c_main = main_end(self, cs, ce);
        let (r, c) = (rl.id.0, cl.id.0);
        let var = |t: &mut Self, init: IrValue| {
            let v = t.b.declare_var(I64);
            t.b.def_var(v, init);
            v
        };
        let rb = var(self, rs);
        self.counted_loop(rb, r_main, block, |t, rb| {
            let rb_end = t.b.ins().iadd_imm_s(rb, block);
            let rb_end = t.b.ins().smin(rb_end, r_main);
            let cb = var(t, cs);
            t.counted_loop(cb, c_main, block, |t, cb| {
                let cb_end = t.b.ins().iadd_imm_s(cb, block);
                let cb_end = t.b.ins().smin(cb_end, c_main);
                let ri = var(t, rb);
                t.counted_loop(ri, rb_end, lanes, |t, ri| {
                    let ci = var(t, cb);
                    t.counted_loop(ci, cb_end, lanes, |t, ci| {
                        t.transpose_tile(r, c, ri, ci, dst, src)
                    })
                })
            })
        })?;
        // The strips: rows rs..r_main by columns c_main..ce, then rows r_main..re by
        // every column.
        for (from, to, c_from) in [(rs, r_main, c_main), (r_main, re, cs)] {
            let ri = var(self, from);
            self.counted_loop(ri, to, 1, |t, ri| {
                t.loops.insert(r, ri);
                let ci = var(t, c_from);
                t.counted_loop(ci, ce, 1, |t, ci| {
                    t.loops.insert(c, ci);
                    for s in &cl.stmts {
                        t.stmt(s)?;
                    }
                    Ok(())
                })
            })?;
        }
        self.loops.remove(&r);
        self.loops.remove(&c);
        Ok(())
    }

    /// One `lanes × lanes` tile of [`Self::blocked_transpose`] at row `ri`, column `ci`.
    fn transpose_tile(
        &mut self,
        r: usize,
        c: usize,
        ri: IrValue,
        ci: IrValue,
        dst: &Access,
        src: &Access,
    ) -> Result<(), JitError> {
        let vt = self.vector_type();
        let lanes = self.lanes() as i64;
        self.loops.insert(r, ri);
        let mut columns = Vec::with_capacity(lanes as usize);
        for j in 0..lanes {
            let at = self.b.ins().iadd_imm_s(ci, j);
            self.loops.insert(c, at);
            let (addr, _) = self.address(src)?;
            columns.push(self.b.ins().load(vt, Self::vector_flags(), addr, 0));
        }
        let rows = self.transpose(&columns);
        self.loops.insert(c, ci);
        for (k, row) in rows.into_iter().enumerate() {
            let at = self.b.ins().iadd_imm_s(ri, k as i64);
            self.loops.insert(r, at);
            let (addr, _) = self.address(dst)?;
            self.b.ins().store(Self::vector_flags(), row, addr, 0);
        }
        Ok(())
    }

    /// Interleaves the low or high halves of two vectors at `bytes` granularity
    /// (`punpckl*` / `punpckh*`).
    fn unpack(&mut self, a: IrValue, b: IrValue, bytes: u8, high: bool) -> IrValue {
        let vt = self.vector_type();
        let little = MemFlagsData::new().with_endianness(cranelift_codegen::ir::Endianness::Little);
        let x = self.b.ins().bitcast(I8X16, little, a);
        let y = self.b.ins().bitcast(I8X16, little, b);
        let base = if high { 8 } else { 0 };
        let mut mask = Vec::with_capacity(16);
        for pair in 0..(8 / bytes) {
            // `bytes` from `a` (indices 0..16), then as many from `b` (16..32).
            for from in [0u8, 16] {
                for byte in 0..bytes {
                    mask.push(from + base + pair * bytes + byte);
                }
            }
        }
        let imm = self.b.func.dfg.immediates.push(ConstantData::from(mask));
        let r = self.b.ins().shuffle(x, y, imm);
        self.b.ins().bitcast(vt, little, r)
    }

    /// The transpose of a square of vectors (`columns[j][k]` becomes `rows[k][j]`).
    fn transpose(&mut self, columns: &[IrValue]) -> Vec<IrValue> {
        match columns {
            [a, b] => vec![self.unpack(*a, *b, 8, false), self.unpack(*a, *b, 8, true)],
            [a, b, c, d] => {
                let t0 = self.unpack(*a, *b, 4, false);
                let t1 = self.unpack(*c, *d, 4, false);
                let t2 = self.unpack(*a, *b, 4, true);
                let t3 = self.unpack(*c, *d, 4, true);
                vec![
                    self.unpack(t0, t1, 8, false),
                    self.unpack(t0, t1, 8, true),
                    self.unpack(t2, t3, 8, false),
                    self.unpack(t2, t3, 8, true),
                ]
            }
            _ => unreachable!("vectors have two or four lanes"),
        }
    }

    /// The byte offset of the current unrolled copy for a unit-stride access.
    fn copy_bytes(&self) -> i32 {
        let size = if self.ty == F32 { 4 } else { 8 };
        (self.lane_offset * size) as i32
    }

    fn vector_flags() -> MemFlagsData {
        MemFlagsData::new().with_notrap()
    }

    fn vector_stmt(
        &mut self,
        l: &Loop,
        s: &Stmt,
        accs: &[(crate::loops::VarId, Accum, Vec<Variable>)],
        copy: usize,
    ) -> Result<(), JitError> {
        let at = self.copy_bytes();
        match s {
            Stmt::Store { access, value } => {
                self.target_type(access, "a store")?;
                let v = self.vector_value(l, value)?;
                let (addr, _) = self.address(access)?;
                self.b.ins().store(Self::vector_flags(), v, addr, at);
            }
            Stmt::Accumulate { access, op, value } => {
                self.target_type(access, "an accumulation")?;
                let vs = self.jammed(|t| t.vector_value(l, value))?;
                let (addr, _) = self.address(access)?;
                let vt = self.vector_type();
                let mut acc = self.b.ins().load(vt, Self::vector_flags(), addr, at);
                for v in vs {
                    acc = self.combine(*op, acc, v);
                }
                self.b.ins().store(Self::vector_flags(), acc, addr, at);
            }
            Stmt::Update { var, op, value } => {
                let v = self.vector_value(l, value)?;
                let Some(&acc) = accs
                    .iter()
                    .find(|(x, _, _)| x == var)
                    .and_then(|(_, _, copies)| copies.get(copy))
                else {
                    return self.unsupported(format!("v{} has no vector accumulator", var.0));
                };
                let old = self.b.use_var(acc);
                let new = self.combine(*op, old, v);
                self.b.def_var(acc, new);
            }
        }
        Ok(())
    }

    fn splat(&mut self, x: IrValue) -> IrValue {
        let vt = self.vector_type();
        self.b.ins().splat(vt, x)
    }

    /// Applies a scalar operation lane by lane.
    fn lanewise(
        &mut self,
        inputs: &[IrValue],
        mut f: impl FnMut(&mut Self, &[IrValue]) -> IrValue,
    ) -> IrValue {
        let mut out: Option<IrValue> = None;
        for lane in 0..self.lanes() {
            let xs: Vec<IrValue> = inputs
                .iter()
                .map(|&v| self.b.ins().extractlane(v, lane))
                .collect();
            let r = f(self, &xs);
            out = Some(match out {
                None => self.splat(r),
                Some(v) => self.b.ins().insertlane(v, r, lane),
            });
        }
        out.unwrap_or_else(|| unreachable!("vectors have lanes"))
    }

    /// A float vector of 1.0 where `mask` is set and 0.0 elsewhere.
    fn mask_to_float(&mut self, mask: IrValue, a: IrValue, b: IrValue) -> IrValue {
        let vt = self.vector_type();
        let m = self.b.ins().bitcast(vt, MemFlagsData::new(), mask);
        self.b.ins().bitselect(m, a, b)
    }

    fn vector_value(&mut self, l: &Loop, v: &Value) -> Result<IrValue, JitError> {
        let vt = self.vector_type();
        Ok(match v {
            Value::Load { access, .. } => match vector::stride(access, l.id) {
                Some(Stride::Unit) => {
                    let (addr, _) = self.address(access)?;
                    let at = self.copy_bytes();
                    self.b.ins().load(vt, Self::vector_flags(), addr, at)
                }
                _ => match self.hoisted.iter().find(|(a, _)| a == access) {
                    Some(&(_, v)) => v,
                    None => {
                        let x = self.value(v)?;
                        self.splat(x)
                    }
                },
            },
            Value::Var(_) | Value::Const(_) | Value::Param(_) => {
                let x = self.value(v)?;
                self.splat(x)
            }
            Value::Index(e) => {
                if e.indices().contains(&l.id.0) {
                    let i = self.loops[&l.id.0];
                    let mut out: Option<IrValue> = None;
                    for lane in 0..self.lanes() {
                        let at = self.b.ins().iadd_imm_s(i, self.lane_offset + lane as i64);
                        self.loops.insert(l.id.0, at);
                        let x = self.value(v)?;
                        out = Some(match out {
                            None => self.splat(x),
                            Some(acc) => self.b.ins().insertlane(acc, x, lane),
                        });
                    }
                    self.loops.insert(l.id.0, i);
                    out.unwrap_or_else(|| unreachable!("vectors have lanes"))
                } else {
                    let x = self.value(v)?;
                    self.splat(x)
                }
            }
            Value::Unary(op, x) => {
                let x = self.vector_value(l, x)?;
                match op {
                    UnaryOp::Neg => self.b.ins().fneg(x),
                    UnaryOp::Abs => self.b.ins().fabs(x),
                    UnaryOp::Sqrt => self.b.ins().sqrt(x),
                    UnaryOp::Recip => {
                        let one = self.float_const(1.0);
                        let ones = self.splat(one);
                        self.b.ins().fdiv(ones, x)
                    }
                    _ => match Inline::of(*op) {
                        Some(f) if self.ty == F32 => {
                            vmath::emit(&mut self.b, f, x, self.target.fma)
                        }
                        _ => self.lanewise(&[x], |t, xs| t.unary(*op, xs[0])),
                    },
                }
            }
            Value::Binary(op, a, b) => {
                let a = self.vector_value(l, a)?;
                let b = self.vector_value(l, b)?;
                let cc = match op {
                    BinaryOp::Add => return Ok(self.b.ins().fadd(a, b)),
                    BinaryOp::Sub => return Ok(self.b.ins().fsub(a, b)),
                    BinaryOp::Mul => return Ok(self.b.ins().fmul(a, b)),
                    BinaryOp::Div => return Ok(self.b.ins().fdiv(a, b)),
                    BinaryOp::Maximum => return Ok(self.b.ins().fmax(a, b)),
                    BinaryOp::Minimum => return Ok(self.b.ins().fmin(a, b)),
                    BinaryOp::Pow => {
                        return Ok(self.lanewise(&[a, b], |t, xs| t.binary(*op, xs[0], xs[1])));
                    }
                    BinaryOp::Eq => FloatCC::Equal,
                    BinaryOp::Ne => FloatCC::NotEqual,
                    BinaryOp::Lt => FloatCC::LessThan,
                    BinaryOp::Le => FloatCC::LessThanOrEqual,
                    BinaryOp::Gt => FloatCC::GreaterThan,
                    BinaryOp::Ge => FloatCC::GreaterThanOrEqual,
                };
                let mask = self.b.ins().fcmp(cc, a, b);
                let one = self.float_const(1.0);
                let zero = self.float_const(0.0);
                let (ones, zeros) = (self.splat(one), self.splat(zero));
                self.mask_to_float(mask, ones, zeros)
            }
            Value::Where(c, a, b) => {
                let c = self.vector_value(l, c)?;
                let a = self.vector_value(l, a)?;
                let b = self.vector_value(l, b)?;
                let zero = self.float_const(0.0);
                let zeros = self.splat(zero);
                let mask = self.b.ins().fcmp(FloatCC::NotEqual, c, zeros);
                self.mask_to_float(mask, a, b)
            }
        })
    }
}

/// True when `e` is built from sizes, loop indices and literals by `+ - *` alone,
/// the operations whose wrapping results are exact modulo 2^64.
fn ring_only(e: &Expr) -> bool {
    !e.any(&mut |x| {
        matches!(
            x,
            Expr::Dim(..)
                | Expr::Bin(
                    IndexOp::Div | IndexOp::Mod | IndexOp::Min | IndexOp::Max,
                    ..
                )
        )
    })
}

/// The fill values (and types) of checked loads in `v`.
fn checked_fills(p: &LoopProgram, v: &Value, out: &mut Vec<(DType, f64)>) {
    match v {
        Value::Load { access, fill } => {
            if access.checked
                && let Some(t) = p.tensors.get(access.tensor.0)
            {
                out.push((t.dtype, *fill));
            }
            for s in &access.index {
                if let Subscript::Value(x) = s {
                    checked_fills(p, x, out);
                }
            }
        }
        Value::Unary(_, x) => checked_fills(p, x, out),
        Value::Binary(_, a, b) => {
            checked_fills(p, a, out);
            checked_fills(p, b, out);
        }
        Value::Where(c, a, b) => {
            checked_fills(p, c, out);
            checked_fills(p, a, out);
            checked_fills(p, b, out);
        }
        Value::Var(_) | Value::Const(_) | Value::Param(_) | Value::Index(_) => {}
    }
}
