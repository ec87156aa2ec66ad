//! The Cranelift backend of uop: optimized loop IR to machine code, JIT-compiled in
//! memory or written to a relocatable object file with a C header.
//!
//! ```
//! use std::collections::HashMap;
//! use uop_codegen::{tensor::Tensor, uop::{Builder, DType, ReduceOp, UnaryOp}};
//! use uop_cranelift::{Options, compile_program};
//!
//! let mut b = Builder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N"])?;
//! let e = b.unary(UnaryOp::Exp, x)?;
//! let s = b.reduce(ReduceOp::Sum, &[0], e)?;
//! let kernel = compile_program(&b.combine(&[x], &[s])?, &Options::default())?;
//!
//! let x = Tensor::new(DType::F32, vec![3], vec![0.0, 0.0, 0.0])?;
//! let out = kernel.run(&[x], &HashMap::new())?;
//! assert_eq!(out[0].data, vec![3.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! What it owns:
//! - [`translate`](self) (private): loop IR to Cranelift IR, exactly the loop-IR
//!   interpreter's semantics; `vector` decides which innermost loops use `f32x4`;
//! - [`abi`]: the C ABI of every kernel, its return codes, the C header;
//! - `vmath` (private): `exp log tanh sigmoid erf` as inline f32 / `f32x4` code for
//!   f32 programs, bit-identical to the runtime's [`vmath`](uop_runtime::vmath),
//!   which Rust kernels call;
//! - [`runtime`]: the math, allocation and zeroing functions kernels call;
//! - the JIT ([`compile()`], [`Kernel`], a process-wide cache) and object-file output
//!   ([`emit_object`], [`emit_clif`]).
//!
//! Results are bit-identical to [`interp::run_loops`](uop_codegen::interp::run_loops) with
//! [`Options::vectorize`] off, except `exp log tanh sigmoid erf` in f32 programs: those
//! are the inline polynomials, within 1 ulp (2 for `sigmoid`) of the interpreter's
//! correctly rounded result. With vectorization on (the default), vectorized sums add
//! in a different order (see [`vector`](self)'s rules); everything else stays as in
//! scalar code.
//!
//! It is a crate of its own, beside [`uop_codegen`], so that the rest of the compiler
//! builds while Cranelift does (docs/build-time.md). Its modules name the compiler's
//! modules as `crate::loops`, `crate::uop`, ... through the imports below.

// The compiler's modules under the names this backend's files use.
use uop_codegen::{backend, index, loops, plan, run, signature, target, tensor, uop};

pub mod abi;
mod buffers;
mod call;
pub mod runtime;
mod spare;
mod translate;
mod vmath;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, OnceLock};

use cranelift_codegen::ir::UserFuncName;
use cranelift_codegen::isa::OwnedTargetIsa;
use cranelift_codegen::settings::{self, Configurable};
use cranelift_frontend::FunctionBuilderContext;
use cranelift_jit::{JITBuilder, JITModule};
use cranelift_module::{Linkage, Module, ModuleError};
use cranelift_object::{ObjectBuilder, ObjectModule};
use thiserror::Error;

use crate::backend::names::{Language, NameError, check_kernel_name};
use crate::loops::LoopProgram;
pub use crate::run::RunError;
use crate::signature::Signature;
use crate::uop::Program;
use uop_codegen::compile::{self, BackendKind, CompileError, CompileOptions};

pub use abi::Status;
pub use call::{Checked, Input, Output, RawBuffer};
use runtime::Linking;
use translate::Entry;
pub use vmath::uses_inline_math;

