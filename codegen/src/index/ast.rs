//! The index-expression tree: integer arithmetic over loop indices, input
//! dimensions and runtime parameters.

use std::fmt;

/// Which axis of which shape source a `dA0`-style reference names.
///
/// `source` counts from 0 for `A`; `axis` is the number after the letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimRef {
    /// Index of the shape source (`A` = 0, `B` = 1, ...).
    pub source: usize,
    /// Axis of that source.
    pub axis: usize,
}

/// A binary integer operator of the index language.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IndexOp {
    /// `a + b`
    Add,
    /// `a - b`
    Sub,
    /// `a * b`
    Mul,
    /// `a / b`, floor division (rounds towards negative infinity).
    Div,
    /// `a % b`, the modulo matching floor division (sign of the divisor).
    Mod,
    /// `min(a, b)`
    Min,
    /// `max(a, b)`
    Max,
}

/// An integer index expression (DESIGN.md §3).
///
/// The same tree is used at every level: in a reindex written by a user
/// (`dA1 - $kh + 1`), in a program's shapes (`H - $kh + 1`, where `H` is a
/// named input dimension) and in the loop IR (where `Index(n)` is the
/// variable of loop `n`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Expr {
    /// An integer literal.
    Int(i64),
    /// `iN`: the N-th index of the output being produced (in the loop IR: loop N's variable).
    Index(usize),
    /// `dA0`: an axis of a shape source, optionally asserting `dA0[=dB1]`.
    Dim(DimRef, Option<DimRef>),
    /// `$name`: an integer runtime parameter.
    Param(String),
    /// A named dimension of a declared input, e.g. `M`.
    Name(String),
    /// Unary minus.
    Neg(Box<Expr>),
    /// A binary operation.
    Bin(IndexOp, Box<Expr>, Box<Expr>),
}

impl Expr {
    /// `a op b`.
    pub fn bin(op: IndexOp, a: Expr, b: Expr) -> Expr {
        Expr::Bin(op, Box::new(a), Box::new(b))
    }

    /// The loop index `i{n}`.
    pub fn index(n: usize) -> Expr {
        Expr::Index(n)
    }

    /// A named dimension.
    pub fn name(name: impl Into<String>) -> Expr {
        Expr::Name(name.into())
    }

    /// A `$param`.
    pub fn param(name: impl Into<String>) -> Expr {
        Expr::Param(name.into())
    }

    /// The literal value, if this is one.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Expr::Int(v) => Some(*v),
            _ => None,
        }
    }

    /// Calls `f` on this node and every node below it, parents first.
    pub fn visit(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Neg(a) => a.visit(f),
            Expr::Bin(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            _ => {}
        }
    }

    /// Rebuilds the tree bottom-up, replacing each leaf for which `f` returns `Some`.
    pub fn map_leaves(&self, f: &mut impl FnMut(&Expr) -> Option<Expr>) -> Expr {
        match self {
            Expr::Neg(a) => Expr::Neg(Box::new(a.map_leaves(f))),
            Expr::Bin(op, a, b) => Expr::bin(*op, a.map_leaves(f), b.map_leaves(f)),
            leaf => f(leaf).unwrap_or_else(|| leaf.clone()),
        }
    }

    /// True when any node satisfies `pred`.
    pub fn any(&self, pred: &mut impl FnMut(&Expr) -> bool) -> bool {
        let mut found = false;
        self.visit(&mut |e| found |= pred(e));
        found
    }

    /// The loop indices `iN` this expression mentions.
    pub fn indices(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let Expr::Index(n) = e
                && !out.contains(n)
            {
                out.push(*n);
            }
        });
        out
    }
}

impl From<i64> for Expr {
    fn from(v: i64) -> Self {
        Expr::Int(v)
    }
}

impl std::ops::Add for Expr {
    type Output = Expr;
    fn add(self, rhs: Expr) -> Expr {
        Expr::bin(IndexOp::Add, self, rhs)
    }
}

impl std::ops::Sub for Expr {
    type Output = Expr;
    fn sub(self, rhs: Expr) -> Expr {
        Expr::bin(IndexOp::Sub, self, rhs)
    }
}

impl std::ops::Mul for Expr {
    type Output = Expr;
    fn mul(self, rhs: Expr) -> Expr {
        Expr::bin(IndexOp::Mul, self, rhs)
    }
}

impl std::ops::Neg for Expr {
    type Output = Expr;
    fn neg(self) -> Expr {
        Expr::Neg(Box::new(self))
    }
}

impl fmt::Display for DimRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let letter = (b'A' + (self.source as u8)) as char;
        write!(f, "d{letter}{}", self.axis)
    }
}
