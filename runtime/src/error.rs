//! The error every generated kernel returns when it refuses its arguments.

/// Why a generated kernel refused its arguments. Every kernel checks its buffer
/// lengths, input dimensions, parameters and the program's size assertions
/// before touching any data, and reports the first mismatch here instead of
/// panicking. `kernel` names the kernel, buffers and dims are named as in the
/// source program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KernelError {
    /// A buffer's length differs from the number of elements of its shape.
    Length {
        /// The kernel.
        kernel: &'static str,
        /// The input or output buffer.
        buffer: &'static str,
        /// Elements its shape has.
        expected: usize,
        /// Its length.
        found: usize,
    },
    /// A shape has more elements than fit in memory (or a size exceeds `i64::MAX`).
    TooLarge {
        /// The kernel.
        kernel: &'static str,
        /// The buffer.
        buffer: &'static str,
    },
    /// An input's axis has a fixed size in the program and was given another.
    FixedSize {
        /// The kernel.
        kernel: &'static str,
        /// The input.
        input: &'static str,
        /// The axis.
        axis: usize,
        /// The size the program declares.
        expected: usize,
        /// The size given.
        found: usize,
    },
    /// Two inputs give different sizes to one named dimension.
    DimConflict {
        /// The kernel.
        kernel: &'static str,
        /// The dimension's name.
        dim: &'static str,
        /// The input that bound it first.
        first_input: &'static str,
        /// Its size there.
        first: usize,
        /// The input that disagrees.
        second_input: &'static str,
        /// Its size there.
        second: usize,
    },
    /// A size equality of the program does not hold.
    Assertion {
        /// The kernel.
        kernel: &'static str,
        /// The left side, as written in the program.
        left: &'static str,
        /// The right side.
        right: &'static str,
        /// The left side's value.
        left_value: i64,
        /// The right side's value.
        right_value: i64,
    },
    /// A size computed from the dims and parameters is negative.
    NegativeSize {
        /// The kernel.
        kernel: &'static str,
        /// The size expression, as written in the program.
        size: &'static str,
        /// Its value.
        value: i64,
    },
    /// A size expression overflows `i64` or divides by zero.
    Overflow {
        /// The kernel.
        kernel: &'static str,
    },
    /// A graph function (a whole graph emitted as Rust) refused a value at run
    /// time: a condition or selector that is not one value, a `case` selector out
    /// of range or NaN.
    Graph {
        /// The graph function.
        graph: &'static str,
        /// The node, as the graph's printed form names it (`%12`).
        node: &'static str,
        /// What is wrong.
        message: String,
    },
}

impl core::fmt::Display for KernelError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            KernelError::Length {
                kernel,
                buffer,
                expected,
                found,
            } => write!(
                f,
                "{kernel}: `{buffer}` has length {found}, but its shape has {expected} elements"
            ),
            KernelError::TooLarge { kernel, buffer } => {
                write!(f, "{kernel}: the shape of `{buffer}` has too many elements")
            }
            KernelError::FixedSize {
                kernel,
                input,
                axis,
                expected,
                found,
            } => write!(
                f,
                "{kernel}: axis {axis} of `{input}` must have size {expected}, got {found}"
            ),
            KernelError::DimConflict {
                kernel,
                dim,
                first_input,
                first,
                second_input,
                second,
            } => write!(
                f,
                "{kernel}: dimension `{dim}` is {first} in `{first_input}` but {second} in `{second_input}`"
            ),
            KernelError::Assertion {
                kernel,
                left,
                right,
                left_value,
                right_value,
            } => write!(
                f,
                "{kernel}: the sizes must satisfy `{left} == {right}`, but they are {left_value} and {right_value}"
            ),
            KernelError::NegativeSize {
                kernel,
                size,
                value,
            } => write!(
                f,
                "{kernel}: the size `{size}` is {value}, which is negative"
            ),
            KernelError::Overflow { kernel } => write!(
                f,
                "{kernel}: a size expression overflows 64 bits or divides by zero"
            ),
            KernelError::Graph {
                graph,
                node,
                message,
            } => write!(f, "{graph}: {node}: {message}"),
        }
    }
}

impl std::error::Error for KernelError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_kernel_and_the_buffer() {
        let e = KernelError::Length {
            kernel: "softmax",
            buffer: "x",
            expected: 6,
            found: 5,
        };
        assert_eq!(
            e.to_string(),
            "softmax: `x` has length 5, but its shape has 6 elements"
        );
        let e: Box<dyn std::error::Error> = Box::new(KernelError::Overflow { kernel: "k" });
        assert!(e.to_string().starts_with("k: "));
    }
}