/// Why a program could not be compiled.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum JitError {
    /// The compile options are invalid.
    #[error(transparent)]
    Compile(#[from] CompileError),
    /// The loop program uses something this backend does not compile (a malformed
    /// program: lowering and the passes never produce one).
    #[error("the loop program cannot be compiled: {0}")]
    Unsupported(String),
    /// A kernel name breaks the rule of [`names`](crate::backend::names) for C.
    #[error(transparent)]
    Name(#[from] NameError),
    /// Cranelift failed (a verifier error here is a bug in this backend).
    #[error("Cranelift failed: {0}")]
    Codegen(String),
    /// Cranelift does not support the machine this runs on.
    #[error("Cranelift does not support this host: {0}")]
    Host(String),
}

impl From<ModuleError> for JitError {
    fn from(e: ModuleError) -> Self {
        JitError::Codegen(format!("{e:?}"))
    }
}

/// How to compile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Options {
    /// Use `f32x4` / `f64x2` in innermost loops that allow it (see the module docs).
    pub vectorize: bool,
    /// Use Cranelift's single-pass register allocator instead of the backtracking
    /// one. Results are the same either way (only which registers hold the values
    /// changes), but the trade is steep: on the library ops compiles take about a
    /// quarter less time, while the kernels run 1.1–8.5× slower (2× geometric mean on
    /// the benchmark workloads; spills in hot loops). Off by default; worth it only
    /// for kernels that run once on small data.
    pub fast_compile: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            vectorize: true,
            fast_compile: false,
        }
    }
}

// ---------------------------------------------------------------- ISA

fn make_isa(linking: Linking, fast_compile: bool) -> Result<OwnedTargetIsa, String> {
    let mut flags = settings::builder();
    let pic = if linking == Linking::Object {
        "true"
    } else {
        "false"
    };
    let verify = if cfg!(debug_assertions) {
        "true"
    } else {
        "false"
    };
    let regalloc = if fast_compile {
        "single_pass"
    } else {
        "backtracking"
    };
    for (name, value) in [
        ("opt_level", "speed"),
        ("regalloc_algorithm", regalloc),
        ("is_pic", pic),
        ("use_colocated_libcalls", "false"),
        ("enable_verifier", verify),
        // A register tile's packed panel makes a 64 KiB frame: probing it a page at
        // a time makes a too-small stack hit its guard page instead of skipping it.
        ("enable_probestack", "true"),
        ("probestack_strategy", "inline"),
    ] {
        flags.set(name, value).map_err(|e| e.to_string())?;
    }
    let isa = cranelift_native::builder().map_err(|m| m.to_string())?;
    isa.finish(settings::Flags::new(flags))
        .map_err(|e| e.to_string())
}

/// The host ISA for `linking` and the register allocator `opts` asks for, detected
/// once per combination.
fn isa(linking: Linking, opts: &Options) -> Result<OwnedTargetIsa, JitError> {
    type Cell = OnceLock<Result<OwnedTargetIsa, String>>;
    static CELLS: [Cell; 4] = [const { OnceLock::new() }; 4];
    let at = 2 * usize::from(linking == Linking::Object) + usize::from(opts.fast_compile);
    CELLS[at]
        .get_or_init(|| make_isa(linking, opts.fast_compile))
        .clone()
        .map_err(JitError::Host)
}

// ---------------------------------------------------------------- JIT

/// The signature of every kernel (see [`abi`]).
type KernelFn = unsafe extern "C" fn(
    *const *const u8,
    *const i64,
    *const i64,
    *const *mut u8,
    *const i64,
) -> i32;

/// Owns a finalized JIT module and frees its code when dropped.
struct CodeMemory(Option<JITModule>);

// SAFETY: after finalization the module is only kept to free its memory; nothing
// reads or mutates it (its `RefCell` symbol table included) until `drop`, which has
// exclusive access. The code itself is immutable and callable from any thread.
unsafe impl Send for CodeMemory {}
// SAFETY: as above: shared references never touch the module.
unsafe impl Sync for CodeMemory {}

impl Drop for CodeMemory {
    fn drop(&mut self) {
        if let Some(module) = self.0.take() {
            // SAFETY: `CodeMemory` lives in the `Arc<Compiled>` every `Kernel` holds,
            // and a kernel borrows it for the whole of a call, so no code of this
            // module runs or can be called any more.
            unsafe { module.free_memory() };
        }
    }
}

