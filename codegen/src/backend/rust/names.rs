//! Rust identifiers for the names of a program: tensors, dims and `$params` become
//! snake_case locals that clash with nothing the generated code also uses (the
//! shared [`Idents`](crate::backend::names::Idents)).

pub(super) use crate::backend::names::{Idents as Scope, camel};

/// The module-level items the kernel `name` defines in a generated file: the
/// kernel and its variant taking a scratch, its shapes and sizes functions, its per-CPU copies and its shapes
/// struct, and the oracle's entries (emitted with `RustOptions::oracle`, reserved
/// always so that turning them on never makes a clash). Kernels of one file must not
/// share any.
pub fn kernel_items(name: &str) -> [String; 10] {
    [
        name.to_string(),
        format!("{name}_with_scratch"),
        format!("{name}_shapes"),
        format!("{name}_sizes"),
        format!("{name}_loops"),
        format!("{name}_avx2"),
        format!("{name}_avx512"),
        format!("{}Shapes", camel(name)),
        format!("{name}_program"),
        format!("{name}_dyn"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_items_are_the_kernel_and_its_companions() {
        assert_eq!(
            kernel_items("relu"),
            [
                "relu",
                "relu_with_scratch",
                "relu_shapes",
                "relu_sizes",
                "relu_loops",
                "relu_avx2",
                "relu_avx512",
                "ReluShapes",
                "relu_program",
                "relu_dyn"
            ]
        );
    }
}
