//! Printing index expressions with the fewest parentheses that still parse back
//! to the same tree (`parse(print(e)) == e`).

use std::fmt;

use super::ast::{Expr, IndexOp};

/// Binding strength: higher binds tighter.
fn precedence(e: &Expr) -> u8 {
    match e {
        Expr::Bin(IndexOp::Add | IndexOp::Sub, ..) => 1,
        Expr::Bin(IndexOp::Mul | IndexOp::Div | IndexOp::Mod, ..) => 2,
        Expr::Neg(_) => 3,
        // A negative literal prints with a leading `-`, like a negation.
        Expr::Int(v) if *v < 0 => 3,
        _ => 4,
    }
}

fn symbol(op: IndexOp) -> &'static str {
    match op {
        IndexOp::Add => "+",
        IndexOp::Sub => "-",
        IndexOp::Mul => "*",
        IndexOp::Div => "/",
        IndexOp::Mod => "%",
        IndexOp::Min => "min",
        IndexOp::Max => "max",
    }
}

fn write_operand(f: &mut fmt::Formatter<'_>, e: &Expr, parens: bool) -> fmt::Result {
    if parens {
        write!(f, "({e})")
    } else {
        write!(f, "{e}")
    }
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Int(v) => write!(f, "{v}"),
            Expr::Index(n) => write!(f, "i{n}"),
            Expr::Dim(d, None) => write!(f, "{d}"),
            Expr::Dim(d, Some(eq)) => write!(f, "{d}[={eq}]"),
            Expr::Param(p) => write!(f, "${p}"),
            Expr::Name(n) => write!(f, "{n}"),
            Expr::Neg(a) => {
                // `-3` would read back as the literal -3, and `--3` as -(-3): keep literals wrapped.
                f.write_str("-")?;
                write_operand(f, a, precedence(a) < 3 || matches!(**a, Expr::Int(_)))
            }
            Expr::Bin(op @ (IndexOp::Min | IndexOp::Max), a, b) => {
                write!(f, "{}({a}, {b})", symbol(*op))
            }
            Expr::Bin(op, a, b) => {
                let p = precedence(self);
                write_operand(f, a, precedence(a) < p)?;
                write!(f, " {} ", symbol(*op))?;
                write_operand(f, b, precedence(b) <= p)
            }
        }
    }
}

/// Prints a list of expressions as `[e0, e1, ...]` (shapes and index lists).
pub fn list(exprs: &[Expr]) -> String {
    let items: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
    format!("[{}]", items.join(", "))
}