struct Compiled {
    program: LoopProgram,
    signature: Signature,
    entry: KernelFn,
    // Declared last: dropped after everything that could refer to the code.
    _code: CodeMemory,
}

/// A JIT-compiled loop program. Cheap to clone, `Send + Sync`: the code stays
/// alive while any clone (or the compile cache) holds it.
#[derive(Clone)]
pub struct Kernel {
    compiled: Arc<Compiled>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("entry", &(self.compiled.entry as *const u8))
            .finish_non_exhaustive()
    }
}

/// Fills `func` (signed [`translate::signature`]`(Entry::Kernel)`) with the
/// kernel entry of `program` as the JIT links it: what [`compile`] runs and
/// [`emit_jit_clif`] prints.
fn build_jit_kernel(
    module: &mut JITModule,
    program: &LoopProgram,
    opts: &Options,
    func: &mut cranelift_codegen::ir::Function,
) -> Result<(), JitError> {
    let mut fctx = FunctionBuilderContext::new();
    translate::build(
        module,
        Linking::Jit,
        program,
        Entry::Kernel,
        opts.vectorize,
        func,
        &mut fctx,
    )
}

fn compile_jit(program: &LoopProgram, opts: &Options) -> Result<Compiled, JitError> {
    let mut builder = JITBuilder::with_isa(
        isa(Linking::Jit, opts)?,
        cranelift_module::default_libcall_names(),
    );
    for (name, address) in runtime::jit_symbols() {
        builder.symbol(name, address);
    }
    let mut module = JITModule::new(builder);
    let sig = translate::signature(&module, Entry::Kernel);
    let id = module.declare_function("uop_kernel", Linkage::Export, &sig)?;
    let mut ctx = module.make_context();
    ctx.func.signature = sig;
    let built = build_jit_kernel(&mut module, program, opts, &mut ctx.func);
    let result = built.and_then(|()| {
        module.define_function(id, &mut ctx)?;
        module.finalize_definitions()?;
        Ok(())
    });
    if let Err(e) = result {
        // SAFETY: no function of this module was handed out.
        unsafe { module.free_memory() };
        return Err(e);
    }
    let address = module.get_finalized_function(id);
    // SAFETY: `id` was defined with `translate::signature(Entry::Kernel)`, which is
    // this function type under the host's default (C) calling convention.
    let entry = unsafe { std::mem::transmute::<*const u8, KernelFn>(address) };
    Ok(Compiled {
        program: program.clone(),
        signature: program.signature(),
        entry,
        _code: CodeMemory(Some(module)),
    })
}

/// The Cranelift IR the JIT builds for `program` (its kernel entry, before
/// Cranelift's own optimizations), with the imported symbols listed first: what
/// [`compile`] runs on this CPU, its calls of the runtime's micro-kernels
/// (`uop_contract_f32_avx512`, ...) included. An object file links no runtime, so
/// its IR ([`emit_clif`]) keeps the generated tiles instead.
pub fn emit_jit_clif(program: &LoopProgram, opts: &Options) -> Result<String, JitError> {
    let builder = JITBuilder::with_isa(
        isa(Linking::Jit, opts)?,
        cranelift_module::default_libcall_names(),
    );
    let mut module = JITModule::new(builder);
    let sig = translate::signature(&module, Entry::Kernel);
    let mut func = cranelift_codegen::ir::Function::with_name_signature(
        UserFuncName::testcase("uop_kernel"),
        sig,
    );
    let built = build_jit_kernel(&mut module, program, opts, &mut func);
    let mut out = String::new();
    if built.is_ok() {
        for (id, decl) in module.declarations().get_functions() {
            if decl.linkage == Linkage::Import {
                out.push_str(&format!(
                    "; u0:{} = {}\n",
                    id.as_u32(),
                    decl.linkage_name(id)
                ));
            }
        }
        out.push_str(&func.display().to_string());
    }
    // SAFETY: nothing of this module was defined or handed out.
    unsafe { module.free_memory() };
    built.map(|()| out)
}

