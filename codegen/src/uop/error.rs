//! Errors raised while building a micro-op graph or binding it to concrete sizes.

use thiserror::Error;

use crate::diag::Diagnostic;
use crate::index::EvalError;

/// A uop could not be built, or a graph could not be combined into a program.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum UopError {
    /// An index expression did not parse.
    #[error("in {op}: {diag}")]
    Syntax {
        /// The uop being built.
        op: String,
        /// The positioned parse error.
        diag: Diagnostic,
    },
    /// Operand shapes that must be equal are not.
    #[error("{op}: shapes differ: {left} vs {right}")]
    ShapeMismatch {
        /// The uop being built.
        op: String,
        /// First shape, printed.
        left: String,
        /// Second shape, printed.
        right: String,
    },
    /// Operand shapes that do not broadcast (numpy's rules: equal sizes or 1).
    #[error("{op}: {message}")]
    Broadcast {
        /// The op being built.
        op: String,
        /// Which shapes, and where they differ.
        message: String,
    },
    /// A list (index, axes, shape) has the wrong length.
    #[error("{op}: {what} has {found} entries, expected {expected}")]
    RankMismatch {
        /// The uop being built.
        op: String,
        /// What list is wrong.
        what: String,
        /// The length required.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// An axis is repeated in a list of axes.
    #[error("{op}: axis {axis} is listed more than once")]
    RepeatedAxis {
        /// The uop being built.
        op: String,
        /// The repeated axis.
        axis: i64,
    },
    /// An axis is out of range.
    #[error("{op}: axis {axis} is not valid for a tensor of rank {rank}")]
    BadAxis {
        /// The uop being built.
        op: String,
        /// The offending axis.
        axis: i64,
        /// Rank of the tensor.
        rank: usize,
    },
    /// An expression refers to something that does not exist here.
    #[error("{op}: {message}")]
    BadExpr {
        /// The uop being built.
        op: String,
        /// What is wrong, naming the expression.
        message: String,
    },
    /// An operand has the wrong element type.
    #[error("{op}: {what} must be {expected}, found {found}")]
    DType {
        /// The uop being built.
        op: String,
        /// Which operand.
        what: String,
        /// Acceptable type(s).
        expected: String,
        /// Type given.
        found: String,
    },
    /// A name is declared twice.
    #[error("`{0}` is already defined")]
    Duplicate(String),
    /// The graph cannot become a program.
    #[error("combine: {0}")]
    Combine(String),
}

/// A program cannot run with the sizes, parameters or data it was given.
#[derive(Clone, Debug, PartialEq, Error)]
pub enum BindError {
    /// Wrong number of inputs.
    #[error("the program takes {expected} inputs, {found} were given")]
    InputCount {
        /// Declared inputs.
        expected: usize,
        /// Given inputs.
        found: usize,
    },
    /// An input's rank, dtype or a fixed size is wrong.
    #[error("input `{input}`: {message}")]
    Input {
        /// Input name.
        input: String,
        /// What is wrong.
        message: String,
    },
    /// Two inputs give a shared dimension name different sizes.
    #[error(
        "dimension `{name}` is {first} in input `{first_input}` but {second} in input `{second_input}`"
    )]
    DimConflict {
        /// The dimension name.
        name: String,
        /// Input that bound it first.
        first_input: String,
        /// Its size there.
        first: i64,
        /// Input that disagrees.
        second_input: String,
        /// Its size there.
        second: i64,
    },
    /// A declared parameter has no value.
    #[error("parameter `${0}` has no value (pass --param {0}=N)")]
    MissingParam(String),
    /// An `[=]` assertion does not hold.
    #[error("size assertion `{left} == {right}` fails: {left_value} != {right_value}")]
    Assertion {
        /// Left expression.
        left: String,
        /// Right expression.
        right: String,
        /// Its value.
        left_value: i64,
        /// Its value.
        right_value: i64,
    },
    /// `argmax` / `argmin` over an axis that is empty (or negative) has no answer.
    #[error(
        "argmax / argmin over an empty axis: its size `{size}` is {value} (numpy and torch refuse it too)"
    )]
    EmptyAxis {
        /// The axis size, as written.
        size: String,
        /// Its value.
        value: i64,
    },
    /// A size evaluates to a negative number or cannot be evaluated.
    #[error("the shape of `{node}`: {message}")]
    Size {
        /// Node name.
        node: String,
        /// What went wrong.
        message: String,
    },
    /// A loop nest would run more iterations than can be counted.
    #[error(
        "block {block} (computing `{tensor}`): the loops over {loops} run more than {max} \
         iterations",
        max = crate::sizes::MAX_COUNT
    )]
    Iterations {
        /// Position of the block in the loop program.
        block: usize,
        /// The tensor the block writes.
        tensor: String,
        /// The loop ranges up to the one that overflows, as written.
        loops: String,
    },
    /// An index expression failed while running.
    #[error("{0}")]
    Eval(#[from] EvalError),
}
