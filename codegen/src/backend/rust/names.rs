//! Rust identifiers for the names of a program: tensors, dims and `$params` become
//! snake_case locals that clash with nothing the generated code also uses.

use std::collections::HashSet;

pub(super) use crate::backend::names::is_rust_keyword as is_keyword;

/// True for the names the generated bodies use for loop indices (`i3`) and carried
/// variables (`v0`), which program names must not shadow.
fn is_generated_local(word: &str) -> bool {
    // `i3`, `v0`, and the schedule's `i3_tile`, `v0_lanes`, ...
    let number = word.split('_').next().unwrap_or(word);
    let mut chars = number.chars();
    matches!(chars.next(), Some('i' | 'v')) && number.len() > 1 && chars.all(|c| c.is_ascii_digit())
}

/// The module-level items the kernel `name` defines in a generated file: the
/// kernel, its shapes and sizes functions, its per-CPU copies and its shapes
/// struct. Kernels of one file must not share any.
pub(super) fn kernel_items(name: &str) -> [String; 7] {
    [
        name.to_string(),
        format!("{name}_shapes"),
        format!("{name}_sizes"),
        format!("{name}_loops"),
        format!("{name}_avx2"),
        format!("{name}_avx512"),
        format!("{}Shapes", camel(name)),
    ]
}

/// `softmax_f32` -> `SoftmaxF32`.
pub(super) fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            match c.next() {
                Some(first) => first.to_ascii_uppercase().to_string() + c.as_str(),
                None => String::new(),
            }
        })
        .collect()
}

/// Hands out distinct snake_case identifiers.
#[derive(Clone, Debug, Default)]
pub(super) struct Scope {
    used: HashSet<String>,
}

impl Scope {
    /// A scope in which `reserved` are already taken.
    pub(super) fn with_reserved(reserved: &[&str]) -> Self {
        Scope {
            used: reserved.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// A fresh identifier as close to `raw` as possible: lowercased, other
    /// characters replaced by `_`, and a numeric suffix when taken.
    pub(super) fn fresh(&mut self, raw: &str) -> String {
        let mut base: String = raw
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            base.insert_str(0, "t_");
        }
        if is_keyword(&base) || is_generated_local(&base) {
            base.push('_');
        }
        let mut name = base.clone();
        let mut n = 2;
        while self.used.contains(&name) {
            name = format!("{base}_{n}");
            n += 1;
        }
        self.used.insert(name.clone());
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_names_are_snake_case_and_distinct() {
        let mut s = Scope::with_reserved(&["shapes"]);
        assert_eq!(s.fresh("N"), "n");
        assert_eq!(s.fresh("n"), "n_2");
        assert_eq!(s.fresh("type"), "type_");
        assert_eq!(s.fresh("i3"), "i3_");
        assert_eq!(s.fresh("shapes"), "shapes_2");
        assert_eq!(s.fresh("3d"), "t_3d");
    }

    #[test]
    fn kernel_items_are_the_kernel_and_its_companions() {
        assert_eq!(camel("softmax_f32"), "SoftmaxF32");
        assert_eq!(
            kernel_items("relu"),
            [
                "relu",
                "relu_shapes",
                "relu_sizes",
                "relu_loops",
                "relu_avx2",
                "relu_avx512",
                "ReluShapes"
            ]
        );
    }
}
