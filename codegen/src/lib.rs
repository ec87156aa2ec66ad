//! `uop-codegen`: the uop micro-op tensor compiler.
//!
//! Tensor operations are written as a handful of micro ops (reindex, element-wise
//! unary / binary / where, reduce, select, iota) over symbolic shapes, combined into
//! a [`uop::Program`], and evaluated by the reference interpreter or lowered to the
//! loop IR.
//!
//! **The entry point is [`compile::compile`]**: a [`uop::Program`] to the optimized
//! [`loops::LoopProgram`] every backend emits, under [`compile::CompileOptions`]
//! (target, checks, schedule, disabled passes). Every path that compiles goes through
//! it: the command line, the JIT (crate `uop-cranelift`), the Rust backend, the
//! build-time builder (crate `uop-build`), the graph executor (crate `uop-exec`).
//!
//! The modules, in the order a program goes through them:
//!
//! | module | what it owns |
//! |---|---|
//! | [`index`] | index and size expressions: tree, parser, printer, evaluation, simplifier, intervals |
//! | [`uop`] | the micro ops, the checked [`uop::Builder`], [`uop::Program`], binding a program to sizes |
//! | [`text`] | the `.uop` text format: parser, printer, the macro-op [`text::Registry`] |
//! | [`grad`] | gradients of programs, written in micro ops |
//! | [`loops`] | the loop IR: lowering, printer and parser, verifier, analyses |
//! | [`pass`] | the optimizer: the pipeline of loop-IR passes |
//! | [`compile`] | the one compile driver ([`compile::compile`]) and its options |
//! | [`target`] | the machines code is generated for, as typed facts |
//! | [`plan`] | the planning step: how each marked nest is realized, decided before emitting |
//! | [`backend`] | the Rust backend (source text) and the names and helpers the backends share |
//! | [`build`] | what build scripts share (exit code, `OUT_DIR`, writing only changed files, float variants, gradient docs); the builder is the crate `uop-build` |
//! | [`signature`] | a kernel's interface, and the one bind and memory check of a call ([`signature::Signature::bind`], [`signature::Bound::check_run`]) |
//! | [`sizes`] | checked sizes: concrete shapes, element counts, accounting, iteration counts |
//! | [`run`] | the run-time error vocabulary shared by every engine, and the C ABI's status codes |
//! | [`interp`] | the reference interpreter (the oracle) and the loop-IR interpreter |
//! | [`tensor`] | dense tensors with concrete shapes, as the interpreters see them |
//! | [`diag`] | positioned diagnostics with a caret under the offending text |
//! | `testing` | (feature `testing`) random programs and the differential oracle |
//!
//! ```
//! use std::collections::HashMap;
//! use uop_codegen::{interp, tensor::Tensor, uop::{Builder, DType, UnaryOp}};
//!
//! let mut b = Builder::new(DType::F32);
//! let x = b.input("x", DType::F32, &["N"])?;
//! let y = b.unary(UnaryOp::Neg, x)?;
//! let program = b.combine(&[x], &[y])?;
//!
//! let input = Tensor::new(DType::F32, vec![3], vec![1.0, -2.0, 0.5])?;
//! let out = interp::run(&program, &[input], &HashMap::new())?;
//! assert_eq!(out[0].data, vec![-1.0, 2.0, -0.5]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod backend;
pub mod build;
pub mod compile;
pub mod diag;
pub mod grad;
pub mod index;
pub mod interp;
pub mod loops;
pub mod pass;
pub mod plan;
pub mod run;
pub mod signature;
pub mod sizes;
pub mod target;
pub mod tensor;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;
pub mod uop;