/// Identical programs (same printed loop IR, same options) share one kernel; the
/// cache keeps the most recent ones and never frees code a kernel still uses.
struct Cache {
    map: HashMap<(String, Options), Arc<Compiled>>,
    order: VecDeque<(String, Options)>,
}

const CACHE_CAPACITY: usize = 256;

fn cache() -> &'static Mutex<Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE.get_or_init(|| {
        Mutex::new(Cache {
            map: HashMap::new(),
            order: VecDeque::new(),
        })
    })
}

/// JIT-compiles an (optimized) loop program, or returns the cached kernel of an
/// identical one.
pub fn compile(program: &LoopProgram, opts: &Options) -> Result<Kernel, JitError> {
    let key = (format!("{}\n{}", program.dtype, program), *opts);
    let lock = || cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(c) = lock().map.get(&key) {
        return Ok(Kernel {
            compiled: Arc::clone(c),
        });
    }
    // Compiled outside the lock, so other threads are not held up; a race compiles
    // twice and keeps the first.
    let fresh = Arc::new(compile_jit(program, opts)?);
    let mut cache = lock();
    let compiled = Arc::clone(cache.map.entry(key.clone()).or_insert_with(|| fresh));
    if cache.order.iter().all(|k| *k != key) {
        cache.order.push_back(key);
        while cache.order.len() > CACHE_CAPACITY {
            if let Some(old) = cache.order.pop_front() {
                cache.map.remove(&old);
            }
        }
    }
    Ok(Kernel { compiled })
}

/// JIT-compiles without consulting or filling the cache (every call compiles).
pub fn compile_uncached(program: &LoopProgram, opts: &Options) -> Result<Kernel, JitError> {
    Ok(Kernel {
        compiled: Arc::new(compile_jit(program, opts)?),
    })
}

/// Compiles `program` with the default [`CompileOptions`] ([`compile::compile`])
/// and JIT-compiles the result.
pub fn compile_program(program: &Program, opts: &Options) -> Result<Kernel, JitError> {
    compile(&optimized(program)?, opts)
}

/// Compiles `program` under `options` ([`compile::compile`], for the Cranelift
/// target) and JIT-compiles the result.
pub fn compile_program_with(
    program: &Program,
    options: &CompileOptions,
    opts: &Options,
) -> Result<Kernel, JitError> {
    compile(&optimized_with(program, options)?, opts)
}

/// The optimized loop IR of a program, as this backend compiles it by default.
pub fn optimized(program: &Program) -> Result<LoopProgram, JitError> {
    optimized_with(program, &CompileOptions::default())
}

/// The loop IR [`compile::compile`] makes of `program` under `options` for this
/// backend.
pub fn optimized_with(
    program: &Program,
    options: &CompileOptions,
) -> Result<LoopProgram, JitError> {
    Ok(compile::compile(
        program,
        &options.narrow_to(BackendKind::Cranelift)?,
    )?)
}

/// The removal of every cached kernel (kernels in use stay valid).
pub fn clear_cache() {
    let mut cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    cache.map.clear();
    cache.order.clear();
}

impl Kernel {
    /// The loop program this kernel runs.
    pub fn program(&self) -> &LoopProgram {
        &self.compiled.program
    }

    /// True when both kernels run the same compiled code (a cache hit).
    pub fn shares_code_with(&self, other: &Kernel) -> bool {
        Arc::ptr_eq(&self.compiled, &other.compiled)
    }

    /// The interface this kernel was compiled with.
    pub fn signature(&self) -> &Signature {
        &self.compiled.signature
    }
}

// ---------------------------------------------------------------- AOT

/// The symbols `name` and `name_shapes` are C symbols: the name must follow
/// the C rule of [`names`](crate::backend::names) (which also keeps them apart
/// from every symbol the kernel imports, see `RuntimeFn::symbol`).
fn check_name(name: &str) -> Result<(), JitError> {
    Ok(check_kernel_name(name, Language::C)?)
}

