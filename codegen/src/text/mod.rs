//! The `.uop` program text format (DESIGN.md §10): [`parse_program`] and
//! [`print_program`], and the [`Registry`] through which macro ops become callable.
//!
//! ```text
//! # comment                                 (also after a statement)
//! param kh                                  declares $kh
//! input a: f32[M, K]                        dims: names or non-negative integers
//! input idx: i32[B, 1]                      element types f32 | f64 | i32
//! aa = reindex(a, [M, K, N], [i0, i1])      fill=V, sources=[a, b] for `dA0` / `dB1`
//! s = reindex_reduce(x, [N], [i0 % 4], op="max")    op "add" | "max" | "min"
//! y = exp(x)                                unary ops by name
//! z = mul(x, 2.5)                           binary ops; an operand may be a number or $param
//! w = where(c, x, 0)
//! r = reduce_sum(x, [1])                    reduce_prod, _max, _min, _mean, _argmax, _argmin
//! g = select(x, idx, axis=1)
//! m = iota([B, N], 1)                       or `axis=1`
//! c = reduce_sum(mul(aa, bb), [1])          calls nest
//! assert N == M                             a size equality checked at run time
//! output c, s                               outputs in order (several lines allowed)
//! ```
//!
//! Rules:
//! - Numbers: `2`, `-0.5`, `1e-5`, `inf`, `-inf`, `nan`. Strings: `"max"`.
//!   Attribute values: numbers, `true` / `false`, strings, `[lists]`, tensors.
//! - The float type of a program is that of its float inputs, which must agree;
//!   without float inputs it is f32, or what a `dtype f64` line says (the printer
//!   writes that line only for such programs).
//! - A tensor name is unique and is not an input's dimension name, a micro op, or
//!   one of `param input output assert dtype inf nan true false`.
//! - Nodes no output needs are dropped; unused inputs are kept (and reported by
//!   [`crate::uop::Program::unused_inputs`]).
//! - Calls may span lines inside their parentheses.
//!
//! Every error is a [`TextError`] pointing at the token or call it is about.

mod apply;
mod args;
mod build;
mod error;
mod micro;
mod print;
mod registry;
mod round_trip;
pub mod syntax;

pub use apply::{CallArg, apply_op, apply_op_at, is_op, op_signature};
pub use args::{Args, Attrs, MacroError, Value};
pub use build::{float_type, parse_program, suggest};
pub use error::{ErrorKind, TextError};
pub use print::print_program;
pub use registry::{KEYWORDS, MacroFn, MacroOp, MicroOp, Registry, micro_ops};
pub use round_trip::check_round_trip;
