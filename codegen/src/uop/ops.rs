//! The operator sets of the micro ops and their scalar semantics.
//!
//! Every interpreter and backend computes an element through these functions (or
//! mirrors them exactly), so "what `sign(0)` is" is decided in one place. Values are
//! carried as `f64`; an f32 program rounds after every operation ([`DType::round`]),
//! which gives exactly the f32 result for `+ - * / sqrt` and the correctly rounded
//! value of the f64 function for the others.

use std::fmt;

/// Element type of a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// 64-bit float.
    F64,
    /// 32-bit signed integer (index tensors for `select`).
    I32,
}

impl DType {
    /// The spelling in `.uop` files and error messages.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I32 => "i32",
        }
    }

    /// Parses `f32`, `f64` or `i32`.
    pub fn from_name(name: &str) -> Option<DType> {
        match name {
            "f32" => Some(DType::F32),
            "f64" => Some(DType::F64),
            "i32" => Some(DType::I32),
            _ => None,
        }
    }

    /// True for f32 and f64.
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }

    /// Rounds an `f64` value to what this type can hold.
    pub fn round(self, v: f64) -> f64 {
        match self {
            DType::F32 => v as f32 as f64,
            DType::F64 => v,
            DType::I32 => v as i32 as f64,
        }
    }

    /// How a `cast` to this type is written: `"i32"`, or `"float"` for the
    /// program's float type (so a graph retyped to f64 keeps its casts right).
    pub fn cast_target(self) -> &'static str {
        if self.is_float() { "float" } else { "i32" }
    }

    /// Size of one element in bytes.
    pub fn size(self) -> usize {
        match self {
            DType::F64 => 8,
            DType::F32 | DType::I32 => 4,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

macro_rules! named_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every operator, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// The spelling in `.uop` files.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$variant => $text,)*
                }
            }

            /// Looks an operator up by its spelling.
            pub fn from_name(name: &str) -> Option<$name> {
                match name {
                    $($text => Some($name::$variant),)*
                    _ => None,
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

named_enum! {
    /// Element-wise functions of one operand.
    UnaryOp {
        /// `-x`
        Neg = "neg",
        /// `|x|`
        Abs = "abs",
        /// `e^x`
        Exp = "exp",
        /// natural logarithm
        Log = "log",
        /// square root
        Sqrt = "sqrt",
        /// `1 / sqrt(x)`
        Rsqrt = "rsqrt",
        /// `1 / x`
        Recip = "recip",
        /// hyperbolic tangent
        Tanh = "tanh",
        /// `1 / (1 + e^-x)`
        Sigmoid = "sigmoid",
        /// sine
        Sin = "sin",
        /// cosine
        Cos = "cos",
        /// the error function
        Erf = "erf",
        /// round towards negative infinity
        Floor = "floor",
        /// round towards positive infinity
        Ceil = "ceil",
        /// -1, 0 or 1 (NaN stays NaN)
        Sign = "sign",
    }
}

named_enum! {
    /// Element-wise functions of two operands; comparisons give 1.0 or 0.0.
    BinaryOp {
        /// `a + b`
        Add = "add",
        /// `a - b`
        Sub = "sub",
        /// `a * b`
        Mul = "mul",
        /// `a / b`
        Div = "div",
        /// `a ^ b`
        Pow = "pow",
        /// larger of the two; NaN if either is NaN
        Maximum = "maximum",
        /// smaller of the two; NaN if either is NaN
        Minimum = "minimum",
        /// `a == b`
        Eq = "eq",
        /// `a != b`
        Ne = "ne",
        /// `a < b`
        Lt = "lt",
        /// `a <= b`
        Le = "le",
        /// `a > b`
        Gt = "gt",
        /// `a >= b`
        Ge = "ge",
    }
}

named_enum! {
    /// Reductions over axes of a tensor.
    ReduceOp {
        /// sum
        Sum = "sum",
        /// product
        Prod = "prod",
        /// maximum (NaN-propagating)
        Max = "max",
        /// minimum (NaN-propagating)
        Min = "min",
        /// sum divided by the number of reduced elements
        Mean = "mean",
        /// row-major position of the first maximum within the reduced axes
        Argmax = "argmax",
        /// row-major position of the first minimum within the reduced axes
        Argmin = "argmin",
    }
}

named_enum! {
    /// How values are combined into an accumulator: scatters (`reindex_reduce`),
    /// `t[idx] op= v` statements and loop-carried variables.
    Accum {
        /// `+=`, identity 0
        Add = "add",
        /// `*=`, identity 1
        Mul = "mul",
        /// `max=`, identity -inf
        Max = "max",
        /// `min=`, identity +inf
        Min = "min",
    }
}

/// NaN-propagating maximum.
pub fn maximum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// NaN-propagating minimum.
pub fn minimum(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.min(b)
    }
}

fn truth(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

impl UnaryOp {
    /// The exact (f64) value; callers round with [`DType::round`].
    pub fn apply(self, x: f64) -> f64 {
        match self {
            UnaryOp::Neg => -x,
            UnaryOp::Abs => x.abs(),
            UnaryOp::Exp => x.exp(),
            UnaryOp::Log => x.ln(),
            UnaryOp::Sqrt => x.sqrt(),
            UnaryOp::Rsqrt => 1.0 / x.sqrt(),
            UnaryOp::Recip => 1.0 / x,
            UnaryOp::Tanh => x.tanh(),
            UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            UnaryOp::Sin => x.sin(),
            UnaryOp::Cos => x.cos(),
            UnaryOp::Erf => libm::erf(x),
            UnaryOp::Floor => x.floor(),
            UnaryOp::Ceil => x.ceil(),
            UnaryOp::Sign => {
                if x.is_nan() {
                    x
                } else if x > 0.0 {
                    1.0
                } else if x < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
        }
    }
}

impl BinaryOp {
    /// The exact (f64) value; callers round with [`DType::round`].
    pub fn apply(self, a: f64, b: f64) -> f64 {
        match self {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Pow => a.powf(b),
            BinaryOp::Maximum => maximum(a, b),
            BinaryOp::Minimum => minimum(a, b),
            BinaryOp::Eq => truth(a == b),
            BinaryOp::Ne => truth(a != b),
            BinaryOp::Lt => truth(a < b),
            BinaryOp::Le => truth(a <= b),
            BinaryOp::Gt => truth(a > b),
            BinaryOp::Ge => truth(a >= b),
        }
    }

    /// True for the comparisons, whose result is 1.0 or 0.0.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }
}

impl Accum {
    /// The value an accumulator starts from.
    pub fn identity(self) -> f64 {
        match self {
            Accum::Add => 0.0,
            Accum::Mul => 1.0,
            Accum::Max => f64::NEG_INFINITY,
            Accum::Min => f64::INFINITY,
        }
    }

    /// Folds `v` into `acc` (exact; callers round).
    pub fn combine(self, acc: f64, v: f64) -> f64 {
        match self {
            Accum::Add => acc + v,
            Accum::Mul => acc * v,
            Accum::Max => maximum(acc, v),
            Accum::Min => minimum(acc, v),
        }
    }

    /// The compound-assignment spelling used by printers: `+=`, `*=`, `max=`, `min=`.
    pub fn assign_symbol(self) -> &'static str {
        match self {
            Accum::Add => "+=",
            Accum::Mul => "*=",
            Accum::Max => "max=",
            Accum::Min => "min=",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in UnaryOp::ALL {
            assert_eq!(UnaryOp::from_name(op.name()), Some(*op));
        }
        for op in BinaryOp::ALL {
            assert_eq!(BinaryOp::from_name(op.name()), Some(*op));
        }
        for op in ReduceOp::ALL {
            assert_eq!(ReduceOp::from_name(op.name()), Some(*op));
        }
    }

    #[test]
    fn edge_values() {
        assert_eq!(UnaryOp::Sign.apply(0.0), 0.0);
        assert_eq!(UnaryOp::Sign.apply(-2.5), -1.0);
        assert!(BinaryOp::Maximum.apply(f64::NAN, 1.0).is_nan());
        assert_eq!(BinaryOp::Ge.apply(1.0, 1.0), 1.0);
        assert_eq!(Accum::Max.combine(Accum::Max.identity(), -3.0), -3.0);
        assert_eq!(DType::F32.round(0.1), 0.1f32 as f64);
    }
}
