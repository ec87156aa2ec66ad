//! Run-time compilation of uop programs to machine code with Cranelift.
//!
//! [`compile`] lowers a [`Program`] to loop IR, optimizes it and JIT-compiles it;
//! identical programs share one compiled kernel (a process-wide cache keyed by the
//! optimized loop IR). A [`Kernel`] is `Send + Sync` and checks every shape before
//! its machine code runs, returning a [`RunError`] rather than misbehaving; the
//! memory a run takes (outputs and temporaries, and in [`Kernel::run`] the copies
//! of the inputs) is accounted against [`uop_runtime::memory_limit`] before
//! anything is allocated, and an allocation the system refuses is an error too. A
//! caller running one kernel many times on the same shapes binds it once
//! ([`Kernel::check`]) and runs the [`Checked`] call on buffers given by address.
//!
//! ```
//! use std::collections::HashMap;
//! use uop::codegen::{tensor::Tensor, text::{Registry, parse_program}};
//!
//! let program = parse_program(
//!     "input x: f32[N]\ny = mul(x, x)\noutput y\n",
//!     &Registry::new(),
//! )?;
//! let kernel = uop::jit::compile(&program)?;
//! let x = Tensor::new(program.dtype, vec![3], vec![1.0, 2.0, 3.0])?;
//! assert_eq!(kernel.run(&[x], &HashMap::new())?[0].data, vec![1.0, 4.0, 9.0]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! For ahead-of-time use, [`emit_object`] writes a relocatable object file and
//! [`c_header`] its C header (the ABI is documented in
//! [`uop_cranelift::abi`]).

use uop_codegen::uop::Program;
use uop_cranelift as backend;

pub use backend::{
    Checked, Input, JitError, Kernel, Options, Output, RawBuffer, RunError, Status, clear_cache,
};

/// Lowers, optimizes and JIT-compiles `program` with the default options (vectorized).
pub fn compile(program: &Program) -> Result<Kernel, JitError> {
    backend::compile_program(program, &Options::default())
}

/// Like [`compile`], with explicit options.
pub fn compile_with(program: &Program, opts: &Options) -> Result<Kernel, JitError> {
    backend::compile_program(program, opts)
}

/// A relocatable object file defining the C functions `name` and `name_shapes`.
pub fn emit_object(program: &Program, name: &str) -> Result<Vec<u8>, JitError> {
    backend::emit_object(&backend::optimized(program)?, name, &Options::default())
}

/// The C header for the object file of [`emit_object`].
pub fn c_header(program: &Program, name: &str) -> Result<String, JitError> {
    backend::c_header(&backend::optimized(program)?, name)
}

/// The Cranelift IR the backend generates for `program` (both entries).
pub fn clif(program: &Program, name: &str) -> Result<String, JitError> {
    backend::emit_clif(&backend::optimized(program)?, name, &Options::default())
}