/// Builds both entries (`name` and `name_shapes`) into an object module; calls
/// `each` with every function after building it.
fn object_module(
    program: &LoopProgram,
    name: &str,
    opts: &Options,
    mut each: impl FnMut(&mut ObjectModule, &mut cranelift_codegen::Context) -> Result<(), JitError>,
) -> Result<ObjectModule, JitError> {
    check_name(name)?;
    let builder = ObjectBuilder::new(
        isa(Linking::Object, opts)?,
        name.as_bytes().to_vec(),
        cranelift_module::default_libcall_names(),
    )?;
    let mut module = ObjectModule::new(builder);
    let mut fctx = FunctionBuilderContext::new();
    for (entry, symbol) in [
        (Entry::Kernel, name.to_string()),
        (Entry::Shapes, format!("{name}_shapes")),
    ] {
        let sig = translate::signature(&module, entry);
        let id = module.declare_function(&symbol, Linkage::Export, &sig)?;
        let mut ctx = module.make_context();
        ctx.func.signature = sig;
        ctx.func.name = UserFuncName::testcase(&symbol);
        translate::build(
            &mut module,
            Linking::Object,
            program,
            entry,
            opts.vectorize,
            &mut ctx.func,
            &mut fctx,
        )?;
        each(&mut module, &mut ctx)?;
        module.define_function(id, &mut ctx)?;
    }
    Ok(module)
}

/// A relocatable object file (for the host) defining `name` and `name_shapes` with
/// the C ABI of [`abi`]; link with `-lm`.
pub fn emit_object(program: &LoopProgram, name: &str, opts: &Options) -> Result<Vec<u8>, JitError> {
    let module = object_module(program, name, opts, |_, _| Ok(()))?;
    module
        .finish()
        .emit()
        .map_err(|e| JitError::Codegen(e.to_string()))
}

/// The Cranelift IR of both entries, as generated (before Cranelift's own
/// optimizations), with the imported symbols listed first.
pub fn emit_clif(program: &LoopProgram, name: &str, opts: &Options) -> Result<String, JitError> {
    let mut functions = Vec::new();
    let module = object_module(program, name, opts, |_, ctx| {
        functions.push(ctx.func.display().to_string());
        Ok(())
    })?;
    let mut out = String::new();
    for (id, decl) in module.declarations().get_functions() {
        if decl.linkage == Linkage::Import {
            out.push_str(&format!(
                "; u0:{} = {}\n",
                id.as_u32(),
                decl.linkage_name(id)
            ));
        }
    }
    for f in functions {
        out.push('\n');
        out.push_str(&f);
    }
    Ok(out)
}

/// The C header declaring the kernel `name` of [`emit_object`].
pub fn c_header(program: &LoopProgram, name: &str) -> Result<String, JitError> {
    check_name(name)?;
    Ok(abi::c_header(&program.signature(), name))
}

/// A Rust `extern "C"` block declaring the kernel `name` of [`emit_object`].
pub fn rust_extern_block(program: &LoopProgram, name: &str) -> Result<String, JitError> {
    check_name(name)?;
    check_kernel_name(name, Language::Rust)?;
    Ok(abi::rust_extern_block(&program.signature(), name))
}

/// The Cranelift JIT with default options as a backend of the differential oracle
/// ([`uop_codegen::testing`]): the path `uop run --backend cranelift` and `uop fuzz
/// --backend cranelift` take.
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, Default)]
pub struct CraneliftBackend;

#[cfg(feature = "testing")]
impl uop_codegen::testing::Backend for CraneliftBackend {
    fn name(&self) -> String {
        "cranelift".into()
    }

    fn run(
        &self,
        p: &Program,
        case: &uop_codegen::testing::Case,
    ) -> Result<Vec<crate::tensor::Tensor>, String> {
        let kernel = compile_program(p, &Options::default()).map_err(|e| e.to_string())?;
        kernel
            .run(&case.inputs, &case.params)
            .map_err(|e| e.to_string())
    }
}
