//! The one run-time error vocabulary: why a kernel, however it runs (reference
//! interpreter, loop-IR interpreter, JIT), did not run on the arguments it was
//! given, and the [`Status`] codes of the C ABI every compiled kernel returns.
//!
//! Binding is shared: every path first binds its arguments to the kernel's
//! [`Signature`](crate::signature::Signature), so a bad shape, a missing `$param`
//! or a size that overflows is refused with the same [`RunError`] everywhere.

use thiserror::Error;

use uop_runtime::MemoryError;

use crate::index::EvalError;
use crate::uop::{BindError, DType, ReduceOp};

/// Why a kernel did not run.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum RunError {
    /// Shapes or parameters do not fit the program.
    #[error(transparent)]
    Bind(#[from] BindError),
    /// A tensor's element or byte count overflows, or exceeds what one buffer can
    /// hold (`isize::MAX` bytes). Nothing ran.
    #[error(
        "{what} `{tensor}` of shape {expr} = {shape:?} is too large: its size in bytes \
         overflows the address range"
    )]
    TooLarge {
        /// `input`, `output` or `temporary`.
        what: &'static str,
        /// The tensor's name.
        tensor: String,
        /// Its symbolic shape, as written in the program.
        expr: String,
        /// Its concrete sizes.
        shape: Vec<usize>,
    },
    /// An input has the wrong element type.
    #[error("input `{input}` must be {expected}, got {found}")]
    InputType {
        /// Input name.
        input: String,
        /// Declared type.
        expected: DType,
        /// Given type.
        found: DType,
    },
    /// A slice's length differs from the product of its shape.
    #[error("{what} `{name}` has shape {shape:?} ({expected} elements) but its slice has {found}")]
    Length {
        /// `input` or `output`.
        what: &'static str,
        /// Tensor name.
        name: String,
        /// The shape.
        shape: Vec<usize>,
        /// Elements the shape needs.
        expected: usize,
        /// Elements given.
        found: usize,
    },
    /// The wrong number of output slices.
    #[error("the program has {expected} outputs, got {found} output slices")]
    OutputCount {
        /// Outputs of the program.
        expected: usize,
        /// Slices given.
        found: usize,
    },
    /// An output slice has the wrong element type.
    #[error("output `{output}` must be {expected}, got a {found} slice")]
    OutputType {
        /// Output name.
        output: String,
        /// Declared type.
        expected: DType,
        /// Given type.
        found: DType,
    },
    /// An index expression failed (division by zero, overflow).
    #[error("evaluating `{node}`: {error}")]
    Eval {
        /// Node being evaluated.
        node: String,
        /// The failure.
        error: EvalError,
    },
    /// An index expression of a loop program failed (division by zero, overflow, a
    /// loop variable used outside its loop).
    #[error("evaluating block {block}: {error}")]
    BlockEval {
        /// Position of the block in the loop program.
        block: usize,
        /// The failure.
        error: EvalError,
    },
    /// A loop program is malformed, or breaks a promise it makes (an access marked
    /// in range is not): a bug in lowering or in a pass, not in the caller's data.
    #[error("block {block} of the loop program is invalid: {message}")]
    InvalidLoops {
        /// Position of the block in the loop program.
        block: usize,
        /// What is wrong.
        message: String,
    },
    /// Compiled code returned an error code.
    #[error("the kernel failed: {}", .0.message())]
    Kernel(Status),
    /// The tensors of the run need more memory than may be had.
    #[error("{0}")]
    Memory(#[from] MemoryError),
    /// `argmax` / `argmin` over an empty axis (numpy and torch refuse it too).
    #[error(
        "`{node}`: {op} over axis {axis}, whose size `{size}` is 0: an empty axis has no {op}",
        op = op.name()
    )]
    EmptyAxis {
        /// The reducing node.
        node: String,
        /// `argmax` or `argmin`.
        op: ReduceOp,
        /// The empty axis.
        axis: usize,
        /// Its size, as written.
        size: String,
    },
}

/// What a compiled kernel returns (the C ABI's return codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    /// Success.
    Ok = 0,
    /// An input size is negative, differs from a fixed size, or differs from the size
    /// another input gives the same named dimension.
    InputShape = 1,
    /// A `[=]` size assertion does not hold.
    Assertion = 2,
    /// A size computed from the inputs and params is negative.
    NegativeSize = 3,
    /// `output_dims` differ from the program's output shapes.
    OutputShape = 4,
    /// Index arithmetic overflowed 64 bits or divided by zero.
    IndexArithmetic = 5,
    /// A temporary could not be allocated, or its size overflows.
    Memory = 6,
    /// An input's or output's size in bytes overflows 63 bits: no buffer can hold
    /// it, so the sizes are wrong.
    TooLarge = 7,
}

impl Status {
    /// Every status, by code.
    pub const ALL: [Status; 8] = [
        Status::Ok,
        Status::InputShape,
        Status::Assertion,
        Status::NegativeSize,
        Status::OutputShape,
        Status::IndexArithmetic,
        Status::Memory,
        Status::TooLarge,
    ];

    /// The status of a returned code, `None` for an unknown code.
    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL.into_iter().find(|s| *s as i32 == code)
    }

    /// The `#define` name in the C header.
    pub fn c_name(self) -> &'static str {
        match self {
            Status::Ok => "UOP_OK",
            Status::InputShape => "UOP_ERR_INPUT_SHAPE",
            Status::Assertion => "UOP_ERR_ASSERTION",
            Status::NegativeSize => "UOP_ERR_NEGATIVE_SIZE",
            Status::OutputShape => "UOP_ERR_OUTPUT_SHAPE",
            Status::IndexArithmetic => "UOP_ERR_INDEX_ARITHMETIC",
            Status::Memory => "UOP_ERR_MEMORY",
            Status::TooLarge => "UOP_ERR_TOO_LARGE",
        }
    }

    /// One line saying what went wrong.
    pub fn message(self) -> &'static str {
        match self {
            Status::Ok => "success",
            Status::InputShape => {
                "an input size is negative, differs from a fixed size, or disagrees with \
                 another input on a named dimension"
            }
            Status::Assertion => "a size assertion ([=]) does not hold",
            Status::NegativeSize => "a size computed from the inputs and params is negative",
            Status::OutputShape => "output_dims differ from the program's output shapes",
            Status::IndexArithmetic => "index arithmetic overflowed 64 bits or divided by zero",
            Status::Memory => "a temporary could not be allocated",
            Status::TooLarge => "an input's or output's size in bytes overflows 63 bits",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for s in Status::ALL {
            assert_eq!(Status::from_code(s as i32), Some(s));
        }
        assert_eq!(Status::from_code(99), None);
    }
}
