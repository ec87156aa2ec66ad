//! `uop-codegen`: the uop micro-op tensor compiler.
//!
//! Tensor operations are written as a handful of micro ops (reindex, element-wise
//! unary / binary / where, reduce, select, iota) over symbolic shapes, combined into
//! a [`uop::Program`], and evaluated by the reference interpreter or lowered to the
//! loop IR.
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
