//! `uop-ops`: the macro-op library. Every op is a few lines of micro ops built
//! with [`uop_codegen::uop::Builder`] — no op falls back to hand-written loops —
//! and callable from Rust (the functions of each module) and by name in `.uop`
//! programs (through [`registry`]).
//!
//! ```
//! use uop_codegen::text::parse_program;
//! let program = parse_program(
//!     "input x: f32[B, N]\ny = softmax(x, axis=1)\noutput y\n",
//!     &uop_ops::registry(),
//! )?;
//! assert!(program.nodes.len() > 2);
//! # Ok::<(), uop_codegen::text::TextError>(())
//! ```

pub mod conv;
pub mod elementwise;
pub mod error;
pub mod indexing;
pub mod linalg;
pub mod movement;
mod names;
pub mod nn;
pub mod pool;
pub mod reduce;
pub mod shape;

pub use error::OpError;

use uop_codegen::text::Registry;

/// Every macro op of the library, by its `.uop` name.
pub fn registry() -> Registry {
    let mut r = Registry::new();
    elementwise::register(&mut r);
    reduce::register(&mut r);
    nn::register(&mut r);
    linalg::register(&mut r);
    conv::register(&mut r);
    pool::register(&mut r);
    movement::register(&mut r);
    indexing::register(&mut r);
    r
}
