//! Gradients of micro-op programs (DESIGN.md §7).
//!
//! Every micro op has a gradient rule written in micro ops (in `rules.rs`), so the
//! gradient of a [`Program`](crate::uop::Program) is again a program: it runs on
//! every backend, is optimized like any other program, and can be differentiated
//! once more. [`gradient`] builds it from a [`GradSpec`]; [`fd`] checks it against
//! central finite differences in f64.
//!
//! ```
//! use uop_codegen::grad::{GradSpec, gradient};
//! use uop_codegen::text::{Registry, parse_program, print_program};
//!
//! let forward = parse_program("input x: f32[N]\ny = exp(x)\noutput y\n", &Registry::new())?;
//! let (x, y) = (forward.inputs[0], forward.outputs[0]);
//! // The caller supplies the seed g_y and the forward output y: x itself is not needed.
//! let spec = GradSpec { seeds: vec![y], wrt: vec![x], supplied: vec![y] };
//! let grad = gradient(&forward, &spec)?;
//! assert_eq!(
//!     print_program(&grad.program),
//!     "input g_y: f32[N]\ninput y: f32[N]\ng_x = mul(g_y, y)\noutput g_x\n"
//! );
//! assert!(!grad.required.inputs.contains(&x));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Naming
//!
//! The gradient program's inputs come in this order, each only if the gradient
//! needs it (for its data, or only to learn a dimension size):
//! 1. forward inputs, under their own names (`x`);
//! 2. one seed per entry of [`GradSpec::seeds`], the gradient of the loss with
//!    respect to that forward output, named `g_` + the output's name (`g_y`);
//! 3. supplied forward values ([`GradSpec::supplied`]), under their own names (`y`).
//!
//! Its outputs are the gradients with respect to [`GradSpec::wrt`], in that order,
//! named `g_` + the input's name (`g_x`). A name that would clash with a forward
//! name or dimension gets a `_1`, `_2`, ... suffix. [`Gradient::inputs`] says what
//! each input of the gradient program is.

mod build;
pub mod fd;
mod rules;

pub use build::{GradError, GradInput, GradRole, GradSpec, Gradient, Required, gradient, to_f64};
