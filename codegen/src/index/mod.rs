//! Index expressions (DESIGN.md §3): the tree, its nom parser and printer,
//! evaluation, the simplifier and interval analysis.

mod ast;
mod eval;
mod interval;
pub(crate) mod parse;
mod print;
mod simplify;

pub use ast::{DimRef, Expr, IndexOp};
pub use eval::{Bindings, Env, EvalError, floor_div, floor_mod};
pub use interval::{Interval, IntervalEnv, Ranges};
pub use parse::{MAX_DEPTH, is_plain_name, parse_expr};
pub use print::list;
pub use simplify::equal_sizes;
